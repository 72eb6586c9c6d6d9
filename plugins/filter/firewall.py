# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter of the sglang_firewall role: a thin wrapper over plugins/module_utils/host/firewall.py."""

from typing import Any, Dict

from ansible.errors import AnsibleFilterError
from ansible_collections.pdserve.sglang.plugins.module_utils.host import firewall
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import report

# What the ruleset reads of every peer's inventory (never anything else: no secret reaches the filter).
_PEER_KEYS = ("ansible_host", firewall.ADDRESSES_VARIABLE, "monitoring_exporter_host")


def firewall_plan(topology: Dict[str, Any], inventory_host: str, hostvars: Any, options: Dict[str, Any]) -> Dict[str, Any]:
    """This host's nftables ruleset and the problems that stop it (see firewall_plan.yml)."""
    if not isinstance(topology, dict) or "hosts" not in topology:
        raise AnsibleFilterError("firewall_plan: input must be the result of pdserve.sglang.serving_topology")
    if not isinstance(options, dict):
        raise AnsibleFilterError("firewall_plan: options must be a mapping, got %r" % (options,))
    options = dict(options)
    peers = set(topology["hosts"]) | set(options.get("prometheus_hosts") or []) | {inventory_host}
    host_vars = {}
    for host in sorted(peers):
        try:
            hv = hostvars[host]
        except KeyError:
            hv = {}
        host_vars[host] = dict((k, hv.get(k)) for k in _PEER_KEYS if hv.get(k) is not None)
    exporter = host_vars.get(inventory_host, {}).get("monitoring_exporter_host")
    options["exporter_hosts"] = {inventory_host: exporter} if exporter else {}
    for key in ("node_exporter_port", "gpu_exporter_port"):
        if options.get(key) is not None:
            try:
                options[key] = int(options[key])
            except (TypeError, ValueError):
                raise AnsibleFilterError("firewall_plan: %s must be a port, got %r" % (key, options[key]))
    plan = firewall.firewall_plan(topology, str(inventory_host), host_vars, options)
    plan["report"] = report(plan["problems"], "the firewall check") if plan["problems"] else ""
    return plan


class FilterModule(object):
    """pdserve.sglang filters of the host firewall."""

    def filters(self):
        return {"firewall_plan": firewall_plan}
