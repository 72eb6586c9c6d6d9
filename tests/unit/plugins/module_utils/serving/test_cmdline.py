# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Command lines (module_utils/serving/cmdline.py): every flag of the server's and the router's line, with the
condition that adds or drops it, and the exact lines of the shipped inventories."""

import argparse
import os
import sys

import pytest
import yaml

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import cmdline as C
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import DECODE, MODEL, PREFILL, ROUTER, TOPOLOGY_DEFAULTS, WORKERS, role_defaults  # noqa: E402  pylint: disable=wrong-import-position
from serving_support import instance as normalized  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))


SEED_PREFILL = [
    ["--model-path", "/models/DeepSeek-V4-Flash"],
    ["--served-model-name", "deepseek-v4-flash"],
    ["--host", "127.0.0.1"],
    ["--port", 30000],
    ["--tp-size", 4],
    ["--disaggregation-mode", "prefill"],
    ["--disaggregation-transfer-backend", "nixl"],
    ["--disaggregation-bootstrap-port", 8998],
    ["--dist-init-addr", "127.0.0.1:30335"],
    ["--mem-fraction-static", 0.8],
    ["--context-length", 8192],
    ["--chat-template", "/opt/sglang/chat_templates/tool_chat_template_deepseekv32.jinja"],
    ["--reasoning-parser", "deepseek-v4"],
    ["--tool-call-parser", "deepseekv4"],
    ["--enable-metrics"],
]
SEED_DECODE = [
    ["--model-path", "/models/DeepSeek-V4-Flash"],
    ["--served-model-name", "deepseek-v4-flash"],
    ["--host", "127.0.0.1"],
    ["--port", 30002],
    ["--tp-size", 4],
    ["--disaggregation-mode", "decode"],
    ["--disaggregation-transfer-backend", "nixl"],
    ["--dist-init-addr", "127.0.0.1:30435"],
    ["--mem-fraction-static", 0.85],
    ["--context-length", 8192],
    ["--chat-template", "/opt/sglang/chat_templates/tool_chat_template_deepseekv32.jinja"],
    ["--reasoning-parser", "deepseek-v4"],
    ["--tool-call-parser", "deepseekv4"],
    ["--enable-metrics"],
]


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def router_defaults():
    """The router settings of roles/sglang_router/defaults/main.yml, as roles/sglang_router/vars/main.yml passes them."""
    defaults = role_defaults("sglang_router")
    settings = dict((key, defaults["sglang_router_" + key]) for key, _flag in C.ROUTER_FLAGS + C.ROUTER_SWITCHES)
    settings["extra_args"] = defaults["sglang_router_extra_args"]
    return settings


def instance(raw=None, mode=None, **fields):
    raw = raw or DECODE
    mode = mode or ("prefill" if raw is PREFILL or raw.get("name") == "prefill" else "decode")
    return normalized(raw, mode, "h", **fields)


def flags(lines):
    return [line[0] for line in lines]


def line_of(lines, flag):
    found = [line for line in lines if line[0] == flag]
    assert len(found) <= 1, found
    return found[0] if found else None


# --- helpers -------------------------------------------------------------------------------------------

def test_group_args():
    assert C.group_args(None) == []
    assert C.group_args([]) == []
    assert C.group_args(["--cuda-graph-max-bs", 64, "--disable-radix-cache", "-x", "a", "b"]) == [
        ["--cuda-graph-max-bs", "64"], ["--disable-radix-cache"], ["-x", "a", "b"]]
    # A leading value gets its own line rather than being lost.
    assert C.group_args(["value", "--flag"]) == [["value"], ["--flag"]]


def test_argv_is_every_word_as_a_string():
    assert C.argv([["--port", 30000], ["--mem-fraction-static", 0.8], ["--enable-metrics"]]) == [
        "--port", "30000", "--mem-fraction-static", "0.8", "--enable-metrics"]
    assert C.argv([]) == []


# --- the server's line: the seed --------------------------------------------------------------------------

def test_seed_prefill_line():
    assert C.server_args(instance(PREFILL, "prefill"), MODEL) == SEED_PREFILL


def test_seed_decode_line():
    assert C.server_args(instance(DECODE, "decode"), MODEL) == SEED_DECODE


def test_the_blackwell_inventory_renders_the_command_lines_the_install_scenario_checks(inventory, inventory_model):
    """extensions/molecule/sglang_install checks these argv with the real SGLang parser: they must be what the
    blackwell inventory renders (the server role's defaults: numactl binding, metrics on)."""
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    model = inventory_model("blackwell")
    entry = topology["hosts"]["blackwell"]
    rendered = [{"name": inst["name"], "argv": C.argv(C.server_args(inst, model, "numactl", True))}
                for mode in ("prefill", "decode") for inst in entry[mode]]
    scenario = load("extensions", "molecule", "sglang_install", "molecule.yml")
    assert rendered == scenario["provisioner"]["inventory"]["group_vars"]["all"]["blackwell_command_lines"]
    assert rendered[0]["argv"] == C.argv(SEED_PREFILL) and rendered[1]["argv"] == C.argv(SEED_DECODE)


def test_the_local_inventory_keeps_its_parsers_without_a_chat_template(inventory, inventory_model):
    topology = build_topology(*inventory("local"), defaults=TOPOLOGY_DEFAULTS)
    model = inventory_model("local")
    assert model["chat_template"] == ""
    for mode in ("prefill", "decode"):
        inst, = topology["hosts"]["pdserve-local"][mode]
        lines = C.server_args(inst, model)
        assert "--chat-template" not in flags(lines)
        assert line_of(lines, "--reasoning-parser") == ["--reasoning-parser", "deepseek-v4"]
        assert line_of(lines, "--tool-call-parser") == ["--tool-call-parser", "deepseekv4"]
        assert line_of(lines, "--context-length") == ["--context-length", 8192]
        assert line_of(lines, "--tp-size") == ["--tp-size", 1]


def test_the_multinode_inventory(inventory, inventory_model):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    model = inventory_model("multinode")
    p0, p1 = topology["hosts"]["gpu-prefill-1"]["prefill"]
    d0, = topology["hosts"]["gpu-decode-1"]["decode"]
    assert C.server_args(p1, model)[2:8] == [
        ["--host", "10.0.0.11"], ["--port", 30010], ["--tp-size", 4], ["--disaggregation-mode", "prefill"],
        ["--disaggregation-transfer-backend", "nixl"], ["--disaggregation-bootstrap-port", 8999]]
    assert line_of(C.server_args(p0, model), "--dist-init-addr") == ["--dist-init-addr", "127.0.0.1:30335"]
    lines = C.server_args(d0, model, numa_binding="sglang")
    assert line_of(lines, "--tp-size") == ["--tp-size", 8]
    assert "--numa-node" not in flags(lines)  # decode-0 has no numa_node


# --- the server's line: each flag and its condition ---------------------------------------------------------

def test_fixed_order_of_the_always_present_flags():
    lines = C.server_args(instance(), {"model_path": "/m"}, numa_binding="none", enable_metrics=False)
    assert lines == [
        ["--model-path", "/m"],
        ["--host", "127.0.0.1"],
        ["--port", 30002],
        ["--tp-size", 4],
        ["--disaggregation-mode", "decode"],
        ["--dist-init-addr", "127.0.0.1:30435"],
        ["--mem-fraction-static", 0.85],
    ]


@pytest.mark.parametrize("key, flag", [
    ("served_model_name", "--served-model-name"),
    ("transfer_backend", "--disaggregation-transfer-backend"),
    ("chat_template", "--chat-template"),
    ("reasoning_parser", "--reasoning-parser"),
    ("tool_call_parser", "--tool-call-parser"),
])
@pytest.mark.parametrize("empty", ["", None, "absent"])
def test_model_flags_present_only_when_set(key, flag, empty):
    lines = C.server_args(instance(), MODEL)
    assert line_of(lines, flag) == [flag, MODEL[key]]
    model = dict(MODEL)
    if empty == "absent":
        del model[key]
    else:
        model[key] = empty
    lines = C.server_args(instance(), model)
    assert flag not in flags(lines)
    # Only that flag goes: the parsers never depend on the chat template, nor the template on them.
    assert len(lines) == len(SEED_DECODE) - 1


@pytest.mark.parametrize("kept", ["reasoning_parser", "tool_call_parser"])
def test_parsers_without_a_chat_template(kept):
    model = dict(MODEL, chat_template="", **{"reasoning_parser" if kept == "tool_call_parser" else "tool_call_parser": ""})
    lines = C.server_args(instance(), model)
    flag = "--" + kept.replace("_", "-")
    assert line_of(lines, flag) == [flag, MODEL[kept]]
    assert "--chat-template" not in flags(lines)


def test_both_parsers_without_a_chat_template_keep_their_place():
    lines = C.server_args(instance(), dict(MODEL, chat_template=""))
    assert lines[-3:] == [["--reasoning-parser", "deepseek-v4"], ["--tool-call-parser", "deepseekv4"], ["--enable-metrics"]]


def test_model_path_is_always_first_even_when_empty():
    assert C.server_args(instance(), {})[0] == ["--model-path", None]
    assert C.server_args(instance(), None)[0] == ["--model-path", None]


def test_host_port_tp_size_and_mode_come_from_the_instance():
    inst = instance(DECODE, host="10.0.0.21", port=31002, gpus=[0, 1], tp_size=2)
    lines = C.server_args(inst, MODEL)
    assert lines[2:6] == [["--host", "10.0.0.21"], ["--port", 31002], ["--tp-size", 2], ["--disaggregation-mode", "decode"]]


def test_bootstrap_port():
    assert line_of(C.server_args(instance(PREFILL, "prefill"), MODEL), "--disaggregation-bootstrap-port") == [
        "--disaggregation-bootstrap-port", 8998]
    without = dict(PREFILL)
    del without["bootstrap_port"]
    # SGLang's default, written out so the clash check and the router see the same port.
    assert line_of(C.server_args(instance(without, "prefill"), MODEL), "--disaggregation-bootstrap-port") == [
        "--disaggregation-bootstrap-port", 8998]
    assert line_of(C.server_args(instance(PREFILL, "prefill", bootstrap_port=9100), MODEL), "--disaggregation-bootstrap-port") == [
        "--disaggregation-bootstrap-port", 9100]
    assert "--disaggregation-bootstrap-port" not in flags(C.server_args(instance(DECODE), MODEL))
    assert line_of(C.server_args(instance(DECODE, bootstrap_port=9200), MODEL), "--disaggregation-bootstrap-port") == [
        "--disaggregation-bootstrap-port", 9200]


def test_dist_init_addr():
    assert line_of(C.server_args(instance(DECODE, dist_init_host="10.0.0.21"), MODEL), "--dist-init-addr") == [
        "--dist-init-addr", "10.0.0.21:30435"]
    without = dict(DECODE)
    del without["dist_init_port"]
    assert "--dist-init-addr" not in flags(C.server_args(instance(without), MODEL))


def test_mem_fraction_static():
    without = dict(DECODE)
    del without["mem_fraction_static"]
    assert "--mem-fraction-static" not in flags(C.server_args(instance(without), MODEL))
    assert line_of(C.server_args(instance(DECODE, mem_fraction_static=0.5), MODEL), "--mem-fraction-static") == [
        "--mem-fraction-static", 0.5]


@pytest.mark.parametrize("instance_value, model_value, expected", [
    (4096, 8192, 4096),
    (None, 8192, 8192),
    (4096, None, 4096),
    (None, None, None),
])
def test_context_length_instance_over_model(instance_value, model_value, expected):
    inst = instance(DECODE, context_length=instance_value) if instance_value else instance(DECODE)
    lines = C.server_args(inst, dict(MODEL, context_length=model_value))
    if expected is None:
        assert "--context-length" not in flags(lines)
    else:
        assert line_of(lines, "--context-length") == ["--context-length", expected]
        assert flags(lines).index("--context-length") == flags(lines).index("--mem-fraction-static") + 1


def test_numa_node_per_tp_rank_with_sglang_binding():
    lines = C.server_args(instance(DECODE), MODEL, numa_binding="sglang")
    assert line_of(lines, "--numa-node") == ["--numa-node", 1, 1, 1, 1]
    assert flags(lines)[-2:] == ["--numa-node", "--enable-metrics"]
    lines = C.server_args(instance(DECODE, gpus=[6, 7], numa_node=0), MODEL, numa_binding="sglang")
    assert line_of(lines, "--numa-node") == ["--numa-node", 0, 0]
    assert C.argv([line_of(lines, "--numa-node")]) == ["--numa-node", "0", "0"]


@pytest.mark.parametrize("binding", ["numactl", "none"])
def test_no_numa_node_flag_with_numactl_or_none(binding):
    assert "--numa-node" not in flags(C.server_args(instance(DECODE), MODEL, numa_binding=binding))


def test_no_numa_node_flag_without_a_numa_node():
    without = dict(DECODE)
    del without["numa_node"]
    assert "--numa-node" not in flags(C.server_args(instance(without), MODEL, numa_binding="sglang"))


def test_enable_metrics_on_and_off():
    assert C.server_args(instance(), MODEL)[-1] == ["--enable-metrics"]
    assert C.server_args(instance(), MODEL, enable_metrics=True)[-1] == ["--enable-metrics"]
    assert "--enable-metrics" not in flags(C.server_args(instance(), MODEL, enable_metrics=False))


def test_extra_args_model_first_then_instance_grouped_at_the_end():
    model = dict(MODEL, extra_args=["--cuda-graph-max-bs", "64", "--foo"])
    inst = instance(DECODE, extra_args=["--disable-radix-cache", "--chunked-prefill-size", 8192])
    lines = C.server_args(inst, model, numa_binding="sglang", enable_metrics=False)
    assert lines[-5:] == [["--numa-node", 1, 1, 1, 1], ["--cuda-graph-max-bs", "64"], ["--foo"], ["--disable-radix-cache"],
                          ["--chunked-prefill-size", "8192"]]
    assert C.server_args(inst, dict(MODEL, extra_args=None))[-1] == ["--chunked-prefill-size", "8192"]


def test_every_optional_part_at_once():
    inst = instance(PREFILL, "prefill", host="0.0.0.0", context_length=4096, extra_args=["--x"])
    model = dict(MODEL, extra_args=["--y", "1"])
    assert C.server_args(inst, model, numa_binding="sglang") == SEED_PREFILL[:2] + [["--host", "0.0.0.0"]] + SEED_PREFILL[3:10] + [
        ["--context-length", 4096]] + SEED_PREFILL[11:14] + [["--numa-node", 0, 0, 0, 0], ["--enable-metrics"], ["--y", "1"], ["--x"]]


# --- the router's line ------------------------------------------------------------------------------------

def test_router_line_of_the_blackwell_inventory_with_the_role_defaults(inventory):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    router, = topology["routers"]
    assert C.worker_lines(topology["workers"]) == [
        ["--prefill", "http://127.0.0.1:30000", 8998],
        ["--decode", "http://127.0.0.1:30002"],
    ]
    assert C.router_args(router, router_defaults()) == [
        ["--pd-disaggregation"],
        ["--host", "0.0.0.0"],
        ["--port", 30001],
        ["--prometheus-host", "127.0.0.1"],
        ["--prometheus-port", 29000],
        ["--policy", "cache_aware"],
        ["--request-timeout-secs", 1800],
        ["--worker-startup-timeout-secs", 1800],
        ["--worker-startup-check-interval", 2],
        ["--health-check-interval-secs", 2],
        ["--health-failure-threshold", 2],
        ["--health-success-threshold", 1],
        ["--retry-max-retries", 10],
        ["--retry-initial-backoff-ms", 100],
        ["--retry-max-backoff-ms", 2000],
        ["--shutdown-grace-period-secs", 30],
        ["--log-level", "info"],
        ["--disable-circuit-breaker"],
    ]


def test_router_line_of_the_multinode_inventory(inventory):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    router, = topology["routers"]
    lines = C.router_args(router, router_defaults())
    assert C.worker_lines(topology["workers"]) == [
        ["--prefill", "http://10.0.0.11:30000", 8998],
        ["--prefill", "http://10.0.0.11:30010", 8999],
        ["--decode", "http://10.0.0.21:30002"],
    ]
    assert "--api-key" not in flags(lines)


def test_worker_order_prefill_then_decode_as_listed():
    workers = {"decode": [{"url": "http://d2:1"}, {"url": "http://d1:1"}],
               "prefill": [{"url": "http://p2:1", "bootstrap_port": 9000}, {"url": "http://p1:1", "bootstrap_port": 8998},
                           {"url": "http://p0:1", "bootstrap_port": None}, {"url": "http://p9:1"}]}
    assert C.worker_lines(workers) == [
        ["--prefill", "http://p2:1", 9000],
        ["--prefill", "http://p1:1", 8998],
        ["--prefill", "http://p0:1"],
        ["--prefill", "http://p9:1"],
        ["--decode", "http://d2:1"],
        ["--decode", "http://d1:1"],
    ]


def test_router_without_workers_or_settings():
    assert C.router_args(ROUTER, {}) + C.worker_lines({}) == [
        ["--pd-disaggregation"], ["--host", "0.0.0.0"], ["--port", 30001],
        ["--prometheus-host", "127.0.0.1"], ["--prometheus-port", 29000]]


def test_decode_bootstrap_port_is_not_the_routers_business():
    lines = C.router_args(ROUTER, {}) + C.worker_lines({"decode": [{"url": "http://d:1", "bootstrap_port": 8998}]})
    assert ["--decode", "http://d:1"] in lines


@pytest.mark.parametrize("key, flag", C.ROUTER_FLAGS)
def test_every_router_flag(key, flag):
    lines = C.router_args(ROUTER, {key: "7"})
    assert lines[-1] == [flag, "7"]
    assert len(lines) == 6  # PD mode, 4 listen lines, the setting (the workers are in the worker set file)
    assert C.router_args(ROUTER, {key: 0})[-1] == [flag, 0]
    for empty in (None, ""):
        assert flag not in flags(C.router_args(ROUTER, {key: empty}))


@pytest.mark.parametrize("key, flag", C.ROUTER_SWITCHES)
def test_every_router_switch(key, flag):
    assert C.router_args(ROUTER, {key: True})[-1] == [flag]
    for off in (False, None, ""):
        assert flag not in flags(C.router_args(ROUTER, {key: off}))


def test_router_flags_in_table_order_then_switches_and_extra_args():
    settings = dict((key, "v%d" % i) for i, (key, _flag) in enumerate(C.ROUTER_FLAGS))
    settings.update((key, True) for key, _flag in C.ROUTER_SWITCHES)
    settings["extra_args"] = ["--max-concurrent-requests", 64, "--enable-igw"]
    lines = C.router_args(ROUTER, settings)
    assert lines[1:5] == [["--host", "0.0.0.0"], ["--port", 30001], ["--prometheus-host", "127.0.0.1"], ["--prometheus-port", 29000]]
    expected = ([[flag, "v%d" % i] for i, (_key, flag) in enumerate(C.ROUTER_FLAGS)] + [[flag] for _key, flag in C.ROUTER_SWITCHES]
                + [["--max-concurrent-requests", "64"], ["--enable-igw"]])
    assert lines[5:] == expected


def test_the_flag_table():
    assert [flag for _key, flag in C.ROUTER_FLAGS] == [
        "--policy", "--prefill-policy", "--decode-policy", "--request-timeout-secs", "--worker-startup-timeout-secs",
        "--worker-startup-check-interval", "--health-check-interval-secs", "--health-failure-threshold",
        "--health-success-threshold", "--health-check-timeout-secs", "--retry-max-retries", "--retry-initial-backoff-ms",
        "--retry-max-backoff-ms", "--cb-failure-threshold", "--cb-success-threshold", "--cb-timeout-duration-secs",
        "--shutdown-grace-period-secs", "--log-level"]
    assert [flag for _key, flag in C.ROUTER_SWITCHES] == ["--disable-circuit-breaker", "--disable-retries"]
    for key, flag in C.ROUTER_FLAGS + C.ROUTER_SWITCHES:
        assert flag == "--" + key.replace("_", "-")


def test_keys_never_on_the_router_line_placeholders_for_the_flag_check():
    settings = {"api_key": "s3cret", "control_plane_api_key": "adm1n"}
    lines = C.router_args(ROUTER, settings)
    assert "s3cret" not in C.argv(lines) and "adm1n" not in C.argv(lines)
    assert "--api-key" not in flags(lines) and "--control-plane-api-keys" not in flags(lines)
    assert C.credential_lines(settings) == [["--api-key", C.KEY_PLACEHOLDER],
                                            ["--control-plane-api-keys", "pdserve:pdserve-operations:admin:" + C.KEY_PLACEHOLDER]]
    assert C.credential_lines({"api_key": "s3cret"}) == [["--api-key", C.KEY_PLACEHOLDER]]
    assert C.credential_lines({}) == []
    assert [c["name"] for c in C.router_credentials(settings)] == ["router-api-key", "router-control-plane-api-key"]


def test_tls_certificate_and_key_are_credentials_whose_paths_the_flag_check_sees():
    settings = {"api_key": "k", "tls_cert": "-----BEGIN CERTIFICATE-----", "tls_key": "-----BEGIN PRIVATE KEY-----s3cret"}
    assert [(c["name"], c["option"], c["path"]) for c in C.router_credentials(settings)] == [
        ("router-api-key", "--api-key-credential", False),
        ("router-tls-cert", "--tls-cert-credential", True),
        ("router-tls-key", "--tls-key-credential", True)]
    lines = C.credential_lines(settings)
    assert lines == [["--api-key", C.KEY_PLACEHOLDER],
                     ["--tls-cert-path", "/run/credentials/sglang-router.service/router-tls-cert"],
                     ["--tls-key-path", "/run/credentials/sglang-router.service/router-tls-key"]]
    assert "s3cret" not in C.argv(lines)
    assert C.credential_lines({"tls_cert": "", "tls_key": None}) == []


def test_router_extra_args_grouped():
    lines = C.router_args(ROUTER, {"extra_args": ["--cors-allowed-origins", "https://a", "https://b", "--dp-aware"]})
    assert lines[-2:] == [["--cors-allowed-origins", "https://a", "https://b"], ["--dp-aware"]]


def test_every_router_flag_is_accepted_by_the_installed_router():
    """The whole line, every flag and switch set, through sglang-router's own parser (as sglang_flag_check runs it)."""
    try:
        from sglang_router import router_args
    except ImportError as exc:
        pytest.fail("sglang-router is not installed in this Python (%s): scripts/setup.sh installs it into the dev venv "
                    "from requirements.txt; this test checks every router flag against its parser (%s)" % (sys.executable, exc))
    settings = router_defaults()
    settings.update(prefill_policy="random", decode_policy="round_robin", health_failure_threshold=3, health_success_threshold=2,
                    health_check_timeout_secs=5, retry_max_retries=4, cb_failure_threshold=5, cb_success_threshold=2,
                    cb_timeout_duration_secs=30, disable_circuit_breaker=True, disable_retries=True,
                    retry_initial_backoff_ms=200, retry_max_backoff_ms=3000, shutdown_grace_period_secs=20,
                    extra_args=["--max-concurrent-requests", "64"])
    settings.update(api_key="k", control_plane_api_key="c", tls_cert="PEM", tls_key="PEM")
    argv = C.argv(C.router_args(ROUTER, settings) + C.worker_lines(WORKERS) + C.credential_lines(settings))
    parser = argparse.ArgumentParser()
    router_args.RouterArgs.add_cli_args(parser, use_router_prefix=False)
    args = router_args.RouterArgs.from_cli_args(parser.parse_args(argv), use_router_prefix=False)
    args._validate_router_args()
    assert args.pd_disaggregation is True
    assert args.prefill_urls == [("http://127.0.0.1:30000", 8998)]
    assert args.decode_urls == ["http://127.0.0.1:30002"]
    assert (args.host, args.port, args.prometheus_host, args.prometheus_port) == ("0.0.0.0", 30001, "127.0.0.1", 29000)
    assert (args.policy, args.prefill_policy, args.decode_policy) == ("cache_aware", "random", "round_robin")
    assert (args.request_timeout_secs, args.worker_startup_timeout_secs, args.worker_startup_check_interval) == (1800, 1800, 2)
    assert (args.health_check_interval_secs, args.health_failure_threshold, args.health_success_threshold,
            args.health_check_timeout_secs) == (2, 3, 2, 5)
    assert (args.retry_max_retries, args.cb_failure_threshold, args.cb_success_threshold, args.cb_timeout_duration_secs) == (4, 5, 2, 30)
    assert (args.retry_initial_backoff_ms, args.retry_max_backoff_ms, args.shutdown_grace_period_secs) == (200, 3000, 20)
    assert args.disable_circuit_breaker is True and args.disable_retries is True
    assert args.log_level == "info" and args.max_concurrent_requests == 64
    assert args.api_key == C.KEY_PLACEHOLDER
    # The launcher's control-plane entry as the router parses it: (id, name, key, role).
    assert args.control_plane_api_keys == [("pdserve", "pdserve-operations", C.KEY_PLACEHOLDER, "admin")]
    # The client port's TLS files, as the launcher passes them (sglang-router keeps them as server_cert/key_path).
    assert (args.server_cert_path, args.server_key_path) == ("/run/credentials/sglang-router.service/router-tls-cert",
                                                             "/run/credentials/sglang-router.service/router-tls-key")


def test_the_router_line_has_no_worker_and_the_worker_set_holds_them_in_order():
    lines = C.router_args(ROUTER, {})
    assert not [line for line in lines if line[0] in ("--prefill", "--decode")]
    workers = {"prefill": [{"url": "http://p:1", "bootstrap_port": 8998, "port": 1}], "decode": [{"url": "http://d:2"}]}
    assert C.worker_set(workers) == {"prefill": [{"url": "http://p:1", "bootstrap_port": 8998}],
                                     "decode": [{"url": "http://d:2"}]}
    assert C.worker_lines(workers) == [["--prefill", "http://p:1", 8998], ["--decode", "http://d:2"]]
