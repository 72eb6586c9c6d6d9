# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""router_worker, router_workers, worker_idle, server_restart and venv_state through main(), against fakes."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.operations.server_lifecycle import RestartError
from ansible_collections.pdserve.sglang.plugins.modules import (
    router_worker,
    router_workers,
    server_restart,
    venv_state,
    worker_idle,
)

from fake_pd import FakeRouter, FakeWorker  # noqa: E402  pylint: disable=wrong-import-position
from serving_support import D0, D1, P0  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def fakes():
    made = []

    def make(kind, *args, **kwargs):
        fake = kind(*args, **kwargs)
        made.append(fake)
        return fake
    yield make
    for fake in made:
        fake.stop()


def test_router_worker_out_and_back(module_runner, fakes):
    router = fakes(FakeRouter, (P0, D0, D1), api_key='k')
    args = {'url': router.url, 'api_key': 'k', 'worker_url': D0['url'], 'worker_type': 'decode', 'interval': 0.01}
    result, failed = module_runner(router_worker.main, dict(args, state='absent'))
    assert not failed and result['changed'] and result['worker']['url'] == D0['url']
    result, failed = module_runner(router_worker.main, dict(args, state='present'))
    assert not failed and result['changed'] and result['worker']['is_healthy']
    assert router.posts()[-1] == {'url': D0['url'], 'worker_type': 'decode', 'api_key': 'k'}
    result, failed = module_runner(router_worker.main, dict(args, state='present'))
    assert not failed and not result['changed']


def test_router_worker_refuses_the_last_one_even_in_check_mode(module_runner, fakes):
    router = fakes(FakeRouter, (P0, D0))
    args = {'url': router.url, 'worker_url': D0['url'], 'worker_type': 'decode', 'state': 'absent'}
    result, failed = module_runner(router_worker.main, args, check_mode=True)
    assert failed and 'only decode worker' in result['msg']
    assert router.deletes() == []


def test_router_worker_needs_the_port_of_a_prefill(module_runner):
    result, failed = module_runner(router_worker.main, {'url': 'http://r:1', 'worker_url': P0['url'],
                                                        'worker_type': 'prefill'})
    assert failed and 'bootstrap_port is required' in result['msg']


def test_router_workers_scale_out_then_in_and_says_so_for_the_restart_plan(module_runner, fakes):
    old, new = fakes(FakeWorker), fakes(FakeWorker)
    router = fakes(FakeRouter, (P0, {'url': old.url, 'worker_type': 'decode'}), api_key='k', control_plane_api_key='admin')
    args = {'url': router.url, 'api_key': 'k', 'control_plane_api_key': 'admin', 'drain_timeout': 5,
            'workers': {'prefill': [{'url': P0['url'], 'bootstrap_port': 8998, 'name': 'prefill-0'}],
                        'decode': [{'url': old.url}, {'url': new.url}]}}
    result, failed = module_runner(router_workers.main, args, check_mode=True)
    assert not failed and result['changed'] and result['plan'] == ['register decode %s' % new.url]
    assert result['restarts'] == [{'unit': 'sglang-router.service', 'action': 'workers',
                                   'reasons': ['register decode %s' % new.url], 'planned': True}]
    assert router.posts() == []
    result, failed = module_runner(router_workers.main, args)
    assert not failed and result['changed'] and [w['url'] for w in result['registered']] == [new.url]
    assert router.posts() == [{'url': new.url, 'worker_type': 'decode', 'api_key': 'k'}]
    assert result['restarts'][0]['planned'] is False
    # Scale in: the old decode leaves the set (marked in_service: false), is deregistered and drained.
    args['workers']['decode'] = [{'url': new.url}]
    result, failed = module_runner(router_workers.main, args)
    assert not failed and [w['url'] for w in result['deregistered']] == [old.url]
    assert result['drained'][0]['idle'] and old.scrapes >= 2
    assert result['restarts'][0]['reasons'] == ['deregister decode %s' % old.url]
    result, failed = module_runner(router_workers.main, args)
    assert not failed and not result['changed'] and 'restarts' not in result


def test_router_workers_refuses_a_set_without_a_worker_of_each_type(module_runner):
    result, failed = module_runner(router_workers.main, {'url': 'http://r:1', 'workers': {
        'prefill': [{'url': P0['url'], 'bootstrap_port': 8998}], 'decode': []}})
    assert failed and 'workers.decode must list at least one worker' in result['msg']


def test_worker_idle_waits_and_reports(module_runner, fakes):
    worker = fakes(FakeWorker, [{'sglang:num_running_reqs': 2}, {'sglang:num_running_reqs': 0}], requests_total=7)
    result, failed = module_runner(worker_idle.main, {'url': worker.url, 'interval': 0.01})
    assert not failed and result['idle'] and result['in_flight_at_start'] == 2 and result['requests_total'] == 8
    assert result['changed'] is False


def test_worker_idle_timeout_fails_or_reports(module_runner, fakes):
    worker = fakes(FakeWorker, [{'sglang:num_running_reqs': 1, 'sglang:num_queue_reqs': 2}])
    args = {'url': worker.url, 'interval': 0.01, 'timeout': 0.05}
    result, failed = module_runner(worker_idle.main, args)
    assert failed and 'still holds 3 request(s)' in result['msg'] and 'sglang:num_queue_reqs=2' in result['msg']
    result, failed = module_runner(worker_idle.main, dict(args, on_timeout='report'))
    assert not failed and result['idle'] is False and result['in_flight'] == 3


class Restarter(object):
    def __init__(self, error=None):
        self.error = error
        self.restarted = []

    def previous_load(self, unit):
        return 12.5

    def restart(self, unit, url, timeout, interval, generate, daemon_reload):
        if self.error:
            raise RestartError('x did not come back', {'journal': ['boom']})
        self.restarted.append((unit, url, daemon_reload))
        return {'restart_to_ready': 3.25, 'restart_seconds': 0.5, 'unit_state': {}, 'last_status': 'ok'}


@pytest.fixture
def restart_runner(module_runner, monkeypatch):
    def run(args, restarter, check_mode=False):
        monkeypatch.setattr(server_restart, 'make_restarter', lambda module: restarter)
        return module_runner(server_restart.main, args, check_mode)
    return run


def test_server_restart_times_the_restart_and_plans_it(restart_runner):
    fake = Restarter()
    args = {'unit': 'sglang-decode-0.service', 'url': 'http://127.0.0.1:30002', 'reason': 'rolling restart'}
    result, failed = restart_runner(args, fake, check_mode=True)
    assert not failed and fake.restarted == [] and result['previous_load_seconds'] == 12.5
    assert result['restarts'] == [{'unit': 'sglang-decode-0.service', 'reasons': ['rolling restart'], 'planned': True}]
    result, failed = restart_runner(dict(args, daemon_reload=True), fake)
    assert not failed and result['restart_to_ready'] == 3.25
    assert fake.restarted == [('sglang-decode-0.service', 'http://127.0.0.1:30002', True)]
    assert result['restarts'][0]['planned'] is False
    result, failed = restart_runner(args, Restarter(error=True))
    assert failed and result['journal'] == ['boom'] and result['restarts'][0]['unit'] == 'sglang-decode-0.service'


def test_venv_state_lists_problems(module_runner, tmp_path):
    root = tmp_path / 'venvs'
    root.mkdir()
    env = tmp_path / 'decode-0.env'
    env.write_text('CUDA_VISIBLE_DEVICES="0"\n')
    args = {'host': 'gpu-1', 'instances': [{'name': 'decode-0', 'env_file': str(env)}], 'venv_root': str(root),
            'unit_dir': str(tmp_path)}
    result, failed = module_runner(venv_state.main, args)
    assert failed and 'host gpu-1: sglang_*_instances[decode-0]' in result['msg'] and 'no PDSERVE_VENV' in result['msg']
    env.write_text('PDSERVE_VENV="/opt/sglang/venv"\n')
    result, failed = module_runner(venv_state.main, dict(args, target=str(root / 'sglang-9'), min_free_gb=0.001))
    assert not failed and result['current'] == '/opt/sglang/venv' and result['target']['exists'] is False


def test_venv_state_records_a_created_venv_and_refuses_a_gone_previous(module_runner, tmp_path):
    root = tmp_path / 'venvs'
    new = str(root / 'sglang-9')
    result, failed = module_runner(venv_state.main, {'venv_root': str(root), 'unit_dir': str(tmp_path), 'record_created': new}, check_mode=True)
    assert not failed and result['changed'] and not root.exists()
    result, failed = module_runner(venv_state.main, {'venv_root': str(root), 'unit_dir': str(tmp_path), 'record_created': new})
    assert not failed and result['changed'] and result['recorded'] and (root / '.pdserve-venvs.json').is_file()
    env = tmp_path / 'decode-0.env'
    env.write_text('PDSERVE_VENV="/opt/sglang/venv"\n')
    (root / 'previous').symlink_to(new)
    args = {'host': 'gpu-1', 'instances': [{'name': 'decode-0', 'env_file': str(env)}], 'venv_root': str(root),
            'unit_dir': str(tmp_path), 'target': str(root / 'previous'), 'must_exist': True}
    result, failed = module_runner(venv_state.main, args)
    assert failed and 'host gpu-1: sglang_venv_root: %s points to %s, which is gone' % (root / 'previous', new) in result['msg']
    assert result['recorded'] == ['sglang-9']
