# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The emulated model's deterministic output and the emulator's parsers."""
import json

import pytest

from sglemu import model, parsers

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}}}
BOOKING = {"type": "function", "function": {"name": "book_hotel", "parameters": {
    "type": "object", "required": ["city", "nights", "budget", "breakfast", "room"],
    "properties": {"city": {"type": "string"}, "nights": {"type": "integer"},
                   "budget": {"type": "number"}, "breakfast": {"type": "boolean"},
                   "room": {"type": "string", "enum": ["single", "double"]}}}}}


def chat_state(text, tools=None, thinking=False):
    return {"kind": "chat", "messages": [{"role": "system", "content": "Be brief. 2+2"},
                                         {"role": "user", "content": text}],
            "tools": tools, "thinking": thinking}


@pytest.mark.parametrize("text, answer", [
    ("What is 17*23? Number only.", "391"),
    ("compute 100 - 58", "42"),
    ("12 + 30 please", "42"),
    ("84/2", "42"),
    ("Hello there", model.FIXED_ANSWER),
])
def test_answers(text, answer):
    assert model.generate(chat_state(text), env={}) == answer


def test_last_user_message_counts():
    state = chat_state("Hello")
    state["messages"].append({"role": "assistant", "content": "hi"})
    state["messages"].append({"role": "user", "content": [{"type": "text", "text": "6*7"}]})
    assert model.generate(state, env={}) == "42"


def test_thinking_block():
    raw = model.generate(chat_state("What is 17*23?", thinking=True), env={})
    assert raw.startswith("<think>\n") and raw.endswith("</think>391")


def test_entities_skip_sentence_starts():
    text = "Paris is nice. Weather in Rome? And in Oslo!"
    assert [e for dummy_index, e in model.entities_with_positions(text)] == ["Rome", "Oslo"]


def test_tool_plan_assigns_entities_to_last_keyword():
    plan = model.plan_tool_calls("What is the weather in Paris and the time in Tokyo?",
                                 [WEATHER, TIME])
    assert plan == [("get_weather", {"city": "Paris"}), ("get_time", {"timezone": "Tokyo"})]
    plan = model.plan_tool_calls("the weather in Paris and in Berlin and Paris", [WEATHER])
    assert plan == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Berlin"})]


def test_tool_plan_fills_required_parameters_by_type():
    plan = model.plan_tool_calls("Please book a hotel in Lisbon", [BOOKING])
    assert plan == [("book_hotel", {"city": "Lisbon", "nights": 1, "budget": 1.0,
                                    "breakfast": True, "room": "single"})]


def test_no_tools_when_tool_choice_none_or_nothing_matches():
    assert model.plan_tool_calls("weather in Paris", [WEATHER], "none") == []
    assert model.plan_tool_calls("What is 2+2?", [WEATHER]) == []
    assert model.generate(chat_state("weather in paris", [WEATHER]), env={}) == \
        model.FIXED_ANSWER


def test_dsml_round_trip_through_the_parser():
    raw = model.generate(chat_state("Weather in Paris and in Berlin", [WEATHER],
                                    thinking=True), env={})
    assert "\uff5cDSML\uff5c" in raw
    body = {"tools": [WEATHER], "chat_template_kwargs": {"thinking": True}}
    reasoning, normal = parsers.split_reasoning(raw, "deepseek-v4", body)
    assert reasoning.strip()
    text, calls, parsed = parsers.parse_tool_calls(normal, "deepseekv4", body)
    assert parsed and text == ""
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Berlin"})]


@pytest.mark.parametrize("parser, found", [("deepseekv4", 1), ("deepseekv32", 1),
                                           ("deepseekv41", 0), ("deepseekv3", 0), (None, 0)])
def test_which_tool_parsers_read_dsml(parser, found):
    raw = model.generate(chat_state("weather in Paris", [WEATHER]), env={})
    text, calls, dummy_parsed = parsers.parse_tool_calls(raw, parser, {"tools": [WEATHER]})
    assert len(calls) == found
    assert (text == raw) == (found == 0)


def test_tool_parsing_needs_tools_in_request():
    raw = model.generate(chat_state("weather in Paris", [WEATHER]), env={})
    assert parsers.parse_tool_calls(raw, "deepseekv4", {"tools": None})[1] == []
    body = {"tools": [WEATHER], "tool_choice": "none"}
    assert parsers.parse_tool_calls(raw, "deepseekv4", body)[1] == []


@pytest.mark.parametrize("reasoning_parser, body, expect_split", [
    ("deepseek-v4", {"chat_template_kwargs": {"thinking": True}}, True),
    ("deepseek-v4", {"chat_template_kwargs": {"thinking": True},
                     "separate_reasoning": False}, False),
    (None, {"chat_template_kwargs": {"thinking": True}}, False),
    ("qwen3", {"chat_template_kwargs": {"thinking": True}}, True),
])
def test_reasoning_split(reasoning_parser, body, expect_split):
    raw = "<think>\nsteps\n</think>391"
    reasoning, normal = parsers.split_reasoning(raw, reasoning_parser, body)
    if expect_split:
        assert (reasoning, normal) == ("\nsteps\n", "391")
    else:
        assert (reasoning, normal) == (None, raw)


def test_forced_reasoning_without_think_tags():
    # deepseek-v4 with thinking requested treats output as reasoning until </think>
    assert parsers.split_reasoning("391", "deepseek-v4",
                                   {"chat_template_kwargs": {"thinking": True}}) == ("391", "")
    assert parsers.split_reasoning("391", "deepseek-v4", {}) == (None, "391")
    assert parsers.split_reasoning("391", "deepseek-r1", {}) == ("391", "")


def test_split_tokens_keeps_text():
    raw = model.generate(chat_state("Weather in Paris", [WEATHER], thinking=True), env={})
    pieces = model.split_tokens(raw)
    assert "".join(pieces) == raw and len(pieces) > 10


def test_call_ids():
    ids = {parsers.new_call_id() for dummy_i in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 29 and i.startswith("call_") and int(i[5:], 16) >= 0 for i in ids)
