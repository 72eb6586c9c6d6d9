# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the monitoring role: thin wrappers over plugins/module_utils/monitoring_*.py."""

import os

from ansible.errors import AnsibleFilterError
from ansible.plugins.filter.core import to_nice_yaml
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import files as monitoring_files
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import host_state as monitoring_host_state
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


def monitoring_listen_address(bind, port):
    """host:port a service listens on, IPv6 literals in brackets."""
    return monitoring_targets.listen_address(bind, port)


def monitoring_local_url(bind, port, tls=False):
    """The URL a process on this host reaches a service bound to ``bind`` at."""
    return monitoring_targets.local_url(bind, port, tls)


def monitoring_dashboard_files(role_path, dest_dir):
    """[{path, content, kind}] of the shipped dashboards (the role's files/dashboards) under ``dest_dir``."""
    def read(name):
        with open(os.path.join(str(role_path), "files", "dashboards", name + ".json"), encoding="utf-8") as handle:
            return handle.read().rstrip()
    return [dict(item, kind="dashboard") for item in monitoring_targets.dashboard_files(dest_dir, read)]


_MANAGED_HEADER = "# Managed by pdserve.sglang.monitoring: changes here are overwritten.\n# %s\n"


def monitoring_yaml_text(data, header):
    """A YAML configuration file's text: the managed-file header, then ``data``."""
    return _MANAGED_HEADER % header + to_nice_yaml(data, indent=2, width=1000, sort_keys=False)


def monitoring_rule_items(rule_files, rules_dir, group, header):
    """[{path, content, group, mode, kind}] of the collection's rule files ({name: content}) in ``rules_dir``."""
    return [{"path": "%s/%s" % (str(rules_dir).rstrip("/"), name), "content": monitoring_yaml_text(content, header),
             "group": group, "mode": "0640", "kind": "prometheus_rules"} for name, content in rule_files.items()]


def monitoring_extra_rule_items(paths, contents, rules_dir, group):
    """The user's rule files (controller ``paths``, their ``contents``) as extra-<name> in ``rules_dir``."""
    return [{"path": "%s/extra-%s" % (str(rules_dir).rstrip("/"), os.path.basename(str(path))), "content": content,
             "group": group, "mode": "0640", "kind": "prometheus_rules"} for path, content in zip(paths, contents)]


def _files_call(function, *args):
    try:
        return function(*args)
    except monitoring_files.FilesError as exc:
        raise AnsibleFilterError(str(exc))


def monitoring_managed_files(files):
    """The files as pdserve.sglang.managed_files takes them."""
    return _files_call(monitoring_files.managed, files)


def monitoring_file_checks(files, changed_paths):
    """[{path, content, argv}] of the changed files a tool must accept first."""
    return _files_call(monitoring_files.checks, files, changed_paths)


def monitoring_file_actions(files, changed_paths):
    """The handlers (listen names) the changed files notify."""
    return _files_call(monitoring_files.actions, files, changed_paths)


def monitoring_secret_values(values):
    return monitoring_files.secret_values(values)


def monitoring_package_specs(wanted, source, deb_files):
    """What must be installed for ``wanted``: names (apt) or name=version of the .deb files the install takes."""
    return monitoring_host_state.package_specs(wanted, source, deb_files)


def monitoring_deb_selection(deb_files, wanted):
    """The .deb files installed together for ``wanted``: the dependencies and the wanted service packages."""
    return monitoring_host_state.deb_selection(deb_files, wanted)


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
            "monitoring_listen_address": monitoring_listen_address,
            "monitoring_local_url": monitoring_local_url,
            "monitoring_dashboard_files": monitoring_dashboard_files,
            "monitoring_yaml_text": monitoring_yaml_text,
            "monitoring_rule_items": monitoring_rule_items,
            "monitoring_extra_rule_items": monitoring_extra_rule_items,
            "monitoring_managed_files": monitoring_managed_files,
            "monitoring_file_checks": monitoring_file_checks,
            "monitoring_file_actions": monitoring_file_actions,
            "monitoring_secret_values": monitoring_secret_values,
            "monitoring_package_specs": monitoring_package_specs,
            "monitoring_deb_selection": monitoring_deb_selection,
        }
