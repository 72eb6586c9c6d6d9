# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Make a running PD router serve exactly the inventory's worker set, without restarting it.

The inventory is the truth: a wanted worker the router does not list (a new instance, or one that a killed day-2
run left out) is registered; a listed worker the inventory does not want (removed, or marked ``in_service: false``)
is deregistered and then drained (its own metrics show nothing in flight). New workers are registered before old
ones go, so the router never serves fewer workers than it must.

A new worker is registered only once it answers ``GET /health`` with 200, and the router's list is read again just
before the ``POST``. Measured with sglang-router 0.3.2: the router answers ``GET /workers`` before its start-up jobs
list even the healthy workers of the worker set file; a worker that is not up yet is not listed at all while the
router's own job retries it, with growing pauses; a ``POST`` for it once it is healthy registers it at once, and the
router's own job then ends with "already exists" (a warning in its journal, nothing else). So a router this run has
just started, whose servers are still loading, is reconciled safely: no worker ends up listed twice, and none is
registered before it can serve. A worker listed while it is being added (type ``unknown``) counts as listed.
"""

import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient, join_url
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.router_admin import (
    RouterAdmin,
    RouterError,
    RouterUnreachable,
    find_worker,
    mismatch,
    normalize_url,
    summarize,
    workers_of,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.worker_metrics import IdleWaiter, MetricsError


def wanted_workers(workers: Dict[str, Any]) -> Tuple[Optional[List[Dict[str, Any]]], Optional[str]]:
    """[{url, worker_type, bootstrap_port}] of the workers option, or (None, why not)."""
    unknown = sorted(set(workers) - set(('prefill', 'decode')))
    if unknown:
        return None, 'workers takes prefill and decode, not %s' % ', '.join(map(str, unknown))
    wanted = []
    for kind in ('prefill', 'decode'):
        entries = workers.get(kind) or []
        if not isinstance(entries, list) or not entries:
            return None, 'workers.%s must list at least one worker: the router would fail every request' % kind
        for entry in entries:
            url = entry.get('url') if isinstance(entry, dict) else None
            if not isinstance(url, str) or not url.startswith(('http://', 'https://')):
                return None, 'a %s worker has no http:// or https:// url: %r' % (kind, entry)
            port = entry.get('bootstrap_port') if kind == 'prefill' else None
            if kind == 'prefill' and (isinstance(port, bool) or not isinstance(port, int)):
                return None, 'prefill worker %s needs its bootstrap_port (an integer), got %r' % (url, port)
            wanted.append({'url': url, 'worker_type': kind, 'bootstrap_port': port})
    return wanted, None


def plan(listing: Dict[str, Any], wanted: List[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    """{register: [wanted entries], deregister: [router entries]} for a GET /workers answer and the wanted set.

    ``wanted``: [{url, worker_type, bootstrap_port}]. A worker still being added (type ``unknown``) counts as
    listed: the router is already registering it. One listed with the wrong type or port is registered again
    (RouterAdmin.add replaces it).
    """
    register = []
    for entry in wanted:
        listed = find_worker(listing, entry['url'])
        if listed is None or (listed.get('worker_type') not in (None, 'unknown')
                              and mismatch(listed, entry['worker_type'], entry.get('bootstrap_port'))):
            register.append(entry)
    keep = set(normalize_url(entry['url']) for entry in wanted)
    deregister = [w for w in workers_of(listing) if normalize_url(w.get('url')) not in keep]
    return {'register': register, 'deregister': deregister}


def describe(entry: Dict[str, Any]) -> str:
    """``decode http://h:p`` for a wanted entry or a router entry."""
    return '%s %s' % (entry.get('worker_type') or 'worker', entry.get('url'))


def reasons(found: Dict[str, List[Dict[str, Any]]]) -> List[str]:
    """The restart plan's words for a plan: what is registered, then what is deregistered."""
    return (['register %s' % describe(e) for e in found['register']]
            + ['deregister %s' % describe(w) for w in found['deregister']])


def wait_health(client: HttpClient, url: str, timeout: float, interval: float = 0.5,
                clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> float:
    """Seconds until ``url``/health answered 200 (a server still loading its model refuses or answers 503);
    RouterError naming the last answer after ``timeout``."""
    started = clock()
    while True:
        answer = client.get(join_url(url, '/health'))
        if answer.status == 200:
            return round(clock() - started, 3)
        if clock() - started >= timeout:
            raise RouterError('%s does not answer /health with 200 after %.0f s (last: %s), so it is not registered: is '
                              'its unit running on its host, and does this host reach it?'
                              % (url, timeout, answer.summary('/health')), {'url': url})
        sleep(interval)


def reconcile(admin: RouterAdmin, wanted: List[Dict[str, Any]], client: HttpClient, api_key: Optional[str] = None,
              timeout: float = 60.0, drain: bool = True, drain_timeout: float = 300.0,
              check_mode: bool = False) -> Dict[str, Any]:
    """Apply the plan through ``admin`` (a RouterAdmin). ``client`` asks a new worker's /health before it is
    registered and scrapes a removed worker's metrics to drain it. ``timeout``: for the router to answer its list
    (it may just have been started), then for each new worker to answer /health, then to be listed healthy.

    Returns {changed, registered, deregistered, drained, plan}. In check mode only the list is read; a router that
    does not answer (not started yet) has nothing to reconcile: it reads the worker set file when it starts.
    """
    result: Dict[str, Any] = {'changed': False, 'registered': [], 'deregistered': [], 'drained': [], 'plan': []}
    if check_mode:
        try:
            listing = admin.listing()
        except RouterUnreachable as exc:
            result['msg'] = '%s; it reads the worker set file when it starts' % exc
            return result
    else:
        listing = admin.wait_listing(timeout)
    found = plan(listing, wanted)
    if check_mode:
        result.update(changed=bool(found['register'] or found['deregister']), plan=reasons(found))
        return result
    for entry in found['register']:
        wait_health(client, entry['url'], timeout, interval=admin.interval, clock=admin.clock,
                    sleep=admin.sleep)
        # Reads the list again first: the router's own start-up job may have registered it meanwhile (no POST then).
        added = admin.add(entry['url'], entry['worker_type'], entry.get('bootstrap_port'), api_key=api_key,
                          timeout=timeout)
        if added['changed']:
            result['registered'].append(added['worker'])
            result['plan'].append('register %s' % describe(entry))
    for worker in found['deregister']:
        removed = admin.remove(worker['url'], worker.get('worker_type'), allow_last=True, timeout=timeout)
        if removed['changed']:
            result['deregistered'].append(summarize(worker))
            result['plan'].append('deregister %s' % describe(worker))
        if drain and removed['changed']:
            result['drained'].append(_drain(client, worker['url'], drain_timeout))
    result['changed'] = bool(result['registered'] or result['deregistered'])
    return result


def _drain(client, url, timeout):
    """{url, idle, seconds, in_flight} once the removed worker's own gauges show nothing in flight; a worker that
    does not answer has nothing left to drain (it is gone)."""
    try:
        waited = IdleWaiter(client, url, timeout=timeout).wait()
    except MetricsError as exc:
        return {'url': url, 'idle': True, 'seconds': 0.0, 'in_flight': 0, 'msg': 'not reachable (%s)' % exc}
    return {'url': url, 'idle': waited['idle'], 'seconds': waited['seconds'], 'in_flight': waited['in_flight']}
