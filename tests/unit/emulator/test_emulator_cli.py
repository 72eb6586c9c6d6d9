# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The emulator's command line is SGLang 0.5.23's (sglang_flags.json)."""
import pytest

from sglemu import cli


def test_flag_table_is_sglang_0_5_23():
    spec = cli.load_spec()
    assert spec["sglang_version"] == "0.5.23"
    flags = {f for option in spec["options"] for f in option["flags"]}
    for flag in ("--model-path", "--served-model-name", "--tp-size", "--disaggregation-mode",
                 "--disaggregation-transfer-backend", "--disaggregation-bootstrap-port",
                 "--dist-init-addr", "--mem-fraction-static", "--context-length",
                 "--chat-template", "--reasoning-parser", "--tool-call-parser",
                 "--enable-metrics", "--watchdog-timeout", "--cuda-graph-max-bs-decode"):
        assert flag in flags
    assert "deepseek-v4" in cli.choices_of("reasoning_parser")
    assert "deepseekv4" in cli.choices_of("tool_call_parser")
    assert cli.choices_of("disaggregation_mode") == ["null", "prefill", "decode"]


def test_parse_reference_command_line():
    args = cli.parse_args([
        "--model-path", "/models/DeepSeek-V4-Flash", "--served-model-name", "deepseek-v4-flash",
        "--host", "127.0.0.1", "--port", "30000", "--tp", "4",
        "--disaggregation-mode", "prefill", "--disaggregation-transfer-backend", "nixl",
        "--disaggregation-bootstrap-port", "8998", "--dist-init-addr", "127.0.0.1:30335",
        "--mem-fraction-static", "0.80", "--context-length", "8192",
        "--reasoning-parser", "deepseek-v4", "--tool-call-parser", "deepseekv4",
        "--enable-metrics", "--trust-remote-code"])
    assert (args.tp_size, args.port, args.disaggregation_bootstrap_port) == (4, 30000, 8998)
    assert args.mem_fraction_static == 0.80 and args.context_length == 8192
    assert args.disaggregation_mode == "prefill" and args.enable_metrics


def test_defaults():
    args = cli.parse_args(["--model-path", "m"])
    assert args.served_model_name == "m"
    assert (args.host, args.port, args.tp_size) == ("127.0.0.1", 30000, 1)
    assert (args.disaggregation_mode, args.disaggregation_transfer_backend,
            args.disaggregation_bootstrap_port) == ("null", "mooncake", 8998)
    assert args.reasoning_parser is None and args.tool_call_parser is None


@pytest.mark.parametrize("value, expected", [("8192", 8192), ("8k", 8000), ("1Mi", 1048576),
                                             ("25.6k", 25600)])
def test_human_readable_context_length(value, expected):
    assert cli.parse_args(["--model-path", "m", "--context-length", value]).context_length == \
        expected


@pytest.mark.parametrize("argv", [["--reasoning-parser", "deepseekv4"], ["--bogus"],
                                  ["--tp-size", "four"], ["--cuda-graph-max-bs", "8"]])
def test_rejections_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.parse_args(["--model-path", "m"] + argv)
    assert exc.value.code == 2
    assert argv[0] in capsys.readouterr().err
