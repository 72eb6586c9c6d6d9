#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Discover NVIDIA GPUs, driver and CUDA versions, and NUMA placement
version_added: 0.4.0
description:
  - Reads C(nvidia-smi --query-gpu) and C(nvidia-smi -q -x) and the kernel's sysfs to describe the
    NVIDIA GPUs of a host (index, UUID, name, compute capability, memory, PCI bus id, the NUMA node
    the GPU is attached to and the CPUs local to it).
  - Also returns the driver version, the CUDA version the driver supports, the CUDA toolkit version
    of C(nvcc) when one is installed, and the host's NUMA nodes with their CPUs.
  - Used by preflight checks to compare an inventory (GPUs per instance, NUMA node per instance)
    with the hardware before anything is installed.
  - Results are set as facts (prefixed C(pdserve_)) and returned as plain keys too.
  - A GPU whose NUMA node the platform does not report (sysfs C(numa_node) reads C(-1), as in many
    virtual machines) gets a C(numa_node) of C(null); this is not an error.
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
  nvidia_smi_path:
    description:
      - Path of the C(nvidia-smi) executable.
      - By default it is searched on E(PATH), then in C(/usr/bin), C(/usr/local/nvidia/bin) and
        C(/usr/local/cuda/bin).
    type: path
  nvcc_path:
    description:
      - Path of the CUDA compiler C(nvcc), used only to report RV(cuda_toolkit_version).
      - By default it is searched on E(PATH), then in C(/usr/local/cuda/bin). When none is found
        RV(cuda_toolkit_version) is C(null); that is not an error.
    type: path
  sysfs_root:
    description:
      - Directory under which C(sys/bus/pci/devices) and C(sys/devices/system/node) are read.
      - Leave at C(/) on a real host; tests point it at a fixture tree.
    type: path
    default: /
  allow_missing:
    description:
      - When V(false), a host without C(nvidia-smi) or on which C(nvidia-smi) lists no GPU makes the
        module fail with what is missing and what to do.
      - When V(true), such a host returns an empty RV(gpus) list, RV(gpu_present=false) and a warning.
      - A C(nvidia-smi) that exists but fails (for example because it cannot talk to the driver)
        always fails the module, whatever this option says (that host is broken, not GPU-less).
    type: bool
    default: false
notes:
  - Needs only the Python standard library on the managed host.
  - The output of C(nvidia-smi) is trusted (it is produced locally by the driver), so it is parsed
    with the standard library's XML parser.
  - C(nvidia-smi) can hang on a host whose driver is wedged; use the task keyword C(timeout) to
    bound the task.
seealso:
  - name: nvidia-smi documentation
    description: The fields of C(nvidia-smi --query-gpu) (run C(nvidia-smi --help-query-gpu)).
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Discover the GPUs
  pdserve.sglang.gpu_facts:

- name: Check that the prefill GPUs are on the NUMA node the inventory says
  ansible.builtin.assert:
    that:
      - pdserve_gpus | length >= 8
      - pdserve_gpus | selectattr('index', 'in', [0, 1, 2, 3]) | map(attribute='numa_node') | unique | list == [0]
    fail_msg: GPUs 0-3 are not all on NUMA node 0

- name: Gather GPU facts where a host may have no GPU (router-only hosts)
  pdserve.sglang.gpu_facts:
    allow_missing: true
  register: __gpu_facts

- name: Build the CUDA architecture list for kernels (for example "12.0" on RTX PRO 6000 Blackwell)
  ansible.builtin.set_fact:
    sglang_install_cuda_arch_list: "{{ pdserve_gpus | map(attribute='compute_capability') | unique | join(';') }}"
  when: pdserve_gpu_present
"""

RETURN = r"""
gpus:
  description:
    - One entry per GPU, ordered by nvidia-smi index. Also set as the fact C(pdserve_gpus).
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: The GPU index nvidia-smi and CUDA_VISIBLE_DEVICES use (PCI bus order by default).
      type: int
      sample: 0
    uuid:
      description: The GPU UUID.
      type: str
      sample: GPU-d4e981e6-d71c-dafe-bf35-e55b6f1748a1
    name:
      description: The product name.
      type: str
      sample: NVIDIA RTX PRO 6000 Blackwell Server Edition
    architecture:
      description: The product architecture from C(nvidia-smi -q -x), C(null) when not reported.
      type: str
      sample: Blackwell
    compute_capability:
      description: The compute capability as C(MAJOR.MINOR); C(null) on drivers older than R510.
      type: str
      sample: "12.0"
    compute_capability_major:
      description: The major part of the compute capability.
      type: int
      sample: 12
    compute_capability_minor:
      description: The minor part of the compute capability.
      type: int
      sample: 0
    sm:
      description: The CUDA architecture name of the compute capability.
      type: str
      sample: sm_120
    memory_total_mib:
      description: Total framebuffer memory in MiB.
      type: int
      sample: 97887
    pci_bus_id:
      description: The PCI bus id as nvidia-smi prints it.
      type: str
      sample: "00000000:16:00.0"
    pci_address:
      description: The PCI address as the kernel names it under C(/sys/bus/pci/devices).
      type: str
      sample: "0000:16:00.0"
    numa_node:
      description: The NUMA node of the GPU from sysfs; C(null) when the platform does not report one (C(-1)).
      type: int
      sample: 0
    local_cpulist:
      description: The CPUs local to the GPU, as the kernel lists them; C(null) when sysfs has no such file.
      type: str
      sample: 0-63,128-191
    local_cpus:
      description: RV(gpus[].local_cpulist) expanded to CPU numbers.
      type: list
      elements: int
      sample: [0, 1, 2, 3]
    persistence_mode:
      description: C(Enabled) or C(Disabled), from C(nvidia-smi -q -x).
      type: str
      sample: Enabled
    mig_mode:
      description: The current MIG mode (C(Enabled), C(Disabled)), C(null) where the GPU has no MIG.
      type: str
      sample: Disabled
gpu_count:
  description: Number of GPUs found. Also the fact C(pdserve_gpu_count).
  returned: always
  type: int
  sample: 8
gpu_present:
  description: Whether at least one GPU was found. Also the fact C(pdserve_gpu_present).
  returned: always
  type: bool
  sample: true
driver_version:
  description: The NVIDIA driver version; C(null) without nvidia-smi. Also the fact C(pdserve_gpu_driver_version).
  returned: always
  type: str
  sample: 580.159.04
cuda_version:
  description:
    - The highest CUDA version the driver supports (C(<cuda_version>) of C(nvidia-smi -q -x)).
    - Also the fact C(pdserve_cuda_version).
  returned: always
  type: str
  sample: "13.0"
cuda_toolkit_version:
  description:
    - The release of the CUDA toolkit's C(nvcc), C(null) when no nvcc was found.
    - Also the fact C(pdserve_cuda_toolkit_version).
  returned: always
  type: str
  sample: "13.0"
nvcc_path:
  description: The nvcc that was asked for its version, C(null) when none was found.
  returned: always
  type: str
  sample: /usr/local/cuda/bin/nvcc
nvidia_smi_path:
  description: The nvidia-smi that was run, C(null) when none was found.
  returned: always
  type: str
  sample: /usr/bin/nvidia-smi
numa_nodes:
  description:
    - The host's NUMA nodes from C(/sys/devices/system/node), ordered by id. Also the fact C(pdserve_numa_nodes).
    - Empty when the kernel exposes no NUMA information.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: The node number.
      type: int
      sample: 1
    cpulist:
      description: The node's CPUs as the kernel lists them.
      type: str
      sample: 64-127,192-255
    cpus:
      description: The node's CPUs, expanded.
      type: list
      elements: int
      sample: [64, 65, 66]
ansible_facts:
  description: The same values as facts, prefixed C(pdserve_).
  returned: always
  type: dict
  contains:
    pdserve_gpus:
      description: Same as RV(gpus).
      type: list
      elements: dict
    pdserve_gpu_count:
      description: Same as RV(gpu_count).
      type: int
    pdserve_gpu_present:
      description: Same as RV(gpu_present).
      type: bool
    pdserve_gpu_driver_version:
      description: Same as RV(driver_version).
      type: str
    pdserve_cuda_version:
      description: Same as RV(cuda_version).
      type: str
    pdserve_cuda_toolkit_version:
      description: Same as RV(cuda_toolkit_version).
      type: str
    pdserve_numa_nodes:
      description: Same as RV(numa_nodes).
      type: list
      elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.host import gpu as gpu_utils
from ansible_collections.pdserve.sglang.plugins.module_utils.host.gpu import (
    GpuDiscovery,
    GpuDiscoveryError,
    NoGpuFound,
    SysfsReader,
    read_numa_nodes,
)

# Where drivers and containers put nvidia-smi and nvcc when they are not on PATH (one list, in module_utils).
NVIDIA_SMI_DIRS = list(gpu_utils.NVIDIA_SMI_DIRS)
NVCC_DIRS = list(gpu_utils.NVCC_DIRS)

# Result key -> fact name.
FACT_NAMES = (
    ("gpus", "pdserve_gpus"),
    ("gpu_count", "pdserve_gpu_count"),
    ("gpu_present", "pdserve_gpu_present"),
    ("driver_version", "pdserve_gpu_driver_version"),
    ("cuda_version", "pdserve_cuda_version"),
    ("cuda_toolkit_version", "pdserve_cuda_toolkit_version"),
    ("numa_nodes", "pdserve_numa_nodes"),
)


def argument_spec():
    return dict(
        nvidia_smi_path=dict(type="path"),
        nvcc_path=dict(type="path"),
        sysfs_root=dict(type="path", default="/"),
        allow_missing=dict(type="bool", default=False),
    )


def _find(module, name, extra_dirs):
    return gpu_utils.find_tool(module.get_bin_path, name, extra_dirs)


def _executable(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def _exit(module, facts):
    result = dict(facts)
    result["changed"] = False
    result["ansible_facts"] = dict((fact, facts[key]) for key, fact in FACT_NAMES)
    module.exit_json(**result)


def _empty_facts(sysfs, nvidia_smi, nvcc):
    return {
        "gpus": [],
        "gpu_count": 0,
        "gpu_present": False,
        "driver_version": None,
        "cuda_version": None,
        "cuda_toolkit_version": None,
        "nvcc_path": nvcc,
        "nvidia_smi_path": nvidia_smi,
        "numa_nodes": read_numa_nodes(sysfs),
    }


def run_module():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    sysfs = SysfsReader(params["sysfs_root"])

    nvcc = params["nvcc_path"]
    if nvcc and not _executable(nvcc):
        module.fail_json(msg="nvcc_path %s does not exist or is not executable." % nvcc)
    if not nvcc:
        nvcc = _find(module, "nvcc", NVCC_DIRS)

    nvidia_smi = params["nvidia_smi_path"]
    if nvidia_smi:
        if not _executable(nvidia_smi):
            module.fail_json(
                msg="nvidia_smi_path %s does not exist or is not executable. Point it at the driver's "
                "nvidia-smi, or leave it unset to search PATH." % nvidia_smi
            )
    else:
        nvidia_smi = _find(module, "nvidia-smi", NVIDIA_SMI_DIRS)

    if not nvidia_smi:
        msg = (
            "nvidia-smi was not found (searched PATH and %s): the NVIDIA driver is not installed."
            % ", ".join(NVIDIA_SMI_DIRS)
        )
        if not params["allow_missing"]:
            module.fail_json(
                msg=msg + " Install it (run the pdserve.sglang nvidia_driver role, tag driver), then check "
                "that `nvidia-smi` lists the GPUs by hand; set allow_missing=true for hosts without GPUs.",
                gpu_present=False,
            )
        # allow_missing is already set: say what is missing, not how to silence it.
        module.warn("No GPU facts: " + msg)
        _exit(module, _empty_facts(sysfs, None, nvcc))

    discovery = GpuDiscovery(module.run_command, nvidia_smi, sysfs, nvcc=nvcc)
    try:
        facts = discovery.discover()
    except NoGpuFound as exc:
        for warning in discovery.warnings:
            module.warn(warning)
        if not params["allow_missing"]:
            module.fail_json(msg=exc.msg, gpu_present=False, driver_version=exc.facts["driver_version"])
        module.warn("No GPU facts: " + exc.msg)
        facts = exc.facts
    except GpuDiscoveryError as exc:
        module.fail_json(
            msg=exc.msg, cmd=exc.cmd, rc=exc.rc, stdout=exc.stdout, stderr=exc.stderr, gpu_present=False
        )
    else:
        for warning in discovery.warnings:
            module.warn(warning)
    facts["nvidia_smi_path"] = nvidia_smi
    _exit(module, facts)


def main():
    run_module()


if __name__ == "__main__":
    main()
