# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""wait_ready as a module: argument handling, results, check mode and the unit path."""

import functools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible.module_utils import basic

from ansible_collections.pdserve.sglang.plugins.modules import wait_ready


@pytest.fixture
def run(module_runner):
    """run(args[, check_mode]) -> (result, failed), through wait_ready.main() (conftest.module_runner)."""
    return functools.partial(module_runner, wait_ready.main)


@pytest.fixture
def sglang():
    """A loopback stand-in for one SGLang PD server: health and health_generate scripted."""
    state = {'health': 200, 'health_generate': 200, 'paths': [], 'mode': 'prefill'}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            state['paths'].append(self.path)
            if self.path == '/server_info':
                body = json.dumps({'disaggregation_mode': state['mode']}).encode()
                status = 200
            elif self.path in ('/health', '/health_generate'):
                status = state[self.path.lstrip('/')]
                body = b'' if status == 200 else b'loading'
            else:
                status, body = 404, b'{"detail":"Not Found"}'
            self.send_response(status)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True).start()
    state['url'] = 'http://127.0.0.1:%d' % httpd.server_address[1]
    yield state
    httpd.shutdown()
    httpd.server_close()


# ---- arguments ------------------------------------------------------------------------------

def test_endpoints_required(run):
    result, failed = run({})
    assert failed
    assert 'endpoints' in result['msg']


def test_kind_choices(run):
    result, failed = run({'endpoints': [{'url': 'http://127.0.0.1:9', 'kind': 'balancer'}]})
    assert failed
    assert 'kind' in result['msg'] and 'balancer' in result['msg']


def test_url_required_in_each_endpoint(run):
    result, failed = run({'endpoints': [{'kind': 'server'}]})
    assert failed
    assert 'url' in result['msg']


@pytest.mark.parametrize('args, message', [
    ({'timeout': 0}, 'timeout must be greater than 0'),
    ({'interval': -1}, 'interval must be greater than 0'),
    ({'endpoints': []}, 'endpoints is empty'),
    ({'endpoints': [{'url': '127.0.0.1:30000'}]}, 'must start with http:// or https://'),
    ({'endpoints': [{'url': 'http://a:1', 'kind': 'router', 'expected_decode': -1}]}, 'must not be negative'),
    ({'endpoints': [{'url': 'http://a:1', 'pid': 0}]}, 'pid must be a positive process id'),
    ({'endpoints': [{'url': 'http://a:1', 'name': 'x'}, {'url': 'http://b:1', 'name': 'x'}]}, "name 'x' appears twice"),
    ({'endpoints': [{'url': 'http://a:1', 'register': True, 'workers': {'decode': [{'url': 'http://d:1'}]}}]},
     'register is for a router endpoint with its workers'),
    ({'endpoints': [{'url': 'http://a:1', 'kind': 'router', 'register': True}]},
     'register is for a router endpoint with its workers'),
    ({'endpoints': [{'url': 'http://a:1', 'kind': 'router', 'register': True,
                     'workers': {'decode': [{'url': 'http://d:1'}]}}]},
     'workers.prefill must list at least one worker'),
    ({'endpoints': [{'url': 'http://a:1', 'kind': 'router', 'register': True,
                     'workers': {'prefill': [{'url': 'http://p:1'}], 'decode': [{'url': 'http://d:1'}]}}]},
     'prefill worker http://p:1 needs its bootstrap_port'),
])
def test_invalid_values(args, message, run):
    base = {'endpoints': [{'url': 'http://127.0.0.1:9'}]}
    base.update(args)
    result, failed = run(base)
    assert failed
    assert message in result['msg']


def test_spec():
    spec = wait_ready.argument_spec()
    assert spec['api_key']['no_log'] is True
    assert spec['interval']['default'] == 0.25
    assert spec['generate']['default'] is True
    ep = spec['endpoints']['options']
    assert ep['kind']['choices'] == ['server', 'router']
    assert ep['expected_prefill']['default'] == 1 and ep['expected_decode']['default'] == 1
    assert ep['pid']['type'] == 'int'


# ---- behaviour ------------------------------------------------------------------------------

def test_ready_server_result(sglang, run):
    result, failed = run({'endpoints': [{'url': sglang['url'], 'name': 'prefill'}], 'timeout': 10})
    assert not failed, result['msg']
    assert result['changed'] is False
    (ep,) = result['endpoints']
    assert ep['name'] == 'prefill' and ep['ready'] is True and ep['kind'] == 'server'
    assert isinstance(ep['seconds'], float)
    assert ep['last_status'] == 'GET /health_generate -> 200'
    assert ep['details']['disaggregation_mode'] == 'prefill'
    assert result['elapsed'] >= ep['seconds']
    assert '/health_generate' in sglang['paths']


def test_timeout_message_names_endpoint_and_answer(sglang, run):
    sglang['health_generate'] = 503
    result, failed = run({'endpoints': [{'url': sglang['url'], 'name': 'decode'}], 'timeout': 0.5,
                          'interval': 0.1})
    assert failed
    assert result['msg'] == 'Not ready after 0.5s: decode (%s): GET /health_generate -> 503 loading' % sglang['url']
    assert result['endpoints'][0]['ready'] is False
    assert result['endpoints'][0]['seconds'] is None


def test_generate_false_needs_only_health(sglang, run):
    sglang['health_generate'] = 503
    result, failed = run({'endpoints': [{'url': sglang['url']}], 'timeout': 5, 'generate': False})
    assert not failed, result['msg']
    assert sglang['paths'] == ['/health']


def test_check_mode_probes_once_read_only(sglang, run):
    sglang['health'] = 503
    result, failed = run({'endpoints': [{'url': sglang['url']}], 'timeout': 30}, check_mode=True)
    assert not failed
    assert result['endpoints'][0]['ready'] is False
    assert result['endpoints'][0]['last_status'] == 'GET /health -> 503 loading'
    assert sglang['paths'] == ['/health']
    assert 'check mode' in result['msg']


def test_failed_unit_fails_at_once_with_journal(sglang, monkeypatch, run):
    sglang['health'] = 503
    calls = []

    def run_command(self, args, **kwargs):
        calls.append(args)
        if args[1] == 'show':
            return 0, 'LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\n', ''
        return 0, 'Nov 30 10:00:00 host python[42]: RuntimeError: CUDA out of memory\n', ''

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, *a, **k: '/usr/bin/' + name)
    result, failed = run({'endpoints': [{'url': sglang['url'], 'unit': 'sglang-decode.service'}], 'timeout': 600})
    assert failed
    assert result['msg'].startswith('Endpoint gone while waiting: sglang-decode.service (%s): '
                                    'sglang-decode.service unit failed' % sglang['url'])
    assert 'CUDA out of memory' in result['msg']
    ep = result['endpoints'][0]
    assert ep['unit_state']['Result'] == 'exit-code'
    assert ep['journal'] == ['Nov 30 10:00:00 host python[42]: RuntimeError: CUDA out of memory']
    assert ep['details']['attempts'] == 1
    assert ['/usr/bin/journalctl', '-u', 'sglang-decode.service', '-n', '20', '--no-pager'] in calls


def test_unit_without_systemctl(sglang, monkeypatch, run):
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, *a, **k: None)
    result, failed = run({'endpoints': [{'url': sglang['url'], 'unit': 'sglang-decode.service'}]})
    assert failed
    assert 'systemctl is not on this host' in result['msg']


def _wait_after_a_start(monkeypatch, run, url, timeout):
    """wait_ready on a unit that started at 100 s and was ready 12.8 s later (systemctl and journalctl scripted):
    (result, failed, the warnings it gave)."""
    lines = ("[  101.000000] h sglang[2]: Load weight begin. avail mem=79.11 GB\n"
             "[  112.800000] h sglang[2]: The server is fired up and ready to roll!\n")

    def run_command(self, args, **kwargs):
        if args[1] == 'show':
            return 0, ('LoadState=loaded\nActiveState=active\nSubState=running\nResult=success\n'
                       'ExecMainStartTimestampMonotonic=100000000\n'), ''
        return 0, lines, ''

    warned = []
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, *a, **k: '/usr/bin/' + name)
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, text: warned.append(text))
    result, failed = run({'endpoints': [{'url': url, 'name': 'decode-0', 'unit': 'sglang-decode.service'}],
                          'timeout': timeout, 'timeout_variables': ['sglang_server_wait_timeout']})
    return result, failed, warned


def test_a_last_start_near_the_timeout_warns_naming_the_variables(sglang, monkeypatch, run):
    result, failed, warned = _wait_after_a_start(monkeypatch, run, sglang['url'], 15)
    assert not failed, result['msg']
    assert result['endpoints'][0]['startup']['ready_s'] == 12.8
    assert warned == result['start_warnings'] == [
        'decode-0: its last start took 12.8 s (its journal), and sglang_server_wait_timeout gives it 15 s, less than '
        '1.5 times that: raise sglang_server_wait_timeout to at least 20']
    assert result['changed'] is False


def test_a_last_start_well_within_the_timeout_is_quiet(sglang, monkeypatch, run):
    result, failed, warned = _wait_after_a_start(monkeypatch, run, sglang['url'], 20)
    assert not failed, result['msg']
    assert warned == [] and 'start_warnings' not in result
