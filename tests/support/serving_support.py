# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the tests share about the serving model: the topology's per-host defaults, read from their one owner
(roles/sglang_defaults/defaults/main.yml), never copied; and the reference deployment's model, instances, router
and settings, written out once here instead of in every test file (copy them before changing one)."""

import copy
import pathlib
import re

import yaml

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import normalize

ROOT = pathlib.Path(__file__).resolve().parents[2]


def shared_defaults():
    """The defaults of pdserve.sglang.sglang_defaults, as the roles see them."""
    with open(ROOT / "roles" / "sglang_defaults" / "defaults" / "main.yml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


TOPOLOGY_DEFAULTS = shared_defaults()["sglang_topology_defaults"]


# --- the reference deployment (inventories/blackwell), written out once for the tests ----------------------

# The model every server of the reference host serves, as roles/sglang_server/vars/main.yml passes it.
MODEL = {
    "model_path": "/models/DeepSeek-V4-Flash",
    "served_model_name": "deepseek-v4-flash",
    "chat_template": "/opt/sglang/chat_templates/tool_chat_template_deepseekv32.jinja",
    "reasoning_parser": "deepseek-v4",
    "tool_call_parser": "deepseekv4",
    "transfer_backend": "nixl",
    "context_length": 8192,
    "extra_args": [],
}

# The reference host's instances as the inventory writes them (sglang_prefill_instances / sglang_decode_instances
# entries): copy before changing one (dict(PREFILL, port=...)).
PREFILL = {"name": "prefill", "gpus": [0, 1, 2, 3], "numa_node": 0, "port": 30000, "bootstrap_port": 8998,
           "dist_init_port": 30335, "mem_fraction_static": 0.80}
DECODE = {"name": "decode", "gpus": [4, 5, 6, 7], "numa_node": 1, "port": 30002, "dist_init_port": 30435,
          "mem_fraction_static": 0.85}

# The router's own addresses (topology "routers" entry fields the command line reads) and its workers.
ROUTER = {"host": "0.0.0.0", "port": 30001, "prometheus_host": "127.0.0.1", "prometheus_port": 29000}
WORKERS = {"prefill": [{"url": "http://127.0.0.1:30000", "bootstrap_port": 8998}],
           "decode": [{"url": "http://127.0.0.1:30002", "bootstrap_port": None}]}

# Server and router settings as the roles pass them (serving.units.server_unit / router_unit), literal.
SERVER_SETTINGS = {
    "launch_command": "/opt/sglang/venv/bin/python -m sglang.launch_server", "numa_binding": "numactl",
    "numactl_path": "/usr/bin/numactl", "user": "sglang", "group": "sglang",
    "home": "/var/lib/sglang", "config_dir": "/etc/sglang", "unit_dir": "/etc/systemd/system", "restart_sec": 10,
    "timeout_stop_sec": 180, "start_limit_interval_sec": 1200, "start_limit_burst": 3, "limit_nofile": 65536,
    "hardening": {"NoNewPrivileges": True}, "env": {},
}
ROUTER_SETTINGS = {
    "launch_command": "/opt/sglang/router-venv/bin/python /usr/local/libexec/pdserve/pdserve_router_launch.py",
    "user": "sglang-router", "group": "sglang-router", "config_dir": "/etc/sglang-router",
    "credentials_dir": "/etc/sglang-router/credentials", "unit_dir": "/etc/systemd/system", "restart_sec": 5,
    "timeout_stop_sec": 30, "start_limit_interval_sec": 300, "start_limit_burst": 5, "limit_nofile": 65536,
    "hardening": {}, "api_key": "", "control_plane_api_key": "",
    "hf_hub_offline": True, "hf_endpoint": "", "env": {}, "policy": "cache_aware", "log_level": "info", "extra_args": [],
    "implementation": "smg",
}

# One host "box" running a prefill, a decode and the router, with nothing but names, ports and the router's keys set
# (a router on the default 0.0.0.0 without a key is a preflight problem).
ROUTER_KEYS = {"sglang_router_api_key": "box-client-key", "sglang_router_control_plane_api_key": "box-admin-key"}
ONE_HOST_GROUPS = {"sglang_prefill": ["box"], "sglang_decode": ["box"], "sglang_router": ["box"]}


def one_host_vars():
    """Fresh host_vars of the one-host layout (ONE_HOST_GROUPS)."""
    return {"box": {"sglang_prefill_instances": [{"name": "prefill", "port": 30000, "bootstrap_port": 8998}],
                    "sglang_decode_instances": [{"name": "decode", "port": 30002}], **ROUTER_KEYS}}


# Workers as the router's GET /workers lists them (sglang-router 0.3.2): two prefill, two decode on two hosts.
P0 = {"url": "http://10.0.0.11:30000", "worker_type": "prefill", "bootstrap_port": 8998}
P1 = {"url": "http://10.0.0.11:30010", "worker_type": "prefill", "bootstrap_port": 8999}
D0 = {"url": "http://10.0.0.21:30002", "worker_type": "decode"}
D1 = {"url": "http://10.0.0.21:30012", "worker_type": "decode"}


def instance(raw, mode, inventory_host="blackwell", **fields):
    """One normalized instance (serving.instances.normalize) of ``raw`` on ``inventory_host``, with ``fields``
    replaced (``host`` is the instance's bind address); it must have no problem."""
    (inst,), problems = normalize([dict(copy.deepcopy(raw), **fields)], mode, inventory_host)
    assert problems == [], problems
    return inst


_NAME_ONLY = re.compile(r"^\{\{ *([a-z_][a-z0-9_]*) *\}\}$")


def role_defaults(role):
    """A role's defaults with the shared ones, as the role sees them: a value that only names another
    ("{{ sglang_service_user }}") is that value, so the tests never restate a default."""
    with open(ROOT / "roles" / role / "defaults" / "main.yml", encoding="utf-8") as handle:
        values = dict(shared_defaults(), **(yaml.safe_load(handle) or {}))
    for _round in range(5):
        for name, value in values.items():
            match = _NAME_ONLY.match(value) if isinstance(value, str) else None
            if match and match.group(1) in values:
                values[name] = values[match.group(1)]
    return values
