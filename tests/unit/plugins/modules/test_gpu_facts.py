# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpu_facts run through main() with exit_json/fail_json patched (community.grafana style).

nvidia-smi is a real executable here: a wrapper around tests/unit/fixtures/gpu/fake_nvidia_smi.py
that replays a capture directory, so the module's own run_command path is exercised.
"""

import json
import os
import stat
import sys

import pytest

from ansible.module_utils import basic
from ansible_collections.pdserve.sglang.plugins.modules import gpu_facts

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "gpu"))
FAKE = os.path.join(FIXTURES, "fake_nvidia_smi.py")


@pytest.fixture
def module_env(monkeypatch, tmp_path):
    """Patched AnsibleModule, a PATH with nothing NVIDIA on it, and collected warnings."""
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    # Neither the default search directories of this machine nor of a GPU machine may leak in.
    monkeypatch.setattr(gpu_facts, "NVIDIA_SMI_DIRS", [])
    monkeypatch.setattr(gpu_facts, "NVCC_DIRS", [])
    monkeypatch.setenv("FAKE_NVIDIA_SMI_LOG", str(tmp_path / "calls.log"))
    return warnings


def wrapper(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def fake_smi(tmp_path, capture):
    return wrapper(tmp_path, "nvidia-smi", 'exec "%s" "%s" "%s" "$@"' % (sys.executable, FAKE, os.path.join(FIXTURES, capture)))


def fake_nvcc(tmp_path, capture):
    # PATH holds nothing else in these tests, so no `cat`: Python prints the capture.
    script = "import sys; sys.stdout.write(open(sys.argv[1]).read())"
    return wrapper(tmp_path, "nvcc", 'exec "%s" -c "%s" "%s"' % (
        sys.executable, script, os.path.join(FIXTURES, capture, "nvcc-version.txt")))


@pytest.fixture
def run(module_runner):
    """run(args) -> the result dict of gpu_facts.main() (it carries failed=True on failure)."""
    return lambda args: module_runner(gpu_facts.main, args)[0]


@pytest.fixture
def sysfs(gpu_sysfs):
    """sysfs(capture) -> the capture's sysfs tree, built from its sysfs.txt."""
    return gpu_sysfs


def test_h200x2_real_captures(module_env, tmp_path, run, sysfs):
    result = run({
        "nvidia_smi_path": fake_smi(tmp_path, "h200x2"),
        "nvcc_path": fake_nvcc(tmp_path, "h200x2"),
        "sysfs_root": sysfs("h200x2"),
    })
    assert "failed" not in result
    assert result["changed"] is False
    assert result["gpu_count"] == 2
    assert result["gpu_present"] is True
    assert result["driver_version"] == "580.159.04"
    assert result["cuda_version"] == "13.0"
    assert result["cuda_toolkit_version"] == "13.0"
    assert [g["uuid"] for g in result["gpus"]] == [
        "GPU-d4e981e6-d71c-dafe-bf35-e55b6f1748a1",
        "GPU-6381a97b-8ee4-2791-1622-a04a7f65c339",
    ]
    for g in result["gpus"]:
        assert g["numa_node"] is None  # sysfs says -1 on this VM
        assert g["compute_capability"] == "9.0"
        assert g["sm"] == "sm_90"
        assert g["memory_total_mib"] == 143771
        assert g["local_cpus"] == list(range(32))
    assert result["gpus"][1]["pci_bus_id"] == "00000000:00:07.0"
    assert result["numa_nodes"] == [{"id": 0, "cpulist": "0-31", "cpus": list(range(32))}]
    assert module_env == []


def test_facts_mirror_the_plain_result(module_env, tmp_path, run, sysfs):
    result = run({"nvidia_smi_path": fake_smi(tmp_path, "h200x2"), "sysfs_root": sysfs("h200x2")})
    facts = result["ansible_facts"]
    assert facts["pdserve_gpus"] == result["gpus"]
    assert facts["pdserve_gpu_count"] == 2
    assert facts["pdserve_gpu_present"] is True
    assert facts["pdserve_gpu_driver_version"] == "580.159.04"
    assert facts["pdserve_cuda_version"] == "13.0"
    assert facts["pdserve_cuda_toolkit_version"] is None  # no nvcc anywhere
    assert facts["pdserve_numa_nodes"] == result["numa_nodes"]


def test_blackwell8x_synthetic_reference_host(module_env, tmp_path, run, sysfs):
    result = run({
        "nvidia_smi_path": fake_smi(tmp_path, "blackwell8x"),
        "nvcc_path": fake_nvcc(tmp_path, "blackwell8x"),
        "sysfs_root": sysfs("blackwell8x"),
    })
    gpus = result["gpus"]
    assert [g["index"] for g in gpus] == list(range(8))
    assert {g["name"] for g in gpus} == {"NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    assert {(g["compute_capability"], g["compute_capability_major"], g["compute_capability_minor"], g["sm"])
            for g in gpus} == {("12.0", 12, 0, "sm_120")}
    assert {g["memory_total_mib"] for g in gpus} == {97887}
    assert [g["numa_node"] for g in gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    node0 = list(range(0, 64)) + list(range(128, 192))
    node1 = list(range(64, 128)) + list(range(192, 256))
    assert all(g["local_cpus"] == node0 for g in gpus[:4])
    assert all(g["local_cpus"] == node1 for g in gpus[4:])
    assert gpus[7]["pci_bus_id"] == "00000000:DF:00.0"
    assert gpus[7]["pci_address"] == "0000:df:00.0"
    assert result["numa_nodes"] == [
        {"id": 0, "cpulist": "0-63,128-191", "cpus": node0},
        {"id": 1, "cpulist": "64-127,192-255", "cpus": node1},
    ]
    assert result["driver_version"] == "580.95.05"
    assert result["cuda_version"] == "13.0"  # the driver's CUDA ...
    assert result["cuda_toolkit_version"] == "12.9"  # ... and nvcc's, told apart


def test_found_on_path_when_no_path_given(module_env, monkeypatch, tmp_path, run, sysfs):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = fake_smi(bindir, "h200x2")
    fake_nvcc(bindir, "h200x2")
    monkeypatch.setenv("PATH", str(bindir))
    result = run({"sysfs_root": sysfs("h200x2")})
    assert result["nvidia_smi_path"] == smi
    assert result["nvcc_path"] == str(bindir / "nvcc")
    assert result["gpu_count"] == 2
    assert result["cuda_toolkit_version"] == "13.0"


def test_check_mode_runs_only_read_commands(module_env, tmp_path, run, sysfs):
    result = run({
        "nvidia_smi_path": fake_smi(tmp_path, "h200x2"),
        "sysfs_root": sysfs("h200x2"),
        "_ansible_check_mode": True,
    })
    assert result["changed"] is False
    assert result["gpu_count"] == 2
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls == [
        "--query-gpu=index,uuid,name,pci.bus_id,memory.total,compute_cap,driver_version --format=csv,noheader,nounits",
        "-q -x",
    ]


def test_no_nvidia_smi_fails_with_what_to_do(module_env, tmp_path, run, sysfs):
    result = run({"sysfs_root": sysfs("h200x2")})
    assert result["failed"] is True
    assert "nvidia-smi was not found" in result["msg"]
    assert "nvidia_driver role" in result["msg"]
    assert "allow_missing" in result["msg"]


def test_no_nvidia_smi_allowed_returns_empty_facts_and_warns(module_env, tmp_path, run, sysfs):
    result = run({"sysfs_root": sysfs("blackwell8x"), "allow_missing": True})
    assert "failed" not in result
    assert result["gpus"] == []
    assert result["gpu_present"] is False
    assert result["ansible_facts"]["pdserve_gpu_present"] is False
    assert result["driver_version"] is None
    assert result["nvidia_smi_path"] is None
    assert [n["id"] for n in result["numa_nodes"]] == [0, 1]  # NUMA facts still gathered
    assert len(module_env) == 1 and "nvidia-smi was not found" in module_env[0]
    assert "allow_missing" not in module_env[0]  # already set: no advice to set it


def test_nvidia_smi_path_that_does_not_exist(module_env, tmp_path, run):
    result = run({"nvidia_smi_path": str(tmp_path / "nope" / "nvidia-smi"), "allow_missing": True})
    assert result["failed"] is True
    assert "does not exist or is not executable" in result["msg"]


@pytest.mark.parametrize("allow_missing", [False, True])
def test_driver_failure_fails_quoting_nvidia_smi(module_env, monkeypatch, tmp_path, allow_missing, run, sysfs):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_MODE", "driver_failure")
    result = run({
        "nvidia_smi_path": fake_smi(tmp_path, "h200x2"),
        "sysfs_root": sysfs("h200x2"),
        "allow_missing": allow_missing,
    })
    assert result["failed"] is True
    assert "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" in result["msg"]
    assert "rc=9" in result["msg"]
    assert result["rc"] == 9
    assert result["cmd"][1].startswith("--query-gpu=")


def test_zero_gpus_fails(module_env, monkeypatch, tmp_path, run, sysfs):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_MODE", "no_devices")
    result = run({"nvidia_smi_path": fake_smi(tmp_path, "h200x2"), "sysfs_root": sysfs("h200x2")})
    assert result["failed"] is True
    assert "found no NVIDIA GPU" in result["msg"]
    assert "lspci" in result["msg"]


def test_zero_gpus_allowed(module_env, monkeypatch, tmp_path, run, sysfs):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_MODE", "no_devices")
    result = run({
        "nvidia_smi_path": fake_smi(tmp_path, "h200x2"),
        "sysfs_root": sysfs("h200x2"),
        "allow_missing": True,
    })
    assert "failed" not in result
    assert result["gpus"] == []
    assert result["gpu_count"] == 0
    assert result["gpu_present"] is False
    assert result["nvidia_smi_path"].endswith("nvidia-smi")
    assert any("found no NVIDIA GPU" in w for w in module_env)


def test_old_driver_without_compute_cap_still_lists_gpus(module_env, monkeypatch, tmp_path, run, sysfs):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_MODE", "old_driver")
    result = run({"nvidia_smi_path": fake_smi(tmp_path, "blackwell8x"), "sysfs_root": sysfs("blackwell8x")})
    assert result["gpu_count"] == 8
    assert result["gpus"][0]["compute_capability"] is None
    assert result["gpus"][0]["sm"] is None
    assert result["gpus"][0]["numa_node"] == 0
    assert any("compute_cap" in w for w in module_env)


def test_unknown_option_is_rejected(module_env, tmp_path, run):
    result = run({"nvidia_smi_path": fake_smi(tmp_path, "h200x2"), "gpus": [0]})
    assert result["failed"] is True
    assert "gpus" in result["msg"]


def test_path_wins_over_default_dirs_which_are_a_fallback(module_env, monkeypatch, tmp_path, run, sysfs):
    on_path = tmp_path / "on-path"
    fallback = tmp_path / "cuda-bin"
    on_path.mkdir()
    fallback.mkdir()
    fake_nvcc(on_path, "blackwell8x")  # 12.9
    fake_nvcc(fallback, "h200x2")  # 13.0
    fake_smi(fallback, "h200x2")
    monkeypatch.setenv("PATH", str(on_path))
    monkeypatch.setattr(gpu_facts, "NVCC_DIRS", [str(fallback)])
    monkeypatch.setattr(gpu_facts, "NVIDIA_SMI_DIRS", [str(fallback)])
    result = run({"sysfs_root": sysfs("h200x2")})
    assert result["cuda_toolkit_version"] == "12.9"
    assert result["nvcc_path"] == str(on_path / "nvcc")
    assert result["nvidia_smi_path"] == str(fallback / "nvidia-smi")  # not on PATH: found in the fallback
    assert result["gpu_count"] == 2


def test_replay_of_real_h200x1_run_gives_what_the_real_host_returned(module_env, tmp_path, run, sysfs):
    """h200x1 was captured on a GPU machine together with the module's real result there."""
    with open(os.path.join(FIXTURES, "h200x1", "gpu_facts-result.json")) as handle:
        real = json.load(handle)
    result = run({
        "nvidia_smi_path": fake_smi(tmp_path, "h200x1"),
        "nvcc_path": fake_nvcc(tmp_path, "h200x1"),
        "sysfs_root": sysfs("h200x1"),
    })
    for key in ("nvidia_smi_path", "nvcc_path"):  # where the tools lie differs, nothing else may
        assert real.pop(key).startswith("/usr/local/")
        result.pop(key)
    assert json.loads(json.dumps(result)) == real
    assert real["gpus"][0]["numa_node"] is None and real["gpu_count"] == 1
