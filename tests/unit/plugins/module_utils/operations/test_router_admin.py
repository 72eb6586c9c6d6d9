# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Taking workers out of a PD router and back, against a fake router that answers like sglang-router 0.3.2."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.operations import router_admin as ra
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient

from fake_pd import FakeRouter  # noqa: E402  pylint: disable=wrong-import-position
from serving_support import D0, D1, P0, P1  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def router():
    made = []

    def make(*workers, **kwargs):
        fake = FakeRouter(workers or (P0, P1, D0, D1), **kwargs)
        made.append(fake)
        return fake
    yield make
    for fake in made:
        fake.stop()


def admin(fake, key=None):
    return ra.RouterAdmin(HttpClient(api_key=key, timeout=5), fake.url, interval=0.01)


def test_urls_compare_without_trailing_slash_and_case():
    listing = {'workers': [dict(D0, id='a')]}
    assert ra.find_worker(listing, 'HTTP://10.0.0.21:30002/')['id'] == 'a'
    assert ra.find_worker(listing, 'http://10.0.0.21:30012') is None
    assert ra.find_worker(None, 'http://x') is None


def test_removal_keeps_a_healthy_worker_of_the_type():
    two = {'workers': [dict(D0, is_healthy=True), dict(D1, is_healthy=True), dict(P0, is_healthy=True)]}
    assert ra.removal_problem(two, D0['url'], 'decode') is None
    sick = {'workers': [dict(D0, is_healthy=True), dict(D1, is_healthy=False)]}
    assert 'last healthy decode' in ra.removal_problem(sick, D0['url'], 'decode')
    assert D1['url'] in ra.removal_problem(sick, D0['url'], 'decode')
    alone = {'workers': [dict(P0, is_healthy=True), dict(D0, is_healthy=True)]}
    assert 'only prefill worker' in ra.removal_problem(alone, P0['url'], 'prefill')


def test_add_payload_always_has_the_type_and_a_prefill_its_port():
    assert ra.add_payload(D0['url'], 'decode') == {'url': D0['url'], 'worker_type': 'decode'}
    assert ra.add_payload(P0['url'], 'prefill', 8998, 'k') == {'url': P0['url'], 'worker_type': 'prefill',
                                                               'bootstrap_port': 8998, 'api_key': 'k'}
    with pytest.raises(ValueError, match='bootstrap_port'):
        ra.add_payload(P0['url'], 'prefill')
    with pytest.raises(ValueError):
        ra.add_payload(D0['url'], 'regular')


def test_mismatch_names_what_differs():
    assert ra.mismatch(dict(P0), 'prefill', 8998) is None
    assert 'bootstrap port 8998, not 9000' in ra.mismatch(dict(P0), 'prefill', 9000)
    assert 'registered as regular' in ra.mismatch({'worker_type': 'regular'}, 'decode')


def test_remove_looks_the_id_up_by_url_and_waits_until_gone(router):
    fake = router()
    d0_id = [w['id'] for w in fake.workers.values() if w['url'] == D0['url']][0]
    result = admin(fake).remove(D0['url'], 'decode')
    assert result['changed'] and result['worker']['id'] == d0_id
    assert fake.deletes() == ['/workers/%s' % d0_id]
    assert all(w['url'] != D0['url'] for w in fake.workers.values())
    # Already out: nothing to do.
    assert admin(fake).remove(D0['url'], 'decode')['changed'] is False
    assert len(fake.deletes()) == 1


def test_remove_refuses_the_last_healthy_worker_of_its_type(router):
    fake = router(P0, D0, dict(D1, is_healthy=False))
    with pytest.raises(ra.RouterError, match='last healthy decode'):
        admin(fake).remove(D0['url'], 'decode')
    assert fake.deletes() == []
    assert admin(fake).remove(D0['url'], 'decode', allow_last=True)['changed']


def test_remove_in_check_mode_deletes_nothing(router):
    fake = router()
    result = admin(fake).remove(P1['url'], 'prefill', check_mode=True)
    assert result['changed'] and 'would remove' in result['msg']
    assert fake.deletes() == []


def test_add_sends_type_port_and_key_and_waits_until_healthy(router):
    fake = router(P1, D0, D1, api_key='secret', register_after=2, healthy_after=2)
    result = admin(fake, 'secret').add(P0['url'], 'prefill', 8998, api_key='secret', timeout=5)
    assert result['changed'] and result['worker']['is_healthy'] and result['worker']['bootstrap_port'] == 8998
    assert fake.posts() == [{'url': P0['url'], 'worker_type': 'prefill', 'bootstrap_port': 8998, 'api_key': 'secret'}]
    assert all(c[3] == 'Bearer secret' for c in fake.calls)
    # Present and healthy: left alone.
    assert admin(fake, 'secret').add(P0['url'], 'prefill', 8998, api_key='secret')['changed'] is False
    assert len(fake.posts()) == 1


def test_add_replaces_a_worker_registered_with_the_wrong_type(router):
    fake = router(P0, P1, dict(D1), dict(url=D0['url'], worker_type='regular'))
    result = admin(fake).add(D0['url'], 'decode', timeout=5)
    assert result['changed'] and 'it was registered as regular' in result['msg']
    assert len(fake.deletes()) == 1 and fake.posts()[-1]['worker_type'] == 'decode'
    assert [w['worker_type'] for w in fake.workers.values() if w['url'] == D0['url']] == ['decode']


def test_add_times_out_naming_what_the_router_shows(router):
    fake = router(P0, P1, D1, drop_posts=True)
    with pytest.raises(ra.RouterError, match='not back in the router.*not listed'):
        admin(fake).add(D0['url'], 'decode', timeout=0.2)
    fake2 = router(P0, P1, D1, healthy_after=10 ** 6)
    with pytest.raises(ra.RouterError, match='listed, not healthy yet'):
        admin(fake2).add(D0['url'], 'decode', timeout=0.2)


def test_a_missing_or_wrong_key_is_said_at_once(router):
    fake = router(api_key='secret')
    with pytest.raises(ra.RouterError, match='needs the router.s control-plane key.*sglang_router_control_plane_api_key'):
        admin(fake, 'wrong').remove(D0['url'], 'decode')
    with pytest.raises(ra.RouterError, match='control-plane key'):
        admin(fake).add(D0['url'], 'decode')


def test_the_control_plane_key_manages_workers_the_client_key_goes_to_the_worker(router):
    """As sglang-router 0.3.2 with --control-plane-api-keys: the client key gets 401 on /workers."""
    fake = router(P1, D0, D1, api_key='client', control_plane_api_key='admin')
    client_only = ra.RouterAdmin(HttpClient(api_key='client', timeout=5), fake.url, interval=0.01)
    with pytest.raises(ra.RouterError, match='control-plane key'):
        client_only.listing()
    both = ra.RouterAdmin(HttpClient(api_key='client', control_plane_api_key='admin', timeout=5), fake.url, interval=0.01)
    assert both.add(P0['url'], 'prefill', 8998, api_key='client', timeout=5)['changed'] is True
    assert fake.posts() == [{'url': P0['url'], 'worker_type': 'prefill', 'bootstrap_port': 8998, 'api_key': 'client'}]
    assert both.remove(D0['url'], 'decode', timeout=5)['changed'] is True
    assert set(c[3] for c in fake.calls if c[3] != 'Bearer client') == {'Bearer admin'}


def test_a_router_that_does_not_list_workers_is_an_error(router):
    fake = router()
    with pytest.raises(ra.RouterError, match='did not list its workers'):
        ra.RouterAdmin(HttpClient(timeout=5), fake.url + '/nope').listing()


def test_a_registration_already_in_progress_is_smgs_own_job_not_a_refusal():
    """smg 1.13 answers 409 to a POST /workers for a URL its own job is still checking; it is waited for, not failed."""
    class Answer(object):
        def __init__(self, status, text):
            self.status, self.text = status, text
    assert ra.registering(Answer(409, "{\"error\":\"Worker creation already in progress for URL 'http://d:1' with ID x\"}"))
    assert not ra.registering(Answer(409, '{"error": "conflict"}'))
    assert not ra.registering(Answer(202, 'already in progress'))
