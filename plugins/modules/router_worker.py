#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
---
module: router_worker
short_description: Take a prefill or decode worker out of an SGLang PD router, or put it back healthy
version_added: 0.4.0
description:
  - Drives the worker API of C(sglang-router) 0.3.2 for one worker, the way a rolling restart needs it.
  - V(absent) looks the worker's id up by URL right before C(DELETE /workers/{id}) (ids change with every
    registration) and waits until the router no longer lists it. Removal does not abort the requests already on
    the worker; wait for them with M(pdserve.sglang.worker_idle).
  - V(absent) refuses to remove the last healthy worker of its type (every request would fail until it is back)
    unless O(allow_last=true).
  - V(present) sends C(POST /workers) with the C(worker_type), the C(bootstrap_port) of a prefill and the API key,
    and waits until the router lists the URL healthy with that type and port. A worker already listed that way is
    left alone; one listed with another type or port (for example a C(regular) worker added without a type, which
    a PD router never routes to) is removed and added again.
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
      - O(control_plane_api_key) is the router's control-plane key (its C(--control-plane-api-keys) admin entry), sent
        with every request to C(/workers); O(api_key), the router's C(--api-key), goes into the POST body as the key the
        router presents to the worker (and into the header when no control-plane key is given). Neither is logged.
    type: str
    required: true
  worker_url:
    description:
      - The worker's URL exactly as the router has it registered (the router's C(--prefill)/C(--decode) value).
    type: str
    required: true
  worker_type:
    description:
      - The worker's type.
    type: str
    required: true
    choices: [prefill, decode]
  bootstrap_port:
    description:
      - The prefill worker's C(--disaggregation-bootstrap-port). Required for a prefill with O(state=present).
    type: int
  state:
    description:
      - V(absent) takes the worker out, V(present) puts it back and waits until it is healthy.
    type: str
    choices: [absent, present]
    default: present
  allow_last:
    description:
      - With O(state=absent), remove the worker even when it is the last healthy one of its type.
    type: bool
    default: false
  timeout:
    description:
      - Seconds to wait for the router to drop the worker (V(absent)) or to list it healthy (V(present)).
    type: float
    default: 60
  interval:
    description:
      - Seconds between two reads of C(GET /workers) while waiting.
    type: float
    default: 0.2
  wait:
    description:
      - With O(state=present), wait until the worker is listed healthy. V(false) only queues the registration
        (the router keeps retrying it until the worker answers C(/health)).
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details: Reads the router's list and says what it would do; the last-worker refusal applies in check mode too.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Restarting the router itself rebuilds its list from its command line, so what this module removes comes back
    with a router restart, and what it adds goes unless the router's unit lists it.
seealso:
  - module: pdserve.sglang.worker_idle
  - module: pdserve.sglang.server_restart
'''

EXAMPLES = r'''
- name: Take decode-0 out of the router (fails if it is the last healthy decode worker)
  pdserve.sglang.router_worker:
    url: http://127.0.0.1:30001
    api_key: "{{ sglang_router_api_key or omit }}"
    control_plane_api_key: "{{ sglang_router_control_plane_api_key or omit }}"
    worker_url: http://10.0.0.21:30002
    worker_type: decode
    state: absent

- name: Put prefill-0 back and wait until the router lists it healthy as a prefill on port 8998
  pdserve.sglang.router_worker:
    url: http://127.0.0.1:30001
    worker_url: http://10.0.0.11:30000
    worker_type: prefill
    bootstrap_port: 8998
    state: present
'''

RETURN = r'''
worker:
  description: The router's entry for the worker (id, url, worker_type, is_healthy, bootstrap_port, load) as it was
    removed (V(absent)) or as it is now listed (V(present)); null when it was not listed.
  returned: always
  type: dict
  sample: {"id": "6f1c...", "url": "http://10.0.0.21:30002", "worker_type": "decode", "is_healthy": true}
seconds:
  description: Seconds from the first request to the router until it showed the wanted state.
  returned: always
  type: float
  sample: 0.06
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.common_args import (
    module_client,
    router_argument_spec,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.router_admin import RouterAdmin, RouterError


def argument_spec():
    spec = router_argument_spec()
    spec.update(
        url=dict(type='str', required=True),
        worker_url=dict(type='str', required=True),
        worker_type=dict(type='str', required=True, choices=['prefill', 'decode']),
        bootstrap_port=dict(type='int'),
        state=dict(type='str', choices=['absent', 'present'], default='present'),
        allow_last=dict(type='bool', default=False),
        timeout=dict(type='float', default=60),
        interval=dict(type='float', default=0.2),
        wait=dict(type='bool', default=True),
    )
    return spec


def run_module(module, admin=None):
    params = module.params
    for key in ('url', 'worker_url'):
        if not params[key].startswith(('http://', 'https://')):
            module.fail_json(msg='%s %r must start with http:// or https://' % (key, params[key]))
    if params['state'] == 'present' and params['worker_type'] == 'prefill' and params['bootstrap_port'] is None:
        module.fail_json(msg='bootstrap_port is required to add a prefill worker (without it the router hangs '
                             'the requests it sends there)')
    if params['timeout'] <= 0 or params['interval'] <= 0:
        module.fail_json(msg='timeout and interval must be greater than 0')
    if admin is None:
        admin = RouterAdmin(module_client(module), params['url'], interval=params['interval'])
    try:
        if params['state'] == 'absent':
            result = admin.remove(params['worker_url'], params['worker_type'], allow_last=params['allow_last'],
                                  timeout=params['timeout'], check_mode=module.check_mode)
        else:
            result = admin.add(params['worker_url'], params['worker_type'], params['bootstrap_port'],
                               api_key=params['api_key'], timeout=params['timeout'], check_mode=module.check_mode,
                               wait=params['wait'])
    except RouterError as exc:
        module.fail_json(msg=str(exc), **exc.details)
    module.exit_json(**result)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module)


if __name__ == '__main__':
    main()
