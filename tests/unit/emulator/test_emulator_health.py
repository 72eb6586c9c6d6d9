# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""/health generates like SGLang 0.5.23 unless SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION is false."""
import pytest

from sglemu import app, cli, startup

VAR = "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"


@pytest.mark.parametrize("value, expected", [
    (None, True),  # 0.5.23's default: EnvBool(True)
    ("1", True), ("true", True), ("TRUE", True), ("yes", True), ("Y", True),
    ("0", False), ("false", False), ("False", False), ("no", False), ("N", False),
    # anything else: SGLang warns and keeps the default
    ("", True), ("off", True), ("2", True),
])
def test_health_generation_switch_reads_like_sglang(value, expected):
    env = {} if value is None else {VAR: value}
    args = cli.parse_args(["--model-path", "m"])
    assert app.Server(args, env=env).health_generates is expected


def test_invalid_value_warns(caplog):
    assert app.env_bool({VAR: "off"}, VAR, True) is True
    assert 'Invalid value for %s: "off" is not a valid boolean value' % VAR in caplog.text


def test_load_delay_counts_from_the_process_start():
    """A start's time to ready includes its imports, as SGLang's does: a process already 5 s old with a 4 s
    load delay loads no longer, and one 1 s old waits the 3 s left before the port may open."""
    args = cli.parse_args(["--model-path", "m", "--disable-cuda-graph"])
    env = {"SGLANG_EMULATOR_LOAD_DELAY": "4", "SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0"}
    for age, slept in ((5.0, 0.0), (1.0, 3.0)):
        now = [100.0]
        naps = []

        def sleep(seconds):
            naps.append(seconds)
            now[0] += seconds
        plan = startup.Startup(args, env, started=now[0] - age, sleep=sleep, clock=lambda: now[0])
        plan.compiler.run = lambda: 0.0  # the caches are another test's
        timings = plan.run()
        assert naps[0] == pytest.approx(slept)
        assert timings["load_weight"] == pytest.approx(slept)


def test_not_ready_until_the_warmup_ran():
    """/health stays 503 after the port opened until the warmup request is done (SGLang's ServerStatus)."""
    args = cli.parse_args(["--model-path", "m", "--skip-server-warmup"])
    server = app.Server(args, env={})
    assert server.ready() is False
    server.warmup("http://127.0.0.1:9")
    assert server.ready() is True
    never = app.Server(args, env={"SGLANG_EMULATOR_NEVER_READY": "1"})
    never.warmup("http://127.0.0.1:9")
    assert never.ready() is False


def test_process_age_reads_this_process():
    age = app.process_age()
    assert 0.0 < age < 3600.0
