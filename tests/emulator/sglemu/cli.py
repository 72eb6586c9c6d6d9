"""Command line of the emulator: the launch_server flags the collection renders.

Spellings and choices follow sglang 0.5.23 ``python/sglang/srt/server_args.py``.  Unknown
flags and values outside the choices exit 2 with argparse's message, as SGLang's parser does.
"""
import argparse

REASONING_PARSERS = [
    "auto", "apertus2509", "beam", "deepseek-r1", "deepseek-v3", "deepseek-v4", "deepseek-v41",
    "dots", "glm45", "ling3", "hunyuan", "gpt-oss", "k2_horizon", "kimi", "kimi_k2", "kimi_k3",
    "mimo", "muse", "poolside_v1", "qwen3", "qwen3-thinking", "minimax", "minimax-append-think",
    "minimax-m3", "nanbeige", "step3", "step3p5", "mistral", "nemotron_3",
    "granite_thinking_parser", "interns1", "gemma4", "inkling", "iquest_q1", "cohere_command4",
    "gigachat35", "response_template",
]

TOOL_CALL_PARSERS = [
    "auto", "apertus2509", "beam", "cohere_command4", "deepseekv3", "deepseekv31", "deepseekv32",
    "deepseekv4", "deepseekv41", "dots", "glm", "glm45", "glm47", "gpt-oss", "k2_horizon",
    "kimi_k2", "kimi_k3", "lfm2", "ling3", "llama3", "mimo", "minicpm5", "mistral", "muse",
    "poolside_v1", "pythonic", "qwen", "qwen25", "qwen3_coder", "spark25", "step3", "step3p5",
    "minimax-m2", "minimax-m3", "nanbeige", "trinity", "interns1", "hermes", "hunyuan",
    "gigachat3", "gigachat35", "gemma4", "inkling", "iquest_q1", "response_template",
]

DISAGGREGATION_MODES = ["null", "prefill", "decode"]
TRANSFER_BACKENDS = ["mooncake", "nixl", "ascend", "fake", "mori", "mooncake_tcp"]
LOAD_FORMATS = [
    "auto", "pt", "safetensors", "npcache", "dummy", "sharded_state", "gguf", "bitsandbytes",
    "layered", "remote", "remote_instance", "fastsafetensors", "private", "runai_streamer",
]
LOG_LEVELS = ["debug", "info", "warning", "error", "critical"]

# Accepted and ignored: (flag, takes a value).  Listed in README.md.
PASS_THROUGH = [
    ("--tokenizer-path", True),
    ("--tokenizer-mode", True),
    ("--revision", True),
    ("--dtype", True),
    ("--quantization", True),
    ("--chunked-prefill-size", True),
    ("--max-prefill-tokens", True),
    ("--max-total-tokens", True),
    ("--schedule-policy", True),
    ("--schedule-conservativeness", True),
    ("--stream-interval", True),
    ("--random-seed", True),
    ("--dp-size", True),
    ("--ep-size", True),
    ("--pp-size", True),
    ("--nnodes", True),
    ("--node-rank", True),
    ("--base-gpu-id", True),
    ("--moe-a2a-backend", True),
    ("--sampling-backend", True),
    ("--grammar-backend", True),
    ("--disaggregation-ib-device", True),
    ("--disaggregation-decode-tp", True),
    ("--disaggregation-prefill-pp", True),
    ("--enable-dp-attention", False),
    ("--enable-torch-compile", False),
    ("--disable-radix-cache", False),
    ("--enable-cache-report", False),
    ("--log-requests", False),
    ("--show-time-cost", False),
    ("--numa-node", True),
]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="sglang_emulator.py",
        description="GPU-free SGLang server emulator (launch_server flags).",
        allow_abbrev=False,
    )
    parser.add_argument("--model-path", "--model", dest="model_path", required=True)
    parser.add_argument("--served-model-name", default=None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--tp-size", "--tensor-parallel-size", "--tp", dest="tp_size", type=int,
                        default=1)
    parser.add_argument("--disaggregation-mode", choices=DISAGGREGATION_MODES, default="null")
    parser.add_argument("--disaggregation-transfer-backend", choices=TRANSFER_BACKENDS,
                        default="mooncake")
    parser.add_argument("--disaggregation-bootstrap-port", type=int, default=8998)
    parser.add_argument("--dist-init-addr", "--nccl-init-addr", dest="dist_init_addr",
                        default=None)
    parser.add_argument("--mem-fraction-static", type=float, default=None)
    parser.add_argument("--context-length", type=int, default=None)
    parser.add_argument("--chat-template", default=None)
    parser.add_argument("--reasoning-parser", choices=REASONING_PARSERS, default=None)
    parser.add_argument("--tool-call-parser", choices=TOOL_CALL_PARSERS, default=None)
    parser.add_argument("--enable-metrics", action="store_true")
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.add_argument("--load-format", choices=LOAD_FORMATS, default="auto")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="info")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--skip-server-warmup", action="store_true")
    parser.add_argument("--page-size", type=int, default=None)
    parser.add_argument("--attention-backend", default=None)
    parser.add_argument("--kv-cache-dtype", default="auto")
    parser.add_argument("--max-running-requests", type=int, default=None)
    parser.add_argument("--cuda-graph-max-bs", type=int, default=None)
    parser.add_argument("--disable-cuda-graph", action="store_true")
    parser.add_argument("--watchdog-timeout", type=float, default=300)
    for flag, takes_value in PASS_THROUGH:
        if takes_value:
            parser.add_argument(flag, default=None)
        else:
            parser.add_argument(flag, action="store_true")
    return parser


def parse_args(argv=None):
    args = build_parser().parse_args(argv)
    if args.served_model_name is None:
        args.served_model_name = args.model_path
    if args.context_length is None:
        args.context_length = 1048576  # DeepSeek-V4-Flash's max_position_embeddings
    if args.tp_size < 1:
        build_parser().error("argument --tp-size: must be >= 1")
    return args
