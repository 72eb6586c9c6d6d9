# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""wait_ready against emulated SGLang servers and the real sglang-router.

Concurrency, fast failure on a dead process, the timeout message, health that lies (200 while
the engine cannot generate) and a router that must list its workers before it counts as ready.
Representative cases run through real `ansible`; the others drive main() in-process.
The systemd `unit` path needs systemd as PID 1: see extensions/molecule/wait_ready_unit.
"""

import os
import sys

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import wait_ready

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import stack  # noqa: E402  pylint: disable=wrong-import-position
from ansible_cli import run_ansible  # noqa: E402  pylint: disable=wrong-import-position
import module_runner  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.integration


def run_module(args):
    """wait_ready's main() in-process; returns (result, failed)."""
    return module_runner.run_module(wait_ready.main, args)


@pytest.fixture
def emulators():
    """Factory for single emulated servers, all stopped at teardown."""
    started = []

    def make(mode, env=None):
        emu = stack.Emulator(mode, env=env)
        started.append(emu)
        return emu.start()

    yield make
    for emu in started:
        emu.stop()


def by_name(result):
    return dict((ep['name'], ep) for ep in result['endpoints'])


def test_waits_for_servers_concurrently(emulators):
    slow = emulators('decode', env={'SGLANG_EMULATOR_LOAD_DELAY': '5'})
    fast = emulators('prefill', env={'SGLANG_EMULATOR_LOAD_DELAY': '3'})
    # the slow server is listed first: waiting one after the other would only see the fast one
    # after the slow one was ready, and report about 5 s for both
    result, failed = run_module({'endpoints': [{'url': slow.url, 'name': 'slow'},
                                               {'url': fast.url, 'name': 'fast'}],
                                 'timeout': 60})
    assert not failed, result['msg']
    eps = by_name(result)
    assert eps['fast']['ready'] and eps['slow']['ready']
    # concurrent: each is reported when it turned ready, about 2 s apart (the delays differ by 2 s);
    # one after the other, the fast one would be reported right after the slow one
    assert eps['slow']['seconds'] - eps['fast']['seconds'] > 1.0
    # the whole wait is the slow server's time, not the sum of both delays
    assert result['elapsed'] < eps['slow']['seconds'] + 1.0
    assert eps['slow']['details']['disaggregation_mode'] == 'decode'
    assert eps['slow']['last_status'] == 'GET /health_generate -> 200'


def test_dead_process_fails_fast_through_ansible(emulators):
    # the server crashes 1 s after start, long before it would have loaded (60 s) or the 120 s timeout
    doomed = emulators('prefill', env={'SGLANG_EMULATOR_LOAD_DELAY': '60', 'SGLANG_EMULATOR_CRASH_AFTER': '1'})
    rc, result = run_ansible('wait_ready', {'endpoints': [{'url': doomed.url, 'name': 'prefill',
                                                           'pid': doomed.proc.pid}],
                                            'timeout': 120})
    assert rc != 0
    assert result['_state'] == 'FAILED!'
    pid = doomed.proc.pid
    assert result['msg'].startswith('Endpoint gone while waiting: prefill (%s): process %d' % (doomed.url, pid))
    assert 'Not ready after' not in result['msg']
    ep = result['endpoints'][0]
    assert ep['ready'] is False
    assert ep['failure'] in ('process %d is gone' % pid, 'process %d has exited (zombie, not yet reaped)' % pid)
    assert doomed.proc.wait(5) == 1  # the emulated crash, not something the module did


def test_timeout_names_endpoint_and_last_answer(emulators):
    stuck = emulators('prefill', env={'SGLANG_EMULATOR_NEVER_READY': '1'})
    ok = emulators('decode')
    result, failed = run_module({'endpoints': [{'url': stuck.url, 'name': 'stuck'}, {'url': ok.url, 'name': 'ok'}],
                                 'timeout': 2})
    assert failed
    assert result['msg'] == 'Not ready after 2.0s: stuck (%s): GET /health -> 503' % stuck.url
    eps = by_name(result)
    assert eps['ok']['ready'] is True
    assert eps['stuck']['ready'] is False and eps['stuck']['seconds'] is None
    assert eps['stuck']['details']['attempts'] > 1


# Servers that cannot generate, with the cheap /health (SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0):
# /health says 200 and only a generation shows the fault. With 0.5.23's default /health generates.
CHEAP_HEALTH = {'SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION': '0'}


def test_health_200_is_not_enough_when_the_engine_fails(emulators):
    broken = emulators('decode', env=dict(CHEAP_HEALTH, SGLANG_EMULATOR_FAIL_5XX='1'))
    result, failed = run_module({'endpoints': [{'url': broken.url, 'name': 'decode'}], 'timeout': 2})
    assert failed
    assert result['msg'] == 'Not ready after 2.0s: decode (%s): GET /health_generate -> 503' % broken.url
    # without generation the same server passes on /health alone
    result, failed = run_module({'endpoints': [{'url': broken.url}], 'timeout': 5, 'generate': False})
    assert not failed


def test_plain_server_generates_for_real(emulators):
    plain = emulators('null')
    result, failed = run_module({'endpoints': [{'url': plain.url}], 'timeout': 30})
    assert not failed, result['msg']
    ep = result['endpoints'][0]
    assert ep['details']['disaggregation_mode'] == 'null'
    assert ep['last_status'].startswith('POST /generate -> 200')


def test_whole_stack_through_ansible(pd_stack):
    pd = pd_stack(decode_env={'SGLANG_EMULATOR_LOAD_DELAY': '2'}, wait_router=False, timeout=30)
    rc, result = run_ansible('wait_ready', {'endpoints': [
        {'url': pd.router_url, 'kind': 'router', 'name': 'router'},
        {'url': pd.prefill.url, 'name': 'prefill'},
        {'url': pd.decode.url, 'name': 'decode'},
    ], 'timeout': 60})
    assert rc == 0, result.get('msg')
    assert result['_state'] == 'SUCCESS'
    eps = by_name(result)
    assert all(ep['ready'] for ep in eps.values())
    assert eps['router']['details']['workers']['decode'] == {'healthy': 1, 'total': 1}
    assert eps['router']['details']['workers']['prefill'] == {'healthy': 1, 'total': 1}
    assert eps['router']['last_status'].startswith('POST /v1/chat/completions -> 200')
    assert eps['router']['details']['model'] == pd.model


def test_router_waits_for_expected_workers(pd_stack):
    # the decode server loads for 3 s after its process starts; the router can register it (and
    # answer a chat) only after that, so a router reported ready sooner would be a lie
    pd = pd_stack(decode_env={'SGLANG_EMULATOR_LOAD_DELAY': '3'}, start=False)
    pd.decode.start()
    pd.prefill.start()
    pd.router.start()
    result, failed = run_module({'endpoints': [{'url': pd.router_url, 'kind': 'router', 'name': 'router'}],
                                 'timeout': 60})
    assert not failed, result['msg']
    router = result['endpoints'][0]
    # a lower bound only (slowness can only raise it): the module started after the decode
    # process did, minus the few milliseconds it took to spawn the prefill and router processes
    assert router['seconds'] >= 2.5
    assert router['details']['attempts'] > 1
    assert router['details']['workers']['decode'] == {'healthy': 1, 'total': 1}
    assert router['last_status'].startswith('POST /v1/chat/completions -> 200')


def test_router_missing_expected_workers_times_out(pd_stack):
    pd = pd_stack()
    result, failed = run_module({'endpoints': [{'url': pd.router_url, 'kind': 'router', 'name': 'router',
                                                'expected_decode': 2}],
                                 'timeout': 1.5})
    assert failed
    assert result['msg'] == ('Not ready after 1.5s: router (%s): GET /workers: prefill 1/1 healthy (expected 1), '
                             'decode 1/1 healthy (expected 2)' % pd.router_url)


def test_router_with_failing_decode_is_not_ready(pd_stack):
    # cheap /health of decode is 200 (the router registers it as healthy) but every generation fails
    pd = pd_stack(decode_env=dict(CHEAP_HEALTH, SGLANG_EMULATOR_FAIL_5XX='1'),
                  prefill_env={'SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT': '1'},
                  router_args=('--disable-retries',))
    result, failed = run_module({'endpoints': [{'url': pd.router_url, 'kind': 'router', 'name': 'router'}],
                                 'timeout': 4})
    assert failed
    assert result['msg'].startswith('Not ready after 4.0s: router (%s): POST /v1/chat/completions -> HTTP 5'
                                    % pd.router_url)
    assert 'router answered 5' in result['msg']


def test_router_drops_failing_decode_with_generating_health(pd_stack):
    # 0.5.23's default: /health generates, so the router's own health check never admits a decode
    # that cannot generate; wait_ready reports the missing worker instead of a 5xx
    pd = pd_stack(decode_env={'SGLANG_EMULATOR_FAIL_5XX': '1'}, start=False)
    for proc in (pd.prefill, pd.decode, pd.router):
        proc.start()
    pd.prefill.wait_healthy(30)
    result, failed = run_module({'endpoints': [{'url': pd.router_url, 'kind': 'router', 'name': 'router'}],
                                 'timeout': 4})
    assert failed
    assert result['msg'].startswith('Not ready after 4.0s: router (%s): ' % pd.router_url), result['msg']
    # the router never registers it: /health must answer 200 first
    assert result['msg'].endswith('prefill 1/1 healthy (expected 1), decode 0/0 healthy (expected 1)'), result['msg']
