# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The nvidia_driver verify step as a pure function: host state + GPU facts + expectations -> checks.

Each check is ``{check, status, gpu, message, fix}`` with status ``ok``, ``failed`` or
``not_checkable`` (a fact this host does not let us read: a sandbox, a missing tool). A failure
names the GPU it is about (``gpu``) and what to do (``fix``).
"""

from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.driver.nvidia_driver import (
    OPEN_ONLY_ARCHITECTURES,
    classify_nvidia_smi_failure,
    compare_versions,
    version_key,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.driver.policy import (
    pin_pattern,
    reboot_reasons,
)

OK, FAILED, NOT_CHECKABLE = "ok", "failed", "not_checkable"
# Lowest driver per GPU (NVIDIA's MIG user guide, "supported GPUs" by driver), matched in the name
# nvidia-smi prints; the first match wins (GB200 matches B200, GB300 matches B300).
GPU_MIN_DRIVER = (
    ("RTX PRO 6000 Blackwell", "575.51.03"),
    ("B300", "580.82.07"),
    ("B200", "570.133.20"),
    ("H200", "550.90.07"),
    ("H100", "525.85.12"),
)
MIG_MODES = ("disabled", "enabled", "unmanaged")
FIX_REBOOT = "reboot the host (the role does it with nvidia_driver_reboot: if_needed)"


def _check(name, status, message, fix=None, gpu=None):
    return {"check": name, "status": status, "gpu": gpu, "message": message, "fix": fix if status != OK else None}


def gpu_label(gpu: Dict[str, Any]) -> str:
    return "GPU %s (%s, %s)" % (gpu.get("index"), gpu.get("name"), gpu.get("pci_bus_id"))


def gpu_min_driver(name: Optional[str]) -> Optional[str]:
    """The lowest driver NVIDIA supports for a GPU name, None when the table does not know it."""
    lowered = (name or "").lower()
    for needle, version in GPU_MIN_DRIVER:
        if needle.lower() in lowered:
            return version
    return None


def normalize_capabilities(value: Any) -> List[str]:
    """``"12.0"``, ``12.0``, ``["9.0", "12.0"]`` or ``"9.0,12.0"`` -> ``["12.0"]``...; None/empty -> []."""
    if value is None or value == "":
        return []
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    result = []
    for item in items:
        text = str(item).strip()
        key = version_key(text)
        if key is None or len(key) > 2:
            raise ValueError("a compute capability looks like 12.0, got %r" % (item,))
        result.append("%d.%d" % (key[0], key[1] if len(key) > 1 else 0))
    return result


def _smi_check(gpu):
    if gpu.get("ok"):
        return _check("nvidia_smi", OK, "nvidia-smi answers (driver %s)" % gpu["facts"].get("driver_version"))
    kind, fix = classify_nvidia_smi_failure(gpu.get("error"))
    if gpu.get("missing"):
        fix = "install the driver (this role), or point nvidia_driver_nvidia_smi_path at nvidia-smi"
    return _check("nvidia_smi", FAILED, "nvidia-smi failed: %s" % (gpu.get("error") or "no output"), fix)


def _count_checks(state, gpus, smi_ok, expected):
    checks = []
    want = expected.get("gpu_count")
    listed = set(g.get("pci_address") for g in gpus)
    missing = [p for p in state.get("gpus", []) if p["address"] not in listed] if smi_ok else []
    for pci in missing:
        checks.append(_check(
            "gpu_count", FAILED,
            "the GPU at %s (10de:%s) is on the PCI bus but nvidia-smi does not list it" % (pci["address"], (pci["device"] or "?")[2:]),
            "read `dmesg` for NVRM/RmInitAdapter errors on that GPU; reseat or replace it", gpu=pci["address"]))
    if not smi_ok:
        checks.append(_check("gpu_count", FAILED, "cannot count the GPUs: nvidia-smi failed", "see the nvidia_smi check"))
    elif want is not None and len(gpus) != int(want):
        checks.append(_check(
            "gpu_count", FAILED, "expected %d GPU(s), nvidia-smi lists %d" % (int(want), len(gpus)),
            "check the inventory's pdserve_expected_gpu_count; if it is right, find the missing GPU "
            "(`lspci -d 10de:`, `dmesg`)"))
    elif not missing:
        checks.append(_check("gpu_count", OK, "%d GPU(s), as expected" % len(gpus) if want is not None else
                             "%d GPU(s); no expected count is set (pdserve_expected_gpu_count)" % len(gpus)))
    return checks


def _per_gpu(name, gpus, bad, ok_message, fix):
    """One ok check, or one failed check per GPU for which ``bad(gpu)`` returns a reason."""
    failures = []
    for gpu in gpus:
        reason = bad(gpu)
        if reason:
            failures.append(_check(name, FAILED, "%s: %s" % (gpu_label(gpu), reason), fix, gpu=gpu_label(gpu)))
    return failures or [_check(name, OK, ok_message)]


def _capability_checks(gpus, smi_ok, expected):
    wanted = normalize_capabilities(expected.get("compute_capability"))
    if not smi_ok:
        return [_check("compute_capability", FAILED, "cannot read compute capabilities: nvidia-smi failed",
                       "see the nvidia_smi check")]
    if not wanted:
        found = sorted(set(str(g.get("compute_capability")) for g in gpus))
        return [_check("compute_capability", OK, "compute capability %s; none expected is set "
                       "(pdserve_expected_compute_capability)" % ", ".join(found))]
    return _per_gpu(
        "compute_capability", gpus,
        lambda g: None if g.get("compute_capability") in wanted else
        "compute capability %s, expected %s" % (g.get("compute_capability"), " or ".join(wanted)),
        "every GPU has compute capability %s" % " or ".join(wanted),
        "check pdserve_expected_compute_capability against the hardware (`nvidia-smi --query-gpu=name,compute_cap "
        "--format=csv`); kernels built for another capability will not run on this GPU")


def _numa_check(facts, expected):
    want = expected.get("numa_nodes")
    nodes = [n for n in (facts or {}).get("numa_nodes", []) if n.get("cpus")]
    if want is None:
        return _check("numa_nodes", OK, "%d NUMA node(s); none expected is set (pdserve_expected_numa_nodes)" % len(nodes))
    if not nodes:
        return _check("numa_nodes", NOT_CHECKABLE, "the kernel exposes no NUMA node (sys/devices/system/node)")
    if len(nodes) != int(want):
        return _check("numa_nodes", FAILED, "expected %d NUMA node(s), the kernel shows %d" % (int(want), len(nodes)),
                      "check pdserve_expected_numa_nodes; NUMA off in the BIOS (node interleaving) shows one node")
    return _check("numa_nodes", OK, "%d NUMA node(s), as expected" % len(nodes))


def _driver_checks(gpus, driver, smi_ok, expected):
    if not smi_ok or not version_key(driver):
        return [_check("driver_version", FAILED, "cannot read the driver version: nvidia-smi failed",
                       "see the nvidia_smi check")]
    branch, version = str(expected.get("branch") or ""), expected.get("version") or ""
    checks = []
    if version and driver != version:
        checks.append(_check("driver_version", FAILED, "driver %s runs, %s is required" % (driver, version),
                             "run the role (it installs %s and reboots if needed)" % version))
    elif branch and version_key(driver)[0] < int(branch):
        checks.append(_check("driver_version", FAILED, "driver %s is below branch %s" % (driver, branch),
                             "run the role with nvidia_driver_branch %s (it upgrades and reboots if needed)" % branch))
    for gpu in gpus:
        minimum = gpu_min_driver(gpu.get("name"))
        if minimum and compare_versions(driver, minimum) < 0:
            checks.append(_check("driver_version", FAILED, "%s needs driver %s or newer, %s runs"
                                 % (gpu_label(gpu), minimum, driver),
                                 "install branch 580 or newer (nvidia_driver_branch)", gpu=gpu_label(gpu)))
    if not checks:
        pinned = "exactly %s" % version if version else "branch %s (%s)" % (branch, pin_pattern(branch)) if branch else "any branch"
        checks.append(_check("driver_version", OK, "driver %s: %s, and every GPU's minimum" % (driver, pinned)))
    return checks


def _flavor_checks(state, gpus, expected):
    want = expected.get("kernel_module") or "open"
    flavor = (state.get("module") or {}).get("flavor")
    checks = []
    if flavor is None:
        checks.append(_check("kernel_module_flavor", NOT_CHECKABLE,
                             "the module flavor is not readable (/proc/driver/nvidia/version)"))
    elif flavor != want:
        checks.append(_check("kernel_module_flavor", FAILED, "the %s kernel module is loaded, %s is required" % (flavor, want),
                             "set nvidia_driver_kernel_module: %s and run the role (it reboots if needed)" % want))
    if flavor == "proprietary":
        for gpu in gpus:
            if gpu.get("architecture") in OPEN_ONLY_ARCHITECTURES:
                checks.append(_check("kernel_module_flavor", FAILED, "%s (%s) needs the open kernel modules"
                                     % (gpu_label(gpu), gpu["architecture"]),
                                     "set nvidia_driver_kernel_module: open", gpu=gpu_label(gpu)))
    if not checks:
        checks.append(_check("kernel_module_flavor", OK, "the %s kernel module is loaded" % flavor))
    return checks


def _module_version_check(state, driver, smi_ok):
    module = state.get("module") or {}
    installed = (state.get("installed") or {}).get("version")
    reasons = reboot_reasons(state)
    if reasons:
        return _check("module_version", FAILED, "reboot pending: " + "; ".join(reasons), FIX_REBOOT)
    if not module.get("loaded"):
        if smi_ok:
            return _check("module_version", NOT_CHECKABLE,
                          "nvidia-smi works but sysfs does not show the nvidia module (sandboxed /sys?)")
        return _check("module_version", FAILED, "no nvidia kernel module is loaded", FIX_REBOOT)
    if not module.get("version"):
        return _check("module_version", NOT_CHECKABLE, "the loaded module's version is not readable")
    other, what = (installed, "installed driver") if installed else (driver if smi_ok else None, "user-space driver")
    if not other:
        return _check("module_version", NOT_CHECKABLE, "module %s is loaded; no installed version to compare" % module["version"])
    if module["version"] != other:
        return _check("module_version", FAILED, "the loaded module is %s, the %s %s" % (module["version"], what, other),
                      FIX_REBOOT)
    return _check("module_version", OK, "the loaded module %s is the %s" % (module["version"], what))


def _mode_checks(gpus, smi_ok, expected):
    checks = []
    if not smi_ok:
        return [_check("persistence_mode", FAILED, "cannot read: nvidia-smi failed", "see the nvidia_smi check"),
                _check("mig_mode", FAILED, "cannot read: nvidia-smi failed", "see the nvidia_smi check")]
    if expected.get("persistence_mode", True):
        checks += _per_gpu(
            "persistence_mode", gpus,
            lambda g: None if g.get("persistence_mode") == "Enabled" else "persistence mode is %s" % g.get("persistence_mode"),
            "persistence mode is on on every GPU",
            "run nvidia-persistenced with --persistence-mode (the role's drop-in does) and "
            "`systemctl restart nvidia-persistenced`")
    else:
        checks.append(_check("persistence_mode", OK, "persistence mode is not managed (nvidia_driver_persistence_mode false)"))
    mig = expected.get("mig_mode") or "disabled"
    if mig == "unmanaged":
        checks.append(_check("mig_mode", OK, "MIG is not managed (nvidia_driver_mig_mode unmanaged)"))
    else:
        want = "Enabled" if mig == "enabled" else "Disabled"
        accepted = (want,) if mig == "enabled" else (want, None)  # None: a GPU without MIG
        checks += _per_gpu(
            "mig_mode", gpus,
            lambda g: None if g.get("mig_mode") in accepted else "MIG mode is %s" % (g.get("mig_mode") or "not supported"),
            "MIG is %s on every GPU%s" % (mig, "" if mig == "enabled" else " (or not supported)"),
            "`nvidia-smi -i <index> -mig %d`, then reset the GPU or reboot" % (1 if mig == "enabled" else 0))
    return checks


def _kernel_log_check(state):
    log = state.get("kernel_log") or {}
    if not log.get("checkable"):
        return _check("kernel_log", NOT_CHECKABLE, "this boot's kernel log is not readable here")
    if log.get("errors"):
        return _check("kernel_log", FAILED, "the kernel log (%s) says: %s" % (log.get("source"), " | ".join(log["errors"][:3])),
                      "set nvidia_driver_kernel_module: open and run the role (a GPU that needs the open modules "
                      "got the proprietary one)")
    return _check("kernel_log", OK, "no 'requires use of the NVIDIA open kernel modules' in the kernel log (%s)" % log.get("source"))


def _uvm_check(state):
    module = state.get("module") or {}
    if module.get("uvm_device"):
        return _check("uvm_device", OK, "/dev/nvidia-uvm is present")
    return _check("uvm_device", FAILED, "/dev/nvidia-uvm is missing: CUDA cannot start (the serving units' "
                  "hardening stops CUDA from loading nvidia_uvm itself)",
                  "`modprobe nvidia_uvm`; the role's modules-load.d file loads it at every boot")


def _nouveau_check(state):
    module = state.get("module") or {}
    bound = state.get("nouveau_bound") or []
    if module.get("nouveau_loaded") or bound:
        return _check("nouveau", FAILED, "nouveau is loaded%s" % (" and drives " + ", ".join(bound) if bound else ""),
                      "the role blacklists it and rebuilds the initramfs; " + FIX_REBOOT, gpu=", ".join(bound) or None)
    return _check("nouveau", OK, "nouveau is not loaded")


def _fabric_check(state, expected, active):
    setting = expected.get("fabricmanager", "auto")
    present = state.get("nvswitch_present")
    wanted = present if setting == "auto" else bool(setting)
    if not wanted:
        why = "no NVSwitch on the PCI bus" if setting == "auto" and present is False else "not requested"
        if setting == "auto" and present is None:
            return _check("fabric_manager", NOT_CHECKABLE, "the PCI bus is not readable: NVSwitches unknown")
        return _check("fabric_manager", OK, "Fabric Manager not needed (%s)" % why)
    if active is None:
        return _check("fabric_manager", NOT_CHECKABLE, "NVSwitches present; the service state is not readable (no systemctl)")
    if not active:
        return _check("fabric_manager", FAILED, "NVSwitches present but nvidia-fabricmanager is not running: "
                      "CUDA fails on every GPU", "`systemctl enable --now nvidia-fabricmanager`; read its journal")
    return _check("fabric_manager", OK, "nvidia-fabricmanager is running for the NVSwitches")


def verify_checks(state: Dict[str, Any], gpu: Dict[str, Any], expected: Dict[str, Any],
                  fabric_manager_active: Optional[bool] = None) -> List[Dict[str, Any]]:
    """Every check of the verify step, in a stable order.

    ``gpu``: ``{ok, facts, error, missing}`` from GPU discovery (``facts`` as gpu_facts returns them);
    ``expected``: ``gpu_count``, ``compute_capability``, ``numa_nodes``, ``branch``, ``version``,
    ``kernel_module``, ``persistence_mode``, ``mig_mode``, ``fabricmanager``.
    """
    smi_ok = bool(gpu.get("ok"))
    facts = gpu.get("facts") or {}
    gpus = facts.get("gpus") or []
    driver = facts.get("driver_version")
    checks = [_smi_check(gpu)]
    checks += _count_checks(state, gpus, smi_ok, expected)
    checks += _capability_checks(gpus, smi_ok, expected)
    checks.append(_numa_check(facts, expected))
    checks += _driver_checks(gpus, driver, smi_ok, expected)
    checks += _flavor_checks(state, gpus, expected)
    checks.append(_module_version_check(state, driver, smi_ok))
    checks += _mode_checks(gpus, smi_ok, expected)
    checks.append(_kernel_log_check(state))
    checks.append(_uvm_check(state))
    checks.append(_nouveau_check(state))
    checks.append(_fabric_check(state, expected, fabric_manager_active))
    return checks


def failure_message(host: str, checks: Iterable[Dict[str, Any]]) -> str:
    """One message naming every failed check, its GPU and its fix."""
    failed = [c for c in checks if c["status"] == FAILED]
    lines = ["%d NVIDIA driver check(s) failed on %s:" % (len(failed), host)]
    for c in failed:
        lines.append("- %s: %s -- fix: %s" % (c["check"], c["message"], c["fix"]))
    return "\n".join(lines)
