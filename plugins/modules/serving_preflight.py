#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: serving_preflight
short_description: Judge one host's part of an SGLang PD serving inventory, in one round trip, changing nothing
version_added: 0.4.0
description:
  - Reads in one pass what the checks need from the host (GPUs and NUMA nodes as M(pdserve.sglang.gpu_facts)
    reads them, listening TCP sockets with the systemd units that own them, whether each bind address belongs
    to the host, the model and template paths, C(numactl), C(/dev/nvidia-uvm), free disk) and judges the host's
    part of the whole serving topology against it.
  - The topology (every host's prefill and decode instances, routers and addresses) comes from the filter
    P(pdserve.sglang.serving_topology#filter) on the controller, so cross-host questions are answered too (a worker the
    router on another host must reach, or a prefill bootstrap address the decode hosts must reach, may be
    neither loopback nor wildcard). Such a problem is reported by the host whose variable must change.
  - Returns every problem as C({host, variable, message, fix}) and fails listing all of them. Changes nothing.
  - With O(sysfs_root) pointing at recorded data (not C(/)), the host is judged from that record, for example to
    plan a layout for a host you do not have yet; the checks that need the real host (listening sockets, bind
    addresses, paths, numactl, the CUDA unified-memory device, free disk) are then skipped and listed in
    RV(not_checked).
  - GPU checks apply where GPUs are visible. On a host whose driver is not installed yet (no C(nvidia-smi), or one
    that fails), they are skipped with O(gpu_facts=auto) (the driver layer verifies the GPUs) and a problem with
    O(gpu_facts=always).
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; it judges the same in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  host:
    description:
      - The inventory name of the host being judged (C(inventory_hostname)).
    type: str
    required: true
  topology:
    description:
      - The result of P(pdserve.sglang.serving_topology#filter) for the whole inventory.
    type: dict
    required: true
  model:
    description:
      - The shared model settings (model_path, served_model_name, chat_template, reasoning_parser, tool_call_parser,
        transfer_backend, transfer_env, context_length, extra_args, env).
      - Omit it to skip the model checks.
    type: dict
  server:
    description:
      - Settings of the model servers on this host.
    type: dict
    default: {}
    suboptions:
      numa_binding:
        description: How instances are pinned to their NUMA node.
        type: str
        default: numactl
      numactl_path:
        description: Where C(numactl) must be when O(server.numa_binding=numactl).
        type: path
        default: /usr/bin/numactl
      no_new_privileges:
        description: Whether the units run with C(NoNewPrivileges=yes) (then C(/dev/nvidia-uvm) must exist beforehand).
        type: bool
        default: true
      home:
        description:
          - The service user's home, where kernel caches and logs grow (the role passes C(sglang_service_home)).
          - Required where O(server.min_free_gb) is not V(0).
        type: path
      min_free_gb:
        description: Free GiB wanted on the filesystem of O(server.home); V(0) skips the check.
        type: float
        default: 0
  server_settings:
    description:
      - The settings the server role renders its units from (its C(_sglang_server_settings)); every value the unit
        renderer would refuse (control characters, a launch command that is not an absolute path, hardening options or
        values systemd does not take, environment names) is a problem naming the variable.
      - Omit it to skip these checks.
    type: dict
  router_settings:
    description:
      - The same for the router role's settings (its C(_sglang_router_settings) without its two keys), judged on a
        host that runs a router.
    type: dict
  router_api_key:
    description:
      - The router's API key, judged with O(router_settings); no problem message or output shows it.
    type: str
  router_control_plane_api_key:
    description:
      - The router's control-plane key, judged with O(router_settings); no problem message or output shows it.
    type: str
    version_added: 0.4.0
  problems:
    description:
      - Problems found on the controller, each C({host, variable, message, fix}), reported with the host's own.
      - The router role passes the TLS problems of P(pdserve.sglang.router_tls_problems#filter), whose files are
        controller paths.
    type: list
    elements: dict
    default: []
    version_added: 0.4.0
  users:
    description:
      - Service users whose sockets count as this collection's own when C(/proc) does not show a socket's process.
    type: list
    elements: str
    default: [sglang]
  paths:
    description:
      - Paths that must exist on the host, each with the variable that sets it (model directory, chat template).
    type: list
    elements: dict
    default: []
    suboptions:
      var:
        description: The variable that sets the path, for messages.
        type: str
        required: true
      path:
        description: The path.
        type: path
        required: true
  check_ports:
    description:
      - Look for processes that are not this collection's units holding the serving ports.
    type: bool
    default: true
  gpu_facts:
    description:
      - V(auto) judges GPUs where C(nvidia-smi) lists them and skips the GPU checks elsewhere; V(always) makes a host
        without working GPUs a problem; V(never) skips the GPU checks.
    type: str
    choices: [auto, always, never]
    default: auto
  sysfs_root:
    description:
      - Directory under which C(sys/bus/pci/devices) and C(sys/devices/system/node) are read. Anything but C(/) means
        recorded data, and the checks that need the real host are skipped.
    type: path
    default: /
  nvidia_smi_path:
    description:
      - The C(nvidia-smi) to run (for recorded data, a program that replays a capture). Default, searched on E(PATH)
        and in the driver's usual directories.
    type: path
  scope:
    description:
      - V(all) judges the host's whole part of the topology against the host, and the settings given.
      - V(settings) judges only O(server_settings) and O(router_settings), reading nothing on the host (for the second
        role of a host whose other role's call judged the host already).
    type: str
    choices: [all, settings]
    default: all
  fail_on_problems:
    description:
      - Fail when a problem is found. V(false) returns the problems for the caller to report.
    type: bool
    default: true
notes:
  - Needs only the Python standard library on the managed host. Run it as root to see the owners of every socket.
seealso:
  - module: pdserve.sglang.gpu_facts
"""

EXAMPLES = r"""
- name: Judge this host's part of the serving inventory
  pdserve.sglang.serving_preflight:
    host: "{{ inventory_hostname }}"
    topology: "{{ hostvars | pdserve.sglang.serving_topology(groups, sglang_topology_defaults) }}"
    model:
      model_path: /models/DeepSeek-V4-Flash
      reasoning_parser: deepseek-v4
      tool_call_parser: deepseekv4
      transfer_backend: nixl
    paths:
      - {var: sglang_server_model_path, path: /models/DeepSeek-V4-Flash}

- name: Plan a layout for a host you do not have, from a capture of an 8-GPU machine
  pdserve.sglang.serving_preflight:
    host: blackwell
    topology: "{{ hostvars | pdserve.sglang.serving_topology(groups, sglang_topology_defaults) }}"
    sysfs_root: /srv/captures/blackwell8x/sysfs
    nvidia_smi_path: /srv/captures/blackwell8x/replay-nvidia-smi
    gpu_facts: always
"""

RETURN = r"""
problems:
  description: Every problem found, in the order checked.
  returned: always
  type: list
  elements: dict
  sample:
    - host: gpu-decode-1
      variable: sglang_decode_instances[decode-0].numa_node
      message: is 0 but GPU 4 is attached to NUMA node 1
      fix: set numa_node to 1 or move the instance to GPUs of node 0
problem_lines:
  description: The problems as readable lines, C(host H) then the variable, the message and the fix.
  returned: always
  type: list
  elements: str
warning_lines:
  description:
    - What works but should change on this host (for example C(--dp-size N --enable-dp-attention) on an instance over
      several nodes, deprecated for C(--attn-dp-size)), as readable lines; each is also a warning of the task.
  returned: when the host was judged with O(scope=all)
  type: list
  elements: str
  version_added: 0.4.0
not_checked:
  description:
    - Checks that were not made, with the reason.
    - Named so that a list here does not make Ansible show or treat the task as skipped (a result key C(skipped)
      does).
  returned: always
  type: list
  elements: dict
  sample:
    - check: listening sockets
      reason: recorded data (sysfs_root is not /)
recorded:
  description: Whether the host was judged from recorded data.
  returned: always
  type: bool
gpus:
  description: The GPUs judged (index, name, compute capability, NUMA node), empty when the GPU checks were skipped.
  returned: always
  type: list
  elements: dict
numa_nodes:
  description: The NUMA node ids the host (or the record) has; empty when unknown.
  returned: always
  type: list
  elements: int
instances:
  description: Names of the prefill and decode instances of this host.
  returned: always
  type: list
  elements: str
router:
  description: Whether the host runs a router.
  returned: always
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.host import gpu as gpu_utils
from ansible_collections.pdserve.sglang.plugins.module_utils.host import observe as host_observe
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import line, report
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.rules import bind_addresses, host_warnings, judge, unit_problems
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import host_part

NVIDIA_SMI_DIRS = list(gpu_utils.NVIDIA_SMI_DIRS)


def argument_spec():
    return dict(
        host=dict(type="str", required=True),
        topology=dict(type="dict", required=True),
        model=dict(type="dict"),
        server=dict(type="dict", default={}, options=dict(
            numa_binding=dict(type="str", default="numactl"),
            numactl_path=dict(type="path", default="/usr/bin/numactl"),
            no_new_privileges=dict(type="bool", default=True),
            home=dict(type="path"),
            min_free_gb=dict(type="float", default=0),
        )),
        server_settings=dict(type="dict"),
        router_settings=dict(type="dict"),
        router_api_key=dict(type="str", no_log=True),
        router_control_plane_api_key=dict(type="str", no_log=True),
        problems=dict(type="list", elements="dict", default=[]),
        users=dict(type="list", elements="str", default=["sglang"]),
        paths=dict(type="list", elements="dict", default=[], options=dict(
            var=dict(type="str", required=True),
            path=dict(type="path", required=True),
        )),
        check_ports=dict(type="bool", default=True),
        gpu_facts=dict(type="str", choices=["auto", "always", "never"], default="auto"),
        sysfs_root=dict(type="path", default="/"),
        nvidia_smi_path=dict(type="path"),
        scope=dict(type="str", choices=["all", "settings"], default="all"),
        fail_on_problems=dict(type="bool", default=True),
    )


def _gpus(module, sysfs, skipped, problems_out):
    """GPUs from nvidia-smi and sysfs, or None when the GPU checks do not apply."""
    params = module.params
    mode = params["gpu_facts"]
    if mode == "never":
        skipped.append({"check": "GPUs", "reason": "gpu_facts is never"})
        return None
    smi = params["nvidia_smi_path"] or gpu_utils.find_tool(module.get_bin_path, "nvidia-smi", NVIDIA_SMI_DIRS)
    why = None
    facts = None
    if not smi or not os.access(smi, os.X_OK):
        why = "no nvidia-smi (searched PATH and %s)" % ", ".join(NVIDIA_SMI_DIRS) if not smi else "%s is not executable" % smi
    else:
        try:
            facts = gpu_utils.GpuDiscovery(module.run_command, smi, sysfs).discover()
        except gpu_utils.NoGpuFound as exc:
            why = exc.msg
        except gpu_utils.GpuDiscoveryError as exc:
            why = exc.msg
    if facts is None:
        if mode == "always":
            problems_out.append({"host": params["host"], "variable": "sglang_server_gpu_facts",
                                 "message": "is 'always' but no GPU can be listed: %s" % why,
                                 "fix": "install the driver (the nvidia_driver role, tag driver) or set gpu_facts to auto"})
        else:
            skipped.append({"check": "GPUs", "reason": "%s; GPU checks apply once the driver lists GPUs (the driver "
                                                       "layer verifies them)" % why})
        return None
    return facts["gpus"]


def run_module():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    host = params["host"]
    topology = params["topology"]
    for key in ("hosts", "workers", "routers", "problems"):
        if key not in topology:
            module.fail_json(msg="topology has no %r: pass the result of the pdserve.sglang.serving_topology filter" % key)
    entry, _mine = host_part(topology, host)
    instances = entry["prefill"] + entry["decode"]
    router_settings = params["router_settings"]
    if router_settings is not None:
        # The keys travel apart, as no_log options: inside router_settings -vvv and the host's journal would show them.
        keys = {"api_key": params["router_api_key"], "control_plane_api_key": params["router_control_plane_api_key"]}
        router_settings = dict(router_settings, **dict((k, v) for k, v in keys.items() if v))
    controller = [dict((k, item.get(k)) for k in ("host", "variable", "message", "fix")) for item in params["problems"]]
    if params["scope"] == "settings":
        problems = list(controller)
        if instances:
            problems += unit_problems(host, "server", params["server_settings"])
        if entry["router"] is not None:
            problems += unit_problems(host, "router", router_settings)
        result = dict(changed=False, problems=problems, problem_lines=[line(p) for p in problems],
                      not_checked=[{"check": "the host", "reason": "scope is settings"}], recorded=False, gpus=[],
                      numa_nodes=[], instances=[i["name"] for i in instances], router=entry["router"] is not None)
        if problems and params["fail_on_problems"]:
            module.fail_json(msg=report(problems), **result)
        module.exit_json(**result)
    recorded = params["sysfs_root"] not in ("/", "")
    sysfs = gpu_utils.SysfsReader(params["sysfs_root"])
    skipped = []
    found = []
    serving = bool(instances) or entry["router"] is not None

    observed = {}
    observed["gpus"] = _gpus(module, sysfs, skipped, found) if instances else None
    nodes = [n["id"] for n in gpu_utils.read_numa_nodes(sysfs)]
    observed["numa_nodes"] = nodes or None
    if recorded:
        for check in ("listening sockets", "bind addresses", "paths", "numactl", "/dev/nvidia-uvm", "free disk"):
            skipped.append({"check": check, "reason": "recorded data (sysfs_root is %s)" % params["sysfs_root"]})
    elif serving:
        server = params["server"]
        if params["check_ports"]:
            observed["listeners"] = host_observe.listeners()
        else:
            skipped.append({"check": "listening sockets", "reason": "check_ports is false"})
        observed["addresses"] = dict((a, host_observe.address_is_local(a)) for a in bind_addresses(entry))
        observed["paths"] = [dict(item, exists=os.path.exists(item["path"])) for item in params["paths"]]
        observed["numactl"] = os.access(server["numactl_path"], os.X_OK)
        observed["nvidia_uvm"] = os.path.exists("/dev/nvidia-uvm")
        if server["min_free_gb"] and not server["home"]:
            module.fail_json(msg="serving_preflight: server.min_free_gb needs server.home, the directory to measure")
        observed["home_free_gb"] = host_observe.free_gib(server["home"]) if server["min_free_gb"] else None

    server = dict(params["server"], own_uids=host_observe.uids_of(params["users"]))
    units = {"server": params["server_settings"], "router": router_settings}
    problems = found + judge(host, topology, params["model"] if instances else None, server, observed, units) + controller
    warnings = host_warnings(host, topology, params["model"] if instances else None)
    for item in warnings:
        module.warn(line(item))
    result = dict(
        changed=False,
        problems=problems,
        problem_lines=[line(p) for p in problems],
        warning_lines=[line(w) for w in warnings],
        not_checked=skipped,
        recorded=recorded,
        gpus=[dict((k, g.get(k)) for k in ("index", "name", "compute_capability", "numa_node", "memory_total_mib"))
              for g in observed["gpus"] or []],
        numa_nodes=nodes,
        instances=[i["name"] for i in instances],
        router=entry["router"] is not None,
    )
    if problems and params["fail_on_problems"]:
        module.fail_json(msg=report(problems), **result)
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
