# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the nvidia_driver role: thin wrappers over module_utils (the logic and its tests live there).

``nvidia_driver_plan`` derives packages, apt pins and the apt state from the role's settings;
``openpgp_fingerprints`` reads the fingerprints of an armored signing key before apt trusts it;
``nvidia_driver_refusal`` is the preflight's failure message, written like every other domain's (problems.report).
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.pdserve.sglang.plugins.module_utils.driver import policy as nvidia_driver_policy
from ansible_collections.pdserve.sglang.plugins.module_utils.driver import openpgp
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import report


def nvidia_driver_plan(settings):
    try:
        return nvidia_driver_policy.plan(dict(settings))
    except (nvidia_driver_policy.PolicyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("nvidia_driver_plan: %s" % to_text(exc))


def openpgp_fingerprints(key_text, primary_only=False):
    try:
        return openpgp.fingerprints(to_text(key_text), primary_only=bool(primary_only))
    except openpgp.OpenPGPError as exc:
        raise AnsibleFilterError("openpgp_fingerprints: %s" % to_text(exc))


def nvidia_driver_refusal(problems, host):
    """The refusal of ``host`` for the driver preflight's problems ([{variable, message, fix}])."""
    items = [dict(p, host=p.get("host") or host) for p in problems or []]
    return report(items, "nvidia_driver preflight of %s (nothing was changed)" % host)


class FilterModule(object):
    """pdserve.sglang nvidia_driver filters."""

    def filters(self):
        return {
            "nvidia_driver_plan": nvidia_driver_plan,
            "openpgp_fingerprints": openpgp_fingerprints,
            "nvidia_driver_refusal": nvidia_driver_refusal,
        }
