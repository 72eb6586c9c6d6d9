# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""pdserve.sglang.preloaded: its input unchanged, the plugins every task needs loaded into the calling process, and
the collection's playbooks render it in ansible-playbook's own process (a play keyword of their first play)."""

import os
import subprocess
import sys

import yaml

from ansible_collections.pdserve.sglang.plugins.filter import preload

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

# In a fresh interpreter: nothing loaded before the call, so the assertions see what the filter itself loaded.
PROBE = """
import sys
from ansible import constants as C
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader()
from ansible_collections.pdserve.sglang.plugins.filter import preload
def loaded():
    return (C.config.has_configuration_definition('connection', 'ssh'),
            C.config.has_configuration_definition('connection', 'ansible_collections.ansible.builtin.plugins.connection.ssh'),
            C.config.has_configuration_definition('lookup', 'password'))
before = loaded()
value = {'a': [1, 2]}
result = preload.preloaded(value)
after = loaded()
print(before, after, result is value)
"""


def test_the_input_comes_back_unchanged_and_the_plugins_are_loaded():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.stdout.split("\n")[0] == "(False, False, False) (True, True, True) True", out


def test_a_missing_plugin_name_is_not_an_error():
    assert preload.preloaded("x", connections=["pdserve.sglang.no_such_connection"], lookups=[]) == "x"


def test_every_playbook_that_checks_the_shared_values_renders_it_in_its_first_play_keyword():
    with open(os.path.join(ROOT, "playbooks", "shared_values.yml")) as handle:
        plays = yaml.safe_load(handle)
    assert "| pdserve.sglang.preloaded" in plays[0]["hosts"]
    with open(os.path.join(ROOT, "playbooks", "rolling_restart.yml")) as handle:
        assert yaml.safe_load(handle)[0]["ansible.builtin.import_playbook"] == "shared_values.yml"
