# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Why a unit restarts, read from the old and new text of its unit and environment files.

A restart plan a person reads at a glance: one line per unit with its reasons, for example
``sglang-decode-0.service on gpu-decode-1: restart (fingerprint sglang 0.5.23 -> 0.5.24; unit --mem-fraction-static)``.
The reasons name what changed, never a value, except the fingerprint: the ``PDSERVE_*`` lines every env file
carries (``PDSERVE_SGLANG``, ``PDSERVE_SGLANG_ROUTER``, ``PDSERVE_VENV``, ``PDSERVE_MODEL``), which say what the
unit runs and hold no secret.
"""

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

FINGERPRINT_PREFIX = 'PDSERVE_'
_KEY = re.compile(r'^([A-Za-z][A-Za-z0-9_]*)=(.*)$')
_FLAG = re.compile(r'^\s+"?(--?[A-Za-z0-9][A-Za-z0-9_.-]*)')


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace('\\\\', '\\')
    return value


def fingerprint(env_text: Optional[str]) -> Dict[str, str]:
    """{field: value} of the PDSERVE_* lines of an env file (field = the rest of the name, lower case)."""
    out = {}
    for line in (env_text or '').splitlines():
        match = _KEY.match(line)
        if match and match.group(1).startswith(FINGERPRINT_PREFIX):
            out[match.group(1)[len(FINGERPRINT_PREFIX):].lower()] = _unquote(match.group(2))
    return out


def _settings(text):
    """{name: line} of a unit or env file: ``Key=`` lines by key, ExecStart continuation lines by flag."""
    out = {}
    exec_start = []
    in_exec = False
    for raw in (text or '').splitlines():
        if raw.startswith('#') or not raw.strip():
            in_exec = False
            continue
        # The continuation backslash moves to another line when a flag is added after it: not a change.
        line = raw.rstrip('\\').rstrip()
        flag = _FLAG.match(line) if in_exec else None
        if flag:
            name = flag.group(1).split('=')[0]
            out[name] = out.get(name, '') + line
        elif in_exec and line.startswith(' '):
            exec_start.append(line)  # the launch command after a numactl prefix
        else:
            match = _KEY.match(line)
            if match:
                key = match.group(1)
                if key == 'ExecStart':
                    exec_start.append(line)
                elif not key.startswith(FINGERPRINT_PREFIX):
                    out[key] = out.get(key, '') + line
            else:
                out[line] = line
        in_exec = raw.rstrip().endswith('\\') and (in_exec or raw.startswith('ExecStart='))
    if exec_start:
        out['ExecStart'] = '\n'.join(exec_start)
    return out


def changed_settings(before: Optional[str], after: Optional[str]) -> List[str]:
    """Names of the keys and flags whose lines differ, in the order of the new file (removed ones last)."""
    old = _settings(before)
    new = _settings(after)
    names = [name for name in new if old.get(name) != new[name]]
    names += [name for name in old if name not in new]
    return names


def _fingerprint_reasons(old, new):
    reasons = []
    for field in sorted(set(old) | set(new)):
        before, after = old.get(field) or '(none)', new.get(field) or '(none)'
        if before == after:
            continue
        if field == 'venv' and before.rsplit('/', 1)[0] and before.rsplit('/', 1)[0] == after.rsplit('/', 1)[0]:
            # Versioned venvs side by side: the names say it.
            reasons.append('fingerprint venv %s -> %s (in %s)' % (before.rsplit('/', 1)[1], after.rsplit('/', 1)[1],
                                                                  before.rsplit('/', 1)[0]))
        else:
            reasons.append('fingerprint %s %s -> %s' % (field.replace('_', '-'), before, after))
    return reasons


def unit_reasons(unit_before: Optional[str], unit_after: Optional[str], env_before: Optional[str],
                 env_after: Optional[str], attributes_changed: Iterable[str] = ()) -> List[str]:
    """The reasons one unit restarts, from the texts of its unit file and env file (None: the file is new).

    The fingerprint comes first. When only the venv moved, the unit's ExecStart (which names the venv) is not
    listed again: the fingerprint already says it.
    """
    if unit_before is None and env_before is None:
        return ['new unit']
    old_print = fingerprint(env_before)
    new_print = fingerprint(env_after)
    reasons = _fingerprint_reasons(old_print, new_print)
    if unit_before != unit_after:
        before = unit_before
        old_venv, new_venv = old_print.get('venv'), new_print.get('venv')
        if before is not None and old_venv and new_venv and old_venv != new_venv:
            before = before.replace(old_venv + '/', new_venv + '/')
        names = changed_settings(before, unit_after) if before is not None else ['new file']
        if names:
            reasons.append('unit %s' % ', '.join(names))
    if env_before != env_after:
        names = changed_settings(env_before, env_after) if env_before is not None else ['new file']
        if names:
            reasons.append('env %s' % ', '.join(names))
    for what in attributes_changed or ():
        reasons.append('%s owner/mode' % what)
    return reasons or ['files rewritten']


def plan_line(host: str, entry: Dict[str, Any]) -> str:
    """``unit on host: restarted (reasons)`` or ``would restart`` for a planned one; for a router's worker changes
    (action ``workers``), ``workers registered/deregistered, no restart``."""
    if entry.get('action') == 'workers':
        verb = ('would register/deregister workers, no restart' if entry.get('planned')
                else 'workers registered/deregistered, no restart')
    else:
        verb = 'would restart' if entry.get('planned') else 'restarted'
    return '%s on %s: %s (%s)' % (entry.get('unit'), host, verb, '; '.join(entry.get('reasons') or ['?']))


def merge(entries: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Entries of one host, merged by unit (and action: a worker change is not a restart; ``restart`` is the default,
    so a rank restarted with its instance merges with its own files' change) in first-seen order: reasons joined,
    planned only if all were."""
    merged: Dict[Tuple[Any, Any], Dict[str, Any]] = {}
    order = []
    for entry in entries:
        unit = entry.get('unit')
        key = (unit, entry.get('action') if entry.get('action') != 'restart' else None)
        if key not in merged:
            merged[key] = {'unit': unit, 'reasons': [], 'planned': True}
            if key[1]:
                merged[key]['action'] = key[1]
            order.append(key)
        target = merged[key]
        for reason in entry.get('reasons') or []:
            if reason not in target['reasons']:
                target['reasons'].append(reason)
        target['planned'] = target['planned'] and bool(entry.get('planned'))
    return [merged[u] for u in order]


def instance_restarts(topology: Dict[str, Any], changed: Dict[str, Iterable[str]],
                      own: bool = False) -> Dict[str, List[Dict[str, Any]]]:
    """``{host: [{unit, rank, reasons, restarts}]}``: the ranks of instances over several nodes that restart because their unit
    or env file changed on ANOTHER node (``changed``: {host: units restarted there for their own files}); with ``own``,
    also the ranks whose files changed on their own node: then every rank of a changed instance, each restarted
    through the ordered stop and start of ``rank_restart_phases`` rather than alone.

    An instance over several nodes is one restart group: a rank cannot rejoin a running group, and after rank 0 stops
    the other ranks exit and stay down. So a change on any node restarts every rank; each host's list is ordered rank 0
    first, the order in which an instance is stopped (rank 0's shutdown broadcast ends the other ranks).
    """
    changed = dict((host, set(units or [])) for host, units in (changed or {}).items())
    out = {}  # type: Dict[str, List[Dict[str, Any]]]
    for host, entry in (topology.get("hosts") or {}).items():
        for mode in ("prefill", "decode"):
            for inst in entry.get(mode) or []:
                nodes = inst.get("nodes") or []
                if len(nodes) < 2 or (not own and inst["unit"] in changed.get(host, set())):
                    continue
                where = [n for n in nodes if inst["unit"] in changed.get(n, set())]
                if where:
                    reasons = ["instance %s over %s: changed on %s" % (inst["name"], ", ".join(nodes), ", ".join(where))]
                    # restarts: the entry the restart_plan callback prints for this loop item once it restarted.
                    out.setdefault(host, []).append({
                        "unit": inst["unit"], "rank": inst.get("node_rank", 0), "reasons": reasons,
                        "restarts": [{"unit": inst["unit"], "action": "restart", "reasons": reasons}]})
    for host in out:
        out[host].sort(key=lambda item: (item["rank"], item["unit"]))
    return out


RANK_PHASES = ("stop_rank0", "stop_others", "start")


def rank_restart_phases(restarts: Iterable[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    """One host's ranks to restart (``instance_restarts`` with ``own``) as the three steps every host of the play runs
    together, each step finished on every host before the next begins:

    1. ``stop_rank0``: stop each instance's rank 0. SGLang's rank 0 drains and broadcasts ShutdownReq; the other ranks
       exit (they ignore SIGTERM until then, so stopping one of them first would wait out its TimeoutStopSec and end
       in SIGKILL, and the rank 0 left running would die on the broken group or block).
    2. ``stop_others``: stop the ranks > 0; most have exited already, ``systemctl stop`` waits for the rest, bounded by
       their (longer) TimeoutStopSec.
    3. ``start``: start every rank; rank 0 waits for the others at its rendezvous, within ``dist_timeout``, so their
       order does not matter.
    """
    restarts = list(restarts or [])
    return {
        "stop_rank0": [r for r in restarts if not r.get("rank")],
        "stop_others": [r for r in restarts if r.get("rank")],
        "start": restarts,
    }
