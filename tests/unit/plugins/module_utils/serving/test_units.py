# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Unit and environment files (module_utils/serving/units.py): both units rendered, their structure checked, and
the ExecStart= line read back the way systemd splits it, which must give exactly the launch words and the argv
that sglang_flag_check checked."""

import json
import os
import re

import pytest
import yaml

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import units as U
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import unit_values as V
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import argv, router_args, server_args, worker_lines
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import DECODE, MODEL, PREFILL, TOPOLOGY_DEFAULTS, instance, role_defaults  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
SERVER_LAUNCH = "/opt/sglang/venv/bin/python -m sglang.launch_server"
ROUTER_LAUNCH = "/opt/sglang/router-venv/bin/python /usr/local/libexec/pdserve/pdserve_router_launch.py"
CONTROL_SECRET = "adm1n-s3cret-value"
SECRET = 's3cr$t "key" %n\\x'
_C_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def server_settings(**overrides):
    """The settings roles/sglang_server/vars/main.yml passes, from the role defaults."""
    d = role_defaults("sglang_server")
    settings = {
        "launch_command": SERVER_LAUNCH,
        "numa_binding": d["sglang_server_numa_binding"],
        "numactl_path": d["sglang_server_numactl_path"],
        "user": d["sglang_server_user"],
        "group": d["sglang_server_group"],
        "home": d["sglang_server_home"],
        "config_dir": d["sglang_server_config_dir"],
        "unit_dir": d["sglang_server_unit_dir"],
        "restart_sec": d["sglang_server_restart_sec"],
        "timeout_stop_sec": d["sglang_server_timeout_stop_sec"],
        "start_limit_interval_sec": d["sglang_server_start_limit_interval_sec"],
        "start_limit_burst": d["sglang_server_start_limit_burst"],
        "limit_nofile": d["sglang_server_limit_nofile"],
        "hardening": dict(d["sglang_server_systemd_hardening"]),
        "env": {"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX", "SGLANG_SM120_MMA_FLASHMLA": "1"},
    }
    settings.update(overrides)
    return settings


def router_settings(**overrides):
    """The settings roles/sglang_router/vars/main.yml passes, from the role defaults."""
    d = role_defaults("sglang_router")
    settings = {
        "launch_command": ROUTER_LAUNCH,
        "user": d["sglang_router_user"],
        "group": d["sglang_router_group"],
        "config_dir": d["sglang_router_config_dir"],
        "credentials_dir": d["sglang_router_config_dir"] + "/credentials",
        "unit_dir": d["sglang_router_unit_dir"],
        "restart_sec": d["sglang_router_restart_sec"],
        "timeout_stop_sec": d["sglang_router_timeout_stop_sec"],
        "start_limit_interval_sec": d["sglang_router_start_limit_interval_sec"],
        "start_limit_burst": d["sglang_router_start_limit_burst"],
        "limit_nofile": d["sglang_router_limit_nofile"],
        "hardening": dict(d["sglang_router_systemd_hardening"]),
        "api_key": d["sglang_router_api_key"],
        "control_plane_api_key": d["sglang_router_control_plane_api_key"],
        "hf_hub_offline": d["sglang_router_hf_hub_offline"],
        "hf_endpoint": d["sglang_router_hf_endpoint"],
        "env": d["sglang_router_env"],
        "extra_args": d["sglang_router_extra_args"],
        "local_units": [],
        "implementation": d["sglang_router_implementation"],
    }
    for key in ("policy", "prefill_policy", "decode_policy", "request_timeout_secs", "worker_startup_timeout_secs",
                "worker_startup_check_interval", "health_check_interval_secs", "health_failure_threshold",
                "health_success_threshold", "health_check_timeout_secs", "retry_max_retries", "retry_initial_backoff_ms",
                "retry_max_backoff_ms", "shutdown_grace_period_secs", "disable_retries",
                "cb_failure_threshold", "cb_success_threshold", "cb_timeout_duration_secs", "disable_circuit_breaker",
                "log_level"):
        settings[key] = d["sglang_router_" + key]
    settings.update(overrides)
    return settings


# --- reading the files back as systemd does -------------------------------------------------------------

def _unescape(text, i):
    """The character of the C escape at text[i] (a backslash), and the index after it."""
    return _C_ESCAPES.get(text[i + 1], text[i + 1]), i + 2


def _expand(word, expansions):
    """systemd's specifier (%%) and environment ($$, ${VAR}) processing of one word."""
    out = []
    i = 0
    while i < len(word):
        char = word[i]
        if char == "%":
            assert word[i + 1:i + 2] == "%", "unescaped specifier %r in %r: systemd would expand it" % (word[i:i + 2], word)
            out.append("%")
            i += 2
        elif char == "$":
            if word[i + 1:i + 2] == "$":
                out.append("$")
                i += 2
            else:
                match = re.match(r"\$\{\w+\}|\$\w+", word[i:])
                assert match, "stray $ in %r" % word
                expansions.append(match.group(0))
                out.append(match.group(0))
                i += len(match.group(0))
        else:
            out.append(char)
            i += 1
    return "".join(out)


def exec_words(unit_text, expansions=None):
    """The words of ExecStart= (continuation lines joined), split, unquoted and unescaped as systemd does.

    Environment references (${VAR}) are kept as written and collected in ``expansions``.
    """
    lines = unit_text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("ExecStart=")]
    assert len(starts) == 1, starts
    i = starts[0]
    value = lines[i][len("ExecStart="):]
    while value.endswith("\\"):
        i += 1
        value = value[:-1] + " " + lines[i]
    expansions = [] if expansions is None else expansions
    words = []
    pos = 0
    while True:
        while pos < len(value) and value[pos] in " \t":
            pos += 1
        if pos >= len(value):
            break
        word = []
        while pos < len(value) and value[pos] not in " \t":
            char = value[pos]
            if char == '"':
                pos += 1
                while value[pos] != '"':
                    if value[pos] == "\\":
                        char, pos = _unescape(value, pos)
                    else:
                        char, pos = value[pos], pos + 1
                    word.append(char)
                pos += 1
            elif char == "\\":
                char, pos = _unescape(value, pos)
                word.append(char)
            else:
                word.append(char)
                pos += 1
        words.append(_expand("".join(word), expansions))
    return words


def env_pairs(env_text):
    """KEY=value pairs of an EnvironmentFile (double-quoted values with \\\\, \\", \\$ and \\` escapes)."""
    pairs = []
    for line in env_text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, raw = line.split("=", 1)
        assert raw.startswith('"') and raw.endswith('"') and len(raw) >= 2, line
        raw = raw[1:-1]
        value = []
        i = 0
        while i < len(raw):
            if raw[i] == "\\" and raw[i + 1] in '"\\`$':
                value.append(raw[i + 1])
                i += 2
            else:
                assert raw[i] != '"', "unescaped quote in %r" % line
                value.append(raw[i])
                i += 1
        pairs.append((key, "".join(value)))
    return pairs


def sections(unit_text):
    """{section: [(key, value)]} of a unit, ExecStart= joined to one value; also checks the section order."""
    result = {}
    order = []
    current = None
    lines = unit_text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            order.append(current)
            result[current] = []
            continue
        key, value = line.split("=", 1)
        while value.endswith("\\"):
            value = value[:-1] + " " + lines[i].strip()
            i += 1
        result[current].append((key, value))
    assert order == ["Unit", "Service", "Install"], order
    return result


def keys(pairs):
    return [k for k, _v in pairs]


def value(pairs, key):
    found = [v for k, v in pairs if k == key]
    assert len(found) == 1, (key, found)
    return found[0]


def test_the_readers_on_known_text():
    words = exec_words('ExecStart=/bin/x "a b" c\\ d "%%1" "$$HOME" "${KEY}" "q\\"\\\\" \\\n    --f "1"')
    assert words == ["/bin/x", "a b", "c d", "%1", "$HOME", "${KEY}", 'q"\\', "--f", "1"]
    with pytest.raises(AssertionError):
        exec_words('ExecStart=/bin/x "%h"')
    assert env_pairs('# c\nA="x\\"y$z"\nB="\\\\"\n') == [("A", 'x"y$z'), ("B", "\\")]


# --- quoting ----------------------------------------------------------------------------------------------

def test_systemd_quote_escapes_what_systemd_expands():
    assert U.systemd_quote("plain") == '"plain"'
    assert U.systemd_quote(8998) == '"8998"'
    assert U.systemd_quote(0.8) == '"0.8"'
    assert U.systemd_quote('a "b" \\c') == '"a \\"b\\" \\\\c"'
    assert U.systemd_quote("100%") == '"100%%"'
    assert U.systemd_quote("$HOME") == '"$$HOME"'
    assert U.systemd_quote("${X}") == '"$${X}"'
    for control in ("a\nb", "a\rb", "a\tb", "a\0b", "a\x1bb", "a\x7fb"):
        with pytest.raises(U.UnitValueError, match="control character"):
            U.systemd_quote(control)
    assert U.systemd_quote(True) == '"true"' and U.systemd_quote(False) == '"false"'
    assert U.systemd_quote("") == '""'


def test_env_quote_keeps_dollar_and_percent():
    assert U.env_quote("a$b%c") == '"a$b%c"'
    assert U.env_quote('x"y') == '"x\\"y"'
    assert U.env_quote("a\\b") == '"a\\\\b"'
    assert U.env_quote(1) == '"1"'
    assert U.env_quote(True) == '"true"'


@pytest.mark.parametrize("word", ["plain", "two words", "100%", "$HOME", "${HOME}", 'q"uote', "back\\slash", "%n%%"])
def test_a_quoted_word_reads_back_unchanged(word):
    expansions = []
    assert exec_words("ExecStart=/bin/x %s" % U.systemd_quote(word), expansions) == ["/bin/x", word]
    assert expansions == []


def test_exec_start_keeps_an_environment_reference():
    text = U.exec_start(["/bin/x"], [["--api-key", "${SGLANG_ROUTER_API_KEY}"], ["--v", "$HOME"]])
    assert text == 'ExecStart=/bin/x \\\n    --api-key "${SGLANG_ROUTER_API_KEY}" \\\n    --v "$$HOME"'
    expansions = []
    assert exec_words(text, expansions) == ["/bin/x", "--api-key", "${SGLANG_ROUTER_API_KEY}", "--v", "$HOME"]
    assert expansions == ["${SGLANG_ROUTER_API_KEY}"]


# --- the server unit ------------------------------------------------------------------------------------

def test_server_unit_with_numactl():
    inst = instance(PREFILL, "prefill")
    unit = U.server_unit(inst, MODEL, server_settings())
    lines = server_args(inst, MODEL, "numactl", True)
    assert unit["argv_lines"] == lines
    assert unit["name"] == "prefill" and unit["unit"] == "sglang-prefill.service"
    assert unit["unit_path"] == "/etc/systemd/system/sglang-prefill.service"
    assert unit["env_file"] == "/etc/sglang/prefill.env"
    text = unit["unit_text"]
    assert text.split("\n")[:2] == [U.HEADER, "# pdserve.sglang.sglang_server mode=prefill"]
    assert text.endswith("\n[Install]\nWantedBy=multi-user.target\n")
    expansions = []
    assert exec_words(text, expansions) == (["/usr/bin/numactl", "--cpunodebind=0", "--membind=0"] + SERVER_LAUNCH.split()
                                            + argv(lines))
    assert expansions == []
    parsed = sections(text)
    assert parsed["Unit"] == [
        ("Description", "SGLang prefill server prefill (tp 4, port 30000)"),
        ("Documentation", "https://docs.sglang.ai/"),
        ("After", "network-online.target"),
        ("Wants", "network-online.target"),
        ("StartLimitIntervalSec", "1200"),
        ("StartLimitBurst", "3"),
    ]
    service = parsed["Service"]
    assert service[:5] == [("Type", "exec"), ("User", "sglang"), ("Group", "sglang"), ("WorkingDirectory", "/var/lib/sglang"),
                           ("EnvironmentFile", "/etc/sglang/prefill.env")]
    assert service[5][0] == "ExecStart"
    assert service[6:12] == [("Restart", "on-failure"), ("RestartSec", "10"), ("KillMode", "control-group"), ("TimeoutStopSec", "180"),
                             ("LimitMEMLOCK", "infinity"), ("LimitNOFILE", "65536")]
    assert service[-1] == ("ReadWritePaths", "/var/lib/sglang")
    assert parsed["Install"] == [("WantedBy", "multi-user.target")]
    # One flag per ExecStart line: the launch words, then each line of the command.
    exec_rows = text.split("ExecStart=")[1].split("\nRestart=")[0].split(" \\\n")
    assert len(exec_rows) == 2 + len(lines)
    assert exec_rows[1] == '    /opt/sglang/venv/bin/python "-m" "sglang.launch_server"'
    assert exec_rows[2] == '    --model-path "/models/DeepSeek-V4-Flash"'
    assert exec_rows[-1] == "    --enable-metrics"


def test_server_unit_hardening_from_the_role_defaults():
    unit = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings())
    service = sections(unit["unit_text"])["Service"]
    hardening = load("roles", "sglang_server", "defaults", "main.yml")["sglang_server_systemd_hardening"]
    expected = [(k, ("yes" if v else "no") if isinstance(v, bool) else str(v))
                for k, values in sorted(hardening.items()) for v in (values if isinstance(values, list) else [values])]
    assert service[12:-1] == expected
    assert ("NoNewPrivileges", "yes") in expected and ("PrivateDevices", "no") in expected and ("ProtectSystem", "strict") in expected
    assert ("DevicePolicy", "closed") in expected and ("DeviceAllow", "char-nvidia-uvm rw") in expected
    assert ("CapabilityBoundingSet", "") in expected and ("UMask", "0027") in expected


def test_hardening_yes_no_values_and_none_dropped():
    hardening = {"ProtectSystem": "strict", "NoNewPrivileges": False, "PrivateTmp": True, "ProtectHome": None}
    unit = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(hardening=hardening))
    service = sections(unit["unit_text"])["Service"]
    assert service[12:] == [("NoNewPrivileges", "no"), ("PrivateTmp", "yes"), ("ProtectSystem", "strict"),
                            ("ReadWritePaths", "/var/lib/sglang")]
    assert "ProtectHome" not in unit["unit_text"]
    unit = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(hardening={}))
    assert keys(sections(unit["unit_text"])["Service"])[12:] == ["ReadWritePaths"]


@pytest.mark.parametrize("binding, numa_node", [("sglang", 1), ("none", 1), ("numactl", None)])
def test_server_unit_without_numactl(binding, numa_node):
    raw = dict(DECODE)
    if numa_node is None:
        del raw["numa_node"]
    inst = instance(raw, "decode")
    unit = U.server_unit(inst, MODEL, server_settings(numa_binding=binding))
    lines = server_args(inst, MODEL, binding, True)
    assert unit["argv_lines"] == lines
    assert exec_words(unit["unit_text"]) == SERVER_LAUNCH.split() + argv(lines)
    assert "numactl" not in unit["unit_text"]
    assert unit["unit_text"].split("\n")[16].startswith('ExecStart=/opt/sglang/venv/bin/python "-m" "sglang.launch_server" \\')
    assert ("--numa-node" in argv(lines)) == (binding == "sglang")


def test_server_unit_numactl_path_and_launch_command_of_the_local_inventory():
    inst = instance(dict(DECODE, gpus=[]), "decode")
    launch = "/opt/sglang/venv/bin/python /opt/pdserve/emulator/sglang_emulator.py"
    unit = U.server_unit(inst, MODEL, server_settings(launch_command=launch, numactl_path="/opt/bin/numactl"))
    assert exec_words(unit["unit_text"]) == (["/opt/bin/numactl", "--cpunodebind=1", "--membind=1"] + launch.split()
                                             + argv(unit["argv_lines"]))
    assert "--tp-size" in argv(unit["argv_lines"]) and unit["argv_lines"][4] == ["--tp-size", 1]


def test_server_unit_metrics_off():
    # The topology says whether an instance serves /metrics (its host's sglang_server_enable_metrics).
    unit = U.server_unit(dict(instance(DECODE, "decode"), metrics=False), MODEL, server_settings())
    assert "--enable-metrics" not in exec_words(unit["unit_text"])
    assert "--enable-metrics" not in argv(unit["argv_lines"])


def test_server_unit_dirs_with_trailing_slashes():
    unit = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(config_dir="/etc/sglang/", unit_dir="/run/systemd/system/"))
    assert unit["env_file"] == "/etc/sglang/decode.env"
    assert unit["unit_path"] == "/run/systemd/system/sglang-decode.service"
    assert ("EnvironmentFile", "/etc/sglang/decode.env") in sections(unit["unit_text"])["Service"]


def test_awkward_values_read_back_unchanged():
    model = dict(MODEL, model_path="/models/My Model 100%", served_model_name='say "hi" $USER', chat_template="C:\\templates\\t.jinja",
                 extra_args=["--json-model-override-args", '{"rope_scaling": {"factor": 2.0}}', "--log-format", "%(message)s"])
    inst = instance(DECODE, "decode", extra_args=["--weight-loader", "a b", "--env-ref", "${HOME}x"], env={})
    unit = U.server_unit(inst, model, server_settings())
    expansions = []
    assert exec_words(unit["unit_text"], expansions) == (["/usr/bin/numactl", "--cpunodebind=1", "--membind=1"] + SERVER_LAUNCH.split()
                                                         + argv(unit["argv_lines"]))
    assert expansions == []
    assert "/models/My Model 100%" in argv(unit["argv_lines"])


def test_extra_args_in_flag_equals_value_form_read_back_unchanged():
    """A flag word from extra_args may carry its value (--flag=value): systemd must see it as one word, unexpanded."""
    inst = instance(DECODE, "decode", extra_args=['--json-model-override-args={"rope_scaling": {"factor": 2.0}}', "--log-format=%(message)s",
                                                  "--download-dir=$HOME/x"])
    unit = U.server_unit(inst, MODEL, server_settings())
    assert exec_words(unit["unit_text"]) == (["/usr/bin/numactl", "--cpunodebind=1", "--membind=1"] + SERVER_LAUNCH.split()
                                             + argv(unit["argv_lines"]))


def test_server_env_file():
    inst = instance(PREFILL, "prefill", env={"UCX_NET_DEVICES": "mlx5_0:1", "SGLANG_SM120_MMA_FLASHMLA": "0", "Q": 'a"b\\c$d%e'})
    settings = server_settings(env={"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX", "SGLANG_SM120_MMA_FLASHMLA": "1", "Z": 5})
    unit = U.server_unit(inst, MODEL, settings)
    text = unit["env_text"]
    assert text.split("\n")[:3] == [
        U.HEADER, "# pdserve.sglang.sglang_server mode=prefill",
        "# Environment of sglang-prefill.service: what it runs (PDSERVE_*), transfer backend, shared model env, then the "
        "instance's own env."]
    assert text.endswith("\n")
    # CUDA_VISIBLE_DEVICES first, then the merged environment sorted, the instance's values winning.
    assert env_pairs(text) == [
        ("CUDA_VISIBLE_DEVICES", "0,1,2,3"),
        ("Q", 'a"b\\c$d%e'),
        ("SGLANG_DISAGGREGATION_NIXL_BACKEND", "UCX"),
        ("SGLANG_SM120_MMA_FLASHMLA", "0"),
        ("UCX_NET_DEVICES", "mlx5_0:1"),
        ("Z", "5"),
    ]
    assert 'Q="a\\"b\\\\c$d%e"' in text.split("\n")


def test_server_env_file_starts_with_the_fingerprint():
    """What the unit runs comes first, so a new version or venv shows in the diff as the reason for the restart."""
    fp = {"sglang": "0.5.24", "venv": "/opt/sglang/venvs/sglang-0.5.24", "model": "/models/m@abc"}
    unit = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(fingerprint=fp))
    assert env_pairs(unit["env_text"])[:3] == [("PDSERVE_SGLANG", "0.5.24"), ("PDSERVE_VENV", "/opt/sglang/venvs/sglang-0.5.24"),
                                               ("PDSERVE_MODEL", "/models/m@abc")]
    # Empty fields are left out; the fingerprint never reaches the unit file itself.
    unit = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(fingerprint={"sglang": "", "venv": "/v"}))
    assert [k for k, _v in env_pairs(unit["env_text"]) if k.startswith("PDSERVE_")] == ["PDSERVE_VENV"]
    assert "PDSERVE_" not in unit["unit_text"]


def test_router_env_file_starts_with_the_fingerprint(inventory):
    router, workers = blackwell_router(inventory)
    settings = router_settings(fingerprint={"sglang_router": "0.3.2", "venv": "/opt/sglang/router-venv"})
    assert env_pairs(U.router_unit(router, workers, settings)["env_text"])[:2] == [
        ("PDSERVE_SGLANG_ROUTER", "0.3.2"), ("PDSERVE_VENV", "/opt/sglang/router-venv")]


def test_the_instance_env_reaches_its_env_file_alone():
    """The instance's env is written even when the shared env is empty, and only the instance's own names."""
    unit = U.server_unit(instance(DECODE, "decode", env={"UCX_NET_DEVICES": "mlx5_1:1"}), MODEL, server_settings(env={}))
    assert env_pairs(unit["env_text"]) == [("CUDA_VISIBLE_DEVICES", "4,5,6,7"), ("UCX_NET_DEVICES", "mlx5_1:1")]
    unit = U.server_unit(instance(DECODE, "decode", env={"UCX_NET_DEVICES": "mlx5_1:1"}), MODEL, server_settings(env=None))
    assert value(env_pairs(unit["env_text"]), "UCX_NET_DEVICES") == "mlx5_1:1"


def test_the_instance_env_wins_over_the_shared_env_whatever_the_names():
    shared = {"A": "shared", "Z": "shared", "M": "shared"}
    for own in ({"A": "own"}, {"Z": "own"}, {"A": "own", "M": "own", "Z": "own"}):
        pairs = env_pairs(U.server_unit(instance(DECODE, "decode", env=own), MODEL, server_settings(env=shared))["env_text"])
        assert dict(pairs) == dict(dict(shared, **own), CUDA_VISIBLE_DEVICES="4,5,6,7")
        assert keys(pairs) == ["CUDA_VISIBLE_DEVICES", "A", "M", "Z"]


def test_the_shared_env_is_not_changed_by_an_instance():
    shared = {"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX"}
    settings = server_settings(env=shared)
    U.server_unit(instance(PREFILL, "prefill", env={"SGLANG_DISAGGREGATION_NIXL_BACKEND": "LIBFABRIC"}), MODEL, settings)
    assert shared == {"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX"}
    unit = U.server_unit(instance(DECODE, "decode"), MODEL, settings)
    assert value(env_pairs(unit["env_text"]), "SGLANG_DISAGGREGATION_NIXL_BACKEND") == "UCX"


def test_each_instance_of_a_host_writes_its_own_env_to_its_own_file():
    """Two prefill instances on one host, through the topology as the role builds them: neither sees the other's env."""
    host_vars = {"gpu": {"sglang_prefill_instances": [
        dict(PREFILL, name="prefill-0", env={"ONLY_0": "a", "BOTH": "0"}),
        dict(PREFILL, name="prefill-1", gpus=[4, 5, 6, 7], numa_node=1, port=30010, bootstrap_port=8999,
             dist_init_port=30345, env={"ONLY_1": "b", "BOTH": "1"}),
        dict(PREFILL, name="prefill-2", gpus=[], numa_node=None, port=30020, bootstrap_port=9000, dist_init_port=30355)]}}
    topology = build_topology(host_vars, {"sglang_prefill": ["gpu"]}, defaults=TOPOLOGY_DEFAULTS)
    assert topology["problems"] == []
    settings = server_settings(env={"SHARED": "s"})
    units = [U.server_unit(inst, MODEL, settings) for inst in topology["hosts"]["gpu"]["prefill"]]
    assert [(u["name"], u["env_file"]) for u in units] == [
        ("prefill-0", "/etc/sglang/prefill-0.env"), ("prefill-1", "/etc/sglang/prefill-1.env"),
        ("prefill-2", "/etc/sglang/prefill-2.env")]
    assert [dict(env_pairs(u["env_text"])) for u in units] == [
        {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "BOTH": "0", "ONLY_0": "a", "SHARED": "s"},
        {"CUDA_VISIBLE_DEVICES": "4,5,6,7", "BOTH": "1", "ONLY_1": "b", "SHARED": "s"},
        {"SHARED": "s"},
    ]
    # each unit reads the env file that holds its env
    for u in units:
        assert ("EnvironmentFile", u["env_file"]) in sections(u["unit_text"])["Service"]
        assert [f["path"] for f in u["files"]][0] == u["env_file"] and u["files"][0]["content"] == u["env_text"]


def test_server_env_file_without_gpus_or_env():
    unit = U.server_unit(instance(dict(DECODE, gpus=[]), "decode"), MODEL, server_settings(env=None))
    assert env_pairs(unit["env_text"]) == []
    assert "CUDA_VISIBLE_DEVICES" not in unit["env_text"]


def test_server_files_for_managed_files():
    unit = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(group="svc"))
    assert unit["files"] == [
        {"path": "/etc/sglang/decode.env", "content": unit["env_text"], "owner": "root", "group": "svc", "mode": "0640"},
        {"path": "/etc/systemd/system/sglang-decode.service", "content": unit["unit_text"], "owner": "root", "group": "root", "mode": "0644"},
    ]


# The reference deployment's ExecStart lines, as tests/unit/snapshot/blackwell/ holds them: written out, not
# derived from the code under test, so a dropped or changed flag fails here.
BLACKWELL_EXEC_START = {
    "prefill": """ExecStart=/usr/bin/numactl "--cpunodebind=0" "--membind=0" \\
    /opt/sglang/venv/bin/python "-m" "sglang.launch_server" \\
    --model-path "/models/DeepSeek-V4-Flash" \\
    --served-model-name "deepseek-v4-flash" \\
    --host "127.0.0.1" \\
    --port "30000" \\
    --tp-size "4" \\
    --disaggregation-mode "prefill" \\
    --disaggregation-transfer-backend "nixl" \\
    --disaggregation-bootstrap-port "8998" \\
    --dist-init-addr "127.0.0.1:30335" \\
    --mem-fraction-static "0.8" \\
    --context-length "8192" \\
    --chat-template "/opt/sglang/chat_templates/tool_chat_template_deepseekv32.jinja" \\
    --reasoning-parser "deepseek-v4" \\
    --tool-call-parser "deepseekv4" \\
    --enable-metrics
""",
    "decode": """ExecStart=/usr/bin/numactl "--cpunodebind=1" "--membind=1" \\
    /opt/sglang/venv/bin/python "-m" "sglang.launch_server" \\
    --model-path "/models/DeepSeek-V4-Flash" \\
    --served-model-name "deepseek-v4-flash" \\
    --host "127.0.0.1" \\
    --port "30002" \\
    --tp-size "4" \\
    --disaggregation-mode "decode" \\
    --disaggregation-transfer-backend "nixl" \\
    --dist-init-addr "127.0.0.1:30435" \\
    --mem-fraction-static "0.85" \\
    --context-length "8192" \\
    --chat-template "/opt/sglang/chat_templates/tool_chat_template_deepseekv32.jinja" \\
    --reasoning-parser "deepseek-v4" \\
    --tool-call-parser "deepseekv4" \\
    --enable-metrics
""",
}


def _exec_start_block(unit_text):
    lines = unit_text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("ExecStart="))
    end = start
    while lines[end].endswith("\\"):
        end += 1
    return "\n".join(lines[start:end + 1]) + "\n"


def test_server_units_of_the_blackwell_inventory(inventory, inventory_model):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    model = inventory_model("blackwell")
    entry = topology["hosts"]["blackwell"]
    for mode in ("prefill", "decode"):
        inst, = entry[mode]
        unit = U.server_unit(inst, model, server_settings())
        assert _exec_start_block(unit["unit_text"]) == BLACKWELL_EXEC_START[mode]
        assert unit["unit_text"].split("\n")[1] == "# pdserve.sglang.sglang_server mode=%s" % mode


def test_the_blackwell_exec_start_lines_are_the_snapshot_s():
    """The literal lines above are the committed reference deployment's (a snapshot update shows here too)."""
    for mode in ("prefill", "decode"):
        with open(os.path.join(ROOT, "tests", "unit", "snapshot", "blackwell", "blackwell", "etc", "systemd", "system",
                               "sglang-%s.service" % mode)) as handle:
            assert _exec_start_block(handle.read()) == BLACKWELL_EXEC_START[mode]


# --- the router unit ------------------------------------------------------------------------------------

def blackwell_router(inventory):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    return topology["routers"][0], topology["workers"]


# The launch command and the implementation every router unit names first (sglang_defaults' default).
LAUNCHER = ROUTER_LAUNCH.split() + ["--implementation", role_defaults("sglang_router")["sglang_router_implementation"]]
LAUNCH_WORDS = len(LAUNCHER)
CREDENTIALS = "/etc/sglang-router/credentials"


def test_router_unit_with_keys_passes_them_as_credentials_only(inventory):
    router, workers = blackwell_router(inventory)
    settings = router_settings(api_key=SECRET, control_plane_api_key=CONTROL_SECRET,
                               local_units=["sglang-prefill.service", "sglang-decode.service"])
    unit = U.router_unit(router, workers, settings)
    lines = router_args(router, settings)
    assert unit["argv_lines"] == lines
    assert (unit["name"], unit["unit"], unit["unit_path"], unit["env_file"]) == (
        "router", "sglang-router.service", "/etc/systemd/system/sglang-router.service", "/etc/sglang-router/router.env")
    text = unit["unit_text"]
    for secret in (SECRET, CONTROL_SECRET, "s3cr", "adm1n"):
        assert secret not in text and secret not in unit["env_text"]
        assert secret not in " ".join(argv(unit["argv_lines"])) and secret not in " ".join(argv(unit["check_lines"]))
    assert text.split("\n")[:2] == [U.HEADER, "# pdserve.sglang.sglang_router"]
    expansions = []
    words = exec_words(text, expansions)
    # The launcher's own options name the credentials, "--" ends them, then the router's flags; no key, no ${...}.
    assert words == LAUNCHER + [
        "--api-key-credential", "router-api-key", "--control-plane-api-key-credential", "router-control-plane-api-key",
        "--workers-file", "/etc/sglang-router/workers.json", "--"] + argv(lines)
    assert "--api-key" not in words and "--control-plane-api-keys" not in words
    assert expansions == []
    parsed = sections(text)
    assert parsed["Unit"] == [
        ("Description", "SGLang PD router on 0.0.0.0:30001"),
        ("Documentation", "https://docs.sglang.ai/advanced_features/router.html"),
        ("After", "network-online.target sglang-prefill.service sglang-decode.service"),
        ("Wants", "network-online.target sglang-prefill.service sglang-decode.service"),
        ("StartLimitIntervalSec", "300"),
        ("StartLimitBurst", "5"),
    ]
    service = parsed["Service"]
    assert service[:7] == [
        ("Type", "exec"), ("User", "sglang-router"), ("Group", "sglang-router"),
        ("EnvironmentFile", "/etc/sglang-router/router.env"),
        ("LoadCredential", "router-api-key:%s/router-api-key" % CREDENTIALS),
        ("LoadCredential", "router-control-plane-api-key:%s/router-control-plane-api-key" % CREDENTIALS),
        ("CacheDirectory", "sglang-router")]
    assert service[7][0] == "ExecStart"
    assert service[8:13] == [("Restart", "on-failure"), ("RestartSec", "5"), ("KillMode", "control-group"), ("TimeoutStopSec", "45"),
                             ("LimitNOFILE", "65536")]
    hardening = load("roles", "sglang_router", "defaults", "main.yml")["sglang_router_systemd_hardening"]
    assert service[13:] == [(k, ("yes" if v else "no") if isinstance(v, bool) else str(v)) for k, v in sorted(hardening.items())]
    assert "ReadWritePaths" not in text and "LimitMEMLOCK" not in text and "WorkingDirectory" not in text
    assert parsed["Install"] == [("WantedBy", "multi-user.target")]
    assert env_pairs(unit["env_text"]) == [("HF_HOME", "/var/cache/sglang-router/huggingface"), ("HF_HUB_OFFLINE", "1")]
    assert unit["files"][0] == {"path": "/etc/sglang-router/router.env", "content": unit["env_text"], "owner": "root",
                                "group": "sglang-router", "mode": "0640"}
    assert unit["files"][1]["mode"] == "0644" and unit["files"][1]["content"] == text
    # Each key alone in a root-only file (systemd reads it as PID 1), named for the restart plan.
    assert unit["files"][2:] == [
        {"path": CREDENTIALS + "/router-api-key", "content": SECRET, "owner": "root", "group": "root", "mode": "0600"},
        {"path": CREDENTIALS + "/router-control-plane-api-key", "content": CONTROL_SECRET, "owner": "root", "group": "root",
         "mode": "0600"}]
    assert unit["credential_files"] == [CREDENTIALS + "/router-api-key", CREDENTIALS + "/router-control-plane-api-key"]
    # The flag check parses the launcher's flags with placeholders.
    assert unit["check_lines"] == lines + worker_lines(workers) + [
        ["--api-key", "KEY-FROM-CREDENTIAL"], ["--control-plane-api-keys", "pdserve:pdserve-operations:admin:KEY-FROM-CREDENTIAL"]]


def test_router_unit_with_the_client_key_only(inventory):
    router, workers = blackwell_router(inventory)
    unit = U.router_unit(router, workers, router_settings(api_key="k"))
    assert exec_words(unit["unit_text"])[LAUNCH_WORDS:LAUNCH_WORDS + 6] == [
        "--api-key-credential", "router-api-key", "--workers-file", "/etc/sglang-router/workers.json", "--",
        "--pd-disaggregation"]
    assert [v for k, v in sections(unit["unit_text"])["Service"] if k == "LoadCredential"] == [
        "router-api-key:%s/router-api-key" % CREDENTIALS]


def test_router_unit_without_keys(inventory):
    router, workers = blackwell_router(inventory)
    unit = U.router_unit(router, workers, router_settings())
    expansions = []
    words = exec_words(unit["unit_text"], expansions)
    assert words == LAUNCHER + ["--workers-file", "/etc/sglang-router/workers.json", "--"] + argv(
        router_args(router, router_settings()))
    assert words[LAUNCH_WORDS + 3:] == [
        "--pd-disaggregation",
        "--host", "0.0.0.0", "--port", "30001", "--prometheus-host", "127.0.0.1", "--prometheus-port", "29000",
        "--policy", "cache_aware", "--request-timeout-secs", "1800", "--worker-startup-timeout-secs", "1800",
        "--worker-startup-check-interval", "2", "--health-check-interval-secs", "2", "--health-failure-threshold", "2",
        "--health-success-threshold", "1", "--retry-max-retries", "10", "--retry-initial-backoff-ms", "100",
        "--retry-max-backoff-ms", "2000", "--shutdown-grace-period-secs", "30", "--log-level", "info",
        "--disable-circuit-breaker"]
    assert expansions == []
    assert "--api-key" not in unit["unit_text"] and "LoadCredential" not in unit["unit_text"]
    assert unit["credential_files"] == [] and len(unit["files"]) == 2
    assert unit["check_lines"] == unit["argv_lines"] + worker_lines(workers)
    assert ("After", "network-online.target") in sections(unit["unit_text"])["Unit"]


PEM_CERT = "-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----\n"
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIGHkey-s3cret\n-----END PRIVATE KEY-----\n"


def test_router_unit_with_tls_loads_certificate_and_key_as_credentials(inventory):
    router, workers = blackwell_router(inventory)
    settings = router_settings(api_key=SECRET, control_plane_api_key=CONTROL_SECRET, tls_cert=PEM_CERT, tls_key=PEM_KEY)
    unit = U.router_unit(router, workers, settings)
    text = unit["unit_text"]
    assert "MIGHkey-s3cret" not in text and "MIGHkey-s3cret" not in unit["env_text"]
    assert [v for k, v in sections(text)["Service"] if k == "LoadCredential"] == [
        "router-api-key:%s/router-api-key" % CREDENTIALS,
        "router-control-plane-api-key:%s/router-control-plane-api-key" % CREDENTIALS,
        "router-tls-cert:%s/router-tls-cert" % CREDENTIALS,
        "router-tls-key:%s/router-tls-key" % CREDENTIALS]
    words = exec_words(text)
    assert words[LAUNCH_WORDS:LAUNCH_WORDS + 11] == [
        "--api-key-credential", "router-api-key", "--control-plane-api-key-credential", "router-control-plane-api-key",
        "--tls-cert-credential", "router-tls-cert", "--tls-key-credential", "router-tls-key",
        "--workers-file", "/etc/sglang-router/workers.json", "--"]
    assert "--tls-key-path" not in words and "--tls-cert-path" not in words
    assert unit["files"][-2:] == [
        {"path": CREDENTIALS + "/router-tls-cert", "content": PEM_CERT, "owner": "root", "group": "root", "mode": "0600"},
        {"path": CREDENTIALS + "/router-tls-key", "content": PEM_KEY, "owner": "root", "group": "root", "mode": "0600"}]
    assert unit["credential_files"][-2:] == [CREDENTIALS + "/router-tls-cert", CREDENTIALS + "/router-tls-key"]
    # The router's own parser sees the TLS flags, with the paths systemd hands the router.
    assert unit["check_lines"][-2:] == [["--tls-cert-path", "/run/credentials/sglang-router.service/router-tls-cert"],
                                        ["--tls-key-path", "/run/credentials/sglang-router.service/router-tls-key"]]


def test_router_unit_without_tls_has_no_tls_credential(inventory):
    router, workers = blackwell_router(inventory)
    unit = U.router_unit(router, workers, router_settings(api_key="k", control_plane_api_key="a", tls_cert="", tls_key=""))
    assert "tls" not in unit["unit_text"] and not any("tls" in path for path in unit["credential_files"])
    assert unit["unit_text"] == U.router_unit(router, workers, router_settings(api_key="k", control_plane_api_key="a"))["unit_text"]


def test_router_env_file(inventory):
    router, workers = blackwell_router(inventory)
    settings = router_settings(hf_hub_offline=False, hf_endpoint="http://127.0.0.1:9", api_key="k", env={"Z": "1", "A": 'x"$y'})
    assert env_pairs(U.router_unit(router, workers, settings)["env_text"]) == [
        ("HF_HOME", "/var/cache/sglang-router/huggingface"),
        ("HF_ENDPOINT", "http://127.0.0.1:9"),
        ("A", 'x"$y'),
        ("Z", "1"),
    ]
    text = U.router_unit(router, workers, settings)["env_text"]
    assert text.split("\n")[:3] == [U.HEADER, "# pdserve.sglang.sglang_router",
                                    "# Environment of sglang-router.service: what it runs (PDSERVE_*), then its settings. "
                                    "Its keys are systemd credentials (LoadCredential=), never here."]


def test_router_unit_of_the_multinode_inventory(inventory):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    router, = topology["routers"]
    settings = router_settings(extra_args=["--max-concurrent-requests", 64], disable_retries=True)
    unit = U.router_unit(router, topology["workers"], settings)
    assert ("Description", "SGLang PD router on 0.0.0.0:30001") in sections(unit["unit_text"])["Unit"]
    words = exec_words(unit["unit_text"])
    assert words == LAUNCHER + ["--workers-file", "/etc/sglang-router/workers.json", "--"] + argv(unit["argv_lines"])
    assert words[LAUNCH_WORDS + 3:LAUNCH_WORDS + 5] == ["--pd-disaggregation", "--host"]
    assert words[-3:] == ["--disable-retries", "--max-concurrent-requests", "64"]
    assert json.loads(unit["worker_set_file"]["content"])["prefill"] == [
        {"url": "http://10.0.0.11:30000", "bootstrap_port": 8998}, {"url": "http://10.0.0.11:30010", "bootstrap_port": 8999}]


def test_router_unit_ipv6_worker_urls():
    router = {"host": "::", "port": 30001, "prometheus_host": "::1", "prometheus_port": 29000}
    workers = {"prefill": [{"url": "http://[fd00::11]:30000", "bootstrap_port": 8998}], "decode": [{"url": "http://[fd00::21]:30002"}]}
    unit = U.router_unit(router, workers, router_settings())
    assert exec_words(unit["unit_text"])[LAUNCH_WORDS + 3:LAUNCH_WORDS + 7] == ["--pd-disaggregation", "--host", "::", "--port"]
    # The workers are in the worker set file, as the launcher reads them.
    assert json.loads(unit["worker_set_file"]["content"]) == {
        "prefill": [{"url": "http://[fd00::11]:30000", "bootstrap_port": 8998}], "decode": [{"url": "http://[fd00::21]:30002"}]}
    assert unit["worker_set_file"]["mode"] == "0640" and unit["worker_set_file"]["owner"] == "root"
    assert unit["check_lines"][-2:] == [["--prefill", "http://[fd00::11]:30000", 8998], ["--decode", "http://[fd00::21]:30002"]]


# --- changed units ------------------------------------------------------------------------------------

def test_changed_units():
    units = [U.server_unit(instance(PREFILL, "prefill"), MODEL, server_settings()),
             U.server_unit(instance(DECODE, "decode"), MODEL, server_settings())]
    assert U.changed_units(units, []) == []
    assert U.changed_units(units, None) == []
    assert U.changed_units(units, ["/etc/sglang/decode.env"]) == ["sglang-decode.service"]
    assert U.changed_units(units, ["/etc/systemd/system/sglang-prefill.service", "/etc/other"]) == ["sglang-prefill.service"]
    assert U.changed_units(units, ["/etc/sglang/prefill.env", "/etc/systemd/system/sglang-decode.service"]) == [
        "sglang-prefill.service", "sglang-decode.service"]


# --- values crafted to leave their line: refused by the preflight, and by the renderer as its last guard ------------

# The attack of issue 17: a value that starts with ${ and ends with } used to be written raw between quotes, so a
# quote and line breaks inside it added an ExecStartPre=+ that systemd runs as root.
BREAKOUT = '${A}"\nExecStartPre=+/bin/sh -c "id > /root/pwned"\nX="${B}'
CONTROLS = ["a\nb", "a\rb", "a\tb", "a\0b", "a\x1bb", "a\x7fb", "a\x0bb"]


def _refused(render):
    with pytest.raises(U.UnitValueError) as caught:
        render()
    return str(caught.value)


def test_the_breakout_through_an_environment_reference_is_refused_everywhere():
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving import rules as R
    model = dict(MODEL, served_model_name=BREAKOUT)
    message = _refused(lambda: U.server_unit(instance(DECODE, "decode"), model, server_settings()))
    assert "--served-model-name" in message and "control character" in message
    assert [p["variable"] for p in R.model_problems("h", model)] == ["sglang_model_served_name"]
    # Without the line breaks it stays one quoted word: only exactly ${NAME} is left for systemd to expand.
    flat = BREAKOUT.replace("\n", " ")
    unit = U.server_unit(instance(DECODE, "decode"), dict(MODEL, served_model_name=flat), server_settings())
    expansions = []
    words = exec_words(unit["unit_text"], expansions)
    assert words[words.index("--served-model-name") + 1] == flat and expansions == []
    assert "ExecStartPre" not in keys(sections(unit["unit_text"])["Service"])


@pytest.mark.parametrize("word", ["${A}x", "x${A}", "${A B}", "${1A}", "${A}${B}", "${}", "${A}\n"])
def test_only_an_exact_environment_reference_is_expanded(word):
    if "\n" in word:
        with pytest.raises(U.UnitValueError):
            U.exec_word(word)
        return
    expansions = []
    assert exec_words("ExecStart=/bin/x %s" % U.exec_word(word), expansions) == ["/bin/x", word]
    assert expansions == []


@pytest.mark.parametrize("control", CONTROLS)
@pytest.mark.parametrize("field", ["model_path", "served_model_name", "chat_template", "reasoning_parser",
                                   "tool_call_parser", "transfer_backend"])
def test_a_control_character_in_a_model_word_never_leaves_its_line(field, control):
    message = _refused(lambda: U.server_unit(instance(DECODE, "decode"), dict(MODEL, **{field: control}), server_settings()))
    assert "control character" in message


@pytest.mark.parametrize("control", CONTROLS)
@pytest.mark.parametrize("where", ["model_extra", "instance_extra", "instance_env_value", "model_env_value", "env_name"])
def test_a_control_character_in_extra_args_or_env_never_leaves_its_line(where, control):
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import normalize
    model, inst, settings, raw = dict(MODEL), instance(DECODE, "decode"), server_settings(), dict(DECODE)
    if where == "model_extra":
        model["extra_args"] = ["--x", control]
    elif where == "instance_extra":
        raw["extra_args"] = inst["extra_args"] = ["--x=" + control]
    elif where == "instance_env_value":
        raw["env"] = inst["env"] = {"A": control}
    elif where == "model_env_value":
        settings["env"] = {"A": control}
    else:
        raw["env"] = inst["env"] = {"A" + control: "1"}
    _refused(lambda: U.server_unit(inst, model, settings))
    if where.startswith("instance") or where == "env_name":
        assert normalize([raw], "decode", "h")[1], "the preflight lets it through"


SERVER_FIELDS = ["launch_command", "numactl_path", "user", "group", "home", "config_dir", "restart_sec",
                 "timeout_stop_sec", "start_limit_interval_sec", "start_limit_burst", "limit_nofile"]


@pytest.mark.parametrize("control", ["\n", "\r", "\t", "\0"])
@pytest.mark.parametrize("field", SERVER_FIELDS)
def test_a_control_character_in_a_server_setting_is_refused_with_its_variable(field, control):
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving import rules as R
    settings = server_settings()
    settings[field] = "%s%sUser=root" % (settings[field], control)
    message = _refused(lambda: U.server_unit(instance(DECODE, "decode"), MODEL, settings))
    assert "sglang_server_" + field in message
    assert [p["variable"] for p in R.unit_problems("h", "server", settings)] == ["sglang_server_" + field]


@pytest.mark.parametrize("value", ["+/bin/sh -c id", "-/bin/x", "!/bin/x", "@/bin/x", ":/bin/x", "python -m x",
                                   '"/bin/x"', "/bin/x\n--y"])
def test_the_program_of_exec_start_is_an_absolute_path_without_prefixes(value):
    settings = server_settings(launch_command=value)
    assert "sglang_server_launch_command" in _refused(lambda: U.server_unit(instance(DECODE, "decode"), MODEL, settings))


@pytest.mark.parametrize("key, value", [
    ("ProtectSystem", "full\nUser=root"), ("ProtectSystem", "bogus"), ("ProtectHome", "rw"), ("ProtectProc", True),
    ("ProcSubset", "none"), ("NoNewPrivileges", "maybe"), ("UMask", 23), ("UMask", "0999"), ("UMask", "27\n"),
    ("DevicePolicy", "open"), ("DeviceAllow", ["char-nvidia-uvm rw", "/dev/sda rwx"]), ("DeviceAllow", "nvidia rw"),
    ("ReadWritePaths", "relative/path"), ("ReadWritePaths", "/a\tb"), ("CapabilityBoundingSet", "CAP_SYS_ADMIN\n"),
    ("CapabilityBoundingSet", "sys_admin"), ("RestrictAddressFamilies", "AF_INET;AF_UNIX"),
    ("SystemCallFilter", "@system-service\nExecStartPre=+/bin/sh"), ("RestrictNamespaces", "net foo"),
    ("MemoryMax", "1G"), ("ExecStartPre", "+/bin/sh"), ("User", "root"), ("NoNewPrivileges", {"a": 1}),
])
def test_hardening_values_outside_what_systemd_takes_are_refused(key, value):
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving import rules as R
    hardening = dict(server_settings()["hardening"], **{key: value})
    settings = server_settings(hardening=hardening)
    assert key in _refused(lambda: U.server_unit(instance(DECODE, "decode"), MODEL, settings))
    found = R.unit_problems("h", "server", settings)
    assert [p["variable"] for p in found] == ["sglang_server_systemd_hardening_overrides." + key], found
    assert found[0]["fix"]


def test_percent_is_escaped_where_systemd_expands_specifiers():
    settings = server_settings(home="/srv/sg%h", config_dir="/etc/sg%i",
                               hardening=dict(server_settings()["hardening"], ReadOnlyPaths="/data/%u"))
    unit = U.server_unit(instance(DECODE, "decode"), dict(MODEL, model_path="/m/100%n"), settings)
    service = dict(sections(unit["unit_text"])["Service"])
    assert service["WorkingDirectory"] == "/srv/sg%%h" and service["ReadWritePaths"] == "/srv/sg%%h"
    assert service["EnvironmentFile"] == "/etc/sg%%i/decode.env" and service["ReadOnlyPaths"] == "/data/%%u"
    words = exec_words(unit["unit_text"])
    assert words[words.index("--model-path") + 1] == "/m/100%n"
    assert unit["env_file"] == "/etc/sg%i/decode.env"


def test_a_hardening_list_is_one_line_per_item_and_an_empty_value_is_written_empty():
    hardening = {"DeviceAllow": ["char-nvidia-uvm rw", "/dev/nvidiactl rw"], "CapabilityBoundingSet": "", "UMask": "0027"}
    unit = U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(hardening=hardening))
    service = sections(unit["unit_text"])["Service"]
    assert service[12:-1] == [("CapabilityBoundingSet", ""), ("DeviceAllow", "char-nvidia-uvm rw"),
                              ("DeviceAllow", "/dev/nvidiactl rw"), ("UMask", "0027")]


ROUTER_FIELDS = ["launch_command", "user", "group", "config_dir", "restart_sec", "timeout_stop_sec",
                 "start_limit_interval_sec", "start_limit_burst", "limit_nofile", "hf_endpoint", "api_key"]


@pytest.mark.parametrize("control", ["\n", "\r", "\t", "\0"])
@pytest.mark.parametrize("field", ROUTER_FIELDS)
def test_a_control_character_in_a_router_setting_is_refused_with_its_variable(inventory, field, control):
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving import rules as R
    router, workers = blackwell_router(inventory)
    settings = router_settings()
    settings[field] = "%s%sUser=root" % (settings[field] or "http://h", control)
    message = _refused(lambda: U.router_unit(router, workers, settings))
    assert "sglang_router_" + field in message
    found = R.unit_problems("h", "router", settings)
    assert [p["variable"] for p in found] == ["sglang_router_" + field]
    if field == "api_key":
        assert "User=root" not in message and "User=root" not in found[0]["message"]


@pytest.mark.parametrize("env", [{"A": "x\ny"}, {"A\n": "x"}, {"A B": "x"}, {"A": ["x"]}])
def test_router_env_names_and_values_are_judged(inventory, env):
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving import rules as R
    router, workers = blackwell_router(inventory)
    settings = router_settings(env=env)
    assert "sglang_router_env" in _refused(lambda: U.router_unit(router, workers, settings))
    assert [p["variable"].split(".")[0].split("[")[0] for p in R.unit_problems("h", "router", settings)] == ["sglang_router_env"]


@pytest.mark.parametrize("field", ["policy", "log_level", "request_timeout_secs"])
def test_a_control_character_in_a_router_flag_value_never_leaves_its_line(inventory, field):
    router, workers = blackwell_router(inventory)
    settings = router_settings(**{field: "x\nExecStartPre=+/bin/sh"})
    _refused(lambda: U.router_unit(router, workers, settings))
    _refused(lambda: U.router_unit(router, workers, router_settings(extra_args=["--x", BREAKOUT])))


def test_the_role_defaults_pass_the_judgement():
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving import rules as R
    assert R.unit_problems("h", "server", server_settings()) == []
    assert R.unit_problems("h", "router", router_settings(api_key="k", hf_endpoint="https://hf.example")) == []


def test_router_unit_behind_smg_names_it_to_the_launcher_and_in_the_fingerprint(inventory):
    router, workers = blackwell_router(inventory)
    default = U.router_unit(router, workers, router_settings(
        implementation="sglang-router", fingerprint={"sglang_router": "0.3.2", "smg": "", "venv": "/opt/sglang/router-venv"}))
    smg = U.router_unit(router, workers, router_settings(
        implementation="smg", fingerprint={"sglang_router": "", "smg": "1.13.0", "venv": "/opt/sglang/router-venv"}))
    # Always named: the launcher has no default of its own (sglang_defaults owns it).
    assert '"--implementation" "sglang-router"' in default["unit_text"]
    exec_start = [line for line in smg["unit_text"].splitlines() if line.startswith("ExecStart=")][0]
    assert '"--implementation" "smg"' in exec_start and exec_start.index("--implementation") < exec_start.index('"--"')
    assert env_pairs(smg["env_text"])[:2] == [("PDSERVE_SMG", "1.13.0"), ("PDSERVE_VENV", "/opt/sglang/router-venv")]
    # The router's own flags (and what the flag check parses) are the same for both.
    assert smg["argv_lines"] == default["argv_lines"] and smg["check_lines"] == default["check_lines"]


def test_router_unit_refuses_an_unknown_implementation(inventory):
    router, workers = blackwell_router(inventory)
    with pytest.raises(U.UnitValueError, match="sglang_router_implementation"):
        U.router_unit(router, workers, router_settings(implementation="vllm-router"))


def test_each_side_gets_its_pd_timeout_and_env_still_wins():
    """The prefill reads SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT, the decode SGLANG_DISAGGREGATION_WAITING_TIMEOUT."""
    d = role_defaults("sglang_server")
    settings = server_settings(env={}, disaggregation_bootstrap_timeout=d["sglang_server_disaggregation_bootstrap_timeout"],
                               disaggregation_waiting_timeout=12)
    prefill = dict(env_pairs(U.server_unit(instance(PREFILL, "prefill"), MODEL, settings)["env_text"]))
    decode = dict(env_pairs(U.server_unit(instance(DECODE, "decode"), MODEL, settings)["env_text"]))
    assert prefill["SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT"] == "30" and "SGLANG_DISAGGREGATION_WAITING_TIMEOUT" not in prefill
    assert decode["SGLANG_DISAGGREGATION_WAITING_TIMEOUT"] == "12" and "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT" not in decode
    own = instance(DECODE, "decode", env={"SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "600"})
    assert dict(env_pairs(U.server_unit(own, MODEL, settings)["env_text"]))["SGLANG_DISAGGREGATION_WAITING_TIMEOUT"] == "600"


@pytest.mark.parametrize("value", ["30s", 0, -5, 2.5, True, None, [30], "", "1e3"])
def test_a_pd_timeout_sglang_would_not_read_is_refused(value):
    if value is None:  # unset: nothing written, nothing refused
        assert V.settings_problems(server_settings(disaggregation_waiting_timeout=None), "sglang_server_") == []
        return
    found = V.settings_problems(server_settings(disaggregation_waiting_timeout=value), "sglang_server_")
    assert [f[0] for f in found] == ["sglang_server_disaggregation_waiting_timeout"], found
    with pytest.raises(U.UnitValueError, match="sglang_server_disaggregation_waiting_timeout"):
        U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(disaggregation_waiting_timeout=value))


@pytest.mark.parametrize("value", [1, 30, "45", " 300 "])
def test_whole_seconds_are_accepted(value):
    assert V.settings_problems(server_settings(disaggregation_bootstrap_timeout=value), "sglang_server_") == []


def test_the_decode_alone_gets_its_heartbeat_and_env_still_wins():
    """The decode runs the heartbeat to each prefill: SGLANG_DISAGGREGATION_HEARTBEAT_* go into its env file only."""
    d = role_defaults("sglang_server")
    settings = server_settings(env={}, disaggregation_heartbeat_interval=d["sglang_server_disaggregation_heartbeat_interval"],
                               disaggregation_heartbeat_max_failure=d["sglang_server_disaggregation_heartbeat_max_failure"])
    prefill = dict(env_pairs(U.server_unit(instance(PREFILL, "prefill"), MODEL, settings)["env_text"]))
    decode = dict(env_pairs(U.server_unit(instance(DECODE, "decode"), MODEL, settings)["env_text"]))
    assert not [name for name in prefill if name.startswith("SGLANG_DISAGGREGATION_HEARTBEAT")], prefill
    # SGLang's own defaults (5.0 s, 2 misses: about 10 s before a lost prefill's requests fail).
    assert decode["SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL"] == "5.0"
    assert decode["SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE"] == "2"
    faster = server_settings(env={}, disaggregation_heartbeat_interval="2.5", disaggregation_heartbeat_max_failure=" 3 ")
    decode = dict(env_pairs(U.server_unit(instance(DECODE, "decode"), MODEL, faster)["env_text"]))
    assert (decode["SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL"], decode["SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE"]) == ("2.5", "3")
    shared = server_settings(env={"SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL": "8"}, disaggregation_heartbeat_interval=3)
    own = instance(DECODE, "decode", env={"SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE": "5"})
    decode = dict(env_pairs(U.server_unit(own, MODEL, dict(shared, disaggregation_heartbeat_max_failure=2))["env_text"]))
    assert (decode["SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL"], decode["SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE"]) == ("8", "5")


@pytest.mark.parametrize("key, value", [
    ("disaggregation_heartbeat_interval", 1.5), ("disaggregation_heartbeat_interval", 0),
    ("disaggregation_heartbeat_interval", "5s"), ("disaggregation_heartbeat_interval", "fast"),
    ("disaggregation_heartbeat_interval", -3), ("disaggregation_heartbeat_interval", True),
    ("disaggregation_heartbeat_interval", [5]), ("disaggregation_heartbeat_interval", ""),
    ("disaggregation_heartbeat_interval", "nan"), ("disaggregation_heartbeat_interval", "inf"),
    ("disaggregation_heartbeat_max_failure", 0), ("disaggregation_heartbeat_max_failure", 2.5),
    ("disaggregation_heartbeat_max_failure", "two"), ("disaggregation_heartbeat_max_failure", -1),
    ("disaggregation_heartbeat_max_failure", False), ("disaggregation_heartbeat_max_failure", {"n": 2}),
])
def test_a_heartbeat_setting_sglang_would_change_or_not_read_is_refused(key, value):
    found = V.settings_problems(server_settings(**{key: value}), "sglang_server_")
    assert [f[0] for f in found] == ["sglang_server_" + key], found
    with pytest.raises(U.UnitValueError, match="sglang_server_" + key):
        U.server_unit(instance(DECODE, "decode"), MODEL, server_settings(**{key: value}))


@pytest.mark.parametrize("key, value", [
    ("disaggregation_heartbeat_interval", 2), ("disaggregation_heartbeat_interval", 2.0),
    ("disaggregation_heartbeat_interval", 5.0), ("disaggregation_heartbeat_interval", " 7.25 "),
    ("disaggregation_heartbeat_interval", None), ("disaggregation_heartbeat_max_failure", 1),
    ("disaggregation_heartbeat_max_failure", "10"), ("disaggregation_heartbeat_max_failure", None),
])
def test_heartbeat_settings_sglang_reads_as_they_are_accepted(key, value):
    assert V.settings_problems(server_settings(**{key: value}), "sglang_server_") == []


@pytest.mark.parametrize("setting", V.PD_SETTINGS, ids=lambda s: s.key)
def test_a_refused_pd_setting_says_its_least_value_and_what_sglang_would_do(setting):
    """One table drives the env file, the check and the fix: each row's refusal names its bound and SGLang's reading."""
    below = setting.least - 1
    found = V.settings_problems(server_settings(**{setting.key: below}), "sglang_server_")
    assert [(f[0], f[2]) for f in found] == [("sglang_server_" + setting.key, setting.fix)], found
    assert "at least %d" % setting.least in found[0][1] and setting.unread in found[0][1]
    unit = U.server_unit(instance(DECODE if setting.mode == "decode" else PREFILL, setting.mode), MODEL,
                         server_settings(env={}, **{setting.key: setting.least}))
    assert dict(env_pairs(unit["env_text"]))[setting.env] == ("%.1f" % setting.least if setting.fraction else str(setting.least))
