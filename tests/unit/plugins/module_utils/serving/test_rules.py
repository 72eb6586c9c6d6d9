# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The preflight's rules (module_utils/serving/rules.py): the model settings, and judge() of one host against
observed data, rule by rule; what was not observed is not judged."""

import copy

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import rules as R
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.sglang_choices import (
    PARSER_PAIRS,
    REASONING_PARSERS,
    TOOL_CALL_PARSERS,
    TRANSFER_BACKENDS,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import DECODE, PREFILL, TOPOLOGY_DEFAULTS  # noqa: E402  pylint: disable=wrong-import-position
from serving_support import MODEL as REFERENCE_MODEL  # noqa: E402  pylint: disable=wrong-import-position

# The reference model with the environment keys the preflight checks.
MODEL = dict(REFERENCE_MODEL, transfer_env={"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX"}, env={})
SERVER = {"numa_binding": "numactl", "numactl_path": "/usr/bin/numactl", "no_new_privileges": True, "home": "/var/lib/sglang",
          "min_free_gb": 10, "own_uids": [999]}
# What the preflight reads on the reference host (fixtures/gpu/blackwell8x): GPUs 0-3 on node 0, 4-7 on node 1.
GPUS = [{"index": i, "numa_node": 0 if i < 4 else 1, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition"} for i in range(8)]
OBSERVED = {
    "gpus": GPUS,
    "numa_nodes": [0, 1],
    "listeners": [],
    "addresses": {"127.0.0.1": (True, None)},
    "paths": [{"var": "sglang_server_model_path", "path": "/models/DeepSeek-V4-Flash", "exists": True}],
    "numactl": True,
    "nvidia_uvm": True,
    "home_free_gb": 500.0,
}


def blackwell(prefill=None, decode=None, **host_vars):
    """The reference host: prefill, decode and the router on one host."""
    hv = {"ansible_host": "192.0.2.10", "sglang_prefill_instances": [dict(PREFILL, **(prefill or {}))],
          "sglang_decode_instances": [dict(DECODE, **(decode or {}))]}
    hv.update(host_vars)
    return build_topology({"blackwell": hv}, {"sglang_prefill": ["blackwell"], "sglang_decode": ["blackwell"],
                                              "sglang_router": ["blackwell"]}, defaults=TOPOLOGY_DEFAULTS)


_THE_MODEL = object()


def judge(topology=None, model=_THE_MODEL, server=None, host="blackwell", **observed):
    """R.judge with the reference model (model=None: no model checks) and the observations overridden."""
    data = copy.deepcopy(OBSERVED)
    data.update(observed)
    return R.judge(host, topology or blackwell(), copy.deepcopy(MODEL if model is _THE_MODEL else model),
                   dict(SERVER, **(server or {})), data)


def pairs(problems):
    return [(p["variable"], p["message"]) for p in problems]


def listener(port, address="127.0.0.1", uid=0, owners=None):
    return {"address": address, "port": port, "uid": uid, "owners": owners if owners is not None else []}


# --- model settings ----------------------------------------------------------------------------------------

def test_the_reference_model_has_no_problem():
    assert R.model_problems("h", MODEL) == []


def test_unknown_reasoning_parser_suggests_the_hyphenated_name():
    assert pairs(R.model_problems("h", dict(MODEL, reasoning_parser="deepseekv4"))) == [(
        "sglang_model_reasoning_parser", "'deepseekv4' is not a reasoning parser of sglang 0.5.23 (did you mean 'deepseek-v4'?)")]


def test_a_tool_call_parser_name_as_reasoning_parser_is_named_so():
    problems = R.model_problems("h", dict(MODEL, reasoning_parser="hermes", tool_call_parser="hermes"))
    assert pairs(problems) == [(
        "sglang_model_reasoning_parser", "'hermes' is not a reasoning parser of sglang 0.5.23 ('hermes' is a tool-call parser name)")]
    assert problems[0]["fix"] == "choose one of: " + ", ".join(REASONING_PARSERS)


def test_unknown_tool_call_parser():
    problems = R.model_problems("h", dict(MODEL, tool_call_parser="deepseek-v4"))
    assert pairs(problems) == [(
        "sglang_model_tool_call_parser", "'deepseek-v4' is not a tool-call parser of sglang 0.5.23 (did you mean 'deepseekv4'?)")]
    assert problems[0]["fix"] == "choose one of: " + ", ".join(TOOL_CALL_PARSERS)


@pytest.mark.parametrize("reasoning, tool", [("deepseek-v4", "deepseekv3"), ("qwen3", "deepseekv4"), ("deepseek-r1", "deepseekv4"),
                                             ("kimi_k2", "kimi_k3"), ("gpt-oss", "hermes")])
def test_parser_pair_from_different_families(reasoning, tool):
    problems = R.model_problems("h", dict(MODEL, reasoning_parser=reasoning, tool_call_parser=tool))
    assert pairs(problems) == [(
        "sglang_model_tool_call_parser",
        "sglang_model_reasoning_parser %r and sglang_model_tool_call_parser %r belong to different model families "
        "(tool calls would stay in content)" % (reasoning, tool))]
    assert problems[0]["fix"] == "with %r use tool-call parser %s" % (reasoning, " or ".join(repr(t) for t in PARSER_PAIRS[reasoning]))


@pytest.mark.parametrize("reasoning, tool", [("deepseek-v4", "deepseekv32"), ("deepseek-v41", "deepseekv4"), ("qwen3", "qwen25"),
                                             ("", "deepseekv4"), (None, "hermes"), ("auto", "hermes"), ("response_template", "qwen"),
                                             ("nemotron_3", "llama3"), ("deepseek-v4", ""), ("deepseek-v4", None)])
def test_parser_pairs_that_belong_together(reasoning, tool):
    assert R.model_problems("h", dict(MODEL, reasoning_parser=reasoning, tool_call_parser=tool)) == []


def test_an_unknown_tool_parser_is_not_also_a_pair_problem():
    problems = R.model_problems("h", dict(MODEL, tool_call_parser="deepseekv9"))
    assert [p["variable"] for p in problems] == ["sglang_model_tool_call_parser"]
    assert "is not a tool-call parser" in problems[0]["message"]


@pytest.mark.parametrize("backend, hint", [("nccl", ""), ("mooncak", " (did you mean 'mooncake'?)")])
def test_unknown_transfer_backend(backend, hint):
    problems = R.model_problems("h", dict(MODEL, transfer_backend=backend))
    assert pairs(problems) == [("sglang_model_transfer_backend", "%r is not a transfer backend of sglang 0.5.23%s" % (backend, hint))]
    assert problems[0]["fix"] == "choose one of: " + ", ".join(TRANSFER_BACKENDS)


@pytest.mark.parametrize("backend", ["", None] + list(TRANSFER_BACKENDS))
def test_known_or_unset_transfer_backend(backend):
    assert R.model_problems("h", dict(MODEL, transfer_backend=backend)) == []


@pytest.mark.parametrize("value", [0, -8192, "8192", True, 8192.0])
def test_context_length_must_be_a_positive_integer(value):
    assert pairs(R.model_problems("h", dict(MODEL, context_length=value))) == [
        ("sglang_model_context_length", "must be a positive integer (tokens), got %r" % (value,))]


def test_context_length_unset_is_fine():
    assert R.model_problems("h", dict(MODEL, context_length=None)) == []


@pytest.mark.parametrize("path", ["", None])
def test_empty_model_path(path):
    problems = R.model_problems("h", dict(MODEL, model_path=path))
    assert pairs(problems) == [("sglang_model_path", "is empty")]
    assert problems[0]["host"] == "h"


def test_model_extra_args_and_env_shapes():
    problems = R.model_problems("h", dict(MODEL, extra_args="--foo", env=["A=1"], transfer_env="UCX"))
    assert pairs(problems) == [
        ("sglang_model_extra_args", "must be a list of strings, got '--foo'"),
        ("sglang_model_env", "must be a mapping, got ['A=1']"),
        ("sglang_model_transfer_env", "must be a mapping, got 'UCX'"),
    ]


@pytest.mark.parametrize("extra_args", [["--foo", None], [["--foo"]], [{"--foo": 1}]])
def test_model_extra_args_items_must_be_words(extra_args):
    """As for an instance's extra_args: a null or nested item would reach the command line as 'None' or a repr."""
    assert [p["variable"] for p in R.model_problems("h", dict(MODEL, extra_args=extra_args))] == ["sglang_model_extra_args"]


def test_every_model_problem_at_once():
    model = {"model_path": "", "reasoning_parser": "deepseek_v4", "tool_call_parser": "deepseekv9", "transfer_backend": "tcp",
             "context_length": 0}
    assert [p["variable"] for p in R.model_problems("h", model)] == [
        "sglang_model_reasoning_parser", "sglang_model_tool_call_parser", "sglang_model_transfer_backend",
        "sglang_model_context_length", "sglang_model_path"]


# --- judge: layouts that pass ----------------------------------------------------------------------------

def test_reference_layout_has_no_problem(inventory, inventory_model):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    assert R.judge("blackwell", topology, inventory_model("blackwell"), dict(SERVER), copy.deepcopy(OBSERVED)) == []


def test_gpu_less_local_layout_has_no_problem(inventory, inventory_model):
    topology = build_topology(*inventory("local"), defaults=TOPOLOGY_DEFAULTS)
    observed = dict(OBSERVED, gpus=None, numa_nodes=[0], paths=[])
    assert R.judge("pdserve-local", topology, inventory_model("local"), dict(SERVER), observed) == []


def test_nothing_observed_judges_the_inventory_only():
    assert R.judge("blackwell", blackwell(), MODEL, dict(SERVER), {}) == []
    nothing = dict((key, None) for key in OBSERVED)
    assert R.judge("blackwell", blackwell(decode={"numa_node": 7, "gpus": [4, 5, 6, 9]}), MODEL, dict(SERVER), nothing) == []


def test_the_topology_problems_of_the_host_come_first():
    problems = judge(blackwell(decode={"port": 30001}), model=dict(MODEL, model_path=""))
    assert pairs(problems) == [
        ("sglang_router_port", "port 30001 is used by both sglang_decode_instances[decode].port and sglang_router_port"),
        ("sglang_model_path", "is empty"),
    ]


def test_only_this_hosts_topology_problems(inventory):
    host_vars, groups = inventory("multinode")
    host_vars["gpu-decode-1"]["sglang_decode_instances"][0]["mem_fraction_static"] = 2
    topology = build_topology(host_vars, groups, defaults=TOPOLOGY_DEFAULTS)
    assert judge(topology, host="gpu-prefill-1", numa_nodes=None, gpus=None, addresses={}) == []
    assert [p["variable"] for p in judge(topology, host="gpu-decode-1", numa_nodes=None, gpus=None, addresses={})] == [
        "sglang_decode_instances[decode-0].mem_fraction_static"]


def test_model_checks_skipped_without_model():
    assert judge(model=None) == []
    assert judge(model=None, paths=[]) == []


def test_model_problems_are_the_hosts():
    problems = judge(model=dict(MODEL, reasoning_parser="deepseek_v4"))
    assert [(p["host"], p["variable"]) for p in problems] == [("blackwell", "sglang_model_reasoning_parser")]


def test_a_router_only_host_is_not_judged_on_the_model(inventory):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    assert judge(topology, host="router-1", model=dict(MODEL, model_path=""), numactl=False, nvidia_uvm=False, home_free_gb=0.1) == []


def test_a_host_that_serves_nothing():
    assert judge(blackwell(), host="elsewhere", numactl=False, nvidia_uvm=False, home_free_gb=0.0,
                 listeners=[listener(30000, owners=[{"pid": "1", "unit": "none"}])]) == []


# --- judge: GPUs and NUMA ------------------------------------------------------------------------------

def test_numa_node_the_host_does_not_have():
    problems = judge(blackwell(decode={"numa_node": 3}), gpus=None)
    assert pairs(problems) == [("sglang_decode_instances[decode].numa_node", "is 3 but the host has NUMA node(s) [0, 1]")]
    assert problems[0]["fix"] == "pick one of them or drop numa_node"


def test_numa_nodes_unknown_skip_the_node_check():
    assert judge(blackwell(decode={"numa_node": 3}), gpus=None, numa_nodes=None) == []


def test_gpu_index_the_host_does_not_have():
    problems = judge(blackwell(decode={"gpus": [4, 5, 6, 8]}))
    assert pairs(problems) == [("sglang_decode_instances[decode].gpus", "uses GPU 8 but the host has GPU index(es) [0, 1, 2, 3, 4, 5, 6, 7]")]


def test_gpu_on_another_numa_node():
    problems = judge(blackwell(prefill={"numa_node": 1}))
    assert pairs(problems) == [("sglang_prefill_instances[prefill].numa_node", "is 1 but GPU %d is attached to NUMA node 0" % i)
                               for i in range(4)]
    assert problems[0]["fix"] == "set numa_node to 0 or move the instance to GPUs of node 1"


def test_gpu_affinity_unknown_is_not_a_problem():
    assert judge(gpus=[{"index": i, "numa_node": None} for i in range(8)]) == []


def test_gpu_of_another_instance_and_numa_mismatch_are_both_reported():
    problems = judge(blackwell(decode={"gpus": [3, 5, 6, 7]}))
    assert pairs(problems) == [
        ("sglang_decode_instances[decode].gpus", "GPU 3 is given to both sglang_prefill_instances[prefill] and sglang_decode_instances[decode]"),
        ("sglang_decode_instances[decode].numa_node", "is 1 but GPU 3 is attached to NUMA node 0"),
    ]


def test_numa_binding_none_skips_numa_checks_but_not_gpu_indexes():
    assert judge(blackwell(decode={"numa_node": 7}), server={"numa_binding": "none"}) == []
    assert judge(blackwell(prefill={"numa_node": 1}), server={"numa_binding": "none"}) == []
    assert [p["variable"] for p in judge(blackwell(decode={"gpus": [4, 5, 6, 8]}), server={"numa_binding": "none"})] == [
        "sglang_decode_instances[decode].gpus"]


def test_numa_binding_sglang_checks_numa_too():
    assert [p["variable"] for p in judge(blackwell(decode={"numa_node": 0}), server={"numa_binding": "sglang"})] == [
        "sglang_decode_instances[decode].numa_node"] * 4


def test_unknown_numa_binding():
    problems = judge(server={"numa_binding": "libnuma"})
    assert pairs(problems) == [("sglang_server_numa_binding", "must be one of numactl, sglang, none, got 'libnuma'")]


def test_no_gpus_visible_skips_gpu_checks():
    assert judge(blackwell(decode={"gpus": [4, 5, 6, 9]}), gpus=None) == []


# --- judge: listening sockets ----------------------------------------------------------------------------

def test_port_held_by_a_foreign_process():
    problems = judge(listeners=[listener(30002, owners=[{"pid": "4242", "unit": "none"}])])
    assert pairs(problems) == [("sglang_decode_instances[decode].port",
                                "wants port 30002 but 127.0.0.1:30002 is already held by pid 4242 (not a systemd service)")]
    assert problems[0]["fix"] == "stop that process or choose another port"


def test_port_held_by_another_unit_is_named():
    problems = judge(listeners=[listener(30001, "0.0.0.0", owners=[{"pid": "99", "unit": "nginx.service"}])])
    assert pairs(problems) == [("sglang_router_port", "wants port 30001 but 0.0.0.0:30001 is already held by pid 99 (nginx.service)")]


@pytest.mark.parametrize("port, variable", [(8998, "sglang_prefill_instances[prefill].bootstrap_port"),
                                            (30335, "sglang_prefill_instances[prefill].dist_init_port"),
                                            (29000, "sglang_router_prometheus_port")])
def test_every_serving_port_is_checked(port, variable):
    problems = judge(listeners=[listener(port, "::", owners=[{"pid": "7", "unit": "foo.service"}])])
    assert pairs(problems) == [(variable, "wants port %d but :::%d is already held by pid 7 (foo.service)" % (port, port))]


@pytest.mark.parametrize("unit", ["sglang-prefill.service", "sglang-router.service", "sglang-decode-old.service"])
def test_port_held_by_our_units_is_fine(unit):
    # A renamed instance: the old unit still holds the port until the role stops it.
    assert judge(listeners=[listener(30002, owners=[{"pid": "12", "unit": unit}])]) == []


def test_only_foreign_owners_are_named():
    owners = [{"pid": "10", "unit": "sglang-decode.service"}, {"pid": "11", "unit": "socat.service"}, {"pid": "12", "unit": "none"}]
    problems = judge(listeners=[listener(30002, owners=owners)])
    assert [p["message"] for p in problems] == [
        "wants port 30002 but 127.0.0.1:30002 is already held by pid 11 (socat.service), pid 12 (not a systemd service)"]


@pytest.mark.parametrize("unit", ["sglang-decode.scope", "sglang.service", "my-sglang-decode.service"])
def test_names_that_only_look_like_ours(unit):
    assert len(judge(listeners=[listener(30002, owners=[{"pid": "5", "unit": unit}])])) == 1


def test_port_owner_unknown_decided_by_socket_uid():
    # Containers without CAP_SYS_PTRACE: /proc shows no process, only the socket's uid.
    problems = judge(listeners=[listener(30000, uid=999), listener(30002, uid=0)])
    assert pairs(problems) == [("sglang_decode_instances[decode].port",
                                "wants port 30002 but 127.0.0.1:30002 is already held by a process of uid 0 that is not the service user")]
    assert judge(listeners=[listener(30002, uid=0)], server={"own_uids": [0, 999]}) == []
    assert len(judge(listeners=[listener(30002, uid=999)], server={"own_uids": []})) == 1


def test_listener_on_an_unrelated_port_is_ignored():
    assert judge(listeners=[listener(22, "0.0.0.0", owners=[{"pid": "1", "unit": "ssh.service"}]), listener(31999)]) == []


def test_router_only_host_checks_the_router_ports(inventory):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    problems = judge(topology, host="router-1", listeners=[listener(30001, "0.0.0.0", owners=[{"pid": "3", "unit": "haproxy.service"}]),
                                                           listener(30002, owners=[{"pid": "4", "unit": "x.service"}])])
    assert pairs(problems) == [("sglang_router_port", "wants port 30001 but 0.0.0.0:30001 is already held by pid 3 (haproxy.service)")]


# --- judge: bind addresses -----------------------------------------------------------------------------

def test_bind_address_that_is_not_the_hosts(inventory):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    problems = judge(topology, host="gpu-prefill-1", gpus=None,
                     addresses={"10.0.0.11": (False, "is not an address of this host"), "127.0.0.1": (True, None)})
    assert pairs(problems) == [
        ("sglang_prefill_instances[prefill-0].host", "binds 10.0.0.11, which is not an address of this host"),
        ("sglang_prefill_instances[prefill-1].host", "binds 10.0.0.11, which is not an address of this host"),
    ]
    assert problems[0]["fix"] == "use an address of gpu-prefill-1 (ip -brief address), 127.0.0.1, or 0.0.0.0"


def test_every_bound_address_is_judged():
    topology = blackwell(decode={"host": "10.0.0.7", "dist_init_host": "10.0.0.8"}, sglang_router_host="10.0.0.9",
                         sglang_router_prometheus_host="10.0.0.10")
    bad = dict((a, (False, "is not an address of this host")) for a in ("10.0.0.7", "10.0.0.8", "10.0.0.9", "10.0.0.10"))
    assert [p["variable"] for p in judge(topology, addresses=bad)] == [
        "sglang_decode_instances[decode].host", "sglang_decode_instances[decode].dist_init_host", "sglang_router_host",
        "sglang_router_prometheus_host"]


def test_dist_init_host_without_dist_init_port_is_not_bound():
    topology = blackwell(decode={"dist_init_host": "10.0.0.8", "dist_init_port": None})
    assert judge(topology, addresses={"10.0.0.8": (False, "is not an address of this host")}) == []


def test_addresses_that_are_fine_or_not_observed():
    topology = blackwell(decode={"host": "10.0.0.7"})
    assert judge(topology, addresses={"10.0.0.7": (True, None)}) == []
    assert judge(topology, addresses={}) == []
    assert judge(topology, addresses=None) == []


def test_bind_addresses(inventory):
    assert R.bind_addresses(build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)["hosts"]["blackwell"]) == ["127.0.0.1"]
    hosts = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)["hosts"]
    assert R.bind_addresses(hosts["gpu-prefill-1"]) == ["10.0.0.11", "127.0.0.1"]
    assert R.bind_addresses(hosts["gpu-decode-1"]) == ["10.0.0.21", "127.0.0.1"]
    assert R.bind_addresses(hosts["router-1"]) == ["127.0.0.1"]
    topology = blackwell(prefill={"host": "::"}, decode={"host": "fd00::2", "dist_init_host": "10.0.0.8"},
                         sglang_router_host="*", sglang_router_prometheus_host="0.0.0.0")
    assert R.bind_addresses(topology["hosts"]["blackwell"]) == ["10.0.0.8", "127.0.0.1", "fd00::2"]
    assert R.bind_addresses({"prefill": [], "decode": [], "router": None}) == []


# --- judge: paths, nvidia-uvm, numactl, disk -----------------------------------------------------------------

def test_missing_model_path_and_chat_template():
    paths = [{"var": "sglang_server_model_path", "path": "/models/x", "exists": False},
             {"var": "sglang_server_chat_template", "path": "/t.jinja", "exists": True}]
    problems = judge(paths=paths)
    assert pairs(problems) == [("sglang_server_model_path", "points to /models/x, which does not exist on the host")]
    assert "sglang_server_check_paths: false" in problems[0]["fix"]


def test_nvidia_uvm_missing_with_no_new_privileges():
    problems = judge(nvidia_uvm=False)
    assert [p["variable"] for p in problems] == ["sglang_server_systemd_hardening"]
    assert problems[0]["message"].startswith("/dev/nvidia-uvm is missing and the units run with NoNewPrivileges")
    assert "NoNewPrivileges: false" in problems[0]["fix"]


@pytest.mark.parametrize("observed, server", [
    ({"nvidia_uvm": False}, {"no_new_privileges": False}),
    ({"nvidia_uvm": None}, {}),
    ({"nvidia_uvm": False, "gpus": None}, {}),
    ({"nvidia_uvm": False, "gpus": []}, {}),
])
def test_nvidia_uvm_not_a_problem(observed, server):
    problems = judge(server=server, **observed)
    assert "sglang_server_systemd_hardening" not in [p["variable"] for p in problems]


def test_nvidia_uvm_not_judged_without_instances(inventory):
    assert judge(build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS), host="router-1", nvidia_uvm=False) == []


def test_numactl_missing():
    problems = judge(numactl=False)
    assert pairs(problems) == [("sglang_server_numa_binding", "is 'numactl' but numactl is not installed (/usr/bin/numactl)")]
    assert "'sglang' or 'none'" in problems[0]["fix"]


@pytest.mark.parametrize("topology_kwargs, server, numactl", [
    ({}, {"numa_binding": "sglang"}, False),
    ({}, {"numa_binding": "none"}, False),
    ({"prefill": {"numa_node": None}, "decode": {"numa_node": None}}, {}, False),
    ({}, {}, None),
])
def test_numactl_not_needed_or_not_observed(topology_kwargs, server, numactl):
    assert judge(blackwell(**topology_kwargs), server=server, numactl=numactl) == []


def test_too_little_free_disk():
    problems = judge(home_free_gb=3.2)
    assert pairs(problems) == [("sglang_server_min_free_gb", "the filesystem of /var/lib/sglang has 3.2 GiB free, less than the 10 GiB "
                                                             "asked for (kernel caches, logs)")]


@pytest.mark.parametrize("free, need", [(10.0, 10), (3.2, 0), (None, 10), (3.2, None)])
def test_enough_disk_or_not_asked(free, need):
    assert judge(home_free_gb=free, server={"min_free_gb": need}) == []


def test_all_problems_are_reported_at_once():
    topology = blackwell(decode={"name": "prefill", "port": 30000, "mem_fraction_static": 2})
    problems = judge(topology, model=dict(MODEL, reasoning_parser="deepseek_v4"), numactl=False, nvidia_uvm=False, home_free_gb=1.0,
                     paths=[{"var": "sglang_server_model_path", "path": "/nope", "exists": False}],
                     listeners=[listener(29000, owners=[{"pid": "1", "unit": "none"}])])
    assert [p["variable"] for p in problems] == [
        "sglang_decode_instances[prefill].mem_fraction_static",
        "sglang_decode_instances[prefill]",
        "sglang_decode_instances[prefill].port",  # said once: not again as "both resolve to" the same URL
        "sglang_model_reasoning_parser",
        "sglang_router_prometheus_port",
        "sglang_server_model_path",
        "sglang_server_systemd_hardening",
        "sglang_server_numa_binding",
        "sglang_server_min_free_gb",
    ]
    assert all(p["host"] == "blackwell" and p["message"] and p["fix"] for p in problems)


def test_model_env_values_fit_an_environment_file():
    problems = R.model_problems("h", dict(MODEL, env={"A": "one\ntwo"}, transfer_env={"bad name": "x"}))
    assert pairs(problems) == [
        ("sglang_model_env.A", "holds a line break or NUL character"),
        ("sglang_model_transfer_env.bad name", "is not a valid environment variable name"),
    ]
