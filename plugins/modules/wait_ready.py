#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
---
module: wait_ready
short_description: Wait until SGLang model servers and PD routers really serve
version_added: 0.4.0
description:
  - Waits for several SGLang endpoints at once (one thread each) and returns, per endpoint,
    whether and after how many seconds it became ready.
  - A model server (I(kind=server)) is ready when C(GET /health) answers 200 and it can generate.
    A plain server gets a real one-token C(POST /generate). A prefill or decode server of a PD
    deployment (C(disaggregation_mode) in C(/server_info)) cannot serve a request alone, so it must
    answer C(GET /health_generate) with 200, which SGLang answers only after its engine produced one
    token (with a fake KV bootstrap). The real end-to-end generation of a PD stack is checked at the router.
  - A router (I(kind=router)) is ready when C(GET /workers) lists at least I(expected_prefill) healthy
    prefill and I(expected_decode) healthy decode workers and a real chat completion through it
    answers 200.
  - With O(endpoints[].register), a worker of the router's O(endpoints[].workers) that answers C(GET /health) with 200
    but that the router does not list yet is registered at once (C(POST /workers)), as M(pdserve.sglang.router_workers)
    would. A router started while its servers loaded retries them with pauses that grow to 5 seconds (sglang-router
    0.3.2), and would otherwise serve up to that long after it could. The module then reports C(changed).
  - When an endpoint names a systemd I(unit) that is failed, inactive or not found, or a I(pid) that is
    gone, the module fails at once instead of waiting out the timeout, with the unit state and its
    last journal lines.
  - A hung server fails the wait too, named, instead of waiting out the timeout. An endpoint's I(unit) whose
    processes are stopped (SIGSTOP, state C(T)) or whose cgroup is frozen fails at once (systemd still counts it
    active). A router endpoint given its expected O(endpoints[].workers) names every one of them it does not count
    healthy and asks each for C(GET /health) itself; one that accepts the connection but answers nothing for
    O(hang_timeout) seconds fails the wait (a loading server refuses connections or answers 503).
  - On timeout the failure names every endpoint that is not ready and what it last answered.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - pdserve.sglang.http_client
  - pdserve.sglang.http_client.control_plane
  - pdserve.sglang.http_client.router_tls
  - ansible.builtin.action_common_attributes
options:
  endpoints:
    description:
      - The endpoints to wait for, all at once.
    type: list
    elements: dict
    required: true
    suboptions:
      url:
        description:
          - Base URL, for example C(http://127.0.0.1:30000).
        type: str
        required: true
      kind:
        description:
          - C(server) for a model server (plain, prefill or decode), C(router) for the router.
        type: str
        choices: [server, router]
        default: server
      name:
        description:
          - Name used in results and messages. Defaults to I(unit), else the host and port of I(url).
        type: str
      unit:
        description:
          - systemd unit that runs the endpoint. When it is failed, inactive or not found, fail at once.
          - Needs C(systemctl) and C(journalctl) on the target host.
        type: str
      pid:
        description:
          - Process id of an endpoint that does not run under systemd. When the process is gone, fail at once.
        type: int
      expected_prefill:
        description:
          - Router only. Healthy prefill workers the router must list.
          - With I(expected_prefill=0) and I(expected_decode=0) any healthy worker will do (a non-PD router).
        type: int
        default: 1
      expected_decode:
        description:
          - Router only. Healthy decode workers the router must list.
        type: int
        default: 1
      model:
        description:
          - Router only. Model name for the test request; by default the first entry of C(GET /v1/models).
        type: str
      timeout:
        description:
          - Seconds this endpoint may take, counted from the start like O(timeout), which it replaces for this endpoint
            (a server and its router in one call, each with the limit of its own role).
        type: float
        version_added: 0.4.0
      register:
        description:
          - Router only, with O(endpoints[].workers). Register a worker of them that is healthy but not listed by the
            router (a prefill worker needs its C(bootstrap_port)); none is ever deregistered here. Never in check mode.
        type: bool
        default: false
        version_added: 0.4.0
      rank:
        description:
          - Server only, with O(endpoints[].nnodes) above 1. The node rank of this endpoint in an instance over several
            nodes. A rank above 0 serves only SGLang's dummy health server (C(/health) always 200, everything else 404);
            it is ready when its C(/health) answers (its schedulers joined and loaded) with its O(endpoints[].unit)
            active, and that is never the instance's readiness, which is rank 0's. A rank above 0 that answers
            C(/model_info) fails at once (the topology gave a rank 0's URL).
          - Rank 0 (and any server) that answers C(/health) 200 but 404 on C(/server_info) (or on C(/model_info) with
            O(generate=false)) is such a dummy health server and is not ready.
        type: int
        default: 0
        version_added: 0.4.0
      nnodes:
        description:
          - Server only. The number of nodes of the instance this endpoint belongs to (1 for a single-host instance).
        type: int
        default: 1
        version_added: 0.4.0
      nodes:
        description:
          - Server only. The hosts of the instance over several nodes in rank order, to name those whose ranks did not
            register (see O(endpoints[].bootstrap_url)).
        type: list
        elements: str
        version_added: 0.4.0
      bootstrap_url:
        description:
          - Server only, a prefill instance's rank 0. Its bootstrap server (C(http://host:bootstrap_port)), where every
            prefill rank of every node registers. The endpoint is ready only when C(GET /route) for the prefill's
            parallel info answers 200 (SGLang answers 503 "Prefill server not fully registered yet" until every rank
            has), and fails, naming the other nodes, when the API is ready but C(/route) still answers 503 30 seconds
            later (a rank tries to register for about 15 seconds and only logs its failure, while every PD request
            would fail in decode).
        type: str
        version_added: 0.4.0
      workers:
        description:
          - Router only. The workers the router must serve, as the serving topology's C(router_workers) gives them,
            the keys C(prefill) and C(decode), each a list of workers with C(url) and optionally C(name), C(unit) and
            C(inventory_host) (used to name them). While the router does not count one healthy, the failure names it
            and the module asks it for C(GET /health) directly, from this host (see O(hang_timeout)).
          - Without it only the counts are checked.
        type: dict
  timeout:
    description:
      - Seconds to wait for all endpoints together (an endpoint with a O(endpoints[].timeout) of its own waits that
        long instead). Loading a large model takes minutes.
    type: float
    default: 900
  hang_timeout:
    description:
      - Seconds an expected worker of a router (O(endpoints[].workers)) may accept connections and answer nothing to
        C(GET /health) while the router does not count it healthy, before the wait fails naming it as hung. Each of
        those probes waits at most this long (and at most O(request_timeout)).
      - SGLang answers C(/health) within its own health-check timeout (20 s) even when busy; keep this above it.
    type: float
    default: 60
  interval:
    description:
      - Seconds between probes of one endpoint. Failing generation probes back off up to 5 seconds
        so a router is not pushed into its circuit breaker.
    type: float
    default: 0.25
  generate:
    description:
      - Require a real generation (see above). With C(false) a server is ready on C(/health) 200 and
        a router on its worker counts.
    type: bool
    default: true
  start_margin:
    description:
      - A server whose last measured start (C(startup.ready_s), from its journal) times this is more than the time
        the wait gives it warns (C(start_warnings)), because its next cold start may run out of time. Only a
        warning, so the rendered settings do not follow each measurement and a rerun stays unchanged.
    type: float
    default: 1.5
    version_added: 0.4.0
  timeout_variables:
    description:
      - The settings a O(start_margin) warning asks to raise, for example the role variable behind the servers'
        timeout and a router limit that must stay at least as long.
    type: list
    elements: str
    default: []
    version_added: 0.4.0
attributes:
  check_mode:
    support: full
    details:
      - In check mode the module probes each endpoint once, read-only (C(/health), C(/workers),
        unit state; no generation), does not wait and does not fail when an endpoint is not ready.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - The module changes nothing but the router's worker list, and only with O(endpoints[].register) (see above); in
    check mode never.
  - SGLang's C(/health_generate) looks for the engine's answer once a second, so on a real PD server
    the generation probe adds about a second to the detection latency; I(generate=false) trades that
    check for speed.
seealso:
  - module: pdserve.sglang.validate_chat
'''

EXAMPLES = r'''
- name: Wait for the PD stack (servers under systemd, router last)
  pdserve.sglang.wait_ready:
    endpoints:
      - url: http://127.0.0.1:30000
        unit: sglang-prefill.service
      - url: http://127.0.0.1:30002
        unit: sglang-decode.service
      - url: http://127.0.0.1:30001
        kind: router
        unit: sglang-router.service
        expected_prefill: 1
        expected_decode: 1
    timeout: 1800
  register: __sglang_ready

- name: Show how long each part took
  ansible.builtin.debug:
    msg: "{{ __sglang_ready.endpoints | items2dict(key_name='name', value_name='seconds') }}"

- name: Wait for a server started by hand (no systemd)
  pdserve.sglang.wait_ready:
    endpoints:
      - url: http://127.0.0.1:30000
        pid: "{{ __server_pid }}"
    timeout: 600
'''

RETURN = r'''
endpoints:
  description: One entry per endpoint, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Endpoint name.
      type: str
      sample: sglang-prefill.service
    url:
      description: Base URL.
      type: str
      sample: http://127.0.0.1:30000
    kind:
      description: C(server) or C(router).
      type: str
      sample: server
    ready:
      description: Whether the endpoint became ready.
      type: bool
      sample: true
    seconds:
      description: Seconds from the module start until the endpoint was ready; null when it was not.
      type: float
      sample: 42.17
    last_status:
      description: What the endpoint last answered (request, status code, body excerpt or connection error).
      type: str
      sample: GET /health_generate -> 200
    details:
      description: >-
        What was learned: C(disaggregation_mode), C(model), C(generation) (how generation was checked),
        C(workers) (router: healthy/total per worker type), C(attempts).
      type: dict
      sample: {"disaggregation_mode": "prefill", "attempts": 12}
    unit:
      description: The systemd unit, when given.
      type: str
      returned: when I(unit) was given
    unit_state:
      description: >-
        Last C(systemctl show) properties (LoadState, ActiveState, SubState, Result, ExecMainStatus, NRestarts, MainPID,
        ControlGroup, FreezerState).
      type: dict
      returned: when I(unit) was given
      sample: {"ActiveState": "failed", "SubState": "failed", "Result": "exit-code"}
    journal:
      description: Last journal lines of the unit.
      type: list
      elements: str
      returned: when the unit failed or stopped
    startup:
      description:
        - Where a server's last start spent its time, read from its unit's journal since the unit's last start
          (C(journalctl -o short-monotonic)), from the lines SGLang logs. Its keys are C(phase), C(ready_s),
          C(phases) and C(line).
        - C(phase) is where the start is now, for example C(loading weights), C(compiling DeepGEMM kernels),
          C(capturing CUDA graphs), C(warming up, port open, /health 503) or C(ready). A server that runs out of time
          is named with it in the failure message.
        - C(ready_s) is the number of seconds from the unit's start to C(The server is fired up and ready to roll!).
        - C(phases) holds the seconds SGLang measured (C(load_weight), C(kv_cache_allocation), C(cuda_graph), C(engine))
          and two read from the journal's stamps, C(warmup) and C(kernel_compile). SGLang does not say whether a
          compile cache was warm; C(kernel_compile) is the time from its first C(Try DeepGEMM JIT Compiling) line to
          C(Load weight end).
        - C(line) is one line to print.
      type: dict
      returned: for a server with I(unit), once it is ready or out of time (not in check mode)
      sample:
        phase: ready
        ready_s: 12.8
        phases: {"load_weight": 8.1, "kv_cache_allocation": 0.1, "cuda_graph": 1.5, "engine": 9.8, "warmup": 2.0,
                 "kernel_compile": 3.0}
        line: "prefill ready in 12.8 s: load weights 8.1 s (of which DeepGEMM kernels 3.0 s), KV cache 0.1 s,
          CUDA graphs 1.5 s, warmup 2.0 s"
    failure:
      description: Why waiting stopped early for this endpoint.
      type: str
      returned: when the unit or process is gone, or the endpoint (or a worker of a router) is hung
    registered:
      description: Router only. The URLs of its workers this wait registered (healthy, not listed yet).
      type: list
      elements: str
      returned: when it registered one
      sample: ["http://10.0.0.12:30002"]
start_warnings:
  description: The O(start_margin) warnings, one per server whose last start came too close to its time limit.
  returned: when there is one
  type: list
  elements: str
  sample:
    - "decode-0: its last start took 1300.0 s (its journal), and sglang_server_wait_timeout gives it 1800 s, less
      than 1.5 times that: raise sglang_server_wait_timeout to at least 1950"
  version_added: 0.4.0
elapsed:
  description: Seconds the module waited in total.
  returned: always
  type: float
  sample: 43.02
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.common_args import (
    module_client,
    router_argument_spec,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.validation.readiness import (
    Endpoint,
    SystemdInspector,
    Waiter,
    failure_message,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.worker_set import wanted_workers
from ansible_collections.pdserve.sglang.plugins.module_utils.validation.startup_phases import limit_warnings


def argument_spec():
    spec = router_argument_spec()
    spec.update(
        endpoints=dict(
            type='list', elements='dict', required=True,
            options=dict(
                url=dict(type='str', required=True),
                kind=dict(type='str', choices=['server', 'router'], default='server'),
                name=dict(type='str'),
                unit=dict(type='str'),
                pid=dict(type='int'),
                expected_prefill=dict(type='int', default=1),
                expected_decode=dict(type='int', default=1),
                rank=dict(type='int', default=0),
                nnodes=dict(type='int', default=1),
                nodes=dict(type='list', elements='str'),
                bootstrap_url=dict(type='str'),
                model=dict(type='str'),
                timeout=dict(type='float'),
                workers=dict(type='dict'),
                register=dict(type='bool', default=False),
            ),
        ),
        timeout=dict(type='float', default=900),
        hang_timeout=dict(type='float', default=60),
        interval=dict(type='float', default=0.25),
        generate=dict(type='bool', default=True),
        start_margin=dict(type='float', default=1.5),
        timeout_variables=dict(type='list', elements='str', default=[]),
    )
    return spec


def validate_params(module):
    params = module.params
    if params['timeout'] <= 0:
        module.fail_json(msg='timeout must be greater than 0, got %s' % params['timeout'])
    if params['hang_timeout'] <= 0:
        module.fail_json(msg='hang_timeout must be greater than 0, got %s' % params['hang_timeout'])
    if params['interval'] <= 0:
        module.fail_json(msg='interval must be greater than 0, got %s' % params['interval'])
    if params['start_margin'] < 1:
        module.fail_json(msg='start_margin must be at least 1, got %s' % params['start_margin'])
    if not params['endpoints']:
        module.fail_json(msg='endpoints is empty: give at least one endpoint to wait for')
    names = set()
    for item in params['endpoints']:
        if not item['url'].startswith(('http://', 'https://')):
            module.fail_json(msg='endpoint url %r must start with http:// or https://' % item['url'])
        if item['expected_prefill'] < 0 or item['expected_decode'] < 0:
            module.fail_json(msg='expected_prefill and expected_decode must not be negative (%s)' % item['url'])
        if item['timeout'] is not None and item['timeout'] <= 0:
            module.fail_json(msg='endpoint timeout must be greater than 0, got %s (%s)' % (item['timeout'], item['url']))
        if item['pid'] is not None and item['pid'] <= 0:
            module.fail_json(msg='pid must be a positive process id, got %s (%s)' % (item['pid'], item['url']))
        if item['register']:
            if item['kind'] != 'router' or not item['workers']:
                module.fail_json(msg='register is for a router endpoint with its workers (%s)' % item['url'])
            _wanted, problem = wanted_workers(item['workers'])
            if problem:
                module.fail_json(msg='%s: %s' % (item['url'], problem))
        name = Endpoint.from_option(item).name
        if name in names:
            module.fail_json(msg='endpoint name %r appears twice: give each endpoint its own name' % name)
        names.add(name)


def make_inspector(module, endpoints):
    if not any(ep.unit for ep in endpoints):
        return None
    systemctl = module.get_bin_path('systemctl')
    journalctl = module.get_bin_path('journalctl')
    if not systemctl:
        module.fail_json(msg='an endpoint names a systemd unit, but systemctl is not on this host')

    def run(args):
        return module.run_command(args, check_rc=False, environ_update={'SYSTEMD_PAGER': '', 'LC_ALL': 'C'})

    return SystemdInspector(run, systemctl=systemctl, journalctl=journalctl or 'journalctl')


def run_module(module):
    """The module body, separate from main() so tests can drive it with a module double."""
    validate_params(module)
    params = module.params
    endpoints = [Endpoint.from_option(item) for item in params['endpoints']]
    client = module_client(module)
    inspector = make_inspector(module, endpoints)
    waiter = Waiter(endpoints, client, timeout=params['timeout'], interval=params['interval'],
                    generate=params['generate'] and not module.check_mode, inspector=inspector,
                    hang_timeout=params['hang_timeout'])
    if module.check_mode:
        states = waiter.probe_once()
        module.exit_json(changed=False, endpoints=[s.as_dict() for s in states],
                         elapsed=round(waiter.elapsed, 3),
                         msg='check mode: one read-only probe, no waiting')
    states, outcome = waiter.run()
    result = dict(changed=any(s.registered for s in states), endpoints=[s.as_dict() for s in states],
                  elapsed=round(waiter.elapsed, 3))
    if outcome != 'ready':
        module.fail_json(msg=failure_message(states, outcome, params['timeout']), **result)
    warnings = []
    for state in states:
        if state.endpoint.kind == 'server':
            warnings.extend(limit_warnings(state.endpoint.name, state.startup, waiter.timeout_of(state.endpoint),
                                           params['start_margin'], params['timeout_variables']))
    for warning in warnings:
        module.warn(warning)
    if warnings:
        result['start_warnings'] = warnings
    module.exit_json(msg='all %d endpoints ready in %.2fs' % (len(states), waiter.elapsed), **result)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module)


if __name__ == '__main__':
    main()
