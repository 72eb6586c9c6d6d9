# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters that tell secrets by the names they are set under: thin wrappers over plugins/module_utils/secrets.py."""

from ansible.errors import AnsibleFilterError
from ansible_collections.pdserve.sglang.plugins.module_utils import secrets


def env_secret_values(envs):
    """The values of the secret-looking variables of a list of env dicts, for managed_files' secret_values."""
    if isinstance(envs, dict):
        envs = [envs]
    if not isinstance(envs, (list, tuple)) or not all(isinstance(e, dict) or e is None for e in envs):
        raise AnsibleFilterError("env_secret_values wants a list of env dicts, got %r" % (type(envs).__name__,))
    return secrets.env_secret_values(envs)


def env_without_secrets(env):
    """The env dict without its secret-looking variables."""
    if not isinstance(env, dict):
        raise AnsibleFilterError("env_without_secrets wants an env dict, got %r" % (type(env).__name__,))
    return secrets.env_without_secrets(env)


class FilterModule:
    def filters(self):
        return {"env_secret_values": env_secret_values, "env_without_secrets": env_without_secrets}
