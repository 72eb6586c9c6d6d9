# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The KV fabric probe's reading of UCX_PROTO_INFO, on real captures: the H200 device machine (NIXL 1.3.0's bundled
UCX, two agents in one process, tests/device/kv_fabric.py) and this project's 2-core VM (host memory only)."""

import json
import pathlib

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.validation import kv_fabric as F

CAPTURES = pathlib.Path(__file__).resolve().parents[3] / "fixtures" / "gpu" / "h200x1_kv_fabric"


def capture(name):
    return (CAPTURES / name).read_text(encoding="utf-8")


def test_gpu_memory_between_two_agents_went_through_cuda_ipc_on_the_h200():
    """UCX printed software emulation for host-to-GPU tables too: only the GPU-to-GPU path between agents counts."""
    operations = F.proto_info(capture("vram.ucx.txt"))
    emulated = [op for op in operations if op["emulated"]]
    assert emulated and {(op["source"], op["destination"]) for op in emulated} == {("host", "cuda")}
    figures = F.path_figures(capture("vram.ucx.txt"), "VRAM")
    assert figures["transports"] == ["cuda_ipc"] and not figures["emulated"]
    assert {op["scope"] for op in figures["operations"]} == {"intra-node"}
    assert all("from cuda/GPU0 to cuda/dev[0]" in op["operation"] for op in figures["operations"])


@pytest.mark.parametrize("name", ["dram.ucx.txt", "cpu-vm-dram.ucx.txt"])
def test_host_memory_between_two_agents_on_one_host_went_through_cma(name):
    figures = F.path_figures(capture(name), "DRAM")
    assert figures["transports"] == ["cma"] and not figures["emulated"]
    # The agents' own loopback tables (scope "self"; on the H200 cuda_copy for short writes) are not the path.
    assert {op["scope"] for op in F.proto_info(capture(name)) if op["data"]} >= {"self", "intra-node"}
    if name == "dram.ucx.txt":
        assert "cuda_copy" in F.transports(F.proto_info(capture(name)))


def test_gpu_memory_staged_through_host_memory_is_a_finding():
    """As NIXL 1.5.1 was measured doing on this machine kind: the GPU-to-GPU row as software emulation."""
    text = capture("vram.ucx.txt").replace("| zero-copy                                               | cuda_ipc/cuda |",
                                           "| software emulation                                      | tcp/lo        |")
    assert text != capture("vram.ucx.txt")
    figures = F.path_figures(text, "VRAM")
    assert figures["transports"] == ["tcp"] and figures["emulated"]
    result = dict(figures, memory="VRAM", directions=[{"from": "a", "to": "b", "intact": True, "gbps": 0.41}])
    problems = F.judge(result, expect=["cuda_ipc", "cuda_copy"])
    assert any("software emulation" in p for p in problems)
    assert any("through tcp" in p and "cuda_ipc" in p for p in problems)


def test_the_judge_names_corruption_a_slow_direction_and_an_unexpected_transport():
    result = {"memory": "DRAM", "transports": ["tcp"], "emulated": False,
              "directions": [{"from": "a", "to": "b", "intact": False, "gbps": 4.4},
                             {"from": "b", "to": "a", "intact": True, "gbps": 0.9}]}
    problems = F.judge(result, expect=["rc_mlx5"], min_gbps=2.0)
    assert problems == ["a -> b: the data did not arrive intact",
                        "b -> a: 0.90 GB/s, below the floor of 2.00 GB/s",
                        "UCX moved the data through tcp, which the inventory does not expect (expected: rc_mlx5)"]
    assert F.judge(dict(result, directions=result["directions"][1:], transports=["rc_mlx5"]), expect=["rc_mlx5"]) == []


def test_a_transport_it_could_not_learn_is_said_rather_than_passed():
    result = {"memory": "VRAM", "transports": [], "emulated": False, "directions": []}
    assert F.judge(result) == []
    [problem] = F.judge(result, expect=["cuda_ipc"])
    assert "named no transport for VRAM" in problem and "could not be checked" in problem
    assert F.path_figures("no UCX lines at all\n", "VRAM") == {"operations": [], "transports": [], "emulated": False}


@pytest.mark.parametrize("case", ["dram", "vram", "vram-cuda-tls"])
def test_the_device_runs_figures_are_what_the_parser_reads_from_their_own_ucx_lines(case):
    """The JSON the device run wrote and its UCX lines agree, and the GPU figures are GPU speeds, not emulation's."""
    result = json.loads(capture(case + ".json"))
    memory = "VRAM" if case.startswith("vram") else "DRAM"
    assert result["memory"] == memory and result["problems"] == []
    assert {k: result[k] for k in ("transports", "emulated")} == {
        k: F.path_figures(capture(case + ".ucx.txt"), memory)[k] for k in ("transports", "emulated")}
    assert all(direction["intact"] for direction in result["directions"]) and len(result["directions"]) == 2
    floor = 100.0 if memory == "VRAM" else 1.0
    assert min(direction["gbps"] for direction in result["directions"]) > floor


GOOD = {"memory": "VRAM", "device": 0, "size_mib": 64, "rounds": 4, "timeout": 120, "expect_transports": ["rc_mlx5"],
        "min_gbps": 10.0, "python": "/opt/sglang/venv/bin/python", "environment": {"UCX_NET_DEVICES": "mlx5_0:1"},
        "user": "sglang"}


def test_good_settings_have_no_problem():
    assert F.settings_problems("h", GOOD) == []
    assert F.settings_problems("h", dict(GOOD, memory="DRAM", expect_transports=[], min_gbps=0, environment={})) == []


@pytest.mark.parametrize("key, value", [
    ("memory", "HBM"), ("memory", None), ("size_mib", 0), ("size_mib", 70000), ("size_mib", "64"), ("size_mib", True),
    ("rounds", 0), ("device", -1), ("timeout", 0), ("timeout", 4000), ("timeout", "fast"), ("min_gbps", -1),
    ("min_gbps", float("nan")), ("expect_transports", "tcp"), ("expect_transports", ["TCP"]),
    ("expect_transports", ["rc mlx5"]), ("python", "python3"), ("python", "/opt/x/bin/python; rm -rf /"),
    ("python", "/opt/x\n/python"), ("environment", ["UCX_TLS=tcp"]), ("user", ""), ("user", None),
    ("user", "sglang; id"), ("user", "-rf"), ("user", "a" * 40),
])
def test_each_wrong_setting_is_named_with_a_fix(key, value):
    [problem] = F.settings_problems("gpu-decode-1", dict(GOOD, **{key: value}))
    assert problem["host"] == "gpu-decode-1" and problem["variable"] == "sglang_kv_fabric_" + key
    assert problem["message"] and problem["fix"]


@pytest.mark.parametrize("environment, variable", [
    ({"ucx tls": "tcp"}, "sglang_kv_fabric_environment.ucx tls"),
    ({"UCX_TLS": "tcp\nX=1"}, "sglang_kv_fabric_environment.UCX_TLS"),
    ({"UCX_TLS": ["tcp"]}, "sglang_kv_fabric_environment.UCX_TLS"),
])
def test_a_wrong_environment_variable_is_named_by_its_name(environment, variable):
    """The probe's environment is judged as every environment of the collection (problems.env_problems)."""
    [problem] = F.settings_problems("gpu-decode-1", dict(GOOD, environment=environment))
    assert problem["host"] == "gpu-decode-1" and problem["variable"] == variable
    assert problem["message"] and problem["fix"]


@pytest.mark.parametrize("message, parsed", [
    (b"pdserve-fabric-finished:0:1", (0, True)), (b"pdserve-fabric-finished:3:0", (3, False)),
    (b"pdserve-fabric-finished:x:1", (None, False)), (b"pdserve-fabric-finished:1", (None, False)),
    (b"pdserve-fabric-finished:1:2", (None, False)), (b"pdserve-fabric-done:0", (None, False)),
])
def test_an_initiators_finished_notification_names_its_slot_and_whether_it_wrote(message, parsed):
    assert F._finished_slot(message) == parsed


def test_the_target_keeps_its_buffers_until_every_initiator_finished_its_read_back():
    """Done (the WRITE arrived) is not the end: the initiator still READs; only its finished lets the target go."""
    assert not F._all_finished(2, {}, {0: {}, 1: {}})  # both WRITEs in, both READs still to come
    assert not F._all_finished(2, {0: True}, {0: {}, 1: {}})
    assert F._all_finished(2, {0: True, 1: True}, {0: {}, 1: {}})
    # finished before its done notification was read: wait for it; an initiator whose WRITE failed sends none
    assert not F._all_finished(1, {0: True}, {})
    assert F._all_finished(1, {0: False}, {})


PAIR = pathlib.Path(__file__).resolve().parents[3] / "fixtures" / "gpu" / "h200x1_kv_fabric_pair"


def test_a_read_table_says_its_memory_the_other_way_round():
    [read] = F.proto_info("| ucp_context_0 intra-node cfg#2 | remote memory read by ucp_get*(multi) into cuda/GPU0 from "
                          "host memory |\n|  0..inf | software emulation | tcp/lo |")
    assert (read["source"], read["destination"], read["data"], read["emulated"]) == ("host", "cuda", True, True)


def test_the_h200_pair_read_gpu_memory_back_through_software_emulation_and_the_judge_names_it():
    """Two processes on the H200 (kv_fabric_user.py): the WRITE went through cuda_ipc, the READ back through software
    emulation over tcp at 0.45 GB/s. The reader missed the READ's table then and called the pair clean."""
    said = json.loads((PAIR / "vram-initiator.json").read_text(encoding="utf-8"))
    assert said["transports"] == ["cuda_ipc"] and said["emulated"] is False  # what the old reader reported
    figures = F.path_figures((PAIR / "vram-initiator.ucx-tail.txt").read_text(encoding="utf-8"), "VRAM")
    by_verb = {op["operation"].split(" by ")[0]: op for op in figures["operations"]}
    assert by_verb["remote memory write"]["transports"] == ["cuda_ipc"] and not by_verb["remote memory write"]["emulated"]
    assert by_verb["remote memory read"]["devices"] == ["tcp/lo"] and by_verb["remote memory read"]["emulated"]
    assert figures["emulated"] and figures["transports"] == ["cuda_ipc", "tcp"]
    [problem] = F.judge(dict(said, **figures))
    assert problem == ("GPU memory moved by UCX's software emulation (staged through host memory): the READ (ucp_get) "
                       "over tcp/lo")
    assert [d["gbps"] for d in said["directions"]] == [473.351, 0.446]
    assert said["user"] == "nobody"


def test_the_h200_pair_moved_host_memory_through_tcp_both_ways_which_is_no_finding():
    """tcp has no remote read of its own: UCX emulates the READ of host memory with messages, which stages nothing
    (it is host memory already), so the judge passes it."""
    said = json.loads((PAIR / "dram-initiator.json").read_text(encoding="utf-8"))
    figures = F.path_figures((PAIR / "dram-initiator.ucx-tail.txt").read_text(encoding="utf-8"), "DRAM")
    assert figures["transports"] == ["tcp"] and figures["emulated"]
    assert [op["emulated"] for op in figures["operations"] if "ucp_get" in op["operation"]] == [True]
    assert F.judge(dict(said, **figures)) == [] and said["user"] == "nobody"
