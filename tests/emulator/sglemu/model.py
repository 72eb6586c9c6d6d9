"""The emulated model: deterministic DeepSeek-V4-style raw output.

Semantics (the contract in tests/emulator/README.md, relied on by validate_chat):
- the last user message containing ``<int> <op> <int>`` (op among + - * /) answers the integer
  result; any other message gets FIXED_ANSWER;
- thinking on: ``<think>\\n<reasoning>\\n</think><answer>`` (DeepSeek's encoding puts the answer
  right after ``</think>``; a tool-call block follows a blank line); off: the answer only;
- tools offered (tool_choice not "none"): DSML tool calls for the entities of the message, after the
  optional thinking block; nothing matched: the plain answer.
"""
import json
import os
import re

DSML = "\uff5cDSML\uff5c"  # ｜DSML｜ with U+FF5C
THINK_START = "<think>"
THINK_END = "</think>"
FIXED_ANSWER = "I am an emulated DeepSeek-V4 model served by the SGLang emulator."
TOOL_KEYWORD_STOPWORDS = {"get", "set", "fetch", "lookup"}

_ARITH = re.compile(r"(-?\d+)\s*([+\-*/])\s*(-?\d+)")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")


def message_text(message):
    """Text of an OpenAI message content (string or list of parts)."""
    content = message.get("content") if isinstance(message, dict) else None
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        elif isinstance(part, str):
            parts.append(part)
    return "".join(parts)


def last_user_text(messages):
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message)
    return ""


def arithmetic(text):
    """(a, op, b, result) for the first ``<int> <op> <int>`` in text, else None."""
    match = _ARITH.search(text or "")
    if not match:
        return None
    a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
    if op == "+":
        result = a + b
    elif op == "-":
        result = a - b
    elif op == "*":
        result = a * b
    else:
        if b == 0:
            return None
        result = a // b if a % b == 0 else round(a / b, 6)
    return a, op, b, result


def answer_for(text):
    arith = arithmetic(text)
    if arith is None:
        return FIXED_ANSWER
    return str(arith[3])


def reasoning_for(text):
    arith = arithmetic(text)
    if arith is None:
        return ("The user wants a short reply. I will introduce myself in one sentence.")
    a, op, b, result = arith
    return (
        "The user asks for %d %s %d. Let me compute it step by step. "
        "%d %s %d = %s. The user wants the number only." % (a, op, b, a, op, b, result)
    )


def tool_keywords(name):
    words = [w for w in re.split(r"[_\-\s.]+|(?<=[a-z])(?=[A-Z])", name or "") if w]
    return [w.lower() for w in words if w.lower() not in TOOL_KEYWORD_STOPWORDS]


def entities_with_positions(text):
    """Capitalized words that do not start a sentence, with their word index."""
    result = []
    sentence_start = True
    for index, match in enumerate(_WORD.finditer(text or "")):
        word = match.group(0)
        if word[0].isupper() and not sentence_start:
            result.append((index, word))
        # the next word starts a sentence if the text between this word and the next
        # holds a sentence end
        tail = text[match.end():]
        nxt = _WORD.search(tail)
        between = tail[: nxt.start()] if nxt else tail
        sentence_start = bool(re.search(r"[.!?]", between))
    return result


def _function(tool):
    if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
        return tool["function"]
    return tool if isinstance(tool, dict) else {}


def _value_for(schema):
    if not isinstance(schema, dict):
        return "x"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}.get(kind, "x")


def plan_tool_calls(text, tools, tool_choice=None):
    """[(name, {param: value})] the model calls for this message, in order."""
    if not tools or tool_choice == "none":
        return []
    functions = [_function(t) for t in tools]
    functions = [f for f in functions if f.get("name")]
    if isinstance(tool_choice, dict):
        wanted = (tool_choice.get("function") or {}).get("name")
        functions = [f for f in functions if f.get("name") == wanted]
    words = [m.group(0).lower() for m in _WORD.finditer(text or "")]
    keyword_positions = []  # (word index, function)
    for function in functions:
        keys = tool_keywords(function["name"])
        for index, word in enumerate(words):
            if word in keys:
                keyword_positions.append((index, function))
    calls = []
    seen = set()
    for index, entity in entities_with_positions(text):
        before = [kp for kp in keyword_positions if kp[0] < index]
        if not before:
            continue
        function = max(before, key=lambda kp: kp[0])[1]
        key = (function["name"], entity)
        if key in seen:
            continue
        params = function.get("parameters") or {}
        props = params.get("properties") or {}
        required = [r for r in (params.get("required") or []) if r in props] or []
        string_params = [p for p in required if (props[p] or {}).get("type", "string") == "string"
                         and not (props[p] or {}).get("enum")]
        if not string_params:
            string_params = [p for p, s in props.items()
                             if (s or {}).get("type", "string") == "string"]
        if not string_params:
            continue
        seen.add(key)
        args = {}
        for name in required:
            args[name] = entity if name == string_params[0] else _value_for(props[name])
        if string_params[0] not in args:
            args[string_params[0]] = entity
        calls.append((function["name"], args))
    return calls


def render_dsml(calls, style="json"):
    """DSML tool-call block as DeepSeek-V4 emits it."""
    lines = ["<%stool_calls>" % DSML]
    for name, args in calls:
        lines.append('<%sinvoke name="%s">' % (DSML, name))
        if style == "invalid_json":
            # the direct-JSON invoke body (DSML "format 2"), cut short: a trailing comma and
            # no closing brace, so the arguments the parser passes on are not valid JSON
            lines.append(json.dumps(args)[:-1] + ",")
            lines.append("</%sinvoke>" % DSML)
            continue
        for key, value in args.items():
            if isinstance(value, str):
                lines.append('<%sparameter name="%s" string="true">%s</%sparameter>'
                             % (DSML, key, value, DSML))
            else:
                lines.append('<%sparameter name="%s" string="false">%s</%sparameter>'
                             % (DSML, key, json.dumps(value), DSML))
        lines.append("</%sinvoke>" % DSML)
    lines.append("</%stool_calls>" % DSML)
    return "\n".join(lines)


def render_v3(calls):
    """The older DeepSeek-V3 tool tokens (not parsed by the deepseekv4 parser)."""
    out = ["<\uff5ctool\u2581calls\u2581begin\uff5c>"]
    for name, args in calls:
        out.append("<\uff5ctool\u2581call\u2581begin\uff5c>function<\uff5ctool\u2581sep\uff5c>%s\n"
                   "```json\n%s\n```<\uff5ctool\u2581call\u2581end\uff5c>" % (name, json.dumps(args)))
    out.append("<\uff5ctool\u2581calls\u2581end\uff5c>")
    return "".join(out)


def generate(state, env=None):
    """Raw model output for a request state recorded by the chat template / prefill."""
    env = os.environ if env is None else env
    if state.get("kind") == "generate":
        return answer_for(state.get("text", ""))
    text = last_user_text(state.get("messages"))
    thinking = bool(state.get("thinking"))
    head = ""
    if thinking:
        head = "%s\n%s\n%s" % (THINK_START, reasoning_for(text), THINK_END)
    calls = plan_tool_calls(text, state.get("tools"), state.get("tool_choice"))
    if calls:
        head += "\n\n" if head else ""
        override = env.get("SGLANG_EMULATOR_TOOL_NAME")
        if override:
            calls = [(override, args) for dummy_name, args in calls]
        if env.get("SGLANG_EMULATOR_TOOL_FORMAT") == "v3":
            return head + render_v3(calls)
        style = "invalid_json" if env.get("SGLANG_EMULATOR_TOOL_ARGS") == "invalid_json" else "json"
        return head + render_dsml(calls, style)
    return head + answer_for(text)


def count_tokens(text):
    """A rough token count (words and punctuation), stable across calls."""
    return max(1, len(re.findall(r"\w+|[^\w\s]", text or "")))


def split_tokens(text):
    """Split text into streaming pieces (whitespace kept with the following word)."""
    return re.findall(r"\s*[^\s<]+|\s*<[^>]*>?|\s+", text or "") or [""]
