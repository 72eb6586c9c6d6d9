# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Fixtures: the emulated PD stack behind the real sglang-router."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import stack as stack_mod  # noqa: E402


def _factory(request_stacks):
    def make(prefill_args=(), decode_args=(), prefill_env=None, decode_env=None,
             router_args=(), router=True, drop=(), prefill_drop=(), decode_drop=(),
             router_drop=(), router_bootstrap_port=None, start=True, wait_router=True,
             timeout=60.0):
        """Start a PD stack (correct flags by default) and stop it at teardown.

        ``*_args`` replace same-named flags or add new ones; ``drop`` removes a flag from both
        servers (``prefill_drop``/``decode_drop``/``router_drop`` from one), e.g.
        ``pd_stack(decode_drop=("--reasoning-parser",))``.
        """
        pd = stack_mod.PDStack(prefill_args=prefill_args, decode_args=decode_args,
                               prefill_env=prefill_env, decode_env=decode_env,
                               router_args=router_args, router=router, drop=drop,
                               prefill_drop=prefill_drop, decode_drop=decode_drop,
                               router_drop=router_drop,
                               router_bootstrap_port=router_bootstrap_port)
        request_stacks.append(pd)
        if start:
            pd.start(timeout=timeout, wait_router=wait_router)
        return pd
    return make


@pytest.fixture
def pd_stack():
    """Factory: ``pd_stack(prefill_args=(), decode_args=(), prefill_env=None, decode_env=None,
    router_args=(), router=True, drop=(), ...)`` -> PDStack (.prefill, .decode, .router,
    .router_url, .model). Everything started is stopped at teardown."""
    stacks = []
    yield _factory(stacks)
    for pd in stacks:
        pd.stop()


@pytest.fixture(scope="module")
def pd_stack_module():
    """Same factory, stacks shared by a module (start one correct stack per module)."""
    stacks = []
    yield _factory(stacks)
    for pd in stacks:
        pd.stop()
