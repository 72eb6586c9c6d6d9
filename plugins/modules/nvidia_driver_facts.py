#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: nvidia_driver_facts
short_description: Read a host's NVIDIA driver state and derive the driver role's verdicts, in one call
version_added: 0.4.0
description:
  - Reads, without changing anything, what decides how the NVIDIA driver is installed on a host, in one
    round trip.
  - The NVIDIA GPUs and NVSwitches on the PCI bus (vendor C(0x10de), class C(0x0300)/C(0x0302) for GPUs,
    C(0x0680) for NVSwitches), with the kernel driver bound to each and whether only the open kernel modules
    drive it (Blackwell, Grace Hopper).
  - The loaded C(nvidia) module, from C(/sys/module/nvidia/version), and its flavor (open or proprietary)
    from C(/proc/driver/nvidia/version). Which NVIDIA modules and C(nouveau) are loaded, and whether
    C(/dev/nvidia-uvm) exists.
  - The installed driver packages (C(dpkg-query)), with versions and holds, and the installed driver's version and flavor.
  - The Secure Boot state (C(mokutil --sb-state), else the SecureBoot EFI variable, else C(unknown)) and the
    files NVIDIA's C(.run) installer leaves behind.
  - Optionally this boot's kernel log (C(journalctl -k -b), else C(dmesg), or a file) for C(requires use of the
    NVIDIA open kernel modules), and whether an initramfs image is older than the files it must contain.
  - From that state and the settings given, it derives the role's verdicts (RV(problems), RV(reboot),
    RV(modules_to_load)) with the pure functions of C(module_utils/driver/policy.py).
  - A fact the host does not let it read (a sandbox, a read-only system, a missing tool) is C(null) and is
    listed in RV(state.not_checkable); the module does not fail for that.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
    details: The module only reads; it behaves the same in check mode.
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
options:
  root:
    description:
      - Directory under which C(sys/), C(proc/) and C(dev/) are read. Leave C(/) on a real host; tests point
        it at a fake tree.
    type: path
    default: /
  kernel_log:
    description:
      - Also read this boot's kernel log for C(requires use of the NVIDIA open kernel modules).
    type: bool
    default: false
  kernel_log_file:
    description:
      - Read the kernel log from this file (for example a saved C(dmesg)) instead of C(journalctl) or C(dmesg).
    type: path
  initramfs_image:
    description:
      - An initramfs image (C(/boot/initrd.img-<kernel>)) to compare with O(initramfs_inputs).
    type: path
  initramfs_inputs:
    description:
      - Files the initramfs must contain (the nouveau blacklist); RV(state.initramfs) says it is stale when the
        image is missing or older than one of them.
    type: list
    elements: path
    default: []
  paths:
    description:
      - Host paths whose existence and resolved target to report in RV(state.paths) (the role's configuration
        directories, C(/usr/local/cuda)).
    type: list
    elements: path
    default: []
  settings:
    description:
      - The driver role's settings; when given, RV(problems) lists every reason to refuse to install.
      - Keys C(distribution), C(distribution_version), C(source), C(branch), C(version), C(kernel_module),
        C(secure_boot_policy), C(require_gpu), C(pinning_package).
    type: dict
  reboot_policy:
    description:
      - When given, RV(reboot) says whether the host needs a reboot and whether this policy reboots it.
    type: str
    choices: [if_needed, never, always]
  connection:
    description:
      - The connection Ansible uses to this host; a C(local) connection is never rebooted.
    type: str
    default: ssh
  modules:
    description:
      - Kernel modules that should be loaded; RV(modules_to_load) lists those to load now.
    type: list
    elements: str
    default: []
notes:
  - Needs only the Python standard library on the managed host.
seealso:
  - module: pdserve.sglang.nvidia_driver_verify
  - module: pdserve.sglang.gpu_facts
"""

EXAMPLES = r"""
- name: Read the driver state and the refusals for the requested settings
  pdserve.sglang.nvidia_driver_facts:
    settings:
      distribution: "{{ ansible_facts.distribution }}"
      distribution_version: "{{ ansible_facts.distribution_version }}"
      source: nvidia
      branch: "580"
      kernel_module: open
      secure_boot_policy: fail
      require_gpu: true
  register: __driver

- name: Stop when the host cannot take the driver
  ansible.builtin.assert:
    that: __driver.problems | length == 0
    fail_msg: "{{ __driver.problems | map(attribute='message') | list }}"

- name: Does the host need a reboot?
  pdserve.sglang.nvidia_driver_facts:
    reboot_policy: if_needed
    connection: "{{ ansible_connection }}"
  register: __driver_after
"""

RETURN = r"""
state:
  description: The host's driver state. Also the fact C(pdserve_nvidia_driver).
  returned: always
  type: dict
  contains:
    root:
      description: The root O(root) pointed at.
      type: str
    pci_checkable:
      description: Whether the PCI bus could be read.
      type: bool
    gpus:
      description: NVIDIA GPUs on the PCI bus.
      type: list
      elements: dict
      sample: [{"address": "0000:00:06.0", "vendor": "0x10de", "device": "0x2335", "class": "0x030200",
                "driver": "nvidia", "open_only_family": null}]
    nvswitches:
      description: NVSwitches on the PCI bus, same keys as RV(state.gpus) but no C(open_only_family).
      type: list
      elements: dict
    gpu_present:
      description: Whether an NVIDIA GPU is on the PCI bus; C(null) when the bus is not readable.
      type: bool
    nvswitch_present:
      description: Whether an NVSwitch is on the PCI bus; C(null) when the bus is not readable.
      type: bool
    open_only_gpus:
      description: PCI addresses of GPUs that only the open kernel modules drive.
      type: list
      elements: str
    module:
      description: The loaded kernel modules.
      type: dict
      contains:
        loaded:
          description: Whether C(/sys/module/nvidia) exists.
          type: bool
        version:
          description: The loaded module's version.
          type: str
          sample: 580.159.04
        flavor:
          description: C(open) or C(proprietary), from C(/proc/driver/nvidia/version); C(null) when unreadable.
          type: str
        proc_version:
          description: The C(NVRM version) line.
          type: str
        loaded_modules:
          description: Which of C(nvidia), C(nvidia_uvm), C(nvidia_modeset), C(nvidia_drm), C(nvidia_peermem), C(nouveau) are loaded.
          type: list
          elements: str
        uvm_device:
          description: Whether C(/dev/nvidia-uvm) exists.
          type: bool
        nouveau_loaded:
          description: Whether C(nouveau) is loaded.
          type: bool
    nouveau_bound:
      description: PCI addresses of NVIDIA GPUs bound to nouveau.
      type: list
      elements: str
    packages:
      description:
        - Installed or known NVIDIA, CUDA toolkit and DCGM packages by name (C(version), C(status), C(installed),
          C(held)); C(null) without dpkg.
      type: dict
    installed:
      description: The installed driver (C(version), C(package), C(flavor), C(versions)); C(null) without dpkg.
      type: dict
    secure_boot:
      description: C(state) (C(enabled), C(disabled) or C(unknown)) and its C(source) (C(mokutil), C(efivars)).
      type: dict
    run_installer:
      description: Files of NVIDIA's C(.run) installer that exist.
      type: list
      elements: str
    initramfs:
      description: C(image), C(exists), C(stale), C(newer_inputs); C(null) without O(initramfs_image).
      type: dict
    paths:
      description: The paths of O(paths) that exist, each with the path it resolves to.
      type: dict
      sample: {"/usr/local/cuda": "/usr/local/cuda-13.0"}
    kernel_log:
      description: With O(kernel_log), C(checkable), C(source) and the C(errors) lines found.
      type: dict
      returned: when O(kernel_log) is true
    not_checkable:
      description: Facts that could not be read, with the reason.
      type: list
      elements: dict
problems:
  description:
    - Every reason to refuse to install, as C(variable), C(message) and C(fix); empty without O(settings).
  returned: always
  type: list
  elements: dict
  sample:
    - variable: nvidia_driver_kernel_module
      message: GPU(s) 0000:1b:00.0 (10de:2bb5, Blackwell) need the open kernel modules
      fix: "set nvidia_driver_kernel_module: open"
reboot:
  description: With O(reboot_policy), C(reboot) (do it now), C(required), C(reasons) and C(message).
  returned: when O(reboot_policy) is given
  type: dict
  sample: {"reboot": false, "required": true, "reasons": ["the loaded nvidia module is 580.95.05, the installed driver is 595.71.05"],
           "message": "reboot required, not done (nvidia_driver_reboot never): ..."}
modules_to_load:
  description: Modules of O(modules) to load now (none while a reboot is needed or no nvidia module runs).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.driver.nvidia_driver import DriverStateReader
from ansible_collections.pdserve.sglang.plugins.module_utils.driver.policy import (
    modules_to_load,
    preflight_problems,
    reboot_decision,
    reboot_reasons,
)


def argument_spec():
    return dict(
        root=dict(type="path", default="/"),
        kernel_log=dict(type="bool", default=False),
        kernel_log_file=dict(type="path"),
        initramfs_image=dict(type="path"),
        initramfs_inputs=dict(type="list", elements="path", default=[]),
        paths=dict(type="list", elements="path", default=[]),
        settings=dict(type="dict"),
        reboot_policy=dict(type="str", choices=["if_needed", "never", "always"]),
        connection=dict(type="str", default="ssh"),
        modules=dict(type="list", elements="str", default=[]),
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    reader = DriverStateReader(p["root"], module.run_command, module.get_bin_path)
    state = reader.gather(
        kernel_log=p["kernel_log"],
        kernel_log_file=p["kernel_log_file"],
        initramfs_image=p["initramfs_image"],
        initramfs_inputs=p["initramfs_inputs"],
        paths=p["paths"],
    )
    result = {
        "changed": False,
        "state": state,
        "problems": preflight_problems(state, p["settings"]) if p["settings"] is not None else [],
        "modules_to_load": modules_to_load(state, p["modules"]),
        "ansible_facts": {"pdserve_nvidia_driver": state},
    }
    if p["reboot_policy"]:
        result["reboot"] = reboot_decision(p["reboot_policy"], reboot_reasons(state), p["connection"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
