# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The pdserve.sglang filters (plugins/filter/sglang.py): thin wrappers over the serving model, which report
inventory mistakes as a filter error naming the problems."""

from collections.abc import Mapping

import json
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.pdserve.sglang.plugins.filter import sglang as F
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import units as serving_units
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import cmdline as serving_cmdline
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import argv, router_args, server_args
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import ROUTER_SETTINGS, SERVER_SETTINGS, TOPOLOGY_DEFAULTS  # noqa: E402  pylint: disable=wrong-import-position


class FakeHostVars(Mapping):
    """Like Ansible's hostvars: a mapping of hosts to mappings (not dicts), recording which hosts were read."""

    def __init__(self, host_vars):
        self._data = host_vars
        self.read = []

    def __getitem__(self, host):
        self.read.append(host)
        return HostVarsVars(self._data[host])

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


class HostVarsVars(Mapping):
    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


def test_the_filters_are_registered():
    filters = F.FilterModule().filters()
    assert sorted(filters) == ["changed_units", "env_quote", "flag_check_lines", "instance_env_files", "instance_restarts",
                               "play_modes", "precompile_failures", "precompile_line", "precompile_refusal",
                               "precompile_runs", "precompile_wanted", "problem_line", "ready_line", "release_label",
                               "roll_plan", "roll_plan_lines", "roll_report",
                               "router_unit_files", "server_units", "serving_topology", "switch_sources", "systemd_quote",
                               "unit_problems", "unit_services", "venv_name", "wait_endpoints"]
    assert filters["changed_units"] is serving_units.changed_units
    assert filters["systemd_quote"]("50%") == '"50%%"' and filters["env_quote"]("50%") == '"50%"'


# --- serving_topology ---------------------------------------------------------------------------------------

def test_serving_topology_over_hostvars_and_groups(inventory):
    host_vars, groups = inventory("multinode")
    hostvars = FakeHostVars(host_vars)
    topology = F.serving_topology(hostvars, groups, defaults=TOPOLOGY_DEFAULTS)
    assert topology == build_topology(host_vars, groups, defaults=TOPOLOGY_DEFAULTS)
    assert sorted(set(hostvars.read)) == ["gpu-decode-1", "gpu-prefill-1", "router-1"]
    assert [w["url"] for w in topology["workers"]["decode"]] == ["http://10.0.0.21:30002"]


@pytest.fixture
def task_worker(monkeypatch):
    """As in a worker process of ansible-playbook (one task, one host), with this test's results only."""
    monkeypatch.setattr(F, "_in_task_worker", lambda: True)
    monkeypatch.setattr(F, "_TASK_RESULTS", {})


def test_serving_topology_is_built_once_per_task_for_the_same_inputs(inventory, task_worker):
    host_vars, groups = inventory("multinode")
    hostvars = FakeHostVars(host_vars)
    first = F.serving_topology(hostvars, groups, defaults=TOPOLOGY_DEFAULTS)
    reads = len(hostvars.read)
    first["workers"]["decode"].clear()  # a caller's change does not reach the next caller
    again = F.serving_topology(hostvars, groups, defaults=TOPOLOGY_DEFAULTS)
    assert len(hostvars.read) == reads
    assert again == build_topology(host_vars, groups, defaults=TOPOLOGY_DEFAULTS)
    other = dict(TOPOLOGY_DEFAULTS, sglang_router_port=TOPOLOGY_DEFAULTS.get("sglang_router_port", 30001) + 1)
    F.serving_topology(hostvars, groups, defaults=other)
    assert len(hostvars.read) > reads, "other defaults are other inputs: built again"


def test_serving_topology_is_built_every_time_in_ansible_playbooks_own_process(inventory, monkeypatch):
    monkeypatch.setattr(F, "_TASK_RESULTS", {})
    assert not F._in_task_worker()  # pytest's process is nobody's child process
    host_vars, groups = inventory("multinode")
    hostvars = FakeHostVars(host_vars)
    F.serving_topology(hostvars, groups, defaults=TOPOLOGY_DEFAULTS)
    reads = len(hostvars.read)
    F.serving_topology(hostvars, groups, defaults=TOPOLOGY_DEFAULTS)
    assert len(hostvars.read) == 2 * reads and F._TASK_RESULTS == {}


def test_server_units_are_built_once_per_task_for_the_same_inputs(inventory, task_worker, monkeypatch):
    host_vars, groups = inventory("multinode")
    topology = build_topology(host_vars, groups, defaults=TOPOLOGY_DEFAULTS)
    built = []
    real = F.server_unit
    monkeypatch.setattr(F, "server_unit", lambda *args: built.append(args) or real(*args))
    first = F.server_units(topology, "gpu-decode-1", "decode", {"path": "/m"}, SERVER_SETTINGS)
    assert F.server_units(topology, "gpu-decode-1", "decode", {"path": "/m"}, SERVER_SETTINGS) == first
    assert len(built) == len(first) == 1
    F.server_units(topology, "gpu-decode-1", "decode", {"path": "/other"}, SERVER_SETTINGS)
    assert len(built) == 2


def test_serving_topology_reads_only_the_serving_hosts():
    hostvars = FakeHostVars({"gpu": {"sglang_decode_instances": [{"name": "d", "port": 30002}]}, "monitor": {"x": 1}})
    topology = F.serving_topology(hostvars, {"sglang_decode": ["gpu"], "monitoring": ["monitor"], "all": ["gpu", "monitor"]}, defaults=TOPOLOGY_DEFAULTS)
    assert hostvars.read == ["gpu"]
    assert list(topology["hosts"]) == ["gpu"]


def test_serving_topology_host_missing_from_hostvars():
    topology = F.serving_topology(FakeHostVars({}), {"sglang_decode": ["ghost"]}, defaults=TOPOLOGY_DEFAULTS)
    # A group member that declares nothing (here: not even in hostvars) is the problem of a missing instance list.
    assert topology["hosts"]["ghost"]["decode"] == []
    assert [(p["host"], p["variable"]) for p in topology["problems"]] == [("ghost", "sglang_decode_instances")]


def test_serving_topology_with_other_group_names():
    hostvars = FakeHostVars({"p": {"sglang_prefill_instances": [{"name": "p", "port": 30000}]},
                             "d": {"sglang_decode_instances": [{"name": "d", "port": 30002}]}})
    topology = F.serving_topology(hostvars, {"gpu_prefill": ["p"], "gpu_decode": ["d"], "sglang_prefill": ["d"]},
                                  group_names={"prefill": "gpu_prefill", "decode": "gpu_decode"}, defaults=TOPOLOGY_DEFAULTS)
    assert [w["inventory_host"] for w in topology["workers"]["prefill"]] == ["p"]
    assert topology["groups"]["router"] == "sglang_router"
    assert F.serving_topology(hostvars, None, defaults=TOPOLOGY_DEFAULTS)["hosts"] == {}


# --- server_units / router_unit_files -------------------------------------------------------------------------

def test_server_units(inventory, inventory_model):
    topology = F.serving_topology(FakeHostVars(inventory("blackwell")[0]), inventory("blackwell")[1], defaults=TOPOLOGY_DEFAULTS)
    model = inventory_model("blackwell")
    units = F.server_units(topology, "blackwell", "decode", model, SERVER_SETTINGS)
    decode, = topology["hosts"]["blackwell"]["decode"]
    assert units == [serving_units.server_unit(decode, model, SERVER_SETTINGS)]
    assert units[0]["argv_lines"] == server_args(decode, model)
    assert [u["unit"] for u in F.server_units(topology, "blackwell", "prefill", model, SERVER_SETTINGS)] == ["sglang-prefill.service"]
    assert F.server_units(topology, "elsewhere", "prefill", model, SERVER_SETTINGS) == []
    assert F.server_units(topology, "blackwell", "prefill", None, SERVER_SETTINGS)[0]["argv_lines"][0] == ["--model-path", None]


def test_server_units_refuse_an_inventory_with_problems():
    host_vars = {"gpu": {"sglang_decode_instances": [{"name": "d", "port": "30002", "gpus": [0, 0]}]}}
    topology = build_topology(host_vars, {"sglang_decode": ["gpu"]}, defaults=TOPOLOGY_DEFAULTS)
    with pytest.raises(AnsibleFilterError) as err:
        F.server_units(topology, "gpu", "decode", {}, SERVER_SETTINGS)
    message = str(err.value)
    assert message.startswith("the inventory check (run with --tags preflight for all hosts) found 2 problem(s):\n- host gpu: ")
    assert "host gpu: sglang_decode_instances[d].port: must be an integer, got str '30002'" in message
    assert "host gpu: sglang_decode_instances[d].gpus: lists a GPU twice: [0, 0]; list each GPU once" in message


def test_problems_of_other_hosts_do_not_block_this_one(inventory):
    host_vars, groups = inventory("multinode")
    del host_vars["gpu-decode-1"]["sglang_server_host"]
    topology = build_topology(host_vars, groups, defaults=TOPOLOGY_DEFAULTS)
    assert [p["host"] for p in topology["problems"]] == ["gpu-decode-1"]
    units = F.server_units(topology, "gpu-prefill-1", "prefill", {"model_path": "/m"}, SERVER_SETTINGS)
    assert [u["unit"] for u in units] == ["sglang-prefill-0.service", "sglang-prefill-1.service"]
    with pytest.raises(AnsibleFilterError, match="the router on router-1 cannot reach http://127.0.0.1:30002"):
        F.server_units(topology, "gpu-decode-1", "decode", {"model_path": "/m"}, SERVER_SETTINGS)


def test_server_units_of_both_modes_in_the_order_given(inventory):
    topology = build_topology(*inventory("local"), defaults=TOPOLOGY_DEFAULTS)
    host = sorted(topology["hosts"])[0]
    prefill = F.server_units(topology, host, "prefill", {}, SERVER_SETTINGS)
    decode = F.server_units(topology, host, ["decode"], {}, SERVER_SETTINGS)
    assert prefill and decode
    both = F.server_units(topology, host, ["prefill", "decode"], {}, SERVER_SETTINGS)
    assert [u["unit"] for u in both] == [u["unit"] for u in prefill + decode]
    assert [u["unit"] for u in F.server_units(topology, host, ["decode", "prefill"], {}, SERVER_SETTINGS)] \
        == [u["unit"] for u in decode + prefill]
    assert F.server_units(topology, host, [], {}, SERVER_SETTINGS) == []
    with pytest.raises(AnsibleFilterError, match="mode must be prefill or decode, got 'router'"):
        F.server_units(topology, host, ["prefill", "router"], {}, SERVER_SETTINGS)


@pytest.mark.parametrize("groups,run_tags,skip_tags,expected", [
    (["sglang_prefill", "sglang_decode"], ["all"], [], ["prefill", "decode"]),
    (["sglang_decode", "sglang_prefill"], ["all"], [], ["prefill", "decode"]),
    (["sglang_prefill", "sglang_decode"], ["prefill"], [], ["prefill"]),
    (["sglang_prefill", "sglang_decode"], ["decode", "router"], [], ["decode"]),
    (["sglang_prefill", "sglang_decode"], ["validate"], [], ["prefill", "decode"]),
    (["sglang_prefill", "sglang_decode"], ["all"], ["prefill"], ["decode"]),
    (["sglang_prefill", "sglang_decode"], ["prefill"], ["prefill"], []),
    (["sglang_decode"], ["prefill"], [], []),
    (["sglang_decode", "sglang_router"], ["all"], [], ["decode"]),
    (["gpu_hosts"], ["all"], [], []),
])
def test_play_modes(groups, run_tags, skip_tags, expected):
    assert F.play_modes(groups, run_tags, skip_tags) == expected


def test_play_modes_with_renamed_groups():
    assert F.play_modes(["pf"], ["all"], [], {"prefill": "pf"}) == ["prefill"]
    assert F.play_modes(["sglang_prefill", "sglang_decode"], ["all"], [], {"prefill": "pf"}) == ["decode"]
    assert F.play_modes(["pf", "dc"], ["all"], [], {"prefill": "pf", "decode": "dc", "router": "r"}) == ["prefill", "decode"]


def test_server_units_unknown_mode(inventory):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    with pytest.raises(AnsibleFilterError, match="mode must be prefill or decode, got 'both'"):
        F.server_units(topology, "blackwell", "both", {}, SERVER_SETTINGS)


def test_router_unit_files(inventory):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    settings = dict(ROUTER_SETTINGS)
    unit = F.router_unit_files(topology, "blackwell", settings)
    assert "local_units" not in settings
    router, = topology["routers"]
    assert unit == serving_units.router_unit(router, topology["router_workers"],
                                             dict(ROUTER_SETTINGS, local_units=["sglang-prefill.service", "sglang-decode.service"]))
    assert "After=network-online.target sglang-prefill.service sglang-decode.service\n" in unit["unit_text"]
    assert unit["argv_lines"] == router_args(router, ROUTER_SETTINGS)
    assert json.loads(unit["worker_set_file"]["content"]) == serving_cmdline.worker_set(topology["router_workers"])


def test_router_unit_files_on_a_router_only_host(inventory):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    unit = F.router_unit_files(topology, "router-1", dict(ROUTER_SETTINGS, api_key="k3y", control_plane_api_key="c0ntrol"))
    assert "After=network-online.target\n" in unit["unit_text"]
    assert "--api-key" not in argv(unit["argv_lines"])
    for key in ("k3y", "c0ntrol"):
        assert key not in unit["unit_text"] and key not in unit["env_text"]
    # The flag check sees placeholders; the restart plan knows the credential files.
    check, = F.flag_check_lines(unit)
    assert check["argv"][-4:] == ["--api-key", "KEY-FROM-CREDENTIAL", "--control-plane-api-keys",
                                  "pdserve:pdserve-operations:admin:KEY-FROM-CREDENTIAL"]
    service, = F.unit_services(unit)
    assert service["credential_files"] == ["/etc/sglang-router/credentials/router-api-key",
                                           "/etc/sglang-router/credentials/router-control-plane-api-key"]


def test_router_unit_files_on_a_host_without_router(inventory):
    topology = build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS)
    with pytest.raises(AnsibleFilterError, match="host gpu-prefill-1 is not in the router group sglang_router"):
        F.router_unit_files(topology, "gpu-prefill-1", ROUTER_SETTINGS)


def test_router_unit_files_refuse_an_inventory_with_problems():
    topology = build_topology({"edge": {"sglang_router_port": 0}}, {"sglang_router": ["edge"]}, defaults=TOPOLOGY_DEFAULTS)
    with pytest.raises(AnsibleFilterError) as err:
        F.router_unit_files(topology, "edge", ROUTER_SETTINGS)
    assert str(err.value).split("\n") == [
        "the inventory check (run with --tags preflight for all hosts) found 4 problem(s):",
        "- host edge: sglang_router_port: must be a port between 1 and 65535, got 0; write a whole number without quotes, e.g. 30001",
        "- host edge: sglang_router_api_key: is empty, but the router listens on 0.0.0.0:0, reachable from other hosts: without "
        "a key anyone who reaches the port can use the model and register workers of their own (sglang-router answers POST "
        "/workers); let Ansible make one on the controller: sglang_router_api_key: \"{{ lookup('ansible.builtin.password', "
        "inventory_dir ~ '/.credentials/router-api-key', length=40, chars=['ascii_letters', 'digits']) }}\" (README \"Router "
        "keys\"), and the same for sglang_router_control_plane_api_key; or bind sglang_router_host to 127.0.0.1; or, for a "
        "network you trust, set sglang_router_allow_unauthenticated: true",
        "- host edge: sglang_prefill_instances: the router has no prefill worker: no host of group sglang_prefill defines "
        "sglang_prefill_instances; add one to the inventory",
        "- host edge: sglang_decode_instances: the router has no decode worker: no host of group sglang_decode defines "
        "sglang_decode_instances; add one to the inventory",
    ]


# --- flag_check_lines, wait_endpoints, ready_line ---------------------------------------------------------------

def test_flag_check_lines_are_the_unit_arguments_as_strings(inventory, inventory_model):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    model = inventory_model("blackwell")
    units = F.server_units(topology, "blackwell", "prefill", model, SERVER_SETTINGS)
    lines = F.flag_check_lines(units)
    prefill, = topology["hosts"]["blackwell"]["prefill"]
    assert lines == [{"name": "prefill", "argv": argv(server_args(prefill, model))}]
    assert lines[0]["argv"][:4] == ["--model-path", "/models/DeepSeek-V4-Flash", "--served-model-name", "deepseek-v4-flash"]
    assert "--mem-fraction-static" in lines[0]["argv"] and "0.8" in lines[0]["argv"]
    assert all(isinstance(word, str) for word in lines[0]["argv"])


def test_flag_check_lines_of_the_router_unit(inventory):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    unit = F.router_unit_files(topology, "blackwell", ROUTER_SETTINGS)
    lines = F.flag_check_lines(unit)
    assert lines == [{"name": "router", "argv": argv(unit["check_lines"])}]
    assert lines[0]["argv"][:2] == ["--pd-disaggregation", "--host"]
    assert lines[0]["argv"][-5:] == ["--prefill", "http://127.0.0.1:30000", "8998", "--decode", "http://127.0.0.1:30002"]


def test_flag_check_lines_name_falls_back_to_the_unit():
    assert F.flag_check_lines([{"unit": "sglang-x.service", "argv_lines": [["--a", 1]]}, {"name": "", "unit": "u", "argv_lines": []}]) == [
        {"name": "sglang-x.service", "argv": ["--a", "1"]}, {"name": "u", "argv": []}]
    assert F.flag_check_lines([]) == []


def test_wait_endpoints(inventory):
    topology = build_topology(*inventory("blackwell"), defaults=TOPOLOGY_DEFAULTS)
    assert F.wait_endpoints(topology, "blackwell") == [
        {"url": "http://127.0.0.1:30000", "kind": "server", "unit": "sglang-prefill.service", "name": "sglang-prefill.service"},
        {"url": "http://127.0.0.1:30002", "kind": "server", "unit": "sglang-decode.service", "name": "sglang-decode.service"},
    ]
    assert [e["unit"] for e in F.wait_endpoints(topology, "blackwell", ["decode"])] == ["sglang-decode.service"]
    assert F.wait_endpoints(topology, "elsewhere") == []


def test_wait_endpoints_of_an_instance_over_several_nodes_carry_the_rank(inventory):
    """inventories/multinode_tp: each host waits for its own rank, named with it; a rank > 0 is marked so that its
    dummy /health is never taken for the instance's readiness."""
    topology = build_topology(*inventory("multinode_tp"), defaults=TOPOLOGY_DEFAULTS)
    leader = F.wait_endpoints(topology, "gpu-p0", ["prefill"])
    other = F.wait_endpoints(topology, "gpu-p1", ["prefill"])
    assert [(e["rank"], e["nnodes"], e["name"]) for e in leader] == [
        (0, 2, "sglang-prefill-0.service (node rank 0 of 2)")]
    assert [(e["rank"], e["nnodes"], e["name"], e["unit"]) for e in other] == [
        (1, 2, "sglang-prefill-0.service (node rank 1 of 2)", "sglang-prefill-0.service")]
    # Rank 0 of the prefill waits for every prefill rank at its bootstrap server (bound as its API); nodes name them.
    assert [(e.get("bootstrap_url"), e["nodes"]) for e in leader] == [("http://10.0.1.11:8998", ["gpu-p0", "gpu-p1"])]
    assert "bootstrap_url" not in other[0]
    decode = F.wait_endpoints(topology, "gpu-d0", ["decode"])
    assert decode and all("bootstrap_url" not in e for e in decode)


def test_wait_endpoints_reach_wildcard_binds_over_loopback_and_skip_bad_ports():
    host_vars = {"gpu": {"ansible_host": "10.0.0.21", "sglang_decode_instances": [
        {"name": "decode", "port": 30002, "host": "0.0.0.0"}, {"name": "v6", "port": 30004, "host": "::"},
        {"name": "private", "port": 30006, "host": "10.0.0.21"}, {"name": "broken", "port": "30008"}]}}
    topology = build_topology(host_vars, {"sglang_decode": ["gpu"]}, defaults=TOPOLOGY_DEFAULTS)
    assert [(e["name"], e["url"]) for e in F.wait_endpoints(topology, "gpu")] == [
        ("sglang-decode.service", "http://127.0.0.1:30002"),
        ("sglang-v6.service", "http://[::1]:30004"),
        ("sglang-private.service", "http://10.0.0.21:30006"),
    ]


def test_ready_line():
    assert F.ready_line({"name": "sglang-prefill.service", "url": "http://127.0.0.1:30000", "ready": True, "seconds": 20.04,
                         "kind": "server"}) == "sglang-prefill.service http://127.0.0.1:30000 ready in 20.0 s"
    line = F.ready_line({"name": "r", "url": "u", "ready": True, "seconds": 1, "kind": "router",
                         "details": {"workers": {"prefill": {"healthy": 1, "total": 1}, "decode": {"healthy": 1, "total": 2},
                                                 "regular": {"healthy": 0, "total": 0}}}})
    assert line == "r u ready in 1.0 s (workers: decode 1/2 healthy, prefill 1/1 healthy)"
    assert F.ready_line({"name": "r", "url": "u", "ready": True, "kind": "router", "details": {"workers": {"total": 3}}}) == (
        "r u ready in 0.0 s (workers: total 3)")
    assert F.ready_line({"name": "x", "url": "u", "ready": False, "failure": "unit failed"}) == "x u NOT ready (unit failed)"
    assert F.ready_line({"url": "u", "ready": False, "last_status": 503}) == "u u NOT ready (503)"
    assert F.ready_line({"name": "x", "url": "u", "ready": False}) == "x u NOT ready (no answer)"
    # Workers are only summarised for the router.
    assert F.ready_line({"name": "s", "url": "u", "ready": True, "seconds": 2, "kind": "server",
                         "details": {"workers": {"decode": 1}}}) == "s u ready in 2.0 s"
    # A server's last start, as wait_ready read it from its journal.
    startup = {"line": "sglang-decode.service ready in 12.8 s: load weights 8.0 s, warmup 2.0 s"}
    assert F.ready_line({"name": "sglang-decode.service", "url": "u", "ready": True, "seconds": 3, "kind": "server",
                         "startup": startup}) == (
        "sglang-decode.service u ready in 3.0 s; last start: ready in 12.8 s: load weights 8.0 s, warmup 2.0 s")


def test_router_tls_filters_find_community_crypto_and_name_the_certificate():
    from ansible_collections.pdserve.sglang.plugins.filter import router_tls as RT
    router = {"tls": "stack_ca", "local_url": "https://127.0.0.1:30001", "tls_names": ["10.0.0.5", "r", "127.0.0.1"]}
    # scripts/setup.sh unpacks community.crypto next to this collection.
    assert RT.router_tls_problems(router, "r") == []
    assert RT.router_tls_names(router, ["llm.example.com"]) == ["IP:10.0.0.5", "DNS:r", "IP:127.0.0.1", "DNS:llm.example.com"]
    assert RT.router_tls_problems(dict(router, tls="none"), "r") == []


def test_unit_problems_judges_a_roles_settings_on_the_controller_naming_the_variable_never_the_key():
    key = "k3y\nExecStartPre=+/bin/sh"
    settings = dict(ROUTER_SETTINGS, api_key=key, restart_sec="2\nUser=root")
    found = F.unit_problems(settings, "router-1", "router")
    assert sorted(p["variable"] for p in found) == ["sglang_router_api_key", "sglang_router_restart_sec"]
    assert all(p["host"] == "router-1" for p in found)
    assert not any(key in F.problem_line(p) or "ExecStartPre" in F.problem_line(p) for p in found)
    assert F.unit_problems(ROUTER_SETTINGS, "router-1", "router") == []
    assert F.unit_problems(None, "router-1", "router") == []


@pytest.mark.parametrize("router, wait, refused", [
    (1800, 1800, False), (3600, 1800, False), ("1800", "300", False),
    (600, 1800, True), ("60", "300", True),
])
def test_a_router_start_up_timeout_shorter_than_the_servers_wait_is_refused(router, wait, refused):
    settings = dict(ROUTER_SETTINGS, worker_startup_timeout_secs=router, server_wait_timeout=wait)
    found = F.unit_problems(settings, "router-1", "router")
    assert [p["variable"] for p in found] == (["sglang_router_worker_startup_timeout_secs"] if refused else [])
    if refused:
        line = F.problem_line(found[0])
        assert "router-1" in line and "sglang_server_wait_timeout" in line and "given up on it" in line
        assert "at least %s" % wait in found[0]["fix"]


def test_the_start_up_timeout_is_judged_only_against_a_wait_it_is_given():
    settings = dict(ROUTER_SETTINGS, worker_startup_timeout_secs=60)
    assert F.unit_problems(settings, "router-1", "router") == []
    # A server's settings carry no router time limit.
    assert not any(p["variable"].startswith("sglang_router_")
                   for p in F.unit_problems(dict(server_wait_timeout=9999), "h", "server"))


@pytest.mark.parametrize("args", [({}, "h", "monitoring"), (["x"], "h", "router")])
def test_unit_problems_refuses_what_it_cannot_judge(args):
    with pytest.raises(AnsibleFilterError):
        F.unit_problems(*args)


def test_instance_restarts_reads_every_play_hosts_write():
    from ansible_collections.pdserve.sglang.plugins.filter.sglang import instance_restarts
    topology = {"hosts": {
        "a": {"prefill": [{"name": "p", "unit": "sglang-p.service", "nodes": ["a", "b"], "node_rank": 0}], "decode": []},
        "b": {"prefill": [{"name": "p", "unit": "sglang-p.service", "nodes": ["a", "b"], "node_rank": 1}], "decode": []},
    }}
    hostvars = {"a": {"__sglang_server_written": {"skipped": True}},
                "b": {"__sglang_server_written": {"restarts_left": [{"unit": "sglang-p.service", "reasons": ["x"]}]}}}
    assert [i["unit"] for i in instance_restarts(topology, hostvars, ["a", "b", "gone"], "a")] == ["sglang-p.service"]
    assert instance_restarts(topology, hostvars, ["a", "b"], "b") == []
    assert instance_restarts(topology, {}, ["a", "b"], "a") == []


def test_instance_restarts_own_and_phases_order_every_rank_of_a_changed_instance():
    from ansible_collections.pdserve.sglang.plugins.filter.sglang import instance_restarts
    topology = {"hosts": {
        "a": {"prefill": [{"name": "p", "unit": "sglang-p.service", "nodes": ["a", "b"], "node_rank": 0}], "decode": []},
        "b": {"prefill": [{"name": "p", "unit": "sglang-p.service", "nodes": ["a", "b"], "node_rank": 1}], "decode": []},
    }}
    hostvars = {"a": {"__sglang_server_written": {"skipped": True}},
                "b": {"__sglang_server_written": {"restarts_left": [{"unit": "sglang-p.service", "reasons": ["x"]}]}}}
    assert [i["unit"] for i in instance_restarts(topology, hostvars, ["a", "b"], "b", own=True)] == ["sglang-p.service"]
    a = instance_restarts(topology, hostvars, ["a", "b"], "a", own=True, phases=True)
    b = instance_restarts(topology, hostvars, ["a", "b"], "b", own=True, phases=True)
    assert [i["rank"] for i in a["stop_rank0"]] == [0] and a["stop_others"] == []
    assert b["stop_rank0"] == [] and [i["rank"] for i in b["stop_others"]] == [1]
    assert len(a["start"]) == len(b["start"]) == 1


def test_run_stops_rank0_then_the_others_then_starts_all_and_the_handler_leaves_them():
    """The order holds across hosts only as three tasks in that order (each ends on every host before the next)."""
    import yaml
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "sglang_server")
    with open(os.path.join(root, "tasks", "run.yml")) as handle:
        tasks = yaml.safe_load(handle)
    steps = [(t["ansible.builtin.systemd_service"]["state"], t["loop"]) for t in tasks
             if "__sglang_server_rank_restarts" in str(t.get("loop"))]
    assert steps == [("stopped", "{{ __sglang_server_rank_restarts.stop_rank0 }}"),
                     ("stopped", "{{ __sglang_server_rank_restarts.stop_others }}"),
                     ("started", "{{ __sglang_server_rank_restarts.start }}")]
    with open(os.path.join(root, "handlers", "main.yml")) as handle:
        handler = yaml.safe_load(handle)[0]
    assert "rejectattr('unit', 'in'" in handler["loop"] and "own=true" in handler["loop"]


def test_precompile_line_names_the_run_of_a_loop_result():
    run = {"name": "decode-0"}
    done = {"item": {"item": run, "differs": ["command"]}, "rc": 0, "stdout": "Begin DeepGEMM Kernels compilation...",
            "stderr": "[t] SGLang emulator: compile caches cold: compiled 4 of 4 DeepGEMM kernel groups and 1 JIT module "
                      "in 2.00 s (deep_gemm=/d, jit=/j, all cached now: True)"}
    assert F.precompile_line(done) == ("decode-0: precompiled: compile caches cold: compiled 4 of 4 DeepGEMM kernel "
                                       "groups and 1 JIT module in 2.00 s (deep_gemm=/d, jit=/j, all cached now: True)")
    assert F.precompile_line({"item": {"item": run}, "skipped": True}) == "decode-0: skipped"
    failed = {"item": {"item": run}, "rc": 1, "stdout": "", "stderr": "x\nTimeoutError: DeepGEMM Kernels compilation timeout."}
    assert F.precompile_line(failed).startswith("decode-0: sglang.compile_deep_gemm failed (rc 1): x | TimeoutError")


def test_precompile_failures_names_only_the_failed_runs():
    ok = {"item": {"item": {"name": "prefill-0", "unit": "sglang-precompile-prefill-0.service"}}, "rc": 0,
          "stdout": "DeepGEMM Kernels compilation finished successfully."}
    failed = {"item": {"item": {"name": "decode-0", "unit": "sglang-precompile-decode-0.service"}}, "rc": 1,
              "stdout": "", "stderr": "x\nTimeoutError: DeepGEMM Kernels compilation timeout."}
    skipped = {"item": {"item": {"name": "decode-1"}}, "skipped": True}
    assert F.precompile_failures([ok, skipped], "gpu1", "p") == []
    (msg,) = F.precompile_failures([ok, failed, skipped], "gpu1", "before its first start")
    assert msg.startswith("DeepGEMM precompile of decode-0 on gpu1 failed before its first start: "
                          "sglang.compile_deep_gemm failed (rc 1): x | TimeoutError")
    assert "journalctl -u sglang-precompile-decode-0.service" in msg


def test_precompile_runs_keys_the_record_by_the_instances_gpus():
    run = {"name": "p", "unit": "sglang-p.service", "precompile": {
        "name": "p", "unit": "sglang-precompile-p.service", "command": ["python", "-m", "sglang.compile_deep_gemm"],
        "properties": [], "record": "/c/p/pdserve-precompile.json", "gpus": [1], "inputs": {"command": [], "env": {}}}}
    gpus = {"gpus": [{"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0"},
                     {"index": 1, "name": "NVIDIA B200", "compute_capability": "10.0"}]}
    (entry,) = F.precompile_runs([run], ["p"], 60, gpus)
    assert entry["inputs"]["gpus"] == ["1: NVIDIA B200 (10.0)"] and entry["unit_of"] == "sglang-p.service"
    assert F.precompile_runs([run], ["p"], 60)[0]["inputs"]["gpus"] == ["GPUs not read"]


def test_precompile_runs_of_instances_over_several_hosts_come_first_by_name():
    """Every node runs its precompiles one after the other: the spanning instances first and in one order everywhere,
    so no node compiles another instance while a rank 0 waits for it (opposite orders would wait for each other)."""
    def unit(name, spans):
        return {"name": name, "unit": "sglang-%s.service" % name, "precompile": {
            "name": name, "unit": "sglang-precompile-%s.service" % name, "command": ["python"], "properties": [],
            "record": "/c/%s/r.json" % name, "gpus": [], "inputs": {"command": [], "env": {}}, "spans": spans}}
    units = [unit("p-0", False), unit("z-1", True), unit("a-9", False), unit("b-2", True)]
    runs = F.precompile_runs(units, ["p-0", "z-1", "a-9", "b-2"], 60)
    assert [r["name"] for r in runs] == ["b-2", "z-1", "p-0", "a-9"]


def test_precompile_wanted_refuses_an_unknown_setting():
    assert F.precompile_wanted("auto", {"gpus": [{"compute_capability_major": 9}]}) is True
    assert F.precompile_wanted("auto", None) is False and F.precompile_wanted("always") is True
    with pytest.raises(AnsibleFilterError, match="auto, always or never"):
        F.precompile_wanted("yes", {})
