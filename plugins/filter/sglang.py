# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters for the roles' templates and tasks: thin wrappers over the serving model in module_utils.

The logic (instances, topology, command lines, unit files) lives in plugins/module_utils/serving_*.py,
where it is unit-tested; each filter here converts Ansible's values and reports inventory mistakes as
a filter error naming the variables, never as a traceback.
"""

import copy
import json
import multiprocessing

from ansible.errors import AnsibleFilterError
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import roll as serving_roll
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import venv_state
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import line as problem_text
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import report
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import argv
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import precompile as serving_precompile
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.restart_plan import instance_restarts as _instance_restarts
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.restart_plan import rank_restart_phases
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.rules import unit_problems as _unit_problems
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.topology import (
    GROUPS,
    build_topology,
    host_part,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.units import (
    changed_units,
    env_quote,
    router_unit,
    server_unit,
    systemd_quote,
)


# One task's results, by their inputs. A role's derived values name the topology and the units many times in one task
# (the router's file plan named the topology 48 times), and each time would read every serving host's variables and
# build every unit again. A task runs in a worker process of its own, forked for that task and host, where the
# inventory and the facts cannot change: there the first result stands for the rest. Never in ansible-playbook's own
# process, which lives through every task.
_TASK_RESULTS = {}


def _in_task_worker():
    return multiprocessing.parent_process() is not None


def _once_per_task(name, inputs, build):
    """build(), or a copy of its result for the same inputs earlier in this task (see _TASK_RESULTS)."""
    key = None
    if _in_task_worker():
        try:
            key = json.dumps([name, inputs], sort_keys=True, default=repr)
        except (TypeError, ValueError):
            key = None
    if key is not None and key in _TASK_RESULTS:
        return copy.deepcopy(_TASK_RESULTS[key])
    result = build()
    if key is not None:
        _TASK_RESULTS[key] = copy.deepcopy(result)
    return result


def serving_topology(hostvars, groups, defaults, group_names=None):
    """The serving topology of the inventory (see plugins/module_utils/serving/topology.py).

    ``defaults``: sglang_topology_defaults (role pdserve.sglang.sglang_defaults), the value of each per-host variable
    the topology reads for a host that does not set it.
    """
    groups = {name: list(hosts or []) for name, hosts in dict(groups or {}).items()}
    names = dict(GROUPS)
    names.update(group_names or {})
    # hostvars is one object for the whole task: its identity stands for the variables it holds.
    return _once_per_task("serving_topology", [id(hostvars), groups, dict(defaults or {}), names],
                          lambda: _build_serving_topology(hostvars, groups, defaults, names))


def _build_serving_topology(hostvars, groups, defaults, names):
    wanted = set()
    for group in names.values():
        wanted.update(groups.get(group) or [])
    host_vars = {}
    for host in wanted:
        try:
            host_vars[host] = hostvars[host]
        except KeyError:
            host_vars[host] = {}
    return build_topology(host_vars, groups, defaults, names)


def _strict_part(topology, inventory_host):
    entry, problems = host_part(topology, inventory_host)
    if problems:
        raise AnsibleFilterError(report(problems, "the inventory check (run with --tags preflight for all hosts)"))
    return entry


def server_units(topology, inventory_host, mode, model, settings):
    """Unit and env file texts of this host's instances of one mode or a list of modes, in that order (list of dicts,
    see serving_units.server_unit)."""
    entry = _strict_part(topology, inventory_host)
    modes = [mode] if isinstance(mode, str) else list(mode or [])
    for mode in modes:
        if mode not in ("prefill", "decode"):
            raise AnsibleFilterError("mode must be prefill or decode, got %r" % (mode,))
    model, settings = dict(model or {}), dict(settings or {})
    return _once_per_task("server_units", [entry, modes, model, settings],
                          lambda: [server_unit(inst, model, settings) for mode in modes for inst in entry[mode]])


def router_unit_files(topology, inventory_host, settings):
    """Unit and env file texts of the router on this host (dict, see serving_units.router_unit)."""
    entry = _strict_part(topology, inventory_host)
    if entry["router"] is None:
        raise AnsibleFilterError("host %s is not in the router group %s" % (inventory_host, topology["groups"]["router"]))
    local = [i["unit"] for i in entry["prefill"] + entry["decode"]]
    return router_unit(entry["router"], topology.get("router_workers", topology["workers"]), dict(settings, local_units=local))


def flag_check_lines(units):
    """[{name, argv}] for pdserve.sglang.sglang_flag_check from server_units/router_unit_files results."""
    if isinstance(units, dict):
        units = [units]
    # check_lines: the router's lines with a placeholder for each key its launcher adds (never the key).
    return [{"name": u.get("name") or u["unit"], "argv": argv(u.get("check_lines") or u["argv_lines"])} for u in units]


def unit_services(units):
    """[{unit, unit_path, env_file}] for pdserve.sglang.managed_files' services, from server_units/router_unit_files."""
    if isinstance(units, dict):
        units = [units]
    services = []
    for u in units:
        service = {"unit": u["unit"], "unit_path": u["unit_path"], "env_file": u["env_file"]}
        if u.get("credential_files"):
            service["credential_files"] = list(u["credential_files"])
        services.append(service)
    return services


def roll_plan(topology, hosts=None, instances=None, order="inventory", plain_restart=False,
              variable="sglang_operations_roll", upgrade=False):
    """Workers of a rolling restart or upgrade, ordered, with problems and warnings (see serving_roll.roll_plan)."""
    return serving_roll.roll_plan(topology, hosts or [], instances or [], order, bool(plain_restart), variable,
                                  bool(upgrade))


def roll_plan_lines(plan, estimates=None, drain_timeout=300, on_drain_timeout="fail", what="Rolling restart"):
    """What a roll will do, before it starts (see serving_roll.plan_lines)."""
    return serving_roll.plan_lines(plan, estimates or [], drain_timeout, on_drain_timeout, what)


def roll_report(records, before=None, after=None):
    """One line per rolled worker from the play hosts' records and counters (see serving_roll.roll_report)."""
    return serving_roll.roll_report(records or [], before or [], after or [])


def problem_line(item):
    """One problem ({host, variable, message, fix}) as a readable line."""
    return problem_text(item)


def unit_problems(settings, host, role):
    """What the renderer would refuse in a role's unit settings, as problems (the preflight's settings scope, judged
    on the controller without a round trip). Problems name variables, never a value."""
    if role not in ("server", "router"):
        raise AnsibleFilterError("unit_problems: role must be server or router, got %r" % (role,))
    if settings is not None and not isinstance(settings, dict):
        raise AnsibleFilterError("unit_problems: pass the role's settings as a dict")
    return _unit_problems(host, role, settings)


def instance_env_files(names, config_dir):
    """[{name, env_file}] of instance names, for pdserve.sglang.venv_state."""
    return venv_state.instance_env_files(names, config_dir)


def switch_sources(instances):
    """{name: {venv, version}} from venv_state's instances: where a failed switch returns each instance."""
    return venv_state.switch_sources(instances)


def release_label(source, version, git_version=None):
    """What a unit's fingerprint says the model servers run (see venv_state.release_label)."""
    return venv_state.release_label(source, version, git_version)


def venv_name(version, source="pypi", git_version=None):
    """The directory name of a versioned venv (sglang-0.5.24, sglang-git-<ref>)."""
    return venv_state.venv_name(version, source, git_version)


def wait_endpoints(topology, inventory_host, modes=("prefill", "decode")):
    """pdserve.sglang.wait_ready endpoints for this host's servers, reached from the host itself.

    A rank of an instance over several nodes carries ``rank`` and ``nnodes`` and is named with its rank: rank 0's
    wait is the instance's (its real API: it answers only once every rank joined), a rank > 0's confirms that rank's
    unit is active and its dummy /health answers, and is never taken for the instance's readiness. A prefill rank 0 also
    waits for its bootstrap server to count every prefill rank registered (``bootstrap_url``)."""
    entry, _problems = host_part(topology, inventory_host)
    out = []
    for mode in modes:
        for inst in entry[mode]:
            if not inst.get("local_url"):
                continue
            endpoint = {"url": inst["local_url"], "kind": "server", "unit": inst["unit"], "name": inst["unit"]}
            if (inst.get("nnodes") or 1) > 1:
                rank = inst.get("node_rank") or 0
                endpoint.update(rank=rank, nnodes=inst["nnodes"], nodes=list(inst.get("nodes") or []),
                                name="%s (node rank %d of %d)" % (inst["unit"], rank, inst["nnodes"]))
                if mode == "prefill" and rank == 0 and inst.get("bootstrap_local_url"):
                    # Rank 0's bootstrap server counts the prefill ranks of every node.
                    endpoint["bootstrap_url"] = inst["bootstrap_local_url"]
            out.append(endpoint)
    return out


def instance_restarts(topology, hostvars, play_hosts, inventory_host, result="__sglang_server_written", own=False,
                      phases=False):
    """[{unit, rank, reasons}] of ``inventory_host``: ranks of instances over several nodes to restart because their
    files changed on another node of the play (the ``restarts_left`` of each host's write, registered as ``result``),
    rank 0 first (see serving.restart_plan.instance_restarts). ``own``: also those whose files changed on this host
    (every rank of a changed instance). ``phases``: {stop_rank0, stop_others, start} of them, the order the play runs
    on every host together (serving.restart_plan.rank_restart_phases)."""
    changed = {}
    for host in play_hosts or []:
        try:
            written = hostvars[host].get(result) or {}
        except KeyError:
            written = {}
        changed[host] = [item.get("unit") for item in written.get("restarts_left") or [] if isinstance(item, dict)]
    restarts = _instance_restarts(topology, changed, own=bool(own)).get(inventory_host, [])
    return rank_restart_phases(restarts) if phases else restarts


def play_modes(group_names, run_tags, skip_tags=(), group_of=None):
    """The server modes a site.yml play deploys or waits for on a host: those of the host's groups that the run selects.

    ``--tags prefill`` (or decode) names its own modes; a run that names neither (no tags, validate, install,
    configure, ...) takes both; ``--skip-tags`` leaves a mode out. ``group_of``: {mode: group name}, the topology's
    group names (GROUPS by default)."""
    names = dict((mode, GROUPS[mode]) for mode in ("prefill", "decode"))
    names.update(dict((k, v) for k, v in (group_of or {}).items() if k in names and v))
    run_tags, skip_tags = set(run_tags or ()), set(skip_tags or ())
    named = [mode for mode in ("prefill", "decode") if mode in run_tags]
    return [mode for mode in (named or ["prefill", "decode"])
            if names[mode] in (group_names or ()) and mode not in skip_tags]


def ready_line(endpoint):
    """One summary line for a wait_ready endpoint result."""
    name = endpoint.get("name") or endpoint.get("url")
    if endpoint.get("ready"):
        line = "%s %s ready in %.1f s" % (name, endpoint.get("url"), float(endpoint.get("seconds") or 0.0))
    else:
        line = "%s %s NOT ready (%s)" % (name, endpoint.get("url"),
                                         endpoint.get("failure") or endpoint.get("last_status") or "no answer")
    workers = (endpoint.get("details") or {}).get("workers")
    if endpoint.get("kind") == "router" and isinstance(workers, dict):
        parts = []
        for kind in sorted(workers):
            value = workers[kind]
            if isinstance(value, dict):
                if not value.get("total"):
                    continue
                parts.append("%s %s/%s healthy" % (kind, value.get("healthy"), value.get("total")))
            else:
                parts.append("%s %s" % (kind, value))
        line += " (workers: %s)" % ", ".join(parts)
    if endpoint.get("registered"):
        line += "; registered once up: %s" % ", ".join(endpoint["registered"])
    startup = endpoint.get("startup")
    if isinstance(startup, dict) and startup.get("line"):
        # where the server's last start spent its time, as SGLang logged it (wait_ready's startup)
        line += "; last start:" + str(startup["line"])[len(str(endpoint.get("name"))):]
    return line


def precompile_runs(units, names, timeout, gpu_facts=None):
    """The precompile entries (module_utils/serving/precompile.py) of the named ``units`` (server_units' results)
    that can be precompiled, each with its ``argv`` (systemd-run with the unit's settings, ``--timeout``) and the
    record's ``inputs`` keyed by the GPUs of the instance (``gpu_facts``: the host's gpu_facts result).

    The runs of instances over several hosts come first, by name: every node runs them in the same order, one after
    the other, so each rank 0 finds its other ranks compiling beside it (two nodes in opposite orders would each wait
    at a rendezvous for a rank the other has not started); the single-host ones follow in the units' order."""
    names = set(names or [])
    host_gpus = (gpu_facts or {}).get("gpus") or []
    out = []
    for unit in units or []:
        entry = unit.get("precompile") if isinstance(unit, dict) else None
        if unit.get("name") in names and entry:
            out.append(dict(entry, argv=serving_precompile.systemd_run_argv(entry, timeout), unit_of=unit["unit"],
                            inputs=serving_precompile.record_inputs(entry, host_gpus)))
    return sorted(out, key=lambda run: (0, run["name"]) if run.get("spans") else (1, ""))


def precompile_wanted(setting, gpu_facts=None):
    """Whether to precompile with ``setting`` (always, never, auto) and the host's gpu_facts result (auto: where a GPU
    is sm_90 or sm_100, the parts DeepGEMM runs on)."""
    if setting not in ("always", "never", "auto"):
        raise AnsibleFilterError("sglang_server_precompile must be auto, always or never, got %r" % (setting,))
    return serving_precompile.wanted(setting, (gpu_facts or {}).get("gpus") or [])


def precompile_failures(results, host, phase):
    """The failed runs among the run task's loop ``results`` (an rc other than 0), one message each naming the
    instance, the ``phase`` it failed in, the tool's last lines and the transient unit's journal; [] when none."""
    out = []
    for result in results or []:
        if not isinstance(result, dict) or result.get("rc") in (None, 0):
            continue
        entry = (result.get("item") or {}).get("item") or {}
        output = "\n".join(str(result.get(key) or "") for key in ("stdout", "stderr"))
        out.append(serving_precompile.failure(entry.get("name"), host, result.get("rc"), output, phase, entry.get("unit")))
    return out


def precompile_refusal(workers, host, kind, outage_ok=False):
    """The upgrade judge's refusal to precompile the only worker of a type on ``host`` (serving_roll.precompile_refusal),
    or "" where it may."""
    return serving_roll.precompile_refusal(workers, host, kind, bool(outage_ok))


def precompile_line(result):
    """One line about a precompile command's result (a loop result of the run task, which loops over the inputs_record
    comparisons: ``item.item`` is the run)."""
    result = result or {}
    entry = (result.get("item") or {}).get("item") or {}
    if result.get("skipped"):
        return "%s: skipped" % entry.get("name")
    # SGLang's and the emulator's logging goes to stderr, their prints to stdout.
    output = "\n".join(str(result.get(key) or "") for key in ("stdout", "stderr"))
    return serving_precompile.outcome(entry.get("name"), result.get("rc"), output)


class FilterModule(object):
    """pdserve.sglang filters."""

    def filters(self):
        return {
            "serving_topology": serving_topology,
            "server_units": server_units,
            "router_unit_files": router_unit_files,
            "flag_check_lines": flag_check_lines,
            "wait_endpoints": wait_endpoints,
            "changed_units": changed_units,
            "unit_services": unit_services,
            "roll_plan": roll_plan,
            "roll_plan_lines": roll_plan_lines,
            "roll_report": roll_report,
            "problem_line": problem_line,
            "unit_problems": unit_problems,
            "venv_name": venv_name,
            "release_label": release_label,
            "instance_env_files": instance_env_files,
            "switch_sources": switch_sources,
            "ready_line": ready_line,
            "play_modes": play_modes,
            "instance_restarts": instance_restarts,
            "systemd_quote": systemd_quote,
            "env_quote": env_quote,
            "precompile_runs": precompile_runs,
            "precompile_wanted": precompile_wanted,
            "precompile_line": precompile_line,
            "precompile_failures": precompile_failures,
            "precompile_refusal": precompile_refusal,
        }
