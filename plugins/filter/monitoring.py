# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the monitoring role: thin wrappers over plugins/module_utils/monitoring_*.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import rules as monitoring_rules
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import targets as monitoring_targets
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import report


def monitoring_settings(hostvars, groups, options):
    """Settings of the monitoring functions from the inventory (see monitoring_targets.inventory_settings)."""
    groups = dict(groups or {})
    wanted = set()
    for group in (options.get("monitoring_group", "monitoring"), options.get("gpu_group", "gpu_hosts"),
                  "sglang_prefill", "sglang_decode", "sglang_router"):
        wanted.update(groups.get(group) or [])
    host_vars = {}
    for host in wanted:
        try:
            hv = hostvars[host]
        except KeyError:
            hv = {}
        host_vars[host] = dict((k, hv.get(k)) for k in ("ansible_host", "monitoring_exporter_host",
                                                        "pdserve_expected_gpu_count", "nvidia_driver_expected_gpu_count")
                               if hv.get(k) is not None)
    settings = monitoring_targets.inventory_settings(host_vars, groups, options)
    return settings


def _strict(problems, what):
    if problems:
        raise AnsibleFilterError(report(problems, what + " (run with --tags preflight for every host)"))


def monitoring_prometheus_config(topology, inventory_host, settings):
    """prometheus.yml of this monitoring host, as a dict."""
    config, problems = monitoring_targets.prometheus_config(topology, inventory_host, settings)
    _strict(problems, "the monitoring layout check")
    return config


def monitoring_targets_of(topology, inventory_host, settings):
    """[{job, address, labels}] this monitoring host's Prometheus scrapes (what the verify step expects up)."""
    found, problems = monitoring_targets.targets(topology, inventory_host, settings)
    _strict(problems, "the monitoring layout check")
    return found


def monitoring_exporter_bind(topology, settings, inventory_host):
    """The address this host's exporters listen on."""
    return monitoring_targets.exporter_bind(topology, settings, inventory_host)


def monitoring_expected_gpus(topology, settings):
    return monitoring_targets.expected_gpu_counts(topology, settings)


def monitoring_rule_files(params):
    """{file name: rule file content} of the collection's alert rules."""
    try:
        return monitoring_rules.rule_files(params)
    except monitoring_rules.RuleError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    """pdserve.sglang monitoring filters."""

    def filters(self):
        return {
            "monitoring_settings": monitoring_settings,
            "monitoring_prometheus_config": monitoring_prometheus_config,
            "monitoring_targets": monitoring_targets_of,
            "monitoring_exporter_bind": monitoring_exporter_bind,
            "monitoring_expected_gpus": monitoring_expected_gpus,
            "monitoring_rule_files": monitoring_rule_files,
        }
