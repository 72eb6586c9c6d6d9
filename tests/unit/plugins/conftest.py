# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The shipped inventories as Ansible itself reads them (hosts.yml, group_vars, host_vars), for the serving-model tests."""

import copy
import os

import pytest

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.manager import VariableManager

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

# What roles/sglang_server/vars/main.yml passes as the model (sglang_server_* default to sglang_model_*).
MODEL_KEYS = (
    ("model_path", "sglang_model_path", ""),
    ("served_model_name", "sglang_model_served_name", ""),
    ("chat_template", "sglang_model_chat_template", ""),
    ("reasoning_parser", "sglang_model_reasoning_parser", ""),
    ("tool_call_parser", "sglang_model_tool_call_parser", ""),
    ("transfer_backend", "sglang_model_transfer_backend", "nixl"),
    ("transfer_env", "sglang_model_transfer_env", {"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX"}),
    ("context_length", "sglang_model_context_length", None),
    ("extra_args", "sglang_model_extra_args", []),
    ("env", "sglang_model_env", {}),
)


def _load(name):
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[os.path.join(ROOT, "inventories", name, "hosts.yml")])
    variables = VariableManager(loader=loader, inventory=inventory)
    host_vars = dict((host.name, variables.get_vars(host=host, include_hostvars=False)) for host in inventory.get_hosts())
    groups = dict((group, [host.name for host in inventory.groups[group].get_hosts()]) for group in inventory.groups)
    return host_vars, groups


@pytest.fixture(scope="session")
def inventory():
    """inventory(name) -> (host_vars, groups) of inventories/<name>, a fresh copy on every call."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = _load(name)
        return copy.deepcopy(cache[name])
    return get


@pytest.fixture(scope="session")
def inventory_model(inventory):
    """inventory_model(name, host=None) -> the model settings the server role derives from the inventory's sglang_model_*."""
    def get(name, host=None):
        host_vars, _groups = inventory(name)
        hv = host_vars[host or sorted(host_vars)[0]]
        return dict((key, hv.get(var, default)) for key, var, default in MODEL_KEYS)
    return get
