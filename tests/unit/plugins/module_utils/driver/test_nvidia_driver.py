# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Parsers and the state reader of module_utils/driver/nvidia_driver.py.

Real captures: tests/unit/fixtures/gpu/h200x1_driver (the H200 device machine, 2026-12-01) and
h200x1/host.txt (the same kind of machine, 2026-11-30). Synthetic inputs are named as such.
"""

import os

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.driver import nvidia_driver as nd

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gpu"))
H200 = os.path.join(FIXTURES, "h200x1_driver")
# SYNTHETIC proprietary line, in the format a public issue quotes (oddmario/NVIDIA-Ubuntu-Driver-Guide #4).
PROPRIETARY_LINE = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024"


def _read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


def _proc_line(host_txt):
    return [line for line in host_txt.splitlines() if line.startswith("NVRM version:")][0]


# --- /proc/driver/nvidia/version ----------------------------------------------------------------
@pytest.mark.parametrize("capture", [os.path.join(H200, "host.txt"), os.path.join(FIXTURES, "h200x1", "host.txt")])
def test_proc_version_of_the_real_h200_is_the_open_module(capture):
    parsed = nd.parse_proc_driver_version(_read(capture))
    assert parsed["flavor"] == "open"
    assert parsed["version"] == "580.159.04"
    assert parsed["line"] == _proc_line(_read(capture)).strip()


@pytest.mark.parametrize("text, flavor, version", [
    (PROPRIETARY_LINE + "\nGCC version:  gcc version 12.3.0\n", "proprietary", "550.90.07"),
    ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  570.133.20  Release Build", "proprietary", "570.133.20"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build", "open", "580.95.05"),
])
def test_proc_version_synthetic_flavors(text, flavor, version):
    parsed = nd.parse_proc_driver_version(text)
    assert (parsed["flavor"], parsed["version"]) == (flavor, version)


@pytest.mark.parametrize("text", [None, "", "GCC version:  gcc version 15.3.0 (GCC)", "NVRM version: something else"])
def test_proc_version_without_a_module_line(text):
    assert nd.parse_proc_driver_version(text) is None


@pytest.mark.parametrize("text, expected", [
    ("580.159.04\n", "580.159.04"), ("", None), (None, None), ("live\n", None)])
def test_module_version(text, expected):
    assert nd.parse_module_version(text) == expected


# --- versions -------------------------------------------------------------------------------------
@pytest.mark.parametrize("left, right, expected", [
    ("580.95.05", "580.159.04", -1), ("580.159.04", "580.159.04", 0), ("595.71.05", "580.159.04", 1),
    ("580", "580.0", 0), ("550.90.07", "550.90.7", 0)])
def test_compare_versions(left, right, expected):
    assert nd.compare_versions(left, right) == expected


def test_compare_versions_refuses_garbage():
    with pytest.raises(ValueError):
        nd.compare_versions("580.x", "580.1")


@pytest.mark.parametrize("debian, upstream", [
    ("580.95.05-1", "580.95.05"), ("580.95.05-0ubuntu1", "580.95.05"), ("580.95.05-0ubuntu0.24.04.2", "580.95.05"),
    ("1:4.4.1-1", "4.4.1"), ("", None), (None, None)])
def test_upstream_version(debian, upstream):
    assert nd.upstream_version(debian) == upstream


# --- dpkg -------------------------------------------------------------------------------------------
def test_dpkg_of_the_real_h200_has_no_driver_package():
    """The device machine's driver lives in a read-only /usr/local/nvidia; cuda-compat's 580.95.05 is not it."""
    packages = nd.parse_dpkg_query(_read(H200, "dpkg-query.txt"))
    assert packages["cuda-compat-13-0"]["version"] == "580.95.05-0ubuntu1"
    assert packages["libcudnn9-cuda-13"]["held"] is True and packages["libcudnn9-cuda-13"]["installed"] is True
    assert packages["cuda-cccl-13-0"]["held"] is False
    assert nd.installed_driver(packages) == {"version": None, "package": None, "flavor": None, "versions": []}


def _dpkg(*rows):
    return nd.parse_dpkg_query("".join("%s\t%s\t%s\n" % row for row in rows))


@pytest.mark.parametrize("rows, version, package, flavor", [
    # SYNTHETIC: NVIDIA's debian12 repository, compute profile.
    ([("nvidia-driver-cuda", "580.95.05-1", "hi "), ("nvidia-kernel-open-dkms", "580.95.05-1", "hi ")],
     "580.95.05", "nvidia-kernel-open-dkms", "open"),
    # SYNTHETIC: NVIDIA's Ubuntu repository, 580 names; the module package wins over user space.
    ([("libnvidia-compute-580", "580.159.04-0ubuntu1", "ii "), ("nvidia-dkms-580", "580.159.04-0ubuntu1", "ii ")],
     "580.159.04", "nvidia-dkms-580", "proprietary"),
    # SYNTHETIC: Ubuntu's -server-open with Canonical's modules (the module package's version is the kernel's).
    ([("nvidia-headless-no-dkms-580-server-open", "580.95.05-0ubuntu0.24.04.2", "ii "),
      ("linux-modules-nvidia-580-server-open-generic", "6.8.0-31.31", "ii ")],
     "580.95.05", "nvidia-headless-no-dkms-580-server-open", "open"),
    # SYNTHETIC: only user space (a host whose module comes from elsewhere).
    ([("libnvidia-compute", "595.71.05-0ubuntu1", "ii ")], "595.71.05", "libnvidia-compute", None),
    # SYNTHETIC: removed packages (config files left) do not count.
    ([("nvidia-kernel-open-dkms", "580.95.05-1", "rc ")], None, None, None),
])
def test_installed_driver(rows, version, package, flavor):
    driver = nd.installed_driver(_dpkg(*rows))
    assert (driver["version"], driver["package"], driver["flavor"]) == (version, package, flavor)


def test_installed_driver_reports_a_half_done_upgrade():
    driver = nd.installed_driver(_dpkg(("nvidia-kernel-open-dkms", "595.71.05-1", "ii "),
                                       ("nvidia-driver-cuda", "580.95.05-1", "ii ")))
    assert driver["version"] == "595.71.05"
    assert driver["versions"] == ["580.95.05", "595.71.05"]


# --- Secure Boot, kernel log, PCI ---------------------------------------------------------------------
@pytest.mark.parametrize("text, state", [
    ("SecureBoot enabled\n", "enabled"), ("SecureBoot disabled\nPlatform is in Setup Mode\n", "disabled"),
    ("EFI variables are not supported on this system\n", None), ("", None)])
def test_mokutil_sb_state(text, state):
    assert nd.parse_mokutil_sb_state(text) == state


@pytest.mark.parametrize("data, state", [
    (b"\x06\x00\x00\x00\x01", "enabled"), (b"\x06\x00\x00\x00\x00", "disabled"), (b"\x06\x00", None), (None, None)])
def test_secure_boot_efivar(data, state):
    assert nd.parse_secure_boot_efivar(data) == state


def test_kernel_log_of_the_real_h200_has_no_open_module_error():
    assert nd.find_open_module_errors(_read(H200, "dmesg.txt")) == []


def test_kernel_log_finds_the_proprietary_module_on_blackwell():
    # SYNTHETIC, in the wording NVIDIA/open-gpu-kernel-modules #862 quotes.
    log = ("[    4.1] NVRM: The NVIDIA GPU 0000:1b:00.0 (PCI ID: 10de:2bb5)\n"
           "[    4.1] NVRM: installed in this system requires use of the NVIDIA open kernel modules.\n"
           "[    4.2] NVRM: GPU 0000:1b:00.0: RmInitAdapter failed! (0x22:0x56:884)\n")
    assert nd.find_open_module_errors(log) == [
        "[    4.1] NVRM: installed in this system requires use of the NVIDIA open kernel modules."]


@pytest.mark.parametrize("device, family", [
    ("0x2bb5", "Blackwell"), ("0x2bb1", "Blackwell"), ("0x2901", "Blackwell"), ("0x3182", "Blackwell"),
    ("0x2b85", "Blackwell"), ("0x2342", "Grace Hopper"), ("0x2335", None), ("0x2330", None), ("0x20b0", None),
    (None, None), ("zz", None)])
def test_open_only_family(device, family):
    assert nd.open_only_family(device) == family


@pytest.mark.parametrize("vendor, pci_class, kind", [
    ("0x10de", "0x030200", "gpu"), ("0x10de", "0x030000", "gpu"), ("0x10DE", "0x030200", "gpu"),
    ("0x10de", "0x068000", "nvswitch"), ("0x10de", "0x040300", None), ("0x1af4", "0x030200", None),
    ("0x10de", None, None)])
def test_classify_pci_device(vendor, pci_class, kind):
    assert nd.classify_pci_device(vendor, pci_class) == kind


@pytest.mark.parametrize("text, kind", [
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 595.71\n", "mismatch"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
     "NVIDIA driver is installed and running.\n", "no_driver"),
    ("No devices were found\n", "no_devices"),
    ("Segmentation fault", "other")])
def test_classify_nvidia_smi_failure(text, kind):
    assert nd.classify_nvidia_smi_failure(text)[0] == kind


# --- the reader --------------------------------------------------------------------------------------
class FakeHost(object):
    """run_command and which for the reader: the commands a test puts here exist, nothing else."""

    def __init__(self, commands=None):
        self.commands = commands or {}
        self.calls = []

    def which(self, name):
        return "/fake/bin/" + name if name in self.commands else None

    def run_command(self, argv):
        self.calls.append(argv)
        return self.commands[os.path.basename(argv[0])]


def test_reader_on_the_real_h200(gpu_sysfs):
    host = FakeHost({"dpkg-query": (0, _read(H200, "dpkg-query.txt"), ""), "dmesg": (0, _read(H200, "dmesg.txt"), "")})
    state = nd.DriverStateReader(gpu_sysfs("h200x1_driver"), host.run_command, host.which).gather(kernel_log=True)
    assert state["pci_checkable"] is True
    assert state["gpus"] == [{"address": "0000:00:06.0", "vendor": "0x10de", "device": "0x2335", "class": "0x030200",
                              "driver": "nvidia", "open_only_family": None}]
    assert state["nvswitches"] == [] and state["nvswitch_present"] is False
    module = state["module"]
    assert (module["loaded"], module["version"], module["flavor"]) == (True, "580.159.04", "open")
    assert module["loaded_modules"] == ["nvidia", "nvidia_uvm"]
    assert module["uvm_device"] is True and module["nouveau_loaded"] is False
    assert state["nouveau_bound"] == []
    assert state["installed"]["version"] is None
    assert state["secure_boot"] == {"state": "unknown", "source": None}
    assert state["kernel_log"] == {"checkable": True, "source": "dmesg", "errors": []}
    assert [item["fact"] for item in state["not_checkable"]] == ["secure_boot"]
    assert ["/fake/bin/journalctl"] not in [call[:1] for call in host.calls]


def test_reader_on_the_synthetic_blackwell_host(gpu_sysfs):
    state = nd.DriverStateReader(gpu_sysfs("blackwell8x"), FakeHost().run_command, FakeHost().which).gather()
    assert len(state["gpus"]) == 8
    assert set(g["open_only_family"] for g in state["gpus"]) == {"Blackwell"}
    assert state["open_only_gpus"][0] == "0000:1b:00.0"
    # No module in the tree: not loaded; no dpkg: packages not checkable.
    assert state["module"]["loaded"] is False and state["packages"] is None
    assert [item["fact"] for item in state["not_checkable"]] == ["packages", "secure_boot"]


def _tree(tmp_path, files):
    for path, content in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if content.startswith("-> "):
            os.symlink(content[3:], str(target))
        elif isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content + "\n")
    return str(tmp_path)


def test_reader_finds_nvswitches_nouveau_and_secure_boot(tmp_path):
    """SYNTHETIC: an HGX-like host booted with nouveau on one GPU and Secure Boot on."""
    root = _tree(tmp_path, {
        "sys/bus/pci/devices/0000:18:00.0/vendor": "0x10de", "sys/bus/pci/devices/0000:18:00.0/class": "0x030200",
        "sys/bus/pci/devices/0000:18:00.0/device": "0x2330",
        "sys/bus/pci/devices/0000:18:00.0/driver": "-> ../../../bus/pci/drivers/nouveau",
        "sys/bus/pci/devices/0000:05:00.0/vendor": "0x10de", "sys/bus/pci/devices/0000:05:00.0/class": "0x068000",
        "sys/bus/pci/devices/0000:05:00.0/device": "0x22a3",
        "sys/module/nouveau/initstate": "live",
    })
    os.makedirs(os.path.join(root, "sys/firmware/efi/efivars"))
    with open(os.path.join(root, nd.SECURE_BOOT_EFIVAR), "wb") as handle:
        handle.write(b"\x06\x00\x00\x00\x01")
    host = FakeHost({"dpkg-query": (0, "", "")})
    state = nd.DriverStateReader(root, host.run_command, host.which).gather()
    assert [s["address"] for s in state["nvswitches"]] == ["0000:05:00.0"] and state["nvswitch_present"] is True
    assert state["nouveau_bound"] == ["0000:18:00.0"] and state["module"]["nouveau_loaded"] is True
    assert state["secure_boot"] == {"state": "enabled", "source": "efivars"}
    assert state["module"]["loaded"] is False


def test_reader_prefers_mokutil_and_says_what_it_cannot_read(tmp_path):
    host = FakeHost({"mokutil": (0, "SecureBoot disabled\n", ""), "dpkg-query": (2, "", "dpkg-query: error")})
    state = nd.DriverStateReader(str(tmp_path), host.run_command, host.which).gather(kernel_log=True)
    assert state["secure_boot"] == {"state": "disabled", "source": "mokutil"}
    assert state["pci_checkable"] is False and state["gpu_present"] is None
    assert state["packages"] is None and state["installed"] is None
    facts = [item["fact"] for item in state["not_checkable"]]
    assert facts == ["pci", "packages", "kernel_log"]
    assert "journalctl is not installed; dmesg is not installed" in state["not_checkable"][-1]["reason"]


def test_kernel_log_skips_an_empty_journal_and_reads_dmesg(tmp_path):
    """In a container journalctl -k answers '-- No entries --': that is no kernel log."""
    host = FakeHost({"journalctl": (0, "-- No entries --\n", ""), "dmesg": (0, "[ 1.0] NVRM: " + nd.OPEN_MODULE_ERROR, "")})
    log = nd.DriverStateReader(str(tmp_path), host.run_command, host.which).kernel_log()
    assert log["source"] == "dmesg" and len(log["errors"]) == 1


def test_kernel_log_file_wins(tmp_path):
    path = tmp_path / "kmsg.log"
    path.write_text("nothing to see\n")
    host = FakeHost({"journalctl": (0, "NVRM: " + nd.OPEN_MODULE_ERROR, "")})
    log = nd.DriverStateReader(str(tmp_path), host.run_command, host.which).kernel_log(str(path))
    assert log == {"checkable": True, "source": str(path), "errors": []}
    assert host.calls == []


def test_initramfs_staleness(tmp_path):
    reader = nd.DriverStateReader(str(tmp_path), FakeHost().run_command, FakeHost().which)
    image, blacklist = tmp_path / "initrd.img", tmp_path / "blacklist.conf"
    blacklist.write_text("blacklist nouveau\n")
    assert reader.initramfs(str(image), [str(blacklist)])["stale"] is True  # missing image
    image.write_text("image")
    os.utime(str(blacklist), (1000, 1000))
    os.utime(str(image), (2000, 2000))
    assert reader.initramfs(str(image), [str(blacklist)]) == {
        "image": str(image), "exists": True, "stale": False, "newer_inputs": []}
    os.utime(str(blacklist), (3000, 3000))
    assert reader.initramfs(str(image), [str(blacklist)])["newer_inputs"] == [str(blacklist)]
    assert reader.initramfs(None, []) is None


def test_run_installer_files(tmp_path):
    left = tmp_path / "nvidia-installer.log"
    left.write_text("log")
    reader = nd.DriverStateReader("/", FakeHost().run_command, FakeHost().which)
    assert reader.run_installer((str(left), str(tmp_path / "nvidia-uninstall"))) == [str(left)]


def test_a_loaded_module_seen_only_in_proc(tmp_path):
    """SYNTHETIC: a sandbox that hides /sys/module but shows /proc/driver/nvidia (there only while loaded)."""
    root = _tree(tmp_path, {"proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04"})
    reader = nd.DriverStateReader(root, FakeHost().run_command, FakeHost().which)
    module = reader.kernel_module()
    assert (module["loaded"], module["version"], module["flavor"]) == (True, "580.159.04", "open")
    assert module["loaded_modules"] == [] and reader.not_checkable == []
