# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Choices of the SGLang version this collection pins (0.5.23), read from ServerArgs.add_cli_args.

The installed SGLang's own parser has the last word (module sglang_flag_check); these lists let the
preflight name a typo before anything is installed.
"""

SGLANG_VERSION = "0.5.23"

REASONING_PARSERS = (
    "auto", "apertus2509", "beam", "deepseek-r1", "deepseek-v3", "deepseek-v4", "deepseek-v41",
    "dots", "glm45", "ling3", "hunyuan", "gpt-oss", "k2_horizon", "kimi", "kimi_k2", "kimi_k3",
    "mimo", "muse", "poolside_v1", "qwen3", "qwen3-thinking", "minimax", "minimax-append-think",
    "minimax-m3", "nanbeige", "step3", "step3p5", "mistral", "nemotron_3",
    "granite_thinking_parser", "interns1", "gemma4", "inkling", "iquest_q1", "cohere_command4",
    "gigachat35", "response_template",
)
TOOL_CALL_PARSERS = (
    "auto", "apertus2509", "beam", "cohere_command4", "deepseekv3", "deepseekv31", "deepseekv32",
    "deepseekv4", "deepseekv41", "dots", "glm", "glm45", "glm47", "gpt-oss", "k2_horizon",
    "kimi_k2", "kimi_k3", "lfm2", "ling3", "llama3", "mimo", "minicpm5", "mistral", "muse",
    "poolside_v1", "pythonic", "qwen", "qwen25", "qwen3_coder", "spark25", "step3", "step3p5",
    "minimax-m2", "minimax-m3", "nanbeige", "trinity", "interns1", "hermes", "hunyuan",
    "gigachat3", "gigachat35", "gemma4", "inkling", "iquest_q1", "response_template",
)
TRANSFER_BACKENDS = ("mooncake", "nixl", "ascend", "fake", "mori", "mooncake_tcp")

# Reasoning parser -> tool-call parsers of the same model family. A reasoning parser that is not in
# this table (or "auto"/"response_template", or none) pairs with any tool parser. The DeepSeek rows
# encode the confusion users report (sgl-project/sglang#14690, #17593): the V4 reasoning parser with
# the V3 tool parser leaves tool calls in content.
PARSER_PAIRS = {
    "deepseek-v4": ("deepseekv4", "deepseekv32"),
    "deepseek-v41": ("deepseekv41", "deepseekv4", "deepseekv32"),
    "deepseek-v3": ("deepseekv3", "deepseekv31", "deepseekv32"),
    "deepseek-r1": ("deepseekv3", "deepseekv31", "deepseekv32"),
    "qwen3": ("qwen", "qwen25", "qwen3_coder", "hermes"),
    "qwen3-thinking": ("qwen", "qwen25", "qwen3_coder", "hermes"),
    "glm45": ("glm", "glm45", "glm47"),
    "kimi": ("kimi_k2",),
    "kimi_k2": ("kimi_k2",),
    "kimi_k3": ("kimi_k3",),
    "k2_horizon": ("k2_horizon",),
    "gpt-oss": ("gpt-oss",),
    "minimax": ("minimax-m2",),
    "minimax-append-think": ("minimax-m2",),
    "minimax-m3": ("minimax-m3",),
    "step3": ("step3",),
    "step3p5": ("step3p5",),
    "mimo": ("mimo",),
    "muse": ("muse",),
    "ling3": ("ling3",),
    "dots": ("dots",),
    "nanbeige": ("nanbeige",),
    "interns1": ("interns1",),
    "gemma4": ("gemma4",),
    "inkling": ("inkling",),
    "iquest_q1": ("iquest_q1",),
    "cohere_command4": ("cohere_command4",),
    "gigachat35": ("gigachat35", "gigachat3"),
    "hunyuan": ("hunyuan",),
    "apertus2509": ("apertus2509",),
    "beam": ("beam",),
    "poolside_v1": ("poolside_v1",),
    "mistral": ("mistral",),
}
