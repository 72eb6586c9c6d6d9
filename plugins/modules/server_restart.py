#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
---
module: server_restart
short_description: Restart one SGLang model server unit and wait until it serves again, timed
version_added: 0.4.0
description:
  - Runs C(systemctl restart) on the unit (after C(systemctl daemon-reload) when O(daemon_reload=true)) and waits
    until the server answers C(GET /health) with 200 and generates (C(/health_generate) for a prefill or decode
    server), the way M(pdserve.sglang.wait_ready) waits. A unit that fails or stops ends the wait at once with its
    last journal lines.
  - Returns the restart-to-ready time, measured on the host from the moment the restart was issued.
  - Also reads from the unit's journal how long its previous start took until SGLang logged
    C(The server is fired up and ready to roll!), the estimate of how long a restart keeps the server away.
  - Take the server out of its routers first (M(pdserve.sglang.router_worker), M(pdserve.sglang.worker_idle)), since
    a restart cuts the streams it is serving.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - pdserve.sglang.http_client
  - ansible.builtin.action_common_attributes
options:
  unit:
    description:
      - The systemd unit of the server, for example C(sglang-decode-0.service).
    type: str
    required: true
  url:
    description:
      - Base URL of the server as its own host reaches it, for example C(http://127.0.0.1:30002).
    type: str
    required: true
  daemon_reload:
    description:
      - Run C(systemctl daemon-reload) first (after its unit file changed).
    type: bool
    default: false
  timeout:
    description:
      - Seconds to wait for the server to be ready (a real model loads for minutes).
    type: float
    default: 1800
  interval:
    description:
      - Seconds between two probes.
    type: float
    default: 0.25
  generate:
    description:
      - Require a generation, not only C(/health) 200.
    type: bool
    default: true
  reason:
    description:
      - Why the unit restarts, for the restart plan at the end of the run (callback C(pdserve.sglang.restart_plan)).
    type: str
    default: restart requested
attributes:
  check_mode:
    support: full
    details: Reads the unit's previous load time and reports that it would restart; restarts nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: pdserve.sglang.router_worker
  - module: pdserve.sglang.worker_idle
  - module: pdserve.sglang.wait_ready
'''

EXAMPLES = r'''
- name: Restart decode-0 (already out of the router and idle) and wait until it generates again
  pdserve.sglang.server_restart:
    unit: sglang-decode-0.service
    url: http://127.0.0.1:30002
    reason: rolling restart
  register: __restarted

- name: Say how long the last start of decode-0 took, without restarting it
  pdserve.sglang.server_restart:
    unit: sglang-decode-0.service
    url: http://127.0.0.1:30002
  check_mode: true
'''

RETURN = r'''
restart_to_ready:
  description: Seconds from issuing the restart until the server was ready.
  returned: when it restarted
  type: float
  sample: 3.42
restart_seconds:
  description: Seconds C(systemctl restart) took (stopping the old process and starting the new one).
  returned: when it restarted
  type: float
  sample: 0.31
previous_load_seconds:
  description: Seconds the unit's previous start took until SGLang logged that it is ready; null when unknown.
  returned: always
  type: float
  sample: 212.5
startup:
  description:
    - Where the new start spent its time, read from the unit's journal as M(pdserve.sglang.wait_ready) reads it
      (C(phase), C(ready_s), C(phases), C(line)).
  returned: when it restarted and the journal holds SGLang's start-up lines
  type: dict
  sample: {"phase": "ready", "ready_s": 12.8, "line": "sglang-decode.service ready in 12.8 s: load weights 8.1 s, KV cache
    0.1 s, CUDA graphs 1.5 s, warmup 2.0 s", "phases": {"load_weight": 8.1, "warmup": 2.0}}
  version_added: 0.4.0
unit_state:
  description: The unit's state (LoadState, ActiveState, SubState, Result, ExecMainStatus, NRestarts) when ready.
  returned: when it restarted
  type: dict
journal:
  description: The unit's last journal lines.
  returned: on failure
  type: list
  elements: str
restarts:
  description: The restart for the run's restart plan, C([{unit, reasons, planned}]).
  returned: always
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.common_args import (
    client_from_params,
    http_argument_spec,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.validation.readiness import SystemdInspector
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.server_lifecycle import RestartError, ServerRestarter


def argument_spec():
    spec = http_argument_spec()
    spec.update(
        unit=dict(type='str', required=True),
        url=dict(type='str', required=True),
        daemon_reload=dict(type='bool', default=False),
        timeout=dict(type='float', default=1800),
        interval=dict(type='float', default=0.25),
        generate=dict(type='bool', default=True),
        reason=dict(type='str', default='restart requested'),
    )
    return spec


def make_restarter(module):
    systemctl = module.get_bin_path('systemctl', required=True)
    journalctl = module.get_bin_path('journalctl') or 'journalctl'

    def run(args):
        return module.run_command(args, check_rc=False, environ_update={'SYSTEMD_PAGER': '', 'LC_ALL': 'C'})

    inspector = SystemdInspector(run, systemctl=systemctl, journalctl=journalctl)
    return ServerRestarter(run, client_from_params(module.params), inspector, systemctl=systemctl,
                           journalctl=journalctl)


def run_module(module, restarter=None):
    params = module.params
    if not params['url'].startswith(('http://', 'https://')):
        module.fail_json(msg='url %r must start with http:// or https://' % params['url'])
    if params['timeout'] <= 0 or params['interval'] <= 0:
        module.fail_json(msg='timeout and interval must be greater than 0')
    restarter = restarter or make_restarter(module)
    unit = params['unit']
    plan = [{'unit': unit, 'reasons': [params['reason']], 'planned': module.check_mode}]
    try:
        previous = restarter.previous_load(unit)
    except RestartError as exc:
        module.fail_json(msg=str(exc), restarts=[])
    if module.check_mode:
        module.exit_json(changed=True, previous_load_seconds=previous, restarts=plan,
                         msg='would restart %s (%s)' % (unit, params['reason']))
    try:
        details = restarter.restart(unit, params['url'], params['timeout'], params['interval'], params['generate'],
                                    params['daemon_reload'])
    except RestartError as exc:
        module.fail_json(msg=str(exc), changed=True, previous_load_seconds=previous, restarts=plan, **exc.details)
    module.exit_json(changed=True, previous_load_seconds=previous, restarts=plan,
                     msg='%s restarted and ready in %.2f s' % (unit, details['restart_to_ready']), **details)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module)


if __name__ == '__main__':
    main()
