# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Which workers a rolling restart (or upgrade) takes, in which order, and which cannot be drained.

One worker at a time across the whole stack. A worker is drained (taken out of every router, waited idle,
restarted, put back) unless it is the only worker of its type: the routers would then have none, so every
request fails while it is away. Such a worker is refused unless a plain restart is asked for, which restarts it
in place and says up front how long it will be away. In an upgrade or rollback the same in-place move also means
that clients reach the new version before it is validated (it never leaves the router): that needs its own opt-in,
``<prefix>_unvalidated_restart``, and the plan says so before anything starts. An instance over several hosts is one
worker: it leaves the routers by rank 0's URL, and its ranks stop and start together on every node.
"""

from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem, suggest
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.instances import MODES
from ansible_collections.pdserve.sglang.plugins.module_utils.validation.startup_phases import phase_parts

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


def roll_plan(topology: Dict[str, Any], hosts: Optional[List[str]] = None, instances: Optional[List[str]] = None,
              order: str = "inventory", plain_restart: bool = False, variable: str = "sglang_operations_roll",
              upgrade: bool = False) -> Dict[str, Any]:
    """``{"workers": [...], "routers": [...], "problems": [...], "warnings": [...]}`` for a roll over ``topology``.

    ``hosts`` and ``instances`` (inventory host names, instance names) select workers; empty selects all. Every
    worker returned is a topology worker with ``in_service`` (false: in no router, so restarted without them and
    not counted as a peer), ``rank_hosts`` (the hosts of its ranks, rank 0's first: every node of an instance over
    several hosts), ``plain`` (restarted in place), ``unvalidated`` (an upgrade's in-place
    move: clients reach the new version before it is validated) and ``peers`` (how many workers of its type the stack
    has). ``variable`` prefixes the variable names the problems cite. ``upgrade``: the roll moves workers to another
    venv (upgrade or rollback); the opt-in for in-place workers is then ``<variable>_unvalidated_restart``.
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
    # An instance over several hosts is one worker on every node of its ranks (nodes: rank 0's first), selected by any.
    all_workers = [dict(w, rank_hosts=list(w.get("nodes") or [w["inventory_host"]])) for w in all_workers]
    known_hosts = sorted(set(h for w in all_workers for h in w["rank_hosts"]))
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
                if (not hosts or set(w["rank_hosts"]) & set(hosts)) and (not instances or w["name"] in instances)]
    # Only workers in service are in the routers: one out of service is restarted without them, and is no peer.
    peers = dict((mode, len([w for w in all_workers if w["mode"] == mode and w.get("in_service", True)]))
                 for mode in MODES)
    workers = []
    warnings = []
    for index, worker in enumerate(_ordered(selected, order)):
        in_service = bool(worker.get("in_service", True))
        plain = in_service and peers[worker["mode"]] < 2
        worker = dict(worker, index=index, peers=peers[worker["mode"]], plain=plain, in_service=in_service,
                      unvalidated=plain and bool(upgrade))
        if worker["unvalidated"] and not plain_restart:
            problems.append(problem(
                worker["inventory_host"], "%s_unvalidated_restart" % variable,
                "%s is the only %s worker: draining it would leave none, so it can only be moved in place, and then "
                "clients reach the new version as soon as it answers /health, before it is validated (a failed "
                "validation returns it to its venv, but the requests it served meanwhile came from the unvalidated "
                "version), and every request fails while it restarts" % (worker["name"], worker["mode"]),
                "add a second %s instance so the upgrade drains and validates it before it serves, or set "
                "%s_unvalidated_restart: true to accept that clients reach the new version before it is validated"
                % (worker["mode"], variable)))
        elif worker["unvalidated"]:
            warnings.append(
                "%s (%s on %s) is the only %s worker: it is moved in place, so clients reach the new version as soon "
                "as it answers /health, before it is validated, and every request fails while it restarts (%s_"
                "unvalidated_restart is true)" % (worker["name"], worker["mode"], worker["inventory_host"],
                                                  worker["mode"], variable))
        elif worker["plain"] and not plain_restart:
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
    return {"workers": workers, "routers": routers, "problems": problems, "warnings": warnings}


def precompile_refusal(workers: Optional[Iterable[Dict[str, Any]]], host: str, kind: str,
                       outage_ok: bool = False) -> str:
    """Why an ``upgrade`` must not precompile on ``host`` (the judge's refusal), or "" where it may.

    The precompile (sglang_server_precompile) needs the instance's port and GPUs, so it stops the instance; a worker
    that is drained first costs nothing, but the only worker of its type (``plain`` in the plan: moved in place) is
    then an outage of its type for as long as the compile takes. ``workers``: the plan's workers; ``outage_ok``:
    sglang_operations_upgrade_precompile_outage. A rollback returns to a venv compiled before: it never precompiles such
    a worker and is never refused here. The caller refuses only where the precompile is on (GPUs DeepGEMM runs on).
    """
    if kind != "upgrade" or outage_ok:
        return ""
    lone = [w for w in workers or [] if w.get("plain") and w.get("inventory_host") == host]
    if not lone:
        return ""
    return ("%s on %s: %s would stop for the DeepGEMM precompile in the new venv "
            "(sglang_server_precompile), an outage for as long as the compile takes; set "
            "sglang_operations_upgrade_precompile_outage=true to accept it, or sglang_server_precompile=never to upgrade "
            "without precompiling (the new version then compiles during its start)"
            % (", ".join("%s (%s)" % (w["name"], w["mode"]) for w in lone), host,
               "the only worker of its type" if len(lone) == 1 else "each the only worker of its type"))


def _seconds(value):
    return "?" if value is None else "%.1f s" % float(value)


def plan_lines(plan: Dict[str, Any], estimates: Optional[Iterable[Any]] = (), drain_timeout: float = 300,
               on_drain_timeout: str = "fail", what: str = "Rolling restart") -> List[str]:
    """What the roll will do, said before it starts; ``estimates``: server_restart check-mode results (loop items)."""
    load = dict((e.get("item", {}).get("unit"), e.get("previous_load_seconds"))
                for e in estimates or [] if isinstance(e, dict))
    routers = plan.get("routers") or []
    names = ", ".join(r["inventory_host"] for r in routers)
    then = "cut them" if on_drain_timeout == "cut" else "stop"
    lines = ["%s of %d worker(s), one at a time; each leaves %d router(s) (%s) and finishes its requests (up to %s s, "
             "then %s) before it restarts" % (what, len(plan["workers"]), len(routers), names, drain_timeout, then)]
    for number, worker in enumerate(plan["workers"], 1):
        hosts = worker.get("rank_hosts") or [worker["inventory_host"]]
        head = "%d. %s (%s on %s, %s)" % (number, worker["name"], worker["mode"], ", ".join(hosts), worker["url"])
        line = head
        if not worker.get("in_service", True):
            line += ": out of service (in_service: false), so it is restarted without leaving or rejoining a router"
        elif worker.get("plain"):
            seconds = load.get(worker["unit"])
            expected = _seconds(seconds) if seconds is not None else (
                "its load time (unknown: no 'fired up' line since its last start)")
            line += (": the only %s worker, restarted in place - every request fails while it is away: expect an outage "
                     "of about %s (its last start took that long), plus the router's health checks"
                     % (worker["mode"], expected))
            if worker.get("unvalidated"):
                line += "; clients reach the new version before it is validated"
        if len(hosts) > 1:
            line += "%sone instance over %d hosts, its ranks stopped (rank 0 first) and started together" % (
                "; " if line != head else ": ", len(hosts))
        lines.append(line)
    return lines


def _by_item(results):
    return dict(((r.get("item") or {}).get("name"), r) for r in results or [] if isinstance(r, dict))


def roll_report(records: Optional[Iterable[Optional[List[Dict[str, Any]]]]],
                before: Optional[Iterable[Optional[Dict[str, Any]]]] = (),
                after: Optional[Iterable[Optional[Dict[str, Any]]]] = ()) -> List[str]:
    """One line per rolled worker, in roll order. Per host of the play (aligned lists): its records (roll_worker.yml),
    and the loop results of worker_idle (wait=false) over its workers before and after the roll (the counters).

    ``sglang:num_requests_total`` restarts at 0 with the server, so the requests a worker served during the roll are
    its count at each restart (minus the count before the roll, for the first) plus its count at the end.
    """
    before = list(before or [])
    after = list(after or [])
    workers = {}
    order = []
    for position, got in enumerate(records or []):
        first = _by_item(((before[position] if position < len(before) else None) or {}).get("results"))
        last = _by_item(((after[position] if position < len(after) else None) or {}).get("results"))
        for record in got or []:
            name = (record["worker"]["inventory_host"], record["worker"]["name"])
            if name not in workers:
                workers[name] = {"worker": record["worker"], "records": [], "first": first.get(name[1]),
                                 "last": last.get(name[1])}
                order.append(name)
            workers[name]["records"].append(record)
    order.sort(key=lambda name: workers[name]["worker"].get("index", 0))
    lines = [_report_line(**workers[name]) for name in order]
    compiles = compile_count([record for name in order for record in workers[name]["records"]])
    if compiles:
        lines.append(compiles)
    return lines


def compile_count(records: Optional[Iterable[Dict[str, Any]]]) -> str:
    """``Kernel compiles across the 4 restarts: 0 (...)``: the kernels the new starts compiled, summed from each start's
    journal (startup_phases' ``kernels_compiled``); '' when no start said (SGLang 0.5.23 does not log it, the emulator
    does). A start that did not say is counted as unknown, never as 0."""
    counts = []
    for record in records or []:
        report = (record.get("restarted") or {}).get("startup") or {}
        counts.append((record["worker"]["name"], report.get("kernels_compiled")))
    if not any(count is not None for _name, count in counts):
        return ""
    known = [count for _name, count in counts if count is not None]
    unknown = len(counts) - len(known)
    return "Kernel compiles across the %d restart(s): %d%s (%s)" % (
        len(counts), sum(known), (", %d start(s) did not say" % unknown) if unknown else "",
        ", ".join("%s %s" % (name, "?" if count is None else count) for name, count in counts))


def _start(restarted):
    """`` (start: 12.8 s: load weights 8.1 s, ...)``: where the new start spent its time (server_restart's ``startup``)."""
    report = restarted.get("startup")
    if not report or report.get("ready_s") is None:
        return ""
    parts = phase_parts(report)
    return " (start: %.1f s%s)" % (report["ready_s"], (": " + ", ".join(parts)) if parts else "")


def _report_line(worker, records, first, last):
    parts = []
    served = 0
    known = first is not None and last is not None
    for number, record in enumerate(records):
        idle = record.get("idle") or {}
        restarted = record.get("restarted") or {}
        prefix = "restart %d%s: " % (number + 1, "" if record.get("ok", True) else " (failed)") \
            if len(records) > 1 or not record.get("ok", True) else ""
        if worker.get("plain"):
            parts.append("%srestarted in place (the only %s worker), away %s%s"
                         % (prefix, worker["mode"], _seconds(restarted.get("restart_to_ready")), _start(restarted)))
        else:
            held = idle.get("in_flight_at_start") or 0
            text = "%sdrain %s" % (prefix, _seconds(idle.get("seconds")))
            if held:
                text += " (%d request(s) finished after it left the router" % held
                text += (", %d cut)" % idle.get("in_flight", 0)) if not idle.get("idle", True) else ")"
            parts.append(text)
            parts.append("restart-to-ready %s%s" % (_seconds(restarted.get("restart_to_ready")), _start(restarted)))
        if idle.get("requests_total") is None:
            known = False
        else:
            base = int((first or {}).get("requests_total") or 0) if number == 0 else 0
            served += int(idle["requests_total"]) - base
    if known:
        end = int(last.get("requests_total") or 0)
        parts.append("served %d requests during the roll (%d before its restart%s, %d after)"
                     % (served + end, served, "s" if len(records) > 1 else "", end))
    else:
        parts.append("served ? requests during the roll")
    return "%s (%s on %s): %s" % (worker["name"], worker["mode"], worker["inventory_host"], ", ".join(parts))
