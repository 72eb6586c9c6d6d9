#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
---
module: venv_state
short_description: Read which venv and SGLang version each model server runs, and judge an upgrade's preflight
version_added: 0.4.0
description:
  - In one round trip, reads the C(PDSERVE_*) fingerprint lines of each instance's env file (venv, SGLang version,
    model), the versioned venvs under O(venv_root) with the SGLang version installed in each, the C(current) and
    C(previous) links there, which venvs the unit files name, and the free disk under O(venv_root).
  - Judges what an upgrade or rollback needs before anything stops, and lists every problem as host, variable,
    message, fix; the instances must be deployed with a fingerprint and run from one venv, and a new venv needs
    O(min_free_gb) free (a full SGLang venv is about 11 GB).
  - Says which venvs could go (RV(prunable)) - neither current, previous, the target, nor named by a unit file.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
options:
  host:
    description:
      - The name problems are reported under (the inventory host name); the machine's host name by default.
    type: str
  instances:
    description:
      - This host's instances.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Instance name.
        type: str
        required: true
      env_file:
        description: Its environment file.
        type: path
        required: true
  venv_root:
    description:
      - The directory of the versioned venvs and of the C(current) and C(previous) links.
    type: path
    required: true
  target:
    description:
      - The venv an upgrade or rollback moves the instances to (a link counts as the venv it names). Instances already
        on it are an interrupted run that running it again finishes.
    type: path
  min_free_gb:
    description:
      - Free GiB wanted under O(venv_root) when O(target) does not exist yet; V(0) skips the check.
    type: float
    default: 0
  unit_dir:
    description:
      - Where the units are; a venv one of them names is never prunable.
    type: path
    default: /etc/systemd/system
  package:
    description:
      - The distribution whose installed version is read from each venv.
    type: str
    default: sglang
  fail_on_problems:
    description:
      - Fail listing every problem; V(false) returns them in RV(problems).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details: The module only reads.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - The module never changes anything; it always reports C(changed=false).
'''

EXAMPLES = r'''
- name: Judge an upgrade of this host's instances to /opt/sglang/venvs/sglang-0.5.24
  pdserve.sglang.venv_state:
    instances:
      - {name: decode-0, env_file: /etc/sglang/decode-0.env}
      - {name: decode-1, env_file: /etc/sglang/decode-1.env}
    venv_root: /opt/sglang/venvs
    target: /opt/sglang/venvs/sglang-0.5.24
    min_free_gb: 12
  register: __venvs
'''

RETURN = r'''
instances:
  description: Per instance, its env file and fingerprint (C(venv), C(sglang), C(model)).
  returned: always
  type: dict
  sample: {"decode-0": {"env_file": "/etc/sglang/decode-0.env", "exists": true,
           "fingerprint": {"venv": "/opt/sglang/venv", "sglang": "0.5.23", "model": "/models/x@abc"}}}
current:
  description: The C(current) link's target, else the one venv besides O(target) the instances run from; null when neither.
  returned: always
  type: str
previous:
  description: The C(previous) link's target (what C(playbooks/rollback.yml) returns to); null when none.
  returned: always
  type: str
venvs_in_use:
  description: The venvs the instances run from (more than one during an interrupted upgrade).
  returned: always
  type: list
  elements: str
current_version:
  description: The O(package) version installed in RV(current); null when unknown.
  returned: always
  type: str
previous_version:
  description: The O(package) version installed in RV(previous); null when unknown.
  returned: always
  type: str
venvs:
  description: The venvs under O(venv_root), each with the version of O(package) installed in it.
  returned: always
  type: list
  elements: dict
target:
  description: O(target) - its path, whether it exists and the version installed in it.
  returned: when O(target) was given
  type: dict
free_gb:
  description: Free GiB under O(venv_root).
  returned: always
  type: float
prunable:
  description: Venvs under O(venv_root) that are neither current, previous, the target, nor named by a unit file.
  returned: always
  type: list
  elements: str
problems:
  description: What stands in the way, each as C({host, variable, message, fix}).
  returned: always
  type: list
  elements: dict
'''

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import report
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.venv_state import judge, observe


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type='str'),
            instances=dict(type='list', elements='dict', required=True, options=dict(
                name=dict(type='str', required=True),
                env_file=dict(type='path', required=True),
            )),
            venv_root=dict(type='path', required=True),
            target=dict(type='path'),
            min_free_gb=dict(type='float', default=0),
            unit_dir=dict(type='path', default='/etc/systemd/system'),
            package=dict(type='str', default='sglang'),
            fail_on_problems=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    host = params['host'] or socket.gethostname()
    seen = observe(params['instances'], params['venv_root'], params['unit_dir'], params['package'], params['target'])
    decided = judge(host, seen, params['target'], params['min_free_gb'])
    result = dict(changed=False, instances=seen['instances'], venvs=seen['venvs'], free_gb=seen['free_gb'],
                  current=decided['current'], previous=decided['previous'], prunable=decided['prunable'],
                  current_version=decided['current_version'], previous_version=decided['previous_version'],
                  venvs_in_use=decided['venvs_in_use'],
                  problems=decided['problems'], referenced=seen['referenced'])
    if 'target' in decided:
        result['target'] = decided['target']
    if decided['problems'] and params['fail_on_problems']:
        module.fail_json(msg=report(decided['problems'], 'the venv check'), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
