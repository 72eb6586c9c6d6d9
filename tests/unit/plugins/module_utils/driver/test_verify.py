# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The verify checks of module_utils/driver/verify.py on the real H200 capture and the
synthetic reference host (8x RTX PRO 6000 Blackwell), and on broken variants of them."""

import copy
import os

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.host import gpu as gpu_utils
from ansible_collections.pdserve.sglang.plugins.module_utils.driver import nvidia_driver as nd
from ansible_collections.pdserve.sglang.plugins.module_utils.driver import verify

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gpu"))
REFERENCE = {"gpu_count": 8, "compute_capability": "12.0", "numa_nodes": 2, "branch": "580", "version": "",
             "kernel_module": "open", "persistence_mode": True, "mig_mode": "disabled", "fabricmanager": "auto"}
H200_EXPECTED = dict(REFERENCE, gpu_count=1, compute_capability="9.0", numa_nodes=None)
# What the reference host shows with the 580.95.05 open module loaded (SYNTHETIC, like blackwell8x).
BLACKWELL_DRIVER = {
    "sys/module/nvidia/version": "580.95.05",
    "sys/module/nvidia_uvm/initstate": "live",
    "proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build",
    "dev/nvidia-uvm": "stand-in",
}


def _read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


def gpu_facts(capture, root):
    rows = gpu_utils.parse_query_gpu_csv(_read(FIXTURES, capture, "query-gpu.csv"))
    xml = gpu_utils.parse_nvidia_smi_xml(_read(FIXTURES, capture, "nvidia-smi-q.xml"))
    sysfs = gpu_utils.SysfsReader(root)
    return {"ok": True, "error": None, "facts": {
        "gpus": gpu_utils.build_gpu_facts(rows, xml, sysfs), "driver_version": xml["driver_version"],
        "numa_nodes": gpu_utils.read_numa_nodes(sysfs)}}


class Commands(object):
    def __init__(self, commands):
        self.commands = commands

    def which(self, name):
        return name if name in self.commands else None

    def run_command(self, argv):
        return self.commands[argv[0]]


@pytest.fixture
def h200(gpu_sysfs):
    root = gpu_sysfs("h200x1_driver")
    host = Commands({"dpkg-query": (0, _read(FIXTURES, "h200x1_driver", "dpkg-query.txt"), ""),
                     "dmesg": (0, _read(FIXTURES, "h200x1_driver", "dmesg.txt"), "")})
    state = nd.DriverStateReader(root, host.run_command, host.which).gather(kernel_log=True)
    return state, gpu_facts("h200x1_driver", root)


@pytest.fixture
def blackwell(tmp_path, sysfs_tree):
    root = sysfs_tree.build("blackwell8x", str(tmp_path))
    for path, content in BLACKWELL_DRIVER.items():
        target = os.path.join(root, path)
        if not os.path.isdir(os.path.dirname(target)):
            os.makedirs(os.path.dirname(target))
        with open(target, "w") as handle:
            handle.write(content + "\n")
    dpkg = "nvidia-driver-cuda\t580.95.05-1\thi \nnvidia-kernel-open-dkms\t580.95.05-1\thi \n"
    host = Commands({"dpkg-query": (0, dpkg, "")})
    kernel_log = tmp_path / "kmsg.log"
    kernel_log.write_text("[    0.4] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.95.05\n")
    state = nd.DriverStateReader(root, host.run_command, host.which).gather(kernel_log=True, kernel_log_file=str(kernel_log))
    return state, gpu_facts("blackwell8x", root)


def by_status(checks, status):
    return [c["check"] for c in checks if c["status"] == status]


def failed(checks):
    return [c for c in checks if c["status"] == verify.FAILED]


def test_real_h200_passes_with_its_own_expectations(h200):
    state, gpu = h200
    checks = verify.verify_checks(state, gpu, H200_EXPECTED)
    assert failed(checks) == []
    # The device machine lets us check everything that matters; nothing is "not checkable" there.
    assert by_status(checks, verify.NOT_CHECKABLE) == []
    messages = dict((c["check"], c["message"]) for c in checks)
    assert messages["gpu_count"] == "1 GPU(s), as expected"
    assert messages["driver_version"] == "driver 580.159.04: branch 580 (580.*), and every GPU's minimum"
    assert messages["module_version"] == "the loaded module 580.159.04 is the user-space driver"
    assert messages["kernel_log"].endswith("(dmesg)")


def test_real_h200_with_a_wrong_gpu_count(h200):
    state, gpu = h200
    checks = verify.verify_checks(state, gpu, dict(H200_EXPECTED, gpu_count=2))
    assert [(c["check"], c["message"]) for c in failed(checks)] == [("gpu_count", "expected 2 GPU(s), nvidia-smi lists 1")]
    assert "pdserve_expected_gpu_count" in failed(checks)[0]["fix"]


def test_real_h200_with_a_wrong_compute_capability(h200):
    state, gpu = h200
    wrong = failed(verify.verify_checks(state, gpu, dict(H200_EXPECTED, compute_capability="12.0")))
    assert [(c["check"], c["gpu"], c["message"]) for c in wrong] == [(
        "compute_capability", "GPU 0 (NVIDIA H200, 00000000:00:06.0)",
        "GPU 0 (NVIDIA H200, 00000000:00:06.0): compute capability 9.0, expected 12.0")]


def test_reference_host_passes(blackwell):
    state, gpu = blackwell
    checks = verify.verify_checks(state, gpu, REFERENCE)
    assert failed(checks) == [] and by_status(checks, verify.NOT_CHECKABLE) == []
    assert [c["check"] for c in checks] == [
        "nvidia_smi", "gpu_count", "compute_capability", "numa_nodes", "driver_version", "kernel_module_flavor",
        "module_version", "persistence_mode", "mig_mode", "kernel_log", "uvm_device", "nouveau", "fabric_manager"]


def test_each_gpu_with_the_wrong_capability_is_named(blackwell):
    state, gpu = blackwell
    wrong = failed(verify.verify_checks(state, gpu, dict(REFERENCE, compute_capability="10.0")))
    assert len(wrong) == 8 and wrong[7]["gpu"] == "GPU 7 (NVIDIA RTX PRO 6000 Blackwell Server Edition, 00000000:DF:00.0)"
    assert verify.verify_checks(state, gpu, dict(REFERENCE, compute_capability=["10.0", "12.0"]))[2]["status"] == "ok"


def test_numa_and_branch_and_exact_version(blackwell):
    state, gpu = blackwell
    checks = verify.verify_checks(state, gpu, dict(REFERENCE, numa_nodes=1, branch="595"))
    assert [(c["check"], c["message"]) for c in failed(checks)] == [
        ("numa_nodes", "expected 1 NUMA node(s), the kernel shows 2"),
        ("driver_version", "driver 580.95.05 is below branch 595")]
    exact = failed(verify.verify_checks(state, gpu, dict(REFERENCE, version="580.159.04")))
    assert [c["message"] for c in exact] == ["driver 580.95.05 runs, 580.159.04 is required"]


def test_a_gpu_below_its_minimum_driver(blackwell):
    """SYNTHETIC: the reference host on an R570 driver, below RTX PRO 6000 Blackwell's 575.51.03."""
    state, gpu = blackwell
    gpu = copy.deepcopy(gpu)
    gpu["facts"]["driver_version"] = "570.172.08"
    wrong = failed(verify.verify_checks(state, gpu, dict(REFERENCE, branch="")))
    assert len(wrong) == 8  # every GPU under its minimum (the loaded module is the installed package's)
    assert wrong[0]["message"].endswith("needs driver 575.51.03 or newer, 570.172.08 runs")


def test_persistence_and_mig_name_the_gpu(blackwell):
    state, gpu = blackwell
    gpu = copy.deepcopy(gpu)
    gpu["facts"]["gpus"][3]["persistence_mode"] = "Disabled"
    gpu["facts"]["gpus"][5]["mig_mode"] = "Enabled"
    wrong = failed(verify.verify_checks(state, gpu, REFERENCE))
    assert [(c["check"], c["gpu"].split(" (")[0]) for c in wrong] == [("persistence_mode", "GPU 3"), ("mig_mode", "GPU 5")]
    assert "--persistence-mode" in wrong[0]["fix"] and "-mig 0" in wrong[1]["fix"]
    assert failed(verify.verify_checks(state, gpu, dict(REFERENCE, persistence_mode=False, mig_mode="unmanaged"))) == []


def test_proprietary_module_on_blackwell(blackwell):
    state, gpu = blackwell
    state = copy.deepcopy(state)
    state["module"]["flavor"] = "proprietary"
    state["kernel_log"]["errors"] = ["NVRM: ... requires use of the NVIDIA open kernel modules."]
    wrong = failed(verify.verify_checks(state, gpu, REFERENCE))
    # The flavor (host-wide and per GPU), the reboot that would load the installed open module, the log line.
    assert [c["check"] for c in wrong] == ["kernel_module_flavor"] * 9 + ["module_version", "kernel_log"]
    assert wrong[1]["message"].endswith("(Blackwell) needs the open kernel modules")


def test_stale_module_is_a_pending_reboot(blackwell):
    state, gpu = blackwell
    state = copy.deepcopy(state)
    state["installed"]["version"] = "595.71.05"
    gpu = {"ok": False, "facts": {}, "error": "Failed to initialize NVML: Driver/library version mismatch"}
    checks = verify.verify_checks(state, gpu, REFERENCE)
    wrong = dict((c["check"], c) for c in failed(checks))
    assert wrong["nvidia_smi"]["fix"].startswith("the loaded kernel module is older than the installed driver: reboot")
    assert wrong["module_version"]["message"] == (
        "reboot pending: the loaded nvidia module is 580.95.05, the installed driver is 595.71.05")
    assert set(wrong) == {"nvidia_smi", "gpu_count", "compute_capability", "driver_version", "module_version",
                          "persistence_mode", "mig_mode"}


def test_uvm_nouveau_and_fabric_manager(blackwell):
    state, gpu = blackwell
    state = copy.deepcopy(state)
    state["module"]["uvm_device"] = False
    state["module"]["nouveau_loaded"] = True
    state["nvswitch_present"] = True
    wrong = failed(verify.verify_checks(state, gpu, REFERENCE, fabric_manager_active=False))
    assert [c["check"] for c in wrong] == ["module_version", "uvm_device", "nouveau", "fabric_manager"]
    checks = verify.verify_checks(state, gpu, REFERENCE, fabric_manager_active=None)
    assert checks[-1]["status"] == verify.NOT_CHECKABLE


def test_a_gpu_on_the_bus_that_nvidia_smi_misses(blackwell):
    state, gpu = blackwell
    gpu = copy.deepcopy(gpu)
    del gpu["facts"]["gpus"][7]
    wrong = failed(verify.verify_checks(state, gpu, REFERENCE))
    assert [(c["check"], c["gpu"]) for c in wrong] == [("gpu_count", "0000:df:00.0"), ("gpu_count", None)]


def test_what_a_sandbox_does_not_let_us_check(h200):
    state, gpu = h200
    state = copy.deepcopy(state)
    state["module"].update(flavor=None, loaded=False, version=None)
    state["kernel_log"] = {"checkable": False, "source": None, "errors": []}
    checks = verify.verify_checks(state, gpu, dict(H200_EXPECTED, numa_nodes=1))
    assert by_status(checks, verify.NOT_CHECKABLE) == ["numa_nodes", "kernel_module_flavor", "module_version", "kernel_log"]
    assert failed(checks) == []


def test_no_devices_and_no_nvidia_smi(h200):
    state, _gpu = h200
    checks = verify.verify_checks(state, {"ok": False, "facts": {}, "error": "No devices were found"}, H200_EXPECTED)
    assert checks[0]["fix"].startswith("the driver sees no GPU: on Blackwell this is the proprietary kernel module")
    missing = verify.verify_checks(state, {"ok": False, "missing": True, "facts": {}, "error": "nvidia-smi not found"},
                                   H200_EXPECTED)
    assert "install the driver" in missing[0]["fix"]


def test_failure_message_names_every_failure(h200):
    state, gpu = h200
    message = verify.failure_message("h200", verify.verify_checks(
        state, gpu, dict(H200_EXPECTED, gpu_count=2, compute_capability="12.0")))
    assert message.splitlines()[0] == "2 NVIDIA driver check(s) failed on h200:"
    assert message.splitlines()[1].startswith("- gpu_count: expected 2 GPU(s), nvidia-smi lists 1 -- fix: ")
    assert "GPU 0 (NVIDIA H200, 00000000:00:06.0): compute capability 9.0, expected 12.0" in message


@pytest.mark.parametrize("value, expected", [
    ("12.0", ["12.0"]), (12.0, ["12.0"]), (9, ["9.0"]), ("9.0, 12.0", ["9.0", "12.0"]), (["10.0"], ["10.0"]),
    (None, []), ("", [])])
def test_normalize_capabilities(value, expected):
    assert verify.normalize_capabilities(value) == expected


def test_normalize_capabilities_refuses_garbage():
    with pytest.raises(ValueError):
        verify.normalize_capabilities("sm_120")


@pytest.mark.parametrize("name, minimum", [
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "575.51.03"), ("NVIDIA B200", "570.133.20"),
    ("NVIDIA GB200", "570.133.20"), ("NVIDIA B300 SXM6 AC", "580.82.07"), ("NVIDIA H200", "550.90.07"),
    ("NVIDIA H100 80GB HBM3", "525.85.12"), ("NVIDIA A100-SXM4-80GB", None)])
def test_gpu_min_driver(name, minimum):
    assert verify.gpu_min_driver(name) == minimum
