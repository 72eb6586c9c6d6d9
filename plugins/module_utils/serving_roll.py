# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Which workers a rolling restart (or upgrade) takes, in which order, and which cannot be drained.

One worker at a time across the whole stack. A worker is drained (taken out of every router, waited idle,
restarted, put back) unless it is the only worker of its type: the routers would then have none, so every
request fails while it is away. Such a worker is refused unless a plain restart is asked for, which restarts it
in place and says up front how long it will be away.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem, suggest
from ansible_collections.pdserve.sglang.plugins.module_utils.serving_instances import MODES

ORDERS = ("inventory", "decode_first", "pairs")


def _ordered(workers, order):
    prefill = [w for w in workers if w["mode"] == "prefill"]
    decode = [w for w in workers if w["mode"] == "decode"]
    if order == "decode_first":
        return decode + prefill
    if order == "pairs":
        out = []
        for index in range(max(len(prefill), len(decode))):
            out.extend(w[index] for w in (prefill, decode) if index < len(w))
        return out
    return prefill + decode


def roll_plan(topology, hosts=None, instances=None, order="inventory", plain_restart=False, variable="sglang_roll"):
    """``{"workers": [...], "routers": [...], "problems": [...]}`` for a roll over ``topology``.

    ``hosts`` and ``instances`` (inventory host names, instance names) select workers; empty selects all. Every
    worker returned is a topology worker with ``plain`` (restarted in place) and ``peers`` (how many workers of its
    type the stack has). ``variable`` prefixes the variable names the problems cite.
    """
    problems = list(topology.get("problems") or [])
    all_workers = [w for mode in MODES for w in (topology.get("workers") or {}).get(mode) or []]
    routers = list(topology.get("routers") or [])
    if order not in ORDERS:
        problems.append(problem("all", "%s_order" % variable, "is %r%s" % (order, suggest(order, ORDERS)),
                                "use one of: %s" % ", ".join(ORDERS)))
        order = "inventory"
    if not routers:
        problems.append(problem("all", "sglang_router", "the inventory has no router host",
                                "a rolling restart drains workers through the router: put a host in sglang_router"))
    known_hosts = sorted(set(w["inventory_host"] for w in all_workers))
    known_names = sorted(set(w["name"] for w in all_workers))
    for host in hosts or []:
        if host not in known_hosts:
            problems.append(problem(host, "%s_hosts" % variable, "host %r runs no prefill or decode instance%s"
                                    % (host, suggest(host, known_hosts)),
                                    "name hosts of sglang_prefill or sglang_decode: %s" % ", ".join(known_hosts)))
    for name in instances or []:
        if name not in known_names:
            problems.append(problem("all", "%s_instances" % variable, "no instance is named %r%s"
                                    % (name, suggest(name, known_names)),
                                    "name instances of the inventory: %s" % ", ".join(known_names)))
    selected = [w for w in all_workers
                if (not hosts or w["inventory_host"] in hosts) and (not instances or w["name"] in instances)]
    peers = dict((mode, len([w for w in all_workers if w["mode"] == mode])) for mode in MODES)
    workers = []
    for worker in _ordered(selected, order):
        worker = dict(worker, peers=peers[worker["mode"]], plain=peers[worker["mode"]] < 2)
        if worker["plain"] and not plain_restart:
            problems.append(problem(
                worker["inventory_host"], "%s_plain_restart" % variable,
                "%s is the only %s worker: taking it out of the router leaves none, so every request fails until it is "
                "back, which is an outage and not a drain" % (worker["name"], worker["mode"]),
                "add a second %s instance for restarts without failed requests, or set %s_plain_restart: true to restart "
                "it in place (the play says how long it was away last time)" % (worker["mode"], variable)))
        workers.append(worker)
    if not workers and not problems:
        problems.append(problem("all", "%s_instances" % variable, "the selection matches no worker",
                                "select hosts or instances of sglang_prefill and sglang_decode"))
    return {"workers": workers, "routers": routers, "problems": problems}


def roll_summary(worker, removed, idle, restarted, added):
    """One line per worker for the end of the roll, from the module results of its steps (None: step skipped)."""
    parts = []
    if worker.get("plain"):
        parts.append("restarted in place (no other %s worker)" % worker["mode"])
    elif idle:
        held = idle.get("in_flight_at_start") or 0
        text = "drained in %.1f s" % float(idle.get("seconds") or 0.0)
        if held:
            text += " (%d request(s) finished after it left the router%s)" % (
                held, "" if idle.get("idle", True) else ", %d cut" % (idle.get("in_flight") or 0))
        parts.append(text)
    if restarted:
        if restarted.get("restart_to_ready") is not None:
            parts.append("restart-to-ready %.1f s" % float(restarted["restart_to_ready"]))
        if restarted.get("previous_load_seconds") is not None:
            parts.append("previous start %.1f s" % float(restarted["previous_load_seconds"]))
    if added:
        parts.append("back in %d router(s)" % len(added))
    return "%s (%s on %s): %s" % (worker["name"], worker["mode"], worker["inventory_host"], ", ".join(parts) or "-")
