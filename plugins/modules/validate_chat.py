#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
---
module: validate_chat
short_description: Prove that an SGLang endpoint answers, thinks and calls tools correctly
version_added: 0.4.0
description:
  - Sends real chat completions to a router (or a plain server) and checks what comes back,
    non-streaming and streaming. Each check returns passed, seconds, a short evidence of the answer
    and, when it fails, the likely cause.
  - C(basic) asks C(What is 17*23? Number only.) and wants C(391) in C(content) and C(finish_reason=stop).
  - C(thinking) sets C(thinking) to true in C(chat_template_kwargs) and wants a non-empty C(reasoning_content)
    and an answer in C(content) with no C(<think>)/C(</think>) or reasoning text in it.
  - C(tools) offers C(get_weather(city)) and C(get_time(timezone)), asks
    C(What is the weather in Paris and the time in Tokyo?) and wants C(finish_reason=tool_calls), at least
    two calls, names among the offered tools, arguments that parse as JSON objects holding the required
    keys, distinct call ids and no tool markup (DSML or DeepSeek tool tokens) left in C(content).
  - The C(_stream) variants check the same on the assembled deltas (content, reasoning and tool-call
    deltas by index), and also want a final C(finish_reason) and the C([DONE]) event.
  - When a request fails at the router, the module reads the router's C(GET /workers) and error code
    (C(x-smg-error-code)) to tell "router has no healthy decode worker" from "router answered 5xx".
  - Fails when any check fails, naming each failed check, what came back and the likely cause.
  - With O(prefill_url), O(decode_url) and O(bootstrap_port) instead of O(url), the requests go to that prefill
    and that decode server directly, the way the PD router sends them (both at once, with C(bootstrap_host),
    C(bootstrap_port) and a random C(bootstrap_room)), so one chosen server is validated with a chosen peer, for
    example a server just upgraded with a peer still on the old version. A router picks the pair itself.
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
      - Base URL of the router (or of a plain, non-PD server), for example C(http://127.0.0.1:30001).
      - One of O(url) and O(decode_url) is required.
    type: str
  prefill_url:
    description:
      - Base URL of the prefill server of a direct pair check (with O(decode_url) and O(bootstrap_port)). Its host is
        what the decode server is told to fetch the KV cache from, so give it as the decode host reaches it.
    type: str
  decode_url:
    description:
      - Base URL of the decode server of a direct pair check; the answers are its.
    type: str
  bootstrap_port:
    description:
      - The prefill server's C(--disaggregation-bootstrap-port), for a direct pair check.
    type: int
  model:
    description:
      - Model name to send. By default the first entry of C(GET /v1/models).
    type: str
  checks:
    description:
      - The checks to run, in this order.
    type: list
    elements: str
    choices: [basic, thinking, tools, basic_stream, thinking_stream, tools_stream]
    default: [basic, thinking, tools, basic_stream, thinking_stream, tools_stream]
  prompts:
    description:
      - Replace the user prompt of C(basic), C(thinking) or C(tools). When a prompt holds an integer
        operation such as C(17*23), its result must appear in the answer.
      - The C(tools) prompt must need both offered tools, C(get_weather(city)) and C(get_time(timezone)).
    type: dict
    suboptions:
      basic:
        description: Prompt of the C(basic) checks.
        type: str
      thinking:
        description: Prompt of the C(thinking) checks.
        type: str
      tools:
        description: Prompt of the C(tools) checks.
        type: str
  max_tokens:
    description:
      - C(max_tokens) of each request (thinking needs room).
    type: int
    default: 2048
  timeout:
    description:
      - Seconds one check's request may take (alias of I(request_timeout); the larger applies).
    type: float
    default: 120
attributes:
  check_mode:
    support: full
    details:
      - The checks only read; they run in check mode too.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - In a PD deployment the decode server parses reasoning and tool calls, so the causes point at the
    decode server's C(--reasoning-parser) and C(--tool-call-parser); prefill must use the same flags.
seealso:
  - module: pdserve.sglang.wait_ready
'''

EXAMPLES = r'''
- name: Validate parsing through the router
  pdserve.sglang.validate_chat:
    url: http://127.0.0.1:30001
  register: __sglang_validation

- name: Only the streaming tool calls, with an API key
  pdserve.sglang.validate_chat:
    url: https://router.example.com:30001
    api_key: "{{ sglang_router_api_key }}"
    model: deepseek-v4-flash
    checks: [tools_stream]

- name: Validate decode-1 (just upgraded) paired with prefill-0, without the router choosing the pair
  pdserve.sglang.validate_chat:
    prefill_url: http://10.0.0.11:30000
    bootstrap_port: 8998
    decode_url: http://10.0.0.21:30012
    checks: [basic, tools, tools_stream]

- name: Another arithmetic prompt
  pdserve.sglang.validate_chat:
    url: http://127.0.0.1:30001
    checks: [basic]
    prompts:
      basic: What is 19*21? Number only.
'''

RETURN = r'''
model:
  description: The model the requests named.
  returned: when it was given or could be discovered
  type: str
  sample: deepseek-v4-flash
report:
  description: One entry per check that ran, keyed by check name.
  returned: always
  type: dict
  contains:
    passed:
      description: Whether the check passed.
      type: bool
    seconds:
      description: Time the request took.
      type: float
    evidence:
      description: Short account of what came back.
      type: str
    cause:
      description: Likely cause when the check failed, null when it passed.
      type: str
  sample:
    thinking:
      passed: false
      seconds: 0.04
      evidence: "reasoning_content='' content='<think> The user asks ... </think> 144' finish_reason=stop"
      cause: "reasoning leaked into content: is --reasoning-parser set on the decode server?"
url:
  description: The URL the checks went to (the decode server's for a pair check).
  returned: always
  type: str
pair:
  description: The prefill and decode URLs of a direct pair check.
  returned: for a pair check
  type: dict
  sample: {"prefill_url": "http://10.0.0.11:30000", "decode_url": "http://10.0.0.21:30012", "bootstrap_port": 8998}
failed_checks:
  description: Names of the checks that failed.
  returned: always
  type: list
  elements: str
  sample: [thinking, thinking_stream]
'''

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.validation.chat_checks import (
    CHECK_NAMES,
    assemble_stream,
    build_request,
    diagnose_http_failure,
    message_from_response,
    run_check,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.common_args import (
    module_client,
    router_argument_spec,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import join_url
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.pd_pair import PairClient


def argument_spec():
    spec = router_argument_spec()
    spec.update(
        url=dict(type='str'),
        prefill_url=dict(type='str'),
        decode_url=dict(type='str'),
        bootstrap_port=dict(type='int'),
        model=dict(type='str'),
        checks=dict(type='list', elements='str', choices=list(CHECK_NAMES), default=list(CHECK_NAMES)),
        prompts=dict(type='dict', options=dict(
            basic=dict(type='str'),
            thinking=dict(type='str'),
            tools=dict(type='str'),
        )),
        max_tokens=dict(type='int', default=2048, no_log=False),
        timeout=dict(type='float', default=120),
    )
    return spec


class ChatValidator(object):
    """Runs the checks against one base URL with an HttpClient."""

    def __init__(self, client, url, model=None, prompts=None, max_tokens=2048):
        self.client = client
        self.url = url.rstrip('/')
        self.model = model
        self.prompts = dict((k, v) for k, v in (prompts or {}).items() if v)
        self.max_tokens = max_tokens
        self._workers = None
        self._workers_read = False
        self._workers_lock = threading.Lock()

    def workers(self):
        """The router's GET /workers JSON, read once (checks fail side by side); None when it has none (a plain
        server)."""
        with self._workers_lock:
            if not self._workers_read:
                self._workers_read = True
                answer = self.client.get(join_url(self.url, '/workers'), control_plane=True)
                data = answer.json() if answer.status == 200 else None
                self._workers = data if isinstance(data, dict) and 'workers' in data else None
        return self._workers

    def discover_model(self):
        """Returns None on success, else (evidence, cause)."""
        if self.model:
            return None
        answer = self.client.get(join_url(self.url, '/v1/models'))
        data = answer.json()
        try:
            self.model = data['data'][0]['id']
            return None
        except (TypeError, KeyError, IndexError):
            if answer.status == 200:
                return ('GET /v1/models -> 200 with no model: %s' % answer.summary('/v1/models'),
                        'no model served: the router has no worker registered (or give the model option)')
            evidence, cause = diagnose_http_failure(answer.status, data, answer.text, answer.headers,
                                                    answer.error, self.workers())
            return 'GET /v1/models -> ' + evidence, cause

    def run_one(self, name):
        body = build_request(name, self.model, self.prompts, self.max_tokens)
        base = name[:-len('_stream')] if name.endswith('_stream') else name
        prompt = self.prompts.get(base)
        url = join_url(self.url, '/v1/chat/completions')
        started = time.monotonic()
        if body['stream']:
            answer = self.client.stream_sse(url, body)
        else:
            answer = self.client.post_json(url, body)
        seconds = round(time.monotonic() - started, 3)
        if answer.status != 200:
            evidence, cause = diagnose_http_failure(answer.status, answer.json(), answer.text, answer.headers,
                                                    answer.error, self.workers())
            return {'passed': False, 'seconds': seconds, 'evidence': evidence, 'cause': cause}
        if body['stream']:
            msg = assemble_stream(answer.events, answer.done)
            if answer.error:
                msg['errors'].append(answer.error)
        else:
            data = answer.json()
            msg = message_from_response(data)
            if not msg['has_choice']:
                return {'passed': False, 'seconds': seconds,
                        'evidence': 'HTTP 200 without choices: %s' % answer.summary('/v1/chat/completions'),
                        'cause': 'the answer is not a chat completion: is this an OpenAI-compatible endpoint?'}
        report = run_check(name, msg, prompt=prompt)
        report['seconds'] = seconds
        return report

    def run(self, checks):
        report = {}
        problem = self.discover_model()
        if problem:
            for name in checks:
                report[name] = {'passed': False, 'seconds': 0.0, 'evidence': problem[0], 'cause': problem[1]}
            return report
        # The checks are independent requests: sent side by side, a validation costs its slowest answer.
        with ThreadPoolExecutor(max_workers=len(checks)) as pool:
            answers = dict(zip(checks, pool.map(self.run_one, checks)))
        for name in checks:
            report[name] = answers[name]
        return report


def failure_message(report):
    failed = [n for n, r in report.items() if not r['passed']]
    parts = ['%s: %s -> %s' % (n, report[n]['evidence'], report[n]['cause']) for n in failed]
    return '%d of %d checks failed: %s' % (len(failed), len(report), ' | '.join(parts))


def run_module(module):
    params = module.params
    pair = params['decode_url'] is not None
    for key in ('url', 'prefill_url', 'decode_url'):
        if params[key] is not None and not params[key].startswith(('http://', 'https://')):
            module.fail_json(msg='%s %r must start with http:// or https://' % (key, params[key]))
    if not params['checks']:
        module.fail_json(msg='checks is empty: name at least one of %s' % ', '.join(CHECK_NAMES))
    if params['max_tokens'] < 1:
        module.fail_json(msg='max_tokens must be at least 1')
    if params['timeout'] <= 0:
        module.fail_json(msg='timeout must be greater than 0')
    checks = []
    for name in params['checks']:
        if name not in checks:
            checks.append(name)
    client = module_client(module, timeout=max(params['timeout'], params['request_timeout']))
    url = params['url']
    if pair:
        client = PairClient(client, params['prefill_url'], params['decode_url'], params['bootstrap_port'])
        url = params['decode_url']
    validator = ChatValidator(client, url, params['model'], params['prompts'], params['max_tokens'])
    report = validator.run(checks)
    failed = [n for n in checks if not report[n]['passed']]
    result = dict(changed=False, report=report, failed_checks=failed, url=url)
    if pair:
        result['pair'] = dict((k, params[k]) for k in ('prefill_url', 'decode_url', 'bootstrap_port'))
    if validator.model:
        result['model'] = validator.model
    if failed:
        module.fail_json(msg=failure_message(report), **result)
    module.exit_json(msg='all %d checks passed' % len(checks), **result)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           required_one_of=[('url', 'decode_url')], mutually_exclusive=[('url', 'decode_url')],
                           required_together=[('prefill_url', 'decode_url', 'bootstrap_port')])
    run_module(module)


if __name__ == '__main__':
    main()
