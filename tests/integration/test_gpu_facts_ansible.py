# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpu_facts run by real `ansible` / `ansible-playbook` against localhost.

A fake nvidia-smi on PATH replays the captures of tests/unit/fixtures/gpu/, and the module's
sysfs_root points at the capture's sysfs tree, so the module is shipped, executed and its facts
consumed by later tasks exactly as on a GPU host. On a real GPU host this file is also run with
PDSERVE_REAL_GPU=1 (see test_real_gpu_host), which uses the host's own nvidia-smi and /sys.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(REPO, "tests", "unit", "fixtures", "gpu")
FAKE = os.path.join(FIXTURES, "fake_nvidia_smi.py")
BIN = os.path.dirname(sys.executable)
REAL_NVIDIA_SMI_DIRS = ["/usr/bin", "/usr/local/nvidia/bin", "/usr/local/cuda/bin"]


def _tool(name):
    path = os.path.join(BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


def _write_exec(path, body):
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


@pytest.fixture
def ansible(tmp_path):
    """Returns run(argv, capture=None, env=None) -> (rc, [(state, result dict)] per task, stderr).

    The `minimal` stdout callback (ansible-core's own; the json one lives in ansible.posix) prints
    `localhost | STATE => {json}` per task; ANSIBLE_CALLBACK_RESULT_FORMAT=json keeps that JSON.
    """
    if not _tool("ansible") or not _tool("ansible-playbook"):
        pytest.skip("ansible is not installed beside %s" % sys.executable)
    collections = tmp_path / "collections" / "ansible_collections" / "pdserve"
    collections.mkdir(parents=True)
    os.symlink(REPO, str(collections / "sglang"))
    fakebin = tmp_path / "fakebin"
    fakebin.mkdir()

    def run(argv, capture=None, env=None):
        for name in ("nvidia-smi", "nvcc"):
            if (fakebin / name).exists():
                (fakebin / name).unlink()
        if capture:
            _write_exec(str(fakebin / "nvidia-smi"), 'exec "%s" "%s" "%s" "$@"' % (
                sys.executable, FAKE, os.path.join(FIXTURES, capture)))
            _write_exec(str(fakebin / "nvcc"), 'exec "%s" -c "%s" "%s"' % (
                sys.executable, "import sys; sys.stdout.write(open(sys.argv[1]).read())",
                os.path.join(FIXTURES, capture, "nvcc-version.txt")))
        full_env = dict(os.environ)
        full_env.update({
            "PATH": os.pathsep.join([str(fakebin), BIN, "/usr/bin", "/bin"]),
            "ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"),
            "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
            "ANSIBLE_STDOUT_CALLBACK": "minimal",
            "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
            "LC_ALL": "C.UTF-8",
        })
        full_env.pop("ANSIBLE_CONFIG", None)
        full_env.update(env or {})
        argv = [_tool(argv[0])] + list(argv[1:]) + [
            "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable]
        proc = subprocess.run(argv, cwd=str(tmp_path), env=full_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                              check=False)
        results = parse_minimal(proc.stdout)
        if not results:
            raise AssertionError("no task result from %s (rc=%s)\nstdout:\n%s\nstderr:\n%s"
                                 % (argv[0], proc.returncode, proc.stdout, proc.stderr))
        return proc.returncode, results, proc.stderr

    return run


_RESULT_RE = re.compile(r"^localhost \| (SUCCESS|CHANGED|FAILED!) => ", re.MULTILINE)


def parse_minimal(stdout):
    """`localhost | SUCCESS => {...}` blocks of the minimal callback -> [(state, dict)]."""
    decoder = json.JSONDecoder()
    results = []
    for match in _RESULT_RE.finditer(stdout):
        result, dummy_end = decoder.raw_decode(stdout, match.end())
        results.append((match.group(1).rstrip("!"), result))
    return results


@pytest.fixture
def sysfs(gpu_sysfs):
    """sysfs(capture) -> the capture's sysfs tree, built from its sysfs.txt."""
    return gpu_sysfs


def test_adhoc_h200x2_captures(ansible, sysfs):
    rc, results, stderr = ansible(
        ["ansible", "localhost", "-m", "pdserve.sglang.gpu_facts", "-a", "sysfs_root=" + sysfs("h200x2")],
        capture="h200x2",
    )
    (state, result), = results
    assert (rc, state) == (0, "SUCCESS"), (result, stderr)
    assert result["changed"] is False
    assert result["gpu_count"] == 2
    assert [g["numa_node"] for g in result["gpus"]] == [None, None]
    assert [g["compute_capability"] for g in result["gpus"]] == ["9.0", "9.0"]
    assert result["driver_version"] == "580.159.04"
    assert result["cuda_version"] == "13.0"
    assert result["cuda_toolkit_version"] == "13.0"
    assert result["nvidia_smi_path"].endswith("/fakebin/nvidia-smi")
    assert result["ansible_facts"]["pdserve_gpus"] == result["gpus"]


PLAYBOOK = """
- name: GPU facts drive later tasks
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Discover the GPUs
      pdserve.sglang.gpu_facts:
        sysfs_root: "{{ fixture_sysfs }}"

    - name: The reference layout holds (TP4 prefill on NUMA 0, TP4 decode on NUMA 1)
      ansible.builtin.assert:
        that:
          - pdserve_gpu_count == 8
          - pdserve_gpus | map(attribute='sm') | unique | list == ['sm_120']
          - pdserve_gpus | selectattr('index', 'in', [0, 1, 2, 3]) | map(attribute='numa_node') | unique | list == [0]
          - pdserve_gpus | selectattr('index', 'in', [4, 5, 6, 7]) | map(attribute='numa_node') | unique | list == [1]
          - pdserve_gpus[4].local_cpus == pdserve_numa_nodes[1].cpus
          - pdserve_cuda_version == '13.0'
          - pdserve_cuda_toolkit_version == '12.9'
"""


def test_playbook_blackwell8x_facts_in_check_mode(ansible, tmp_path, sysfs):
    playbook = tmp_path / "gpu.yml"
    playbook.write_text(PLAYBOOK)
    rc, results, stderr = ansible(
        ["ansible-playbook", str(playbook), "--check", "-e", "fixture_sysfs=" + sysfs("blackwell8x")],
        capture="blackwell8x",
    )
    assert rc == 0, (results, stderr)
    assert [state for state, dummy_result in results] == ["SUCCESS", "SUCCESS"]
    assert results[0][1]["gpu_count"] == 8
    assert results[1][1]["msg"] == "All assertions passed"


def test_playbook_wrong_layout_fails(ansible, tmp_path, sysfs):
    """The same assertions fail on the H200 VM (2 GPUs, no NUMA node): the facts decide."""
    playbook = tmp_path / "gpu.yml"
    playbook.write_text(PLAYBOOK)
    rc, results, stderr = ansible(
        ["ansible-playbook", str(playbook), "-e", "fixture_sysfs=" + sysfs("h200x2")], capture="h200x2")
    assert rc == 2
    assert [state for state, dummy_result in results] == ["SUCCESS", "FAILED"]
    assert results[1][1]["assertion"] == "pdserve_gpu_count == 8"


def test_adhoc_driver_failure_is_quoted(ansible):
    rc, results, stderr = ansible(
        ["ansible", "localhost", "-m", "pdserve.sglang.gpu_facts", "-a", "allow_missing=true"],
        capture="h200x2", env={"FAKE_NVIDIA_SMI_MODE": "driver_failure"},
    )
    (state, result), = results
    assert (rc, state) == (2, "FAILED")
    assert "couldn't communicate with the NVIDIA driver" in result["msg"]
    assert result["rc"] == 9


@pytest.mark.skipif(
    any(os.path.exists(os.path.join(d, "nvidia-smi")) for d in REAL_NVIDIA_SMI_DIRS),
    reason="a real nvidia-smi is installed here; the module would find it",
)
def test_adhoc_no_nvidia_smi_allowed_warns(ansible, sysfs):
    rc, results, stderr = ansible(
        ["ansible", "localhost", "-m", "pdserve.sglang.gpu_facts", "-a",
         "allow_missing=true sysfs_root=" + sysfs("blackwell8x")],
    )
    (state, result), = results
    assert (rc, state) == (0, "SUCCESS"), (result, stderr)
    assert result["gpu_present"] is False
    assert result["ansible_facts"]["pdserve_gpus"] == []
    assert "nvidia-smi was not found" in stderr  # the warning, shown by the callback


@pytest.mark.skipif(os.environ.get("PDSERVE_REAL_GPU") != "1", reason="set PDSERVE_REAL_GPU=1 on a GPU host")
def test_real_gpu_host(ansible, tmp_path):
    """On a machine with NVIDIA GPUs: the module agrees with nvidia-smi and sysfs read directly."""
    rc, results, stderr = ansible(["ansible", "localhost", "-m", "pdserve.sglang.gpu_facts"])
    (state, result), = results
    assert (rc, state) == (0, "SUCCESS"), (result, stderr)
    print(json.dumps(result, indent=1))
    smi = shutil.which("nvidia-smi") or result["nvidia_smi_path"]
    direct = subprocess.check_output(
        [smi, "--query-gpu=index,uuid,compute_cap,memory.total", "--format=csv,noheader,nounits"],
        universal_newlines=True)
    expected = [[v.strip() for v in line.split(",")] for line in direct.splitlines() if line.strip()]
    assert [[str(g["index"]), g["uuid"], g["compute_capability"], str(g["memory_total_mib"])]
            for g in result["gpus"]] == expected
    for g in result["gpus"]:
        with open("/sys/bus/pci/devices/%s/numa_node" % g["pci_address"]) as handle:
            node = int(handle.read())
        assert g["numa_node"] == (node if node >= 0 else None)
