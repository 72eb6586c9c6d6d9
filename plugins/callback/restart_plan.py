# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
name: restart_plan
type: aggregate
short_description: End the run with one line per unit that restarted, or would restart in check mode, and why
version_added: 0.4.0
description:
  - Collects the C(restarts) that the collection's modules return (M(pdserve.sglang.managed_files) for units whose
    unit or environment file changed, M(pdserve.sglang.server_restart) for rolling restarts and upgrades,
    M(pdserve.sglang.router_workers) for workers a running router registered or deregistered without a restart,
    printed as C(workers registered/deregistered, no restart); the ranks of an instance over several hosts that restart
    because a file changed on another of its nodes, from the loop items of that task) and prints them after the play recap, one line per unit
    and host, with the reasons merged
    (C(sglang-decode-0.service on gpu-decode-1 - would restart (fingerprint sglang 0.5.23 -> 0.5.24; unit --mem-fraction-static))).
  - The reasons are the fingerprint lines of the env file (SGLang and router version, venv, model revision), then the
    names of the changed keys and flags of the unit file and the env file; never a value of those.
  - In check mode (C(--check --diff)) it is the plan of what a real run would restart; nothing on the hosts changes.
  - It only prints; the roles and playbooks do not depend on it.
requirements:
  - Enable it, for example C(ANSIBLE_CALLBACKS_ENABLED=pdserve.sglang.restart_plan) or C(callbacks_enabled) in ansible.cfg.
'''

from ansible import context
from ansible.plugins.callback import CallbackBase

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.restart_plan import merge, plan_line


def restarts_of(result, check_mode=False):
    """The restart entries in one task result (a loop's items included), as a list of dicts. A loop item that carries
    its own C(restarts) (the ranks of an instance over several hosts restarted by ansible.builtin.systemd_service)
    counts where that item changed."""
    found = []
    items = [result] + [r for r in (result.get('results') or []) if isinstance(r, dict)]
    for item in items:
        entries = item.get('restarts')
        loop_item = item.get('item')
        if entries is None and isinstance(loop_item, dict) and item.get('changed'):
            entries = [dict(e, planned=check_mode) for e in loop_item.get('restarts') or [] if isinstance(e, dict)]
        if isinstance(entries, list):
            failed = bool(item.get('failed'))
            for entry in entries:
                if isinstance(entry, dict) and entry.get('unit'):
                    entry = dict(entry)
                    if failed and not entry.get('planned'):
                        entry['reasons'] = list(entry.get('reasons') or []) + ['FAILED: %s' % (item.get('msg') or '?')[:120]]
                    found.append(entry)
    return found


def plan_lines(by_host, check_mode=False):
    """The lines to print: per host in first-seen order, per unit merged."""
    lines = []
    for host in by_host:
        lines.extend(plan_line(host, entry) for entry in merge(by_host[host]))
    if not lines:
        lines.append('no unit would restart' if check_mode else 'no unit restarted')
    return lines


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'pdserve.sglang.restart_plan'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._by_host = {}

    def _collect(self, result):
        entries = restarts_of(result._result, bool((context.CLIARGS or {}).get('check')))
        if entries:
            self._by_host.setdefault(result._host.get_name(), []).extend(entries)

    def v2_runner_on_ok(self, result):
        self._collect(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._collect(result)

    def v2_playbook_on_stats(self, stats):
        check_mode = bool((context.CLIARGS or {}).get('check'))
        self._display.banner('RESTART PLAN' if check_mode else 'RESTARTS')
        for line in plan_lines(self._by_host, check_mode):
            self._display.display(line)
