# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Restart one model server unit and time it until it is ready again, for server_restart.

``restart_to_ready`` runs from the moment ``systemctl restart`` is issued (the old process is stopped first)
until the server answers ``/health`` and generates (``/health_generate`` for a PD server), using the same waiter
as wait_ready, so a unit that dies fails at once with its journal.

``last_load_seconds`` reads, from the unit's journal, how long its last start took until SGLang logged
"The server is fired up and ready to roll!": the best estimate of how long the server is away when it restarts.
"""

import time
from typing import Any, Dict, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.validation.startup_phases import lines_since_start
from ansible_collections.pdserve.sglang.plugins.module_utils.validation.readiness import (
    JOURNAL_LINES,
    Endpoint,
    Waiter,
    failure_message,
)

READY_MESSAGE = 'The server is fired up and ready to roll!'


class RestartError(Exception):
    """The restart failed; ``details`` holds the unit state, journal and timings."""

    def __init__(self, message, details=None):
        super(RestartError, self).__init__(message)
        self.details = details or {}


def last_load_seconds(start_monotonic_usec: Any, journal_lines: List[str],
                      message: str = READY_MESSAGE) -> Optional[float]:
    """Seconds from the unit's last start (systemd's ExecMainStartTimestampMonotonic, in µs) to the first
    ready line after it, from ``journalctl -o short-monotonic`` lines; None when there is none."""
    for seconds, text in lines_since_start(start_monotonic_usec, journal_lines) or []:
        if message in text:
            return round(seconds, 3)
    return None


class ServerRestarter(object):
    """``run(args) -> (rc, out, err)`` runs systemctl and journalctl; ``client`` probes the server."""

    def __init__(self, run, client, inspector, systemctl='systemctl', journalctl='journalctl', clock=time.monotonic):
        self.run = run
        self.client = client
        self.inspector = inspector
        self.systemctl = systemctl
        self.journalctl = journalctl
        self.clock = clock

    def _systemctl(self, *args):
        rc, out, err = self.run([self.systemctl] + list(args))
        if rc != 0:
            raise RestartError('systemctl %s failed (rc=%s): %s' % (' '.join(args), rc, (err or out).strip()))
        return out

    def previous_load(self, unit: str) -> Optional[float]:
        """Seconds from the last start of ``unit`` until it was ready, from its journal; None where it cannot tell."""
        out = self._systemctl('show', unit, '--no-pager', '--property=ExecMainStartTimestampMonotonic')
        start = out.strip().partition('=')[2]
        rc, journal, _err = self.run([self.journalctl, '-u', unit, '-n', '2000', '-o', 'short-monotonic', '--no-pager'])
        lines = journal.splitlines() if rc == 0 else []
        return last_load_seconds(start, lines)

    def restart(self, unit: str, url: str, timeout: float, interval: float = 0.25, generate: bool = True,
                daemon_reload: bool = False) -> Dict[str, Any]:
        """Restart ``unit`` and wait until ``url`` is ready. Returns the timings and the unit state."""
        if daemon_reload:
            self._systemctl('daemon-reload')
        started = self.clock()
        self._systemctl('restart', unit)
        restarted = self.clock()
        waiter = Waiter([Endpoint(url, kind='server', unit=unit, name=unit)], self.client, timeout=timeout,
                        interval=interval, generate=generate, inspector=self.inspector, clock=self.clock)
        states, outcome = waiter.run()
        state = states[0]
        details = {
            'restart_seconds': round(restarted - started, 3),
            'unit_state': state.unit_state,
            'last_status': state.last_status,
        }
        if outcome != 'ready':
            details['journal'] = state.journal or self.inspector.journal(unit, JOURNAL_LINES)
            raise RestartError('%s did not come back after its restart: %s' % (unit, failure_message(states, outcome, timeout)),
                               details)
        details['restart_to_ready'] = round(waiter.started + state.seconds - started, 3)
        if state.startup:
            details['startup'] = state.startup  # where this start spent its time, as SGLang logged it
        return details
