#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
---
module: router_workers
short_description: Make a running SGLang PD router serve exactly the inventory's workers, without a restart
version_added: 0.4.0
description:
  - Reads the router's C(GET /workers) and compares it with O(workers), the inventory's worker set.
  - A wanted worker the router does not list, or lists with another type or bootstrap port, is registered
    (C(POST /workers) with its type, bootstrap port and the API key) once it answers C(GET /health) with 200, and
    waited for until the router lists it healthy. This also finds a worker that a killed day-2 run left outside the
    router.
  - Safe right after the router's start - it waits for the router to answer, and the list is read again after a new
    worker's C(/health) answered, so a worker the router registered on its own meanwhile is not registered again
    (one still being added counts as listed).
  - A listed worker that O(workers) does not hold (taken out of the inventory or marked C(in_service=false)) is
    deregistered (C(DELETE /workers/{id})) after every new worker is in, then drained (its own metrics are scraped
    until nothing is in flight).
  - The router keeps running, with the same PID. The worker set file the router reads at its next start is
    written by the role, not by this module.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - pdserve.sglang.http_client
  - pdserve.sglang.http_client.control_plane
  - pdserve.sglang.http_client.router_tls
  - ansible.builtin.action_common_attributes
options:
  url:
    description:
      - Base URL of the router, for example C(http://127.0.0.1:30001).
    type: str
    required: true
  workers:
    description:
      - Every worker the router must serve, by type, with the keys C(prefill) and C(decode), each a list of workers.
      - A worker is a mapping with its C(url) (as the router registers it) and, for a prefill, its C(bootstrap_port).
        Other keys are ignored, so the serving topology's C(router_workers) can be passed as it is.
    type: dict
    required: true
  unit:
    description:
      - The router's unit, named in the restart plan's line (callback C(pdserve.sglang.restart_plan)).
    type: str
    default: sglang-router.service
  timeout:
    description:
      - Seconds to wait for the router to answer (it may just have been started), for each new worker to answer
        C(/health) (a server still loading its model does not), then to be listed healthy, and for each removed one
        to leave the list.
    type: float
    default: 120
  drain:
    description:
      - After deregistering a worker, wait until its metrics show no request in flight.
    type: bool
    default: true
  drain_timeout:
    description:
      - Seconds to wait for a deregistered worker to drain; it is reported, not failed, when it does not.
    type: float
    default: 300
attributes:
  check_mode:
    support: full
    details: Reads the router's list and returns what it would register and deregister; a router that does not
      answer (not started yet) has nothing to reconcile.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: pdserve.sglang.router_worker
  - module: pdserve.sglang.worker_idle
'''

EXAMPLES = r'''
- name: Register and deregister workers so the router serves the inventory's set
  pdserve.sglang.router_workers:
    url: http://127.0.0.1:30001
    api_key: "{{ sglang_router_api_key or omit }}"
    control_plane_api_key: "{{ sglang_router_control_plane_api_key or omit }}"
    workers:
      prefill: [{url: "http://10.0.0.11:30000", bootstrap_port: 8998}]
      decode: [{url: "http://10.0.0.21:30002"}]
'''

RETURN = r'''
plan:
  description: What was (or in check mode would be) done, one line per worker (C(register decode http://...)).
  returned: always
  type: list
  elements: str
registered:
  description: The router's entries of the workers registered, as listed once healthy (not those the router
    registered on its own while the module waited for their C(/health)).
  returned: always
  type: list
  elements: dict
deregistered:
  description: The router's entries of the workers deregistered, as they were.
  returned: always
  type: list
  elements: dict
drained:
  description: Per deregistered worker, C(url), C(idle), C(seconds) and C(in_flight) when the drain ended.
  returned: always
  type: list
  elements: dict
restarts:
  description: For the restart plan, the router's line with the worker changes; the router is not restarted.
  returned: when something changed or would change
  type: list
  elements: dict
msg:
  description: In check mode, why nothing was read (the router does not answer).
  returned: sometimes
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.common_args import module_client, router_argument_spec
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.router_admin import RouterAdmin, RouterError
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.worker_set import reconcile, wanted_workers


def argument_spec():
    spec = router_argument_spec()
    spec.update(
        url=dict(type='str', required=True),
        workers=dict(type='dict', required=True),
        unit=dict(type='str', default='sglang-router.service'),
        timeout=dict(type='float', default=120),
        drain=dict(type='bool', default=True),
        drain_timeout=dict(type='float', default=300),
    )
    return spec


def run_module(module, admin=None, client=None):
    params = module.params
    if not params['url'].startswith(('http://', 'https://')):
        module.fail_json(msg='url %r must start with http:// or https://' % params['url'])
    wanted, problem = wanted_workers(params['workers'])
    if problem:
        module.fail_json(msg=problem)
    if params['timeout'] <= 0 or params['drain_timeout'] <= 0:
        module.fail_json(msg='timeout and drain_timeout must be greater than 0')
    client = client or module_client(module)
    admin = admin or RouterAdmin(client, params['url'])
    try:
        result = reconcile(admin, wanted, client, api_key=params['api_key'], timeout=params['timeout'],
                           drain=params['drain'], drain_timeout=params['drain_timeout'], check_mode=module.check_mode)
    except RouterError as exc:
        module.fail_json(msg=str(exc), **exc.details)
    if result['changed']:
        result['restarts'] = [{'unit': params['unit'], 'action': 'workers', 'reasons': result['plan'],
                               'planned': module.check_mode}]
    module.exit_json(**result)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module)


if __name__ == '__main__':
    main()
