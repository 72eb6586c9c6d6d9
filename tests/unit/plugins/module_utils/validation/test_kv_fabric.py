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
