#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
---
module: worker_idle
short_description: Wait until an SGLang server holds no request, from its own metrics
version_added: 0.4.0
description:
  - Scrapes the server's C(/metrics) (it needs C(--enable-metrics)) until its running, waiting and PD-queue gauges
    (C(sglang:num_running_reqs), C(sglang:num_queue_reqs), C(sglang:num_prefill_bootstrap_queue_reqs),
    C(sglang:num_prefill_inflight_queue_reqs), C(sglang:num_decode_prealloc_queue_reqs),
    C(sglang:num_decode_transfer_queue_reqs), those the server has) add up to 0 on O(scrapes) readings in a row.
  - This is how a rolling restart knows a worker taken out of the router has finished its requests. The router's
    own C(smg_worker_requests_active) cannot tell, it drops to 0 when the worker is removed while requests still run.
  - Also returns C(sglang:num_requests_total), the requests the server finished since it started.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - pdserve.sglang.http_client
  - ansible.builtin.action_common_attributes
options:
  url:
    description:
      - Base URL of the server, for example C(http://127.0.0.1:30002); the metrics are read from C(<url>/metrics).
    type: str
    required: true
  wait:
    description:
      - V(false) reads the metrics once and returns (for the request counters), without waiting.
    type: bool
    default: true
  timeout:
    description:
      - Seconds to wait at most, the longest request you are willing to cut.
    type: float
    default: 300
  interval:
    description:
      - Seconds between two scrapes.
    type: float
    default: 1.0
  scrapes:
    description:
      - Readings in a row that must show nothing in flight.
    type: int
    default: 2
  on_timeout:
    description:
      - V(fail) fails when the server still holds requests after O(timeout). V(report) returns with RV(idle=false) and
        the counts, so the caller can decide to cut them.
    type: str
    choices: [fail, report]
    default: fail
attributes:
  check_mode:
    support: full
    details: The module only reads; in check mode it reads once and does not wait.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - The module never changes anything; it always reports C(changed=false).
seealso:
  - module: pdserve.sglang.router_worker
'''

EXAMPLES = r'''
- name: Wait until decode-0 finished the requests it had when it left the router
  pdserve.sglang.worker_idle:
    url: http://127.0.0.1:30002
    timeout: 600
  register: __drained

- name: Read how many requests a server has finished since it started
  pdserve.sglang.worker_idle:
    url: http://127.0.0.1:30002
    wait: false
'''

RETURN = r'''
idle:
  description: Whether the server held no request on the last O(scrapes) readings.
  returned: always
  type: bool
  sample: true
seconds:
  description: Seconds the wait took.
  returned: always
  type: float
  sample: 2.04
in_flight:
  description: Requests the server held at the last reading (the sum of the gauges).
  returned: always
  type: int
  sample: 0
in_flight_at_start:
  description: Requests the server held at the first reading.
  returned: always
  type: int
  sample: 3
gauges:
  description: The in-flight gauges the server has, at the last reading.
  returned: always
  type: dict
  sample: {"sglang:num_running_reqs": 0, "sglang:num_queue_reqs": 0}
requests_total:
  description: C(sglang:num_requests_total) at the last reading (requests finished since the server started).
  returned: always
  type: int
  sample: 118
scrapes:
  description: Readings taken.
  returned: always
  type: int
  sample: 3
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.common_args import (
    client_from_params,
    http_argument_spec,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.worker_metrics import IdleWaiter, MetricsError


def argument_spec():
    spec = http_argument_spec()
    spec.update(
        url=dict(type='str', required=True),
        wait=dict(type='bool', default=True),
        timeout=dict(type='float', default=300),
        interval=dict(type='float', default=1.0),
        scrapes=dict(type='int', default=2),
        on_timeout=dict(type='str', choices=['fail', 'report'], default='fail'),
    )
    return spec


def run_module(module, waiter=None):
    params = module.params
    if not params['url'].startswith(('http://', 'https://')):
        module.fail_json(msg='url %r must start with http:// or https://' % params['url'])
    if params['timeout'] <= 0 or params['interval'] <= 0 or params['scrapes'] < 1:
        module.fail_json(msg='timeout and interval must be greater than 0 and scrapes at least 1')
    if waiter is None:
        waiter = IdleWaiter(client_from_params(params), params['url'], timeout=params['timeout'],
                            interval=params['interval'], scrapes=params['scrapes'])
    try:
        found = waiter.once() if (module.check_mode or not params['wait']) else waiter.wait()
    except MetricsError as exc:
        module.fail_json(msg=str(exc))
    result = dict(changed=False, idle=found['idle'], seconds=found['seconds'], in_flight=found['in_flight'],
                  in_flight_at_start=found['first']['in_flight'], gauges=found['gauges'],
                  requests_total=found['requests_total'], scrapes=found['scrapes'])
    if params['wait'] and not module.check_mode and not found['idle'] and params['on_timeout'] == 'fail':
        module.fail_json(msg='%s still holds %d request(s) after %.0f s (%s); raise the timeout or cut them'
                         % (params['url'], found['in_flight'], params['timeout'],
                            ', '.join('%s=%s' % kv for kv in sorted(found['gauges'].items()) if kv[1])), **result)
    if found['idle']:
        result['msg'] = '%s is idle after %.2f s (%d scrapes)' % (params['url'], found['seconds'], found['scrapes'])
    else:
        result['msg'] = '%s holds %d request(s)' % (params['url'], found['in_flight'])
    module.exit_json(**result)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module)


if __name__ == '__main__':
    main()
