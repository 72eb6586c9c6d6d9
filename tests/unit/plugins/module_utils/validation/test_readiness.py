# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""wait_ready's probes and waiting logic, with a scripted HTTP client and systemd."""

import json
import os
import subprocess
import sys
import threading

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.validation import readiness as rd
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpResult

WORKERS = {
    'workers': [
        {'url': 'http://p:1', 'worker_type': 'prefill', 'is_healthy': True},
        {'url': 'http://d:1', 'worker_type': 'decode', 'is_healthy': True},
    ],
    'stats': {'prefill_count': 1, 'decode_count': 1, 'regular_count': 0},
}
CHAT_OK = {'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': '391'}, 'finish_reason': 'stop'}]}


class FakeClient(object):
    """Answers from a table: (method, path) -> (status, json body) or a callable returning one."""

    timeout = 5.0

    def __init__(self, routes):
        self.routes = routes
        self.calls = []
        # (path, whether the control-plane key was asked for)
        self.planes = []
        self.lock = threading.Lock()

    def _answer(self, method, url, payload=None):
        path = '/' + url.split('://', 1)[1].split('/', 1)[1]
        with self.lock:
            self.calls.append((method, path, payload))
        entry = self.routes.get((method, path))
        if callable(entry):
            entry = entry()
        if entry is None:
            return HttpResult(method, url, 404, {}, b'{"detail":"Not Found"}')
        if entry == 'refused':
            return HttpResult(method, url, None, error='connection refused')
        status, body = entry[0], entry[1]
        headers = entry[2] if len(entry) > 2 else {}
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        return HttpResult(method, url, status, headers, raw)

    def get(self, url, timeout=None, control_plane=False):
        self.planes.append((url.split('/', 3)[-1], control_plane))
        return self._answer('GET', url)

    def post_json(self, url, payload, timeout=None, control_plane=False):
        self.planes.append((url.split('/', 3)[-1], control_plane))
        return self._answer('POST', url, payload)

    def paths(self):
        return [c[1] for c in self.calls]


def server_routes(mode, health=200, health_generate=200, generate=200):
    return {
        ('GET', '/health'): (health, b''),
        ('GET', '/server_info'): (200, {'disaggregation_mode': mode, 'served_model_name': 'm'}),
        ('GET', '/health_generate'): (health_generate, b''),
        ('POST', '/generate'): (generate, {'text': '3', 'meta_info': {}}),
    }


def probe(kind, client, generate=True, **ep_kwargs):
    state = rd.EndpointState(rd.Endpoint('http://h:1', kind=kind, **ep_kwargs))
    ok = rd.PROBES[kind](client, state, generate, deadline=1e12, interval=0.25)
    return ok, state


# ---- servers --------------------------------------------------------------------------------

@pytest.mark.parametrize('mode', ['prefill', 'decode'])
def test_pd_server_generates_through_health_generate_only(mode):
    client = FakeClient(server_routes(mode))
    ok, state = probe('server', client)
    assert ok is True
    assert '/health_generate' in client.paths()
    assert '/generate' not in client.paths()  # a PD server alone refuses /generate
    assert state.details['disaggregation_mode'] == mode


def test_pd_server_not_ready_while_health_generate_fails():
    client = FakeClient(server_routes('decode', health_generate=503))
    ok, state = probe('server', client)
    assert ok is False
    assert state.last_status == 'GET /health_generate -> 503'


def test_plain_server_gets_a_real_generation():
    client = FakeClient(server_routes('null'))
    ok, _state = probe('server', client)
    assert ok is True
    posts = [c for c in client.calls if c[0] == 'POST']
    assert posts and posts[0][1] == '/generate'
    assert posts[0][2]['sampling_params']['max_new_tokens'] == 1


def test_plain_server_generation_failing_is_not_ready():
    client = FakeClient(server_routes('null', generate=500))
    ok, state = probe('server', client)
    assert ok is False
    assert state.last_status.startswith('POST /generate -> 500')


def test_server_health_503_is_reported():
    client = FakeClient(server_routes('prefill', health=503))
    ok, state = probe('server', client)
    assert ok is False
    assert state.last_status == 'GET /health -> 503'
    assert client.paths() == ['/health']


def test_server_without_generation_is_ready_on_health():
    client = FakeClient(server_routes('prefill', health_generate=503))
    ok, _state = probe('server', client, generate=False)
    assert ok is True
    assert client.paths() == ['/health']


def test_connection_refused_is_reported():
    client = FakeClient({('GET', '/health'): 'refused'})
    ok, state = probe('server', client)
    assert ok is False
    assert state.last_status == 'GET /health -> connection refused'


def test_failing_generation_backs_off():
    client = FakeClient(server_routes('decode', health_generate=503))
    state = rd.EndpointState(rd.Endpoint('http://h:1'))
    now = [100.0]
    for dummy in range(3):
        rd.probe_server(client, state, True, 1e12, 0.25, clock=lambda: now[0])
    # the 2nd and 3rd probe fall inside the back-off: only one generation attempt
    assert client.paths().count('/health_generate') == 1
    now[0] += 0.3
    rd.probe_server(client, state, True, 1e12, 0.25, clock=lambda: now[0])
    assert client.paths().count('/health_generate') == 2
    assert state.generation_backoff == 0.5


# ---- routers --------------------------------------------------------------------------------

def test_router_waits_for_expected_workers():
    only_prefill = {'workers': [WORKERS['workers'][0]]}
    client = FakeClient({('GET', '/workers'): (200, only_prefill)})
    ok, state = probe('router', client)
    assert ok is False
    assert state.last_status == ('GET /workers: prefill 1/1 healthy (expected 1), '
                                 'decode 0/0 healthy (expected 1)')
    assert '/v1/chat/completions' not in client.paths()


def test_router_counts_only_healthy_workers():
    sick = {'workers': [WORKERS['workers'][0], dict(WORKERS['workers'][1], is_healthy=False)]}
    client = FakeClient({('GET', '/workers'): (200, sick)})
    ok, state = probe('router', client)
    assert ok is False
    assert 'decode 0/1 healthy' in state.last_status


def test_router_expects_more_workers_than_it_has():
    client = FakeClient({('GET', '/workers'): (200, WORKERS)})
    ok, _state = probe('router', client, expected_decode=2)
    assert ok is False


def test_router_ready_after_a_real_chat():
    client = FakeClient({
        ('GET', '/workers'): (200, WORKERS),
        ('GET', '/v1/models'): (200, {'data': [{'id': 'deepseek-v4-flash'}]}),
        ('POST', '/v1/chat/completions'): (200, CHAT_OK),
    })
    ok, state = probe('router', client)
    assert ok is True
    chat = [c for c in client.calls if c[1] == '/v1/chat/completions'][0]
    assert chat[2]['model'] == 'deepseek-v4-flash'
    assert state.details['workers']['decode'] == {'healthy': 1, 'total': 1}


def test_router_chat_failure_names_the_cause():
    err = {'error': {'code': 'decode_internal_error', 'message': ''}}
    client = FakeClient({
        ('GET', '/workers'): (200, WORKERS),
        ('POST', '/v1/chat/completions'): (500, err, {'x-smg-error-code': 'decode_internal_error'}),
    })
    ok, state = probe('router', client, model='m')
    assert ok is False
    assert 'router answered 500: decode_internal_error' in state.last_status
    assert '/v1/models' not in client.paths()  # the model was given


def test_router_without_workers_endpoint():
    client = FakeClient({})
    ok, state = probe('router', client)
    assert ok is False
    assert state.last_status.startswith('GET /workers -> 404')


@pytest.mark.parametrize('status', [401, 403])
def test_router_refusing_the_key_is_fatal_at_once(status):
    client = FakeClient({('GET', '/workers'): (status, {'error': 'unauthorized'})})
    ok, state = probe('router', client)
    assert ok is False
    assert state.fatal.startswith('the router answers %d on GET /workers: worker management needs its control-plane key'
                                  % status)
    assert 'sglang_router_control_plane_api_key' in state.fatal and 'sglang_router_api_key' in state.fatal
    # /workers is the control plane: the module sends the control-plane key there.
    assert client.planes == [('workers', True)]


# ---- units and processes --------------------------------------------------------------------

def test_parse_systemctl_show():
    state = rd.parse_systemctl_show('LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\n')
    assert state == {'LoadState': 'loaded', 'ActiveState': 'failed', 'SubState': 'failed', 'Result': 'exit-code'}


@pytest.mark.parametrize('state, fatal', [
    ({'LoadState': 'loaded', 'ActiveState': 'failed'}, True),
    ({'LoadState': 'loaded', 'ActiveState': 'inactive', 'SubState': 'dead'}, True),
    ({'LoadState': 'not-found', 'ActiveState': 'inactive'}, True),
    ({'LoadState': 'loaded', 'ActiveState': 'activating', 'SubState': 'auto-restart'}, False),
    ({'LoadState': 'loaded', 'ActiveState': 'activating', 'SubState': 'start'}, False),
    ({'LoadState': 'loaded', 'ActiveState': 'active', 'SubState': 'running'}, False),
])
def test_unit_problem(state, fatal):
    assert (rd.unit_problem(state) is not None) is fatal


class FakeSystemd(object):
    def __init__(self, show, rc=0, journal='line 1\nline 2\n'):
        self.show = show
        self.rc = rc
        self.journal_text = journal
        self.calls = []

    def __call__(self, args):
        self.calls.append(args)
        if args[1] == 'show':
            return self.rc, self.show, 'System has not been booted with systemd' if self.rc else ''
        return 0, self.journal_text, ''


def test_dead_process_detected():
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait()
    assert rd.pid_problem(proc.pid) == 'process %d is gone' % proc.pid


def test_zombie_process_detected():
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    try:
        # not reaped yet: the pid exists as a zombie until wait()
        for dummy in range(200):
            with open('/proc/%d/stat' % proc.pid) as handle:
                if handle.read().rsplit(')', 1)[1].split()[0] == 'Z':
                    break
            threading.Event().wait(0.01)
        assert 'exited' in rd.pid_problem(proc.pid)
    finally:
        proc.wait()


def test_live_process_is_fine():
    assert rd.pid_problem(os.getpid()) is None


# ---- waiting --------------------------------------------------------------------------------

def test_endpoints_are_probed_concurrently():
    # each probe blocks until the other endpoint's probe runs too: sequential waiting would
    # break the barrier and never turn ready
    barrier = threading.Barrier(2, timeout=2)

    def meeting_probe(client, state, generate, deadline, interval, clock):
        barrier.wait()
        state.last_status = 'met'
        return True

    eps = [rd.Endpoint('http://a:1'), rd.Endpoint('http://b:1')]
    waiter = rd.Waiter(eps, FakeClient({}), timeout=10, interval=0.05, probes={'server': meeting_probe})
    states, outcome = waiter.run()
    assert outcome == 'ready'
    assert all(s.ready and s.attempts == 1 for s in states)


def test_timeout_names_the_endpoint_and_its_last_answer():
    client = FakeClient({('GET', '/health'): (503, b'still loading')})
    eps = [rd.Endpoint('http://127.0.0.1:30000', name='prefill')]
    states, outcome = rd.Waiter(eps, client, timeout=0.3, interval=0.05).run()
    assert outcome == 'timeout'
    assert states[0].ready is False and states[0].attempts >= 2
    msg = rd.failure_message(states, outcome, 0.3)
    assert msg == 'Not ready after 0.3s: prefill (http://127.0.0.1:30000): GET /health -> 503 still loading'


def test_an_endpoint_with_a_timeout_of_its_own_gives_up_on_its_own_deadline():
    # A router and a server in one call: the server's own short limit ends its wait while the longer module timeout
    # still runs for the other, which turns ready after the server gave up.
    clock_started = []

    def late_probe(client, state, generate, deadline, interval, clock):
        if not clock_started:
            clock_started.append(clock())
        if state.endpoint.name == 'slow':
            state.last_status = 'loading'
            return False
        state.last_status = 'up'
        return clock() - clock_started[0] > 0.4

    eps = [rd.Endpoint('http://a:1', name='slow', timeout=0.2), rd.Endpoint('http://b:1', name='late')]
    waiter = rd.Waiter(eps, FakeClient({}), timeout=5, interval=0.05, probes={'server': late_probe})
    states, outcome = waiter.run()
    assert outcome == 'timeout'
    assert [s.ready for s in states] == [False, True]
    assert 0.35 < waiter.elapsed < 3
    msg = rd.failure_message(states, outcome, 5)
    assert msg == 'Not ready after 5s: slow (http://a:1, its own timeout 0.2s): loading'
    assert rd.Endpoint.from_option({'url': 'http://a:1', 'timeout': 7}).timeout == 7.0


def test_failed_unit_stops_waiting_at_once_with_journal():
    systemd = FakeSystemd('LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\n'
                          'ExecMainStatus=1\nNRestarts=0\n',
                          journal='Nov 30 sglang[1]: CUDA error: no kernel image\nNov 30 systemd[1]: failed\n')
    inspector = rd.SystemdInspector(systemd)
    client = FakeClient({('GET', '/health'): 'refused'})
    eps = [rd.Endpoint('http://127.0.0.1:30002', unit='sglang-decode.service'),
           rd.Endpoint('http://127.0.0.1:30000', name='other')]
    waiter = rd.Waiter(eps, client, timeout=60, interval=0.05, inspector=inspector)
    states, outcome = waiter.run()
    assert outcome == 'fatal'
    decode = states[0]
    assert decode.attempts == 1  # failed on the first look, not at the 60 s timeout
    assert decode.unit_state['ActiveState'] == 'failed'
    assert decode.journal == ['Nov 30 sglang[1]: CUDA error: no kernel image', 'Nov 30 systemd[1]: failed']
    assert ['journalctl', '-u', 'sglang-decode.service', '-n', '20', '--no-pager'] in systemd.calls
    msg = rd.failure_message(states, outcome, 60)
    assert 'sglang-decode.service unit failed: LoadState=loaded ActiveState=failed' in msg
    assert 'Result=exit-code' in msg
    assert 'CUDA error: no kernel image' in msg
    assert 'GET /health -> connection refused' in msg
    assert decode.as_dict()['failure'].startswith('sglang-decode.service unit failed')


def test_activating_unit_keeps_waiting():
    systemd = FakeSystemd('LoadState=loaded\nActiveState=activating\nSubState=auto-restart\n')
    client = FakeClient({('GET', '/health'): (503, b'')})
    eps = [rd.Endpoint('http://h:1', unit='sglang-prefill.service')]
    states, outcome = rd.Waiter(eps, client, timeout=0.3, interval=0.05,
                                inspector=rd.SystemdInspector(systemd)).run()
    assert outcome == 'timeout'
    assert states[0].journal is None
    assert states[0].unit_state['SubState'] == 'auto-restart'


def test_unreadable_unit_state_is_fatal():
    systemd = FakeSystemd('', rc=1)
    client = FakeClient({('GET', '/health'): (503, b'')})
    eps = [rd.Endpoint('http://h:1', unit='sglang-prefill.service')]
    states, outcome = rd.Waiter(eps, client, timeout=30, interval=0.05,
                                inspector=rd.SystemdInspector(systemd)).run()
    assert outcome == 'fatal'
    assert 'cannot read the state of unit sglang-prefill.service' in states[0].fatal


def test_dead_pid_is_fatal():
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait()
    client = FakeClient({('GET', '/health'): 'refused'})
    eps = [rd.Endpoint('http://h:1', pid=proc.pid)]
    states, outcome = rd.Waiter(eps, client, timeout=30, interval=0.05).run()
    assert outcome == 'fatal'
    assert states[0].fatal == 'process %d is gone' % proc.pid
    assert states[0].attempts == 1


def test_probe_exception_is_reported_not_raised():
    def broken(client, state, generate, deadline, interval, clock):
        raise KeyError('boom')

    states, outcome = rd.Waiter([rd.Endpoint('http://h:1')], FakeClient({}), timeout=0.2, interval=0.05,
                                probes={'server': broken}).run()
    assert outcome == 'timeout'
    assert states[0].last_status.startswith('probe error: KeyError')


def test_probe_once_is_read_only():
    client = FakeClient(server_routes('prefill'))
    waiter = rd.Waiter([rd.Endpoint('http://h:1')], client, timeout=10, interval=0.05, generate=False)
    states = waiter.probe_once()
    assert states[0].ready is True
    assert client.paths() == ['/health']


def test_endpoint_names():
    assert rd.Endpoint('http://127.0.0.1:30000/').name == '127.0.0.1:30000'
    assert rd.Endpoint('http://127.0.0.1:30000', unit='sglang-prefill.service').name == 'sglang-prefill.service'
    assert rd.Endpoint('http://127.0.0.1:30000', name='p', unit='u').name == 'p'


def test_ready_endpoint_keeps_its_unit_state():
    systemd = FakeSystemd('LoadState=loaded\nActiveState=active\nSubState=running\nNRestarts=2\n')
    client = FakeClient(server_routes('prefill'))
    eps = [rd.Endpoint('http://h:1', unit='sglang-prefill.service')]
    states, outcome = rd.Waiter(eps, client, timeout=10, interval=0.05,
                                inspector=rd.SystemdInspector(systemd)).run()
    assert outcome == 'ready'
    assert states[0].unit_state['NRestarts'] == '2'
    assert states[0].journal is None


START_JOURNAL = (
    "[  101.000000] h sglang[2]: Load weight begin. avail mem=79.11 GB\n"
    "[  109.000000] h sglang[2]: Load weight end. elapsed=8.00 s, type=DeepseekV4ForCausalLM\n"
    "[  109.100000] h sglang[2]: Memory pool end. avail mem=7.62 GB\n"
    "[  110.800000] h sglang[2]: Engine startup timings (s): load_weight=8.00, kv_cache_allocation=0.10, "
    "scheduler_e2e=9.70, cuda_graph={prefill=0.00, decode=1.50}, tokenizer_e2e=9.80\n"
    "[  112.800000] h sglang[2]: The server is fired up and ready to roll!\n")
UNIT_UP = 'LoadState=loaded\nActiveState=active\nSubState=running\nExecMainStartTimestampMonotonic=100000000\n'


def test_a_ready_server_says_where_its_start_went():
    systemd = FakeSystemd(UNIT_UP, journal=START_JOURNAL)
    eps = [rd.Endpoint('http://h:1', name='prefill', unit='sglang-prefill.service')]
    states, outcome = rd.Waiter(eps, FakeClient(server_routes('prefill')), timeout=10, interval=0.05,
                                inspector=rd.SystemdInspector(systemd)).run()
    assert outcome == 'ready'
    startup = states[0].as_dict()['startup']
    assert startup['ready_s'] == 12.8 and startup['phases']['warmup'] == 2.0
    assert startup['line'] == ('prefill ready in 12.8 s: load weights 8.0 s, KV cache 0.1 s, CUDA graphs 1.5 s, '
                               'warmup 2.0 s')
    assert ['journalctl', '-u', 'sglang-prefill.service', '-n', '2000', '-o', 'short-monotonic', '--no-pager'] \
        in systemd.calls


def test_a_start_that_runs_out_of_time_names_its_phase():
    systemd = FakeSystemd(UNIT_UP, journal=START_JOURNAL.split('[  109.1', maxsplit=1)[0])
    eps = [rd.Endpoint('http://127.0.0.1:30000', name='decode', unit='sglang-decode.service')]
    client = FakeClient({})  # nothing answers: the port is closed while the engine loads
    states, outcome = rd.Waiter(eps, client, timeout=0.3, interval=0.05, inspector=rd.SystemdInspector(systemd)).run()
    assert outcome == 'timeout'
    msg = rd.failure_message(states, outcome, 0.3)
    assert msg.endswith('; start-up phase: allocating the KV cache'), msg
