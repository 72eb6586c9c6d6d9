# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The restart_plan callback: entries from task results (loops included), merged per host and unit."""

from ansible_collections.pdserve.sglang.plugins.callback import restart_plan as cb


def test_entries_from_plain_loop_and_failed_results():
    plain = {'restarts': [{'unit': 'a', 'reasons': ['env X'], 'planned': True}]}
    loop = {'results': [{'restarts': [{'unit': 'b', 'reasons': ['rolling restart'], 'planned': False}]},
                        {'skipped': True}, 'not a dict']}
    failed = {'failed': True, 'msg': 'b did not come back', 'restarts': [{'unit': 'b', 'reasons': ['r'], 'planned': False}]}
    assert cb.restarts_of(plain) == plain['restarts']
    assert cb.restarts_of(loop) == loop['results'][0]['restarts']
    assert cb.restarts_of(failed) == [{'unit': 'b', 'reasons': ['r', 'FAILED: b did not come back'], 'planned': False}]
    assert cb.restarts_of({'changed': True}) == []


def test_lines_per_host_then_unit():
    by_host = {'gpu-1': [{'unit': 'u1', 'reasons': ['fingerprint sglang a -> b'], 'planned': True},
                         {'unit': 'u1', 'reasons': ['fingerprint sglang a -> b'], 'planned': False}],
               'router-1': [{'unit': 'sglang-router.service', 'reasons': ['unit --policy'], 'planned': True}]}
    assert cb.plan_lines(by_host, check_mode=True) == [
        'u1 on gpu-1: restarted (fingerprint sglang a -> b)',
        'sglang-router.service on router-1: would restart (unit --policy)']
    assert cb.plan_lines({}, check_mode=True) == ['no unit would restart']
    assert cb.plan_lines({}) == ['no unit restarted']


def test_ranks_restarted_for_a_change_on_another_node_come_from_their_loop_items():
    rank = {'unit': 'sglang-prefill-0.service', 'rank': 1, 'reasons': ['instance prefill-0 over a, b: changed on a'],
            'restarts': [{'unit': 'sglang-prefill-0.service', 'action': 'restart',
                          'reasons': ['instance prefill-0 over a, b: changed on a']}]}
    restarted = {'results': [{'changed': True, 'item': rank}, {'changed': False, 'item': dict(rank, unit='other')}]}
    assert cb.restarts_of(restarted) == [dict(rank['restarts'][0], planned=False)]
    assert cb.restarts_of(restarted, check_mode=True)[0]['planned'] is True
    assert cb.plan_lines({'b': cb.restarts_of(restarted)}) == [
        'sglang-prefill-0.service on b: restarted (instance prefill-0 over a, b: changed on a)']
