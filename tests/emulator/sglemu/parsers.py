"""Reasoning and tool-call parsing as SGLang 0.5.23's configured parsers do it.

Follows ``sglang/srt/parser/reasoning_parser.py`` (BaseReasoningFormatDetector with the
DeepSeek detectors) and ``sglang/srt/function_call/deepseekv32_detector.py`` (the DSML parser the
``deepseekv4`` and ``deepseekv32`` tool-call parsers share), for the text the emulated model emits.
"""
import json
import re
import uuid

from . import model

# reasoning parser name -> how serving_chat decides force_reasoning for a request
#   explicit_thinking: chat_template_kwargs.thinking is True   (deepseek-v3/v4/v41)
#   always:            always                                  (deepseek-r1 family)
#   detect:            only when the output holds <think>       (the other <think> parsers)
REASONING_MODES = {
    "deepseek-v4": "explicit_thinking",
    "deepseek-v41": "explicit_thinking",
    "deepseek-v3": "explicit_thinking",
    "deepseek-r1": "always",
    "step3": "always",
    "step3p5": "always",
    "gigachat35": "always",
}
# tool-call parser -> DSML block name it recognises (deepseekv41 spells its tags " calls",
# " invoke", ...: it does not parse DeepSeek-V4 output)
DSML_BLOCKS = {"deepseekv4": "tool_calls", "deepseekv32": "function_calls"}

_D = model.DSML
_INVOKE = re.compile(r'<%sinvoke\s+name="(?P<name>[^"]+)"\s*(?:(?P<self_close>/>)|>(?P<body>.*?)'
                     r'(?P<end>(?:</%sinvoke>|$)))' % (re.escape(_D), re.escape(_D)), re.DOTALL)
_PARAM = re.compile(r'<%sparameter\s+name="([^"]+)"\s+string="([^"]+)"\s*>(.*?)</%sparameter>'
                    % (re.escape(_D), re.escape(_D)), re.DOTALL)


def new_call_id():
    """Tool-call id as serving_chat makes it: ``call_`` + 24 hex digits."""
    return "call_" + uuid.uuid4().hex[:24]


def thinking_requested(body):
    kwargs = body.get("chat_template_kwargs") or {}
    return kwargs.get("thinking") is True


def split_reasoning(text, reasoning_parser, body):
    """(reasoning text or None, normal text) for a finished output.

    Applied only when a reasoning parser is configured and the request keeps
    ``separate_reasoning`` (default true; the router always sends true).
    """
    if not reasoning_parser or not body.get("separate_reasoning", True):
        return None, text
    mode = REASONING_MODES.get(reasoning_parser, "detect")
    if mode == "always":
        force = True
    elif mode == "explicit_thinking":
        force = thinking_requested(body)
    else:
        force = False
    if not force and model.THINK_START not in text:
        return None, text
    rest = text
    while rest.startswith(model.THINK_START):
        rest = rest[len(model.THINK_START):]
    if model.THINK_END not in rest:
        return rest, ""  # truncated before </think>: everything is reasoning
    reasoning, normal = rest.split(model.THINK_END, 1)
    return reasoning, normal


def tool_parsing_active(tool_call_parser, body):
    return bool(tool_call_parser and body.get("tools") and body.get("tool_choice") != "none")


def _parameters(body):
    """Arguments JSON text of one invoke body, or raise ValueError (invoke dropped)."""
    stripped = body.strip()
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            # DELIBERATE DIFFERENCE: SGLang 0.5.23 drops an invoke whose direct-JSON body does
            # not parse; the emulator hands the text on as the arguments so that clients'
            # "arguments are JSON" checks can be exercised (SGLANG_EMULATOR_TOOL_ARGS).
            return stripped
        if not isinstance(parsed, dict):
            raise ValueError("DeepSeek tool arguments must be a JSON object")
        return stripped
    params = {}
    leftover = []
    last = 0
    matches = list(_PARAM.finditer(body))
    for match in matches:
        leftover.append(body[last:match.start()])
        last = match.end()
        name, is_string, value = match.groups()
        if is_string == "true":
            params[name] = value.strip()
        else:
            try:
                params[name] = json.loads(value.strip())
            except ValueError:
                params[name] = value.strip()
    leftover.append(body[last:])
    rest = "".join(leftover)
    if _D in rest or (not matches and rest.strip()):
        raise ValueError("Malformed DeepSeek tool parameter")
    return json.dumps(params, ensure_ascii=False)


def parse_tool_calls(text, tool_call_parser, body, forward_unknown=False):
    """(normal text, [{"name", "arguments"}], parsed) as serving_chat's tool-call step returns.

    ``parsed`` is False when the parser did not run (no parser, no tools, no DSML marker): the
    text is then returned unchanged. When DSML is present the block is removed from the text
    even if no call survives (unknown tool names are skipped unless forward_unknown).
    """
    block = DSML_BLOCKS.get(tool_call_parser)
    if block is None or not tool_parsing_active(tool_call_parser, body):
        return text, [], False
    bot = "<%s%s>" % (_D, block)
    invoke_start = "<%sinvoke" % _D
    if bot not in text and invoke_start not in text:
        return text, [], False
    idx = text.find(bot)
    if idx != -1:
        normal = text[:idx]
        if normal.endswith("\n\n"):
            normal = normal[:-2]
        sections = re.findall(r"%s(.*?)</%s%s>" % (re.escape(bot), re.escape(_D), block), text,
                              re.DOTALL)
    else:
        start = text.find(invoke_start)
        normal = text[:text.find(_D) - 1] if text.find(_D) >= 1 else text[:start]
        if normal.endswith("\n\n"):
            normal = normal[:-2]
        sections = [text[start:]]
    offered = set()
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name"):
            offered.add(function["name"])
    calls = []
    for section in sections:
        for match in _INVOKE.finditer(section):
            name = match.group("name").strip()
            if match.group("self_close"):
                arguments = "{}"
            else:
                if not match.group("end"):
                    continue  # unclosed invoke: dropped
                try:
                    arguments = _parameters(match.group("body"))
                except ValueError:
                    continue
            if name not in offered and not forward_unknown:
                continue  # "Model attempted to call undefined function"
            calls.append({"name": name, "arguments": arguments})
    return normal, calls, True
