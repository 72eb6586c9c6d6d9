# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Take a worker out of a PD router and put it back, through the router's worker API (sglang-router 0.3.2).

What this relies on, measured behind the real router (every call answers before it acts):

* ``GET /workers`` lists ``{"workers": [{"id", "url", "worker_type", "is_healthy", "bootstrap_port", ...}]}``;
  ids are per registration (uuid4), so the id is looked up by URL right before ``DELETE /workers/{id}``.
* ``DELETE`` answers 202 and the worker leaves the list within a few hundredths of a second; requests already
  on it run to their end (removal neither drains nor aborts).
* ``POST /workers`` answers 202 and registers in the background. Without ``worker_type`` a PD router keeps a
  ``regular`` worker it never routes to; a prefill without ``bootstrap_port`` hangs the requests sent to it; so
  both are always sent, and success means the list shows the URL healthy with the right type and port.
* With ``--api-key`` every call needs ``Authorization: Bearer KEY`` (401, empty body, otherwise); the key also goes
  into the POST body, or the router warns that the worker is reachable without authentication.

Nothing here logs the key: it only travels in the HttpClient's header and the POST body.
"""

import time
from typing import Any, Dict, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpResult, join_url

WORKER_TYPES = ('prefill', 'decode')


class RouterError(Exception):
    """The router refused or did not do what was asked; ``details`` says what it last showed."""

    def __init__(self, message, details=None):
        super(RouterError, self).__init__(message)
        self.details = details or {}


class RouterUnreachable(RouterError):
    """Nothing answered at the router's address: it is not started yet, or it is down."""


def normalize_url(url: Any) -> str:
    """A worker URL as the router compares it: no trailing slash, scheme and host in lower case."""
    url = str(url or '').strip().rstrip('/')
    if '://' in url:
        scheme, rest = url.split('://', 1)
        host, sep, path = rest.partition('/')
        url = '%s://%s%s%s' % (scheme.lower(), host.lower(), sep, path)
    return url


def workers_of(listing: Any) -> List[Dict[str, Any]]:
    """The worker entries of a GET /workers answer (empty for anything else)."""
    if not isinstance(listing, dict):
        return []
    return [w for w in listing.get('workers') or [] if isinstance(w, dict)]


def find_worker(listing: Any, url: Any) -> Optional[Dict[str, Any]]:
    """The entry registered under ``url``, or None."""
    wanted = normalize_url(url)
    for worker in workers_of(listing):
        if normalize_url(worker.get('url')) == wanted:
            return worker
    return None


def summarize(worker: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The fields of an entry worth showing (never the metadata, which may be large)."""
    if not worker:
        return None
    keys = ('id', 'url', 'worker_type', 'is_healthy', 'bootstrap_port', 'load', 'job_status')
    return dict((k, worker[k]) for k in keys if k in worker)


def mismatch(worker: Dict[str, Any], worker_type: str, bootstrap_port: Optional[int] = None) -> Optional[str]:
    """None when ``worker`` is registered as wanted (type, and port for a prefill); else what differs."""
    if worker.get('worker_type') != worker_type:
        return 'registered as %s, not %s' % (worker.get('worker_type') or 'no type', worker_type)
    if worker_type == 'prefill' and bootstrap_port is not None and worker.get('bootstrap_port') != bootstrap_port:
        return 'registered with bootstrap port %s, not %s' % (worker.get('bootstrap_port'), bootstrap_port)
    return None


def removal_problem(listing: Any, url: str, worker_type: Optional[str]) -> Optional[str]:
    """None when the router keeps another healthy worker of ``worker_type`` without ``url``; else why not.

    Removing the last healthy prefill or decode worker turns every request into a 503 ("No available decode
    workers"), which is an outage, not a drain.
    """
    wanted = normalize_url(url)
    others = [w for w in workers_of(listing)
              if w.get('worker_type') == worker_type and normalize_url(w.get('url')) != wanted]
    if any(w.get('is_healthy') for w in others):
        return None
    if not others:
        return ('%s is the only %s worker of this router: removing it would leave no %s worker, so every '
                'request would fail until it is back' % (url, worker_type, worker_type))
    return ('%s is the last healthy %s worker of this router (%s: not healthy): removing it would leave no '
            'healthy %s worker' % (url, worker_type, ', '.join(str(w.get('url')) for w in others), worker_type))


def add_payload(url: str, worker_type: str, bootstrap_port: Optional[int] = None,
                api_key: Optional[str] = None) -> Dict[str, Any]:
    """The POST /workers body: always the type, the bootstrap port of a prefill, the key when there is one."""
    if worker_type not in WORKER_TYPES:
        raise ValueError('worker_type must be one of %s, got %r' % (', '.join(WORKER_TYPES), worker_type))
    body: Dict[str, Any] = {'url': url, 'worker_type': worker_type}
    if worker_type == 'prefill':
        if bootstrap_port is None:
            raise ValueError('a prefill worker needs its bootstrap_port (without it the router hangs its requests)')
        body['bootstrap_port'] = int(bootstrap_port)
    if api_key:
        body['api_key'] = api_key
    return body


def registering(answer: HttpResult) -> bool:
    """Whether a POST /workers was refused because the router is registering that URL already: smg 1.13 answers 409
    "Worker creation already in progress for URL ..." while its own job (from the command line or an earlier POST)
    checks the worker, which GET /workers does not list until the job ends. sglang-router 0.3.2 accepts the POST and
    its second job ends with "already exists"."""
    return answer.status == 409 and 'already in progress' in answer.text


class RouterAdmin(object):
    """The worker API of one router. ``client`` is an HttpClient with the router's control-plane key (if any); its
    API key, if any, is the one the router presents to the worker (add)."""

    def __init__(self, client, url, interval=0.2, clock=time.monotonic, sleep=time.sleep):
        self.client = client
        self.url = url.rstrip('/')
        self.interval = interval
        self.clock = clock
        self.sleep = sleep

    def _check_auth(self, answer, what):
        if answer.status in (401, 403):
            raise RouterError('the router at %s refused %s with HTTP %s: worker management needs the router\'s '
                              'control-plane key and the one given (if any) is not it; pass control_plane_api_key '
                              '(sglang_router_control_plane_api_key)' % (self.url, what, answer.status))

    def listing(self) -> Dict[str, Any]:
        """GET /workers, decoded; RouterError when the router does not answer it (RouterUnreachable when nothing
        answered at all)."""
        answer = self.client.get(join_url(self.url, '/workers'), control_plane=True)
        self._check_auth(answer, 'GET /workers')
        data = answer.json() if answer.status == 200 else None
        if not isinstance(data, dict) or 'workers' not in data:
            error = RouterUnreachable if answer.status is None else RouterError
            raise error('the router at %s did not list its workers: %s' % (self.url, answer.summary('/workers')))
        return data

    def wait_listing(self, timeout: float = 60.0) -> Dict[str, Any]:
        """GET /workers of a router that may still be starting: asked again while nothing answers, until ``timeout``
        (sglang-router 0.3.2 listens about a second after its start). A refused key or any other answer fails at
        once."""
        deadline = self.clock() + timeout
        while True:
            try:
                return self.listing()
            except RouterUnreachable as exc:
                if self.clock() >= deadline:
                    raise RouterUnreachable('%s after %.0f s: is its unit running (systemctl status, journalctl)?'
                                            % (exc, timeout))
            self.sleep(self.interval)

    def remove(self, url: str, worker_type: Optional[str], allow_last: bool = False, timeout: float = 30.0,
               check_mode: bool = False) -> Dict[str, Any]:
        """Take ``url`` out of the router. Returns {changed, worker (as it was), seconds}."""
        started = self.clock()
        listing = self.listing()
        worker = find_worker(listing, url)
        if worker is None:
            return {'changed': False, 'worker': None, 'seconds': 0.0, 'msg': '%s is not registered' % url}
        if not allow_last:
            problem = removal_problem(listing, url, worker_type)
            if problem:
                raise RouterError(problem, {'worker': summarize(worker)})
        if check_mode:
            return {'changed': True, 'worker': summarize(worker), 'seconds': 0.0, 'msg': 'would remove %s' % url}
        answer = self.client.request('DELETE', join_url(self.url, '/workers/%s' % worker.get('id')), control_plane=True)
        self._check_auth(answer, 'DELETE /workers/{id}')
        if answer.status not in (200, 202, 204, 404):
            raise RouterError('the router at %s did not accept the removal of %s: %s'
                              % (self.url, url, answer.summary('DELETE /workers/%s' % worker.get('id'))),
                              {'worker': summarize(worker)})
        deadline = started + timeout
        while True:
            if find_worker(self.listing(), url) is None:
                return {'changed': True, 'worker': summarize(worker), 'seconds': round(self.clock() - started, 3),
                        'msg': 'removed %s' % url}
            if self.clock() >= deadline:
                raise RouterError('the router at %s still lists %s %.0f s after DELETE (see its log for "Failed job")'
                                  % (self.url, url, timeout), {'worker': summarize(worker)})
            self.sleep(self.interval)

    def add(self, url: str, worker_type: str, bootstrap_port: Optional[int] = None, api_key: Optional[str] = None,
            timeout: float = 60.0, check_mode: bool = False, wait: bool = True) -> Dict[str, Any]:
        """Put ``url`` back and wait until the router lists it healthy with the right type (and port).

        A worker already listed that way is left alone. One listed with the wrong type or port (a POST without
        worker_type makes a 'regular' one) is removed and added again. Returns {changed, worker, seconds}.
        """
        started = self.clock()
        payload = add_payload(url, worker_type, bootstrap_port, api_key)
        worker = find_worker(self.listing(), url)
        changed = False
        fixed = None
        if worker is not None and worker.get('worker_type') not in (None, 'unknown'):
            fixed = mismatch(worker, worker_type, bootstrap_port)
            if fixed and not check_mode:
                self.remove(url, worker.get('worker_type'), allow_last=True, timeout=timeout)
                worker = None
        if worker is None or fixed:
            if check_mode:
                return {'changed': True, 'worker': summarize(worker), 'seconds': 0.0,
                        'msg': 'would add %s as %s%s' % (url, worker_type, ' (%s)' % fixed if fixed else '')}
            answer = self.client.post_json(join_url(self.url, '/workers'), payload, control_plane=True)
            self._check_auth(answer, 'POST /workers')
            if registering(answer):
                # smg: the router's own job for this URL (from its command line, or an earlier POST) is still checking
                # the worker, which is not listed until it ends: wait for it below, as for our own registration.
                pass
            elif answer.status not in (200, 201, 202):
                raise RouterError('the router at %s did not accept %s: %s'
                                  % (self.url, url, answer.summary('POST /workers')))
            else:
                changed = True
        if check_mode or not wait:
            return {'changed': changed, 'worker': summarize(worker), 'seconds': round(self.clock() - started, 3),
                    'msg': 'added %s as %s' % (url, worker_type) if changed else '%s is registered' % url}
        deadline = started + timeout
        last = None
        while True:
            last = find_worker(self.listing(), url)
            if last is not None and last.get('is_healthy') and mismatch(last, worker_type, bootstrap_port) is None:
                msg = ('added %s as %s' % (url, worker_type)) if changed else ('%s is registered and healthy' % url)
                if fixed:
                    msg += ' (it was %s)' % fixed
                return {'changed': changed, 'worker': summarize(last), 'seconds': round(self.clock() - started, 3),
                        'msg': msg}
            if self.clock() >= deadline:
                raise RouterError(self._not_healthy(url, worker_type, last, timeout), {'worker': summarize(last)})
            self.sleep(self.interval)

    def _not_healthy(self, url, worker_type, last, timeout):
        if last is None:
            state = 'not listed (the router dropped it: see its log for "Failed job")'
        else:
            problem = mismatch(last, worker_type) if last.get('worker_type') not in (None, 'unknown') else None
            state = problem or ('listed, not healthy yet%s' % (
                ' (job %s)' % last['job_status'].get('status') if isinstance(last.get('job_status'), dict) else ''))
        return ('%s is not back in the router at %s as a healthy %s worker after %.0f s: %s'
                % (url, self.url, worker_type, timeout, state))
