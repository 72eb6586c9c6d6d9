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
    api_key = 'router-key'

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
        if entry in ('refused', 'timed out'):
            return HttpResult(method, url, None, error='connection refused' if entry == 'refused' else entry)
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


WANTED = {'prefill': [{'url': 'http://p:1', 'bootstrap_port': 8998}], 'decode': [{'url': 'http://d:1'}]}


def registering_probe(client, register=True):
    state = rd.EndpointState(rd.Endpoint('http://h:1', kind='router', workers=WANTED, register=True))
    state.register_missing = register
    return rd.probe_router(client, state, True, deadline=1e12, interval=0.25), state


def test_router_registers_a_worker_that_is_up_but_not_listed_once():
    only_prefill = {'workers': [WORKERS['workers'][0]]}
    client = FakeClient({('GET', '/workers'): (200, only_prefill), ('GET', '/health'): (200, b''),
                         ('POST', '/workers'): (202, {'status': 'accepted'})})
    ok, state = registering_probe(client)
    assert ok is False
    posts = [c for c in client.calls if c[:2] == ('POST', '/workers')]
    # Only the missing decode worker, with its type and the key the router presents to it, on the control plane.
    assert [c[2] for c in posts] == [{'url': 'http://d:1', 'worker_type': 'decode', 'api_key': 'router-key'}]
    assert ('workers', True) in client.planes
    assert state.registered == ['http://d:1']
    assert state.as_dict()['registered'] == ['http://d:1']
    rd.probe_router(client, state, True, deadline=1e12, interval=0.25)
    assert len([c for c in client.calls if c[:2] == ('POST', '/workers')]) == 1


def test_router_leaves_a_worker_still_loading_to_a_later_probe():
    only_prefill = {'workers': [WORKERS['workers'][0]]}
    client = FakeClient({('GET', '/workers'): (200, only_prefill), ('GET', '/health'): (503, b''),
                         ('POST', '/workers'): (202, {'status': 'accepted'})})
    _ok, state = registering_probe(client)
    assert ('POST', '/workers') not in [c[:2] for c in client.calls]
    assert state.registered == [] and 'registered' not in state.as_dict()


def test_router_counts_a_worker_being_added_as_listed_and_smg_409_as_its_own_job():
    adding = {'workers': [WORKERS['workers'][0], {'url': 'http://d:1', 'worker_type': 'unknown', 'is_healthy': False}]}
    client = FakeClient({('GET', '/workers'): (200, adding), ('GET', '/health'): (200, b'')})
    registering_probe(client)
    assert ('POST', '/workers') not in [c[:2] for c in client.calls]
    client = FakeClient({('GET', '/workers'): (200, {'workers': [WORKERS['workers'][0]]}), ('GET', '/health'): (200, b''),
                         ('POST', '/workers'): (409, {'error': 'Worker creation already in progress for URL'})})
    _ok, state = registering_probe(client)
    assert state.registered == [] and state.last_status.startswith('GET /workers: ')


def test_router_refusing_a_registration_says_so_while_waiting():
    client = FakeClient({('GET', '/workers'): (200, {'workers': [WORKERS['workers'][0]]}), ('GET', '/health'): (200, b''),
                         ('POST', '/workers'): (400, {'error': 'bad worker'})})
    _ok, state = registering_probe(client)
    assert state.registered == []
    assert state.last_status.startswith('registering http://d:1: POST /workers -> 400')


def test_a_wait_registers_and_then_serves_but_a_check_mode_probe_never_registers():
    listing = {'now': {'workers': [WORKERS['workers'][0]]}}

    def accept():
        listing['now'] = WORKERS
        return (202, {'status': 'accepted'})

    routes = {('GET', '/workers'): lambda: (200, listing['now']), ('GET', '/health'): (200, b''),
              ('POST', '/workers'): accept, ('POST', '/v1/chat/completions'): (200, CHAT_OK)}
    endpoint = rd.Endpoint('http://h:1', kind='router', workers=WANTED, register=True, model='m')
    client = FakeClient(routes)
    rd.Waiter([endpoint], client, timeout=10, interval=0.05, generate=False).probe_once()
    assert ('POST', '/workers') not in [c[:2] for c in client.calls]
    states, outcome = rd.Waiter([endpoint], client, timeout=10, interval=0.05).run()
    assert outcome == 'ready'
    assert states[0].registered == ['http://d:1']


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


# ---- hung servers ---------------------------------------------------------------------------

def _fake_proc(tmp_path, states):
    """A /proc and a cgroup tree with the given {pid: state letter}, all in cgroup /system.slice/u.service."""
    proc = tmp_path / 'proc'
    for pid, letter in states.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / 'stat').write_text('%d (python3) %s 1 2 3\n' % (pid, letter))
    group = tmp_path / 'cgroup' / 'system.slice' / 'u.service'
    group.mkdir(parents=True)
    (group / 'cgroup.procs').write_text(''.join('%d\n' % pid for pid in states))
    return str(proc), str(tmp_path / 'cgroup')


RUNNING_UNIT = ('LoadState=loaded\nActiveState=active\nSubState=running\nNRestarts=0\nMainPID=11\n'
                'ControlGroup=/system.slice/u.service\nFreezerState=running\n')


def test_stopped_unit_is_hung(tmp_path):
    proc, cgroup = _fake_proc(tmp_path, {11: 'T', 12: 'T', 13: 'S'})
    state = rd.parse_systemctl_show(RUNNING_UNIT)
    assert rd.unit_pids(state, cgroup) == [11, 12, 13]
    problem = rd.hung_unit_problem(state, proc, cgroup)
    assert problem.startswith('hung: 2 of its 3 processes are stopped (state T, SIGSTOP: pids 11, 12)')
    assert 'SIGCONT (systemctl kill --signal=SIGCONT UNIT)' in problem
    assert 'SIGCONT u.service)' not in problem
    assert '--signal=SIGCONT u.service)' in rd.hung_unit_problem(state, proc, cgroup, 'u.service')


def test_running_unit_is_not_hung(tmp_path):
    proc, cgroup = _fake_proc(tmp_path, {11: 'S', 12: 'R'})
    assert rd.hung_unit_problem(rd.parse_systemctl_show(RUNNING_UNIT), proc, cgroup) is None
    # a failed unit is the unit problem's to report, not a hang
    assert rd.hung_unit_problem({'ActiveState': 'failed', 'MainPID': '11'}, proc, cgroup) is None


def test_main_pid_when_the_cgroup_cannot_be_read(tmp_path):
    proc, _cgroup = _fake_proc(tmp_path, {11: 'T'})
    state = rd.parse_systemctl_show(RUNNING_UNIT)
    assert rd.unit_pids(state, str(tmp_path / 'nowhere')) == [11]
    assert 'pids 11)' in rd.hung_unit_problem(state, proc, str(tmp_path / 'nowhere'))
    assert rd.unit_pids({'MainPID': '0'}, str(tmp_path)) == []


def test_frozen_unit_is_hung(tmp_path):
    state = dict(rd.parse_systemctl_show(RUNNING_UNIT), FreezerState='frozen')
    assert 'systemctl thaw u.service' in rd.hung_unit_problem(state, str(tmp_path), str(tmp_path), 'u.service')


def test_stopped_unit_fails_at_once_without_a_request(tmp_path):
    # A SIGSTOPped server accepts connections and answers nothing: a request would wait out its timeout. The unit
    # is named before any request is sent.
    proc, cgroup = _fake_proc(tmp_path, {11: 'T'})
    systemd = FakeSystemd(RUNNING_UNIT, journal='Dec 03 sglang[11]: serving\n')
    client = FakeClient({})
    eps = [rd.Endpoint('http://h:30002', unit='sglang-decode-0.service')]
    inspector = rd.SystemdInspector(systemd, proc_root=proc, cgroup_root=cgroup)
    states, outcome = rd.Waiter(eps, client, timeout=60, interval=0.05, inspector=inspector).run()
    assert outcome == 'fatal'
    assert client.calls == []
    msg = rd.failure_message(states, outcome, 60)
    assert msg.startswith('Endpoint hung while waiting: sglang-decode-0.service (http://h:30002): '
                          'sglang-decode-0.service hung: 1 of its 1 processes are stopped')
    assert 'ActiveState=active' in msg and 'serving' in msg
    assert 'systemctl kill --signal=SIGCONT sglang-decode-0.service' in msg


def test_unit_stopped_while_waiting_is_named_after_the_probe(tmp_path):
    proc, cgroup = _fake_proc(tmp_path, {11: 'S'})
    systemd = FakeSystemd(RUNNING_UNIT)

    def stop_then_time_out():
        # SIGSTOP arrives while the request waits; it times out
        (tmp_path / 'proc' / '11' / 'stat').write_text('11 (python3) T 1 2 3\n')
        return 'timed out'

    client = FakeClient({('GET', '/health'): stop_then_time_out})
    eps = [rd.Endpoint('http://h:30002', unit='sglang-decode-0.service')]
    inspector = rd.SystemdInspector(systemd, proc_root=proc, cgroup_root=cgroup)
    states, outcome = rd.Waiter(eps, client, timeout=60, interval=0.05, inspector=inspector).run()
    assert outcome == 'fatal'
    assert states[0].attempts == 1
    assert 'hung: 1 of its 1 processes are stopped' in states[0].fatal


ROUTER_WORKERS = {
    'prefill': [{'url': 'http://p:30000', 'name': 'prefill-0', 'unit': 'sglang-prefill-0.service',
                 'inventory_host': 'hp', 'bootstrap_port': 8998}],
    'decode': [{'url': 'http://d:30002', 'name': 'decode-0', 'unit': 'sglang-decode-0.service', 'inventory_host': 'hd'},
               {'url': 'http://d:30012', 'name': 'decode-1', 'unit': 'sglang-decode-1.service', 'inventory_host': 'hd'}],
}


def _router_with_sick_decode(health_answer):
    workers = {'workers': [
        {'url': 'http://p:30000', 'worker_type': 'prefill', 'is_healthy': True},
        {'url': 'http://d:30002', 'worker_type': 'decode', 'is_healthy': False},
        {'url': 'http://d:30012', 'worker_type': 'decode', 'is_healthy': True},
    ]}
    client = FakeClient({('GET', '/workers'): (200, workers)})
    answer = client._answer

    def routed(method, url, payload=None):
        if url == 'http://d:30002/health':
            client.calls.append((method, url, payload))
            return health_answer(method, url)
        return answer(method, url, payload)

    client._answer = routed
    return client


def test_router_names_the_worker_it_does_not_count_healthy():
    client = _router_with_sick_decode(lambda m, u: HttpResult(m, u, None, error='connection refused'))
    ok, state = probe('router', client, expected_prefill=1, expected_decode=2, workers=ROUTER_WORKERS)
    assert ok is False and state.fatal is None
    assert state.last_status == (
        'GET /workers: prefill 1/1 healthy (expected 1), decode 1/2 healthy (expected 2); not healthy: decode decode-0 '
        '(sglang-decode-0.service on hd, http://d:30002); decode decode-0 (sglang-decode-0.service on hd, '
        'http://d:30002): GET /health -> connection refused')


def test_router_worker_silent_for_the_hang_timeout_is_hung():
    clock = [100.0]

    def silent(method, url):
        clock[0] += 4.0  # the request waited its whole timeout
        return HttpResult(method, url, None, error='timed out')

    client = _router_with_sick_decode(silent)
    state = rd.EndpointState(rd.Endpoint('http://h:1', kind='router', expected_decode=2, workers=ROUTER_WORKERS))
    state.hang_timeout = 10.0
    assert rd.probe_router(client, state, True, 1e12, 0.25, clock=lambda: clock[0]) is False
    assert state.fatal is None and 'answered nothing for 4 s' in state.last_status
    rd.probe_router(client, state, True, 1e12, 0.25, clock=lambda: clock[0])
    assert state.fatal is None
    rd.probe_router(client, state, True, 1e12, 0.25, clock=lambda: clock[0])
    assert state.fatal.startswith('decode decode-0 (sglang-decode-0.service on hd, http://d:30002) is hung: the router '
                                  'does not count it healthy and it accepts connections but answered nothing to GET '
                                  '/health for 12 s (hang_timeout 10s')
    # no chat was sent through a router short of workers
    assert '/v1/chat/completions' not in client.paths()


def test_router_worker_that_answers_again_is_not_hung():
    answers = iter([HttpResult('GET', 'u', None, error='timed out'), HttpResult('GET', 'u', 503, {}, b'')])
    clock = [0.0]

    def flaky(method, url):
        clock[0] += 30.0
        return next(answers)

    client = _router_with_sick_decode(flaky)
    state = rd.EndpointState(rd.Endpoint('http://h:1', kind='router', expected_decode=2, workers=ROUTER_WORKERS))
    state.hang_timeout = 45.0
    rd.probe_router(client, state, True, 1e12, 0.25, clock=lambda: clock[0])
    rd.probe_router(client, state, True, 1e12, 0.25, clock=lambda: clock[0])
    assert state.fatal is None
    assert state.silent_since == {}
    assert state.last_status.endswith('GET /health -> 503')


def test_expected_worker_list_ignores_what_it_cannot_name():
    assert rd.expected_worker_list(None) == []
    assert rd.expected_worker_list({'prefill': [{'name': 'no-url'}], 'decode': [{'url': 'http://d:1/'}]}) == [
        {'url': 'http://d:1', 'worker_type': 'decode', 'label': 'decode http://d:1', 'bootstrap_port': None}]
    # A prefill worker keeps its bootstrap port: the wait registers it with it.
    assert rd.expected_worker_list({'prefill': [{'url': 'http://p:1', 'bootstrap_port': 8998}]})[0]['bootstrap_port'] == 8998


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


# --- instances over several nodes: a node rank > 0 serves only SGLang's dummy /health ----------------------------------

DUMMY = {('GET', '/health'): (200, b''), ('GET', '/health_generate'): (200, b''), ('GET', '/ping'): (200, b'')}


@pytest.mark.parametrize('generate', [True, False])
def test_a_dummy_health_server_is_not_a_ready_instance(generate):
    """Before: /health 200, /server_info 404 (no mode known), /health_generate 200 -> "ready". A rank > 0's dummy
    server answers exactly that, so it must not pass for rank 0 (nnodes > 1) or for a server of unknown rank."""
    for kwargs in ({'rank': 0, 'nnodes': 2}, {}):
        if not generate and not kwargs:
            continue  # a single-host server without generation is ready on /health alone (unchanged)
        ok, state = probe('server', FakeClient(dict(DUMMY)), generate=generate, **kwargs)
        assert not ok, kwargs
        assert "dummy health server of a node rank > 0" in state.last_status
        assert not state.fatal


def test_rank_zero_of_several_nodes_is_ready_on_its_real_api():
    routes = server_routes('prefill')
    routes[('GET', '/model_info')] = (200, {'model_path': 'm'})
    ok, state = probe('server', FakeClient(routes), generate=False, rank=0, nnodes=2)
    assert ok and state.details['rank'] == '0 of 2'
    ok, state = probe('server', FakeClient(server_routes('prefill')), generate=True, rank=0, nnodes=2)
    assert ok and state.details['generation'].startswith('GET /health_generate')


def test_rank_above_zero_is_ready_on_its_dummy_health_but_says_it_is_not_the_instance():
    client = FakeClient(dict(DUMMY))
    ok, state = probe('server', client, generate=True, rank=1, nnodes=2)
    assert ok
    assert 'dummy health of node rank 1' in state.last_status
    assert 'the instance is ready when its rank 0 is' in state.details['generation']
    assert '/health_generate' not in client.paths() and '/generate' not in client.paths()


def test_rank_above_zero_not_up_yet_waits():
    ok, state = probe('server', FakeClient({('GET', '/health'): 'refused'}), generate=True, rank=1, nnodes=2)
    assert not ok and not state.fatal


def test_rank_above_zero_that_answers_the_api_is_a_topology_error():
    routes = server_routes('decode')
    routes[('GET', '/model_info')] = (200, {'model_path': 'm'})
    ok, state = probe('server', FakeClient(routes), generate=True, rank=1, nnodes=2, name='sglang-d.service (node rank 1 of 2)')
    assert not ok
    assert 'sglang-d.service (node rank 1 of 2) is node rank 1 of 2' in state.fatal


def test_rank_above_zero_whose_unit_failed_is_named():
    """The unit of a rank > 0 that is not active fails the wait, naming the rank (the endpoint's name)."""
    systemd = rd.SystemdInspector(FakeSystemd('LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\n'))
    ep = rd.Endpoint('http://h:1', unit='sglang-p.service', name='sglang-p.service (node rank 1 of 2)', rank=1, nnodes=2)
    waiter = rd.Waiter([ep], FakeClient({('GET', '/health'): 'refused'}), timeout=5, interval=0.01,
                       inspector=systemd)
    states, outcome = waiter.run()
    assert outcome == 'fatal'
    message = rd.failure_message(states, outcome, 5)
    assert 'sglang-p.service (node rank 1 of 2)' in message and 'unit failed' in message


def test_endpoint_from_option_reads_rank_and_nnodes():
    ep = rd.Endpoint.from_option({'url': 'http://h:1', 'rank': 2, 'nnodes': 3})
    assert (ep.rank, ep.nnodes) == (2, 3)
    ep = rd.Endpoint.from_option({'url': 'http://h:1'})
    assert (ep.rank, ep.nnodes) == (0, 1)


# --- a prefill instance over several nodes: ready once every prefill rank registered at rank 0's bootstrap ----------

ROUTE = ('GET', rd.BOOTSTRAP_ROUTE_QUERY)
NOT_REGISTERED = (503, 'Prefill server not fully registered yet (8 workers registered)')


def bootstrap_probe(route_answers, times):
    """Probe rank 0 of a prefill instance over gpu-p0 and gpu-p1 at each of ``times``; /route answers in turn."""
    answers = iter(route_answers)
    routes = server_routes('prefill')
    routes[ROUTE] = lambda: next(answers)
    client = FakeClient(routes)
    now = [0.0]
    state = rd.EndpointState(rd.Endpoint('http://h:30000', name='sglang-prefill-0.service (node rank 0 of 2)', rank=0,
                                         nnodes=2, nodes=['gpu-p0', 'gpu-p1'], bootstrap_url='http://h:8998'))
    results = []
    for moment in times:
        now[0] = moment
        results.append(rd.probe_server(client, state, True, deadline=1e12, interval=0.25, clock=lambda: now[0]))
    return results, state, client


def test_prefill_rank_zero_waits_until_every_rank_registered_at_its_bootstrap():
    """Rank 0 answers /health and generates while a rank on the other node has not registered yet: not ready."""
    results, state, client = bootstrap_probe([NOT_REGISTERED, (200, {'prefill_attn_tp_size': 8})], [0.0, 1.0])
    assert results == [False, True]
    assert '/route?prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=-1&target_pp_rank=-1' in client.paths()
    assert 'bootstrap /route -> 200' in state.last_status and not state.fatal


def test_prefill_rank_zero_whose_other_rank_never_registers_fails_naming_the_node():
    """Past the registration window a 503 is a rank that will never register: fatal, naming gpu-p1 and the URL."""
    results, state, _client = bootstrap_probe([NOT_REGISTERED] * 3, [0.0, 10.0, 40.0])
    assert results == [False, False, False]
    assert state.fatal and 'gpu-p1' in state.fatal and 'http://h:8998' in state.fatal
    assert '8 workers registered' in state.fatal and 'Could not fetch prefill parallel info' in state.fatal
    assert 'not every prefill rank registered yet' in state.last_status


def test_prefill_rank_zero_keeps_waiting_within_the_registration_window():
    results, state, _client = bootstrap_probe([NOT_REGISTERED] * 2, [0.0, 29.0])
    assert results == [False, False] and not state.fatal


def test_a_bootstrap_that_does_not_answer_keeps_waiting_without_a_verdict():
    """Refused (not 503) is no registration count: wait, as for a server still loading, until the timeout."""
    results, state, _client = bootstrap_probe(['refused'] * 2, [0.0, 100.0])
    assert results == [False, False] and not state.fatal
    assert 'connection refused' in state.last_status


def test_endpoint_from_option_reads_bootstrap_url_and_nodes():
    ep = rd.Endpoint.from_option({'url': 'http://h:1', 'rank': 0, 'nnodes': 2, 'nodes': ['a', 'b'],
                                  'bootstrap_url': 'http://h:8998/'})
    assert (ep.bootstrap_url, ep.nodes) == ('http://h:8998', ['a', 'b'])
    assert rd.Endpoint.from_option({'url': 'http://h:1'}).bootstrap_url is None
