# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""What a GPU host runs and keeps: the venv and version of each instance, the versioned venvs, free disk.

An upgrade installs the new SGLang into a venv of its own beside the current one and moves the instances to it
one at a time, so the old one stays whole for a rollback. Under the venv root (``/opt/sglang/venvs``) two links
record what the host runs and what it ran before: ``current`` and ``previous``. Each instance's env file says
what it runs itself (its ``PDSERVE_*`` fingerprint lines). The decisions are pure functions of what was read, so
they are unit-tested without a host.

Only venvs the collection created are ever pruned: the upgrade's install step records each venv it is about to
create in ``<venv root>/.pdserve-venvs.json`` (``record_created``); a venv made by hand, or one that existed before,
is never recorded and never removed. Paths are compared resolved (realpath), so a venv root reached through a
symlink keeps its ``current`` and ``previous`` venvs.
"""

import glob
import json
import os
import re
import tempfile
from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.caches import caches_of_venvs
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.restart_plan import fingerprint

LINKS = ('current', 'previous')
# The names (under the venv root) of the venvs the collection created: the only ones pruning may remove.
RECORD = '.pdserve-venvs.json'
_VERSION = re.compile(r'^Version:\s*(\S+)', re.M)


def installed_version(venv: str, package: str = 'sglang') -> Optional[str]:
    """The version of ``package`` installed in ``venv`` (from its dist-info), or None."""
    name = package.replace('-', '_')
    for pattern in ('%s/lib/python*/site-packages/%s-*.dist-info/METADATA', '%s/lib64/python*/site-packages/%s-*.dist-info/METADATA'):
        for path in sorted(glob.glob(pattern % (venv, name))):
            try:
                with open(path) as handle:
                    match = _VERSION.search(handle.read(4096))
            except (IOError, OSError):
                continue
            if match:
                return match.group(1)
    return None


def read_text(path: str) -> Optional[str]:
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def free_gb(path: str) -> float:
    """Free GiB on the filesystem that holds ``path`` (or its nearest existing parent)."""
    probe = path
    while probe and not os.path.exists(probe):
        parent = os.path.dirname(probe.rstrip('/'))
        if parent == probe:
            break
        probe = parent
    stat = os.statvfs(probe or '/')
    return round(stat.f_bavail * stat.f_frsize / float(1 << 30), 2)


def link_target(path: str) -> Optional[str]:
    return os.path.realpath(path) if os.path.islink(path) else None


def _is_venv(path):
    return os.path.isfile(os.path.join(path, 'bin', 'python'))


def read_record(root: str) -> List[str]:
    """The venv names the collection recorded creating under ``root`` ([] without a readable record)."""
    try:
        with open(os.path.join(root.rstrip('/'), RECORD)) as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError):
        return []
    names = data.get('created') if isinstance(data, dict) else None
    return sorted(set(n for n in names or [] if isinstance(n, str) and n and '/' not in n))


def record_created(root: str, venv: str, check_mode: bool = False) -> Dict[str, Any]:
    """Record ``venv`` as created by the collection, before it is created: ``{changed, recorded, reason, record}``.

    Only a venv directly under ``root`` that does not exist yet (or is an empty directory) is recorded; one that
    already holds files was not made by this run, so it is never recorded and never pruned.
    """
    root = root.rstrip('/')
    venv = venv.rstrip('/')
    out: Dict[str, Any] = {'changed': False, 'recorded': False, 'record': os.path.join(root, RECORD)}
    if os.path.realpath(os.path.dirname(venv)) != os.path.realpath(root):
        out['reason'] = '%s is not directly under %s: it is never pruned' % (venv, root)
        return out
    names = read_record(root)
    name = os.path.basename(venv)
    if name in names:
        out.update(recorded=True, reason='%s is recorded already' % venv)
        return out
    if os.path.lexists(venv) and not (os.path.isdir(venv) and not os.path.islink(venv) and not os.listdir(venv)):
        out['reason'] = '%s exists already and was not created by this run: it is kept, never pruned' % venv
        return out
    out.update(changed=True, recorded=True, reason='%s recorded as created by the collection' % venv)
    if not check_mode:
        if not os.path.isdir(root):
            os.makedirs(root, 0o755)
        fd, tmp = tempfile.mkstemp(dir=root, prefix='.pdserve-')
        with os.fdopen(fd, 'w') as handle:
            json.dump({'created': sorted(names + [name])}, handle, indent=2, sort_keys=True)
            handle.write('\n')
        os.chmod(tmp, 0o644)
        os.rename(tmp, out['record'])
    return out


def observe(instances: Iterable[Dict[str, Any]], venv_root: str, unit_dir: str = '/etc/systemd/system',
            package: str = 'sglang', target: Optional[str] = None) -> Dict[str, Any]:
    """Everything the decisions need, read from the host."""
    root = venv_root.rstrip('/')
    seen = {}
    for inst in instances:
        text = read_text(inst['env_file'])
        seen[inst['name']] = {'env_file': inst['env_file'], 'exists': text is not None,
                              'fingerprint': fingerprint(text) if text is not None else {}}
    recorded = read_record(root)
    venvs: List[Dict[str, Any]] = []
    if os.path.isdir(root):
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name)
            if name in LINKS or os.path.islink(path) or not _is_venv(path):
                continue
            venvs.append({'path': path, 'version': installed_version(path, package), 'recorded': name in recorded})
    referenced = set()
    units = [read_text(unit) or '' for unit in sorted(glob.glob(os.path.join(unit_dir, 'sglang-*.service')))]
    for venv in venvs:
        # A unit names the venv as configured, or resolved: either keeps it.
        if any(p + '/' in text for text in units for p in (venv['path'], os.path.realpath(venv['path']))):
            referenced.add(venv['path'])
    links = dict((name, link_target(os.path.join(root, name))) for name in LINKS)
    # The version in each venv that matters (a venv outside the root, like a first /opt/sglang/venv, too).
    versions = {}
    for path in set([v['path'] for v in venvs] + [p for p in links.values() if p]
                    + [i['fingerprint'].get('venv') for i in seen.values() if i['fingerprint'].get('venv')]):
        versions[path] = installed_version(path, package)
    out: Dict[str, Any] = {'instances': seen, 'venvs': venvs, 'referenced': sorted(referenced), 'links': links,
                           'free_gb': free_gb(root), 'root': root, 'versions': versions, 'recorded': recorded}
    if target:
        # A link (rollback.yml names <root>/previous) counts as the venv it points to.
        given = target.rstrip('/')
        path = os.path.realpath(target) if os.path.islink(given) else given
        out['target'] = {'path': path, 'exists': _is_venv(path), 'version': installed_version(path, package)}
        out['target_link'] = given if os.path.islink(given) else None
    # Every path the decisions compare, resolved: a root reached through a symlink names each venv two ways.
    out['real'] = dict((p, os.path.realpath(p)) for p in set(
        list(versions) + [v['path'] for v in venvs] + ([out['target']['path']] if target else [])))
    return out


def judge(host: str, seen: Dict[str, Any], target: Optional[str] = None, min_free_gb: float = 0.0,
          variable: str = 'sglang_operations_upgrade', must_exist: bool = False) -> Dict[str, Any]:
    """Decisions and problems from ``observe``'s result (pure).

    ``current``: the ``current`` link, else the venv every instance runs. ``prunable``: venvs under the root the
    collection recorded creating that are neither current, previous, the target, run by an instance, nor named by a
    unit file. ``must_exist``: the target must be a venv already (a rollback returns to one, it never builds one).
    """
    problems = []
    real = seen.get('real') or {}

    def resolved(path):
        return real.get(path, path) if path else None

    venvs_in_use = sorted(set(i['fingerprint'].get('venv') for i in seen['instances'].values()
                              if i['fingerprint'].get('venv')))
    for name, inst in sorted(seen['instances'].items()):
        if not inst['exists']:
            problems.append(problem(host, 'sglang_*_instances[%s]' % name, '%s does not exist: the instance is not '
                                    'deployed' % inst['env_file'], 'run site.yml first'))
        elif not inst['fingerprint'].get('venv'):
            problems.append(problem(host, 'sglang_*_instances[%s]' % name, '%s has no PDSERVE_VENV line: it was '
                                    'written before units carried a fingerprint' % inst['env_file'],
                                    'run site.yml first (it rewrites the env files; the instances restart)'))
    # An interrupted upgrade (or rollback) leaves some instances on its target: running it again finishes it.
    target_path = (seen.get('target') or {}).get('path') or (target.rstrip('/') if target else None)
    others = [v for v in venvs_in_use if resolved(v) != resolved(target_path)]
    current = seen['links'].get('current') or (others[0] if len(others) == 1 else None)
    if len(others) > 1:
        problems.append(problem(host, variable, 'the instances run from different venvs: %s' % ', '.join(venvs_in_use),
                                'run site.yml to put every instance on the inventory\'s venv (each restarts), then '
                                'upgrade again'))
    decided = {'current': current, 'previous': seen['links'].get('previous'), 'venvs_in_use': venvs_in_use,
               'current_version': seen.get('versions', {}).get(current),
               'previous_version': seen.get('versions', {}).get(seen['links'].get('previous'))}
    if target:
        info = seen.get('target') or {'path': target_path, 'exists': False}
        if not info['exists'] and must_exist:
            link = seen.get('target_link')
            if link:
                message = ('%s points to %s, which is gone (no %s/bin/python): there is no venv to return to'
                           % (link, info['path'], info['path']))
            else:
                message = '%s does not exist: there is no venv to return to' % (target.rstrip('/'))
            problems.append(problem(host, 'sglang_venv_root', message,
                                    'restore %s, or move to the version you want with upgrade.yml (a rollback never '
                                    'builds a venv); no worker was touched' % info['path']))
        if not info['exists'] and min_free_gb and seen['free_gb'] < float(min_free_gb):
            problems.append(problem(host, '%s_min_free_gb' % variable,
                                    '%.1f GiB free under %s, %.1f GiB wanted for the new venv %s (a full SGLang venv '
                                    'is about 11 GB)' % (seen['free_gb'], seen['root'], float(min_free_gb), info['path']),
                                    'free disk space (old venvs no unit uses: %s) or lower %s_min_free_gb'
                                    % (', '.join(v['path'] for v in seen['venvs'] if v['path'] not in seen['referenced'])
                                       or 'none', variable)))
        decided['target'] = info
    keep = set(resolved(p) for p in [current, decided['previous'], target_path] + venvs_in_use if p)
    decided['prunable'] = [v['path'] for v in seen['venvs']
                           if v.get('recorded') and resolved(v['path']) not in keep and v['path'] not in seen['referenced']]
    decided['problems'] = problems
    return decided


def venv_name(version: Any, source: str = 'pypi', git_version: Optional[str] = None) -> str:
    """The directory name of a versioned venv: ``sglang-0.5.24`` or ``sglang-git-<ref>``."""
    if source == 'git':
        ref = re.sub(r'[^A-Za-z0-9_.+-]+', '-', str(git_version or 'head')).strip('-')
        return 'sglang-git-%s' % ref
    return 'sglang-%s' % re.sub(r'[^A-Za-z0-9_.+-]+', '-', str(version)).strip('-')


def release_label(source: str, version: Any, git_version: Optional[str] = None) -> str:
    """What a unit's fingerprint says it runs: the version, ``git <ref>``, or ``""`` when SGLang is managed elsewhere."""
    if source == 'git':
        return 'git %s' % git_version
    if source == 'none':
        return ''
    return str(version)


def instance_env_files(names: Optional[Iterable[str]], config_dir: str) -> List[Dict[str, str]]:
    """``[{name, env_file}]`` for venv_state's instances (the roles write ``<config_dir>/<name>.env``)."""
    return [{'name': name, 'env_file': '%s/%s.env' % (str(config_dir).rstrip('/'), name)} for name in names or []]


def switch_sources(instances: Optional[Dict[str, Any]]) -> Dict[str, Dict[str, str]]:
    """``{name: {venv, version}}``: where each instance runs now, from venv_state's ``instances`` (its fingerprint),
    the place a failed switch returns it to."""
    out = {}
    for name, info in (instances or {}).items():
        fp = (info or {}).get('fingerprint') or {}
        out[name] = {'venv': fp.get('venv') or '', 'version': fp.get('sglang') or ''}
    return out


def prunable_caches(cache_root: Optional[str], prunable: Optional[List[str]]) -> List[str]:
    """The compile cache trees under ``cache_root`` of the venvs that go (serving/caches.py names them by venv)."""
    if not cache_root or not prunable or not os.path.isdir(cache_root):
        return []
    return caches_of_venvs(cache_root.rstrip('/'), os.listdir(cache_root), prunable)
