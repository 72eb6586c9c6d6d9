# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The router serves the inventory's worker set: registered, deregistered and drained at run time, against a fake
router that answers like sglang-router 0.3.2 and a fake worker's /metrics (both on loopback)."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import router_admin as ra
from ansible_collections.pdserve.sglang.plugins.module_utils.operations import worker_set as ws
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.restart_plan import merge, plan_line

from fake_pd import FakeRouter, FakeWorker  # noqa: E402  pylint: disable=wrong-import-position
from serving_support import D0, P0, P1  # noqa: E402  pylint: disable=wrong-import-position


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
    router = servers(FakeRouter, (P0, D0, removed))
    client = HttpClient(timeout=5)
    result = ws.reconcile(ra.RouterAdmin(client, router.url, interval=0.01), [P0, P1, D0], client, timeout=5,
                          drain_timeout=10)
    assert result['changed']
    assert [w['url'] for w in result['registered']] == [P1['url']]
    assert [w['url'] for w in result['deregistered']] == [worker.url]
    assert result['drained'][0]['idle'] and result['drained'][0]['url'] == worker.url
    assert worker.scrapes >= 3  # busy, then idle twice in a row
    methods = [c[0] for c in router.calls if c[0] in ('POST', 'DELETE')]
    assert methods == ['POST', 'DELETE']
    assert sorted(w['url'] for w in router.workers.values()) == sorted([P0['url'], P1['url'], D0['url']])


def test_reconcile_finds_a_worker_a_killed_day2_run_left_outside_and_leaves_a_matching_router_alone(servers):
    router = servers(FakeRouter, (P0,))
    client = HttpClient(timeout=5)
    admin = ra.RouterAdmin(client, router.url, interval=0.01)
    first = ws.reconcile(admin, [P0, D0], client, timeout=5)
    assert [w['url'] for w in first['registered']] == [D0['url']] and first['deregistered'] == []
    assert router.posts()[0]['worker_type'] == 'decode'
    again = ws.reconcile(admin, [P0, D0], client, timeout=5)
    assert not again['changed'] and again['plan'] == []
    assert len(router.posts()) == 1 and router.deletes() == []


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
