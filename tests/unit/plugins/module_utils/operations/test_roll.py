# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which workers a roll takes, in which order, and which it refuses to drain."""

from ansible_collections.pdserve.sglang.plugins.module_utils.operations.roll import (
    plan_lines,
    precompile_refusal,
    roll_plan,
    roll_report,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import build_topology
from serving_support import ROUTER_KEYS, TOPOLOGY_DEFAULTS  # noqa: E402  pylint: disable=wrong-import-position

GROUPS = {"sglang_prefill": ["p"], "sglang_decode": ["d"], "sglang_router": ["r"]}


def stack(prefill=2, decode=2):
    host_vars = {
        "p": {"sglang_server_host": "10.0.0.11",
              "sglang_prefill_instances": [{"name": "prefill-%d" % i, "port": 30000 + 10 * i, "bootstrap_port": 8998 + i}
                                           for i in range(prefill)]},
        "d": {"sglang_server_host": "10.0.0.21",
              "sglang_decode_instances": [{"name": "decode-%d" % i, "port": 30002 + 10 * i} for i in range(decode)]},
        "r": dict(ROUTER_KEYS),
    }
    return build_topology(host_vars, GROUPS, defaults=TOPOLOGY_DEFAULTS)


def names(plan):
    return [w["name"] for w in plan["workers"]]


def test_all_workers_one_at_a_time_in_each_order():
    topology = stack()
    assert names(roll_plan(topology)) == ["prefill-0", "prefill-1", "decode-0", "decode-1"]
    assert names(roll_plan(topology, order="decode_first")) == ["decode-0", "decode-1", "prefill-0", "prefill-1"]
    assert names(roll_plan(topology, order="pairs")) == ["prefill-0", "decode-0", "prefill-1", "decode-1"]
    plan = roll_plan(topology)
    assert plan["problems"] == [] and [r["inventory_host"] for r in plan["routers"]] == ["r"]
    assert all(not w["plain"] and w["peers"] == 2 for w in plan["workers"])
    assert plan["workers"][0]["url"] == "http://10.0.0.11:30000" and plan["workers"][0]["bootstrap_port"] == 8998


def test_selection_by_host_and_by_instance():
    topology = stack()
    assert names(roll_plan(topology, hosts=["d"])) == ["decode-0", "decode-1"]
    assert names(roll_plan(topology, instances=["decode-1", "prefill-0"])) == ["prefill-0", "decode-1"]
    assert names(roll_plan(topology, hosts=["p"], instances=["decode-1"])) == []


def test_unknown_names_are_problems_with_a_suggestion():
    plan = roll_plan(stack(), hosts=["x"], instances=["decode-9", "decod-1"], order="random")
    messages = [p["message"] for p in plan["problems"]]
    assert any("host 'x' runs no prefill or decode" in m for m in messages)
    assert any("no instance is named 'decod-1' (did you mean 'decode-1'?)" in m for m in messages)
    assert any(p["variable"] == "sglang_operations_roll_order" for p in plan["problems"])


def test_the_only_worker_of_a_type_is_refused_unless_plain():
    topology = stack(prefill=1, decode=2)
    plan = roll_plan(topology)
    assert [p["variable"] for p in plan["problems"]] == ["sglang_operations_roll_plain_restart"]
    assert "prefill-0 is the only prefill worker" in plan["problems"][0]["message"]
    plan = roll_plan(topology, plain_restart=True)
    assert plan["problems"] == []
    assert [(w["name"], w["plain"]) for w in plan["workers"]] == [
        ("prefill-0", True), ("decode-0", False), ("decode-1", False)]
    assert plan["warnings"] == [] and not any(w["unvalidated"] for w in plan["workers"])


def test_an_upgrade_of_the_only_worker_of_a_type_needs_the_unvalidated_opt_in_and_says_so():
    """In an upgrade an in-place worker never leaves the router: clients reach the new version before it is validated.
    Refused unless <prefix>_unvalidated_restart, and said before anything starts when allowed."""
    topology = stack(prefill=1, decode=2)
    (found,) = roll_plan(topology, variable="sglang_operations_upgrade", upgrade=True)["problems"]
    assert (found["host"], found["variable"]) == ("p", "sglang_operations_upgrade_unvalidated_restart")
    assert "clients reach the new version as soon as it answers /health, before it is validated" in found["message"]
    assert "set sglang_operations_upgrade_unvalidated_restart: true to accept that clients reach" in found["fix"]
    plan = roll_plan(topology, plain_restart=True, variable="sglang_operations_upgrade", upgrade=True)
    assert plan["problems"] == []
    assert [(w["name"], w["unvalidated"]) for w in plan["workers"]] == [
        ("prefill-0", True), ("decode-0", False), ("decode-1", False)]
    (warning,) = plan["warnings"]
    assert warning.startswith("prefill-0 (prefill on p) is the only prefill worker: it is moved in place, so clients "
                              "reach the new version as soon as it answers /health, before it is validated")
    assert "sglang_operations_upgrade_unvalidated_restart is true" in warning
    assert plan_lines(plan, [], 300, what="Upgrade")[1].endswith("clients reach the new version before it is validated")


def test_no_router_is_a_problem():
    topology = build_topology({"p": {"sglang_prefill_instances": [{"name": "p", "port": 1}]}}, {"sglang_prefill": ["p"]}, defaults=TOPOLOGY_DEFAULTS)
    assert any(p["variable"] == "sglang_router" for p in roll_plan(topology)["problems"])


def test_the_plan_says_up_front_what_happens_and_the_outage_of_a_lone_worker():
    plan = roll_plan(stack(prefill=1, decode=2), plain_restart=True)
    estimates = [{"item": plan["workers"][0], "previous_load_seconds": 212.5}]
    lines = plan_lines(plan, estimates, 300, "cut")
    assert lines[0].startswith("Rolling restart of 3 worker(s), one at a time; each leaves 1 router(s) (r)")
    assert "up to 300 s, then cut them" in lines[0]
    assert "1. prefill-0 (prefill on p, http://10.0.0.11:30000): the only prefill worker, restarted in place" in lines[1]
    assert "expect an outage of about 212.5 s" in lines[1]
    assert lines[2] == "2. decode-0 (decode on d, http://10.0.0.21:30002)"
    assert "unknown" in plan_lines(plan, [], 300)[1]


def test_the_report_counts_requests_across_restarts():
    plan = roll_plan(stack())
    d0, d1 = plan["workers"][2], plan["workers"][3]
    records = [[], [  # host p has none; host d rolled decode-1 and decode-0 (decode-0 twice: a switch, then back)
        {"worker": d1, "idle": {"seconds": 2.04, "in_flight_at_start": 3, "idle": True, "requests_total": 50},
         "restarted": {"restart_to_ready": 3.4}},
        {"worker": d0, "idle": {"seconds": 1.0, "in_flight_at_start": 0, "idle": True, "requests_total": 30},
         "restarted": {"restart_to_ready": 2.0}},
        {"worker": d0, "idle": {"seconds": 1.5, "in_flight_at_start": 2, "idle": False, "in_flight": 1,
                                "requests_total": 4}, "restarted": {"restart_to_ready": 2.5}},
    ]]
    counters = [{"results": []}, {"results": [{"item": d0, "requests_total": 20}, {"item": d1, "requests_total": 40}]}]
    after = [{"results": []}, {"results": [{"item": d0, "requests_total": 6}, {"item": d1, "requests_total": 9}]}]
    assert roll_report(records, counters, after) == [
        "decode-0 (decode on d): restart 1: drain 1.0 s, restart-to-ready 2.0 s, restart 2: drain 1.5 s (2 request(s) "
        "finished after it left the router, 1 cut), restart-to-ready 2.5 s, served 20 requests during the roll "
        "(14 before its restarts, 6 after)",
        "decode-1 (decode on d): drain 2.0 s (3 request(s) finished after it left the router), restart-to-ready 3.4 s, "
        "served 19 requests during the roll (10 before its restart, 9 after)",
    ]
    assert "served ? requests" in roll_report(records, [], [])[0]


def test_a_failed_switch_is_counted_as_a_restart():
    d0 = roll_plan(stack())["workers"][2]
    records = [[{"worker": d0, "ok": False, "idle": {"seconds": 1.0, "requests_total": 195}, "restarted": {}},
                {"worker": d0, "ok": True, "idle": {"seconds": 1.0, "requests_total": 2},
                 "restarted": {"restart_to_ready": 1.5}}]]
    line, = roll_report(records, [{"results": [{"item": d0, "requests_total": 190}]}],
                        [{"results": [{"item": d0, "requests_total": 3}]}])
    assert "restart 1 (failed): drain 1.0 s, restart-to-ready ?, restart 2: drain 1.0 s" in line
    assert line.endswith("served 10 requests during the roll (7 before its restarts, 3 after)")


def out_of_service(name):
    """The topology with instance ``name`` marked in_service: false, as the inventory would mark it."""
    host_vars = {
        "p": {"sglang_server_host": "10.0.0.11",
              "sglang_prefill_instances": [{"name": "prefill-%d" % i, "port": 30000 + 10 * i, "bootstrap_port": 8998 + i}
                                           for i in range(2)]},
        "d": {"sglang_server_host": "10.0.0.21",
              "sglang_decode_instances": [dict({"name": "decode-%d" % i, "port": 30002 + 10 * i},
                                               **({"in_service": False} if "decode-%d" % i == name else {}))
                                          for i in range(2)]},
        "r": dict(ROUTER_KEYS),
    }
    return build_topology(host_vars, GROUPS, defaults=TOPOLOGY_DEFAULTS)


def test_a_worker_out_of_service_is_rolled_without_the_routers_and_is_no_peer():
    plan = roll_plan(out_of_service("decode-1"))
    decode = dict((w["name"], w) for w in plan["workers"] if w["mode"] == "decode")
    # decode-0 is the only decode worker the routers have: draining it would leave none.
    assert decode["decode-0"]["in_service"] is True and decode["decode-0"]["plain"] is True
    assert decode["decode-0"]["peers"] == 1
    assert [p["variable"] for p in plan["problems"]] == ["sglang_operations_roll_plain_restart"]
    assert "decode-0 is the only decode worker" in plan["problems"][0]["message"]
    # decode-1 is in no router: restarted without them, never an outage.
    assert decode["decode-1"]["in_service"] is False and decode["decode-1"]["plain"] is False
    lines = plan_lines(roll_plan(out_of_service("decode-1"), plain_restart=True))
    assert [line for line in lines if line.startswith("4. decode-1")] == [
        "4. decode-1 (decode on d, http://10.0.0.21:30012): out of service (in_service: false), so it is restarted "
        "without leaving or rejoining a router"]
    assert not any("decode-1" in line and "outage" in line for line in lines)


def test_workers_in_service_are_marked_so():
    assert all(w["in_service"] is True for w in roll_plan(stack())["workers"])


def test_the_report_says_where_each_new_start_spent_its_time():
    d0 = roll_plan(stack())["workers"][2]
    phases = {"load_weight": 8.1, "kv_cache_allocation": 0.1, "cuda_graph": 1.5, "engine": 9.8, "warmup": 2.0}
    startup = {"phase": "ready", "ready_s": 12.8, "phases": phases}
    records = [[{"worker": d0, "idle": {"seconds": 1.0, "requests_total": 2},
                 "restarted": {"restart_to_ready": 13.1, "startup": startup}}]]
    line, = roll_report(records, [], [])
    assert ("restart-to-ready 13.1 s (start: 12.8 s: load weights 8.1 s, KV cache 0.1 s, CUDA graphs 1.5 s, "
            "warmup 2.0 s)") in line


def test_the_report_counts_the_kernels_the_new_starts_compiled():
    workers = roll_plan(stack())["workers"]
    phases = {"load_weight": 8.1, "kv_cache_allocation": 0.1, "cuda_graph": 1.5, "engine": 9.8, "warmup": 2.0}

    def record(worker, compiled):
        startup = {"phase": "ready", "ready_s": 12.8, "phases": phases, "kernels_compiled": compiled}
        return {"worker": worker, "idle": {"seconds": 1.0, "requests_total": 2},
                "restarted": {"restart_to_ready": 13.1, "startup": startup}}

    lines = roll_report([[record(workers[0], 0), record(workers[2], 0)]], [], [])
    assert lines[-1] == "Kernel compiles across the 2 restart(s): 0 (%s 0, %s 0)" % (workers[0]["name"],
                                                                                     workers[2]["name"])
    assert "load weights 8.1 s (of which 0 kernel(s) compiled)" in lines[0]
    lines = roll_report([[record(workers[0], 5), record(workers[2], None)]], [], [])
    assert lines[-1] == ("Kernel compiles across the 2 restart(s): 5, 1 start(s) did not say (%s 5, %s ?)"
                         % (workers[0]["name"], workers[2]["name"]))
    # no start said (SGLang itself): no line, never a made-up 0
    assert len(roll_report([[record(workers[0], None)]], [], [])) == 1


# The upgrade's judge: the precompile stops the instance (it needs its port and GPUs), an outage for a lone worker.

def _upgrade_plan(prefill=1, decode=2):
    return roll_plan(stack(prefill, decode), upgrade=True, plain_restart=True, variable="sglang_operations_upgrade")


def test_the_judge_refuses_to_precompile_the_only_worker_of_a_type_in_an_upgrade():
    plan = _upgrade_plan()
    refusal = precompile_refusal(plan["workers"], "p", "upgrade")
    assert refusal.startswith("prefill-0 (prefill) on p: the only worker of its type would stop for the DeepGEMM "
                              "precompile in the new venv")
    assert "an outage for as long as the compile takes" in refusal
    assert "sglang_operations_upgrade_precompile_outage=true" in refusal and "sglang_server_precompile=never" in refusal
    # The decode host has two decode workers: each is drained before its precompile, nothing to refuse there.
    assert precompile_refusal(plan["workers"], "d", "upgrade") == ""


def test_the_judge_accepts_the_outage_with_the_opt_in_and_never_refuses_a_drained_worker():
    plan = _upgrade_plan()
    assert precompile_refusal(plan["workers"], "p", "upgrade", outage_ok=True) == ""
    assert precompile_refusal(_upgrade_plan(prefill=2)["workers"], "p", "upgrade") == ""
    # A rollback returns to a venv compiled before (and moves a lone worker without precompiling); a restart stays in
    # its venv: neither precompiles a lone worker.
    assert precompile_refusal(plan["workers"], "p", "rollback") == ""
    assert precompile_refusal(plan["workers"], "p", "restart") == ""


def test_the_judge_names_every_lone_worker_of_the_host():
    plan = _upgrade_plan(prefill=1, decode=1)
    both = [dict(w, inventory_host="p") for w in plan["workers"]]
    refusal = precompile_refusal(both, "p", "upgrade")
    assert refusal.startswith("prefill-0 (prefill), decode-0 (decode) on p: each the only worker of its type would stop")


def test_an_instance_over_several_hosts_is_one_worker_with_every_node(inventory):
    """inventories/multinode_tp: each instance is one worker (rank 0's URL, as the routers know it) that names every node
    of its ranks, so the roll stops and starts them together (restarting rank 0 alone would end the other ranks for good
    by its shutdown broadcast, and the new rank 0 would wait for them until dist_timeout)."""
    topology = build_topology(*inventory("multinode_tp"), defaults=TOPOLOGY_DEFAULTS)
    plan = roll_plan(topology, plain_restart=True)
    assert plan["problems"] == []
    prefill = plan["workers"][0]
    assert (prefill["name"], prefill["inventory_host"], prefill["rank_hosts"]) == ("prefill-0", "gpu-p0", ["gpu-p0", "gpu-p1"])
    # Selected by any of its nodes; a host that runs a rank > 0 only is a known host.
    chosen = roll_plan(topology, hosts=["gpu-d1"], plain_restart=True)
    assert chosen["problems"] == [] and [w["name"] for w in chosen["workers"]] == ["decode-0"]
    assert plan_lines(plan)[1] == ("1. prefill-0 (prefill on gpu-p0, gpu-p1, http://10.0.1.11:30000): the only prefill "
                                   "worker, restarted in place - every request fails while it is away: expect an outage "
                                   "of about its load time (unknown: no 'fired up' line since its last start) (its last "
                                   "start took that long), plus the router's health checks; one instance over 2 hosts, "
                                   "its ranks stopped (rank 0 first) and started together")
    drained = roll_plan(topology, plain_restart=True)
    drained["workers"][0]["plain"] = False
    assert plan_lines(drained)[1] == ("1. prefill-0 (prefill on gpu-p0, gpu-p1, http://10.0.1.11:30000): one instance "
                                      "over 2 hosts, its ranks stopped (rank 0 first) and started together")
    assert roll_plan(stack(), plain_restart=True)["problems"] == []
    assert all(w["rank_hosts"] == [w["inventory_host"]] for w in roll_plan(stack())["workers"])
