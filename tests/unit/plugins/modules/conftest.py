# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Shared harness for module tests: run a module's main() with exit_json/fail_json patched."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class AnsibleExitJson(Exception):
    """Raised by the patched AnsibleModule.exit_json; args[0] is the result dict."""


class AnsibleFailJson(Exception):
    """Raised by the patched AnsibleModule.fail_json; args[0] is the result dict (failed=True)."""


def _exit_json(self, **kwargs):
    # No default for `changed`: a module must report it itself for a test to see it.
    raise AnsibleExitJson(kwargs)


def _fail_json(self, **kwargs):
    kwargs['failed'] = True
    raise AnsibleFailJson(kwargs)


@pytest.fixture
def module_runner(monkeypatch):
    """Patch exit_json/fail_json; return run(main, args, check_mode=False) -> (result, failed).

    The module must end through exit_json or fail_json: returning without either fails the test.
    """
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', _fail_json)

    def run(main, args, check_mode=False):
        if check_mode:
            args = dict(args, _ansible_check_mode=True)
        with patch_module_args(args):
            with pytest.raises((AnsibleExitJson, AnsibleFailJson)) as exc:
                main()
        return exc.value.args[0], exc.type is AnsibleFailJson

    return run
