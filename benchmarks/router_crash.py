#!/usr/bin/env python
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A crashed worker under load, behind the real router, with different router settings.

Two emulated prefill and two decode servers (tests/emulator, 0.05 s per token: a thinking answer
takes about 1.3 s) behind the real sglang-router 0.3.2, all on 127.0.0.1, and a bounded load of
streaming and non-streaming chat requests (tests/load/pd_load.py, 8 clients). At 5 s one decode
server gets SIGKILL and starts again --restart-sec later, as systemd's Restart=on-failure with
RestartSec=10 does; at 25 s the same happens to one prefill server. Printed per router setting:
requests and failures by class, the failed requests' start window, when the router marked each
worker down and up, and the latency of the successful ones, as tests/load/crash_report.py judges
a crash test (the multihost scenario's). A benchmark: it prints, it asserts nothing. The settings
compared:

  role-0.1   the sglang_router role's settings before issue 12 (health checks every 60 s, the
             router's defaults otherwise: 5 retries, circuit breaker on, thresholds 3/2)
  role       the role's defaults now, read from roles/sglang_router/defaults/main.yml

    .venv/bin/python benchmarks/router_crash.py [--settings role-0.1 role] [--duration 45]
"""

import argparse
import asyncio
import os
import signal
import sys
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'tests', 'integration'))
sys.path.insert(0, os.path.join(REPO, 'tests', 'load'))

import crash_report  # noqa: E402  pylint: disable=wrong-import-position
import pd_load  # noqa: E402  pylint: disable=wrong-import-position
import stack  # noqa: E402  pylint: disable=wrong-import-position

EMULATOR_ENV = {'SGLANG_EMULATOR_TOKEN_DELAY': '0.05'}


def role_router_flags():
    """The health, retry and circuit-breaker flags the sglang_router role renders by default."""
    with open(os.path.join(REPO, 'roles', 'sglang_router', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        d = yaml.safe_load(handle)
    flags = []
    for var, flag in (('sglang_router_health_check_interval_secs', '--health-check-interval-secs'),
                      ('sglang_router_health_failure_threshold', '--health-failure-threshold'),
                      ('sglang_router_health_success_threshold', '--health-success-threshold'),
                      ('sglang_router_retry_max_retries', '--retry-max-retries'),
                      ('sglang_router_retry_initial_backoff_ms', '--retry-initial-backoff-ms'),
                      ('sglang_router_retry_max_backoff_ms', '--retry-max-backoff-ms'),
                      ('sglang_router_shutdown_grace_period_secs', '--shutdown-grace-period-secs')):
        if d.get(var) is not None:  # null: the router's own default
            flags += [flag, str(d[var])]
    if d.get('sglang_router_disable_circuit_breaker'):
        flags.append('--disable-circuit-breaker')
    return flags


SETTINGS = {
    'role-0.1': lambda: ['--health-check-interval-secs', '60'],
    'role': role_router_flags,
}


def restart_later(name, old, delay, log):
    """SIGKILL ``old`` now; after ``delay`` s start the same server again (systemd's restart)."""
    log.append({'url': old.url, 't': time.time()})
    os.killpg(old.proc.pid, signal.SIGKILL)
    time.sleep(delay)
    new = stack.Emulator(old.mode, port=old.port, bootstrap_port=old.bootstrap_port, env=EMULATOR_ENV)
    new.start()
    log[-1]['restarted'] = time.time()
    return new


async def scenario(router, servers, duration, restart_sec, log):
    config = pd_load.LoadConfig(url=router.url, model=stack.MODEL, duration=duration, concurrency=8,
                                timeout=120, watch_workers=True, watch_interval=0.1)
    load = asyncio.create_task(pd_load.run_load(config))
    await asyncio.sleep(5)
    servers['decode-0'] = await asyncio.to_thread(restart_later, 'decode-0', servers['decode-0'], restart_sec, log)
    await asyncio.sleep(max(0.0, 25 - 5 - restart_sec))
    servers['prefill-0'] = await asyncio.to_thread(restart_later, 'prefill-0', servers['prefill-0'], restart_sec, log)
    return await load


def one_setting(name, flags, duration, restart_sec):
    servers = {'prefill-0': stack.Emulator('prefill', env=EMULATOR_ENV),
               'prefill-1': stack.Emulator('prefill', env=EMULATOR_ENV),
               'decode-0': stack.Emulator('decode', env=EMULATOR_ENV),
               'decode-1': stack.Emulator('decode', env=EMULATOR_ENV)}
    router = stack.Router(prefill=[(s.url, s.bootstrap_port) for k, s in sorted(servers.items()) if k.startswith('p')],
                          decode=[s.url for k, s in sorted(servers.items()) if k.startswith('d')],
                          args=flags)
    log = []
    try:
        for server in servers.values():
            server.start()
        router.start()
        router.wait_healthy(60)
        result = asyncio.run(scenario(router, servers, duration, restart_sec, log))
    finally:
        router.stop()
        for server in servers.values():
            server.stop()
    print('== %s: %s' % (name, ' '.join(flags)))
    kills = [{'url': k['url'], 't': k['t']} for k in log]
    out = crash_report.verdict(result, kills, {k['url']: k['restarted'] for k in log})
    for line in out['lines']:
        print('  ' + line)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--settings', nargs='+', default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument('--duration', type=float, default=45.0)
    parser.add_argument('--restart-sec', type=float, default=10.0, help="systemd's RestartSec of the server units")
    args = parser.parse_args()
    for name in args.settings:
        one_setting(name, SETTINGS[name](), args.duration, args.restart_sec)


if __name__ == '__main__':
    main()
