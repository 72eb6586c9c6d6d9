# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Why a unit restarts, from the real unit and env file texts of the serving model."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import restart_plan as rp
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import units as su

INSTANCE = {"name": "decode-0", "mode": "decode", "unit": "sglang-decode-0.service", "host": "10.0.0.21", "port": 30002,
            "tp_size": 4, "gpus": [4, 5, 6, 7], "numa_node": 1, "dist_init_host": "127.0.0.1", "dist_init_port": 30435,
            "mem_fraction_static": 0.85, "bootstrap_port": None, "context_length": None, "extra_args": [], "env": {}}
MODEL = {"model_path": "/models/m", "served_model_name": "m", "transfer_backend": "nixl", "reasoning_parser": "deepseek-v4",
         "tool_call_parser": "deepseekv4", "context_length": 8192, "extra_args": []}


def settings(venv="/opt/sglang/venv", version="0.5.23", **over):
    base = {"launch_command": venv + "/bin/python -m sglang.launch_server", "numa_binding": "numactl",
            "numactl_path": "/usr/bin/numactl", "user": "sglang", "group": "sglang",
            "home": "/var/lib/sglang", "config_dir": "/etc/sglang", "unit_dir": "/etc/systemd/system", "restart_sec": 10,
            "timeout_stop_sec": 180, "start_limit_interval_sec": 1200, "start_limit_burst": 3, "limit_nofile": 65536,
            "hardening": {"NoNewPrivileges": True}, "env": {"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX"},
            "fingerprint": {"sglang": version, "venv": venv, "model": "/models/m@abc"}}
    base.update(over)
    return base


def render(instance=None, **over):
    unit = su.server_unit(instance or INSTANCE, MODEL, settings(**over))
    return unit["unit_text"], unit["env_text"]


def test_fingerprint_is_read_from_the_env_file():
    _unit, env = render()
    assert rp.fingerprint(env) == {"sglang": "0.5.23", "venv": "/opt/sglang/venv", "model": "/models/m@abc"}


def test_a_new_version_in_a_new_venv_is_one_reason_per_field_and_no_unit_noise():
    unit_a, env_a = render()
    unit_b, env_b = render(venv="/opt/sglang/venvs/sglang-0.5.24", version="0.5.24")
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == [
        "fingerprint sglang 0.5.23 -> 0.5.24", "fingerprint venv /opt/sglang/venv -> /opt/sglang/venvs/sglang-0.5.24"]


def test_a_flag_change_names_the_flag_not_the_value():
    unit_a, env_a = render()
    unit_b, env_b = render(dict(INSTANCE, mem_fraction_static=0.8))
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == ["unit --mem-fraction-static"]
    unit_c, env_c = render(dict(INSTANCE, extra_args=["--chunked-prefill-size", "8192"]))
    assert rp.unit_reasons(unit_a, unit_c, env_a, env_c) == ["unit --chunked-prefill-size"]


def test_unit_keys_and_env_names_are_listed():
    unit_a, env_a = render()
    unit_b, env_b = render(restart_sec=5, env={"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX", "UCX_NET_DEVICES": "mlx5_0:1"})
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == ["unit RestartSec", "env UCX_NET_DEVICES"]


def test_numactl_launch_line_is_execstart():
    unit_a, env_a = render()
    unit_b, env_b = render(launch_command="/opt/other/python -m sglang.launch_server")
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == ["unit ExecStart"]


def test_new_files_and_attributes():
    unit_a, env_a = render()
    assert rp.unit_reasons(None, unit_a, None, env_a) == ["new unit"]
    assert rp.unit_reasons(unit_a, unit_a, env_a, env_a, ["env"]) == ["env owner/mode"]


def test_router_secrets_never_appear():
    workers = {"prefill": [{"url": "http://p:1", "bootstrap_port": 8998}], "decode": [{"url": "http://d:1"}]}
    router = {"host": "0.0.0.0", "port": 30001, "prometheus_host": "127.0.0.1", "prometheus_port": 29000}
    base = {"launch_command": "/opt/sglang/router-venv/bin/python -m sglang_router.launch_router", "user": "sglang",
            "group": "sglang", "config_dir": "/etc/sglang", "restart_sec": 5, "timeout_stop_sec": 30,
            "start_limit_interval_sec": 300, "start_limit_burst": 5, "limit_nofile": 65536, "hardening": {},
            "api_key": "old-secret", "fingerprint": {"sglang_router": "0.3.2", "venv": "/opt/sglang/router-venv"},
            "health_check_interval_secs": 60}
    a = su.router_unit(router, workers, base)
    b = su.router_unit(router, workers, dict(base, api_key="new-secret", health_check_interval_secs=2))
    reasons = rp.unit_reasons(a["unit_text"], b["unit_text"], a["env_text"], b["env_text"])
    assert reasons == ["unit --health-check-interval-secs", "env SGLANG_ROUTER_API_KEY"]
    assert "secret" not in " ".join(reasons)
    c = su.router_unit(router, workers, dict(base, fingerprint={"sglang_router": "0.3.3", "venv": "/opt/sglang/router-venv"}))
    assert rp.unit_reasons(a["unit_text"], c["unit_text"], a["env_text"], c["env_text"]) == [
        "fingerprint sglang-router 0.3.2 -> 0.3.3"]


def test_plan_lines_and_merge():
    entries = [{"unit": "u1", "reasons": ["fingerprint sglang a -> b"], "planned": True},
               {"unit": "u2", "reasons": ["unit --x"], "planned": True},
               {"unit": "u1", "reasons": ["fingerprint sglang a -> b", "rolling restart"], "planned": False}]
    merged = rp.merge(copy.deepcopy(entries))
    assert merged == [{"unit": "u1", "reasons": ["fingerprint sglang a -> b", "rolling restart"], "planned": False},
                      {"unit": "u2", "reasons": ["unit --x"], "planned": True}]
    assert rp.plan_line("h", merged[0]) == "u1 on h: restarted (fingerprint sglang a -> b; rolling restart)"
    assert rp.plan_line("h", merged[1]) == "u2 on h: would restart (unit --x)"


def test_side_by_side_venvs_are_named_by_their_directory():
    unit_a, env_a = render(venv="/opt/sglang/venvs/sglang-0.5.23")
    unit_b, env_b = render(venv="/opt/sglang/venvs/sglang-0.5.24", version="0.5.24")
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == [
        "fingerprint sglang 0.5.23 -> 0.5.24", "fingerprint venv sglang-0.5.23 -> sglang-0.5.24 (in /opt/sglang/venvs)"]
