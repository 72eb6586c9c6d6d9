# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""NVIDIA driver state of a host: parsers of what the kernel, dpkg and the firmware expose, and a reader.

The parsers are pure functions of the text (or bytes) they are given, so unit tests feed them real
captures. ``DriverStateReader`` is the only part that does I/O: it reads ``sys/``, ``proc/`` and
``dev/`` below a root directory (``/`` on a real host, a fake tree in tests) and runs ``dpkg-query``,
``mokutil``, ``journalctl`` and ``dmesg`` through a ``run_command`` callable when they exist.

A fact that cannot be read (a sandboxed or read-only host, a tool that is not installed) is ``None``
and is listed in ``not_checkable`` with the reason; reading never fails for that.
"""

import os
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple, cast

NVIDIA_VENDOR_ID = "0x10de"
# PCI classes (first four hex digits of the class file): VGA and 3D controllers are GPUs (an H200
# is a 3D controller, 0x030200); NVSwitches are "other bridge" devices of the NVIDIA vendor.
GPU_CLASSES = ("0x0300", "0x0302")
NVSWITCH_CLASS = "0x0680"

OPEN_MODULE_ERROR = "requires use of the NVIDIA open kernel modules"
SECURE_BOOT_EFIVAR = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
# Left behind by NVIDIA's .run installer; a driver installed that way fights the packages.
RUN_INSTALLER_FILES = ("/usr/bin/nvidia-uninstall", "/var/log/nvidia-installer.log")

# PCI device-id ranges of GPUs that only the open kernel modules drive (Blackwell and Grace
# Hopper). From released parts: B200 0x2901, RTX PRO 6000 Blackwell 0x2bb1/0x2bb5, GeForce RTX 50
# 0x2b85/0x2c02/0x2d04/0x2f04, B300 0x3182, GH200 0x2342/0x2348. The verify step also reads the
# architecture nvidia-smi reports, which covers parts newer than this table.
OPEN_ONLY_DEVICES = (
    (0x2342, 0x2342, "Grace Hopper"),
    (0x2348, 0x2348, "Grace Hopper"),
    (0x2900, 0x29FF, "Blackwell"),
    (0x2B00, 0x2FFF, "Blackwell"),
    (0x3100, 0x31FF, "Blackwell"),
)
OPEN_ONLY_ARCHITECTURES = ("Blackwell",)
# Kernel modules whose presence in /sys/module the facts report.
KNOWN_MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem", "nouveau")

_PROC_VERSION_RE = re.compile(
    r"NVRM version:\s+NVIDIA UNIX\s+(?P<kind>Open Kernel Module for \S+|\S+ Kernel Module)\s+"
    r"(?P<version>\d+(?:\.\d+)+)"
)
_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*$")
_UPSTREAM_RE = re.compile(r"^(?:\d+:)?(?P<upstream>\d+(?:\.\d+)+)")
_MOKUTIL_RE = re.compile(r"SecureBoot\s+(enabled|disabled)", re.IGNORECASE)

# Packages whose version is the installed driver's, best first: the kernel module's package, then
# the user-space library. Names of NVIDIA's repositories (Debian: unversioned; Ubuntu: -580 before
# 590, unversioned after) and of Ubuntu's own -server packages.
DRIVER_PACKAGE_PATTERNS = (
    ("module", re.compile(r"^nvidia-kernel-open-dkms$"), "open"),
    ("module", re.compile(r"^nvidia-kernel-dkms$"), "proprietary"),
    ("module", re.compile(r"^nvidia-dkms(-\d+)?(-server)?-open$"), "open"),
    ("module", re.compile(r"^nvidia-dkms(-\d+)?(-server)?$"), "proprietary"),
    ("module", re.compile(r"^nvidia-headless-no-dkms-\d+(-server)?-open$"), "open"),
    ("module", re.compile(r"^nvidia-headless-no-dkms-\d+(-server)?$"), "proprietary"),
    ("userspace", re.compile(r"^libnvidia-compute(-\d+)?(-server)?$"), None),
    ("userspace", re.compile(r"^nvidia-driver-cuda$"), None),
    ("userspace", re.compile(r"^nvidia-utils(-\d+)?(-server)?$"), None),
    ("userspace", re.compile(r"^nvidia-smi$"), None),
)
# Which packages the facts report at all (dpkg knows thousands).
REPORTED_PACKAGES_RE = re.compile(
    r"^((lib)?nvidia-|libcuda|cuda-drivers|cuda-toolkit-|linux-modules-nvidia-|firmware-nvidia|datacenter-gpu-manager)"
)
DPKG_QUERY_FORMAT = "${Package}\\t${Version}\\t${db:Status-Abbrev}\\n"


def _strip(value):
    if value is None:
        return None
    value = value.strip()
    return value or None


def version_key(version: Optional[str]) -> Optional[Tuple[int, ...]]:
    """``"580.159.04"`` -> ``(580, 159, 4)``; None or unreadable -> None."""
    version = _strip(version)
    if version is None or not _VERSION_RE.match(version):
        return None
    return tuple(int(part) for part in version.split("."))


def compare_versions(left: str, right: str) -> int:
    """-1, 0 or 1 like cmp() for dotted numeric versions (``580.95.05`` < ``580.159.04``)."""
    a, b = version_key(left), version_key(right)
    if a is None or b is None:
        raise ValueError("cannot compare versions %r and %r" % (left, right))
    width = max(len(a), len(b))
    a = a + (0,) * (width - len(a))
    b = b + (0,) * (width - len(b))
    return (a > b) - (a < b)


def upstream_version(debian_version: Optional[str]) -> Optional[str]:
    """The driver version inside a package version: ``580.95.05-0ubuntu1`` -> ``580.95.05``."""
    match = _UPSTREAM_RE.match(debian_version or "")
    return match.group("upstream") if match else None


def parse_proc_driver_version(text: Optional[str]) -> Optional[Dict[str, str]]:
    """``/proc/driver/nvidia/version`` -> ``{flavor, version, line}``; None when it names no module.

    Open: ``NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...``.
    Proprietary: ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 ...``.
    """
    for line in (text or "").splitlines():
        match = _PROC_VERSION_RE.search(line)
        if match:
            flavor = "open" if match.group("kind").startswith("Open") else "proprietary"
            return {"flavor": flavor, "version": match.group("version"), "line": line.strip()}
    return None


def parse_module_version(text: Optional[str]) -> Optional[str]:
    """``/sys/module/nvidia/version`` -> ``"580.159.04"``; None when empty or unreadable."""
    text = _strip(text)
    return text if text and _VERSION_RE.match(text) else None


def parse_dpkg_query(text: Optional[str]) -> Dict[str, Dict[str, Any]]:
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`` -> {name: info}.

    ``info``: ``version``, ``status`` (the abbreviation), ``installed`` (unpacked and configured)
    and ``held`` (selection ``hold``).
    """
    packages = {}
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or not parts[0].strip():
            continue
        name, version, status = parts[0].strip(), parts[1].strip(), parts[2].strip()
        name = name.split(":", 1)[0]  # multiarch suffix
        packages[name] = {
            "version": version or None,
            "status": status,
            "installed": len(status) >= 2 and status[1] == "i",
            "held": status[:1] == "h",
        }
    return packages


def installed_driver(packages: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The installed driver from dpkg's packages: ``{version, package, flavor, versions}``.

    ``version`` comes from the kernel module's package when there is one, else from the user-space
    library's; ``versions`` lists every driver version found (more than one: a half-done upgrade).
    ``flavor`` is ``open``/``proprietary`` from the module package, None without one.
    """
    found = []
    for name in sorted(packages):
        info = packages[name]
        if not info.get("installed"):
            continue
        for rank, (kind, pattern, flavor) in enumerate(DRIVER_PACKAGE_PATTERNS):
            if pattern.match(name):
                found.append((rank, kind, name, upstream_version(info.get("version")), flavor))
                break
    if not found:
        return {"version": None, "package": None, "flavor": None, "versions": []}
    found.sort()
    best = found[0]
    flavors = [item[4] for item in found if item[1] == "module" and item[4]]
    # upstream_version() only returns dotted numbers, so version_key() is never None here.
    versions = sorted(set(item[3] for item in found if item[3]), key=lambda v: cast(Tuple[int, ...], version_key(v)))
    return {"version": best[3], "package": best[2], "flavor": flavors[0] if flavors else None, "versions": versions}


def parse_mokutil_sb_state(text: Optional[str]) -> Optional[str]:
    """``mokutil --sb-state`` -> ``enabled``/``disabled``; None when it could not tell (no EFI)."""
    match = _MOKUTIL_RE.search(text or "")
    return match.group(1).lower() if match else None


def parse_secure_boot_efivar(data: Optional[bytes]) -> Optional[str]:
    """The SecureBoot EFI variable (4 attribute bytes, then 1 value byte) -> ``enabled``/``disabled``/None."""
    if data is None or len(data) < 5:
        return None
    value = data[4] if isinstance(data[4], int) else ord(data[4])
    return "enabled" if value == 1 else "disabled"


def find_open_module_errors(text: Optional[str]) -> List[str]:
    """Kernel-log lines saying a GPU needs the open kernel modules (proprietary module on Blackwell)."""
    return [line.strip() for line in (text or "").splitlines() if OPEN_MODULE_ERROR in line]


def open_only_family(device_id: Any) -> Optional[str]:
    """``"0x2bb5"`` -> ``"Blackwell"`` when only the open kernel modules drive that GPU, else None."""
    try:
        number = int(device_id, 16)
    except (TypeError, ValueError):
        return None
    for first, last, family in OPEN_ONLY_DEVICES:
        if first <= number <= last:
            return family
    return None


def classify_pci_device(vendor: Optional[str], pci_class: Optional[str]) -> Optional[str]:
    """``gpu``, ``nvswitch`` or None for one PCI function (vendor and class as sysfs prints them)."""
    if (vendor or "").lower() != NVIDIA_VENDOR_ID or not pci_class:
        return None
    prefix = pci_class.lower()[:6]
    if prefix in GPU_CLASSES:
        return "gpu"
    if prefix == NVSWITCH_CLASS:
        return "nvswitch"
    return None


def classify_nvidia_smi_failure(text: Optional[str]) -> Tuple[str, str]:
    """What a failing nvidia-smi says, as ``(kind, fix)``: mismatch, no_driver, no_devices or other."""
    text = text or ""
    lowered = text.lower()
    if "driver/library version mismatch" in lowered:
        return "mismatch", (
            "the loaded kernel module is older than the installed driver: reboot the host "
            "(or stop every GPU user and reload the nvidia modules)"
        )
    if "couldn't communicate with the nvidia driver" in lowered or "nvidia kernel module" in lowered:
        return "no_driver", (
            "no nvidia kernel module is loaded: check `dmesg` for NVRM errors (Secure Boot refusing an "
            "unsigned module, nouveau holding the GPU), then reboot or `modprobe nvidia`"
        )
    if "no devices were found" in lowered:
        return "no_devices", (
            "the driver sees no GPU: on Blackwell this is the proprietary kernel module (use the open "
            "one); otherwise check `dmesg` for RmInitAdapter errors"
        )
    return "other", "run `nvidia-smi` by hand and read `dmesg` for NVRM errors"


class DriverStateReader(object):
    """Reads a host's driver state; ``gather()`` returns it as one dict.

    ``run_command(argv)`` returns ``(rc, stdout, stderr)``; ``which(name)`` returns a path or None
    (``AnsibleModule.run_command`` and ``AnsibleModule.get_bin_path`` in the modules).
    """

    def __init__(self, root, run_command, which):
        self.root = root or "/"
        self.run_command = run_command
        self.which = which
        self.not_checkable = []

    # --- files below the root -----------------------------------------------------------------
    def _path(self, relative):
        return os.path.join(self.root, relative.lstrip("/"))

    def read(self, relative: str) -> Optional[str]:
        try:
            with open(self._path(relative), "r") as handle:
                return handle.read()
        except (IOError, OSError, UnicodeDecodeError):
            return None

    def read_bytes(self, relative: str) -> Optional[bytes]:
        try:
            with open(self._path(relative), "rb") as handle:
                return handle.read()
        except (IOError, OSError):
            return None

    def exists(self, relative: str) -> bool:
        return os.path.lexists(self._path(relative))

    def listdir(self, relative: str) -> Optional[List[str]]:
        try:
            return sorted(os.listdir(self._path(relative)))
        except (IOError, OSError):
            return None

    def link_name(self, relative: str) -> Optional[str]:
        """Basename of a symlink's target (a PCI device's ``driver``), None when absent."""
        path = self._path(relative)
        try:
            return os.path.basename(os.readlink(path))
        except (IOError, OSError):
            return None

    def _unreadable(self, fact, reason):
        self.not_checkable.append({"fact": fact, "reason": reason})

    # --- facts --------------------------------------------------------------------------------
    def pci(self) -> Dict[str, Any]:
        """NVIDIA GPUs and NVSwitches on the PCI bus; ``checkable`` False when sysfs lists no device."""
        entries = self.listdir("sys/bus/pci/devices")
        if not entries:
            self._unreadable("pci", "%s lists no PCI device (sandboxed or no sysfs)" % self._path("sys/bus/pci/devices"))
            return {"checkable": False, "gpus": [], "nvswitches": []}
        gpus, switches = [], []
        for address in entries:
            base = "sys/bus/pci/devices/%s/" % address
            vendor = _strip(self.read(base + "vendor"))
            pci_class = _strip(self.read(base + "class"))
            kind = classify_pci_device(vendor, pci_class)
            if kind is None:
                continue
            device_id = (_strip(self.read(base + "device")) or "").lower() or None
            item = {
                "address": address,
                "vendor": vendor.lower(),
                "device": device_id,
                "class": pci_class.lower(),
                "driver": self.link_name(base + "driver"),
            }
            if kind == "gpu":
                item["open_only_family"] = open_only_family(device_id)
                gpus.append(item)
            else:
                switches.append(item)
        return {"checkable": True, "gpus": gpus, "nvswitches": switches}

    def kernel_module(self) -> Dict[str, Any]:
        proc = self.read("proc/driver/nvidia/version")
        parsed = parse_proc_driver_version(proc)
        # /proc/driver/nvidia exists only while the module is loaded (a sandbox may hide /sys/module).
        loaded = self.exists("sys/module/nvidia") or parsed is not None
        version = parse_module_version(self.read("sys/module/nvidia/version")) if loaded else None
        version = version or (parsed or {}).get("version")
        if loaded and version is None:
            self._unreadable("module_version", "%s is not readable" % self._path("sys/module/nvidia/version"))
        if loaded and parsed is None:
            self._unreadable("module_flavor", "%s is not readable" % self._path("proc/driver/nvidia/version"))
        return {
            "loaded": loaded,
            "version": version,
            "flavor": (parsed or {}).get("flavor"),
            "proc_version": (parsed or {}).get("line"),
            "loaded_modules": [name for name in KNOWN_MODULES if self.exists("sys/module/" + name)],
            "uvm_device": self.exists("dev/nvidia-uvm"),
            "nouveau_loaded": self.exists("sys/module/nouveau"),
        }

    def packages(self) -> Optional[Dict[str, Dict[str, Any]]]:
        dpkg_query = self.which("dpkg-query")
        if not dpkg_query:
            self._unreadable("packages", "dpkg-query is not installed (not a Debian-family host)")
            return None
        rc, out, err = self.run_command([dpkg_query, "-W", "-f", DPKG_QUERY_FORMAT])
        if rc != 0:
            self._unreadable("packages", "dpkg-query failed (rc=%s): %s" % (rc, (err or out or "").strip()))
            return None
        return dict((name, info) for name, info in parse_dpkg_query(out).items() if REPORTED_PACKAGES_RE.match(name))

    def secure_boot(self) -> Dict[str, Optional[str]]:
        mokutil = self.which("mokutil")
        if mokutil:
            rc, out, err = self.run_command([mokutil, "--sb-state"])
            state = parse_mokutil_sb_state((out or "") + "\n" + (err or ""))
            if state:
                return {"state": state, "source": "mokutil"}
        state = parse_secure_boot_efivar(self.read_bytes(SECURE_BOOT_EFIVAR))
        if state:
            return {"state": state, "source": "efivars"}
        self._unreadable("secure_boot", "neither mokutil nor the SecureBoot EFI variable is available")
        return {"state": "unknown", "source": None}

    def run_installer(self, files: Iterable[str] = RUN_INSTALLER_FILES) -> List[str]:
        return [path for path in files if os.path.lexists(path)]

    def kernel_log(self, log_file: Optional[str] = None) -> Dict[str, Any]:
        """Lines of this boot's kernel log that say a GPU needs the open modules: ``{checkable, source, errors}``."""
        if log_file:
            try:
                with open(log_file, "r") as handle:
                    return {"checkable": True, "source": log_file, "errors": find_open_module_errors(handle.read())}
            except (IOError, OSError) as exc:
                self._unreadable("kernel_log", "cannot read %s: %s" % (log_file, exc))
                return {"checkable": False, "source": None, "errors": []}
        tried = []
        for name, args in (("journalctl", ["-k", "-b", "--no-pager", "-q"]), ("dmesg", [])):
            path = self.which(name)
            if not path:
                tried.append("%s is not installed" % name)
                continue
            rc, out, err = self.run_command([path] + args)
            # "-- No entries --" and the like: a journal without kernel messages (a container) is no log.
            lines = [line for line in (out or "").splitlines() if line.strip() and not line.startswith("-- ")]
            if rc != 0 or not lines:
                tried.append("%s returned nothing (rc=%s%s)" % (name, rc, ": " + err.strip() if (err or "").strip() else ""))
                continue
            return {"checkable": True, "source": name, "errors": find_open_module_errors(out)}
        self._unreadable("kernel_log", "; ".join(tried))
        return {"checkable": False, "source": None, "errors": []}

    def initramfs(self, image: Optional[str], inputs: Optional[Iterable[str]]) -> Optional[Dict[str, Any]]:
        """Whether ``image`` is missing or older than one of ``inputs`` (files it must contain)."""
        if not image:
            return None
        try:
            built = os.stat(image).st_mtime
        except OSError:
            return {"image": image, "exists": False, "stale": True, "newer_inputs": []}
        newer = []
        for path in inputs or []:
            try:
                if os.stat(path).st_mtime > built:
                    newer.append(path)
            except OSError:
                continue
        return {"image": image, "exists": True, "stale": bool(newer), "newer_inputs": newer}

    @staticmethod
    def paths(paths: Optional[Iterable[str]]) -> Dict[str, str]:
        """``{path: resolved target}`` of the paths that exist (a directory to create, where a link points)."""
        return dict((path, os.path.realpath(path)) for path in paths or [] if os.path.lexists(path))

    def gather(self, kernel_log: bool = False, kernel_log_file: Optional[str] = None,
               initramfs_image: Optional[str] = None, initramfs_inputs: Optional[Iterable[str]] = None,
               paths: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        pci = self.pci()
        module = self.kernel_module()
        packages = self.packages()
        driver = installed_driver(packages) if packages is not None else None
        nouveau_bound = [gpu["address"] for gpu in pci["gpus"] if gpu["driver"] == "nouveau"]
        facts = {
            "root": self.root,
            "pci_checkable": pci["checkable"],
            "gpus": pci["gpus"],
            "nvswitches": pci["nvswitches"],
            "gpu_present": bool(pci["gpus"]) if pci["checkable"] else None,
            "nvswitch_present": bool(pci["nvswitches"]) if pci["checkable"] else None,
            "open_only_gpus": [gpu["address"] for gpu in pci["gpus"] if gpu["open_only_family"]],
            "module": module,
            "nouveau_bound": nouveau_bound,
            "packages": packages,
            "installed": driver,
            "secure_boot": self.secure_boot(),
            "run_installer": self.run_installer(),
            "initramfs": self.initramfs(initramfs_image, initramfs_inputs),
            "paths": self.paths(paths),
        }
        if kernel_log:
            facts["kernel_log"] = self.kernel_log(kernel_log_file)
        facts["not_checkable"] = list(self.not_checkable)
        return facts
