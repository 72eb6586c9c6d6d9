# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which workers a roll takes, in which order, and which it refuses to drain."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.pdserve.sglang.plugins.module_utils.serving_roll import roll_plan
from ansible_collections.pdserve.sglang.plugins.module_utils.serving_topology import build_topology

GROUPS = {"sglang_prefill": ["p"], "sglang_decode": ["d"], "sglang_router": ["r"]}


def stack(prefill=2, decode=2):
    host_vars = {
        "p": {"sglang_server_host": "10.0.0.11",
              "sglang_prefill_instances": [{"name": "prefill-%d" % i, "port": 30000 + 10 * i, "bootstrap_port": 8998 + i}
                                           for i in range(prefill)]},
        "d": {"sglang_server_host": "10.0.0.21",
              "sglang_decode_instances": [{"name": "decode-%d" % i, "port": 30002 + 10 * i} for i in range(decode)]},
        "r": {},
    }
    return build_topology(host_vars, GROUPS)


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
    assert any(p["variable"] == "sglang_roll_order" for p in plan["problems"])


def test_the_only_worker_of_a_type_is_refused_unless_plain():
    topology = stack(prefill=1, decode=2)
    plan = roll_plan(topology)
    assert [p["variable"] for p in plan["problems"]] == ["sglang_roll_plain_restart"]
    assert "prefill-0 is the only prefill worker" in plan["problems"][0]["message"]
    plan = roll_plan(topology, plain_restart=True)
    assert plan["problems"] == []
    assert [(w["name"], w["plain"]) for w in plan["workers"]] == [("prefill-0", True), ("decode-0", False),
                                                                    ("decode-1", False)]
    assert roll_plan(topology, variable="sglang_upgrade")["problems"][0]["variable"] == "sglang_upgrade_plain_restart"


def test_no_router_is_a_problem():
    topology = build_topology({"p": {"sglang_prefill_instances": [{"name": "p", "port": 1}]}}, {"sglang_prefill": ["p"]})
    assert any(p["variable"] == "sglang_router" for p in roll_plan(topology)["problems"])
