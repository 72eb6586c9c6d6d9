# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The choices of the pinned SGLang (module_utils/serving/sglang_choices.py): the version they were read from, the
names the reference deployment uses, and a parser table that only names known parsers."""

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import sglang_choices as SC
from serving_support import MODEL, shared_defaults  # noqa: E402  pylint: disable=wrong-import-position


def test_the_choices_are_those_of_the_pinned_version():
    assert shared_defaults()["sglang_install_version"] == SC.SGLANG_VERSION


def test_the_reference_model_s_names_are_choices():
    assert MODEL["reasoning_parser"] in SC.REASONING_PARSERS
    assert MODEL["tool_call_parser"] in SC.TOOL_CALL_PARSERS
    assert MODEL["transfer_backend"] in SC.TRANSFER_BACKENDS
    assert MODEL["tool_call_parser"] in SC.PARSER_PAIRS[MODEL["reasoning_parser"]]


def test_each_list_names_a_choice_once():
    for choices in (SC.REASONING_PARSERS, SC.TOOL_CALL_PARSERS, SC.TRANSFER_BACKENDS):
        assert len(set(choices)) == len(choices)
        assert all(isinstance(c, str) and c == c.strip() and c for c in choices)


def test_every_paired_parser_is_a_known_choice():
    for reasoning, tools in SC.PARSER_PAIRS.items():
        assert reasoning in SC.REASONING_PARSERS, reasoning
        assert set(tools) <= set(SC.TOOL_CALL_PARSERS), (reasoning, tools)
        assert tools and len(set(tools)) == len(tools), reasoning


def test_the_deepseek_v4_reasoning_parser_does_not_pair_with_the_v3_tool_parser():
    """The confusion users report (sgl-project/sglang#14690): V4 reasoning with V3 tools leaves calls in content."""
    assert "deepseekv3" not in SC.PARSER_PAIRS["deepseek-v4"]
    assert SC.PARSER_PAIRS["deepseek-v4"][0] == "deepseekv4"


def test_parsers_that_pair_with_anything_are_not_in_the_table():
    for name in ("auto", "response_template"):
        assert name in SC.REASONING_PARSERS and name not in SC.PARSER_PAIRS
