# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The pure chat checks of validate_chat: each cause comes from the answer shape it names."""

import json

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.validation import chat_checks as cc

DSML = u'\uff5cDSML\uff5c'
DSML_CALL = (u'<%stool_calls>\n<%sinvoke name="get_weather">\n<%sparameter name="city" string="true">Paris'
             u'</%sparameter>\n</%sinvoke>\n</%stool_calls>' % ((DSML,) * 6))
V3_CALL = u'<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581call\u2581begin\uff5c>function'


def msg(content='', reasoning='', calls=None, finish='stop', **extra):
    out = {'content': content, 'reasoning_content': reasoning, 'tool_calls': calls or [], 'finish_reason': finish}
    out.update(extra)
    return out


def call(name, args, cid=None):
    return {'id': cid or 'call_%s' % name, 'type': 'function', 'name': name,
            'arguments': args if isinstance(args, str) else json.dumps(args)}


GOOD_CALLS = [call('get_weather', {'city': 'Paris'}), call('get_time', {'timezone': 'Tokyo'})]

# GET /workers of sglang-router 0.3.2 in PD mode (captured from the real router)
WORKERS_OK = {
    'workers': [
        {'url': 'http://127.0.0.1:41002', 'worker_type': 'decode', 'is_healthy': True},
        {'url': 'http://127.0.0.1:41001', 'worker_type': 'prefill', 'is_healthy': True, 'bootstrap_port': 41099},
    ],
    'total': 2, 'stats': {'prefill_count': 1, 'decode_count': 1, 'regular_count': 0},
}
WORKERS_DECODE_SICK = {
    'workers': [
        {'url': 'http://127.0.0.1:41002', 'worker_type': 'decode', 'is_healthy': False},
        {'url': 'http://127.0.0.1:41001', 'worker_type': 'prefill', 'is_healthy': True},
    ],
}
WORKERS_NO_DECODE = {'workers': [{'url': 'http://127.0.0.1:41001', 'worker_type': 'prefill', 'is_healthy': True}],
                     'stats': {'prefill_count': 1, 'decode_count': 0, 'regular_count': 0}}


@pytest.mark.parametrize('prompt, answer', [
    ('What is 17*23? Number only.', 391),
    ('What is 17 * 23?', 391),
    ('What is 12+30?', 42),
    ('What is 5 - 9?', -4),
    ('What is 84/4?', 21),
    ('What is 7/2?', None),
    ('Say hello.', None),
    (None, None),
])
def test_expected_answer(prompt, answer):
    assert cc.expected_answer(prompt) == answer


# ---- basic ----------------------------------------------------------------------------------

def test_basic_passes_on_the_number():
    res = cc.check_basic(msg('391'))
    assert res['passed'] is True
    assert res['cause'] is None
    assert "'391'" in res['evidence']


def test_basic_wrong_answer():
    res = cc.check_basic(msg('392'))
    assert res['passed'] is False
    assert 'expected 391' in res['cause']


def test_basic_number_inside_a_longer_number_is_not_the_answer():
    assert cc.check_basic(msg('3910'))['passed'] is False


def test_basic_think_markup_means_leaked_reasoning():
    res = cc.check_basic(msg('<think>\nhmm\n</think>\n\n391'))
    assert res['passed'] is False
    assert res['cause'] == cc.CAUSE_REASONING_LEAKED


def test_basic_answer_only_in_reasoning():
    res = cc.check_basic(msg('', reasoning='391'))
    assert res['passed'] is False
    assert 'reasoning_content' in res['cause']


def test_basic_custom_prompt_sets_the_expected_number():
    assert cc.check_basic(msg('399'), prompt='What is 19*21?')['passed'] is True
    assert cc.check_basic(msg('391'), prompt='What is 19*21?')['passed'] is False


def test_basic_cut_answer_fails():
    res = cc.check_basic(msg('391', finish='length'))
    assert res['passed'] is False
    assert 'length' in res['cause']


# ---- thinking -------------------------------------------------------------------------------

def test_thinking_passes_when_separated():
    res = cc.check_thinking(msg('144', reasoning='The user asks for 12 * 12. That is 144.'))
    assert res['passed'] is True


def test_thinking_leaked_without_parser():
    res = cc.check_thinking(msg('<think>\nThe user asks for 12*12.\n</think>\n\n144'))
    assert res['passed'] is False
    assert res['cause'] == cc.CAUSE_REASONING_LEAKED


def test_thinking_closing_tag_only_is_a_leak_too():
    # the chat template opens <think> in the prompt, so the model output only closes it
    res = cc.check_thinking(msg('The user asks for 12*12.\n</think>\n\n144'))
    assert res['cause'] == cc.CAUSE_REASONING_LEAKED


def test_thinking_not_separated_when_model_never_thinks():
    res = cc.check_thinking(msg('144'))
    assert res['passed'] is False
    assert res['cause'] == cc.CAUSE_THINKING_NOT_SEPARATED


def test_thinking_whole_answer_in_reasoning():
    # the parser forces reasoning for thinking=true, but the template never opened a thinking block
    res = cc.check_thinking(msg('', reasoning='144'))
    assert res['passed'] is False
    assert res['cause'].startswith('thinking not separated')
    assert 'chat_template_kwargs.thinking' in res['cause']


def test_thinking_cut_while_thinking_blames_max_tokens():
    res = cc.check_thinking(msg('', reasoning='The user asks', finish='length'))
    assert 'max_tokens' in res['cause']


def test_thinking_markup_next_to_reasoning():
    res = cc.check_thinking(msg('</think>144', reasoning='The user asks for 12*12.'))
    assert res['passed'] is False
    assert 'parser does not match' in res['cause']


def test_thinking_reasoning_repeated_in_content():
    reasoning = 'The user asks for 12 * 12. Twelve twelves are 144.'
    res = cc.check_thinking(msg(reasoning + ' 144', reasoning=reasoning))
    assert res['passed'] is False
    assert res['cause'].startswith('reasoning leaked into content')


def test_thinking_wrong_answer():
    res = cc.check_thinking(msg('145', reasoning='The user asks for 12 * 12.'))
    assert res['passed'] is False
    assert 'expected 144' in res['cause']


# ---- tools ----------------------------------------------------------------------------------

def test_tools_pass():
    res = cc.check_tools(msg(None, calls=GOOD_CALLS, finish='tool_calls'))
    assert res['passed'] is True
    assert 'get_weather' in res['evidence'] and 'get_time' in res['evidence']


def test_tools_any_two_valid_calls_pass():
    calls = [call('get_weather', {'city': 'Paris'}, 'call_a'), call('get_weather', {'city': 'Berlin'}, 'call_b')]
    assert cc.check_tools(msg('', calls=calls, finish='tool_calls'))['passed'] is True


@pytest.mark.parametrize('content', [DSML_CALL, V3_CALL, '<tool_call>{"name": "get_weather"}</tool_call>'])
def test_tools_markup_in_content_is_an_unparsed_call(content):
    res = cc.check_tools(msg(content))
    assert res['passed'] is False
    assert res['cause'] == cc.CAUSE_TOOL_AS_TEXT


def test_tools_invalid_json():
    calls = [call('get_weather', '{"city": "Paris",'), GOOD_CALLS[1]]
    res = cc.check_tools(msg('', calls=calls, finish='tool_calls'))
    assert res['passed'] is False
    assert res['cause'].startswith(cc.CAUSE_INVALID_JSON)


def test_tools_json_that_is_not_an_object():
    calls = [call('get_weather', '["Paris"]'), GOOD_CALLS[1]]
    res = cc.check_tools(msg('', calls=calls, finish='tool_calls'))
    assert res['cause'].startswith(cc.CAUSE_INVALID_JSON)


def test_tools_unknown_name():
    calls = [call('get_stock', {'city': 'Paris'}), GOOD_CALLS[1]]
    res = cc.check_tools(msg('', calls=calls, finish='tool_calls'))
    assert res['passed'] is False
    assert res['cause'] == 'model called a tool that was not offered: get_stock'


def test_tools_missing_required_key():
    calls = [call('get_weather', {'town': 'Paris'}), GOOD_CALLS[1]]
    res = cc.check_tools(msg('', calls=calls, finish='tool_calls'))
    assert 'get_weather lacks city' in res['cause']


def test_tools_wrong_finish_reason():
    res = cc.check_tools(msg('', calls=GOOD_CALLS, finish='stop'))
    assert res['passed'] is False
    assert 'expected tool_calls' in res['cause']


def test_tools_one_call_is_not_parallel():
    res = cc.check_tools(msg('', calls=GOOD_CALLS[:1], finish='tool_calls'))
    assert res['passed'] is False
    assert 'parallel' in res['cause']


def test_tools_duplicate_ids():
    calls = [call('get_weather', {'city': 'Paris'}, 'call_x'), call('get_time', {'timezone': 'Tokyo'}, 'call_x')]
    assert 'ids' in cc.check_tools(msg('', calls=calls, finish='tool_calls'))['cause']


def test_tools_call_dropped_by_parser():
    # SGLang drops a call to a tool that was not offered: nothing is left at all
    res = cc.check_tools(msg('', finish='stop'))
    assert res['passed'] is False
    assert res['cause'] == cc.CAUSE_TOOL_DROPPED
    assert 'SGLANG_FORWARD_UNKNOWN_TOOLS' in res['cause']


def test_tools_plain_text_answer():
    res = cc.check_tools(msg('I cannot check the weather.'))
    assert res['passed'] is False
    assert res['cause'].startswith('no tool call')


# ---- streams --------------------------------------------------------------------------------

def chunk(delta, finish=None):
    return {'object': 'chat.completion.chunk', 'choices': [{'index': 0, 'delta': delta, 'finish_reason': finish}]}


def test_assemble_reasoning_and_content():
    events = [chunk({'role': 'assistant', 'content': ''}), chunk({'reasoning_content': 'The user '}),
              chunk({'reasoning_content': 'asks.'}), chunk({'content': '14'}), chunk({'content': '4'}),
              chunk({}, 'stop')]
    out = cc.assemble_stream(events, done=True)
    assert out['reasoning_content'] == 'The user asks.'
    assert out['content'] == '144'
    assert out['finish_reason'] == 'stop'
    assert out['done'] is True
    assert cc.check_thinking(out, stream=True)['passed'] is True


def test_assemble_tool_calls_by_index_even_interleaved():
    events = [
        chunk({'tool_calls': [{'index': 0, 'id': 'call_a', 'type': 'function',
                               'function': {'name': 'get_weather', 'arguments': ''}}]}),
        chunk({'tool_calls': [{'index': 1, 'id': 'call_b', 'type': 'function',
                               'function': {'name': 'get_time', 'arguments': '{"timez'}}]}),
        chunk({'tool_calls': [{'index': 0, 'function': {'arguments': '{"city": '}}]}),
        chunk({'tool_calls': [{'index': 1, 'function': {'arguments': 'one": "Tokyo"}'}}]}),
        chunk({'tool_calls': [{'index': 0, 'function': {'arguments': '"Paris"}'}}]}),
        chunk({}, 'tool_calls'),
    ]
    out = cc.assemble_stream(events, done=True)
    assert [c['name'] for c in out['tool_calls']] == ['get_weather', 'get_time']
    assert json.loads(out['tool_calls'][0]['arguments']) == {'city': 'Paris'}
    assert json.loads(out['tool_calls'][1]['arguments']) == {'timezone': 'Tokyo'}
    assert cc.check_tools(out, stream=True)['passed'] is True


def test_stream_without_done_fails_even_if_content_is_right():
    out = cc.assemble_stream([chunk({'content': '391'}), chunk({}, 'stop')], done=False)
    res = cc.check_basic(out, stream=True)
    assert res['passed'] is False
    assert '[DONE]' in res['evidence']


def test_stream_without_finish_reason_fails():
    out = cc.assemble_stream([chunk({'content': '391'})], done=True)
    res = cc.check_basic(out, stream=True)
    assert res['passed'] is False
    assert 'finish_reason' in res['cause']


def test_stream_error_event():
    events = [{'error': {'message': 'no decode server fetched bootstrap room 5', 'code': 500}}]
    res = cc.check_basic(cc.assemble_stream(events, done=True), stream=True)
    assert res['passed'] is False
    assert 'bootstrap room' in res['evidence']


def test_stream_leak_is_found_like_non_stream():
    events = [chunk({'content': '<think>\nx\n'}), chunk({'content': '</think>\n\n144'}), chunk({}, 'stop')]
    res = cc.check_thinking(cc.assemble_stream(events, done=True), stream=True)
    assert res['cause'] == cc.CAUSE_REASONING_LEAKED


def test_message_from_response():
    body = {'choices': [{'index': 0, 'finish_reason': 'tool_calls', 'message': {
        'role': 'assistant', 'content': None, 'reasoning_content': None,
        'tool_calls': [{'id': 'call_1', 'type': 'function',
                        'function': {'name': 'get_weather', 'arguments': '{"city": "Paris"}'}}]}}]}
    out = cc.message_from_response(body)
    assert out['content'] == ''
    assert out['tool_calls'][0]['name'] == 'get_weather'
    assert out['finish_reason'] == 'tool_calls'
    assert cc.message_from_response({'object': 'error'})['has_choice'] is False


# ---- router failures ------------------------------------------------------------------------

def test_count_workers():
    counts = cc.count_workers(WORKERS_DECODE_SICK)
    assert counts['decode'] == {'healthy': 0, 'total': 1}
    assert counts['prefill'] == {'healthy': 1, 'total': 1}


def test_no_healthy_decode_from_workers():
    body = {'error': {'type': 'Service Unavailable', 'code': 'server_selection_failed',
                      'message': 'No available servers: No available decode workers (all circuits open or unhealthy)'}}
    evidence, cause = cc.diagnose_http_failure(503, body, json.dumps(body),
                                               {'X-Smg-Error-Code': 'server_selection_failed'},
                                               workers=WORKERS_DECODE_SICK)
    assert cause.startswith(cc.CAUSE_NO_DECODE)
    assert '503' in evidence and 'server_selection_failed' in evidence


def test_no_decode_registered_from_message_alone():
    body = {'error': {'code': 'server_selection_failed', 'message': 'No available servers: No decode workers '
                      'available. Please check if decode servers are configured and healthy.'}}
    _evidence, cause = cc.diagnose_http_failure(503, body, json.dumps(body), {}, workers=None)
    assert cause == cc.CAUSE_NO_DECODE


def test_no_decode_registered_from_workers():
    _evidence, cause = cc.diagnose_http_failure(503, None, '', {}, workers=WORKERS_NO_DECODE)
    assert cause.startswith(cc.CAUSE_NO_DECODE)


def test_5xx_with_error_code():
    body = {'error': {'type': 'Internal Server Error', 'code': 'decode_internal_error', 'message': ''}}
    _evidence, cause = cc.diagnose_http_failure(500, body, json.dumps(body),
                                                {'x-smg-error-code': 'decode_internal_error'}, workers=WORKERS_OK)
    assert cause == 'router answered 500: decode_internal_error'


def test_5xx_without_code_names_the_message():
    text = 'data: {\'error\': {"message":{"object":"error","message":"Internal server error (boom).","code":500}}}'
    _evidence, cause = cc.diagnose_http_failure(500, None, text, {}, workers=WORKERS_OK)
    assert cause.startswith('router answered 500: no error code')
    assert 'boom' in cause


def test_circuit_breaker_is_named():
    body = {'error': {'code': 'server_selection_failed',
                      'message': 'No available servers: No available prefill workers (all circuits open or unhealthy)'}}
    _evidence, cause = cc.diagnose_http_failure(503, body, json.dumps(body), {}, workers=WORKERS_OK)
    assert 'circuit breaker' in cause
    assert cause.startswith('router answered 503: server_selection_failed')


def test_connection_refused_and_timeout():
    evidence, cause = cc.diagnose_http_failure(None, None, '', error='connection refused')
    assert 'connection refused' in evidence and 'running' in cause
    _evidence, cause = cc.diagnose_http_failure(None, None, '', error='timed out')
    assert 'accepted the request' in cause


def test_pd_server_instead_of_router():
    body = {'object': 'error', 'message': 'bootstrap_room is required in DECODE disaggregation mode: send '
            'generation requests through the PD router', 'code': 400}
    _evidence, cause = cc.diagnose_http_failure(400, body, json.dumps(body), {}, workers=None)
    assert 'router URL' in cause
    # SGLang's own wording
    body = {'object': 'error', 'message': "Invalid request: Disaggregated request received without bootstrap room "
            "id. req.rid='65af'", 'code': 400}
    _evidence, cause = cc.diagnose_http_failure(400, body, json.dumps(body), {}, workers=None)
    assert 'router URL' in cause


def test_auth_refused():
    _evidence, cause = cc.diagnose_http_failure(401, {'error': 'Unauthorized'}, '', {}, workers=None)
    assert 'api_key' in cause


# ---- requests -------------------------------------------------------------------------------

def test_build_requests():
    basic = cc.build_request('basic', 'm')
    assert basic['messages'][0]['content'] == cc.DEFAULT_PROMPTS['basic']
    assert basic['stream'] is False and 'tools' not in basic and 'chat_template_kwargs' not in basic
    thinking = cc.build_request('thinking_stream', 'm')
    assert thinking['chat_template_kwargs'] == {'thinking': True} and thinking['stream'] is True
    tools = cc.build_request('tools', 'm')
    assert [t['function']['name'] for t in tools['tools']] == ['get_weather', 'get_time']
    assert tools['messages'][0]['content'] == 'What is the weather in Paris and the time in Tokyo?'
    custom = cc.build_request('basic', 'm', prompts={'basic': 'What is 2+2?'})
    assert custom['messages'][0]['content'] == 'What is 2+2?'


def test_run_check_dispatch():
    assert cc.run_check('basic_stream', dict(msg('391'), done=True))['passed'] is True
    with pytest.raises(ValueError):
        cc.run_check('nope', msg())
