# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Decisions of module_utils/driver/policy.py: package lists, pins, apt state, refusals, reboots.

The rendered Ubuntu and Debian files and plans are compared with golden files in
tests/unit/roles/nvidia_driver; these tests pin each rule on its own.
"""

import itertools

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.driver import policy

KERNELS = {"debian12": "6.1.0-28-amd64", "ubuntu2404": "6.8.0-31-generic", "ubuntu2204": "5.15.0-122-generic"}
DEFAULT_FLAVOUR = {"debian12": "amd64", "ubuntu2404": "generic", "ubuntu2204": "generic"}


def packages(source="nvidia", distro="debian12", branch="580", **kwargs):
    kwargs.setdefault("kernel", KERNELS[distro])
    kwargs.setdefault("default_flavour", DEFAULT_FLAVOUR[distro])
    return policy.driver_packages(source, distro, branch, **kwargs)


# --- package lists: source x distro x branch x profile x flavor ------------------------------------
DRIVER_MATRIX = [
    # NVIDIA's debian12 repository: unversioned names on every branch.
    ("nvidia", "debian12", "580", "compute", "open",
     ["nvidia-driver-cuda", "nvidia-kernel-open-dkms", "nvidia-smi", "nvidia-persistenced"]),
    ("nvidia", "debian12", "595", "full", "open",
     ["nvidia-driver", "nvidia-kernel-open-dkms", "nvidia-smi", "nvidia-persistenced"]),
    ("nvidia", "debian12", "580", "compute", "proprietary",
     ["nvidia-driver-cuda", "nvidia-kernel-dkms", "nvidia-smi", "nvidia-persistenced"]),
    # NVIDIA's Ubuntu repository: branch-suffixed names up to 580 ...
    ("nvidia", "ubuntu2404", "580", "compute", "open",
     ["libnvidia-compute-580", "nvidia-dkms-580-open", "nvidia-utils-580", "nvidia-compute-utils-580"]),
    ("nvidia", "ubuntu2204", "580", "full", "open", ["nvidia-driver-580-open", "nvidia-compute-utils-580"]),
    ("nvidia", "ubuntu2404", "580", "compute", "proprietary",
     ["libnvidia-compute-580", "nvidia-dkms-580", "nvidia-utils-580", "nvidia-compute-utils-580"]),
    ("nvidia", "ubuntu2404", "580", "full", "proprietary", ["cuda-drivers-580", "nvidia-compute-utils-580"]),
    # ... unversioned from 590 on.
    ("nvidia", "ubuntu2404", "595", "compute", "open",
     ["libnvidia-compute", "nvidia-dkms-open", "nvidia-utils", "nvidia-compute-utils"]),
    ("nvidia", "ubuntu2204", "620", "full", "open", ["nvidia-open", "nvidia-compute-utils"]),
    ("nvidia", "ubuntu2404", "595", "full", "proprietary", ["cuda-drivers", "nvidia-compute-utils"]),
    # Ubuntu's own -server packages with Canonical's prebuilt modules: running kernel and flavour meta.
    ("distro", "ubuntu2404", "580", "compute", "open",
     ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server",
      "linux-modules-nvidia-580-server-open-6.8.0-31-generic", "linux-modules-nvidia-580-server-open-generic",
      "nvidia-compute-utils-580-server"]),
    ("distro", "ubuntu2204", "580", "compute", "proprietary",
     ["nvidia-headless-no-dkms-580-server", "nvidia-utils-580-server",
      "linux-modules-nvidia-580-server-5.15.0-122-generic", "linux-modules-nvidia-580-server-generic",
      "nvidia-compute-utils-580-server"]),
    ("distro", "ubuntu2404", "580", "full", "open",
     ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server",
      "linux-modules-nvidia-580-server-open-6.8.0-31-generic", "linux-modules-nvidia-580-server-open-generic",
      "libnvidia-gl-580-server", "libnvidia-decode-580-server", "libnvidia-encode-580-server",
      "libnvidia-extra-580-server", "libnvidia-fbc1-580-server", "nvidia-compute-utils-580-server"]),
]


@pytest.mark.parametrize("source, distro, branch, profile, flavor, driver", DRIVER_MATRIX)
def test_driver_packages_matrix(source, distro, branch, profile, flavor, driver):
    plan = packages(source, distro, branch, profile=profile, kernel_module=flavor)
    assert plan["driver"] == driver
    assert plan["hold"] == driver
    assert plan["all"] == plan["prerequisites"] + driver


@pytest.mark.parametrize("source, distro, branch, profile, flavor", [
    combo for combo in itertools.product(("nvidia", "distro"), ("debian12", "ubuntu2404", "ubuntu2204"),
                                         ("580", "595", "620"), ("compute", "full"), ("open", "proprietary"))
    if not (combo[0] == "distro" and combo[1] == "debian12")])
def test_every_supported_combination_has_a_plan(source, distro, branch, profile, flavor):
    plan = packages(source, distro, branch, profile=profile, kernel_module=flavor, cuda_toolkit="13.0")
    assert plan["driver"] and len(set(plan["all"])) == len(plan["all"])
    assert plan["all"][-1] == "cuda-toolkit-13-0"
    dkms = source == "nvidia"
    assert ("dkms" in plan["prerequisites"]) is dkms
    assert ("linux-headers-" + KERNELS[distro] in plan["prerequisites"]) is dkms
    assert plan["prerequisites"][-1] == "initramfs-tools"


def test_prerequisites_for_dkms_are_the_running_kernel_headers_and_the_meta_package():
    assert packages()["prerequisites"] == ["linux-headers-6.1.0-28-amd64", "linux-headers-amd64", "dkms",
                                           "initramfs-tools"]
    assert packages(distro="ubuntu2404")["prerequisites"][:2] == ["linux-headers-6.8.0-31-generic",
                                                                  "linux-headers-generic"]
    assert packages(kernel="6.1.0-28-cloud-amd64")["prerequisites"][1] == "linux-headers-cloud-amd64"
    # A kernel without a distribution flavour (this CI machine's) falls back to the family default.
    assert packages(kernel="6.18.44-fc-v669")["prerequisites"][:2] == ["linux-headers-6.18.44-fc-v669",
                                                                       "linux-headers-amd64"]
    assert packages(distro="ubuntu2404", headers_meta="linux-headers-generic-hwe-24.04")["prerequisites"][1] \
        == "linux-headers-generic-hwe-24.04"


def test_fabric_manager_dcgm_toolkit_and_pinning_package():
    plan = packages(distro="ubuntu2404", fabricmanager=True, dcgm=True, cuda_toolkit="13.0", pinning_package=True)
    assert plan["pinning"] == ["nvidia-driver-pinning-580"]
    assert plan["fabricmanager"] == ["nvidia-fabricmanager", "libnvidia-nscq"]
    assert plan["hold"] == ["nvidia-driver-pinning-580"] + plan["driver"] + ["nvidia-fabricmanager", "libnvidia-nscq"]
    assert plan["toolkit"] == ["cuda-toolkit-13-0"] and plan["dcgm"] == ["datacenter-gpu-manager-4-cuda13"]
    assert plan["all"][-3:] == ["libnvidia-nscq", "cuda-toolkit-13-0", "datacenter-gpu-manager-4-cuda13"]
    distro = packages("distro", "ubuntu2404", fabricmanager=True, pinning_package=True)
    assert distro["fabricmanager"] == ["nvidia-fabricmanager-580", "libnvidia-nscq-580"]
    assert distro["pinning"] == []
    assert packages(dcgm=True, cuda_toolkit="12.9")["dcgm"] == ["datacenter-gpu-manager-4-cuda12"]
    assert packages(persistenced=False)["driver"] == ["nvidia-driver-cuda", "nvidia-kernel-open-dkms", "nvidia-smi"]


@pytest.mark.parametrize("kwargs, message", [
    ({"source": "distro"}, "exists only on Ubuntu"),
    ({"branch": "58"}, "must be a driver branch"),
    ({"profile": "headless"}, "nvidia_driver_profile must be one of"),
    ({"kernel_module": "closed"}, "nvidia_driver_kernel_module must be one of"),
    ({"cuda_toolkit": "13"}, "must look like 13.0"),
])
def test_bad_settings_are_refused_with_the_variable(kwargs, message):
    with pytest.raises(policy.PolicyError, match=message):
        packages(**kwargs)


@pytest.mark.parametrize("kernel, flavour", [
    ("6.8.0-31-generic", "generic"), ("6.8.0-1012-aws", "aws"), ("5.15.0-122-generic-64k", "generic-64k"),
    ("6.1.0-28-amd64", "amd64"), ("6.1.0-28-cloud-amd64", "cloud-amd64"), ("6.18.44-fc-v669", "amd64"), ("", "amd64")])
def test_kernel_flavour(kernel, flavour):
    assert policy.kernel_flavour(kernel, "amd64") == flavour


def test_distro_id_and_arch():
    assert policy.distro_id("Ubuntu", "24.04") == "ubuntu2404"
    assert policy.distro_id("Debian", "12.8") == "debian12"
    assert policy.distro_id("Ubuntu", "20.04") is None and policy.distro_id("Rocky", "9.4") is None
    assert (policy.repo_arch("x86_64"), policy.repo_arch("aarch64")) == ("x86_64", "sbsa")
    with pytest.raises(policy.PolicyError):
        policy.repo_arch("ppc64le")


# --- pins and apt state -----------------------------------------------------------------------------
def test_apt_preferences():
    assert policy.apt_preferences("nvidia", "580") == [{
        "comment": "Keep the NVIDIA driver at driver branch 580; installed packages are also held.",
        "package": policy.PIN_PACKAGES, "pin": "version 580.*", "priority": 1001}]
    assert policy.apt_preferences("nvidia", "580", "580.95.05")[0]["pin"] == "version 580.95.05-*"
    distro = policy.apt_preferences("distro", "580", repo_host="developer.download.nvidia.com")
    assert [(s["pin"], s["priority"]) for s in distro] == [
        ("origin developer.download.nvidia.com", -1), ("version 580.*", 1001)]
    assert len(policy.apt_preferences("distro", "580")) == 1


@pytest.mark.parametrize("installed, branch, version, within, state", [
    (None, "580", "", False, "present"),            # first install: the pin picks the version
    ("580.95.05", "580", "", False, "present"),     # in the branch: leave it (no surprise upgrade)
    ("580.95.05", "580", "", True, "latest"),       # asked to follow the branch
    ("580.95.05", "595", "", False, "latest"),      # branch change
    ("580.95.05", "580", "580.159.04", False, "latest"),  # exact version differs
    ("580.159.04", "580", "580.159.04", False, "present"),
])
def test_apt_state(installed, branch, version, within, state):
    assert policy.apt_state(installed, branch, version, within) == state


# --- refusals ------------------------------------------------------------------------------------------
BLACKWELL = {"address": "0000:1b:00.0", "vendor": "0x10de", "device": "0x2bb5", "class": "0x030200",
             "driver": "nvidia", "open_only_family": "Blackwell"}
H200 = {"address": "0000:00:06.0", "vendor": "0x10de", "device": "0x2335", "class": "0x030200",
        "driver": "nvidia", "open_only_family": None}


def state(gpus=(BLACKWELL,), checkable=True, secure_boot="unknown", run_installer=()):
    return {"gpus": list(gpus), "gpu_present": bool(gpus) if checkable else None,
            "secure_boot": {"state": secure_boot, "source": "efivars" if secure_boot != "unknown" else None},
            "run_installer": list(run_installer)}


def settings(**overrides):
    base = {"distribution": "Ubuntu", "distribution_version": "24.04", "source": "nvidia", "branch": "580",
            "version": "", "kernel_module": "open", "secure_boot_policy": "fail", "require_gpu": True,
            "pinning_package": False}
    base.update(overrides)
    return base


def variables(problems):
    return [p["variable"] for p in problems]


def test_no_problem_for_the_reference_host():
    assert policy.preflight_problems(state(), settings()) == []
    assert policy.preflight_problems(state(), settings(distribution="Debian", distribution_version="12.8")) == []


@pytest.mark.parametrize("host, config, variable, message", [
    (state(gpus=()), settings(), "nvidia_driver_require_gpu", "no NVIDIA GPU on the PCI bus"),
    (state(), settings(kernel_module="proprietary"), "nvidia_driver_kernel_module",
     "GPU(s) 0000:1b:00.0 (10de:2bb5, Blackwell) need the open kernel modules"),
    (state(secure_boot="enabled"), settings(), "nvidia_driver_secure_boot_policy", "Secure Boot is enabled (efivars)"),
    (state(run_installer=["/usr/bin/nvidia-uninstall"]), settings(), "host",
     "NVIDIA's .run installer is present (/usr/bin/nvidia-uninstall)"),
    (state(), settings(distribution="Ubuntu", distribution_version="20.04"), "ansible_distribution",
     "Ubuntu 20.04 is not supported"),
    (state(), settings(distribution="Debian", distribution_version="12", source="distro"), "nvidia_driver_source",
     "exists only on Ubuntu"),
    (state(), settings(version="595.71.05"), "nvidia_driver_version", "595.71.05 is not in nvidia_driver_branch 580"),
    (state(gpus=(H200,)), settings(branch="620", kernel_module="proprietary"), "nvidia_driver_kernel_module",
     "branch 620 has no proprietary kernel modules"),
    (state(), settings(secure_boot_policy="signed_modules"), "nvidia_driver_secure_boot_policy",
     "only nvidia_driver_source distro on Ubuntu installs"),
    (state(), settings(source="distro", pinning_package=True), "nvidia_driver_pinning_package",
     "belongs to NVIDIA's repository"),
])
def test_each_refusal(host, config, variable, message):
    problems = policy.preflight_problems(host, config)
    assert variables(problems) == [variable]
    assert message in problems[0]["message"] and problems[0]["fix"]


def test_every_refusal_at_once():
    problems = policy.preflight_problems(
        state(secure_boot="enabled", run_installer=["/var/log/nvidia-installer.log"]),
        settings(kernel_module="proprietary"))
    assert variables(problems) == ["nvidia_driver_kernel_module", "nvidia_driver_secure_boot_policy", "host"]


@pytest.mark.parametrize("host, config", [
    (state(gpus=()), settings(require_gpu=False)),                      # skipped, not refused
    (state(gpus=(), checkable=False), settings()),                      # PCI unreadable: not checkable
    (state(secure_boot="unknown"), settings()),                         # documented: treated as off
    (state(secure_boot="enabled"), settings(secure_boot_policy="enrolled_mok")),
    (state(secure_boot="enabled"), settings(source="distro", secure_boot_policy="signed_modules")),
    (state(secure_boot="enabled"), settings(source="distro")),          # signed modules load under fail too
    (state(gpus=(H200,)), settings(kernel_module="proprietary")),       # Hopper may run proprietary on 580
])
def test_no_refusal(host, config):
    assert policy.preflight_problems(host, config) == []


# --- reboot -------------------------------------------------------------------------------------------
def driver_state(loaded=True, loaded_version="580.95.05", flavor="open", installed="580.95.05",
                 installed_flavor="open", nouveau=False, bound=()):
    return {"module": {"loaded": loaded, "version": loaded_version if loaded else None, "flavor": flavor if loaded else None,
                       "nouveau_loaded": nouveau, "loaded_modules": ["nvidia"] if loaded else []},
            "nouveau_bound": list(bound),
            "installed": {"version": installed, "flavor": installed_flavor} if installed else None}


@pytest.mark.parametrize("host, reasons", [
    (driver_state(), []),
    (driver_state(loaded_version="580.82.07"), ["the loaded nvidia module is 580.82.07, the installed driver is 580.95.05"]),
    (driver_state(loaded=False), ["driver 580.95.05 is installed but no nvidia kernel module is loaded"]),
    (driver_state(loaded=False, nouveau=True, bound=["0000:1b:00.0"]),
     ["nouveau is loaded and drives 0000:1b:00.0; it is blacklisted and gone after a reboot",
      "driver 580.95.05 is installed but no nvidia kernel module is loaded"]),
    (driver_state(flavor="proprietary"), ["the loaded module is the proprietary flavor, the installed one is open"]),
    (driver_state(installed=None), []),                 # verify-only host: nothing installed by packages
    (driver_state(loaded=False, installed=None), []),   # nothing installed, nothing to load
])
def test_reboot_reasons(host, reasons):
    assert policy.reboot_reasons(host) == reasons


@pytest.mark.parametrize("reboot_policy, required, connection, reboot", [
    ("if_needed", True, "ssh", True),
    ("if_needed", False, "ssh", False),
    ("always", False, "ssh", True),
    ("always", True, "ssh", True),
    ("never", True, "ssh", False),
    ("never", False, "ssh", False),
    ("if_needed", True, "local", False),   # never reboot the machine Ansible runs on
    ("always", False, "local", False),
    ("if_needed", True, "containers.podman.podman", True),
])
def test_reboot_decision_table(reboot_policy, required, connection, reboot):
    reasons = ["stale module"] if required else []
    decision = policy.reboot_decision(reboot_policy, reasons, connection)
    assert decision["reboot"] is reboot
    assert decision["required"] is required
    if required and not reboot:
        assert "stale module" in decision["message"]
    if connection == "local" and (required or reboot_policy == "always"):
        assert "local connection" in decision["message"]


def test_reboot_decision_refuses_an_unknown_policy():
    with pytest.raises(policy.PolicyError):
        policy.reboot_decision("sometimes", [], "ssh")


def test_modules_to_load_only_while_the_right_driver_runs():
    running = driver_state()
    assert policy.modules_to_load(running, ["nvidia", "nvidia_uvm"]) == ["nvidia_uvm"]
    running["module"]["loaded_modules"] = ["nvidia", "nvidia_uvm"]
    assert policy.modules_to_load(running, ["nvidia", "nvidia_uvm"]) == []
    assert policy.modules_to_load(driver_state(loaded_version="580.82.07"), ["nvidia_uvm"]) == []
    assert policy.modules_to_load(driver_state(loaded=False), ["nvidia", "nvidia_uvm"]) == []


# --- the whole plan ------------------------------------------------------------------------------------
def test_plan_for_debian_12_as_the_scenario_converges():
    plan = policy.plan({
        "distribution": "Debian", "distribution_version": "12.8", "machine": "x86_64", "kernel": "6.18.44-fc-v669",
        "source": "nvidia", "branch": "580", "default_flavour": "amd64", "cuda_toolkit": "13.0", "dcgm": True,
        "fabricmanager": "auto", "nvswitch_present": False, "installed_version": None,
        "repo_base_url": "file:///opt/pdserve/apt-driver/nvidia/"})
    assert plan["distro"] == "debian12" and plan["arch"] == "x86_64"
    assert plan["repo_url"] == "file:///opt/pdserve/apt-driver/nvidia/debian12/x86_64/"
    assert plan["repo_host"] == "" and plan["fabricmanager"] is False and plan["apt_state"] == "present"
    assert plan["packages"]["all"] == [
        "linux-headers-6.18.44-fc-v669", "linux-headers-amd64", "dkms", "initramfs-tools", "nvidia-driver-cuda",
        "nvidia-kernel-open-dkms", "nvidia-smi", "nvidia-persistenced", "cuda-toolkit-13-0",
        "datacenter-gpu-manager-4-cuda13"]
    assert "^nvidia-" in plan["unattended_blacklist"]


def test_plan_without_nvidia_repository():
    plan = policy.plan({"distribution": "Ubuntu", "distribution_version": "24.04", "machine": "x86_64",
                        "kernel": "6.8.0-31-generic", "source": "distro", "cuda_toolkit": "",
                        "repo_base_url": "https://developer.download.nvidia.com/compute/cuda/repos",
                        "fabricmanager": True})
    assert plan["repo_needed"] is False and plan["repo_url"] == ""
    assert [s["priority"] for s in plan["preferences"]] == [1001]
    assert plan["fabricmanager"] is True


def test_plan_refuses_an_unsupported_distribution():
    with pytest.raises(policy.PolicyError, match="Rocky 9.4 is not supported"):
        policy.plan({"distribution": "Rocky", "distribution_version": "9.4", "machine": "x86_64"})
