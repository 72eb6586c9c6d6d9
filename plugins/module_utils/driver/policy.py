# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Decisions of the nvidia_driver role, as pure functions of its settings and the host's driver state.

- ``driver_packages``: what to install for a source (NVIDIA's CUDA repository or Ubuntu's own
  ``-server`` packages), distribution, branch, profile and kernel-module flavor;
- ``apt_preferences`` and ``apt_state``: how the branch (or exact version) is pinned and whether
  apt must move the installed driver;
- ``preflight_problems``: the refusals, before anything changes (no GPU, the proprietary flavor on
  Blackwell, Secure Boot with unsigned DKMS modules, a ``.run`` install, settings that contradict);
- ``reboot_reasons`` and ``reboot_decision``: whether the host needs a reboot and whether to do it.

The state dicts are what ``nvidia_driver.DriverStateReader.gather()`` returns.
"""

import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ansible_collections.pdserve.sglang.plugins.module_utils.driver.nvidia_driver import version_key

# distribution (ansible_distribution, ansible_distribution_version) -> NVIDIA repository name.
# (The distribution may be None: a lookup then finds nothing.)
SUPPORTED_DISTROS: Dict[Tuple[Optional[str], str], str] = {
    ("Ubuntu", "24.04"): "ubuntu2404",
    ("Ubuntu", "22.04"): "ubuntu2204",
    ("Debian", "12"): "debian12",
}
SOURCES = ("nvidia", "distro")
PROFILES = ("compute", "full")
FLAVORS = ("open", "proprietary")
SECURE_BOOT_POLICIES = ("fail", "signed_modules", "enrolled_mok")
REBOOT_POLICIES = ("if_needed", "never", "always")
# From this branch on, NVIDIA's Ubuntu packages drop the branch from their names
# (libnvidia-compute-580 -> libnvidia-compute) and need NVIDIA's pinning package or apt pins.
UNVERSIONED_NAMES_FROM = 590
# R620 ships no proprietary kernel modules any more.
NO_PROPRIETARY_FROM = 620
# CUDA major version each branch supports without forward compatibility.
BRANCH_CUDA_MAJOR = {"580": 13, "595": 13, "620": 13}
# Packages the pin covers (all of one driver release carry its version).
PIN_PACKAGES = "*nvidia* libcuda* libnvcuvid* libnvoptix* cuda-drivers*"
# unattended-upgrades never touches these (regular expressions of its Package-Blacklist).
UNATTENDED_BLACKLIST = ("^nvidia-", "^libnvidia-", "^libcuda", "^libnvcuvid", "^libnvoptix", "^cuda-drivers",
                        "^linux-modules-nvidia-", "^xserver-xorg-video-nvidia")

_BRANCH_RE = re.compile(r"^\d{3}$")
_KERNEL_FLAVOUR_RE = re.compile(r"^\d+\.\d+(?:\.\d+)?-\d+-(?P<flavour>[a-z][a-z0-9-]*)$")


class PolicyError(ValueError):
    """Settings that cannot be turned into a plan (the message says which and why)."""


def distro_id(distribution: Optional[str], version: Any) -> Optional[str]:
    """``("Ubuntu", "24.04")`` -> ``"ubuntu2404"``, ``("Debian", "12.8")`` -> ``"debian12"``; None if unsupported."""
    version = str(version)
    if distribution == "Debian":
        version = version.split(".", 1)[0]
    return SUPPORTED_DISTROS.get((distribution, version))


def repo_arch(machine: Optional[str]) -> str:
    """The architecture directory of NVIDIA's repository: ``x86_64``, or ``sbsa`` for arm64 servers."""
    if machine in ("aarch64", "arm64"):
        return "sbsa"
    if machine in ("x86_64", "amd64"):
        return "x86_64"
    raise PolicyError("NVIDIA's CUDA repository has no packages for architecture %r" % machine)


def kernel_flavour(kernel: Optional[str], default: str) -> str:
    """``6.8.0-31-generic`` -> ``generic``, ``6.1.0-18-cloud-amd64`` -> ``cloud-amd64``, else ``default``."""
    match = _KERNEL_FLAVOUR_RE.match(kernel or "")
    return match.group("flavour") if match else default


def branch_of(version: Optional[str]) -> Optional[str]:
    """``580.95.05`` -> ``"580"``."""
    key = version_key(version)
    return str(key[0]) if key else None


def pin_pattern(branch: Union[str, int], version: str = "") -> str:
    """The apt version pattern: ``580.*`` for a branch, ``580.95.05-*`` for an exact version."""
    return "%s-*" % version if version else "%s.*" % branch


def version_in_pin(installed: Optional[str], branch: Union[str, int], version: str = "") -> bool:
    """Whether an installed driver version is what the settings ask for."""
    if not installed:
        return False
    if version:
        return installed == version
    return branch_of(installed) == str(branch)


def cuda_major(branch: Union[str, int], toolkit: Any = "") -> int:
    """The CUDA major version for DCGM's package: the toolkit's when one is installed, else the branch's."""
    if toolkit:
        return int(str(toolkit).split(".", 1)[0])
    return BRANCH_CUDA_MAJOR.get(str(branch), 13)


def toolkit_package(toolkit: Any) -> Optional[str]:
    """``"13.0"`` -> ``cuda-toolkit-13-0``; ``""`` -> None."""
    if not toolkit:
        return None
    match = re.match(r"^(\d+)\.(\d+)$", str(toolkit))
    if not match:
        raise PolicyError("nvidia_driver_cuda_toolkit must look like 13.0, got %r" % (toolkit,))
    return "cuda-toolkit-%s-%s" % match.groups()


def repo_needed(source: str, toolkit: Any = "", dcgm: bool = False) -> bool:
    """NVIDIA's repository is configured for its driver, or for the CUDA toolkit and DCGM."""
    return source == "nvidia" or bool(toolkit) or bool(dcgm)


def _check_choice(name, value, choices):
    if value not in choices:
        raise PolicyError("%s must be one of %s, got %r" % (name, ", ".join(choices), value))


def _nvidia_repo_driver(distro, branch, profile, flavor):
    """Driver packages of NVIDIA's repository: (driver, persistence daemon, fabric manager)."""
    open_ = flavor == "open"
    fabric = ["nvidia-fabricmanager", "libnvidia-nscq"]
    if distro == "debian12":
        module = "nvidia-kernel-open-dkms" if open_ else "nvidia-kernel-dkms"
        userspace = "nvidia-driver-cuda" if profile == "compute" else "nvidia-driver"
        return [userspace, module, "nvidia-smi"], ["nvidia-persistenced"], fabric
    suffix = "" if int(branch) >= UNVERSIONED_NAMES_FROM else "-" + branch
    if profile == "compute":
        module = "nvidia-dkms%s%s" % (suffix, "-open" if open_ else "")
        driver = ["libnvidia-compute" + suffix, module, "nvidia-utils" + suffix]
    elif open_:
        driver = ["nvidia-driver%s-open" % suffix] if suffix else ["nvidia-open"]
    else:
        driver = ["cuda-drivers" + suffix]
    return driver, ["nvidia-compute-utils" + suffix], fabric


def _ubuntu_server_driver(branch, profile, flavor, kernel, flavour):
    """Ubuntu's -server packages with Canonical's prebuilt, signed kernel modules (no DKMS)."""
    name = "%s-server%s" % (branch, "-open" if flavor == "open" else "")
    driver = [
        "nvidia-headless-no-dkms-" + name,
        "nvidia-utils-%s-server" % branch,
        "linux-modules-nvidia-%s-%s" % (name, kernel),
        "linux-modules-nvidia-%s-%s" % (name, flavour),
    ]
    if profile == "full":
        driver += ["lib%s-%s-server" % (lib, branch) for lib in
                   ("nvidia-gl", "nvidia-decode", "nvidia-encode", "nvidia-extra", "nvidia-fbc1")]
    fabric = ["nvidia-fabricmanager-" + branch, "libnvidia-nscq-" + branch]
    return driver, ["nvidia-compute-utils-%s-server" % branch], fabric


def driver_packages(source: str, distro: str, branch: Union[str, int], profile: str = "compute",
                    kernel_module: str = "open", kernel: str = "", default_flavour: str = "generic",
                    headers_meta: str = "", initramfs_package: str = "initramfs-tools", fabricmanager: bool = False,
                    persistenced: bool = True, cuda_toolkit: Any = "", dcgm: bool = False,
                    pinning_package: bool = False) -> Dict[str, List[str]]:
    """Package names to install, grouped; ``hold`` lists those apt must never move on its own.

    Returns ``prerequisites`` (headers, dkms, initramfs tools), ``pinning``, ``driver``,
    ``fabricmanager``, ``toolkit``, ``dcgm``, ``hold`` and ``all`` (one apt transaction, in order).
    """
    _check_choice("nvidia_driver_source", source, SOURCES)
    _check_choice("nvidia_driver_profile", profile, PROFILES)
    _check_choice("nvidia_driver_kernel_module", kernel_module, FLAVORS)
    branch = str(branch)
    if not _BRANCH_RE.match(branch):
        raise PolicyError("nvidia_driver_branch must be a driver branch such as 580, got %r" % branch)
    if distro not in SUPPORTED_DISTROS.values():
        raise PolicyError("no package plan for distribution %r" % (distro,))
    flavour = kernel_flavour(kernel, default_flavour)
    if source == "distro":
        if not distro.startswith("ubuntu"):
            raise PolicyError("nvidia_driver_source distro exists only on Ubuntu; %s uses NVIDIA's repository" % distro)
        driver, daemon, fabric = _ubuntu_server_driver(branch, profile, kernel_module, kernel, flavour)
        prerequisites = []
    else:
        driver, daemon, fabric = _nvidia_repo_driver(distro, branch, profile, kernel_module)
        # Headers of the running kernel for DKMS now, and the meta package so it builds for the next one.
        prerequisites = ["linux-headers-" + kernel, headers_meta or "linux-headers-" + flavour, "dkms"]
    if initramfs_package:
        prerequisites.append(initramfs_package)
    if persistenced:
        driver = driver + [p for p in daemon if p not in driver]
    pinning = ["nvidia-driver-pinning-" + branch] if pinning_package and source == "nvidia" else []
    fabric = fabric if fabricmanager else []
    toolkit = [toolkit_package(cuda_toolkit)] if cuda_toolkit else []
    dcgm_packages = ["datacenter-gpu-manager-4-cuda%d" % cuda_major(branch, cuda_toolkit)] if dcgm else []
    hold = pinning + driver + fabric
    return {
        "prerequisites": prerequisites,
        "pinning": pinning,
        "driver": driver,
        "fabricmanager": fabric,
        "toolkit": toolkit,
        "dcgm": dcgm_packages,
        "hold": hold,
        "all": prerequisites + pinning + driver + fabric + toolkit + dcgm_packages,
    }


def apt_preferences(source: str, branch: Union[str, int], version: str = "",
                    repo_host: str = "") -> List[Dict[str, Any]]:
    """The stanzas of the role's apt preferences file: ``[{comment, package, pin, priority}]``.

    The branch (or exact version) pin has priority 1001, so apt also moves back to it (a branch
    change down, an exact version below the newest). With Ubuntu's own packages and NVIDIA's
    repository configured for the toolkit, NVIDIA's driver packages get -1 (never installed) so
    the driver cannot come from two places.
    """
    stanzas = []
    if source == "distro" and repo_host:
        stanzas.append({
            "comment": "The driver comes from Ubuntu's archive; never from NVIDIA's repository.",
            "package": PIN_PACKAGES,
            "pin": "origin %s" % repo_host,
            "priority": -1,
        })
    what = "driver %s exactly" % version if version else "driver branch %s" % branch
    stanzas.append({
        "comment": "Keep the NVIDIA driver at %s; installed packages are also held." % what,
        "package": PIN_PACKAGES,
        "pin": "version %s" % pin_pattern(branch, version),
        "priority": 1001,
    })
    return stanzas


def apt_state(installed_version: Optional[str], branch: Union[str, int], version: str = "",
              upgrade_within_branch: bool = False) -> str:
    """``latest`` when apt must move the installed driver (a branch or version change), else ``present``."""
    if upgrade_within_branch:
        return "latest"
    if installed_version and not version_in_pin(installed_version, branch, version):
        return "latest"
    return "present"


def _problem(variable, message, fix):
    return {"variable": variable, "message": message, "fix": fix}


def _gpu_list(gpus):
    return ", ".join("%s (%s:%s%s)" % (g["address"], g["vendor"][2:], (g["device"] or "?")[2:],
                                       ", " + g["open_only_family"] if g.get("open_only_family") else "")
                     for g in gpus)


def preflight_problems(state: Dict[str, Any], settings: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Every refusal at once, as ``[{variable, message, fix}]``; empty when the role may go on.

    ``settings``: ``distribution``, ``distribution_version``, ``source``, ``branch``, ``version``,
    ``kernel_module``, ``secure_boot_policy``, ``require_gpu``, ``pinning_package``.
    """
    problems = []
    s = settings
    distro = distro_id(s.get("distribution"), s.get("distribution_version"))
    branch = str(s.get("branch", ""))
    version = s.get("version") or ""
    source = s.get("source", "nvidia")
    flavor = s.get("kernel_module", "open")
    if distro is None:
        problems.append(_problem(
            "ansible_distribution",
            "%s %s is not supported by nvidia_driver (Ubuntu 24.04, Ubuntu 22.04, Debian 12)"
            % (s.get("distribution"), s.get("distribution_version")),
            "run it on a supported distribution, or manage the driver yourself and set "
            "nvidia_driver_verify_only: true to only check it"))
    if version and branch_of(version) != branch:
        problems.append(_problem(
            "nvidia_driver_version",
            "nvidia_driver_version %s is not in nvidia_driver_branch %s" % (version, branch),
            "set nvidia_driver_branch: \"%s\" together with the exact version" % branch_of(version)))
    if source == "distro" and distro and not distro.startswith("ubuntu"):
        problems.append(_problem(
            "nvidia_driver_source",
            "nvidia_driver_source distro (Canonical's signed -server packages) exists only on Ubuntu; "
            "Debian's own driver (535/550) is older than Blackwell and Hopper need",
            "set nvidia_driver_source: nvidia"))
    if s.get("pinning_package") and source == "distro":
        problems.append(_problem(
            "nvidia_driver_pinning_package",
            "NVIDIA's pinning package belongs to NVIDIA's repository; Ubuntu's -server packages are pinned by the "
            "role's apt preferences alone",
            "set nvidia_driver_pinning_package: false"))
    if flavor == "proprietary" and branch.isdigit() and int(branch) >= NO_PROPRIETARY_FROM:
        problems.append(_problem(
            "nvidia_driver_kernel_module",
            "branch %s has no proprietary kernel modules (NVIDIA removed them in R%d)" % (branch, NO_PROPRIETARY_FROM),
            "set nvidia_driver_kernel_module: open"))
    if state.get("gpu_present") is False and s.get("require_gpu", True):
        problems.append(_problem(
            "nvidia_driver_require_gpu",
            "no NVIDIA GPU on the PCI bus (vendor 0x10de, class 0x0300 or 0x0302)",
            "check that this is a GPU host (`lspci -d 10de:`); set nvidia_driver_require_gpu: false "
            "to skip hosts without GPUs"))
    open_only = [g for g in state.get("gpus", []) if g.get("open_only_family")]
    if flavor == "proprietary" and open_only:
        problems.append(_problem(
            "nvidia_driver_kernel_module",
            "GPU(s) %s need the open kernel modules; NVIDIA's proprietary module loads but finds no "
            "device on them ('requires use of the NVIDIA open kernel modules')" % _gpu_list(open_only),
            "set nvidia_driver_kernel_module: open"))
    secure_boot = (state.get("secure_boot") or {}).get("state")
    policy = s.get("secure_boot_policy", "fail")
    dkms = source == "nvidia"
    if policy == "signed_modules" and (source != "distro" or (distro or "").startswith("debian")):
        problems.append(_problem(
            "nvidia_driver_secure_boot_policy",
            "signed_modules means Canonical's signed prebuilt modules, which only nvidia_driver_source "
            "distro on Ubuntu installs",
            "set nvidia_driver_source: distro (Ubuntu), or nvidia_driver_secure_boot_policy: fail"))
    elif secure_boot == "enabled" and dkms and policy == "fail":
        problems.append(_problem(
            "nvidia_driver_secure_boot_policy",
            "Secure Boot is enabled (%s) and the DKMS-built nvidia modules are not signed by a key the "
            "firmware trusts: they would not load" % state["secure_boot"].get("source"),
            "on Ubuntu use Canonical's signed modules (nvidia_driver_source: distro, "
            "nvidia_driver_secure_boot_policy: signed_modules); or enroll DKMS's key "
            "(`mokutil --import /var/lib/dkms/mok.pub`, confirm in MokManager at the console on the next "
            "boot) and set nvidia_driver_secure_boot_policy: enrolled_mok; or disable Secure Boot"))
    if state.get("run_installer"):
        problems.append(_problem(
            "host",
            "a driver installed with NVIDIA's .run installer is present (%s); packages would fight it"
            % ", ".join(state["run_installer"]),
            "remove it with `nvidia-uninstall`, reboot, then run the role again"))
    return problems


def reboot_reasons(state: Dict[str, Any]) -> List[str]:
    """Why the host needs a reboot before the installed driver is the one in use (empty: no reboot)."""
    reasons = []
    module = state.get("module") or {}
    installed = state.get("installed") or {}
    if module.get("nouveau_loaded") or state.get("nouveau_bound"):
        bound = state.get("nouveau_bound") or []
        reasons.append("nouveau is loaded%s; it is blacklisted and gone after a reboot"
                       % (" and drives " + ", ".join(bound) if bound else ""))
    version = installed.get("version")
    if version:
        if not module.get("loaded"):
            reasons.append("driver %s is installed but no nvidia kernel module is loaded" % version)
        elif module.get("version") and module["version"] != version:
            reasons.append("the loaded nvidia module is %s, the installed driver is %s" % (module["version"], version))
        if module.get("loaded") and module.get("flavor") and installed.get("flavor") \
                and module["flavor"] != installed["flavor"]:
            reasons.append("the loaded module is the %s flavor, the installed one is %s"
                           % (module["flavor"], installed["flavor"]))
    return reasons


def reboot_decision(policy: str, reasons: Sequence[str], connection: str) -> Dict[str, Any]:
    """``{reboot, required, reasons, message}`` for a reboot policy, never over a local connection."""
    _check_choice("nvidia_driver_reboot", policy, REBOOT_POLICIES)
    required = bool(reasons)
    wanted = policy == "always" or (policy == "if_needed" and required)
    why = "; ".join(reasons) if reasons else "nothing requires it"
    if wanted and connection == "local":
        return {"reboot": False, "required": required, "reasons": list(reasons),
                "message": "not rebooting: Ansible runs on this very host (local connection); reboot it "
                           "yourself (%s)" % why}
    if wanted:
        return {"reboot": True, "required": required, "reasons": list(reasons),
                "message": "rebooting (nvidia_driver_reboot %s): %s" % (policy, why)}
    if required:
        return {"reboot": False, "required": True, "reasons": list(reasons),
                "message": "reboot required, not done (nvidia_driver_reboot %s): %s" % (policy, why)}
    return {"reboot": False, "required": False, "reasons": [], "message": "no reboot needed"}


def modules_to_load(state: Dict[str, Any], modules: Iterable[str]) -> List[str]:
    """Modules of ``modules`` to load now: only while the right nvidia module runs and nothing needs a reboot."""
    module = state.get("module") or {}
    if reboot_reasons(state) or not module.get("loaded"):
        return []
    loaded = set(module.get("loaded_modules") or []) | {"nvidia"}
    return [name for name in modules if name not in loaded]


def _host_of(url):
    match = re.match(r"^[a-z][a-z0-9+.-]*://([^/:]*)", url or "")
    return match.group(1) if match else ""


def plan(settings: Dict[str, Any]) -> Dict[str, Any]:
    """Everything the role derives from its settings and the host's state, for one host.

    ``settings``: ``distribution``, ``distribution_version``, ``machine``, ``kernel``, ``source``,
    ``branch``, ``version``, ``profile``, ``kernel_module``, ``headers_meta``, ``default_flavour``,
    ``initramfs_package``, ``fabricmanager`` (``auto`` or a bool), ``nvswitch_present``,
    ``persistence_mode``, ``cuda_toolkit``, ``dcgm``, ``pinning_package``, ``repo_base_url``,
    ``installed_version``, ``upgrade_within_branch``.
    Returns ``distro``, ``arch``, ``repo_needed``, ``repo_url``, ``repo_host``, ``fabricmanager``,
    ``packages``, ``preferences``, ``unattended_blacklist`` and ``apt_state``.
    """
    s = settings
    distro = distro_id(s.get("distribution"), s.get("distribution_version"))
    if distro is None:
        raise PolicyError("%s %s is not supported" % (s.get("distribution"), s.get("distribution_version")))
    arch = repo_arch(s.get("machine"))
    source = s.get("source", "nvidia")
    branch = str(s.get("branch", "580"))
    version = s.get("version") or ""
    toolkit = s.get("cuda_toolkit") or ""
    dcgm = bool(s.get("dcgm"))
    fabric = s.get("fabricmanager", "auto")
    fabric = bool(s.get("nvswitch_present")) if fabric == "auto" else bool(fabric)
    needed = repo_needed(source, toolkit, dcgm)
    repo_url = "%s/%s/%s/" % (str(s.get("repo_base_url", "")).rstrip("/"), distro, arch) if needed else ""
    packages = driver_packages(
        source, distro, branch, profile=s.get("profile", "compute"), kernel_module=s.get("kernel_module", "open"),
        kernel=s.get("kernel", ""), default_flavour=s.get("default_flavour", "generic"),
        headers_meta=s.get("headers_meta", ""), initramfs_package=s.get("initramfs_package", "initramfs-tools"),
        fabricmanager=fabric, persistenced=bool(s.get("persistence_mode", True)), cuda_toolkit=toolkit,
        dcgm=dcgm, pinning_package=bool(s.get("pinning_package")))
    return {
        "distro": distro,
        "arch": arch,
        "repo_needed": needed,
        "repo_url": repo_url,
        "repo_host": _host_of(repo_url),
        "fabricmanager": fabric,
        "packages": packages,
        "preferences": apt_preferences(source, branch, version, _host_of(repo_url)),
        "unattended_blacklist": list(UNATTENDED_BLACKLIST),
        "apt_state": apt_state(s.get("installed_version"), branch, version, bool(s.get("upgrade_within_branch"))),
    }
