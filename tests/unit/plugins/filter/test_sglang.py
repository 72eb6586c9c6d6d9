# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Unit tests of the pdserve.sglang filters (plugins/filter/sglang.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.pdserve.sglang.plugins.filter import sglang as F

MODEL = {
    "model_path": "/models/DeepSeek-V4-Flash",
    "served_model_name": "deepseek-v4-flash",
    "chat_template": "/opt/sglang/chat_templates/tool_chat_template_deepseekv32.jinja",
    "reasoning_parser": "deepseek-v4",
    "tool_call_parser": "deepseekv4",
    "transfer_backend": "nixl",
    "context_length": 8192,
    "extra_args": [],
}
PREFILL = [{"name": "prefill", "gpus": [0, 1, 2, 3], "numa_node": 0, "port": 30000, "bootstrap_port": 8998,
            "dist_init_port": 30335, "mem_fraction_static": 0.80}]
DECODE = [{"name": "decode", "gpus": [4, 5, 6, 7], "numa_node": 1, "port": 30002, "dist_init_port": 30435,
           "mem_fraction_static": 0.85}]
# What pdserve.sglang.gpu_facts reports on the reference host (fixtures/gpu/blackwell8x): 0-3 on node 0.
GPUS = [{"index": i, "numa_node": 0 if i < 4 else 1} for i in range(8)]


def _instances(prefill=None, decode=None):
    return (F.normalize_instances(copy.deepcopy(PREFILL if prefill is None else prefill), "prefill")
            + F.normalize_instances(copy.deepcopy(DECODE if decode is None else decode), "decode"))


def _workers(prefill=None, decode=None, host="blackwell"):
    hostvars = {host: {"sglang_prefill_instances": PREFILL if prefill is None else prefill,
                       "sglang_decode_instances": DECODE if decode is None else decode}}
    groups = {"sglang_prefill": [host], "sglang_decode": [host]}
    return F.pd_router_workers(hostvars, groups)


def _data(**overrides):
    data = {
        "host": "blackwell",
        "instances": _instances(),
        "model": dict(MODEL),
        "router": {"port": 30001, "prometheus_port": 29000, "workers": _workers()},
        "listeners": [],
        "own_uids": [],
        "numa_nodes": [0, 1],
        "gpus": GPUS,
        "path_results": [],
        "numa_binding": "numactl",
        "numactl_present": True,
    }
    data.update(overrides)
    return data


def _problems(**overrides):
    return F.preflight_problems(_data(**overrides))


def _one(problems, *fragments):
    """Exactly one problem, containing every fragment."""
    assert len(problems) == 1, problems
    for fragment in fragments:
        assert fragment in problems[0], (fragment, problems[0])
    assert problems[0].startswith("host blackwell: ")


# --- quoting --------------------------------------------------------------------------------------

def test_systemd_quote_escapes_what_systemd_expands():
    assert F.systemd_quote("plain") == '"plain"'
    assert F.systemd_quote(8998) == '"8998"'
    assert F.systemd_quote('a "b" \\c') == '"a \\"b\\" \\\\c"'
    assert F.systemd_quote("100%") == '"100%%"'
    assert F.systemd_quote("$HOME") == '"$$HOME"'
    assert F.systemd_quote(True) == '"true"'


def test_env_quote_keeps_dollar_and_percent():
    assert F.env_quote("a$b%c") == '"a$b%c"'
    assert F.env_quote('x"y') == '"x\\"y"'


# --- instances and command lines -------------------------------------------------------------------

def test_normalize_fills_defaults():
    prefill, decode = _instances()
    assert prefill["tp_size"] == 4 and decode["tp_size"] == 4
    assert prefill["unit"] == "sglang-prefill.service"
    assert prefill["env_file"] == "/etc/sglang/prefill.env"
    assert prefill["host"] == "127.0.0.1"
    assert decode["bootstrap_port"] is None
    gpu_less = F.normalize_instances([{"name": "p", "port": 1}], "prefill", {"host": "10.0.0.5"}, "/etc/x/")
    assert gpu_less[0]["tp_size"] == 1
    assert gpu_less[0]["bootstrap_port"] == 8998  # SGLang's default, visible to the clash check
    assert gpu_less[0]["host"] == "10.0.0.5"
    assert gpu_less[0]["env_file"] == "/etc/x/p.env"


def test_normalize_rejects_bad_shapes():
    with pytest.raises(AnsibleFilterError, match="mode must be one of"):
        F.normalize_instances([], "both")
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        F.normalize_instances(["prefill"], "prefill")


def test_server_args_reproduce_the_seed_prefill_command():
    prefill = _instances()[0]
    lines = F.server_args(prefill, MODEL)
    assert lines == [
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
        ["--chat-template", MODEL["chat_template"]],
        ["--reasoning-parser", "deepseek-v4"],
        ["--tool-call-parser", "deepseekv4"],
        ["--enable-metrics"],
    ]


def test_server_args_optional_parts():
    decode = _instances()[1]
    model = dict(MODEL, chat_template="", reasoning_parser="", extra_args=["--cuda-graph-max-bs", "64", "--foo"])
    decode["extra_args"] = ["--disable-radix-cache"]
    decode["context_length"] = 4096
    lines = F.server_args(decode, model, numa_binding="sglang", enable_metrics=False)
    flags = [line[0] for line in lines]
    assert "--chat-template" not in flags and "--reasoning-parser" not in flags
    assert "--disaggregation-bootstrap-port" not in flags and "--enable-metrics" not in flags
    assert ["--context-length", 4096] in lines
    assert ["--numa-node", 1, 1, 1, 1] in lines
    assert lines[-3:] == [["--cuda-graph-max-bs", "64"], ["--foo"], ["--disable-radix-cache"]]


def test_numactl_binding_does_not_also_pass_numa_node():
    lines = F.server_args(_instances()[1], MODEL, numa_binding="numactl")
    assert "--numa-node" not in [line[0] for line in lines]


# --- router wiring -------------------------------------------------------------------------------

def test_router_workers_from_every_host_of_the_groups():
    hostvars = {
        "p1": {"sglang_prefill_instances": [{"name": "prefill", "port": 30000, "host": "0.0.0.0"}],
               "ansible_host": "10.0.0.1"},
        "d1": {"sglang_decode_instances": [{"name": "decode", "port": 30002}], "sglang_server_host": "10.0.0.2"},
        "d2": {"sglang_decode_instances": [{"name": "decode", "port": 30002, "host": "0.0.0.0",
                                            "advertise_host": "d2.example"}]},
    }
    groups = {"sglang_prefill": ["p1"], "sglang_decode": ["d1", "d2"]}
    workers = F.pd_router_workers(hostvars, groups)
    assert [w["url"] for w in workers["prefill"]] == ["http://10.0.0.1:30000"]
    assert workers["prefill"][0]["bootstrap_port"] == 8998
    assert [w["url"] for w in workers["decode"]] == ["http://10.0.0.2:30002", "http://d2.example:30002"]
    assert F.router_args(workers) == [
        ["--prefill", "http://10.0.0.1:30000", 8998],
        ["--decode", "http://10.0.0.2:30002"],
        ["--decode", "http://d2.example:30002"],
    ]


def test_router_workers_ipv6_and_missing_groups():
    hostvars = {"h": {"sglang_decode_instances": [{"name": "d", "port": 1, "host": "fd00::2"}]}}
    workers = F.pd_router_workers(hostvars, {"sglang_decode": ["h"]})
    assert workers == {"prefill": [], "decode": [dict(workers["decode"][0], url="http://[fd00::2]:1")]}


# --- listeners -----------------------------------------------------------------------------------

def test_listening_sockets_parses_the_report():
    report = ("127.0.0.1:30000\t999\t 1380:sglang-prefill.service\n"
              "[::]:22\t0\t 512:ssh.service 513:ssh.service\n"
              "0.0.0.0:31999\t0\t\n"
              "[fe80::1%eth0]:80\t0\t 77:none\n")
    socks = F.listening_sockets(report)
    assert socks[0] == {"address": "127.0.0.1", "port": 30000, "uid": 999,
                        "owners": [{"pid": "1380", "unit": "sglang-prefill.service"}]}
    assert socks[1]["address"] == "::" and socks[1]["port"] == 22 and len(socks[1]["owners"]) == 2
    assert socks[2] == {"address": "0.0.0.0", "port": 31999, "uid": 0, "owners": []}
    assert socks[3]["address"] == "fe80::1" and socks[3]["owners"] == [{"pid": "77", "unit": "none"}]


# --- preflight: a correct layout passes -------------------------------------------------------------

def test_reference_layout_has_no_problem():
    assert _problems() == []


def test_gpu_less_local_layout_has_no_problem():
    prefill = [{"name": "prefill", "numa_node": 0, "port": 30000, "bootstrap_port": 8998, "dist_init_port": 30335}]
    decode = [{"name": "decode", "numa_node": 0, "port": 30002, "dist_init_port": 30435}]
    assert _problems(instances=_instances(prefill, decode), gpus=None, numa_nodes=None,
                     router={"port": 30001, "prometheus_port": 29000, "workers": _workers(prefill, decode)}) == []


# --- preflight: each rejection ----------------------------------------------------------------------

def test_duplicate_instance_names():
    decode = [dict(DECODE[0], name="prefill")]
    _one(_problems(instances=_instances(decode=decode), router=None),
         "instance name 'prefill' is used by sglang_prefill_instances[prefill] and sglang_decode_instances[prefill]")


def test_instance_named_like_the_router_unit():
    decode = [dict(DECODE[0], name="router")]
    _one(_problems(instances=_instances(decode=decode), router={"port": 30001, "prometheus_port": 29000}),
         "named 'router'", "sglang-router.service")


def test_invalid_instance_name():
    decode = [dict(DECODE[0], name="de code")]
    _one(_problems(instances=_instances(decode=decode), router=None), "has name 'de code'")


def test_gpu_used_by_two_instances():
    decode = [dict(DECODE[0], gpus=[3, 5, 6, 7])]
    problems = _problems(instances=_instances(decode=decode), router=None)
    assert any("GPU 3 is given to both sglang_prefill_instances[prefill] and sglang_decode_instances[decode]" in p
               for p in problems), problems
    # GPU 3 is on node 0 while decode is bound to node 1: reported too, and nothing else.
    assert len(problems) == 2, problems


def test_tp_size_must_match_gpus():
    prefill = [dict(PREFILL[0], tp_size=8)]
    _one(_problems(instances=_instances(prefill=prefill), router=None),
         "sglang_prefill_instances[prefill].tp_size is 8 but gpus lists 4 GPU(s) [0, 1, 2, 3]")


@pytest.mark.parametrize("key, value, first, second", [
    ("port", 30000, "sglang_prefill_instances[prefill].port", "sglang_decode_instances[decode].port"),
    ("dist_init_port", 30335, "sglang_prefill_instances[prefill].dist_init_port",
     "sglang_decode_instances[decode].dist_init_port"),
    ("bootstrap_port", 8998, "sglang_prefill_instances[prefill].bootstrap_port",
     "sglang_decode_instances[decode].bootstrap_port"),
    ("port", 30001, "sglang_decode_instances[decode].port", "sglang_router_port"),
    ("port", 29000, "sglang_decode_instances[decode].port", "sglang_router_prometheus_port"),
])
def test_port_clashes(key, value, first, second):
    decode = [dict(DECODE[0], **{key: value})]
    _one(_problems(instances=_instances(decode=decode), router={"port": 30001, "prometheus_port": 29000}),
         "port %s is used by both %s and %s" % (value, first, second))


def test_router_port_clashes_with_its_metrics():
    _one(_problems(router={"port": 30001, "prometheus_port": 30001, "workers": _workers()}),
         "port 30001 is used by both sglang_router_port and sglang_router_prometheus_port")


def test_port_out_of_range():
    decode = [dict(DECODE[0], port=70000)]
    _one(_problems(instances=_instances(decode=decode), router=None),
         "sglang_decode_instances[decode].port must be a port between 1 and 65535, got 70000")


def test_port_held_by_a_foreign_process():
    listeners = F.listening_sockets("127.0.0.1:30002\t0\t 4242:none\n")
    _one(_problems(listeners=listeners),
         "sglang_decode_instances[decode].port wants port 30002 but 127.0.0.1:30002 is already held by "
         "pid 4242 (not a systemd service)")


def test_port_held_by_another_unit_is_named():
    listeners = F.listening_sockets("0.0.0.0:30001\t0\t 99:nginx.service\n")
    _one(_problems(listeners=listeners), "sglang_router_port wants port 30001", "pid 99 (nginx.service)")


def test_port_held_by_our_units_is_fine():
    listeners = F.listening_sockets("127.0.0.1:30000\t999\t 10:sglang-prefill.service\n"
                                    "0.0.0.0:30001\t999\t 11:sglang-router.service\n")
    assert _problems(listeners=listeners) == []


def test_port_owner_unknown_decided_by_socket_uid():
    # Containers without CAP_SYS_PTRACE: ss shows no process, only the socket's uid.
    listeners = F.listening_sockets("127.0.0.1:30000\t999\t\n127.0.0.1:30002\t0\t\n")
    _one(_problems(listeners=listeners, own_uids=[999]),
         "sglang_decode_instances[decode].port wants port 30002", "a process of uid 0 that is not the service user")


def test_listener_on_an_unrelated_port_is_ignored():
    assert _problems(listeners=F.listening_sockets("0.0.0.0:22\t0\t 1:ssh.service\n")) == []


def test_unknown_reasoning_parser_suggests_the_hyphenated_name():
    _one(_problems(model=dict(MODEL, reasoning_parser="deepseekv4")),
         "sglang_model_reasoning_parser 'deepseekv4' is not a reasoning parser of sglang 0.5.23 "
         "(did you mean 'deepseek-v4'?)")


def test_unknown_tool_call_parser():
    _one(_problems(model=dict(MODEL, tool_call_parser="deepseek-v4")),
         "sglang_model_tool_call_parser 'deepseek-v4' is not a tool-call parser", "did you mean 'deepseekv4'?")


@pytest.mark.parametrize("reasoning, tool", [("deepseek-v4", "deepseekv3"), ("qwen3", "deepseekv4"),
                                             ("deepseek-r1", "deepseekv4")])
def test_parser_pair_from_different_families(reasoning, tool):
    _one(_problems(model=dict(MODEL, reasoning_parser=reasoning, tool_call_parser=tool)),
         "sglang_model_reasoning_parser %r and sglang_model_tool_call_parser %r belong to different model families"
         % (reasoning, tool))


@pytest.mark.parametrize("reasoning, tool", [("deepseek-v4", "deepseekv32"), ("qwen3", "qwen25"), ("", "deepseekv4"),
                                             ("auto", "hermes"), ("deepseek-v4", "")])
def test_parser_pairs_that_belong_together(reasoning, tool):
    assert _problems(model=dict(MODEL, reasoning_parser=reasoning, tool_call_parser=tool)) == []


def test_every_paired_parser_is_a_known_choice():
    for reasoning, tools in F.PARSER_PAIRS.items():
        assert reasoning in F.REASONING_PARSERS, reasoning
        assert set(tools) <= set(F.TOOL_CALL_PARSERS), (reasoning, tools)


def test_unknown_transfer_backend():
    _one(_problems(model=dict(MODEL, transfer_backend="nccl")), "sglang_model_transfer_backend 'nccl' is not one of")


@pytest.mark.parametrize("value", [0, 1, 1.2, -0.1, "0.8"])
def test_mem_fraction_outside_zero_one(value):
    decode = [dict(DECODE[0], mem_fraction_static=value)]
    _one(_problems(instances=_instances(decode=decode), router=None),
         "sglang_decode_instances[decode].mem_fraction_static must be a number strictly between 0 and 1, got %r"
         % (value,))


@pytest.mark.parametrize("value", [0, -8192])
def test_non_positive_context_length(value):
    _one(_problems(model=dict(MODEL, context_length=value)),
         "sglang_model_context_length must be a positive integer (tokens), got %r" % value)
    decode = [dict(DECODE[0], context_length=value)]
    _one(_problems(instances=_instances(decode=decode), router=None),
         "sglang_decode_instances[decode].context_length must be a positive integer, got %r" % value)


def test_empty_model_path():
    _one(_problems(model=dict(MODEL, model_path="")), "sglang_model_path is empty")


def test_missing_model_path_and_chat_template():
    results = [
        {"item": {"var": "sglang_server_model_path", "path": "/models/x"}, "stat": {"exists": False}},
        {"item": {"var": "sglang_server_chat_template", "path": "/t.jinja"}, "stat": {"exists": True}},
        {"item": {"var": "sglang_server_chat_template", "path": "/skipped"}, "skipped": True},
    ]
    _one(_problems(path_results=results), "sglang_server_model_path points to /models/x, which does not exist")


def test_router_without_prefill_or_decode():
    problems = _problems(router={"port": 30001, "prometheus_port": 29000, "workers": {"prefill": [], "decode": []},
                                 "decode_group": "gpu_decode"})
    assert len(problems) == 2, problems
    assert "the router has no prefill worker: no host of group sglang_prefill" in problems[0]
    assert "the router has no decode worker: no host of group gpu_decode" in problems[1]


def test_router_cannot_reach_loopback_server_on_another_host():
    hostvars = {"gpu1": {"sglang_prefill_instances": PREFILL, "sglang_decode_instances": DECODE}}
    workers = F.pd_router_workers(hostvars, {"sglang_prefill": ["gpu1"], "sglang_decode": ["gpu1"]})
    problems = _problems(host="edge", instances=[], router={"port": 30001, "prometheus_port": 29000,
                                                            "workers": workers})
    assert len(problems) == 2, problems
    assert "the router cannot reach sglang_prefill_instances[prefill] on gpu1: it binds 127.0.0.1" in problems[0]


def test_two_workers_with_the_same_url():
    hostvars = {"a": {"sglang_decode_instances": [{"name": "d", "port": 1, "host": "10.0.0.9"}]},
                "b": {"sglang_decode_instances": [{"name": "d", "port": 1, "host": "10.0.0.9"}]}}
    workers = F.pd_router_workers(hostvars, {"sglang_decode": ["a", "b"]})
    workers["prefill"] = _workers()["prefill"]
    problems = _problems(router={"port": 30001, "prometheus_port": 29000, "workers": workers})
    assert any("both resolve to http://10.0.0.9:1" in p for p in problems), problems


def test_numa_node_the_host_does_not_have():
    decode = [dict(DECODE[0], numa_node=3)]
    problems = _problems(instances=_instances(decode=decode), router=None, gpus=None)
    _one(problems, "sglang_decode_instances[decode].numa_node is 3 but the host has NUMA node(s) [0, 1]")


def test_numa_node_not_matching_gpu_affinity():
    prefill = [dict(PREFILL[0], numa_node=1)]
    problems = _problems(instances=_instances(prefill=prefill), router=None)
    assert len(problems) == 4, problems  # one per GPU 0-3
    assert "sglang_prefill_instances[prefill].numa_node is 1 but GPU 0 is attached to NUMA node 0 (gpu_facts)" \
        in problems[0]


def test_gpu_affinity_unknown_is_not_a_problem():
    gpus = [{"index": i, "numa_node": None} for i in range(8)]
    assert _problems(gpus=gpus) == []


def test_gpu_index_the_host_does_not_have():
    decode = [dict(DECODE[0], gpus=[4, 5, 6, 8])]
    _one(_problems(instances=_instances(decode=decode), router=None),
         "sglang_decode_instances[decode].gpus uses GPU 8 but the host has GPU index(es)")


def test_numa_binding_none_skips_numa_checks():
    decode = [dict(DECODE[0], numa_node=7)]
    assert _problems(instances=_instances(decode=decode), router=None, numa_binding="none") == []


def test_numactl_missing():
    _one(_problems(numactl_present=False), "sglang_server_numa_binding is 'numactl' but numactl is not installed")


def test_nvidia_uvm_missing():
    _one(_problems(nvidia_uvm_missing=True), "/dev/nvidia-uvm is missing")


def test_all_problems_are_reported_at_once():
    decode = [dict(DECODE[0], name="prefill", port=30000, mem_fraction_static=2)]
    problems = _problems(instances=_instances(decode=decode), router=None,
                         model=dict(MODEL, reasoning_parser="deepseek_v4"))
    assert len(problems) == 4, problems


def test_model_checks_skipped_without_model():
    assert _problems(model=None, instances=_instances()) == []


# --- validate play helpers --------------------------------------------------------------------------

def test_wait_endpoint_reaches_wildcard_binds_over_loopback():
    inst = F.normalize_instances([{"name": "decode", "port": 30002, "host": "0.0.0.0"}], "decode")[0]
    assert F.wait_endpoint(inst) == {"url": "http://127.0.0.1:30002", "kind": "server",
                                     "unit": "sglang-decode.service", "name": "sglang-decode.service"}


def test_ready_line():
    assert F.ready_line({"name": "sglang-prefill.service", "url": "http://127.0.0.1:30000", "ready": True,
                         "seconds": 20.04, "kind": "server"}) == \
        "sglang-prefill.service http://127.0.0.1:30000 ready in 20.0 s"
    line = F.ready_line({"name": "r", "url": "u", "ready": True, "seconds": 1, "kind": "router",
                         "details": {"workers": {"prefill": {"healthy": 1, "total": 1},
                                                 "decode": {"healthy": 1, "total": 1},
                                                 "regular": {"healthy": 0, "total": 0}}}})
    assert line == "r u ready in 1.0 s (workers: decode 1/1 healthy, prefill 1/1 healthy)"
    assert F.ready_line({"name": "x", "url": "u", "ready": False, "failure": "unit failed"}) == \
        "x u NOT ready (unit failed)"


def test_flag_check_lines_are_the_unit_arguments_as_strings():
    prefill = _instances()[0]
    lines = F.flag_check_lines([prefill], MODEL)
    assert lines == [{"name": "prefill",
                      "argv": [str(word) for line in F.server_args(prefill, MODEL) for word in line]}]
    assert lines[0]["argv"][:4] == ["--model-path", "/models/DeepSeek-V4-Flash", "--served-model-name",
                                    "deepseek-v4-flash"]
    assert "--mem-fraction-static" in lines[0]["argv"] and "0.8" in lines[0]["argv"]


def test_wrong_shapes_are_named_not_crashed_on():
    decode = [dict(DECODE[0], gpus="4,5,6,7", extra_args="--foo", env=["A=1"])]
    problems = _problems(instances=_instances(decode=decode), router=None)
    assert len(problems) == 3, problems
    assert "sglang_decode_instances[decode].gpus must be a list of GPU indexes" in problems[0]
    assert "sglang_decode_instances[decode].extra_args must be a list of strings" in problems[1]
    assert "sglang_decode_instances[decode].env must be a dict" in problems[2]


def test_port_held_by_an_instance_that_left_the_inventory_is_ours():
    # A renamed instance: the old unit still holds the port until the role stops it.
    listeners = F.listening_sockets("127.0.0.1:30002\t999\t 12:sglang-decode-old.service\n")
    assert _problems(listeners=listeners) == []
