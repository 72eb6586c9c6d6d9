# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The router serves the inventory's worker set: registered, deregistered and drained at run time, against a fake
router that answers like sglang-router 0.3.2 and a fake worker's /metrics (both on loopback)."""

import json

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient, HttpResult
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import router_admin as ra
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import worker_set as ws
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.restart_plan import merge, plan_line

from fake_pd import FakeRouter, FakeWorker  # noqa: E402  pylint: disable=wrong-import-position
from serving_support import D0, D1, P0, P1  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def servers():
    made = []

    def make(kind, *args, **kwargs):
        fake = kind(*args, **kwargs)
        made.append(fake)
        return fake
    yield make
    for fake in made:
        fake.stop()


def test_the_plan_registers_what_is_missing_and_deregisters_what_the_inventory_does_not_want():
    listing = {'workers': [dict(P0, id='p0'), dict(D0, id='d0'), {'id': 'x', 'url': 'http://127.0.0.1:1', 'worker_type': 'decode'}]}
    found = ws.plan(listing, [P0, P1, D0])
    assert found['register'] == [P1]
    assert [w['id'] for w in found['deregister']] == ['x']
    assert ws.reasons(found) == ['register prefill %s' % P1['url'], 'deregister decode http://127.0.0.1:1']


def test_a_worker_being_added_counts_as_listed_and_a_wrong_port_is_registered_again():
    pending = {'workers': [{'id': 'p', 'url': P0['url'], 'worker_type': 'unknown'}, dict(D0, id='d')]}
    assert ws.plan(pending, [P0, D0]) == {'register': [], 'deregister': []}
    wrong = {'workers': [dict(P0, id='p', bootstrap_port=9999), dict(D0, id='d')]}
    assert ws.plan(wrong, [P0, D0])['register'] == [P0]


def test_reconcile_registers_first_then_deregisters_and_drains_the_removed_worker(servers):
    worker = servers(FakeWorker, [{'sglang:num_running_reqs': 2}, {'sglang:num_running_reqs': 0}])
    removed = {'url': worker.url, 'worker_type': 'decode'}
    new = dict(P1, url=servers(FakeWorker).url)
    router = servers(FakeRouter, (P0, D0, removed))
    client = HttpClient(timeout=5)
    result = ws.reconcile(ra.RouterAdmin(client, router.url, interval=0.01), [P0, new, D0], client, timeout=5,
                          drain_timeout=10)
    assert result['changed']
    assert [w['url'] for w in result['registered']] == [new['url']]
    assert [w['url'] for w in result['deregistered']] == [worker.url]
    assert result['plan'] == ['register prefill %s' % new['url'], 'deregister decode %s' % worker.url]
    assert result['drained'][0]['idle'] and result['drained'][0]['url'] == worker.url
    assert worker.scrapes >= 3  # busy, then idle twice in a row
    methods = [c[0] for c in router.calls if c[0] in ('POST', 'DELETE')]
    assert methods == ['POST', 'DELETE']
    assert sorted(w['url'] for w in router.workers.values()) == sorted([P0['url'], new['url'], D0['url']])


def test_reconcile_finds_a_worker_a_killed_day2_run_left_outside_and_leaves_a_matching_router_alone(servers):
    decode = dict(D0, url=servers(FakeWorker).url)
    router = servers(FakeRouter, (P0,))
    client = HttpClient(timeout=5)
    admin = ra.RouterAdmin(client, router.url, interval=0.01)
    first = ws.reconcile(admin, [P0, decode], client, timeout=5)
    assert [w['url'] for w in first['registered']] == [decode['url']] and first['deregistered'] == []
    assert router.posts()[0]['worker_type'] == 'decode'
    again = ws.reconcile(admin, [P0, decode], client, timeout=5)
    assert not again['changed'] and again['plan'] == []
    assert len(router.posts()) == 1 and router.deletes() == []


def test_a_new_worker_is_registered_only_once_it_answers_health(servers):
    router = servers(FakeRouter, (P0, D0))
    posts_seen = []
    loading = servers(FakeWorker, health=[503, 503, 200], on_health=lambda status: posts_seen.append(
        (status, len(router.posts()))))
    new = dict(D1, url=loading.url)
    client = HttpClient(timeout=5)
    result = ws.reconcile(ra.RouterAdmin(client, router.url, interval=0.01), [P0, D0, new], client, timeout=5)
    assert [w['url'] for w in result['registered']] == [new['url']]
    # No POST while the server answered 503 (loading its model); one after it answered 200.
    assert posts_seen == [(503, 0), (503, 0), (200, 0)]
    assert len(router.posts()) == 1


def test_a_freshly_started_router_that_registers_the_worker_itself_meanwhile_gets_no_post(servers):
    """The router read the worker from the worker set file at its start and lists it once it answers /health (its
    own start-up job); the reconcile, waiting for the same /health, then finds it listed and posts nothing."""
    router = servers(FakeRouter, (P0, D0))
    late = {}

    def router_job(status):
        if status == 200 and not late.get('listed'):
            late['listed'] = router.put(dict(D1, url=loading.url))

    loading = servers(FakeWorker, health=[503, 200], on_health=router_job)
    wanted = [P0, D0, dict(D1, url=loading.url)]
    client = HttpClient(timeout=5)
    result = ws.reconcile(ra.RouterAdmin(client, router.url, interval=0.01), wanted, client, timeout=5)
    assert not result['changed'] and result['registered'] == [] and result['plan'] == []
    assert router.posts() == [] and router.deletes() == []


def test_a_worker_that_never_answers_health_is_not_registered_and_the_error_says_so(servers):
    router = servers(FakeRouter, (P0, D0))
    loading = servers(FakeWorker, health=[503])
    client = HttpClient(timeout=5)
    with pytest.raises(ra.RouterError) as exc:
        ws.reconcile(ra.RouterAdmin(client, router.url, interval=0.01), [P0, D0, dict(D1, url=loading.url)], client,
                     timeout=0.3)
    assert '%s does not answer /health with 200' % loading.url in str(exc.value) and '503' in str(exc.value)
    assert router.posts() == []


class _StartingRouterClient(object):
    """An HttpClient stand-in for a router that is not listening yet for the first ``refusals`` requests."""

    def __init__(self, refusals, listing):
        self.refusals = refusals
        self.listing = listing
        self.asked = 0

    def get(self, url, timeout=None, control_plane=False):
        self.asked += 1
        if self.asked <= self.refusals:
            return HttpResult('GET', url, None, error='connection refused')
        return HttpResult('GET', url, 200, {}, json.dumps(self.listing).encode())


def test_the_reconcile_waits_for_a_router_that_is_still_starting():
    client = _StartingRouterClient(3, {'workers': [dict(P0, id='p', is_healthy=True), dict(D0, id='d', is_healthy=True)]})
    admin = ra.RouterAdmin(client, 'http://127.0.0.1:1', interval=0.0)
    result = ws.reconcile(admin, [P0, D0], client, timeout=5)
    assert not result['changed'] and client.asked == 4


def test_a_router_that_never_answers_fails_naming_its_unit():
    ticks = iter(range(1000))
    client = _StartingRouterClient(10 ** 6, {})
    admin = ra.RouterAdmin(client, 'http://127.0.0.1:1', interval=0.0, clock=lambda: next(ticks), sleep=lambda s: None)
    with pytest.raises(ra.RouterUnreachable) as exc:
        ws.reconcile(admin, [P0, D0], client, timeout=5)
    assert 'connection refused' in str(exc.value) and 'is its unit running' in str(exc.value)


def test_check_mode_on_a_router_that_is_not_started_yet_plans_nothing():
    client = _StartingRouterClient(10 ** 6, {})
    result = ws.reconcile(ra.RouterAdmin(client, 'http://127.0.0.1:1'), [P0, D0], client, check_mode=True)
    assert not result['changed'] and result['plan'] == [] and 'reads the worker set file when it starts' in result['msg']
    assert client.asked == 1


def test_check_mode_only_reads(servers):
    router = servers(FakeRouter, (P0, {'url': 'http://127.0.0.1:9', 'worker_type': 'decode'}))
    client = HttpClient(timeout=5)
    result = ws.reconcile(ra.RouterAdmin(client, router.url, interval=0.01), [P0, D0], client, check_mode=True)
    assert result['changed']
    assert result['plan'] == ['register decode %s' % D0['url'], 'deregister decode http://127.0.0.1:9']
    assert router.posts() == [] and router.deletes() == []


def test_a_removed_worker_that_is_gone_has_nothing_to_drain(servers):
    gone = servers(FakeWorker)
    url = gone.url
    gone.stop()
    router = servers(FakeRouter, (P0, D0, {'url': url, 'worker_type': 'decode'}))
    client = HttpClient(timeout=2)
    result = ws.reconcile(ra.RouterAdmin(client, router.url, interval=0.01), [P0, D0], client, timeout=5)
    assert result['drained'][0]['idle'] and 'not reachable' in result['drained'][0]['msg']


def test_the_restart_plan_says_workers_changed_without_a_restart():
    entries = [{'unit': 'sglang-router.service', 'reasons': ['unit --policy'], 'planned': True},
               {'unit': 'sglang-router.service', 'action': 'workers', 'reasons': ['register decode http://h:1'],
                'planned': True}]
    merged = merge(entries)
    assert len(merged) == 2
    assert plan_line('r1', merged[0]) == 'sglang-router.service on r1: would restart (unit --policy)'
    assert plan_line('r1', merged[1]) == ('sglang-router.service on r1: would register/deregister workers, no restart '
                                          '(register decode http://h:1)')
    assert 'workers registered/deregistered, no restart' in plan_line('r1', dict(merged[1], planned=False))
