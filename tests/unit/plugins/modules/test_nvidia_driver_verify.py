# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""nvidia_driver_verify run through main(), replaying the real H200 capture (tests/unit/fixtures/gpu/h200x1_driver):
nvidia-smi, dpkg-query and dmesg are wrappers on PATH that print the capture, the kernel state tree is built from
its list. The results of the real run on that machine (tests/device/driver_verify_only.sh), once copied to
h200x1_driver/verify-only/<case>.json, must agree with this replay check by check.
"""

import json
import os
import stat
import sys

import pytest

from ansible.module_utils import basic
from ansible_collections.pdserve.sglang.plugins.modules import nvidia_driver_verify

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "gpu"))
CAPTURE = os.path.join(FIXTURES, "h200x1_driver")
# Where the real device run's results go (see tests/device/driver_verify_only.sh and the capture's README).
REAL_RESULTS = os.path.join(CAPTURE, "verify-only")
CASES = {
    "pass": {"expected_gpu_count": 1, "expected_compute_capability": ["9.0"]},
    "wrong_gpu_count": {"expected_gpu_count": 2, "expected_compute_capability": ["9.0"]},
    "wrong_compute_capability": {"expected_gpu_count": 1, "expected_compute_capability": ["12.0"]},
}
# The checks the issue requires to pass on the H200; the others may be not_checkable there.
REQUIRED = ("gpu_count", "compute_capability", "driver_version", "persistence_mode", "mig_mode")


def _wrapper(directory, name, body):
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def h200_host(tmp_path, monkeypatch, gpu_sysfs):
    """PATH with only the replayed tools of the H200 (no journalctl, mokutil or systemctl there)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = os.path.join(FIXTURES, "fake_nvidia_smi.py")
    _wrapper(bindir, "nvidia-smi", 'exec "%s" "%s" "%s" "$@"' % (sys.executable, fake, CAPTURE))
    script = "import sys; sys.stdout.write(open(sys.argv[1]).read())"
    for name, capture in (("dpkg-query", "dpkg-query.txt"), ("dmesg", "dmesg.txt")):
        _wrapper(bindir, name, 'exec "%s" -c "%s" "%s"' % (sys.executable, script, os.path.join(CAPTURE, capture)))
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setattr(nvidia_driver_verify, "NVIDIA_SMI_DIRS", ())
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: None)
    return gpu_sysfs("h200x1_driver")


@pytest.fixture
def replay(h200_host, module_runner):
    def run(case, check_mode=False, **extra):
        args = dict(CASES[case], root=h200_host, **extra)
        return module_runner(nvidia_driver_verify.main, args, check_mode=check_mode)
    return run


def statuses(result):
    return dict((c["check"], c["status"]) for c in result["checks"] if c["gpu"] is None or c["status"] != "ok")


def test_replay_passes_with_the_h200_expectations_in_check_mode(replay):
    result, failed = replay("pass", check_mode=True)
    assert not failed and result["changed"] is False
    assert result["failed_checks"] == [] and result["not_checkable"] == []
    assert result["driver_version"] == "580.159.04"
    assert [g["compute_capability"] for g in result["gpus"]] == ["9.0"]
    assert result["state"]["module"]["flavor"] == "open"


def test_replay_fails_clearly_on_a_wrong_gpu_count(replay):
    result, failed = replay("wrong_gpu_count")
    assert failed and result["failed_checks"] == ["gpu_count"]
    assert "1 NVIDIA driver check(s) failed on " in result["msg"]
    assert "- gpu_count: expected 2 GPU(s), nvidia-smi lists 1 -- fix: check the inventory's pdserve_expected_gpu_count" \
        in result["msg"]


def test_replay_fails_clearly_on_a_wrong_compute_capability(replay):
    result, failed = replay("wrong_compute_capability")
    assert failed and result["failed_checks"] == ["compute_capability"]
    assert "GPU 0 (NVIDIA H200, 00000000:00:06.0): compute capability 9.0, expected 12.0" in result["msg"]


def test_a_newer_branch_and_mig_enabled_fail(replay):
    result, failed = replay("pass", branch="595", mig_mode="enabled")
    assert failed and result["failed_checks"] == ["driver_version", "mig_mode"]


def test_nvidia_smi_mismatch_on_the_h200(replay, monkeypatch):
    monkeypatch.setenv("FAKE_NVIDIA_SMI_MODE", "mismatch")
    result, failed = replay("pass")
    assert failed and "nvidia_smi" in result["failed_checks"]
    assert "Driver/library version mismatch" in result["msg"] and "reboot the host" in result["msg"]


def test_bad_expected_capability_is_a_clear_error(replay):
    result, failed = replay("pass", expected_compute_capability=["sm_90"])
    assert failed and "a compute capability looks like 12.0" in result["msg"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_real_device_results_agree_with_the_replay(case, replay):
    """Needs the real run's files (tests/device/driver_verify_only.sh on the H200, then copied here)."""
    path = os.path.join(REAL_RESULTS, case + ".json")
    if not os.path.exists(path):
        pytest.skip("no real result yet: run tests/device/driver_verify_only.sh on the H200 device machine and "
                    "copy $OUT/verify-only/*.json to %s" % REAL_RESULTS)
    with open(path) as handle:
        real = json.load(handle)
    replayed, failed = replay(case)
    assert real["failed"] is failed
    assert real["result"]["failed_checks"] == replayed["failed_checks"]
    real_status, replay_status = statuses(real["result"]), statuses(replayed)
    for check in REQUIRED:
        assert real_status[check] == replay_status[check], check
    if case == "pass":
        assert all(real_status[check] == "ok" for check in REQUIRED)
        # Anything else may be not_checkable on the device machine, never failed.
        assert set(real_status.values()) <= {"ok", "not_checkable"}
