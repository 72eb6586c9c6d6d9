# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The molecule scenario extensions/molecule/sglang_install checks, with the real SGLang parser,
the command lines written in its vars. They must be what sglang_server renders for
inventories/blackwell, or the scenario proves nothing about that inventory: render them with the
collection's own serving model (the code sglang_server renders its units with) and compare."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

from ansible_collections.pdserve.sglang.plugins.module_utils.serving_cmdline import argv, server_args
from ansible_collections.pdserve.sglang.plugins.module_utils.serving_topology import build_topology

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def test_scenario_command_lines_match_the_blackwell_rendering():
    host = load("inventories", "blackwell", "host_vars", "blackwell.yml")
    shared = load("inventories", "blackwell", "group_vars", "all", "model.yml")
    model = {
        "model_path": shared["sglang_model_path"],
        "served_model_name": shared["sglang_model_served_name"],
        "chat_template": shared["sglang_model_chat_template"],
        "reasoning_parser": shared["sglang_model_reasoning_parser"],
        "tool_call_parser": shared["sglang_model_tool_call_parser"],
        "transfer_backend": shared["sglang_model_transfer_backend"],
        "context_length": shared["sglang_model_context_length"],
        "extra_args": shared["sglang_model_extra_args"],
    }
    groups = {"sglang_prefill": ["blackwell"], "sglang_decode": ["blackwell"], "sglang_router": ["blackwell"]}
    topology = build_topology({"blackwell": dict(shared, **host)}, groups)
    assert topology["problems"] == []
    rendered = []
    for mode in ("prefill", "decode"):
        for instance in topology["hosts"]["blackwell"][mode]:
            rendered.append({"name": instance["name"], "argv": [str(word) for word in argv(server_args(instance, model, "numactl", True))]})
    scenario = load("extensions", "molecule", "sglang_install", "molecule.yml")
    written = scenario["provisioner"]["inventory"]["group_vars"]["all"]["blackwell_command_lines"]
    assert written == rendered
