# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""serving_preflight run through main() with exit_json/fail_json patched.

Recorded mode judges the inventories against the synthetic 8-GPU Blackwell capture (a real nvidia-smi wrapper
around tests/unit/fixtures/gpu/fake_nvidia_smi.py, and the capture's sysfs tree); real mode is run against this
machine with the socket, address and disk readers replaced, so each check's wiring is seen."""

import getpass
import json
import os
import stat
import sys

import pytest

from ansible.module_utils import basic
from ansible_collections.pdserve.sglang.plugins.module_utils.host import observe as host_observe
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from ansible_collections.pdserve.sglang.plugins.modules import serving_preflight
from serving_support import TOPOLOGY_DEFAULTS  # noqa: E402  pylint: disable=wrong-import-position

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "gpu"))
FAKE = os.path.join(FIXTURES, "fake_nvidia_smi.py")
HOST_CHECKS = ["listening sockets", "bind addresses", "paths", "numactl", "/dev/nvidia-uvm", "free disk"]


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A PATH with nothing NVIDIA on it, and no default search directories."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(serving_preflight, "NVIDIA_SMI_DIRS", [])
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: None)
    monkeypatch.setenv("FAKE_NVIDIA_SMI_LOG", str(tmp_path / "calls.log"))
    return tmp_path


def fake_smi(tmp_path, capture):
    path = tmp_path / "nvidia-smi"
    path.write_text('#!/bin/sh\nexec "%s" "%s" "%s" "$@"\n' % (sys.executable, FAKE, os.path.join(FIXTURES, capture)))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def plain(value):
    return json.loads(json.dumps(value))


@pytest.fixture
def blackwell(inventory, inventory_model):
    """(topology, model) of inventories/blackwell; topology(prefill=..., decode=...) changes the instances."""
    def get(prefill=None, decode=None):
        host_vars, groups = inventory("blackwell")
        host_vars["blackwell"]["sglang_prefill_instances"][0].update(prefill or {})
        host_vars["blackwell"]["sglang_decode_instances"][0].update(decode or {})
        return plain(build_topology(host_vars, groups, defaults=TOPOLOGY_DEFAULTS)), plain(inventory_model("blackwell"))
    return get


@pytest.fixture
def run(module_runner):
    """run(args, check_mode=False) -> (result, failed) of serving_preflight.main()."""
    return lambda args, check_mode=False: module_runner(serving_preflight.main, args, check_mode)


def recorded_args(tmp_path, gpu_sysfs, topology, model, **extra):
    args = {"host": "blackwell", "topology": topology, "model": model, "sysfs_root": gpu_sysfs("blackwell8x"),
            "nvidia_smi_path": fake_smi(tmp_path, "blackwell8x"), "gpu_facts": "always",
            "paths": [{"var": "sglang_server_model_path", "path": "/models/DeepSeek-V4-Flash"}]}
    args.update(extra)
    return args


# --- recorded data ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("check_mode", [False, True])
def test_blackwell_inventory_passes_on_the_blackwell8x_capture(env, run, gpu_sysfs, blackwell, check_mode):
    topology, model = blackwell()
    root = gpu_sysfs("blackwell8x")
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model), check_mode)
    assert failed is False, result
    assert result["changed"] is False
    assert result["problems"] == [] and result["problem_lines"] == []
    assert result["recorded"] is True
    assert result["instances"] == ["prefill", "decode"] and result["router"] is True
    assert result["numa_nodes"] == [0, 1]
    assert [(g["index"], g["numa_node"]) for g in result["gpus"]] == [(i, 0 if i < 4 else 1) for i in range(8)]
    assert {g["name"] for g in result["gpus"]} == {"NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    assert {g["compute_capability"] for g in result["gpus"]} == {"12.0"}
    # The checks that need the real host are listed, each with the reason; the model path was not looked for.
    assert result["not_checked"] == [{"check": check, "reason": "recorded data (sysfs_root is %s)" % root} for check in HOST_CHECKS]


def test_a_wrong_layout_fails_listing_every_problem(env, run, gpu_sysfs, blackwell):
    topology, model = blackwell(prefill={"numa_node": 1}, decode={"gpus": [4, 5, 6, 8]})
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model))
    assert failed is True
    expected = [
        ("sglang_prefill_instances[prefill].numa_node", "is 1 but GPU 0 is attached to NUMA node 0"),
        ("sglang_prefill_instances[prefill].numa_node", "is 1 but GPU 1 is attached to NUMA node 0"),
        ("sglang_prefill_instances[prefill].numa_node", "is 1 but GPU 2 is attached to NUMA node 0"),
        ("sglang_prefill_instances[prefill].numa_node", "is 1 but GPU 3 is attached to NUMA node 0"),
        ("sglang_decode_instances[decode].gpus", "uses GPU 8 but the host has GPU index(es) [0, 1, 2, 3, 4, 5, 6, 7]"),
    ]
    assert [(p["variable"], p["message"]) for p in result["problems"]] == expected
    assert all(p["host"] == "blackwell" and p["fix"] for p in result["problems"])
    assert result["msg"].startswith("preflight found 5 problem(s):\n- host blackwell: ")
    for variable, message in expected:
        assert "host blackwell: %s: %s; " % (variable, message) in result["msg"]
    assert result["problem_lines"] == result["msg"].split("\n- ")[1:]
    assert result["changed"] is False and len(result["not_checked"]) == len(HOST_CHECKS)


def test_a_misspelled_instance_variable_is_refused_naming_host_variable_and_fix(env, run, gpu_sysfs, inventory,
                                                                                inventory_model):
    """A host of sglang_decode whose decode instances sit under a misspelled name: refused, never a silent prune."""
    host_vars, groups = inventory("blackwell")
    host_vars["blackwell"]["sglang_decode_instanses"] = host_vars["blackwell"].pop("sglang_decode_instances")
    topology = plain(build_topology(host_vars, groups, defaults=TOPOLOGY_DEFAULTS))
    result, failed = run(recorded_args(env, gpu_sysfs, topology, plain(inventory_model("blackwell"))))
    assert failed is True
    found = [p for p in result["problems"] if p["host"] == "blackwell" and p["variable"] == "sglang_decode_instances"]
    assert found and "declares no decode instance" in found[0]["message"], result["problems"]
    assert "did you mean 'sglang_decode_instanses'?" in found[0]["message"]
    assert "set sglang_decode_instances for blackwell" in found[0]["fix"]
    assert "host blackwell: sglang_decode_instances: blackwell is a host of group sglang_decode" in result["msg"]


def test_numa_node_the_capture_does_not_have(env, run, gpu_sysfs, blackwell):
    topology, model = blackwell(decode={"numa_node": 2})
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model, gpu_facts="never"))
    assert failed is True
    assert [(p["variable"], p["message"]) for p in result["problems"]] == [
        ("sglang_decode_instances[decode].numa_node", "is 2 but the host has NUMA node(s) [0, 1]")]
    assert result["not_checked"][0] == {"check": "GPUs", "reason": "gpu_facts is never"}
    assert result["gpus"] == []


def test_inventory_and_model_problems_are_reported_too(env, run, gpu_sysfs, blackwell):
    topology, model = blackwell(decode={"gpus": [3, 4, 5, 6], "mem_fraction_static": 1.5})
    model["reasoning_parser"] = "deepseekv4"
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model))
    assert failed is True
    assert [p["variable"] for p in result["problems"]] == [
        "sglang_decode_instances[decode].mem_fraction_static",
        "sglang_decode_instances[decode].gpus",
        "sglang_model_reasoning_parser",
        "sglang_decode_instances[decode].numa_node",
    ]


def test_model_omitted_skips_the_model_checks(env, run, gpu_sysfs, blackwell):
    topology, _model = blackwell()
    args = recorded_args(env, gpu_sysfs, topology, None)
    del args["model"]
    result, failed = run(args)
    assert failed is False and result["problems"] == []


def test_fail_on_problems_false_returns_them(env, run, gpu_sysfs, blackwell):
    topology, model = blackwell(decode={"gpus": [4, 5, 6, 8]})
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model, fail_on_problems=False))
    assert failed is False
    assert "msg" not in result
    assert [p["variable"] for p in result["problems"]] == ["sglang_decode_instances[decode].gpus"]
    assert result["problem_lines"] == [
        "host blackwell: sglang_decode_instances[decode].gpus: uses GPU 8 but the host has GPU index(es) [0, 1, 2, 3, 4, 5, 6, 7]; "
        "use GPUs the host has (nvidia-smi -L)"]


def test_multinode_router_host_has_no_gpu_checks(env, run, gpu_sysfs, inventory):
    topology = plain(build_topology(*inventory("multinode"), defaults=TOPOLOGY_DEFAULTS))
    result, failed = run({"host": "router-1", "topology": topology, "sysfs_root": gpu_sysfs("blackwell8x"),
                          "nvidia_smi_path": "/nonexistent/nvidia-smi", "gpu_facts": "always"})
    assert failed is False, result
    assert result["instances"] == [] and result["router"] is True and result["gpus"] == []
    assert [s["check"] for s in result["not_checked"]] == HOST_CHECKS


def test_a_cross_host_problem_is_reported_by_the_host_that_must_change(env, run, gpu_sysfs, inventory):
    host_vars, groups = inventory("multinode")
    del host_vars["gpu-decode-1"]["sglang_server_host"]  # decode on loopback, the router elsewhere
    topology = plain(build_topology(host_vars, groups, defaults=TOPOLOGY_DEFAULTS))
    args = {"topology": topology, "sysfs_root": gpu_sysfs("blackwell8x"), "nvidia_smi_path": fake_smi(env, "blackwell8x")}
    result, failed = run(dict(args, host="gpu-decode-1"))
    assert failed is True
    assert [p["variable"] for p in result["problems"]] == ["sglang_decode_instances[decode-0].host"]
    assert "the router on router-1 cannot reach http://127.0.0.1:30002" in result["msg"]
    result, failed = run(dict(args, host="router-1"))
    assert failed is False and result["problems"] == []


# --- GPU discovery ------------------------------------------------------------------------------------------

def test_gpu_facts_auto_without_nvidia_smi_skips_the_gpu_checks(env, run, gpu_sysfs, blackwell):
    topology, model = blackwell(decode={"gpus": [4, 5, 6, 8]})
    args = recorded_args(env, gpu_sysfs, topology, model, gpu_facts="auto")
    del args["nvidia_smi_path"]
    result, failed = run(args)
    assert failed is False, result
    assert result["gpus"] == []
    gpu_skip, = [s for s in result["not_checked"] if s["check"] == "GPUs"]
    assert gpu_skip["reason"].startswith("no nvidia-smi (searched PATH and ")
    assert "GPU checks apply once the driver lists GPUs" in gpu_skip["reason"]


def test_gpu_facts_always_without_nvidia_smi_is_a_problem(env, run, gpu_sysfs, blackwell):
    topology, model = blackwell()
    args = recorded_args(env, gpu_sysfs, topology, model, gpu_facts="always")
    del args["nvidia_smi_path"]
    result, failed = run(args)
    assert failed is True
    problem, = result["problems"]
    assert problem["host"] == "blackwell" and problem["variable"] == "sglang_server_gpu_facts"
    assert problem["message"].startswith("is 'always' but no GPU can be listed: no nvidia-smi")
    assert "nvidia_driver" in problem["fix"]
    assert "GPUs" not in [s["check"] for s in result["not_checked"]]


def test_nvidia_smi_path_that_is_not_executable(env, run, gpu_sysfs, blackwell):
    topology, model = blackwell()
    missing = str(env / "no-such-nvidia-smi")
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model, gpu_facts="auto", nvidia_smi_path=missing))
    assert failed is False
    assert [s["reason"] for s in result["not_checked"] if s["check"] == "GPUs"][0].startswith("%s is not executable" % missing)
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model, gpu_facts="always", nvidia_smi_path=missing))
    assert failed is True and result["problems"][0]["message"].startswith("is 'always' but no GPU can be listed: %s is not executable" % missing)


@pytest.mark.parametrize("mode, gpu_facts, failed_expected", [("driver_failure", "auto", False), ("driver_failure", "always", True),
                                                              ("no_devices", "auto", False), ("no_devices", "always", True)])
def test_nvidia_smi_that_fails(env, run, gpu_sysfs, blackwell, monkeypatch, mode, gpu_facts, failed_expected):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_MODE", mode)
    topology, model = blackwell()
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model, gpu_facts=gpu_facts))
    assert failed is failed_expected
    assert result["gpus"] == []
    if failed_expected:
        assert [p["variable"] for p in result["problems"]] == ["sglang_server_gpu_facts"]
    else:
        assert [s["check"] for s in result["not_checked"]] == ["GPUs"] + HOST_CHECKS


# --- bad input ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("topology, missing", [({}, "hosts"), ({"hosts": {}, "workers": {}, "routers": []}, "problems")])
def test_a_topology_that_is_not_the_filters_result(env, run, topology, missing):
    result, failed = run({"host": "blackwell", "topology": topology})
    assert failed is True
    assert result["msg"] == "topology has no %r: pass the result of the pdserve.sglang.serving_topology filter" % missing


def test_a_topology_that_is_not_a_mapping(env, run):
    result, failed = run({"host": "blackwell", "topology": ["blackwell"]})
    assert failed is True and "topology" in result["msg"]


def test_host_is_required(env, run, blackwell):
    topology, _model = blackwell()
    result, failed = run({"topology": topology})
    assert failed is True and "host" in result["msg"]


def test_unknown_gpu_facts_choice(env, run, blackwell):
    topology, _model = blackwell()
    result, failed = run({"host": "blackwell", "topology": topology, "gpu_facts": "sometimes"})
    assert failed is True and "gpu_facts" in result["msg"]


# --- the real host (readers replaced) ---------------------------------------------------------------------

@pytest.fixture
def local(inventory, inventory_model):
    host_vars, groups = inventory("local")
    return plain(build_topology(host_vars, groups, defaults=TOPOLOGY_DEFAULTS)), plain(inventory_model("local"))


def real_args(tmp_path, topology, model, **extra):
    numactl = tmp_path / "numactl"
    numactl.write_text("#!/bin/sh\n")
    numactl.chmod(0o755)
    model_dir = tmp_path / "model"
    model_dir.mkdir(exist_ok=True)
    args = {"host": "pdserve-local", "topology": topology, "model": model, "gpu_facts": "never",
            "server": {"numactl_path": str(numactl), "no_new_privileges": False, "home": str(tmp_path), "min_free_gb": 0},
            "paths": [{"var": "sglang_server_model_path", "path": str(model_dir)}], "users": [getpass.getuser()]}
    args.update(extra)
    return args


@pytest.fixture
def observe(monkeypatch):
    """Replace the readers of the real host; returns what they were asked."""
    asked = {"addresses": []}
    state = {"listeners": [], "local": {}}

    def address_is_local(address):
        asked["addresses"].append(address)
        return state["local"].get(address, (True, None))
    monkeypatch.setattr(host_observe, "listeners", lambda root="/": list(state["listeners"]))
    monkeypatch.setattr(host_observe, "address_is_local", address_is_local)
    state["asked"] = asked
    return state


def test_real_host_that_passes(env, run, local, observe):
    observe["listeners"] = [{"address": "127.0.0.1", "port": 30000, "uid": 0, "owners": [{"pid": "5", "unit": "sglang-prefill.service"}]},
                            {"address": "0.0.0.0", "port": 22, "uid": 0, "owners": [{"pid": "1", "unit": "ssh.service"}]}]
    topology, model = local
    result, failed = run(real_args(env, topology, model))
    assert failed is False, result
    assert result["recorded"] is False
    assert result["not_checked"] == [{"check": "GPUs", "reason": "gpu_facts is never"}]
    assert observe["asked"]["addresses"] == ["127.0.0.1"]
    assert result["instances"] == ["prefill", "decode"] and result["router"] is True


def test_real_host_problems_of_every_host_check(env, run, local, observe):
    topology, model = local
    observe["listeners"] = [{"address": "127.0.0.1", "port": 30002, "uid": 0, "owners": [{"pid": "4242", "unit": "none"}]}]
    observe["local"] = {"127.0.0.1": (False, "is not an address of this host")}
    args = real_args(env, topology, model)
    args["paths"].append({"var": "sglang_server_chat_template", "path": str(env / "missing.jinja")})
    args["server"].update(numactl_path=str(env / "no-numactl"), min_free_gb=1e9)
    result, failed = run(args)
    assert failed is True
    assert [p["variable"] for p in result["problems"]] == [
        "sglang_decode_instances[decode].port",
        "sglang_prefill_instances[prefill].host",
        "sglang_prefill_instances[prefill].dist_init_host",
        "sglang_decode_instances[decode].host",
        "sglang_decode_instances[decode].dist_init_host",
        "sglang_router_prometheus_host",
        "sglang_server_chat_template",
        "sglang_server_numa_binding",
        "sglang_server_min_free_gb",
    ]
    assert "pid 4242 (not a systemd service)" in result["problems"][0]["message"]
    assert "%s, which does not exist" % (env / "missing.jinja") in result["problems"][6]["message"]


def test_real_host_socket_owner_unknown_and_not_the_service_user(env, run, local, observe):
    topology, model = local
    observe["listeners"] = [{"address": "127.0.0.1", "port": 30000, "uid": 4321, "owners": []}]
    result, failed = run(real_args(env, topology, model, users=["no-such-user-pdserve"]))
    assert failed is True
    assert [p["variable"] for p in result["problems"]] == ["sglang_prefill_instances[prefill].port"]
    assert "a process of uid 4321 that is not the service user" in result["problems"][0]["message"]
    observe["listeners"] = [{"address": "127.0.0.1", "port": 30000, "uid": os.getuid(), "owners": []}]
    result, failed = run(real_args(env, topology, model))
    assert failed is False, result


def test_real_host_check_ports_false(env, run, local, observe, monkeypatch):
    def boom(root="/"):
        raise AssertionError("listeners read although check_ports is false")
    monkeypatch.setattr(host_observe, "listeners", boom)
    topology, model = local
    result, failed = run(real_args(env, topology, model, check_ports=False))
    assert failed is False, result
    assert {"check": "listening sockets", "reason": "check_ports is false"} in result["not_checked"]


def test_real_host_numactl_not_needed_with_sglang_binding(env, run, local, observe):
    topology, model = local
    args = real_args(env, topology, model)
    args["server"].update(numactl_path=str(env / "no-numactl"), numa_binding="sglang")
    result, failed = run(args)
    assert failed is False, result


def test_real_host_that_serves_nothing_reads_nothing(env, run, local, monkeypatch):
    def boom(*_args):
        raise AssertionError("read the host for a host that serves nothing")
    monkeypatch.setattr(host_observe, "listeners", boom)
    monkeypatch.setattr(host_observe, "address_is_local", boom)
    topology, model = local
    result, failed = run({"host": "monitor-1", "topology": topology, "model": model})
    assert failed is False, result
    assert result["problems"] == [] and result["not_checked"] == [] and result["instances"] == [] and result["router"] is False


def test_the_router_keys_travel_as_no_log_options_only():
    """-vvv prints a module's arguments and the host's journal logs them, but masks no_log options: the router role
    passes its two keys only as these (roles/sglang_router/tasks/preflight.yml takes them out of router_settings)."""
    spec = serving_preflight.argument_spec()
    assert spec["router_api_key"].get("no_log") is True
    assert spec["router_control_plane_api_key"].get("no_log") is True
    tasks = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "sglang_router", "tasks",
                              "preflight.yml"), encoding="utf-8").read()
    assert "rejectattr('key', 'in', ['api_key', 'control_plane_api_key'])" in tasks


TLS_PROBLEM = {"host": "blackwell", "variable": "sglang_router_tls_key_src", "message": "/x/router.key is not the key of "
               "the certificate /x/router.pem", "fix": "give the key the certificate was issued for"}


@pytest.mark.parametrize("scope", ["all", "settings"])
def test_problems_found_on_the_controller_are_reported_with_the_host_s_own(env, run, gpu_sysfs, blackwell, scope):
    topology, model = blackwell()
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model, problems=[TLS_PROBLEM], scope=scope))
    assert failed is True and result["problems"] == [TLS_PROBLEM]
    assert "sglang_router_tls_key_src: /x/router.key is not the key" in result["msg"]
    result, failed = run(recorded_args(env, gpu_sysfs, topology, model, scope=scope))
    assert failed is False and result["problems"] == []
