# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Make a running PD router serve exactly the inventory's worker set, without restarting it.

The inventory is the truth: a wanted worker the router does not list (a new instance, or one that a killed day-2
run left out) is registered; a listed worker the inventory does not want (removed, or marked ``in_service: false``)
is deregistered and then drained (its own metrics show nothing in flight). New workers are registered before old
ones go, so the router never serves fewer workers than it must.
"""

from ansible_collections.pdserve.sglang.plugins.module_utils.operations.router_admin import (
    find_worker,
    mismatch,
    normalize_url,
    summarize,
    workers_of,
)
from ansible_collections.pdserve.sglang.plugins.module_utils.operations.worker_metrics import IdleWaiter, MetricsError


def plan(listing, wanted):
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


def describe(entry):
    """``decode http://h:p`` for a wanted entry or a router entry."""
    return '%s %s' % (entry.get('worker_type') or 'worker', entry.get('url'))


def reasons(found):
    """The restart plan's words for a plan: what is registered, then what is deregistered."""
    return (['register %s' % describe(e) for e in found['register']]
            + ['deregister %s' % describe(w) for w in found['deregister']])


def reconcile(admin, wanted, client, api_key=None, timeout=60.0, drain=True, drain_timeout=300.0,
              check_mode=False):
    """Apply the plan through ``admin`` (a RouterAdmin). ``client`` scrapes a removed worker's metrics to drain it.

    Returns {changed, registered, deregistered, drained, plan}.
    """
    found = plan(admin.listing(), wanted)
    result = {'changed': bool(found['register'] or found['deregister']), 'registered': [], 'deregistered': [],
              'drained': [], 'plan': reasons(found)}
    if check_mode:
        return result
    for entry in found['register']:
        added = admin.add(entry['url'], entry['worker_type'], entry.get('bootstrap_port'), api_key=api_key,
                          timeout=timeout)
        result['registered'].append(added['worker'])
    for worker in found['deregister']:
        removed = admin.remove(worker['url'], worker.get('worker_type'), allow_last=True, timeout=timeout)
        result['deregistered'].append(summarize(worker))
        if drain and removed['changed']:
            result['drained'].append(_drain(client, worker['url'], drain_timeout))
    return result


def _drain(client, url, timeout):
    """{url, idle, seconds, in_flight} once the removed worker's own gauges show nothing in flight; a worker that
    does not answer has nothing left to drain (it is gone)."""
    try:
        waited = IdleWaiter(client, url, timeout=timeout).wait()
    except MetricsError as exc:
        return {'url': url, 'idle': True, 'seconds': 0.0, 'in_flight': 0, 'msg': 'not reachable (%s)' % exc}
    return {'url': url, 'idle': waited['idle'], 'seconds': waited['seconds'], 'in_flight': waited['in_flight']}
