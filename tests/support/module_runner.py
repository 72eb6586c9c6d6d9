# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Run a module's main() in-process with the arguments Ansible would pass: the one runner of the unit and
integration tests.

What a test sees is what Ansible itself would report:

- ``exit_json(**result)``: the result as the module passed it, nothing added (no default ``changed``: a module
  must report it itself for a test to see it); ``failed`` is False.
- ``fail_json(msg, **result)``: the result with ``failed=True`` and ``msg`` set, as AnsibleModule.fail_json does;
  ``failed`` is True. A call without ``msg`` is an error of the module and fails the test, as it would fail
  in Ansible.
- A main() that returns without calling either fails the test.

``run_module(main, args, check_mode=False) -> (result, failed)``; the patches hold only while main() runs.
"""

from typing import Any, Callable, Dict, Optional, Tuple
from unittest import mock

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class ModuleExit(Exception):
    """Raised by the patched exit_json/fail_json; args are (result dict, failed)."""


def _exit_json(self, **kwargs):
    raise ModuleExit(kwargs, False)


def _fail_json(self, msg, **kwargs):
    kwargs.update(failed=True, msg=str(msg))
    raise ModuleExit(kwargs, True)


def run_module(main: Callable[[], Any], args: Optional[Dict[str, Any]] = None,
               check_mode: bool = False) -> Tuple[Dict[str, Any], bool]:
    """Run ``main()`` with ``args`` as its module arguments; returns (result, failed)."""
    args = dict(args or {})
    if check_mode:
        args["_ansible_check_mode"] = True
    with mock.patch.object(basic.AnsibleModule, "exit_json", _exit_json), \
            mock.patch.object(basic.AnsibleModule, "fail_json", _fail_json), \
            patch_module_args(args):
        try:
            main()
        except ModuleExit as exc:
            return exc.args[0], exc.args[1]
    pytest.fail("%s.main() returned without exit_json or fail_json" % getattr(main, "__module__", "the module"))
