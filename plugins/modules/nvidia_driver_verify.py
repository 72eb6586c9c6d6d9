#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: nvidia_driver_verify
short_description: Check that the NVIDIA driver on a host is the one the inventory expects, GPU by GPU
version_added: 0.4.0
description:
  - Reads the host once (C(nvidia-smi) through the same discovery as M(pdserve.sglang.gpu_facts), sysfs,
    C(/proc/driver/nvidia/version), dpkg and the kernel log through the same reader as
    M(pdserve.sglang.nvidia_driver_facts)) and returns one result per check, each with C(check),
    C(status) (C(ok), C(failed) or C(not_checkable)), C(gpu), C(message) and C(fix).
  - Checks that C(nvidia-smi) works; the GPU count (and that every NVIDIA GPU on the PCI bus is listed);
    each GPU's compute capability; the NUMA node count; the driver at or above the branch (or exactly the
    version) and each GPU's minimum driver; the open kernel-module flavor; that the loaded module is the
    installed driver (no reboot pending); persistence mode on every GPU; the MIG mode; no
    C(requires use of the NVIDIA open kernel modules) in this boot's kernel log; C(/dev/nvidia-uvm);
    nouveau not loaded; Fabric Manager running where NVSwitches are.
  - A check this host does not let it make (a sandbox without some of these files or tools) is
    C(not_checkable), not a failure.
  - Fails when any check failed, naming every failure, its GPU and its fix. Changes nothing.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; it behaves the same in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  root:
    description:
      - Directory under which C(sys/), C(proc/) and C(dev/) are read. Leave C(/) on a real host.
    type: path
    default: /
  nvidia_smi_path:
    description:
      - Path of C(nvidia-smi); searched on E(PATH), then in C(/usr/bin), C(/usr/local/nvidia/bin) and
        C(/usr/local/cuda/bin) by default.
    type: path
  kernel_log_file:
    description:
      - Read the kernel log from this file instead of C(journalctl -k -b) or C(dmesg).
    type: path
  expected_gpu_count:
    description: The number of GPUs nvidia-smi must list; unset checks only that every GPU on the PCI bus is listed.
    type: int
  expected_compute_capability:
    description: The compute capability (or capabilities) every GPU must have, for example C(12.0).
    type: list
    elements: str
    default: []
  expected_numa_nodes:
    description: The number of NUMA nodes with CPUs the host must show.
    type: int
  branch:
    description: The driver must be at or above this branch.
    type: str
    default: "580"
  version:
    description: The driver must be exactly this version (overrides O(branch) for the version check).
    type: str
    default: ""
  kernel_module:
    description: The kernel-module flavor that must be loaded.
    type: str
    choices: [open, proprietary]
    default: open
  persistence_mode:
    description: Whether every GPU must have persistence mode on.
    type: bool
    default: true
  mig_mode:
    description: C(disabled) or C(enabled) on every GPU (a GPU without MIG passes C(disabled)); C(unmanaged) skips.
    type: str
    choices: [disabled, enabled, unmanaged]
    default: disabled
  fabricmanager:
    description:
      - C(auto) requires C(nvidia-fabricmanager) running when NVSwitches are on the PCI bus; C(true) always,
        C(false) never.
    type: str
    choices: [auto, "true", "false"]
    default: auto
notes:
  - Needs only the Python standard library on the managed host.
seealso:
  - module: pdserve.sglang.nvidia_driver_facts
  - module: pdserve.sglang.gpu_facts
"""

EXAMPLES = r"""
- name: Verify the reference host (8 GPUs at compute capability 12.0, two NUMA nodes)
  pdserve.sglang.nvidia_driver_verify:
    expected_gpu_count: 8
    expected_compute_capability: ["12.0"]
    expected_numa_nodes: 2
    branch: "580"
  register: __verify

- name: Show what could not be checked on this host
  ansible.builtin.debug:
    msg: "{{ __verify.checks | selectattr('status', 'eq', 'not_checkable') | map(attribute='check') | list }}"
"""

RETURN = r"""
checks:
  description: One entry per check (a per-GPU check has one entry per failing GPU).
  returned: always
  type: list
  elements: dict
  contains:
    check:
      description: The check's name.
      type: str
      sample: compute_capability
    status:
      description: C(ok), C(failed) or C(not_checkable).
      type: str
      sample: failed
    gpu:
      description: The GPU the result is about, C(null) for host-wide checks.
      type: str
      sample: GPU 0 (NVIDIA H200, 00000000:00:06.0)
    message:
      description: What was found.
      type: str
      sample: "GPU 0 (NVIDIA H200, 00000000:00:06.0): compute capability 9.0, expected 12.0"
    fix:
      description: What to do about a failure; C(null) when the check passed.
      type: str
failed_checks:
  description: The names of the checks that failed.
  returned: always
  type: list
  elements: str
not_checkable:
  description: The names of the checks this host did not let the module make.
  returned: always
  type: list
  elements: str
driver_version:
  description: The driver version nvidia-smi reports, C(null) when it failed.
  returned: always
  type: str
  sample: 580.159.04
gpus:
  description: The GPUs as M(pdserve.sglang.gpu_facts) describes them.
  returned: always
  type: list
  elements: dict
state:
  description: The host's driver state, as M(pdserve.sglang.nvidia_driver_facts) returns it.
  returned: always
  type: dict
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.host.gpu import (
    NVIDIA_SMI_DIRS,
    GpuDiscovery,
    GpuDiscoveryError,
    NoGpuFound,
    SysfsReader,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.driver.nvidia_driver import DriverStateReader
from ansible_collections.pdserve.sglang.plugins.module_utils.driver.verify import (
    FAILED,
    NOT_CHECKABLE,
    failure_message,
    verify_checks,
)


def argument_spec():
    return dict(
        root=dict(type="path", default="/"),
        nvidia_smi_path=dict(type="path"),
        kernel_log_file=dict(type="path"),
        expected_gpu_count=dict(type="int"),
        expected_compute_capability=dict(type="list", elements="str", default=[]),
        expected_numa_nodes=dict(type="int"),
        branch=dict(type="str", default="580"),
        version=dict(type="str", default=""),
        kernel_module=dict(type="str", choices=["open", "proprietary"], default="open"),
        persistence_mode=dict(type="bool", default=True),
        mig_mode=dict(type="str", choices=["disabled", "enabled", "unmanaged"], default="disabled"),
        fabricmanager=dict(type="str", choices=["auto", "true", "false"], default="auto"),
    )


def discover_gpus(module, root):
    """GPU facts through gpu_facts' discovery: ``{ok, facts, error, missing}``."""
    smi = module.params["nvidia_smi_path"] or module.get_bin_path("nvidia-smi") \
        or module.get_bin_path("nvidia-smi", opt_dirs=list(NVIDIA_SMI_DIRS))
    if not smi:
        return {"ok": False, "facts": {}, "missing": True,
                "error": "nvidia-smi not found (searched PATH and %s)" % ", ".join(NVIDIA_SMI_DIRS)}
    discovery = GpuDiscovery(module.run_command, smi, SysfsReader(root))
    try:
        return {"ok": True, "facts": discovery.discover(), "error": None}
    except NoGpuFound as exc:
        return {"ok": False, "facts": exc.facts, "error": "No devices were found"}
    except GpuDiscoveryError as exc:
        output = " ".join(part.strip() for part in (exc.stdout or "", exc.stderr or "") if part and part.strip())
        return {"ok": False, "facts": {}, "error": output or exc.msg}


def fabric_manager_active(module, state, setting):
    wanted = state.get("nvswitch_present") if setting == "auto" else setting == "true"
    if not wanted:
        return None
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return None
    rc, out, err = module.run_command([systemctl, "is-active", "nvidia-fabricmanager.service"])
    return rc == 0 and out.strip() == "active"


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    reader = DriverStateReader(p["root"], module.run_command, module.get_bin_path)
    state = reader.gather(kernel_log=True, kernel_log_file=p["kernel_log_file"])
    gpu = discover_gpus(module, p["root"])
    expected = {
        "gpu_count": p["expected_gpu_count"],
        "compute_capability": p["expected_compute_capability"],
        "numa_nodes": p["expected_numa_nodes"],
        "branch": p["branch"],
        "version": p["version"],
        "kernel_module": p["kernel_module"],
        "persistence_mode": p["persistence_mode"],
        "mig_mode": p["mig_mode"],
        "fabricmanager": {"true": True, "false": False}.get(p["fabricmanager"], "auto"),
    }
    try:
        checks = verify_checks(state, gpu, expected, fabric_manager_active(module, state, p["fabricmanager"]))
    except ValueError as exc:
        module.fail_json(msg="nvidia_driver_verify: %s" % exc)
    result = {
        "changed": False,
        "checks": checks,
        "failed_checks": sorted(set(c["check"] for c in checks if c["status"] == FAILED)),
        "not_checkable": sorted(set(c["check"] for c in checks if c["status"] == NOT_CHECKABLE)),
        "driver_version": (gpu.get("facts") or {}).get("driver_version"),
        "gpus": (gpu.get("facts") or {}).get("gpus") or [],
        "state": state,
    }
    if result["failed_checks"]:
        module.fail_json(msg=failure_message(socket.gethostname(), checks), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
