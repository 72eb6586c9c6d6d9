# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A fake PD router worker API and a fake SGLang /metrics, as real HTTP servers on loopback.

FakeRouter answers like sglang-router 0.3.2 measured (router-drain notes in the module docstrings): GET /workers,
DELETE /workers/{uuid} (202, then gone), POST /workers (202, registered after ``register_after`` reads of the list,
healthy after ``healthy_after`` more), 401 with an empty body without the key. It records every call.
FakeWorker serves /metrics with gauges a test sets, in either spelling (``sglang:`` or ``sglang_``), and /health
with the statuses a test sets (a server loading its model answers 503).
"""
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(object):
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _body(self):
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length) if length else b''
                try:
                    return json.loads(raw.decode()) if raw else None
                except ValueError:
                    return raw.decode()

            def _send(self, status, body=None, content_type='application/json'):
                raw = b'' if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
                self.send_response(status)
                self.send_header('Content-Type', content_type)
                self.send_header('Content-Length', str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self):
                owner.dispatch(self, 'GET', None)

            def do_POST(self):
                owner.dispatch(self, 'POST', self._body())

            def do_DELETE(self):
                owner.dispatch(self, 'DELETE', None)

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def dispatch(self, handler, method, body):
        with self.lock:
            self.calls.append((method, handler.path, body, handler.headers.get('Authorization')))
            status, answer, ctype = self.answer(method, handler.path, body, handler.headers.get('Authorization'))
        handler._send(status, answer, ctype)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeRouter(_Server):
    def __init__(self, workers=(), api_key=None, register_after=0, healthy_after=0, drop_posts=False,
                 control_plane_api_key=None):
        self.api_key = api_key
        # As sglang-router 0.3.2: with a control-plane key only it manages workers (the client key gets 401 there);
        # without one the client key does.
        self.control_plane_api_key = control_plane_api_key
        self.register_after = register_after
        self.healthy_after = healthy_after
        self.drop_posts = drop_posts
        self.workers = {}
        self.pending = []
        for worker in workers:
            self.put(worker)
        super(FakeRouter, self).__init__()

    def put(self, worker):
        entry = dict({'id': str(uuid.uuid4()), 'is_healthy': True, 'load': 0, 'priority': 50}, **worker)
        self.workers[entry['id']] = entry
        return entry

    def listing(self):
        items = list(self.workers.values())
        return {'workers': items, 'total': len(items),
                'stats': dict(('%s_count' % k, len([w for w in items if w.get('worker_type') == k]))
                              for k in ('prefill', 'decode', 'regular'))}

    def _tick(self):
        for job in list(self.pending):
            job['reads'] += 1
            if job['reads'] > self.register_after:
                self.pending.remove(job)
                entry = self.put(dict(job['worker'], is_healthy=self.healthy_after == 0))
                entry['_healthy_in'] = self.healthy_after
        for entry in self.workers.values():
            if not entry['is_healthy'] and entry.get('_healthy_in') is not None:
                entry['_healthy_in'] -= 1
                if entry['_healthy_in'] <= 0:
                    entry['is_healthy'] = True

    def answer(self, method, path, body, auth):
        needed = self.control_plane_api_key or self.api_key
        if needed and auth != 'Bearer %s' % needed:
            return 401, None, 'text/plain'
        if method == 'GET' and path == '/workers':
            self._tick()
            listing = self.listing()
            listing['workers'] = [dict((k, v) for k, v in w.items() if not k.startswith('_')) for w in listing['workers']]
            return 200, listing, 'application/json'
        if method == 'DELETE' and path.startswith('/workers/'):
            worker_id = path.rsplit('/', 1)[1]
            if worker_id not in self.workers:
                return 404, {'error': 'Worker %s not found' % worker_id, 'code': 'WORKER_NOT_FOUND'}, 'application/json'
            del self.workers[worker_id]
            return 202, {'status': 'accepted', 'worker_id': worker_id}, 'application/json'
        if method == 'POST' and path == '/workers':
            if not isinstance(body, dict) or 'url' not in body:
                return 422, {'error': 'missing field `url`'}, 'application/json'
            worker = {'url': body['url'], 'worker_type': body.get('worker_type') or 'regular'}
            if worker['worker_type'] == 'prefill':
                worker['bootstrap_port'] = body.get('bootstrap_port')
            if not self.drop_posts:
                self.pending.append({'worker': worker, 'reads': 0})
            return 202, {'status': 'accepted', 'worker_id': str(uuid.uuid4()), 'url': body['url']}, 'application/json'
        return 404, {'error': 'not found'}, 'application/json'

    def posts(self):
        return [c[2] for c in self.calls if c[0] == 'POST']

    def deletes(self):
        return [c[1] for c in self.calls if c[0] == 'DELETE']


class FakeWorker(_Server):
    """/metrics from ``readings``: a list of {gauge: value} served one per scrape (the last one repeats)."""

    def __init__(self, readings=None, requests_total=0, underscore=False, status=200, health=(200,), on_health=None):
        self.readings = list(readings or [{'sglang:num_running_reqs': 0}])
        self.requests_total = requests_total
        self.underscore = underscore
        self.status = status
        self.scrapes = 0
        # /health answers these statuses one per request (the last one repeats); ``on_health(status)`` is called
        # with each answer (a test's router can react to the worker coming up).
        self.health = list(health)
        self.health_checks = 0
        self.on_health = on_health
        super(FakeWorker, self).__init__()

    def answer(self, method, path, body, auth):
        if path == '/health':
            status = self.health[min(self.health_checks, len(self.health) - 1)]
            self.health_checks += 1
            if self.on_health:
                self.on_health(status)
            return status, b'', 'text/plain'
        if path != '/metrics':
            return 404, None, 'text/plain'
        if self.status != 200:
            return self.status, b'not here', 'text/plain'
        reading = self.readings[min(self.scrapes, len(self.readings) - 1)]
        self.scrapes += 1
        lines = []
        for name, value in sorted(reading.items()):
            if self.underscore:
                name = name.replace('sglang:', 'sglang_')
            lines.append('# TYPE %s gauge' % name)
            for rank in (0,):
                lines.append('%s{model_name="m",engine_type="decode",tp_rank="%d"} %s' % (name, rank, float(value)))
        counter = 'sglang_num_requests_total' if self.underscore else 'sglang:num_requests_total'
        lines.append('%s{model_name="m",engine_type="decode",is_streaming="true"} %s' % (counter, float(self.requests_total)))
        lines.append('%s{model_name="m",engine_type="decode",is_streaming="false"} 1.0' % counter)
        return 200, ('\n'.join(lines) + '\n').encode(), 'text/plain; version=0.0.4'
