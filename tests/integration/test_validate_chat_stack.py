# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""validate_chat against the real sglang-router in front of emulated prefill/decode servers.

A correct stack passes every check; each misconfiguration of issue 3 fails the non-streaming
check and its streaming counterpart with the cause that names it. A representative subset runs
through real `ansible` (module shipped and executed like in a play); the rest drives the
module's main() in-process with the arguments Ansible would pass.
"""

import os
import sys
import time

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import validate_chat

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_cli import run_ansible  # noqa: E402  pylint: disable=wrong-import-position
import module_runner  # noqa: E402  pylint: disable=wrong-import-position
import stack  # noqa: E402  pylint: disable=wrong-import-position

# smg 1.13 asks for thinking on every request that does not say (sglang-router 0.3.2 does not): behind it, a
# misconfiguration of reasoning fails the plain check too, with the same cause (PDSERVE_ROUTER_IMPLEMENTATION=smg).
THINKS_BY_DEFAULT = stack.ROUTER_IMPLEMENTATION == 'smg'

pytestmark = pytest.mark.integration

ALL = ['basic', 'thinking', 'tools', 'basic_stream', 'thinking_stream', 'tools_stream']


def run_module(args):
    """validate_chat's main() in-process; returns (result, failed)."""
    return module_runner.run_module(validate_chat.main, args)


# ---- scenarios: (stack kwargs, checks that must fail, cause they must name) --------------------

SCENARIOS = {
    'no_reasoning_parser': (dict(decode_drop=('--reasoning-parser',)), 'thinking',
                            'reasoning leaked into content: is --reasoning-parser set on the decode server?'),
    'no_tool_call_parser': (dict(decode_drop=('--tool-call-parser',)), 'tools',
                            'tool call returned as text: check --tool-call-parser on the decode server'),
    'thinking_ignored': (dict(prefill_env={'SGLANG_EMULATOR_IGNORE_THINKING': '1'},
                              decode_env={'SGLANG_EMULATOR_IGNORE_THINKING': '1'}), 'thinking',
                         'thinking not separated'),
    'tool_call_left_in_content': (dict(prefill_env={'SGLANG_EMULATOR_TOOL_FORMAT': 'v3'},
                                       decode_env={'SGLANG_EMULATOR_TOOL_FORMAT': 'v3'}), 'tools',
                                  'tool call returned as text: check --tool-call-parser on the decode server'),
    'invalid_json_arguments': (dict(prefill_env={'SGLANG_EMULATOR_TOOL_ARGS': 'invalid_json'},
                                    decode_env={'SGLANG_EMULATOR_TOOL_ARGS': 'invalid_json'}), 'tools',
                               'tool arguments are not valid JSON'),
    # SGLang drops calls to tools that were not offered unless SGLANG_FORWARD_UNKNOWN_TOOLS is set:
    # by default nothing comes back, with the variable the name does
    'unknown_tool_name': (dict(prefill_env={'SGLANG_EMULATOR_TOOL_NAME': 'get_stock_price'},
                               decode_env={'SGLANG_EMULATOR_TOOL_NAME': 'get_stock_price'}), 'tools',
                          'tool call dropped by the parser'),
    'unknown_tool_name_forwarded': (dict(prefill_env={'SGLANG_EMULATOR_TOOL_NAME': 'get_stock_price'},
                                         decode_env={'SGLANG_EMULATOR_TOOL_NAME': 'get_stock_price',
                                                     'SGLANG_FORWARD_UNKNOWN_TOOLS': '1'}), 'tools',
                                    'model called a tool that was not offered: get_stock_price'),
    # decode answers 500 to every generation. The prefill gives up waiting for the KV fetch after
    # 1 s and the router neither retries nor opens its circuit breaker, so every check sees the
    # first 500 quickly (with retries each check would take 5 x the bootstrap timeout).
    # Models servers with the cheap /health (SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0): with
    # 0.5.23's generating /health the router would mark that decode unhealthy instead.
    'router_5xx': (dict(decode_env={'SGLANG_EMULATOR_FAIL_5XX': '1',
                                    'SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION': '0'},
                        prefill_env={'SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT': '1'},
                        router_args=('--disable-retries', '--disable-circuit-breaker')), 'all',
                   'router answered 500'),
}


@pytest.fixture(scope='module')
def stacks(pd_stack_module):
    """One stack per scenario, started on first use and shared by its tests."""
    cache = {}

    def get(name):
        if name not in cache:
            if name == 'correct':
                cache[name] = pd_stack_module()
            elif name == 'no_decode':
                pd = pd_stack_module()
                pd.decode.stop()  # the decode server dies; the router's health checks notice
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    workers = pd.router.workers() or {'workers': []}
                    if not [w for w in workers['workers'] if w['worker_type'] == 'decode' and w['is_healthy']]:
                        break
                    time.sleep(0.2)
                else:
                    pytest.fail('router still lists a healthy decode worker after the decode server stopped')
                cache[name] = pd
            else:
                cache[name] = pd_stack_module(**SCENARIOS[name][0])
        return cache[name]
    return get


def test_correct_stack_passes_through_ansible(stacks):
    pd = stacks('correct')
    rc, result = run_ansible('validate_chat', {'url': pd.router_url})
    assert rc == 0, result.get('msg')
    assert result['_state'] == 'SUCCESS'
    assert result['changed'] is False
    assert result['failed_checks'] == []
    assert sorted(result['report']) == sorted(ALL)
    assert result['model'] == pd.model
    assert all(r['passed'] for r in result['report'].values())
    assert "'391'" in result['report']['basic']['evidence']
    assert 'get_weather' in result['report']['tools_stream']['evidence']


def test_misconfigured_decode_fails_through_ansible(stacks):
    pd = stacks('no_reasoning_parser')
    rc, result = run_ansible('validate_chat', {'url': pd.router_url, 'checks': ['basic', 'thinking', 'thinking_stream']})
    assert rc != 0
    assert result['_state'] == 'FAILED!'
    if THINKS_BY_DEFAULT:
        assert result['failed_checks'] == ['basic', 'thinking', 'thinking_stream']
        assert result['msg'].startswith('3 of 3 checks failed: basic: ')
    else:
        assert result['failed_checks'] == ['thinking', 'thinking_stream']
        assert result['report']['basic']['passed'] is True
        assert result['msg'].startswith('2 of 3 checks failed: thinking: ')
    assert 'reasoning leaked into content: is --reasoning-parser set on the decode server?' in result['msg']
    assert '<think>' in result['msg']


@pytest.mark.parametrize('stream', [False, True], ids=['plain', 'stream'])
@pytest.mark.parametrize('scenario', sorted(SCENARIOS))
def test_misconfiguration_fails_with_cause(stacks, scenario, stream):
    _kwargs, target, cause = SCENARIOS[scenario]
    pd = stacks(scenario)
    if target == 'all':
        checks = [c for c in ALL if c.endswith('_stream') == stream]
    else:
        checks = ['basic', target + ('_stream' if stream else '')]
        if stream:
            checks[0] = 'basic_stream'
    result, failed = run_module({'url': pd.router_url, 'checks': checks, 'timeout': 60})
    assert failed
    # Behind smg the plain check asks for thinking too, so a reasoning misconfiguration fails it as well.
    plain_thinks = THINKS_BY_DEFAULT and target == 'thinking'
    expected_failures = checks if target == 'all' or plain_thinks else checks[1:]
    assert result['failed_checks'] == expected_failures
    for name in (checks if target == 'all' else checks[1:]):
        assert result['report'][name]['cause'].startswith(cause), result['report'][name]
        assert name + ': ' in result['msg']
    if target != 'all' and not plain_thinks:
        # the rest of the stack is fine: the plain answer still passes
        assert result['report'][checks[0]]['passed'] is True


@pytest.mark.parametrize('stream', [False, True], ids=['plain', 'stream'])
def test_router_without_healthy_decode_worker(stacks, stream):
    pd = stacks('no_decode')
    checks = ['basic_stream', 'tools_stream'] if stream else ['basic', 'tools']
    result, failed = run_module({'url': pd.router_url, 'checks': checks, 'timeout': 60})
    assert failed
    for name in checks:
        assert result['report'][name]['cause'].startswith('router has no healthy decode worker'), result['report'][name]
    assert 'router has no healthy decode worker' in result['msg']


def test_router_that_never_registered_a_decode_worker(pd_stack):
    # the decode server never turns healthy, so the router gives up registering it
    pd = pd_stack(decode_env={'SGLANG_EMULATOR_NEVER_READY': '1'},
                  router_args=('--worker-startup-timeout-secs', '2'), start=False)
    pd.prefill.start()
    pd.decode.start()
    pd.router.start()
    pd.prefill.wait_healthy(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and pd.router.workers() is None:
        time.sleep(0.2)
    result, failed = run_module({'url': pd.router_url, 'checks': ['basic'], 'model': pd.model, 'timeout': 30})
    assert failed
    assert result['report']['basic']['cause'].startswith('router has no healthy decode worker')
