# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Readiness of SGLang model servers and PD routers, for wait_ready.

A server is ready when ``GET /health`` answers 200 and it can generate:

* a plain (non-PD) server gets a real one-token ``POST /generate``;
* a PD server (``disaggregation_mode`` prefill or decode in ``/server_info``) cannot serve a
  request alone (it needs a peer and a ``bootstrap_room``), so it is asked for
  ``GET /health_generate``: SGLang then runs a one-token generation through its own scheduler
  with a fake bootstrap (``FAKE_BOOTSTRAP_HOST``, room 0) and answers 200 only when the
  engine produced it. The real end-to-end generation of a PD stack happens through the router.

Rank 0 of a prefill instance over several nodes, given its ``bootstrap_url``, is ready only once its bootstrap server
counts every prefill rank of every node (``GET /route`` 200).

A router is ready when ``GET /workers`` lists at least the expected healthy prefill and decode
workers and a real chat completion through it answers 200 with a choice. Told to ``register`` its expected
``workers``, the wait registers one that answers ``/health`` but is not listed yet (``POST /workers``): a router
started while its servers loaded retries them with pauses that grow to 5 s (sglang-router 0.3.2), so it would serve up
to 5 s after it could. The router's own retry then ends with "already exists" (``operations/worker_set.py``).

Endpoints are waited for in parallel threads. A ``pid`` that is gone, or a systemd ``unit``
that is failed or inactive, ends the wait at once with the unit state and its last journal lines.

A hung server ends the wait too, naming it, instead of running to the timeout (a loading server
refuses connections or answers 503; a hung one accepts and answers nothing):
* a ``unit`` whose processes are stopped (SIGSTOP: state T in ``/proc``) or whose cgroup is frozen is
  fatal at once: systemd still counts it active, and nothing it serves answers until SIGCONT;
* a router endpoint given the expected ``workers`` names each one it does not count healthy, asks
  those for ``GET /health`` itself, and fails when one accepted the connection but answered nothing
  for ``hang_timeout`` seconds (the module runs on the router host, which reaches every worker).

A server with a ``unit`` also reports where its last start spent its time (``startup_phases``), and a server that
runs out of time names the phase it was in.
"""

import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient, excerpt, join_url
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.router_admin import add_payload, find_worker, registering
from ansible_collections.pdserve.sglang.plugins.module_utils.validation.chat_checks import count_workers, diagnose_http_failure
from ansible_collections.pdserve.sglang.plugins.module_utils.validation.startup_phases import describe, startup_report

ROUTER_PROMPT = 'What is 17*23? Number only.'
NULL_MODE = 'null'
PD_MODES = ('prefill', 'decode')
MAX_GENERATION_BACKOFF = 5.0
JOURNAL_LINES = 20
# Lines read for a start's phases: a start logs a few dozen, a DeepGEMM pre-compile one per kernel group.
STARTUP_JOURNAL_LINES = 2000
UNIT_PROPERTIES = ('LoadState', 'ActiveState', 'SubState', 'Result', 'ExecMainStatus', 'NRestarts')
# Read with the state: where the unit's processes are, to tell a stopped (hung) unit from a live one.
PROCESS_PROPERTIES = ('MainPID', 'ControlGroup', 'FreezerState')
DEFAULT_HANG_TIMEOUT = 60.0


class Endpoint(object):
    """One thing to wait for."""

    def __init__(self, url, kind='server', name=None, unit=None, pid=None,
                 expected_prefill=1, expected_decode=1, model=None, timeout=None, workers=None, register=False,
                 rank=0, nnodes=1, bootstrap_url=None, nodes=None):
        self.url = url.rstrip('/')
        # Server only: a prefill instance's bootstrap server (rank 0's), where every prefill rank of every node registers;
        # the instance is ready when it answers GET /route (all registered). ``nodes``: its hosts in rank order, to name.
        self.bootstrap_url = str(bootstrap_url).rstrip('/') if bootstrap_url else None
        self.nodes = [str(node) for node in nodes or []]
        # Server only: an instance over several nodes (nnodes > 1) and the node rank this endpoint is. A rank > 0 serves
        # only SGLang's dummy health server (always 200): it is never the instance's readiness, only its rank's.
        self.rank = int(rank or 0)
        self.nnodes = int(nnodes or 1)
        # Seconds this endpoint may take; None: the Waiter's timeout.
        self.timeout = float(timeout) if timeout is not None else None
        self.kind = kind
        self.unit = unit
        self.pid = pid
        self.expected_prefill = expected_prefill
        self.expected_decode = expected_decode
        self.model = model
        # Router only: the workers it must serve ({'prefill': [{url, name, unit, inventory_host}], 'decode': [...]}, the
        # serving topology's router_workers), so a worker that is not healthy is named and asked for /health directly.
        self.workers = expected_worker_list(workers)
        # Router only: whether the wait registers an expected worker that is up but not listed yet.
        self.register = bool(register)
        self.name = name or unit or self.url.split('://', 1)[-1]

    @classmethod
    def from_option(cls, item: Dict[str, Any]) -> "Endpoint":
        return cls(url=item['url'], kind=item.get('kind') or 'server', name=item.get('name'),
                   unit=item.get('unit'), pid=item.get('pid'),
                   expected_prefill=item.get('expected_prefill', 1) if item.get('expected_prefill') is not None else 1,
                   expected_decode=item.get('expected_decode', 1) if item.get('expected_decode') is not None else 1,
                   model=item.get('model'), timeout=item.get('timeout'), workers=item.get('workers'),
                   register=bool(item.get('register')), rank=item.get('rank') or 0, nnodes=item.get('nnodes') or 1,
                   bootstrap_url=item.get('bootstrap_url'), nodes=item.get('nodes'))


class EndpointState(object):
    """What is known about one endpoint while waiting, and in the end."""

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.ready = False
        self.seconds = None
        self.last_status = 'not probed yet'
        self.details = {}
        self.fatal = None
        self.unit_state = None
        self.journal = None
        self.startup = None
        self.attempts = 0
        self.next_generation_at = 0.0
        self.generation_backoff = 0.0
        # Router only: {worker url: monotonic time its first unanswered /health was sent}, reset by any answer.
        self.silent_since = {}
        self.hang_timeout = DEFAULT_HANG_TIMEOUT
        # Server with a bootstrap_url: monotonic time its API was first ready while GET /route still said 503.
        self.route_pending_since = None
        # Whether this wait may register the endpoint's missing workers (not in check mode), and the URLs it did.
        self.register_missing = False
        self.registered = []

    def as_dict(self) -> Dict[str, Any]:
        ep = self.endpoint
        out = {
            'name': ep.name,
            'url': ep.url,
            'kind': ep.kind,
            'ready': self.ready,
            'seconds': None if self.seconds is None else round(self.seconds, 3),
            'last_status': self.last_status,
            'details': dict(self.details, attempts=self.attempts),
        }
        if ep.unit:
            out['unit'] = ep.unit
            out['unit_state'] = self.unit_state
        if ep.pid:
            out['pid'] = ep.pid
        if self.journal is not None:
            out['journal'] = self.journal
        if self.startup is not None:
            out['startup'] = self.startup
        if self.fatal:
            out['failure'] = self.fatal
        if self.registered:
            out['registered'] = list(self.registered)
        return out


def expected_worker_list(workers: Any) -> List[Dict[str, Any]]:
    """[{url, worker_type, bootstrap_port, label}] of a router's expected workers ({'prefill': [...], 'decode': [...]});
    [] for none."""
    out: List[Dict[str, Any]] = []
    if not isinstance(workers, dict):
        return out
    for kind in PD_MODES:
        for worker in workers.get(kind) or []:
            if not isinstance(worker, dict) or not worker.get('url'):
                continue
            url = str(worker['url']).rstrip('/')
            where = ' on '.join(str(worker[k]) for k in ('unit', 'inventory_host') if worker.get(k))
            label = '%s %s%s' % (kind, worker.get('name') or url, (' (%s, %s)' % (where, url)) if where else
                                 (' (%s)' % url if worker.get('name') else ''))
            out.append({'url': url, 'worker_type': kind, 'label': label,
                        'bootstrap_port': worker.get('bootstrap_port') if kind == 'prefill' else None})
    return out


# ---------------------------------------------------------------------------
# Process and unit liveness
# ---------------------------------------------------------------------------

def process_state(pid: int, proc_root: str = '/proc') -> Optional[str]:
    """The state letter of /proc/PID/stat (R, S, D, T, t, Z, ...); None when it cannot be read."""
    try:
        with open('%s/%d/stat' % (proc_root, pid)) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0]
    except (IOError, OSError, IndexError, ValueError):
        return None


def pid_problem(pid: int) -> Optional[str]:
    """None while the process lives; a sentence when it is gone or a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return 'process %d is gone' % pid
    except PermissionError:
        pass  # it exists, owned by someone else
    if process_state(pid) in ('Z', 'X'):
        return 'process %d has exited (zombie, not yet reaped)' % pid
    return None


def parse_systemctl_show(text: Optional[str]) -> Dict[str, str]:
    state = {}
    for line in (text or '').splitlines():
        if '=' in line:
            key, value = line.split('=', 1)
            state[key.strip()] = value.strip()
    return state


def unit_problem(state: Optional[Dict[str, str]]) -> Optional[str]:
    """None while the unit may still come up; a sentence when it will not."""
    if not state:
        return None
    load = state.get('LoadState')
    active = state.get('ActiveState')
    if load == 'not-found':
        return 'unit not found (LoadState=not-found)'
    if active == 'failed':
        return 'unit failed'
    if active == 'inactive':
        return 'unit is inactive (stopped or never started)'
    return None


def unit_pids(state: Optional[Dict[str, str]], cgroup_root: str = '/sys/fs/cgroup') -> List[int]:
    """Every process of the unit (its cgroup's cgroup.procs, cgroup v2), else its main process; [] when none."""
    group = (state or {}).get('ControlGroup') or ''
    if group:
        try:
            with open(os.path.join(cgroup_root, group.lstrip('/'), 'cgroup.procs')) as handle:
                pids = [int(line) for line in handle.read().split() if line.strip().isdigit()]
            if pids:
                return pids
        except (IOError, OSError, ValueError):
            pass
    main = (state or {}).get('MainPID') or '0'
    return [int(main)] if main.isdigit() and int(main) > 0 else []


def hung_unit_problem(state: Optional[Dict[str, str]], proc_root: str = '/proc',
                      cgroup_root: str = '/sys/fs/cgroup', unit: str = 'UNIT') -> Optional[str]:
    """A sentence when the unit is active but cannot answer: its cgroup frozen, or processes stopped (SIGSTOP, state T).
    systemd still counts such a unit active/running, so the unit state alone never tells."""
    if not state or state.get('ActiveState') not in ('active', 'reloading', 'activating'):
        return None
    if state.get('FreezerState') in ('frozen', 'freezing'):
        return ('hung: its cgroup is %s (systemctl freeze); it answers nothing until `systemctl thaw %s`'
                % (state['FreezerState'], unit))
    pids = unit_pids(state, cgroup_root)
    stopped = [pid for pid in pids if process_state(pid, proc_root) == 'T']
    if not stopped:
        return None
    return ('hung: %d of its %d processes are stopped (state T, SIGSTOP: pids %s); it answers nothing until they get '
            'SIGCONT (systemctl kill --signal=SIGCONT %s) or the unit is restarted'
            % (len(stopped), len(pids), ', '.join(str(p) for p in stopped[:8]) + (' ...' if len(stopped) > 8 else ''), unit))


def describe_unit_state(state: Optional[Dict[str, str]]) -> str:
    known = state or {}
    return ' '.join('%s=%s' % (k, known[k]) for k in UNIT_PROPERTIES if k in known)


class SystemdInspector(object):
    """systemctl/journalctl through a run_command(args) -> (rc, stdout, stderr) callable."""

    def __init__(self, run_command, systemctl='systemctl', journalctl='journalctl', proc_root='/proc',
                 cgroup_root='/sys/fs/cgroup'):
        self._run = run_command
        self._lock = threading.Lock()
        self.systemctl = systemctl
        self.journalctl = journalctl
        self.proc_root = proc_root
        self.cgroup_root = cgroup_root

    def hung(self, state: Optional[Dict[str, str]], unit: str = 'UNIT') -> Optional[str]:
        """hung_unit_problem on this host's /proc and cgroup tree."""
        return hung_unit_problem(state, self.proc_root, self.cgroup_root, unit)

    def state(self, unit: str) -> Dict[str, str]:
        args = [self.systemctl, 'show', unit, '--no-pager',
                '--property=' + ','.join(UNIT_PROPERTIES + PROCESS_PROPERTIES)]
        with self._lock:
            rc, out, err = self._run(args)
        if rc != 0:
            raise RuntimeError('cannot read the state of unit %s: %s' % (unit, excerpt(err or out) or 'rc=%s' % rc))
        return parse_systemctl_show(out)

    def journal(self, unit: str, lines: int = JOURNAL_LINES) -> List[str]:
        args = [self.journalctl, '-u', unit, '-n', str(lines), '--no-pager']
        with self._lock:
            rc, out, err = self._run(args)
        if rc != 0 and not out:
            return ['(journalctl failed: %s)' % excerpt(err)]
        return [line for line in out.splitlines() if line.strip()][-lines:]

    def startup(self, unit: str, name: str) -> Optional[Dict[str, Any]]:
        """Where the unit's last start spent its time (startup_phases), with its one-line description."""
        with self._lock:
            rc, out, _err = self._run([self.systemctl, 'show', unit, '--no-pager',
                                       '--property=ExecMainStartTimestampMonotonic'])
            start = parse_systemctl_show(out).get('ExecMainStartTimestampMonotonic') if rc == 0 else None
            rc, journal, _err = self._run([self.journalctl, '-u', unit, '-n', str(STARTUP_JOURNAL_LINES),
                                           '-o', 'short-monotonic', '--no-pager'])
        report = startup_report(start, journal.splitlines() if rc == 0 else [])
        if report is not None:
            report['line'] = describe(name, report)
        return report


# ---------------------------------------------------------------------------
# Probes
# ---------------------------------------------------------------------------

def _remaining_timeout(client, deadline, now):
    return max(0.5, min(client.timeout, deadline - now + 0.5))


def _generation_failed(state, now, interval):
    state.generation_backoff = min(MAX_GENERATION_BACKOFF, max(interval, state.generation_backoff * 2 or interval))
    state.next_generation_at = now + state.generation_backoff


# SGLang 0.5.23's prefill info query (what decode asks first): 503 "Prefill server not fully registered yet (N workers
# registered)" until every prefill rank of every node has registered (PUT /route), then 200.
BOOTSTRAP_ROUTE_QUERY = '/route?prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=-1&target_pp_rank=-1'
# A prefill rank registers in its scheduler's start (5 tries over about 15 s, a failure only logged on that rank), before
# rank 0 can answer /health: rank 0 serving while /route is still 503 this long after means a rank will never register.
REGISTRATION_WINDOW = 30.0


def probe_server(client: HttpClient, state: "EndpointState", generate: bool, deadline: float, interval: float,
                 clock: Callable[[], float] = time.monotonic) -> bool:
    """One probe of a model server; True when ready: its API (below), and where it has a bootstrap_url, every prefill
    rank registered there."""
    if not _api_ready(client, state, generate, deadline, interval, clock):
        return False
    if not state.endpoint.bootstrap_url:
        return True
    return _bootstrap_ready(client, state, _remaining_timeout(client, deadline, clock()), clock)


def _bootstrap_ready(client: HttpClient, state: "EndpointState", timeout: float,
                     clock: Callable[[], float] = time.monotonic) -> bool:
    """Rank 0 of a prefill instance serves: ready once its bootstrap server counts every prefill rank. A rank that
    could not register (its SGLANG_HOST_IP, a firewall on the bootstrap port) leaves a healthy instance whose every PD
    request fails in decode ("Could not fetch prefill parallel info"): named once the registration window passed."""
    ep = state.endpoint
    api_status = state.last_status
    route = client.get(ep.bootstrap_url + BOOTSTRAP_ROUTE_QUERY, timeout=timeout)
    state.details['bootstrap'] = route.summary(ep.bootstrap_url + '/route')
    if route.status == 200:
        state.route_pending_since = None
        state.last_status = '%s; %s' % (api_status, route.summary('bootstrap /route'))
        return True
    now = clock()
    if state.route_pending_since is None:
        state.route_pending_since = now
    state.last_status = '%s; %s (not every prefill rank registered yet)' % (api_status, route.summary('bootstrap /route'))
    if route.status == 503 and now - state.route_pending_since >= REGISTRATION_WINDOW:
        others = ', '.join(ep.nodes[1:]) or 'the other nodes'
        state.fatal = ('%s answers, but its bootstrap server %s still says %s %.0f s later: a prefill rank on %s did not '
                       'register there (SGLang tries for about 15 s and only logs the failure on that rank), so every '
                       'PD request would fail in decode with "Could not fetch prefill parallel info"; check that %s '
                       'reach %s (the firewall on the bootstrap port, SGLANG_HOST_IP) and their journals'
                       % (ep.name, ep.bootstrap_url, excerpt(route.text, 120) or route.status,
                          now - state.route_pending_since, others, others, ep.bootstrap_url))
    return False


def _api_ready(client: HttpClient, state: "EndpointState", generate: bool, deadline: float, interval: float,
               clock: Callable[[], float] = time.monotonic) -> bool:
    """A model server's own API: /health, what it is, and a generation (or a node rank > 0's dummy health)."""
    ep = state.endpoint
    timeout = _remaining_timeout(client, deadline, clock())
    if ep.nnodes > 1:
        state.details['rank'] = '%d of %d' % (ep.rank, ep.nnodes)
    health = client.get(join_url(ep.url, '/health'), timeout=timeout)
    if health.status != 200:
        state.last_status = health.summary('/health')
        return False
    if ep.rank > 0:
        return _rank_ready(client, state, health, timeout)
    if ep.nnodes > 1 and not generate:
        # Rank 0 of an instance over several nodes: /health 200 from its real API, not a dummy health server.
        info = client.get(join_url(ep.url, '/model_info'), timeout=timeout)
        if info.status != 200:
            state.last_status = '%s, %s%s' % (health.summary('/health'), info.summary('/model_info'),
                                              DUMMY_HEALTH_HINT if info.status == 404 else '')
            return False
        state.last_status = health.summary('/health') + ', ' + info.summary('/model_info')
        return True
    if not generate:
        state.last_status = health.summary('/health')
        return True
    if 'disaggregation_mode' not in state.details:
        info = client.get(join_url(ep.url, '/server_info'), timeout=timeout)
        if info.status != 200:
            info = client.get(join_url(ep.url, '/get_server_info'), timeout=timeout)
        data = info.json() if info.status == 200 else None
        if isinstance(data, dict):
            state.details['disaggregation_mode'] = str(data.get('disaggregation_mode') or NULL_MODE)
            if data.get('served_model_name'):
                state.details['model'] = data.get('served_model_name')
        elif info.status == 404:
            # Only a dummy health server answers /health 200 and 404 elsewhere; its /health_generate is 200 too, so it
            # must never be taken for a PD server that generated.
            state.last_status = health.summary('/health') + ', ' + info.summary('/server_info') + DUMMY_HEALTH_HINT
            return False
        else:
            state.details['server_info'] = info.summary('/server_info')
    now = clock()
    if now < state.next_generation_at:
        return False
    mode = state.details.get('disaggregation_mode')
    if mode == NULL_MODE:
        state.details['generation'] = 'POST /generate (1 token)'
        gen = client.post_json(join_url(ep.url, '/generate'),
                               {'text': ROUTER_PROMPT, 'sampling_params': {'max_new_tokens': 1, 'temperature': 0}},
                               timeout=timeout)
        body = gen.json()
        ok = gen.status == 200 and isinstance(body, (dict, list))
        path = '/generate'
    else:
        state.details['generation'] = ('GET /health_generate (1 token through the engine with a fake bootstrap; '
                                       'a PD server cannot generate alone)')
        gen = client.get(join_url(ep.url, '/health_generate'), timeout=timeout)
        ok = gen.status == 200
        path = '/health_generate'
    state.last_status = gen.summary(path)
    if not ok:
        _generation_failed(state, clock(), interval)
    return ok


DUMMY_HEALTH_HINT = (' (SGLang\'s dummy health server of a node rank > 0 answers only /health: this URL is not the '
                     'instance\'s rank 0, whose readiness is the instance\'s)')


def _rank_ready(client: HttpClient, state: "EndpointState", health: Any, timeout: float) -> bool:
    """A node rank > 0 of an instance over several nodes: its dummy health server answers once its schedulers joined
    the group and loaded; that says this rank is up (with its unit active), never that the instance serves (rank 0's
    wait says that). A URL that answers /model_info is an API server, not a rank > 0: the topology is wrong."""
    ep = state.endpoint
    info = client.get(join_url(ep.url, '/model_info'), timeout=timeout)
    if info.status == 200:
        state.fatal = ('%s is node rank %d of %d, but it answers GET /model_info like an instance\'s rank 0 (a node '
                       'rank > 0 serves only a dummy /health): check the instance\'s nodes' % (ep.name, ep.rank, ep.nnodes))
        state.last_status = info.summary('/model_info')
        return False
    state.details['generation'] = ('none: node rank %d of %d serves only a dummy /health (200 once its schedulers '
                                   'joined and loaded); the instance is ready when its rank 0 is' % (ep.rank, ep.nnodes))
    state.last_status = health.summary('/health') + ' (dummy health of node rank %d)' % ep.rank
    return True


def probe_router(client: HttpClient, state: "EndpointState", generate: bool, deadline: float, interval: float,
                 clock: Callable[[], float] = time.monotonic) -> bool:
    """One probe of a PD router; True when ready."""
    ep = state.endpoint
    timeout = _remaining_timeout(client, deadline, clock())
    workers = client.get(join_url(ep.url, '/workers'), timeout=timeout, control_plane=True)
    if workers.status in (401, 403):
        # Waiting does not change the key: say so at once instead of timing out.
        state.last_status = workers.summary('/workers')
        state.fatal = ('the router answers %s on GET /workers: worker management needs its control-plane key and the '
                       'one given (if any) is not it; pass control_plane_api_key (sglang_router_control_plane_api_key), '
                       'and api_key (sglang_router_api_key) for chat' % workers.status)
        return False
    data = workers.json() if workers.status == 200 else None
    if not isinstance(data, dict) or 'workers' not in data:
        state.last_status = workers.summary('/workers')
        return False
    counts = count_workers(data)
    state.details['workers'] = counts
    short = []
    for kind, need in (('prefill', ep.expected_prefill), ('decode', ep.expected_decode)):
        short.append('%s %d/%d healthy (expected %d)' % (kind, counts[kind]['healthy'], counts[kind]['total'], need))
    enough = counts['prefill']['healthy'] >= ep.expected_prefill and counts['decode']['healthy'] >= ep.expected_decode
    if ep.expected_prefill == 0 and ep.expected_decode == 0:
        enough = sum(c['healthy'] for c in counts.values()) > 0
    if not enough:
        state.last_status = 'GET /workers: ' + ', '.join(short)
        if state.register_missing:
            register_ready_workers(client, state, data, timeout)
        if ep.workers:
            _probe_unhealthy_workers(client, state, data, deadline, clock)
        return False
    state.silent_since.clear()
    if not generate:
        state.last_status = 'GET /workers: ' + ', '.join(short)
        return True
    now = clock()
    if now < state.next_generation_at:
        return False
    model = ep.model or state.details.get('model')
    if not model:
        models = client.get(join_url(ep.url, '/v1/models'), timeout=timeout)
        listing: Any = models.json() if models.status == 200 else None  # None: TypeError below, caught
        try:
            model = listing['data'][0]['id']
            state.details['model'] = model
        except (TypeError, KeyError, IndexError):
            state.last_status = models.summary('/v1/models')
            _generation_failed(state, clock(), interval)
            return False
    chat = client.post_json(join_url(ep.url, '/v1/chat/completions'), {
        'model': model,
        'messages': [{'role': 'user', 'content': ROUTER_PROMPT}],
        'max_tokens': 16,
        'temperature': 0,
    }, timeout=timeout)
    body = chat.json()
    state.details['generation'] = 'POST /v1/chat/completions through the router'
    if chat.status == 200 and isinstance(body, dict) and body.get('choices'):
        state.last_status = chat.summary('/v1/chat/completions')
        return True
    if chat.status is not None and chat.status != 200:
        evidence, cause = diagnose_http_failure(chat.status, body, chat.text, chat.headers, chat.error, data)
        state.last_status = 'POST /v1/chat/completions -> %s (%s)' % (evidence, cause)
    else:
        state.last_status = chat.summary('/v1/chat/completions')
    _generation_failed(state, clock(), interval)
    return False


def register_ready_workers(client: HttpClient, state: "EndpointState", listing: Dict[str, Any], timeout: float) -> None:
    """POST /workers for each of the router's workers that answers /health with 200 but is not listed (a worker
    being added, type unknown, counts as listed). One still loading is left to a later probe."""
    ep = state.endpoint
    for entry in ep.workers:
        if entry['url'] in state.registered or find_worker(listing, entry['url']) is not None:
            continue
        if client.get(join_url(entry['url'], '/health'), timeout=min(timeout, 5.0)).status != 200:
            continue
        payload = add_payload(entry['url'], entry['worker_type'], entry.get('bootstrap_port'), api_key=client.api_key)
        answer = client.post_json(join_url(ep.url, '/workers'), payload, timeout=timeout, control_plane=True)
        if answer.status in (200, 201, 202):
            state.registered.append(entry['url'])
        elif not registering(answer):
            # smg answers 409 while its own job checks the worker; anything else is worth showing while waiting.
            state.last_status = 'registering %s: %s' % (entry['url'], answer.summary('/workers'))


def _probe_unhealthy_workers(client: HttpClient, state: "EndpointState", workers_json: Dict[str, Any], deadline: float,
                             clock: Callable[[], float]) -> None:
    """Name the expected workers the router does not count healthy, and ask each for GET /health: one that accepts the
    connection but answers nothing for hang_timeout seconds is hung (fatal); any answer, or a refused connection (a
    server still loading), keeps waiting."""
    listed = dict((str(w.get('url') or '').rstrip('/'), w) for w in workers_json.get('workers') or [] if isinstance(w, dict))
    sick = [w for w in state.endpoint.workers if not (listed.get(w['url']) or {}).get('is_healthy')]
    if not sick:
        return
    state.last_status += '; not healthy: ' + ', '.join(
        '%s%s' % (w['label'], '' if w['url'] in listed else ' (not listed)') for w in sick)
    hang_timeout = state.hang_timeout
    for worker in sick:
        started = clock()
        answer = client.get(join_url(worker['url'], '/health'),
                            timeout=max(0.5, min(client.timeout, hang_timeout, deadline - started + 0.5)))
        if answer.status is not None or answer.error != 'timed out':
            state.silent_since.pop(worker['url'], None)
            state.last_status += '; %s: %s' % (worker['label'], answer.summary('/health'))
            continue
        since = state.silent_since.setdefault(worker['url'], started)
        silent = clock() - since
        state.last_status += '; %s: GET /health answered nothing for %.0f s' % (worker['label'], silent)
        if silent >= hang_timeout:
            state.fatal = ('%s is hung: the router does not count it healthy and it accepts connections but answered '
                           'nothing to GET /health for %.0f s (hang_timeout %ss; a loading server refuses connections '
                           'or answers 503): its processes may be stopped (SIGSTOP) or deadlocked; see its unit on its '
                           'host (systemctl status, journalctl)' % (worker['label'], silent, _seconds(hang_timeout)))
            return


def _seconds(value: float) -> str:
    return ('%d' % value) if float(value).is_integer() else ('%s' % value)


PROBES = {'server': probe_server, 'router': probe_router}


# ---------------------------------------------------------------------------
# Waiting
# ---------------------------------------------------------------------------

class Waiter(object):
    """Wait for several endpoints at once, each in its own thread.

    ``run()`` returns ``(states, outcome)`` where outcome is 'ready', 'fatal' or 'timeout'.
    A fatal problem on one endpoint (dead pid, failed unit) stops every thread at once.
    """

    def __init__(self, endpoints, client, timeout, interval, generate=True, inspector=None,
                 clock=time.monotonic, probes=None, hang_timeout=DEFAULT_HANG_TIMEOUT):
        self.states = [EndpointState(ep) for ep in endpoints]
        for state in self.states:
            state.hang_timeout = float(hang_timeout)
        self.client = client
        self.timeout = float(timeout)
        self.interval = float(interval)
        self.generate = generate
        self.inspector = inspector
        self.clock = clock
        self.probes = probes or PROBES
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._finished = 0
        self.started = None
        self.elapsed = None

    def _liveness(self, state):
        """Set state.fatal when the endpoint's process or unit is gone for good."""
        ep = state.endpoint
        if ep.pid:
            problem = pid_problem(ep.pid)
            if problem:
                state.fatal = problem
                return
        if ep.unit and self.inspector is not None:
            try:
                unit_state = self.inspector.state(ep.unit)
            except RuntimeError as exc:
                state.fatal = str(exc)
                return
            state.unit_state = unit_state
            problem = unit_problem(unit_state) or self.inspector.hung(unit_state, ep.unit)
            if problem:
                state.fatal = '%s %s: %s' % (ep.unit, problem, describe_unit_state(unit_state))
                state.journal = self.inspector.journal(ep.unit)

    def _record_unit(self, state):
        """Keep the unit state of a ready endpoint in the result (NRestarts tells of crashes)."""
        if state.endpoint.unit and self.inspector is not None:
            try:
                state.unit_state = self.inspector.state(state.endpoint.unit)
            except RuntimeError:
                pass

    def _record_startup(self, state):
        """A model server's start-up phases from its unit's journal (not in check mode: that probes once only)."""
        if state.endpoint.kind == 'server' and state.endpoint.unit and self.inspector is not None:
            try:
                state.startup = self.inspector.startup(state.endpoint.unit, state.endpoint.name)
            except Exception:  # pylint: disable=broad-except
                state.startup = None  # a report is extra: never the reason a wait fails

    def _probe_once(self, state, deadline):
        state.attempts += 1
        probe = self.probes[state.endpoint.kind]
        try:
            return probe(self.client, state, self.generate, deadline, self.interval, self.clock)
        except Exception as exc:  # pylint: disable=broad-except
            state.last_status = 'probe error: %s: %s' % (type(exc).__name__, exc)
            return False

    def _hung_before_probing(self, state):
        """Before the first probe of a unit's endpoint: a stopped unit is named at once, not after a request to it
        timed out (later, _liveness checks it after each failed probe)."""
        ep = state.endpoint
        if not ep.unit or self.inspector is None:
            return
        try:
            unit_state = self.inspector.state(ep.unit)
        except RuntimeError:
            return  # _liveness says so after the probe
        problem = self.inspector.hung(unit_state, ep.unit)
        if problem:
            state.unit_state = unit_state
            state.last_status = 'not probed: the unit is hung'
            state.fatal = '%s %s: %s' % (ep.unit, problem, describe_unit_state(unit_state))
            state.journal = self.inspector.journal(ep.unit)

    def _watch(self, state, deadline):
        try:
            self._hung_before_probing(state)
            if state.fatal:
                self._stop.set()
                return
            while not self._stop.is_set():
                if self._probe_once(state, deadline):
                    state.ready = True
                    state.seconds = self.clock() - self.started
                    self._record_unit(state)
                    self._record_startup(state)
                    return
                self._liveness(state)
                if state.fatal:
                    self._stop.set()
                    return
                remaining = deadline - self.clock()
                if remaining <= 0:
                    self._record_startup(state)  # the phase it ran out of time in
                    return
                self._stop.wait(min(self.interval, remaining))
        finally:
            with self._cond:
                self._finished += 1
                self._cond.notify_all()

    def timeout_of(self, endpoint: Endpoint) -> float:
        """The seconds ``endpoint`` may take: its own timeout, else the Waiter's."""
        return endpoint.timeout if endpoint.timeout is not None else self.timeout

    def run(self) -> Tuple[List["EndpointState"], str]:
        self.started = self.clock()
        threads = []
        for state in self.states:
            state.register_missing = state.endpoint.register and bool(state.endpoint.workers)
            deadline = self.started + self.timeout_of(state.endpoint)
            thread = threading.Thread(target=self._watch, args=(state, deadline),
                                      name='wait_ready:%s' % state.endpoint.name)
            thread.daemon = True
            threads.append(thread)
            thread.start()
        with self._cond:
            while self._finished < len(threads) and not self._stop.is_set():
                self._cond.wait(0.5)
        if self._stop.is_set():
            # a fatal problem: the other threads stop at their next step; do not wait for
            # a probe that may be stuck in a request
            for thread in threads:
                thread.join(0.2)
        self.elapsed = self.clock() - self.started
        if any(s.fatal for s in self.states):
            return self.states, 'fatal'
        if all(s.ready for s in self.states):
            return self.states, 'ready'
        return self.states, 'timeout'

    def probe_once(self) -> List["EndpointState"]:
        """One round of read-only probes (no generation, no waiting), for check mode."""
        self.started = self.clock()
        deadline = self.started + self.timeout
        for state in self.states:
            state.ready = self._probe_once(state, deadline)
            if state.ready:
                state.seconds = self.clock() - self.started
                self._record_unit(state)
            else:
                self._liveness(state)
        self.elapsed = self.clock() - self.started
        return self.states


def failure_message(states: List["EndpointState"], outcome: str, timeout: float) -> str:
    """The fail_json message: each endpoint that is not ready and what it last answered (an endpoint with a timeout
    of its own says so)."""
    if outcome == 'fatal':
        parts = []
        for s in states:
            if s.fatal:
                msg = '%s (%s): %s; last answer: %s' % (s.endpoint.name, s.endpoint.url, s.fatal, s.last_status)
                if s.journal:
                    msg += '; last journal lines:\n' + '\n'.join(s.journal)
                parts.append(msg)
        hung = all(' hung' in s.fatal for s in states if s.fatal)
        return 'Endpoint %s while waiting: ' % ('hung' if hung else 'gone') + ' | '.join(parts)
    waiting = []
    for s in states:
        if not s.ready:
            fields = (s.endpoint.name, s.endpoint.url, _own_timeout(s.endpoint), s.last_status, _startup_phase(s))
            waiting.append('%s (%s%s): %s%s' % fields)
    return 'Not ready after %ss: %s' % (timeout, '; '.join(waiting))


def _startup_phase(state: "EndpointState") -> str:
    return '; start-up phase: %s' % state.startup['phase'] if state.startup else ''


def _own_timeout(endpoint: Endpoint) -> str:
    return ', its own timeout %ss' % endpoint.timeout if endpoint.timeout is not None else ''
