# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Run one pdserve.sglang module for integration tests through the real `ansible` command (in-process runs:
tests/support/module_runner.py)."""

import json
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BIN = os.path.dirname(sys.executable)


def run_ansible(module, args):
    """`ansible localhost -m pdserve.sglang.<module> -a <json>`; returns (rc, result dict)."""
    env = dict(os.environ)
    env.update({
        'ANSIBLE_COLLECTIONS_PATH': os.path.join(REPO, '.cache', 'collections'),
        'ANSIBLE_STDOUT_CALLBACK': 'minimal',
        'ANSIBLE_CALLBACK_RESULT_FORMAT': 'json',
        'ANSIBLE_LOAD_CALLBACK_PLUGINS': '1',
        'ANSIBLE_NOCOLOR': '1',
        'ANSIBLE_HOST_KEY_CHECKING': '0',
        'ANSIBLE_LOCALHOST_WARNING': '0',
    })
    cmd = [os.path.join(BIN, 'ansible'), 'localhost', '-i', 'localhost,', '-c', 'local',
           '-e', 'ansible_python_interpreter=%s' % sys.executable,
           '-m', 'pdserve.sglang.%s' % module, '-a', json.dumps(args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False)
    out = proc.stdout
    marker = out.find('localhost | ')
    start = out.find(' => {', marker)
    assert marker >= 0 and start >= 0, 'no JSON result from ansible:\n%s\n%s' % (out, proc.stderr)
    result = json.loads(out[start + 4:])
    result['_state'] = out[marker + len('localhost | '):start].strip()
    return proc.returncode, result
