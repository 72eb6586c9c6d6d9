# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The KV fabric check's judgement and report: thin wrappers over plugins/module_utils/validation/kv_fabric.py (role
sglang_kv_fabric)."""

from typing import Any, Dict, List, Optional

from ansible.errors import AnsibleFilterError
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import report
from ansible_collections.pdserve.sglang.plugins.module_utils.validation import kv_fabric


def kv_fabric_problems(host: Any, settings: Dict[str, Any]) -> List[Dict[str, Any]]:
    if not isinstance(settings, dict):
        raise AnsibleFilterError("kv_fabric_problems takes the check's settings as a mapping")
    return kv_fabric.settings_problems(str(host), settings)


def kv_fabric_refusal(problems: List[Dict[str, Any]]) -> str:
    return report(problems, "the KV fabric check's preflight")


def kv_fabric_report(initiators: List[Dict[str, Any]], targets: List[Dict[str, Any]],
                     expect: Optional[List[str]] = None, min_gbps: Optional[float] = None) -> Dict[str, Any]:
    if not isinstance(initiators, list) or not isinstance(targets, list):
        raise AnsibleFilterError("kv_fabric_report takes the initiators' and the targets' results, as lists")
    floor = float(min_gbps) if min_gbps not in (None, "") else 0.0
    return kv_fabric.pair_report(initiators, targets, list(expect or []) or None, floor if floor > 0 else None)


class FilterModule(object):
    """pdserve.sglang filters of the KV fabric check."""

    def filters(self):
        return {"kv_fabric_problems": kv_fabric_problems, "kv_fabric_refusal": kv_fabric_refusal,
                "kv_fabric_report": kv_fabric_report}
