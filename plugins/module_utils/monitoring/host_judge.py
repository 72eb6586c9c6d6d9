# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One host's part of the monitoring layout judged against what the host has (its listening sockets): the
judgement of monitoring_preflight, which monitoring_facts also makes when asked (option ``judge``), so a deploy reads
and judges a host in one round trip."""

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.host import observe as host_observe
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import checks as monitoring_checks

TOPOLOGY_KEYS = ("hosts", "workers", "routers")


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The judgement's options (monitoring_preflight's, and monitoring_facts' ``judge`` suboptions)."""
    return dict(
        host=dict(type="str", required=True),
        topology=dict(type="dict", required=True),
        settings=dict(type="dict", required=True),
        options=dict(type="dict", default={}),
        rules=dict(type="dict"),
        check_ports=dict(type="bool", default=True),
    )


def topology_error(topology: Dict[str, Any]) -> Optional[str]:
    """Why ``topology`` is not the serving topology filter's result, or None."""
    for key in TOPOLOGY_KEYS:
        if key not in topology:
            return "topology has no %r: pass the result of the pdserve.sglang.serving_topology filter" % key
    return None


def judge_host(params: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(problems, ports)`` of ``params`` (the options of argument_spec()), reading the host's listeners."""
    observed = {"listeners": host_observe.listeners() if params.get("check_ports", True) else None}
    options = dict(params.get("options") or {})
    options["own_uids"] = host_observe.uids_of(options.pop("own_users", []) or [])
    problems = monitoring_checks.judge(params["host"], params["topology"], params["settings"], options, observed,
                                       params.get("rules"))
    ports = monitoring_checks.wanted_ports(params["topology"], params["host"], params["settings"], options)
    return problems, [{"port": port, "variable": variable} for port, variable in ports]
