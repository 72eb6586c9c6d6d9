#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
---
module: kv_fabric_probe
short_description: Move a buffer with NIXL between two agents and report what UCX carried it through
version_added: 0.4.0
description:
  - SGLang's PD KV transfer with C(--disaggregation-transfer-backend nixl) goes through the UCX that NIXL bundles, and
    nothing tells which path it takes. UCX falls back to TCP without RDMA and stages GPU memory through host memory
    (software emulation) without a warning. This module creates NIXL agents (UCX backend) with C(UCX_PROTO_INFO=y),
    moves a buffer, checks that it arrived intact, times each round, and reads from UCX's own lines which transports
    carried the memory that moved and whether that was software emulation.
  - O(mode=target) (a decode host) registers one buffer per initiator to be written and one to be read, writes its
    agent's metadata and the buffers' descriptors to O(handoff_path) (mode 0600), and waits until each initiator has
    written its slot; run it with C(async) and C(poll=0), then carry the handoff file to the initiators.
  - O(mode=initiator) (a prefill host, the KV's direction) writes its pattern into its O(slot) of the target and reads
    the target's buffer back, so the buffer moves both ways; the target then checks what was written.
  - O(mode=in_process) runs two agents in this process (one host or one GPU); it proves that NIXL and UCX register and
    move that memory, and through what, not the fabric between hosts.
  - Run it with the Python of the model servers' venv (C(ansible_python_interpreter)), whose NIXL and torch it imports.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
options:
  mode:
    description: Which side of the probe this is.
    type: str
    choices: [in_process, target, initiator]
    required: true
  name:
    description: The NIXL agent's name, unique among the agents of one probe (for example the host's name and side).
    type: str
    default: pdserve-fabric
  memory:
    description: Where the buffers are, V(VRAM) (GPU O(device)) or V(DRAM) (host memory).
    type: str
    choices: [DRAM, VRAM]
    default: VRAM
  device:
    description: The GPU index for O(memory=VRAM), as CUDA numbers it for this process.
    type: int
    default: 0
  size_mib:
    description: Size of each buffer in MiB (the target's receiving buffers are one per slot).
    type: int
    default: 64
  rounds:
    description: Rounds of each transfer; the figure is the median round's bandwidth.
    type: int
    default: 4
  timeout:
    description: Seconds a transfer may take (O(mode=initiator), O(mode=in_process)), or that the target waits for all
      its initiators (O(mode=target)).
    type: float
    default: 120
  slots:
    description: O(mode=target) only. How many initiators write into this target (slot 0 to slots - 1).
    type: int
    default: 1
  handoff_path:
    description: O(mode=target) only. Where the target writes its handoff (JSON, mode 0600) once its buffers are
      registered.
    type: path
  handoff:
    description: O(mode=initiator) only. The target's handoff, as read from its O(handoff_path).
    type: dict
  slot:
    description: O(mode=initiator) only. This initiator's slot at the target.
    type: int
    default: 0
  user:
    description:
      - Run the probe as this user (its primary and supplementary groups, C(HOME)) instead of the user the module
        starts as. The module, started as root, runs the probe in a process of its own that drops root's privileges
        before it loads NIXL and touches memory or the network, as the model servers run (so their user's access to
        the GPUs and the fabric is what is proven); the module's process only hands back the result. With
        O(mode=target) the directory of O(handoff_path) must be writable by that user.
      - Unset, or the user the module already runs as, nothing changes. A user that does not exist fails the probe
        before anything moves.
    type: str
    version_added: 0.4.0
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - It changes nothing on the host but the target's handoff file; it always reports C(changed=false).
  - The controller needs neither NIXL nor torch; the host's interpreter for this task does.
seealso:
  - name: pdserve.sglang.sglang_kv_fabric
    description: The role that runs it for every prefill and decode host pair before the servers start.
    link: https://github.com/pdserve/sglang/blob/main/roles/sglang_kv_fabric/README.md
'''

EXAMPLES = r'''
- name: Move GPU memory between two agents on this GPU host
  pdserve.sglang.kv_fabric_probe:
    mode: in_process
    memory: VRAM
  vars:
    ansible_python_interpreter: /opt/sglang/venv/bin/python

- name: Be the target of two prefill hosts (in the background)
  pdserve.sglang.kv_fabric_probe:
    mode: target
    name: fabric-decode-1
    slots: 2
    handoff_path: /run/pdserve-fabric/handoff.json
  async: 300
  poll: 0
  vars:
    ansible_python_interpreter: /opt/sglang/venv/bin/python
'''

RETURN = r'''
user:
  description: The user the probe ran as (O(user), or the module's own where O(user) is unset).
  returned: success
  type: str
  sample: sglang
  version_added: 0.4.0
memory:
  description: Where the buffers were.
  returned: success
  type: str
  sample: VRAM
bytes:
  description: Size of each buffer in bytes.
  returned: success
  type: int
  sample: 67108864
directions:
  description: Each direction moved (not for O(mode=target)), with the operation, the seconds of each round, the
    median round's bandwidth in GB/s, and whether it arrived intact (null where the other side checks it).
  returned: success
  type: list
  elements: dict
  sample: [{"from": "fabric-prefill-1", "to": "fabric-decode-1", "operation": "WRITE", "gbps": 11.2, "intact": null}]
received:
  description: O(mode=target) only. Each initiator's slot, who wrote it, and whether it held that initiator's pattern.
  returned: success
  type: list
  elements: dict
missing_slots:
  description: O(mode=target) only. Slots no initiator finished within O(timeout).
  returned: success
  type: list
  elements: int
transports:
  description: The UCX transports of the memory that moved between the agents (C(rc_mlx5), C(tcp), C(cuda_ipc), ...);
    empty where UCX printed nothing this module could read.
  returned: success
  type: list
  elements: str
  sample: [cuda_ipc]
emulated:
  description: Whether UCX moved that memory by software emulation (GPU memory staged through host memory).
  returned: success
  type: bool
operations:
  description: UCX's tables for that memory (context, operation, rows of size range, protocol and transports).
  returned: success
  type: list
  elements: dict
ucx_tail:
  description: UCX's last lines (its selection tables and warnings), for what the summary does not say.
  returned: always
  type: list
  elements: str
'''

import json
import os
import pwd

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.host.service_account import run_as
from ansible_collections.pdserve.sglang.plugins.module_utils.validation import kv_fabric


def argument_spec():
    return dict(
        mode=dict(type='str', choices=['in_process', 'target', 'initiator'], required=True),
        name=dict(type='str', default='pdserve-fabric'),
        memory=dict(type='str', choices=['DRAM', 'VRAM'], default='VRAM'),
        device=dict(type='int', default=0),
        size_mib=dict(type='int', default=64),
        rounds=dict(type='int', default=4),
        timeout=dict(type='float', default=120),
        slots=dict(type='int', default=1),
        handoff_path=dict(type='path'),
        handoff=dict(type='dict'),
        slot=dict(type='int', default=0),
        user=dict(type='str'),
    )


def problems(params):
    """What is wrong with the arguments, before NIXL is imported."""
    found = []
    if params['size_mib'] < 1 or params['rounds'] < 1 or params['timeout'] <= 0 or params['device'] < 0:
        found.append('size_mib and rounds must be at least 1, timeout greater than 0 and device at least 0')
    if params['mode'] == 'target' and (not params['handoff_path'] or params['slots'] < 1):
        found.append('mode=target needs handoff_path and slots of at least 1')
    if params['mode'] == 'initiator':
        handoff = params['handoff'] or {}
        if not all(key in handoff for key in ('agent', 'metadata', 'bytes', 'receive', 'send')):
            found.append('mode=initiator needs the target\'s handoff (agent, metadata, bytes, receive, send)')
        elif not 0 <= params['slot'] < len(handoff['receive']):
            found.append('slot %d is not one of the target\'s %d slot(s)' % (params['slot'], len(handoff['receive'])))
    return found


def probe(params):
    common = dict(memory=params['memory'], device=params['device'], timeout=params['timeout'])
    if params['mode'] == 'in_process':
        return kv_fabric.probe_in_process(size_mib=params['size_mib'], rounds=params['rounds'], **common)
    if params['mode'] == 'target':
        return kv_fabric.serve_target(params['name'], params['handoff_path'], params['slots'],
                                      size_mib=params['size_mib'], **common)
    return kv_fabric.run_initiator(params['name'], params['handoff'], params['slot'], rounds=params['rounds'], **common)


def outcome(params, runner):
    """``{'result': ...}``, or ``{'msg': ...}`` saying why the probe failed; as ``params['user']`` where that is set."""
    try:
        result = runner(params)
    except ImportError as exc:
        return {'msg': 'this interpreter cannot import NIXL and torch (%s): run the probe with the Python of the model '
                       'servers\' venv, where the install layer put them' % exc}
    except Exception as exc:  # NIXL raises its own errors (nixlNotFoundError, ...) and RuntimeError for a transfer
        return {'msg': 'the NIXL probe failed: %s: %s' % (type(exc).__name__, exc)}
    return {'result': dict(result, user=pwd.getpwuid(os.geteuid()).pw_name)}


def outcome_as(params, runner):
    """``outcome`` in a child process that drops root first, so this module's own process keeps root only to hand
    back the result (Ansible's payload, which exit_json still reads, is root's alone)."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's answer is what the parent reads)
        os.close(read)
        refused = run_as(params['user'])
        answer = {'msg': 'the probe cannot run as %s: %s' % (params['user'], refused)} if refused \
            else outcome(params, runner)
        try:
            data = json.dumps(answer).encode('utf-8')
        except (TypeError, ValueError) as exc:
            data = json.dumps({'msg': 'the probe\'s result is not JSON: %s' % exc}).encode('utf-8')
        with os.fdopen(write, 'wb') as handle:
            handle.write(data)
        os._exit(0)  # never the parent's cleanup (Ansible removes its payload on exit)
    os.close(write)
    with os.fdopen(read, 'rb') as handle:
        data = handle.read()
    status = os.waitpid(child, 0)[1]
    if not data:
        return {'msg': 'the probe\'s process ended without an answer (wait status %d)' % status}
    return json.loads(data.decode('utf-8'))


def run_module(module, runner=None):
    wrong = problems(module.params)
    if wrong:
        module.fail_json(msg='; '.join(wrong))
    answer = (outcome_as if module.params['user'] else outcome)(module.params, runner or probe)
    if 'msg' in answer:
        module.fail_json(msg=answer['msg'], ucx_tail=[])
    result = answer['result']
    lines = result.pop('ucx_output', '').splitlines()
    result['ucx_tail'] = lines[-60:]
    result['msg'] = kv_fabric.summary(result)
    module.exit_json(changed=False, **result)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=False)
    run_module(module)


if __name__ == '__main__':
    main()
