# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Module tests run main() through the shared runner (tests/support/module_runner.py, which says what a test
sees of exit_json and fail_json)."""

import pytest

from module_runner import run_module


@pytest.fixture
def module_runner():
    """run(main, args, check_mode=False) -> (result, failed); see tests/support/module_runner.py."""
    return run_module
