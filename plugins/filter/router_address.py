# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the routers' virtual address: thin wrappers over plugins/module_utils/serving/keepalived.py (the role
sglang_router_address) and plugins/module_utils/operations/router_handoff.py (the day-2 router roll)."""

from typing import Any, Dict, List, Optional

from ansible.errors import AnsibleFilterError
from ansible_collections.pdserve.sglang.plugins.module_utils.host import firewall
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import report
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import router_handoff
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import keepalived

# What the plan reads of every router host's inventory (never anything else: no secret reaches the filter).
_PEER_KEYS = ("ansible_host", firewall.ADDRESSES_VARIABLE)


def router_address_plan(topology: Dict[str, Any], inventory_host: str, hostvars: Any, settings: Dict[str, Any],
                        ip_addr: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """This router host's keepalived configuration and the problems that stop it (see router_address_plan.yml)."""
    if not isinstance(topology, dict) or "hosts" not in topology:
        raise AnsibleFilterError("router_address_plan: input must be the result of pdserve.sglang.serving_topology")
    if not isinstance(settings, dict):
        raise AnsibleFilterError("router_address_plan: settings must be a mapping, got %r" % (settings,))
    shared = topology.get("router_address")
    if not shared:
        return {"problems": [], "interface": "", "source": None, "peers": [], "content": "", "report": "",
                "enabled": False}
    host_vars = {}
    for host in shared["hosts"]:
        try:
            hv = hostvars[host]
        except KeyError:
            hv = {}
        host_vars[host] = dict((k, hv.get(k)) for k in _PEER_KEYS if hv.get(k) is not None)
    result = keepalived.plan(shared, str(inventory_host), firewall.peer_addresses(host_vars), settings, ip_addr)
    result["report"] = report(result["problems"], "the routers' virtual address check") if result["problems"] else ""
    result["enabled"] = True
    return result


def router_handoff_plan(topology: Dict[str, Any], inventory_host: str, hostvars: Any, handoff_port: Any) -> Dict[str, Any]:
    """How this router host's router restarts without a failed request (see router_handoff_plan.yml)."""
    if not isinstance(topology, dict) or "hosts" not in topology:
        raise AnsibleFilterError("router_handoff_plan: input must be the result of pdserve.sglang.serving_topology")
    host_vars = {}
    for router in topology.get("routers") or []:
        host = router["inventory_host"]
        try:
            hv = hostvars[host]
        except KeyError:
            hv = {}
        host_vars[host] = dict((k, hv.get(k)) for k in _PEER_KEYS if hv.get(k) is not None)
    result = router_handoff.plan(topology, str(inventory_host), firewall.peer_addresses(host_vars), handoff_port)
    result["report"] = report(result["problems"], "the router roll's check") if result["problems"] else ""
    return result


class FilterModule(object):
    """pdserve.sglang filters of the routers' virtual address."""

    def filters(self):
        return {"router_address_plan": router_address_plan, "router_handoff_plan": router_handoff_plan}
