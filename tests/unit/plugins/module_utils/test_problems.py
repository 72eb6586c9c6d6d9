# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Problem reports (module_utils/problems.py): one dict per problem, one line each, the report, repeats dropped,
the closest choice suggested, and the environment mappings' checks."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils import problems as P
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.sglang_choices import REASONING_PARSERS


def test_problem_line_and_report():
    item = P.problem("gpu-1", "sglang_decode_instances[d].port", "is required", "give it a port")
    assert item == {"host": "gpu-1", "variable": "sglang_decode_instances[d].port", "message": "is required", "fix": "give it a port"}
    assert P.line(item) == "host gpu-1: sglang_decode_instances[d].port: is required; give it a port"
    assert P.line(P.problem("h", None, "m", None)) == "host h: m"
    assert P.report([item, P.problem("h", "v", "m", "f")]) == (
        "preflight found 2 problem(s):\n- host gpu-1: sglang_decode_instances[d].port: is required; give it a port\n- host h: v: m; f")
    assert P.report([], "the check").startswith("the check found 0 problem(s)")


def test_a_line_of_a_partial_problem():
    assert P.line({"host": "h"}) == "host h: "
    assert P.line({"host": "h", "variable": "v", "message": "m"}) == "host h: v: m"


def test_unique_keeps_the_first_order():
    a, b = P.problem("h", "v", "m", "f"), P.problem("h", "w", "m", "f")
    assert P.unique([a, b, dict(a), b]) == [a, b]
    # a different fix is a different problem
    assert P.unique([a, dict(a, fix="g")]) == [a, dict(a, fix="g")]


def test_suggest():
    assert P.suggest("deepseekv4", REASONING_PARSERS) == " (did you mean 'deepseek-v4'?)"
    assert P.suggest("zzzzzz", REASONING_PARSERS) == ""
    assert P.suggest(8998, ["8999"]) == " (did you mean '8999'?)"
    assert P.suggest("x", []) == ""


def test_a_good_environment_has_no_problem():
    assert P.env_problems("h", "sglang_model_env", {"A": "1", "_B2": "x y", "C": 5, "D": None}) == []


@pytest.mark.parametrize("name", ["2FAST", "WITH-DASH", "WITH SPACE", "", "É"])
def test_a_bad_environment_name(name):
    (problem,) = P.env_problems("gpu", "sglang_model_env", {name: "1"})
    assert problem == {"host": "gpu", "variable": "sglang_model_env.%s" % name,
                       "message": "is not a valid environment variable name",
                       "fix": "use letters, digits and underscores, not starting with a digit"}


def test_a_name_that_is_not_a_string():
    (problem,) = P.env_problems("gpu", "sglang_model_env", {3: "1"})
    assert problem["variable"] == "sglang_model_env.3"


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\0b", "a\tb", "a\x1bb", "a\x7fb"])
def test_a_value_that_does_not_fit_one_line(value):
    (problem,) = P.env_problems("gpu", "sglang_decode_instances[d].env", {"A": value})
    assert (problem["variable"], problem["message"]) == ("sglang_decode_instances[d].env.A",
                                                         "holds a line break, NUL, tab or other control character")


def test_every_bad_variable_is_reported_in_name_order():
    problems = P.env_problems("gpu", "e", {"Z-1": "1", "B": "x\ny", "A": "ok", "9": "1"})
    assert [p["variable"] for p in problems] == ["e.9", "e.B", "e.Z-1"]
