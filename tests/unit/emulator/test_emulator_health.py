# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""/health generates like SGLang 0.5.23 unless SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION is false."""
import pytest

from sglemu import app, cli

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


def test_load_delay_counts_from_the_process_start(monkeypatch):
    """A start's time to ready includes its imports, as SGLang's does: a process already 5 s old with a 4 s
    load delay is ready at once, and one 1 s old is not."""
    args = cli.parse_args(["--model-path", "m"])
    env = {"SGLANG_EMULATOR_LOAD_DELAY": "4"}
    monkeypatch.setattr(app, "process_age", lambda: 5.0)
    assert app.Server(args, env=env).ready() is True
    monkeypatch.setattr(app, "process_age", lambda: 1.0)
    assert app.Server(args, env=env).ready() is False


def test_process_age_reads_this_process():
    age = app.process_age()
    assert 0.0 < age < 3600.0
