# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""GPU discovery for pdserve.sglang: parsers of nvidia-smi output and sysfs, and a reader.

The parsers are pure functions of the text they are given, so the unit tests feed them real
captures. ``GpuDiscovery`` is the only part that does I/O: it runs nvidia-smi through a
``run_command`` callable (``AnsibleModule.run_command`` in the module) and reads sysfs through
``SysfsReader``, whose root can point at a fixture tree.
"""

import csv
import os
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

# nvidia-smi's XML is produced locally by the NVIDIA driver on the managed host and read back by
# this module on that same host: it is trusted input, not data from the network. The stdlib
# parser is therefore enough (defusedxml would be a dependency the target host does not have).
# expat does not fetch the external DTD named in the DOCTYPE (nvsmi_device_v13.dtd).
import xml.etree.ElementTree as ET  # nosec B405 - trusted, locally produced nvidia-smi output

# Fields asked of `nvidia-smi --query-gpu`, in this order.
QUERY_FIELDS = (
    "index",
    "uuid",
    "name",
    "pci.bus_id",
    "memory.total",
    "compute_cap",
    "driver_version",
)

# Values nvidia-smi prints where a field has no value on this GPU or driver.
_EMPTY_VALUES = frozenset(["", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]"])

NO_DEVICES_MARKER = "No devices were found"

# Where drivers and containers put nvidia-smi and nvcc when they are not on PATH (the H200 device
# machine has nvidia-smi in /usr/local/nvidia/bin).
NVIDIA_SMI_DIRS = ("/usr/bin", "/usr/local/nvidia/bin", "/usr/local/cuda/bin")
NVCC_DIRS = ("/usr/local/cuda/bin",)

_PCI_RE = re.compile(r"^([0-9a-fA-F]+):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")
_UNIT_RE = re.compile(r"^(?P<name>[^\[]+?)\s*\[(?P<unit>[^\]]+)\]$")
_NODE_DIR_RE = re.compile(r"^node(\d+)$")
_NVCC_RE = re.compile(r"release\s+(?P<release>\d+\.\d+)(?:,\s*V(?P<full>[\d.]+))?")
_MIB_RE = re.compile(r"^\s*(\d+)\s*MiB\s*$")


class GpuParseError(ValueError):
    """Output of nvidia-smi or sysfs that does not have the expected shape."""


class GpuDiscoveryError(Exception):
    """GPU discovery could not complete.

    ``kind`` is one of ``missing`` (no nvidia-smi), ``no_gpu`` (nvidia-smi sees no GPU) or
    ``failed`` (nvidia-smi ran and failed, or printed something unreadable).
    """

    def __init__(self, msg, kind, cmd=None, rc=None, stdout=None, stderr=None):
        super(GpuDiscoveryError, self).__init__(msg)
        self.msg = msg
        self.kind = kind
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr


class NoGpuFound(GpuDiscoveryError):
    """nvidia-smi works but lists no GPU; ``facts`` holds what was found (driver, NUMA nodes)."""

    def __init__(self, facts):
        super(NoGpuFound, self).__init__(
            "nvidia-smi found no NVIDIA GPU (%r). Check that the GPUs are on the PCI bus "
            "(`lspci -d 10de:`), that the nvidia kernel module is loaded (`lsmod | grep nvidia`) and "
            "run `nvidia-smi` by hand; set allow_missing=true to accept a host without GPUs." % NO_DEVICES_MARKER,
            "no_gpu",
        )
        self.facts = facts


def _clean(value):
    """Strip a value and map nvidia-smi's placeholders for "no value" to None."""
    if value is None:
        return None
    value = value.strip()
    if value.lower() in _EMPTY_VALUES:
        return None
    return value


def parse_query_gpu_csv(text: str, fields: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """Parse ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` output.

    With ``fields`` None the first line is taken as the header (``--format=csv``), units in it
    (``memory.total [MiB]``) are dropped from the field names and stripped from the values.
    Returns a list of dicts keyed by field name; placeholders such as ``[N/A]`` become None.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    units = {}
    if fields is None:
        header = next(csv.reader([lines[0]], skipinitialspace=True))
        fields = []
        for column in header:
            column = column.strip()
            match = _UNIT_RE.match(column)
            if match:
                fields.append(match.group("name"))
                units[match.group("name")] = match.group("unit")
            else:
                fields.append(column)
        lines = lines[1:]
    fields = list(fields)
    rows = []
    for number, row in enumerate(csv.reader(lines, skipinitialspace=True), start=1):
        if len(row) != len(fields):
            raise GpuParseError(
                "nvidia-smi --query-gpu line %d has %d values, expected %d (%s): %r"
                % (number, len(row), len(fields), ", ".join(fields), ",".join(row))
            )
        record = {}
        for field, value in zip(fields, row):
            value = _clean(value)
            unit = units.get(field)
            if value is not None and unit and value.endswith(" " + unit):
                value = value[: -len(unit) - 1].strip()
            record[field] = value
        rows.append(record)
    return rows


def parse_compute_capability(value: Any) -> Optional[Tuple[int, int]]:
    """``"9.0"`` -> ``(9, 0)``; ``"12.0"`` -> ``(12, 0)``; None or unreadable -> None."""
    value = _clean(value)
    if value is None:
        return None
    match = re.match(r"^(\d+)\.(\d+)$", value)
    if not match:
        raise GpuParseError("unreadable compute capability %r (expected MAJOR.MINOR)" % value)
    return int(match.group(1)), int(match.group(2))


def sm_name(major: int, minor: int) -> str:
    """The CUDA architecture name for a compute capability: (9, 0) -> ``sm_90``, (12, 0) -> ``sm_120``."""
    return "sm_%d%d" % (major, minor)


def pci_sysfs_address(bus_id: Optional[str]) -> str:
    """nvidia-smi's PCI bus id -> the name of its directory under /sys/bus/pci/devices.

    ``00000000:00:06.0`` -> ``0000:00:06.0``; ``00000000:9A:00.0`` -> ``0000:9a:00.0``.
    nvidia-smi prints an 8-hex-digit domain in upper case, the kernel at least 4 digits in lower case.
    """
    match = _PCI_RE.match((bus_id or "").strip())
    if not match:
        raise GpuParseError("unreadable PCI bus id %r (expected DOMAIN:BUS:DEVICE.FUNCTION)" % (bus_id,))
    domain, bus, device, function = match.groups()
    return "%04x:%02x:%02x.%s" % (int(domain, 16), int(bus, 16), int(device, 16), function)


def parse_numa_node(text: Optional[str]) -> Optional[int]:
    """Content of a PCI device's ``numa_node`` file -> int, or None when unknown (-1 or missing)."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    try:
        node = int(text)
    except ValueError:
        raise GpuParseError("unreadable numa_node %r" % text)
    return node if node >= 0 else None


def parse_cpulist(text: Optional[str]) -> List[int]:
    """A kernel CPU list (``0-3,8-11``, ``0-63,128-191``, ``5``, empty) -> sorted list of ints."""
    if text is None:
        return []
    cpus: Set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        match = re.match(r"^(\d+)(?:-(\d+))?$", part)
        if not match:
            raise GpuParseError("unreadable CPU list %r" % text)
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise GpuParseError("unreadable CPU list %r (range %s goes backwards)" % (text, part))
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def _parse_mib(value):
    value = _clean(value)
    if value is None:
        return None
    match = _MIB_RE.match(value)
    if match:
        return int(match.group(1))
    try:
        return int(float(value))
    except ValueError:
        raise GpuParseError("unreadable memory size %r (expected MiB)" % value)


def _text(element, path):
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    return _clean(found.text)


def parse_nvidia_smi_xml(text: str) -> Dict[str, Any]:
    """Parse ``nvidia-smi -q -x``: driver and CUDA (driver API) versions and per-GPU details."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise GpuParseError("nvidia-smi -q -x printed no readable XML (%s)" % exc)
    if root.tag != "nvidia_smi_log":
        raise GpuParseError("nvidia-smi -q -x printed <%s>, expected <nvidia_smi_log>" % root.tag)
    attached = _text(root, "attached_gpus")
    gpus = []
    for gpu in root.findall("gpu"):
        minor = _text(gpu, "minor_number")
        gpus.append(
            {
                "pci_bus_id": _text(gpu, "pci/pci_bus_id") or _clean(gpu.get("id")),
                "uuid": _text(gpu, "uuid"),
                "name": _text(gpu, "product_name"),
                "architecture": _text(gpu, "product_architecture"),
                "minor_number": int(minor) if minor is not None and minor.isdigit() else None,
                "memory_total_mib": _parse_mib(_text(gpu, "fb_memory_usage/total")),
                "persistence_mode": _text(gpu, "persistence_mode"),
                "mig_mode": _text(gpu, "mig_mode/current_mig"),
            }
        )
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": int(attached) if attached is not None and attached.isdigit() else None,
        "gpus": gpus,
    }


def parse_nvcc_version(text: Optional[str]) -> Optional[Dict[str, str]]:
    """``nvcc --version`` -> ``{"version": "13.0", "full_version": "13.0.88"}``, or None."""
    match = _NVCC_RE.search(text or "")
    if not match:
        return None
    return {"version": match.group("release"), "full_version": match.group("full") or match.group("release")}


def _int_or_none(value):
    value = _clean(value)
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        raise GpuParseError("unreadable number %r" % value)


def build_gpu_facts(query_rows: List[Dict[str, Any]], xml_info: Optional[Dict[str, Any]], sysfs: "SysfsReader") -> List[Dict[str, Any]]:
    """Merge ``--query-gpu`` rows, ``-q -x`` details and sysfs into the per-GPU facts, by index.

    ``sysfs`` is anything with ``read(relative_path)`` returning the stripped file content or None.
    """
    xml_gpus = (xml_info or {}).get("gpus", [])
    by_uuid = dict((g["uuid"], g) for g in xml_gpus if g.get("uuid"))
    by_bus = {}
    for g in xml_gpus:
        try:
            by_bus[pci_sysfs_address(g.get("pci_bus_id"))] = g
        except GpuParseError:
            pass
    gpus = []
    for row in query_rows:
        bus_id = row.get("pci.bus_id")
        address = pci_sysfs_address(bus_id)
        detail = by_uuid.get(row.get("uuid")) or by_bus.get(address) or {}
        capability = parse_compute_capability(row.get("compute_cap"))
        memory = _int_or_none(row.get("memory.total"))
        if memory is None:
            memory = detail.get("memory_total_mib")
        device_dir = "sys/bus/pci/devices/" + address
        cpulist = sysfs.read(device_dir + "/local_cpulist")
        gpus.append(
            {
                "index": _int_or_none(row.get("index")),
                "uuid": row.get("uuid") or detail.get("uuid"),
                "name": row.get("name") or detail.get("name"),
                "architecture": detail.get("architecture"),
                "compute_capability": "%d.%d" % capability if capability else None,
                "compute_capability_major": capability[0] if capability else None,
                "compute_capability_minor": capability[1] if capability else None,
                "sm": sm_name(*capability) if capability else None,
                "memory_total_mib": memory,
                "pci_bus_id": bus_id,
                "pci_address": address,
                "numa_node": parse_numa_node(sysfs.read(device_dir + "/numa_node")),
                "local_cpulist": cpulist,
                "local_cpus": parse_cpulist(cpulist),
                "persistence_mode": detail.get("persistence_mode"),
                "mig_mode": detail.get("mig_mode"),
            }
        )
    gpus.sort(key=lambda g: (g["index"] is None, g["index"]))
    return gpus


def read_numa_nodes(sysfs: "SysfsReader") -> List[Dict[str, Any]]:
    """NUMA nodes from ``/sys/devices/system/node/node*/cpulist``: ``[{id, cpulist, cpus}]`` by id."""
    nodes: List[Dict[str, Any]] = []
    for entry in sysfs.listdir("sys/devices/system/node"):
        match = _NODE_DIR_RE.match(entry)
        if not match:
            continue
        cpulist = sysfs.read("sys/devices/system/node/%s/cpulist" % entry)
        nodes.append({"id": int(match.group(1)), "cpulist": cpulist or "", "cpus": parse_cpulist(cpulist)})
    nodes.sort(key=lambda n: n["id"])
    return nodes


class SysfsReader(object):
    """Reads small files below ``root`` (``/`` on a real host, a fixture tree in tests)."""

    def __init__(self, root="/"):
        self.root = root or "/"

    def _path(self, relative):
        return os.path.join(self.root, relative.lstrip("/"))

    def read(self, relative: str) -> Optional[str]:
        try:
            with open(self._path(relative), "r") as handle:
                return handle.read().strip()
        except (IOError, OSError):
            return None

    def listdir(self, relative: str) -> List[str]:
        try:
            return sorted(os.listdir(self._path(relative)))
        except (IOError, OSError):
            return []


class GpuDiscovery(object):
    """Runs nvidia-smi (and nvcc when given) and reads sysfs; returns the facts as a dict.

    ``run_command(argv)`` must return ``(rc, stdout, stderr)`` like ``AnsibleModule.run_command``.
    Raises GpuDiscoveryError with kind ``no_gpu`` or ``failed``; a missing nvidia-smi is the
    caller's to detect (it owns the PATH search).
    """

    def __init__(self, run_command, nvidia_smi, sysfs, nvcc=None):
        self.run_command = run_command
        self.nvidia_smi = nvidia_smi
        self.sysfs = sysfs
        self.nvcc = nvcc
        self.warnings = []

    def _run(self, args):
        cmd = [self.nvidia_smi] + list(args)
        rc, out, err = self.run_command(cmd)
        return cmd, rc, out or "", err or ""

    def _failed(self, what, cmd, rc, out, err):
        output = "\n".join(part.strip() for part in (out, err) if part and part.strip())
        return GpuDiscoveryError(
            "%s failed (rc=%s): %s -- the NVIDIA driver is not working: run `nvidia-smi` by hand, "
            "look for NVRM errors in `dmesg`, check that the loaded kernel module matches the installed "
            "driver (a reboot is often needed after a driver or kernel update), or re-run the "
            "nvidia_driver role." % (what, rc, output or "no output"),
            "failed",
            cmd=cmd,
            rc=rc,
            stdout=out,
            stderr=err,
        )

    def query_gpus(self) -> List[Dict[str, Any]]:
        fields = list(QUERY_FIELDS)
        while True:
            cmd, rc, out, err = self._run(["--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
            combined = out + "\n" + err
            if NO_DEVICES_MARKER.lower() in combined.lower():
                return []
            if rc != 0 and "compute_cap" in fields and "not a valid field" in combined.lower():
                # Drivers older than R510 do not know compute_cap: ask without it.
                fields.remove("compute_cap")
                self.warnings.append(
                    "nvidia-smi does not know the compute_cap field (driver older than R510?): "
                    "compute capability is unknown."
                )
                continue
            if rc != 0:
                raise self._failed("nvidia-smi --query-gpu", cmd, rc, out, err)
            try:
                return parse_query_gpu_csv(out, fields)
            except GpuParseError as exc:
                raise GpuDiscoveryError(str(exc), "failed", cmd=cmd, rc=rc, stdout=out, stderr=err)

    def query_xml(self, tolerate_failure: bool = False) -> Optional[Dict[str, Any]]:
        cmd, rc, out, err = self._run(["-q", "-x"])
        if rc != 0:
            if tolerate_failure:
                return None
            raise self._failed("nvidia-smi -q -x", cmd, rc, out, err)
        try:
            return parse_nvidia_smi_xml(out)
        except GpuParseError as exc:
            if tolerate_failure:
                return None
            raise GpuDiscoveryError(str(exc), "failed", cmd=cmd, rc=rc, stdout=out, stderr=err)

    def toolkit_version(self) -> Optional[str]:
        if not self.nvcc:
            return None
        rc, out, err = self.run_command([self.nvcc, "--version"])
        parsed = parse_nvcc_version(out) if rc == 0 else None
        if parsed is None:
            self.warnings.append(
                "%s --version did not report a CUDA release (rc=%s): cuda_toolkit_version is null." % (self.nvcc, rc)
            )
            return None
        return parsed["version"]

    def discover(self) -> Dict[str, Any]:
        rows = self.query_gpus()
        # With no GPU, -q -x may fail too; the driver version is then best effort.
        xml_info = self.query_xml(tolerate_failure=not rows) or {}
        try:
            gpus = build_gpu_facts(rows, xml_info, self.sysfs)
            numa_nodes = read_numa_nodes(self.sysfs)
        except GpuParseError as exc:
            raise GpuDiscoveryError(str(exc), "failed")
        driver = xml_info.get("driver_version")
        if driver is None and rows:
            driver = rows[0].get("driver_version")
        facts = {
            "gpus": gpus,
            "gpu_count": len(gpus),
            "gpu_present": bool(gpus),
            "driver_version": driver,
            "cuda_version": xml_info.get("cuda_version"),
            "cuda_toolkit_version": self.toolkit_version(),
            "nvcc_path": self.nvcc,
            "numa_nodes": numa_nodes,
        }
        if not gpus:
            raise NoGpuFound(facts)
        return facts


def find_tool(get_bin_path: Callable[..., Optional[str]], name: str, extra_dirs: List[str]) -> Optional[str]:
    """PATH (and the sbin directories) first, then the usual driver/toolkit directories.

    ``get_bin_path`` is AnsibleModule.get_bin_path, which searches its opt_dirs before PATH, so the
    fallbacks are a second search.
    """
    return get_bin_path(name) or get_bin_path(name, opt_dirs=extra_dirs)
