# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Instances (module_utils/serving/instances.py): defaults, every shape problem, and the problems between the
instances of one host."""

import copy

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import instances as SI
from serving_support import DECODE, PREFILL  # noqa: E402  pylint: disable=wrong-import-position

# The router ports host_problems checks against the instances.
ROUTER = {"port": 30001, "prometheus_port": 29000}


def normalize(raw, mode="decode", host="h", **kwargs):
    return SI.normalize(copy.deepcopy(raw), mode, host, **kwargs)


def one_decode_problem(**fields):
    """The problems of one decode instance (DECODE with ``fields`` replaced; a None value drops the key)."""
    raw = dict(DECODE, **fields)
    raw = dict((k, v) for k, v in raw.items() if v is not None or k not in fields)
    _instances, problems = normalize([raw])
    return problems


def layout(prefill=None, decode=None):
    prefill, p1 = normalize([PREFILL] if prefill is None else prefill, "prefill")
    decode, p2 = normalize([DECODE] if decode is None else decode, "decode")
    assert p1 == [] and p2 == []
    return prefill + decode


# --- small helpers ---------------------------------------------------------------------------------

def test_names_and_urls():
    assert SI.unit_name("decode-0") == "sglang-decode-0.service"
    assert SI.instances_variable("prefill") == "sglang_prefill_instances"
    assert SI.instance_variable({"mode": "decode", "name": "d1"}) == "sglang_decode_instances[d1]"
    assert SI.url_host("10.0.0.1") == "10.0.0.1"
    assert SI.url_host("gpu-1.example") == "gpu-1.example"
    assert SI.url_host("fd00::2") == "[fd00::2]"
    assert SI.url_host("[fd00::2]") == "[fd00::2]"
    assert SI.is_int(3) and SI.is_int(0) and not SI.is_int(True) and not SI.is_int("3") and not SI.is_int(3.0)


# --- defaults ----------------------------------------------------------------------------------------

def test_prefill_defaults():
    instances, problems = normalize([{"name": "p", "port": 30000}], "prefill", "gpu-1")
    assert problems == []
    assert instances == [{
        "name": "p",
        "mode": "prefill",
        "unit": "sglang-p.service",
        "host": "127.0.0.1",
        "port": 30000,
        "bootstrap_port": 8998,
        "dist_init_host": "127.0.0.1",
        "dist_init_port": None,
        "gpus": [],
        "tp_size": 1,
        "numa_node": None,
        "mem_fraction_static": None,
        "context_length": None,
        "advertise_host": None,
        "host_variable": "sglang_server_host",
        "nodes": None, "nnodes": 1, "node_rank": 0,
        "pp_size": None, "ep_size": None, "attn_dp_size": None, "dp_size": None, "dist_timeout": None,
        "extra_args": [],
        "env": {},
        "metrics": True, "in_service": True,
        "inventory_host": "gpu-1",
    }]


def test_decode_has_no_default_bootstrap_port_and_tp_size_follows_gpus():
    (decode,), problems = normalize([DECODE])
    assert problems == []
    assert decode["bootstrap_port"] is None
    assert decode["tp_size"] == 4
    assert decode["gpus"] == [4, 5, 6, 7]
    assert decode["numa_node"] == 1 and decode["mem_fraction_static"] == 0.85 and decode["dist_init_port"] == 30435


def test_every_given_value_is_kept():
    raw = dict(PREFILL, host="10.0.0.11", advertise_host="gpu-1.example", dist_init_host="10.0.0.11", tp_size=4,
               context_length=4096, extra_args=["--disable-radix-cache"], env={"UCX_NET_DEVICES": "mlx5_0:1"},
               bootstrap_port=9000)
    (inst,), problems = normalize([raw], "prefill")
    assert problems == []
    for key in ("host", "advertise_host", "dist_init_host", "tp_size", "context_length", "extra_args", "env",
                "bootstrap_port", "port", "dist_init_port", "numa_node", "mem_fraction_static", "gpus"):
        assert inst[key] == raw[key], key


def test_server_host_and_metrics_come_from_the_host():
    (inst,), dummy_problems = normalize([{"name": "d", "port": 1}], server_host="10.0.0.21", metrics=False)
    assert inst["host"] == "10.0.0.21" and inst["metrics"] is False
    (inst,), dummy_problems = normalize([{"name": "d", "port": 1, "host": "0.0.0.0"}], server_host="10.0.0.21")
    assert inst["host"] == "0.0.0.0"
    for server_host in (None, ""):
        (inst,), dummy_problems = normalize([{"name": "d", "port": 1}], server_host=server_host)
        assert inst["host"] == "127.0.0.1"


def test_the_inventory_lists_are_not_modified():
    raw = [dict(DECODE, extra_args=["--a"], env={"A": "1"})]
    kept = copy.deepcopy(raw)
    (inst,), dummy_problems = SI.normalize(raw, "decode", "h")
    inst["extra_args"].append("--b")
    inst["env"]["B"] = "2"
    inst["gpus"].append(9)
    assert raw == kept


def test_no_list_is_no_instance():
    assert SI.normalize(None, "prefill", "h") == ([], [])
    assert SI.normalize([], "prefill", "h") == ([], [])


# --- shape problems ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, got", [
    ("prefill", "got str 'prefill'"),
    ({"name": "prefill", "port": 30000}, "got mapping"),
    (30000, "got int 30000"),
])
def test_instance_list_that_is_not_a_list(value, got):
    instances, problems = SI.normalize(value, "prefill", "gpu-1")
    assert instances == []
    assert len(problems) == 1, problems
    assert problems[0]["host"] == "gpu-1"
    assert problems[0]["variable"] == "sglang_prefill_instances"
    assert problems[0]["message"].startswith("must be a list of instances, " + got)
    assert "- {name: prefill, port: 30000, gpus: [0]}" in problems[0]["fix"]


@pytest.mark.parametrize("entry, got", [("decode", "got str 'decode'"), (["decode", 30002], "got list"), (None, "got NoneType")])
def test_instance_that_is_not_a_mapping_is_dropped_and_named(entry, got):
    instances, problems = normalize([DECODE, entry])
    assert [i["name"] for i in instances] == ["decode"]
    assert len(problems) == 1, problems
    assert problems[0]["variable"] == "sglang_decode_instances[1]"
    assert problems[0]["message"].startswith("must be a mapping (name, port, gpus, ...), " + got)


@pytest.mark.parametrize("key, value, message", [
    ("port", "30002", "must be an integer, got str '30002'"),
    ("port", True, "must be an integer, got bool True"),
    ("port", 30002.0, "must be an integer, got float 30002.0"),
    ("bootstrap_port", "8998", "must be an integer, got str '8998'"),
    ("dist_init_port", [30435], "must be an integer, got list [30435]"),
    ("tp_size", "4", "must be an integer, got str '4'"),
    ("numa_node", "1", "must be an integer, got str '1'"),
    ("context_length", "8192", "must be an integer, got str '8192'"),
    ("host", 10, "must be a host name or address, got int 10"),
    ("host", "", "must be a host name or address, got str ''"),
    ("host", "  ", "must be a host name or address, got str '  '"),
    ("advertise_host", ["a"], "must be a host name or address, got list ['a']"),
    ("dist_init_host", 1.5, "must be a host name or address, got float 1.5"),
    ("gpus", "4,5,6,7", "must be a list of GPU indexes (integers >= 0), got '4,5,6,7'"),
    ("gpus", 4, "must be a list of GPU indexes (integers >= 0), got 4"),
    ("gpus", [4, "5", 6, 7], "must be a list of GPU indexes (integers >= 0), got [4, '5', 6, 7]"),
    ("gpus", [4, -5, 6, 7], "must be a list of GPU indexes (integers >= 0), got [4, -5, 6, 7]"),
    ("gpus", [True, 5, 6, 7], "must be a list of GPU indexes (integers >= 0), got [True, 5, 6, 7]"),
    ("mem_fraction_static", 0, "must be a number strictly between 0 and 1, got 0"),
    ("mem_fraction_static", 1, "must be a number strictly between 0 and 1, got 1"),
    ("mem_fraction_static", 1.2, "must be a number strictly between 0 and 1, got 1.2"),
    ("mem_fraction_static", -0.1, "must be a number strictly between 0 and 1, got -0.1"),
    ("mem_fraction_static", "0.8", "must be a number strictly between 0 and 1, got '0.8'"),
    ("mem_fraction_static", True, "must be a number strictly between 0 and 1, got True"),
    ("extra_args", "--disable-radix-cache", "must be a list of strings, got '--disable-radix-cache'"),
    ("extra_args", ["--foo", None], "must be a list of strings, got ['--foo', None]"),
    ("extra_args", [["--foo"]], "must be a list of strings, got [['--foo']]"),
    ("extra_args", [{"--foo": 1}], "must be a list of strings, got [{'--foo': 1}]"),
    ("env", ["A=1"], "must be a mapping of variable names to values, got ['A=1']"),
    ("env", "A=1", "must be a mapping of variable names to values, got 'A=1'"),
    ("env", {"A": None}, "must be a mapping of variable names to values, got {'A': None}"),
    ("env", {"A": [1]}, "must be a mapping of variable names to values, got {'A': [1]}"),
    ("env", {"A": {"B": 1}}, "must be a mapping of variable names to values, got {'A': {'B': 1}}"),
])
def test_field_of_the_wrong_type(key, value, message):
    problems = one_decode_problem(**{key: value})
    assert len(problems) == 1, problems
    assert problems[0]["host"] == "h"
    assert problems[0]["variable"] == "sglang_decode_instances[decode].%s" % key
    assert problems[0]["message"] == message
    assert problems[0]["fix"]


def test_wrong_types_are_kept_for_the_report_not_crashed_on():
    (inst,), problems = normalize([dict(DECODE, gpus="4,5,6,7", extra_args="--foo", env=["A=1"], port="30002")])
    assert len(problems) == 4, problems
    assert inst["gpus"] == "4,5,6,7" and inst["tp_size"] == 1
    assert inst["extra_args"] == "--foo" and inst["env"] == ["A=1"] and inst["port"] == "30002"


def test_integer_fix_hints_quote_free_ports():
    port, = one_decode_problem(port="30002")
    assert port["fix"] == "write it without quotes, e.g. port: 30000"
    numa, = one_decode_problem(numa_node="1")
    assert numa["fix"] == "write a whole number without quotes"


@pytest.mark.parametrize("key, suggestion", [
    ("gpu", " (did you mean 'gpus'?)"),
    ("numa", " (did you mean 'numa_node'?)"),
    ("bootstrap", " (did you mean 'bootstrap_port'?)"),
    ("mem_fraction", " (did you mean 'mem_fraction_static'?)"),
    ("zzz", ""),
])
def test_unknown_key_with_suggestion(key, suggestion):
    problems = one_decode_problem(**{key: 1})
    assert len(problems) == 1, problems
    assert problems[0]["variable"] == "sglang_decode_instances[decode].%s" % key
    assert problems[0]["message"] == "unknown key %r%s" % (key, suggestion)
    assert "extra_args" in problems[0]["fix"]
    for known in SI.KNOWN_KEYS:
        assert known in problems[0]["fix"]


@pytest.mark.parametrize("key", ["port", "bootstrap_port", "dist_init_port"])
@pytest.mark.parametrize("value", [0, -1, 65536, 70000])
def test_port_out_of_range(key, value):
    problems = one_decode_problem(**{key: value})
    assert len(problems) == 1, problems
    assert problems[0]["variable"] == "sglang_decode_instances[decode].%s" % key
    assert problems[0]["message"] == "must be a port between 1 and 65535, got %r" % value


@pytest.mark.parametrize("value", [1, 65535])
def test_port_range_bounds_are_valid(value):
    assert one_decode_problem(port=value) == []


def test_port_is_required():
    _instances, problems = normalize([{"name": "decode", "gpus": [4]}])
    assert problems == [{"host": "h", "variable": "sglang_decode_instances[decode].port", "message": "is required",
                         "fix": "give the instance its HTTP port, e.g. port: 30000"}]
    _instances, problems = normalize([{"name": "decode", "port": None}])
    assert [p["message"] for p in problems] == ["is required"]


def test_tp_size_must_match_gpus():
    problems = one_decode_problem(tp_size=8)
    assert len(problems) == 1, problems
    assert problems[0]["variable"] == "sglang_decode_instances[decode].tp_size"
    assert problems[0]["message"] == "is 8 but gpus lists 4 GPU(s) [4, 5, 6, 7]"
    assert one_decode_problem(tp_size=4) == []


def test_tp_size_without_gpus_is_free():
    (inst,), problems = normalize([{"name": "d", "port": 1, "tp_size": 2}])
    assert problems == [] and inst["tp_size"] == 2


@pytest.mark.parametrize("key, value, message", [
    ("numa_node", -1, "must be a NUMA node number (>= 0), got -1"),
    ("context_length", 0, "must be a positive number of tokens, got 0"),
    ("context_length", -8192, "must be a positive number of tokens, got -8192"),
])
def test_values_out_of_range(key, value, message):
    problems = one_decode_problem(**{key: value})
    assert [(p["variable"], p["message"]) for p in problems] == [("sglang_decode_instances[decode].%s" % key, message)]


def test_tp_size_below_one():
    problems = one_decode_problem(tp_size=0)
    assert problems[0]["variable"] == "sglang_decode_instances[decode].tp_size"
    assert problems[0]["message"] == "must be at least 1, got 0"


def test_a_gpu_listed_twice_inside_one_instance():
    raw = dict(DECODE, gpus=[4, 5, 5, 7])
    (inst,), problems = normalize([raw])
    assert problems == [{"host": "h", "variable": "sglang_decode_instances[decode].gpus",
                         "message": "lists a GPU twice: [4, 5, 5, 7]", "fix": "list each GPU once"}]
    # Reported once: the GPU is not also "given to both" the instance and itself.
    assert SI.host_problems("h", [inst]) == []


@pytest.mark.parametrize("name", ["de code", "", "-decode", ".decode", "a/b", "dec:ode", "décode", 5, ["d"]])
def test_invalid_instance_name(name):
    instances, problems = normalize([dict(DECODE, name=name)])
    assert len(problems) == 1, problems
    assert problems[0]["variable"] == "sglang_decode_instances[%s].name" % (name,)
    assert problems[0]["message"] == "is %r, not a valid instance name" % (name,)
    assert "sglang-<name>.service" in problems[0]["fix"]
    assert instances[0]["name"] == str(name)


def test_missing_name_is_named_by_position():
    instances, problems = normalize([DECODE, {"port": 30004}])
    assert [p["variable"] for p in problems] == ["sglang_decode_instances[#1].name"]
    assert problems[0]["message"] == "is None, not a valid instance name"
    assert len(instances) == 2


@pytest.mark.parametrize("name", ["decode", "decode-0", "prefill_1.a", "0", "D"])
def test_valid_instance_names(name):
    (inst,), problems = normalize([dict(DECODE, name=name)])
    assert problems == [] and inst["unit"] == "sglang-%s.service" % name


def test_every_mistake_at_once():
    raw = [{"name": "de code", "port": "x", "gpus": [0, 0], "mem_fraction_static": 2, "numa": 1}, "junk"]
    _instances, problems = normalize(raw, "prefill")
    assert [p["variable"] for p in problems] == [
        "sglang_prefill_instances[de code].name",
        "sglang_prefill_instances[de code].numa",
        "sglang_prefill_instances[de code].port",
        "sglang_prefill_instances[de code].gpus",
        "sglang_prefill_instances[de code].mem_fraction_static",
        "sglang_prefill_instances[1]",
    ]


# --- problems between the instances of one host ---------------------------------------------------------

def test_reference_layout_has_no_host_problem():
    assert SI.host_problems("blackwell", layout(), ROUTER) == []


def test_duplicate_names_across_modes():
    problems = SI.host_problems("h", layout(decode=[dict(DECODE, name="prefill")]))
    assert problems == [{
        "host": "h", "variable": "sglang_decode_instances[prefill]",
        "message": "instance name 'prefill' is used by sglang_prefill_instances[prefill] and sglang_decode_instances[prefill]",
        "fix": "names must be unique per host (they name the units)"}]


def test_duplicate_names_within_one_mode():
    second = dict(DECODE, gpus=[], port=30004, dist_init_port=30445)
    problems = SI.host_problems("h", layout(decode=[DECODE, second]))
    assert [p["message"] for p in problems] == [
        "instance name 'decode' is used by sglang_decode_instances[decode] and sglang_decode_instances[decode]"]


def test_a_gpu_in_two_instances():
    problems = SI.host_problems("h", layout(decode=[dict(DECODE, gpus=[3, 5, 6, 7])]))
    assert problems == [{"host": "h", "variable": "sglang_decode_instances[decode].gpus",
                         "message": "GPU 3 is given to both sglang_prefill_instances[prefill] and sglang_decode_instances[decode]",
                         "fix": "give each GPU to one instance"}]


def test_a_gpu_in_three_instances_is_reported_for_each_later_one():
    decode = [dict(DECODE, name="d1", gpus=[0], port=30004, dist_init_port=None),
              dict(DECODE, name="d2", gpus=[0], port=30006, dist_init_port=None)]
    problems = SI.host_problems("h", layout(decode=decode))
    assert [p["message"] for p in problems] == [
        "GPU 0 is given to both sglang_prefill_instances[prefill] and sglang_decode_instances[d1]",
        "GPU 0 is given to both sglang_prefill_instances[prefill] and sglang_decode_instances[d2]",
    ]


@pytest.mark.parametrize("key, value, first, second", [
    ("port", 30000, "sglang_prefill_instances[prefill].port", "sglang_decode_instances[decode].port"),
    ("port", 8998, "sglang_prefill_instances[prefill].bootstrap_port", "sglang_decode_instances[decode].port"),
    ("dist_init_port", 30335, "sglang_prefill_instances[prefill].dist_init_port", "sglang_decode_instances[decode].dist_init_port"),
    ("dist_init_port", 30000, "sglang_prefill_instances[prefill].port", "sglang_decode_instances[decode].dist_init_port"),
    ("bootstrap_port", 8998, "sglang_prefill_instances[prefill].bootstrap_port", "sglang_decode_instances[decode].bootstrap_port"),
    ("port", 30001, "sglang_decode_instances[decode].port", "sglang_router_port"),
    ("port", 29000, "sglang_decode_instances[decode].port", "sglang_router_prometheus_port"),
])
def test_port_clashes(key, value, first, second):
    problems = SI.host_problems("h", layout(decode=[dict(DECODE, **{key: value})]), ROUTER)
    assert [(p["variable"], p["message"]) for p in problems] == [
        (second, "port %s is used by both %s and %s" % (value, first, second))]
    assert problems[0]["fix"] == "give each its own port"


def test_router_port_clashes_with_its_metrics():
    problems = SI.host_problems("h", layout(), {"port": 30001, "prometheus_port": 30001})
    assert [p["message"] for p in problems] == ["port 30001 is used by both sglang_router_port and sglang_router_prometheus_port"]


def test_router_ports_do_not_count_without_a_router():
    assert SI.host_problems("h", layout(decode=[dict(DECODE, port=30001)])) == []


def test_two_prefill_instances_without_bootstrap_port_clash_on_the_default():
    prefill = [{"name": "p0", "port": 30000, "gpus": [0]}, {"name": "p1", "port": 30010, "gpus": [1]}]
    problems = SI.host_problems("h", layout(prefill=prefill, decode=[]))
    assert [p["message"] for p in problems] == [
        "port 8998 is used by both sglang_prefill_instances[p0].bootstrap_port and sglang_prefill_instances[p1].bootstrap_port"]


def test_instance_named_router_clashes_with_the_router_unit():
    instances = layout(decode=[dict(DECODE, name="router")])
    problems = SI.host_problems("h", instances, ROUTER)
    assert problems == [{"host": "h", "variable": "sglang_decode_instances[router].name",
                         "message": "is named 'router', which clashes with the router unit sglang-router.service",
                         "fix": "rename the instance"}]
    # Without a router on the host, the unit name is free.
    assert SI.host_problems("h", instances) == []


def test_host_ports_lists_every_port_with_its_variable():
    assert SI.host_ports(layout(), ROUTER) == [
        (30000, "sglang_prefill_instances[prefill].port"),
        (8998, "sglang_prefill_instances[prefill].bootstrap_port"),
        (30335, "sglang_prefill_instances[prefill].dist_init_port"),
        (30002, "sglang_decode_instances[decode].port"),
        (30435, "sglang_decode_instances[decode].dist_init_port"),
        (30001, "sglang_router_port"),
        (29000, "sglang_router_prometheus_port"),
    ]


@pytest.mark.parametrize("env, name, message", [
    ({"UCX_TLS": "rc\nshm"}, "UCX_TLS", "holds a line break, NUL, tab or other control character"),
    ({"A": "x\r"}, "A", "holds a line break, NUL, tab or other control character"),
    ({"A": "x\ty"}, "A", "holds a line break, NUL, tab or other control character"),
    ({"A": "x\x1b[0m"}, "A", "holds a line break, NUL, tab or other control character"),
    ({"A": "x\x7f"}, "A", "holds a line break, NUL, tab or other control character"),
    ({"A": "x\0"}, "A", "holds a line break, NUL, tab or other control character"),
    ({"BAD\n": "x"}, "['BAD\\n']", "is not a valid environment variable name"),
    ({"1BAD": "x"}, "1BAD", "is not a valid environment variable name"),
    ({"UCX-TLS": "rc"}, "UCX-TLS", "is not a valid environment variable name"),
])
def test_env_that_an_environment_file_cannot_hold(env, name, message):
    """systemd's environment files take one NAME="value" line per variable: a line break in a value would be
    written as a literal backslash-n (another value), a bad name ignored by systemd."""
    problems = one_decode_problem(env=env)
    shown = "sglang_decode_instances[decode].env" + (name if name.startswith("[") else "." + name)
    assert [(p["variable"], p["message"]) for p in problems] == [(shown, message)]
    assert problems[0]["fix"]


@pytest.mark.parametrize("name", ["SGLANG_CACHE_DIR", "SGLANG_JIT_CACHE_DIR", "SGLANG_DG_CACHE_DIR"])
def test_an_instance_env_cannot_take_its_compile_caches_elsewhere(name):
    """The collection gives each instance its own caches: one set here could be another instance's (sglang#27604)."""
    problems = one_decode_problem(env={name: "/srv/shared"})
    assert [p["variable"] for p in problems] == ["sglang_decode_instances[decode].env." + name]
    assert "sglang_server_cache_root" in problems[0]["message"]


def test_env_with_plain_values_is_fine():
    assert one_decode_problem(env={"UCX_NET_DEVICES": "mlx5_0:1", "NCCL_DEBUG": "INFO", "SGLANG_X": 1}) == []


@pytest.mark.parametrize("name", ["decode\n", "decode\nExecStartPre=+/bin/sh", "de code", "decode\t"])
def test_an_instance_name_is_matched_whole(name):
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import normalize
    _instances, problems = normalize([dict(name=name, port=30002)], "decode", "h")
    assert any(p["variable"].endswith(".name") for p in problems), problems


def test_pipeline_parallel_on_one_host_divides_the_default_tp():
    instances, problems = normalize([dict(DECODE, pp_size=2)], "decode", "h")
    assert problems == [] and instances[0]["tp_size"] == 2 and instances[0]["pp_size"] == 2
    _instances, problems = normalize([dict(DECODE, pp_size=2, tp_size=4)], "decode", "h")
    assert [p["variable"] for p in problems] == ["sglang_decode_instances[decode].tp_size"]
