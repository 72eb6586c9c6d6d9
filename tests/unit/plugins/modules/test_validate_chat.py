# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""validate_chat as a module: argument handling and results, against a scripted loopback server."""

import functools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import validate_chat


@pytest.fixture
def run(module_runner):
    """run(args[, check_mode]) -> (result, failed), through validate_chat.main() (conftest.module_runner)."""
    return functools.partial(module_runner, validate_chat.main)


# ---- a tiny OpenAI-compatible server ---------------------------------------------------------

def completion(content=None, reasoning=None, calls=None, finish='stop'):
    message = {'role': 'assistant', 'content': content, 'reasoning_content': reasoning, 'tool_calls': calls}
    return {'object': 'chat.completion', 'choices': [{'index': 0, 'message': message, 'finish_reason': finish}]}


def chunks_of(body):
    """A chat.completion turned into stream chunks (content split in two, calls by index)."""
    choice = body['choices'][0]
    msg = choice['message']
    out = [{'choices': [{'index': 0, 'delta': {'role': 'assistant', 'content': ''}, 'finish_reason': None}]}]
    for key in ('reasoning_content', 'content'):
        text = msg.get(key) or ''
        for part in (text[:len(text) // 2], text[len(text) // 2:]):
            if part:
                out.append({'choices': [{'index': 0, 'delta': {key: part}, 'finish_reason': None}]})
    for i, tc in enumerate(msg.get('tool_calls') or []):
        out.append({'choices': [{'index': 0, 'finish_reason': None, 'delta': {'tool_calls': [
            {'index': i, 'id': tc['id'], 'type': 'function', 'function': {'name': tc['function']['name'],
                                                                          'arguments': ''}}]}}]})
        out.append({'choices': [{'index': 0, 'finish_reason': None, 'delta': {'tool_calls': [
            {'index': i, 'function': {'arguments': tc['function']['arguments']}}]}}]})
    out.append({'choices': [{'index': 0, 'delta': {}, 'finish_reason': choice['finish_reason']}]})
    return out


def tool_call(i, name, args):
    return {'id': 'call_%024x' % i, 'type': 'function', 'function': {'name': name, 'arguments': args}}


GOOD = {
    'basic': completion('391'),
    'thinking': completion('144', reasoning='The user asks for 12 * 12.'),
    'tools': completion(None, calls=[tool_call(1, 'get_weather', '{"city": "Paris"}'),
                                     tool_call(2, 'get_time', '{"timezone": "Tokyo"}')], finish='tool_calls'),
}


class Behaviour(object):
    def __init__(self):
        self.answers = dict(GOOD)
        self.requests = []
        self.status = 200
        self.error_body = None
        self.headers_seen = []
        self.models = {'object': 'list', 'data': [{'id': 'deepseek-v4-flash'}]}
        self.workers = None


@pytest.fixture
def server():
    behaviour = Behaviour()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, body, ctype='application/json', headers=None):
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header('Content-Type', ctype)
            self.send_header('Content-Length', str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self):
            behaviour.headers_seen.append(dict(self.headers))
            if self.path == '/v1/models':
                return self._send(200, behaviour.models)
            if self.path == '/workers' and behaviour.workers is not None:
                return self._send(200, behaviour.workers)
            return self._send(404, {'detail': 'Not Found'})

        def do_POST(self):
            behaviour.headers_seen.append(dict(self.headers))
            body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
            behaviour.requests.append(body)
            if behaviour.status != 200:
                return self._send(behaviour.status, behaviour.error_body or {},
                                  headers={'x-smg-error-code': (behaviour.error_body or {}).get('error', {}).get('code', '')})
            if body.get('tools'):
                kind = 'tools'
            elif (body.get('chat_template_kwargs') or {}).get('thinking'):
                kind = 'thinking'
            else:
                kind = 'basic'
            answer = behaviour.answers[kind]
            if not body.get('stream'):
                return self._send(200, answer)
            events = ''.join('data: %s\n\n' % json.dumps(c) for c in chunks_of(answer)) + 'data: [DONE]\n\n'
            return self._send(200, events.encode(), ctype='text/event-stream')

    httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    behaviour.url = 'http://127.0.0.1:%d' % httpd.server_address[1]
    yield behaviour
    httpd.shutdown()
    httpd.server_close()


# ---- arguments ------------------------------------------------------------------------------

def test_url_is_required(run):
    result, failed = run({})
    assert failed
    assert 'url' in result['msg']


def test_unknown_check_is_refused(run):
    result, failed = run({'url': 'http://127.0.0.1:9', 'checks': ['basic', 'vision']})
    assert failed
    assert 'vision' in result['msg']


def test_empty_checks_refused(run):
    result, failed = run({'url': 'http://127.0.0.1:9', 'checks': []})
    assert failed
    assert result['msg'].startswith('checks is empty')


def test_url_scheme_checked(run):
    result, failed = run({'url': '127.0.0.1:30001'})
    assert failed
    assert 'http://' in result['msg']


def test_argument_spec_defaults():
    spec = validate_chat.argument_spec()
    assert spec['checks']['default'] == ['basic', 'thinking', 'tools', 'basic_stream', 'thinking_stream',
                                         'tools_stream']
    assert spec['api_key']['no_log'] is True


# ---- behaviour ------------------------------------------------------------------------------

def test_all_checks_pass_on_a_correct_endpoint(server, run):
    result, failed = run({'url': server.url})
    assert not failed, result['msg']
    assert result['changed'] is False
    assert result['model'] == 'deepseek-v4-flash'
    assert result['failed_checks'] == []
    assert list(result['report']) == ['basic', 'thinking', 'tools', 'basic_stream', 'thinking_stream',
                                      'tools_stream']
    for report in result['report'].values():
        assert report['passed'] is True and report['cause'] is None
        assert report['seconds'] >= 0
    assert len(server.requests) == 6
    # The six checks are sent side by side: three plain and three streamed requests, in any order.
    assert sorted(r['stream'] for r in server.requests) == [False, False, False, True, True, True]
    assert all(r['model'] == 'deepseek-v4-flash' for r in server.requests)


def test_leaked_reasoning_fails_with_cause(server, run):
    server.answers['thinking'] = completion('<think>\nThe user asks.\n</think>\n\n144')
    result, failed = run({'url': server.url, 'checks': ['basic', 'thinking', 'thinking_stream']})
    assert failed
    assert result['failed_checks'] == ['thinking', 'thinking_stream']
    assert result['report']['basic']['passed'] is True
    assert result['msg'].startswith('2 of 3 checks failed: thinking: ')
    assert 'reasoning leaked into content: is --reasoning-parser set on the decode server?' in result['msg']
    assert "'<think> The user asks. </think> 144'" in result['msg']


def test_tool_call_as_text_fails(server, run):
    server.answers['tools'] = completion(u'<\uff5cDSML\uff5ctool_calls>...')
    result, failed = run({'url': server.url, 'checks': ['tools', 'tools_stream']})
    assert failed
    for name in ('tools', 'tools_stream'):
        assert result['report'][name]['cause'].startswith('tool call returned as text')


def test_router_5xx_is_reported(server, run):
    server.status = 500
    server.error_body = {'error': {'type': 'Internal Server Error', 'code': 'decode_internal_error', 'message': ''}}
    server.workers = {'workers': [{'worker_type': 'prefill', 'is_healthy': True},
                                  {'worker_type': 'decode', 'is_healthy': True}]}
    result, failed = run({'url': server.url, 'checks': ['basic', 'basic_stream']})
    assert failed
    for name in ('basic', 'basic_stream'):
        assert result['report'][name]['cause'] == 'router answered 500: decode_internal_error'


def test_no_model_served(server, run):
    server.models = {'object': 'list', 'data': []}
    result, failed = run({'url': server.url, 'checks': ['basic']})
    assert failed
    assert 'no model served' in result['report']['basic']['cause']
    assert server.requests == []


def test_given_model_and_api_key_are_sent(server, run):
    result, failed = run({'url': server.url, 'checks': ['basic'], 'model': 'other', 'api_key': 's3cret'})
    assert not failed, result['msg']
    assert server.requests[0]['model'] == 'other'
    assert all(h.get('Authorization') == 'Bearer s3cret' for h in server.headers_seen)
    assert 's3cret' not in json.dumps(result)


def test_prompt_override(server, run):
    server.answers['basic'] = completion('399')
    result, failed = run({'url': server.url, 'checks': ['basic'], 'prompts': {'basic': 'What is 19*21?'}})
    assert not failed, result['msg']
    assert server.requests[0]['messages'][0]['content'] == 'What is 19*21?'


def test_duplicate_checks_run_once(server, run):
    result, failed = run({'url': server.url, 'checks': ['basic', 'basic']})
    assert not failed
    assert len(server.requests) == 1


def test_nothing_listening(run):
    result, failed = run({'url': 'http://127.0.0.1:9', 'checks': ['basic'], 'request_timeout': 2, 'timeout': 2})
    assert failed
    assert 'connection refused' in result['report']['basic']['evidence']
