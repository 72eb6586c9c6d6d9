# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""sglang_flag_check through main(), exit_json/fail_json patched.

The module really runs an interpreter (this one) with its checker; SGLang itself is a small fake
package on `pythonpath` whose ServerArgs.add_cli_args fills the parser the way SGLang's does (flags
with choices, a required --model-path, a choice that depends on an environment variable). The real
SGLang 0.5.23 is checked by the molecule scenario extensions/molecule/sglang_install.
"""

import functools
import sys
import textwrap

import pytest

from ansible_collections.pdserve.sglang.plugins.modules import sglang_flag_check

FAKE_SERVER_ARGS = textwrap.dedent('''
    import os

    class ServerArgs:
        @staticmethod
        def add_cli_args(parser):
            parser.add_argument("--model-path", "--model", dest="model_path", required=True)
            parser.add_argument("--tp-size", type=int, default=1)
            parser.add_argument("--mem-fraction-static", type=float)
            parser.add_argument("--disaggregation-mode", choices=["null", "prefill", "decode"], default="null")
            parser.add_argument("--reasoning-parser", choices=["auto", "deepseek-r1", "deepseek-v3", "deepseek-v4"])
            parser.add_argument("--tool-call-parser", choices=["auto", "deepseekv3", "deepseekv32", "deepseekv4"])
            sampling = ["flashinfer", "pytorch"]
            if os.environ.get("FAKE_SGLANG_EXTRA_SAMPLING"):
                sampling.append("token_oracle")
            parser.add_argument("--sampling-backend", choices=sampling)
            parser.add_argument("--enable-metrics", action="store_true")
            print("noise on stdout while building the parser")
''')

GOOD = ["--model-path", "/models/m", "--tp-size", 4, "--mem-fraction-static", 0.8,
        "--disaggregation-mode", "prefill", "--reasoning-parser", "deepseek-v4",
        "--tool-call-parser", "deepseekv4", "--enable-metrics"]


@pytest.fixture
def fake_sglang(tmp_path):
    root = tmp_path / "site"
    srt = root / "sglang" / "srt"
    srt.mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text('__version__ = "0.5.23"\nprint("import noise")\n')
    (srt / "__init__.py").write_text("")
    (srt / "server_args.py").write_text(FAKE_SERVER_ARGS)
    return str(root)


@pytest.fixture
def run(module_runner):
    """run(args) -> (result, failed), through sglang_flag_check.main() (conftest.module_runner)."""
    return functools.partial(module_runner, sglang_flag_check.main)


def lines(*items):
    return [{"name": name, "argv": argv} for name, argv in items]


def test_accepts_valid_command_lines(fake_sglang, run):
    result, failed = run({"python": sys.executable, "pythonpath": [fake_sglang],
                          "command_lines": lines(("prefill", GOOD), ("decode", GOOD[:-1]))})
    assert not failed, result
    assert result["changed"] is False
    assert result["invalid"] == []
    assert [r["valid"] for r in result["results"]] == [True, True]
    assert result["sglang_version"] == "0.5.23"


def test_misspelled_parser_value_fails_naming_flag_and_suggestion(fake_sglang, run):
    bad = [w if w != "deepseek-v4" else "deepseekv4" for w in GOOD]
    result, failed = run({"python": sys.executable, "pythonpath": [fake_sglang],
                          "command_lines": lines(("prefill", GOOD), ("decode", bad))})
    assert failed
    assert result["invalid"] == ["decode"]
    decode = result["results"][1]
    assert decode["valid"] is False
    assert decode["flag"] == "--reasoning-parser"
    assert decode["suggestion"] == "deepseek-v4"
    assert "invalid choice: 'deepseekv4'" in decode["error"]
    assert "decode: argument --reasoning-parser" in result["msg"]
    assert "did you mean deepseek-v4?" in result["msg"]
    assert result["results"][0]["valid"] is True


def test_unknown_flag_fails_with_closest_flag(fake_sglang, run):
    bad = [w if w != "--tool-call-parser" else "--tool-call-parsr" for w in GOOD]
    result, failed = run({"python": sys.executable, "pythonpath": [fake_sglang],
                          "command_lines": lines(("prefill", bad))})
    assert failed
    entry = result["results"][0]
    assert entry["flag"] == "--tool-call-parsr"
    assert entry["suggestion"] == "--tool-call-parser"
    assert "unrecognized arguments" in entry["error"]


def test_missing_required_flag_and_bad_type(fake_sglang, run):
    result, failed = run({"python": sys.executable, "pythonpath": [fake_sglang],
                          "command_lines": lines(("no-model", ["--tp-size", "4"]),
                                                 ("bad-type", ["--model-path", "/m", "--tp-size", "four"]))})
    assert failed
    first, second = result["results"]
    assert first["flag"] == "--model-path" and "required" in first["error"]
    assert second["flag"] == "--tp-size" and "invalid int value" in second["error"]


def test_help_is_not_a_server_flag(fake_sglang, run):
    result, failed = run({"python": sys.executable, "pythonpath": [fake_sglang],
                          "command_lines": lines(("help", ["--model-path", "/m", "--help"]))})
    assert failed
    assert "--help" in result["results"][0]["error"]


def test_environment_reaches_the_parser(fake_sglang, run):
    argv = ["--model-path", "/m", "--sampling-backend", "token_oracle"]
    result, failed = run({"python": sys.executable, "pythonpath": [fake_sglang],
                          "command_lines": lines(("oracle", argv))})
    assert failed
    assert result["results"][0]["flag"] == "--sampling-backend"
    result, failed = run({"python": sys.executable, "pythonpath": [fake_sglang],
                          "environment": {"FAKE_SGLANG_EXTRA_SAMPLING": "1"},
                          "command_lines": lines(("oracle", argv))})
    assert not failed, result


def test_without_sglang_fails_saying_so(tmp_path, run):
    result, failed = run({"python": sys.executable, "pythonpath": [str(tmp_path)],
                          "command_lines": lines(("prefill", GOOD))})
    assert failed
    assert "cannot import SGLang's argument parser" in result["msg"]
    assert "sglang" in result["msg"]


def test_missing_interpreter_fails_before_running(tmp_path, run):
    result, failed = run({"python": str(tmp_path / "venv" / "bin" / "python"),
                          "command_lines": lines(("prefill", GOOD))})
    assert failed
    assert "is not an executable Python" in result["msg"]


def test_nested_values_are_rejected(fake_sglang, run):
    result, failed = run({"python": sys.executable, "pythonpath": [fake_sglang],
                          "command_lines": lines(("prefill", ["--model-path", ["/m"]]))})
    assert failed
    assert "not a word" in result["msg"]


# --- parser=router: the real sglang-router 0.3.2 installed in this venv, the collection's own line ---

def _router_argv(**settings):
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import argv, credential_lines, router_args, worker_lines
    router = {"host": "0.0.0.0", "port": 30001, "prometheus_host": "127.0.0.1", "prometheus_port": 29000}
    workers = {"prefill": [{"url": "http://10.0.0.11:30000", "bootstrap_port": 8998},
                           {"url": "http://10.0.0.11:30010", "bootstrap_port": 8999}],
               "decode": [{"url": "http://10.0.0.21:30002"}]}
    base = {"policy": "cache_aware", "request_timeout_secs": 1800, "worker_startup_timeout_secs": 1800,
            "worker_startup_check_interval": 2, "health_check_interval_secs": 10, "health_failure_threshold": 2,
            "health_success_threshold": 1, "health_check_timeout_secs": 5, "retry_max_retries": 3,
            "cb_failure_threshold": 10, "cb_success_threshold": 2, "cb_timeout_duration_secs": 20,
            "disable_circuit_breaker": False, "log_level": "info"}
    base.update(settings, api_key="k", control_plane_api_key="c")
    # As the role checks it: the launcher's key flags with placeholders.
    return argv(worker_lines(workers) + router_args(router, base) + credential_lines(base))


def test_router_parser_accepts_every_flag_the_collection_renders(run):
    result, failed = run({"python": sys.executable, "parser": "router", "router_implementation": "sglang-router",
                          "command_lines": lines(("router", _router_argv()),
                                                 ("switches", _router_argv(disable_circuit_breaker=True,
                                                                           disable_retries=True)))})
    assert not failed, result
    assert result["sglang_version"] == "0.3.2"
    assert "sglang-router 0.3.2 accepts all 2 command line(s)" == result["msg"]


def test_router_parser_rejects_a_bad_policy_with_a_suggestion(run):
    result, failed = run({"python": sys.executable, "parser": "router", "router_implementation": "sglang-router",
                          "command_lines": lines(("router", _router_argv(policy="cache-aware")))})
    assert failed
    entry = result["results"][0]
    assert entry["flag"] == "--policy" and entry["suggestion"] == "cache_aware", entry
    assert result["msg"].startswith("sglang-router 0.3.2 rejects 1 of 1 command line(s): router: argument --policy")


def test_router_parser_rejects_an_unknown_extra_flag(run):
    result, failed = run({"python": sys.executable, "parser": "router", "router_implementation": "sglang-router",
                          "command_lines": lines(("router", _router_argv(extra_args=["--health-check-intervall", "5"])))})
    assert failed
    assert result["results"][0]["suggestion"] == "--health-check-interval-secs", result["results"][0]


# --- router_implementation=smg: the real smg 1.13.0 installed beside sglang-router, its own parser ---

def test_smg_parser_accepts_every_flag_the_collection_renders(run):
    result, failed = run({"python": sys.executable, "parser": "router", "router_implementation": "smg",
                          "command_lines": lines(("router", _router_argv()),
                                                 ("switches", _router_argv(disable_circuit_breaker=True,
                                                                           disable_retries=True)))})
    assert not failed, result
    # The distribution's version (smg 1.13.0's smg.version module still says 1.1.0).
    assert result["sglang_version"] == "1.13.0"
    assert "smg 1.13.0 accepts all 2 command line(s)" == result["msg"]


def test_smg_parser_rejects_a_bad_policy_with_a_suggestion(run):
    result, failed = run({"python": sys.executable, "parser": "router", "router_implementation": "smg",
                          "command_lines": lines(("router", _router_argv(policy="cache-aware")))})
    assert failed
    entry = result["results"][0]
    assert entry["flag"] == "--policy" and entry["suggestion"] == "cache_aware", entry
    assert result["msg"].startswith("smg 1.13.0 rejects 1 of 1 command line(s): router: argument --policy")


def test_each_implementation_judges_by_its_own_parser(run):
    """A flag only smg knows (worker overload protection) passes smg's parser and fails sglang-router's: the check asks the chosen one."""
    argv = _router_argv(extra_args=["--worker-overload-protection"])
    smg, smg_failed = run({"python": sys.executable, "parser": "router", "router_implementation": "smg",
                           "command_lines": lines(("router", argv))})
    old, old_failed = run({"python": sys.executable, "parser": "router", "router_implementation": "sglang-router",
                           "command_lines": lines(("router", argv))})
    assert not smg_failed, smg
    assert old_failed and old["results"][0]["flag"] == "--worker-overload-protection", old


def test_router_parser_needs_the_implementation_named(run):
    # The router role says which router it runs; the module has no default of its own to drift from the role's.
    result, failed = run({"python": sys.executable, "parser": "router", "command_lines": lines(("router", _router_argv()))})
    assert failed
    assert "router_implementation" in result["msg"], result
