"""Reasoning and tool-call parsing as SGLang's configured parsers would do it.

Only what the emulated model emits is covered: ``<think>``/``</think>`` reasoning and the DSML
tool-call block (plus the DeepSeek-V3.2 ``function_calls`` spelling of it).
"""
import json
import re
import secrets

from . import model

DEEPSEEK_REASONING = {"deepseek-v4", "deepseek-v41", "deepseek-v3"}
FORCED_REASONING = {"deepseek-r1"}  # R1 treats all output as reasoning until </think>
DSML_TOOL_PARSERS = {"deepseekv4", "deepseekv41", "deepseekv32"}

_D = re.escape(model.DSML)
_BLOCK = re.compile(r"<%s(tool_calls|function_calls)>(.*?)</%s\1>" % (_D, _D), re.DOTALL)
_INVOKE = re.compile(r'<%sinvoke name="([^"]*)">(.*?)</%sinvoke>' % (_D, _D), re.DOTALL)
_PARAM = re.compile(r'<%sparameter name="([^"]*)" string="(true|false)">(.*?)</%sparameter>'
                    % (_D, _D), re.DOTALL)


def new_call_id():
    """OpenAI-style tool-call id as SGLang makes them: call_ + 24 hex digits."""
    return "call_" + secrets.token_hex(12)


def reasoning_applies(reasoning_parser, thinking, separate_reasoning=True):
    if not reasoning_parser or not separate_reasoning:
        return False
    if reasoning_parser in FORCED_REASONING:
        return True
    if reasoning_parser in DEEPSEEK_REASONING:
        return bool(thinking)
    return True


def split_reasoning(text, reasoning_parser, thinking, separate_reasoning=True):
    """(reasoning or None, normal text)."""
    if not reasoning_applies(reasoning_parser, thinking, separate_reasoning):
        return None, text
    forced = reasoning_parser in FORCED_REASONING or reasoning_parser in DEEPSEEK_REASONING
    if not forced and model.THINK_START not in text:
        return None, text
    body = text
    while body.startswith(model.THINK_START):
        body = body[len(model.THINK_START):]
    if model.THINK_END not in body:
        return body, ""
    reasoning, normal = body.split(model.THINK_END, 1)
    return reasoning, normal


def parse_tool_calls(text, tool_call_parser, tools):
    """(normal text, [{"name", "arguments"}]) as the configured tool-call parser returns."""
    if tool_call_parser not in DSML_TOOL_PARSERS or not tools:
        return text, []
    match = _BLOCK.search(text)
    if not match:
        return text, []
    calls = []
    for name, body in _INVOKE.findall(match.group(2)):
        stripped = body.strip()
        if stripped.startswith("{"):
            arguments = stripped  # direct-JSON body, passed on as written
        else:
            params = {}
            for key, is_string, value in _PARAM.findall(body):
                if is_string == "true":
                    params[key] = value
                else:
                    try:
                        params[key] = json.loads(value)
                    except ValueError:
                        params[key] = value
            arguments = json.dumps(params, ensure_ascii=False)
        calls.append({"name": name, "arguments": arguments})
    if not calls:
        return text, []
    normal = text[: match.start()] + text[match.end():]
    return normal.strip("\n"), calls
