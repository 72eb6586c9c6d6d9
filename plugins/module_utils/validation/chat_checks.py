# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Pure checks over OpenAI chat completion answers, for validate_chat.

Nothing here does I/O: the functions take a decoded response (or the events of a stream)
and return ``{'passed': bool, 'evidence': str, 'cause': str or None}``. ``evidence`` is a
short account of what came back; ``cause`` names the likely misconfiguration when the check
fails. The checks are generic: they do not depend on the test emulator's wording, only on
what an OpenAI-compatible SGLang stack must answer.
"""

import json
import re
from typing import Any, Dict, List, Optional, Tuple

CHECK_NAMES = ('basic', 'thinking', 'tools', 'basic_stream', 'thinking_stream', 'tools_stream')

DEFAULT_PROMPTS = {
    'basic': 'What is 17*23? Number only.',
    'thinking': 'What is 12*12? Number only.',
    'tools': 'What is the weather in Paris and the time in Tokyo?',
}

WEATHER_TOOL = {
    'type': 'function',
    'function': {
        'name': 'get_weather',
        'description': 'Get the current weather in a city.',
        'parameters': {
            'type': 'object',
            'properties': {'city': {'type': 'string', 'description': 'City name, e.g. Paris'}},
            'required': ['city'],
        },
    },
}
TIME_TOOL = {
    'type': 'function',
    'function': {
        'name': 'get_time',
        'description': 'Get the current local time in a timezone or city.',
        'parameters': {
            'type': 'object',
            'properties': {'timezone': {'type': 'string', 'description': 'Timezone or city, e.g. Tokyo'}},
            'required': ['timezone'],
        },
    },
}
DEFAULT_TOOLS = [WEATHER_TOOL, TIME_TOOL]

THINK_MARKUP = re.compile(r'</?think>')
# Tool-call markup of the DeepSeek families (DSML of V3.2/V4, the V3 special tokens) and the
# common generic forms; any of them in `content` means a tool call was not parsed.
TOOL_MARKUP = re.compile(
    u'(\uff5cDSML\uff5c|<\uff5ctool\u2581|tool\u2581calls?\u2581begin|<tool_call>|<function_calls>'
    u'|</?invoke[ >]|<\\|tool_calls?_begin\\|>|\\[TOOL_CALLS\\])'
)
ARITHMETIC = re.compile(r'(-?\d+)\s*([-+*/x\u00d7])\s*(-?\d+)')

CAUSE_REASONING_LEAKED = 'reasoning leaked into content: is --reasoning-parser set on the decode server?'
CAUSE_THINKING_NOT_SEPARATED = ('thinking not separated: reasoning_content is empty; does the chat template '
                                'honour chat_template_kwargs.thinking?')
CAUSE_THINKING_NOT_SEPARATED_ALL = ('thinking not separated: the whole output is in reasoning_content and content is '
                                    'empty (the model never closed a thinking block); does the chat template honour '
                                    'chat_template_kwargs.thinking?')
CAUSE_TOOL_AS_TEXT = ('tool call returned as text: check --tool-call-parser on the decode server '
                      '(prefill and decode must use the same parser)')
CAUSE_TOOL_DROPPED = ('tool call dropped by the parser: neither content nor tool_calls came back; SGLang drops '
                      'calls to tools that were not offered (an unknown tool name?) unless SGLANG_FORWARD_UNKNOWN_TOOLS=1 '
                      'is set on the decode server, and calls it cannot parse')
CAUSE_INVALID_JSON = 'tool arguments are not valid JSON'
CAUSE_UNKNOWN_TOOL = 'model called a tool that was not offered: %s'
CAUSE_NO_DECODE = 'router has no healthy decode worker'
CAUSE_NO_PREFILL = 'router has no healthy prefill worker'


def expected_answer(prompt: Optional[str]) -> Optional[int]:
    """The integer a prompt like 'What is 17*23?' asks for, or None."""
    if not prompt:
        return None
    match = ARITHMETIC.search(prompt)
    if not match:
        return None
    left, op, right = int(match.group(1)), match.group(2), int(match.group(3))
    if op == '+':
        return left + right
    if op == '-':
        return left - right
    if op in ('*', 'x', u'\u00d7'):
        return left * right
    if right != 0 and left % right == 0:
        return left // right
    return None


def result(passed: Any, evidence: str, cause: Optional[str] = None) -> Dict[str, Any]:
    return {'passed': bool(passed), 'evidence': evidence, 'cause': None if passed else cause}


def _short(text, limit=120):
    if text is None:
        return 'null'
    text = ' '.join(str(text).split())
    if len(text) > limit:
        text = text[:limit] + '...'
    return repr(text)


def _contains_answer(content, answer):
    return re.search(r'(?<![\d.])%s(?![\d])' % re.escape(str(answer)), content or '') is not None


# ---------------------------------------------------------------------------
# Transport and router failures
# ---------------------------------------------------------------------------

def count_workers(workers_json: Any) -> Dict[str, Any]:
    """Healthy and total prefill/decode/regular workers from the router's GET /workers."""
    counts = {}
    for kind in ('prefill', 'decode', 'regular'):
        counts[kind] = {'healthy': 0, 'total': 0}
    if not isinstance(workers_json, dict):
        return counts
    for worker in workers_json.get('workers') or []:
        if not isinstance(worker, dict):
            continue
        kind = worker.get('worker_type') or 'regular'
        if kind not in counts:
            counts[kind] = {'healthy': 0, 'total': 0}
        counts[kind]['total'] += 1
        if worker.get('is_healthy'):
            counts[kind]['healthy'] += 1
    return counts


def diagnose_http_failure(status: Optional[int], body_json: Any, body_text: Optional[str],
                          headers: Optional[Dict[str, str]] = None, error: Optional[str] = None,
                          workers: Any = None) -> Tuple[str, str]:
    """Evidence and cause for an answer that is not a usable 2xx.

    ``workers`` is the router's GET /workers JSON when it could be read (None otherwise);
    it tells a missing worker from a worker that answers errors.
    """
    headers = dict((k.lower(), v) for k, v in (headers or {}).items())
    if status is None:
        if error == 'timed out':
            return ('no answer: timed out',
                    'no answer in time: the endpoint accepted the request but nothing completed it '
                    '(a hung or failing prefill/decode server behind the router? see their logs)')
        return ('no answer: %s' % error,
                'nothing answered (%s): is the router (or server) running and listening on this address?' % error)
    code = headers.get('x-smg-error-code')
    message = ''
    if isinstance(body_json, dict):
        err = body_json.get('error')
        if isinstance(err, dict):
            code = code or err.get('code')
            message = err.get('message') or ''
        elif isinstance(err, str):
            message = err
        message = message or body_json.get('message') or body_json.get('detail') or ''
    if not isinstance(message, str):
        message = json.dumps(message)
    evidence = 'HTTP %s%s%s' % (status, (' ' + str(code)) if code else '',
                                (': ' + _short(message or body_text, 160)) if (message or body_text) else '')
    counts = count_workers(workers) if workers is not None else None
    lowered = (message or body_text or '').lower()
    if counts is not None and workers.get('workers') is not None and counts['regular']['total'] == 0:
        if counts['decode']['healthy'] == 0:
            return evidence, '%s (GET /workers: %d decode registered, 0 healthy)' % (
                CAUSE_NO_DECODE, counts['decode']['total'])
        if counts['prefill']['healthy'] == 0:
            return evidence, '%s (GET /workers: %d prefill registered, 0 healthy)' % (
                CAUSE_NO_PREFILL, counts['prefill']['total'])
    if 'no decode worker' in lowered or 'no available decode' in lowered:
        return evidence, CAUSE_NO_DECODE
    if 'no prefill worker' in lowered or ('no available prefill workers' in lowered and 'circuit' not in lowered):
        return evidence, CAUSE_NO_PREFILL
    if 'bootstrap_room' in lowered or 'bootstrap room' in lowered or 'bootstrap_host' in lowered:
        return evidence, ('this is a prefill or decode server, which cannot serve a request alone: '
                          'validate through the router URL')
    if status == 401 or status == 403:
        return evidence, 'authentication refused (HTTP %s): check api_key against the router --api-key' % status
    if status == 404 and 'model' in lowered:
        return evidence, 'model not found: check the model option against GET /v1/models'
    if status >= 500:
        what = code
        if not what:
            inner = re.findall(r'"message"\s*:\s*"([^"]+)"', body_text or '')
            what = 'no error code, message %s' % _short(inner[-1] if inner else (message or body_text), 100)
        extra = ''
        if 'circuit' in lowered:
            extra = ' (circuit breaker open after earlier failures)'
        return evidence, 'router answered %s: %s%s' % (status, what, extra)
    return evidence, 'request refused with HTTP %s: %s' % (status, code or _short(message or body_text, 120))


# ---------------------------------------------------------------------------
# Stream assembly
# ---------------------------------------------------------------------------

def assemble_stream(events: List[Any], done: bool = False) -> Dict[str, Any]:
    """Assemble chat.completion.chunk events into one message.

    Returns a dict: content, reasoning_content, tool_calls (list ordered by index, each with
    id/type/name/arguments), finish_reason (the last one given), done ([DONE] seen), chunks,
    errors (error objects carried inside the stream).
    """
    content = []
    reasoning = []
    calls: Dict[int, Dict[str, Any]] = {}
    finish_reason = None
    errors = []
    chunks = 0
    for event in events:
        if not isinstance(event, dict):
            continue
        if '_unparsed' in event:
            errors.append('unparsable event: %s' % _short(event['_unparsed'], 80))
            continue
        if 'error' in event and not event.get('choices'):
            errors.append(event['error'])
            continue
        chunks += 1
        for choice in event.get('choices') or []:
            if choice.get('index', 0) != 0:
                continue
            delta = choice.get('delta') or {}
            if delta.get('content'):
                content.append(delta['content'])
            if delta.get('reasoning_content'):
                reasoning.append(delta['reasoning_content'])
            for tc in delta.get('tool_calls') or []:
                idx = tc.get('index', len(calls))
                slot = calls.setdefault(idx, {'id': None, 'type': None, 'name': '', 'arguments': ''})
                if tc.get('id'):
                    slot['id'] = tc['id']
                if tc.get('type'):
                    slot['type'] = tc['type']
                fn = tc.get('function') or {}
                if fn.get('name'):
                    slot['name'] += fn['name']
                if fn.get('arguments'):
                    slot['arguments'] += fn['arguments']
            if choice.get('finish_reason'):
                finish_reason = choice['finish_reason']
    return {
        'content': ''.join(content),
        'reasoning_content': ''.join(reasoning),
        'tool_calls': [calls[k] for k in sorted(calls)],
        'finish_reason': finish_reason,
        'done': bool(done),
        'chunks': chunks,
        'errors': errors,
    }


def message_from_response(body_json: Any) -> Dict[str, Any]:
    """Normalise a non-streaming chat.completion into the assembled-stream shape."""
    choice: Dict[str, Any] = {}
    if isinstance(body_json, dict) and body_json.get('choices'):
        choice = body_json['choices'][0] or {}
    msg = choice.get('message') or {}
    calls = []
    for tc in msg.get('tool_calls') or []:
        fn = tc.get('function') or {}
        calls.append({'id': tc.get('id'), 'type': tc.get('type'), 'name': fn.get('name') or '',
                      'arguments': fn.get('arguments')})
    return {
        'content': msg.get('content') or '',
        'reasoning_content': msg.get('reasoning_content') or '',
        'tool_calls': calls,
        'finish_reason': choice.get('finish_reason'),
        'has_choice': bool(choice),
    }


def _stream_failure(msg):
    """The failed result for a problem only a stream can have; None when the stream is complete."""
    if msg.get('errors'):
        err = msg['errors'][0]
        if isinstance(err, dict):
            err = err.get('message') or json.dumps(err)
        return result(False, 'stream carried an error: %s' % _short(err, 160),
                      'the server failed mid-stream: see the decode server log')
    if not msg.get('done'):
        return result(False, 'stream ended without [DONE] after %d chunks' % msg.get('chunks', 0),
                      'stream cut short: the decode server or router dropped the connection')
    if not msg.get('finish_reason'):
        return result(False, 'no finish_reason in any chunk', 'stream has no final finish_reason')
    return None


# ---------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------

def check_basic(msg: Dict[str, Any], prompt: Optional[str] = None, stream: bool = False) -> Dict[str, Any]:
    """A plain answer: content present, the expected number, no reasoning or tool markup."""
    failure = _stream_failure(msg) if stream else None
    if failure:
        return failure
    content = msg.get('content') or ''
    evidence = 'content=%s finish_reason=%s' % (_short(content), msg.get('finish_reason'))
    if not content.strip():
        if msg.get('reasoning_content'):
            return result(False, evidence + ' reasoning_content=%s' % _short(msg['reasoning_content'], 60),
                          'answer went to reasoning_content although thinking was not asked for: '
                          'does the reasoning parser match the model (deepseek-v4 reads chat_template_kwargs.thinking)?')
        return result(False, evidence, 'empty answer: the model produced no content')
    if THINK_MARKUP.search(content):
        return result(False, evidence, CAUSE_REASONING_LEAKED)
    if TOOL_MARKUP.search(content):
        return result(False, evidence, 'tool markup in a plain answer: check --tool-call-parser on the decode server')
    answer = expected_answer(prompt if prompt is not None else DEFAULT_PROMPTS['basic'])
    if answer is not None and not _contains_answer(content, answer):
        return result(False, evidence + ' expected %s' % answer,
                      'wrong answer: expected %s; the model or its weights/template are not what they should be' % answer)
    if msg.get('finish_reason') != 'stop':
        return result(False, evidence, 'finish_reason %s: the answer was cut or redirected' % msg.get('finish_reason'))
    return result(True, evidence)


def check_thinking(msg: Dict[str, Any], prompt: Optional[str] = None, stream: bool = False) -> Dict[str, Any]:
    """reasoning_content separated from content, nothing of it left in content."""
    failure = _stream_failure(msg) if stream else None
    if failure:
        return failure
    content = msg.get('content') or ''
    reasoning = msg.get('reasoning_content') or ''
    evidence = 'reasoning_content=%s content=%s finish_reason=%s' % (
        _short(reasoning, 60), _short(content, 80), msg.get('finish_reason'))
    if not reasoning.strip():
        if THINK_MARKUP.search(content):
            return result(False, evidence, CAUSE_REASONING_LEAKED)
        return result(False, evidence, CAUSE_THINKING_NOT_SEPARATED)
    if THINK_MARKUP.search(content):
        return result(False, evidence, 'think markup left in content next to reasoning_content: '
                                       'the reasoning parser does not match the model (use deepseek-v4 for DeepSeek-V4)')
    if THINK_MARKUP.search(reasoning):
        return result(False, evidence, 'think markup inside reasoning_content: reasoning parser mismatch')
    if not content.strip():
        if msg.get('finish_reason') == 'length':
            return result(False, evidence, 'no answer after the reasoning: cut at max_tokens while thinking '
                                           '(raise max_tokens)')
        return result(False, evidence, CAUSE_THINKING_NOT_SEPARATED_ALL)
    probe = ' '.join(reasoning.split())[:40]
    if len(probe) >= 20 and probe in ' '.join(content.split()):
        return result(False, evidence, CAUSE_REASONING_LEAKED + ' (the reasoning text is repeated in content)')
    answer = expected_answer(prompt if prompt is not None else DEFAULT_PROMPTS['thinking'])
    if answer is not None and not _contains_answer(content, answer):
        return result(False, evidence + ' expected %s' % answer,
                      'wrong answer after thinking: expected %s in content' % answer)
    if msg.get('finish_reason') != 'stop':
        return result(False, evidence, 'finish_reason %s: the answer was cut or redirected' % msg.get('finish_reason'))
    return result(True, evidence)


def _required_keys(tools):
    out = {}
    for tool in tools:
        fn = tool.get('function') or {}
        params = fn.get('parameters') or {}
        out[fn.get('name')] = list(params.get('required') or [])
    return out


def check_tools(msg: Dict[str, Any], tools: Optional[List[Dict[str, Any]]] = None, stream: bool = False, min_calls: int = 2) -> Dict[str, Any]:
    """Parallel tool calls: finish_reason tool_calls, offered names, JSON object arguments."""
    failure = _stream_failure(msg) if stream else None
    if failure:
        return failure
    tools = tools if tools is not None else DEFAULT_TOOLS
    required = _required_keys(tools)
    content = msg.get('content') or ''
    calls = msg.get('tool_calls') or []
    summary = ', '.join('%s(%s)' % (c.get('name'), _short(c.get('arguments'), 60)) for c in calls) or 'none'
    evidence = 'finish_reason=%s tool_calls=[%s]%s' % (
        msg.get('finish_reason'), summary, (' content=%s' % _short(content, 100)) if content.strip() else '')
    if TOOL_MARKUP.search(content):
        if not calls:
            return result(False, evidence, CAUSE_TOOL_AS_TEXT)
        return result(False, evidence, 'tool markup left in content next to parsed calls: the tool-call parser '
                                       'only partly understands the model output (check --tool-call-parser)')
    if not calls:
        if msg.get('reasoning_content') and TOOL_MARKUP.search(msg['reasoning_content']):
            return result(False, evidence, 'tool call ended up in reasoning_content: reasoning and tool-call parser '
                                           'disagree on where thinking ends')
        if not content.strip():
            return result(False, evidence, CAUSE_TOOL_DROPPED)
        return result(False, evidence, 'no tool call: the model answered in text although the request needs '
                                       'the offered tools (are tools passed to the chat template?)')
    for call in calls:
        name = call.get('name')
        if name not in required:
            return result(False, evidence, CAUSE_UNKNOWN_TOOL % name)
        args = call.get('arguments')
        if isinstance(args, dict):
            parsed: Any = args
        else:
            try:
                parsed = json.loads(args) if args is not None else None
            except ValueError:
                return result(False, evidence, CAUSE_INVALID_JSON + ' (%s: %s)' % (name, _short(args, 80)))
        if not isinstance(parsed, dict):
            return result(False, evidence, CAUSE_INVALID_JSON + ' object (%s: %s)' % (name, _short(args, 80)))
        missing = [k for k in required[name] if k not in parsed]
        if missing:
            return result(False, evidence, 'tool arguments miss required keys: %s lacks %s' % (name, ', '.join(missing)))
    if msg.get('finish_reason') != 'tool_calls':
        return result(False, evidence, 'finish_reason is %s, expected tool_calls: the tool-call parser did not '
                                       'finish the call' % msg.get('finish_reason'))
    if len(calls) < min_calls:
        return result(False, evidence, 'expected %d parallel tool calls, got %d: the parser or template drops '
                                       'parallel calls' % (min_calls, len(calls)))
    ids = [c.get('id') for c in calls]
    if not all(ids) or len(set(ids)) != len(ids):
        return result(False, evidence, 'tool calls without distinct ids: a client cannot answer them')
    return result(True, evidence)


def run_check(name: str, msg: Dict[str, Any], prompt: Optional[str] = None, tools: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Dispatch by check name (basic, thinking, tools and their _stream variants)."""
    stream = name.endswith('_stream')
    base = name[:-len('_stream')] if stream else name
    if base == 'basic':
        return check_basic(msg, prompt, stream=stream)
    if base == 'thinking':
        return check_thinking(msg, prompt, stream=stream)
    if base == 'tools':
        return check_tools(msg, tools, stream=stream)
    raise ValueError('unknown check %s' % name)


def build_request(name: str, model: Optional[str], prompts: Optional[Dict[str, str]] = None, max_tokens: int = 2048,
                  tools: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """The chat completion request body for a check."""
    stream = name.endswith('_stream')
    base = name[:-len('_stream')] if stream else name
    prompts = dict(DEFAULT_PROMPTS, **(prompts or {}))
    body: Dict[str, Any] = {
        'model': model,
        'messages': [{'role': 'user', 'content': prompts[base]}],
        'max_tokens': max_tokens,
        'temperature': 0,
        'stream': stream,
    }
    if base == 'thinking':
        body['chat_template_kwargs'] = {'thinking': True}
    if base == 'tools':
        body['tools'] = tools if tools is not None else DEFAULT_TOOLS
        body['tool_choice'] = 'auto'
    return body
