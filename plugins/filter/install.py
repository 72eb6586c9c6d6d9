# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the sglang_install role: thin wrappers over plugins/module_utils/install/plan.py and failure.py."""

from ansible.errors import AnsibleFilterError
from ansible_collections.pdserve.sglang.plugins.module_utils.install import lock as pip_lock
from ansible_collections.pdserve.sglang.plugins.module_utils.install.failure import explain
from ansible_collections.pdserve.sglang.plugins.module_utils.install.plan import plan, profile, unmet_requirements


def _find_lock(settings, facts):
    """The lock a venv installs from, read here on the controller (plan() itself does no I/O)."""
    value = settings.get("pip_lock")
    if value is None:
        return None
    python_version = ((facts or {}).get("python") or {}).get("version")
    found = pip_lock.resolve(str(value), str(settings.get("pip_lock_shipped_dir") or ""), str(settings.get("profile") or "servers"),
                             str(python_version) if python_version else None)
    if found["path"] and not found["error"]:
        found["lock"] = pip_lock.load(found["path"])
    return found


def install_plan(facts, host, settings):
    """What sglang_install does on a host and what stops it (see install_plan.yml)."""
    if not isinstance(settings, dict):
        raise AnsibleFilterError("install_plan: settings must be a mapping, got %r" % (settings,))
    if facts is not None and not isinstance(facts, dict):
        raise AnsibleFilterError("install_plan: input must be the result of pdserve.sglang.install_facts, got %r" % (facts,))
    settings = dict(settings)
    settings["pip_lock_found"] = _find_lock(settings, facts)
    return plan(str(host), settings, dict(facts or {}))


def install_profile(settings, name, router_venv, router_version, router_smg_version=""):
    """The role's settings with an install profile applied (see install_profile.yml)."""
    if not isinstance(settings, dict):
        raise AnsibleFilterError("install_profile: input must be a mapping of settings, got %r" % (settings,))
    try:
        return profile(dict(settings), str(name), str(router_venv), str(router_version), str(router_smg_version or ""))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def pip_unmet(requirements, facts):
    """The requirements the venv does not meet yet (see pip_unmet.yml)."""
    if not isinstance(requirements, list):
        raise AnsibleFilterError("pip_unmet: input must be a list of requirements, got %r" % (requirements,))
    if facts is not None and not isinstance(facts, dict):
        raise AnsibleFilterError("pip_unmet: facts must be the result of pdserve.sglang.install_facts, got %r" % (facts,))
    return unmet_requirements([str(r) for r in requirements], dict((facts or {}).get("venv_packages") or {}))


def install_failure(result, host, venv, facts, pip_args, retries, timeout, marker):
    """Why a venv step failed, for an operator (see install_failure.yml)."""
    if not isinstance(result, dict):
        raise AnsibleFilterError("install_failure: input must be the failed task's result, got %r" % (result,))
    if facts is not None and not isinstance(facts, dict):
        raise AnsibleFilterError("install_failure: facts must be the result of pdserve.sglang.install_facts, got %r" % (facts,))
    disk = ((facts or {}).get("disk") or [None])[0]
    return explain(dict(result), str(host), str(venv), disk, [str(a) for a in pip_args or []], retries, timeout, str(marker))


class FilterModule(object):
    """pdserve.sglang filters of the install layer."""

    def filters(self):
        return {"install_plan": install_plan, "install_profile": install_profile, "pip_unmet": pip_unmet,
                "install_failure": install_failure}
