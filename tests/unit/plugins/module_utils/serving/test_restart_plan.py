# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Why a unit restarts, from the real unit and env file texts of the serving model."""

import copy

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import restart_plan as rp
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import units as su
from serving_support import ROUTER, ROUTER_SETTINGS, SERVER_SETTINGS  # noqa: E402  pylint: disable=wrong-import-position

INSTANCE = {"name": "decode-0", "mode": "decode", "unit": "sglang-decode-0.service", "host": "10.0.0.21", "port": 30002,
            "tp_size": 4, "gpus": [4, 5, 6, 7], "numa_node": 1, "dist_init_host": "127.0.0.1", "dist_init_port": 30435,
            "mem_fraction_static": 0.85, "bootstrap_port": None, "context_length": None, "extra_args": [], "env": {}}
MODEL = {"model_path": "/models/m", "served_model_name": "m", "transfer_backend": "nixl", "reasoning_parser": "deepseek-v4",
         "tool_call_parser": "deepseekv4", "context_length": 8192, "extra_args": []}


def settings(venv="/opt/sglang/venv", version="0.5.23", **over):
    base = dict(SERVER_SETTINGS, launch_command=venv + "/bin/python -m sglang.launch_server",
                env={"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX"},
                fingerprint={"sglang": version, "venv": venv, "model": "/models/m@abc"})
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
    router = ROUTER
    base = dict(ROUTER_SETTINGS, launch_command="/opt/sglang/router-venv/bin/python -m sglang_router.launch_router",
                api_key="old-secret", fingerprint={"sglang_router": "0.3.2", "venv": "/opt/sglang/router-venv"},
                health_check_interval_secs=60)
    a = su.router_unit(router, workers, base)
    b = su.router_unit(router, workers, dict(base, api_key="new-secret", health_check_interval_secs=2))
    reasons = rp.unit_reasons(a["unit_text"], b["unit_text"], a["env_text"], b["env_text"])
    # The key is a credential file (managed_files names it as the reason): neither text holds it.
    assert reasons == ["unit --health-check-interval-secs"]
    assert "secret" not in " ".join(reasons) + a["unit_text"] + a["env_text"] + b["unit_text"] + b["env_text"]
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


def test_a_rank_restarted_with_its_instance_merges_with_its_own_change():
    """One line per unit: the rank's own file change and its instance's restart (action restart) are one restart; a
    router's worker change (action workers) stays its own line."""
    entries = [{"unit": "u", "reasons": ["unit --mem-fraction-static"], "planned": True},
               {"unit": "u", "action": "restart", "reasons": ["instance i over a, b: changed on a, b"], "planned": True},
               {"unit": "r", "action": "workers", "reasons": ["register prefill x"], "planned": True}]
    merged = rp.merge(entries)
    assert [rp.plan_line("a", m) for m in merged] == [
        "u on a: would restart (unit --mem-fraction-static; instance i over a, b: changed on a, b)",
        "r on a: would register/deregister workers, no restart (register prefill x)"]


def test_side_by_side_venvs_are_named_by_their_directory():
    unit_a, env_a = render(venv="/opt/sglang/venvs/sglang-0.5.23")
    unit_b, env_b = render(venv="/opt/sglang/venvs/sglang-0.5.24", version="0.5.24")
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == [
        "fingerprint sglang 0.5.23 -> 0.5.24", "fingerprint venv sglang-0.5.23 -> sglang-0.5.24 (in /opt/sglang/venvs)"]


# --- a setting removed from a file is named like one added or changed ----------------------------------------

def test_a_removed_env_variable_is_named():
    unit_a, env_a = render(env={"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX", "UCX_NET_DEVICES": "mlx5_0:1"})
    unit_b, env_b = render()
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == ["env UCX_NET_DEVICES"]
    # the instance's own variable, and the GPU list when the instance loses its GPUs
    unit_c, env_c = render(dict(INSTANCE, env={"SGLANG_SM120_MMA_FLASHMLA": "1"}))
    assert rp.unit_reasons(unit_c, unit_a, env_c, env_a) == ["env UCX_NET_DEVICES, SGLANG_SM120_MMA_FLASHMLA"]
    unit_d, env_d = render(dict(INSTANCE, gpus=[]))
    assert rp.unit_reasons(unit_b, unit_d, env_b, env_d) == ["env CUDA_VISIBLE_DEVICES"]


def test_a_removed_flag_is_named():
    unit_a, env_a = render(dict(INSTANCE, extra_args=["--chunked-prefill-size", "8192"]))
    unit_b, env_b = render()
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == ["unit --chunked-prefill-size"]
    # the last flag of the line (its backslash moves to the line before)
    unit_c, env_c = render(dict(INSTANCE, metrics=False))
    assert rp.unit_reasons(unit_b, unit_c, env_b, env_c) == ["unit --enable-metrics"]
    # a flag of the model, from the middle of the line
    unit_d = su.server_unit(INSTANCE, dict(MODEL, context_length=None), settings())["unit_text"]
    assert rp.unit_reasons(unit_b, unit_d, env_b, env_b) == ["unit --context-length"]


def test_a_removed_unit_key_is_named():
    unit_a, env_a = render(hardening={"NoNewPrivileges": True, "ProtectHome": "read-only"})
    unit_b, env_b = render()
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == ["unit ProtectHome"]


def test_removed_settings_come_after_the_changed_ones():
    unit_a, env_a = render(dict(INSTANCE, extra_args=["--chunked-prefill-size", "8192"]),
                           hardening={"NoNewPrivileges": True, "ProtectHome": "read-only"},
                           env={"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX", "UCX_NET_DEVICES": "mlx5_0:1"})
    unit_b, env_b = render(dict(INSTANCE, mem_fraction_static=0.8),
                           env={"SGLANG_DISAGGREGATION_NIXL_BACKEND": "UCX", "NCCL_DEBUG": "WARN"})
    assert rp.unit_reasons(unit_a, unit_b, env_a, env_b) == [
        "unit --mem-fraction-static, --chunked-prefill-size, ProtectHome", "env NCCL_DEBUG, UCX_NET_DEVICES"]


def test_changed_settings_of_bare_texts():
    before = 'A="1"\nB="2"\nC="3"\n'
    assert rp.changed_settings(before, 'A="1"\nC="3"\n') == ["B"]
    assert rp.changed_settings(before, 'A="1"\nB="9"\n') == ["B", "C"]
    assert rp.changed_settings(before, None) == ["A", "B", "C"]
    assert rp.changed_settings(before, before) == []
    # the fingerprint lines are the fingerprint's reasons, never a setting
    assert rp.changed_settings('PDSERVE_SGLANG="0.5.23"\nA="1"\n', 'A="1"\n') == []


# --- instances over several hosts: one restart group ----------------------------------------------------

def _spanning_topology():
    def rank(host, rank_, name="prefill-0", nodes=("a", "b", "c")):
        return {"name": name, "unit": "sglang-%s.service" % name, "nodes": list(nodes), "node_rank": rank_}
    return {"hosts": {
        "a": {"prefill": [rank("a", 0), {"name": "solo", "unit": "sglang-solo.service", "nodes": None}], "decode": []},
        "b": {"prefill": [rank("b", 1)], "decode": []},
        "c": {"prefill": [rank("c", 2)], "decode": []},
    }}


def test_a_change_on_one_node_restarts_the_ranks_on_every_other_node():
    out = rp.instance_restarts(_spanning_topology(), {"b": ["sglang-prefill-0.service"]})
    assert sorted(out) == ["a", "c"]
    reasons = ["instance prefill-0 over a, b, c: changed on b"]
    assert out["a"] == [{"unit": "sglang-prefill-0.service", "rank": 0, "reasons": reasons,
                         "restarts": [{"unit": "sglang-prefill-0.service", "action": "restart", "reasons": reasons}]}]
    assert out["c"][0]["rank"] == 2


def test_nothing_more_for_single_host_units_or_nodes_that_restart_anyway():
    assert rp.instance_restarts(_spanning_topology(), {"a": ["sglang-solo.service"]}) == {}
    everywhere = dict((h, ["sglang-prefill-0.service"]) for h in "abc")
    assert rp.instance_restarts(_spanning_topology(), everywhere) == {}
    assert rp.instance_restarts(_spanning_topology(), {}) == {}


def test_with_own_every_rank_of_a_changed_instance_restarts_including_the_changed_node():
    """The handler no longer restarts a rank alone for its own files: with own, the rank whose node changed is in the
    ordered restart too, on every node; single-host units stay with the handler."""
    out = rp.instance_restarts(_spanning_topology(), {"b": ["sglang-prefill-0.service"]}, own=True)
    assert sorted(out) == ["a", "b", "c"]
    assert [(h, i["rank"]) for h in "abc" for i in out[h]] == [("a", 0), ("b", 1), ("c", 2)]
    everywhere = dict((h, ["sglang-prefill-0.service", "sglang-solo.service"]) for h in "abc")
    out = rp.instance_restarts(_spanning_topology(), everywhere, own=True)
    assert [i["unit"] for h in "abc" for i in out[h]] == ["sglang-prefill-0.service"] * 3
    assert rp.instance_restarts(_spanning_topology(), {"a": ["sglang-solo.service"]}, own=True) == {}


def test_rank_restart_phases_stop_rank0_first_then_the_others_then_start_all():
    out = rp.instance_restarts(_spanning_topology(), {"c": ["sglang-prefill-0.service"]}, own=True)
    leader, other = rp.rank_restart_phases(out["a"]), rp.rank_restart_phases(out["b"])
    assert list(leader) == list(rp.RANK_PHASES) == ["stop_rank0", "stop_others", "start"]
    # rank 0's host stops in the first step only; a rank > 0's host in the second; both start in the third
    assert [i["rank"] for i in leader["stop_rank0"]] == [0] and leader["stop_others"] == []
    assert other["stop_rank0"] == [] and [i["rank"] for i in other["stop_others"]] == [1]
    assert [i["unit"] for i in leader["start"] + other["start"]] == ["sglang-prefill-0.service"] * 2
    assert rp.rank_restart_phases([]) == {"stop_rank0": [], "stop_others": [], "start": []}


def test_a_switch_of_the_router_implementation_is_named_by_the_fingerprint():
    before = "PDSERVE_SGLANG_ROUTER=0.3.2\nPDSERVE_VENV=/opt/sglang/router-venv\n"
    after = "PDSERVE_SMG=1.13.0\nPDSERVE_VENV=/opt/sglang/router-venv\n"
    reasons = rp.unit_reasons("[Service]\nExecStart=a\n", "[Service]\nExecStart=a --implementation smg\n", before, after)
    assert reasons[:2] == ["fingerprint sglang-router 0.3.2 -> (none)", "fingerprint smg (none) -> 1.13.0"]
