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
  - Says which venvs could go (RV(prunable)) - only venvs the collection recorded creating (the record file
    C(.pdserve-venvs.json) under O(venv_root)), and of those none that is current, previous, the target, run by an
    instance, or named by a unit file. A venv made by hand is never prunable. Paths are compared resolved, so a
    venv root reached through a symlink keeps what its links name.
  - With O(record_created), records that venv as created by the collection instead (before it is created), and
    changes nothing else.
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
    default: []
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
  must_exist:
    description:
      - O(target) must already be a venv (a rollback returns to one, it never builds one); a missing target, or a link
        whose venv is gone, is a problem naming the path.
    type: bool
    default: false
  record_created:
    description:
      - Record this venv in O(venv_root)'s record file as created by the collection, before it is created (the
        upgrade's install step). Recorded only when it is directly under O(venv_root) and does not exist yet (or is an
        empty directory); a venv that exists already was not made by this run and is never recorded. Nothing else is
        read or judged then.
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
    required: true
  cache_root:
    description:
      - The model servers' compile cache root (C(sglang_cache_root)); its trees of the RV(prunable) venvs are returned as
        RV(prunable_caches), to be removed with them.
    type: path
    version_added: 0.4.0
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
    details: The module only reads; with O(record_created) it says whether it would record, writing nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Without O(record_created) the module never changes anything and reports C(changed=false).
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

- name: Record the new venv as created by the collection (the only kind pruning may remove), before it is created
  pdserve.sglang.venv_state:
    venv_root: /opt/sglang/venvs
    record_created: /opt/sglang/venvs/sglang-0.5.24
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
  description: Venvs under O(venv_root) the collection recorded creating that are neither current, previous, the target,
    run by an instance, nor named by a unit file.
  returned: always, except with O(record_created)
  type: list
  elements: str
prunable_caches:
  description: The compile cache trees under O(cache_root) that belong to a RV(prunable) venv (C(sglang-<version>-<venv
    digest>)); empty without O(cache_root) or when it does not exist.
  returned: always, except with O(record_created)
  type: list
  elements: str
  version_added: 0.4.0
recorded:
  description: With O(record_created) - whether the venv is in the record now; otherwise the recorded venv names.
  returned: always
  type: raw
reason:
  description: With O(record_created) - why the venv was recorded or not.
  returned: with O(record_created)
  type: str
problems:
  description: What stands in the way, each as C({host, variable, message, fix}).
  returned: always
  type: list
  elements: dict
'''

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import report
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.venv_state import (
    judge,
    observe,
    prunable_caches,
    record_created,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type='str'),
            instances=dict(type='list', elements='dict', default=[], options=dict(
                name=dict(type='str', required=True),
                env_file=dict(type='path', required=True),
            )),
            venv_root=dict(type='path', required=True),
            target=dict(type='path'),
            must_exist=dict(type='bool', default=False),
            record_created=dict(type='path'),
            min_free_gb=dict(type='float', default=0),
            unit_dir=dict(type='path', required=True),
            cache_root=dict(type='path'),
            package=dict(type='str', default='sglang'),
            fail_on_problems=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params['record_created']:
        module.exit_json(**record_created(params['venv_root'], params['record_created'], module.check_mode))
    host = params['host'] or socket.gethostname()
    seen = observe(params['instances'], params['venv_root'], params['unit_dir'], params['package'], params['target'])
    decided = judge(host, seen, params['target'], params['min_free_gb'], must_exist=params['must_exist'])
    result = dict(changed=False, instances=seen['instances'], venvs=seen['venvs'], free_gb=seen['free_gb'],
                  current=decided['current'], previous=decided['previous'], prunable=decided['prunable'],
                  current_version=decided['current_version'], previous_version=decided['previous_version'],
                  venvs_in_use=decided['venvs_in_use'],
                  prunable_caches=prunable_caches(params['cache_root'], decided['prunable']),
                  problems=decided['problems'], referenced=seen['referenced'], recorded=seen['recorded'])
    if 'target' in decided:
        result['target'] = decided['target']
    if decided['problems'] and params['fail_on_problems']:
        module.fail_json(msg=report(decided['problems'], 'the venv check'), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
