# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tests/device/driver_verify_only.sh, the verify-only run meant for the real H200 device machine, run
here against that machine's capture (tests/unit/fixtures/gpu/h200x1_driver): nvidia-smi and dmesg replay
it from PATH and the kernel state tree is built from its list. The same script and playbook, with the
same expectations, so the run on the real machine can only differ by what the machine itself shows.

The results the real machine returned, once copied to h200x1_driver/verify-only/, are compared with
this replay in tests/unit/plugins/modules/test_nvidia_driver_verify.py.
"""

import json
import os
import stat
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CAPTURE = os.path.join(REPO, "tests", "unit", "fixtures", "gpu", "h200x1_driver")
FAKE_SMI = os.path.join(REPO, "tests", "unit", "fixtures", "gpu", "fake_nvidia_smi.py")


def _wrapper(directory, name, body):
    path = os.path.join(directory, name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def test_device_script_on_the_h200_capture(tmp_path, gpu_sysfs):
    bindir = str(tmp_path / "bin")
    os.makedirs(bindir)
    _wrapper(bindir, "nvidia-smi", 'exec "%s" "%s" "%s" "$@"' % (sys.executable, FAKE_SMI, CAPTURE))
    _wrapper(bindir, "dmesg", 'exec cat "%s"' % os.path.join(CAPTURE, "dmesg.txt"))
    _wrapper(bindir, "journalctl", "exit 1")  # this machine's journal is not the H200's
    out = str(tmp_path / "out")
    env = dict(os.environ)
    env.update({"OUT": out, "PATH": bindir + os.pathsep + os.path.dirname(sys.executable) + os.pathsep + env["PATH"],
                "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO, ".cache", "collections")})
    extra = {"nvidia_driver_host_root": gpu_sysfs("h200x1_driver")}
    proc = subprocess.run(["bash", "tests/device/driver_verify_only.sh", "-e", json.dumps(extra)], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout
    results = {}
    for case in ("pass", "wrong_gpu_count", "wrong_compute_capability"):
        with open(os.path.join(out, "verify-only", case + ".json")) as handle:
            results[case] = json.load(handle)
    assert results["pass"]["failed"] is False
    assert results["pass"]["result"]["failed_checks"] == [] and results["pass"]["result"]["not_checkable"] == []
    assert results["wrong_gpu_count"]["result"]["failed_checks"] == ["gpu_count"]
    assert "gpu_count: expected 2 GPU(s), nvidia-smi lists 1" in results["wrong_gpu_count"]["result"]["msg"]
    assert results["wrong_compute_capability"]["result"]["failed_checks"] == ["compute_capability"]
    assert ("GPU 0 (NVIDIA H200, 00000000:00:06.0): compute capability 9.0, expected 12.0"
            in results["wrong_compute_capability"]["result"]["msg"])
    assert os.path.getsize(os.path.join(out, "verify-only", "ansible.log")) > 0
