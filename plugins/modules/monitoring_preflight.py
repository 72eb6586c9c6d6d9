#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: monitoring_preflight
short_description: Judge one host's part of the monitoring layout in one round trip, changing nothing
version_added: 0.4.0
description:
  - Refuses a layout Prometheus cannot scrape, before anything is installed. On a monitoring host it judges every
    endpoint that host's Prometheus would scrape, as the serving topology describes them; a prefill or decode server
    bound to a loopback address of another host, a router whose metrics port is on loopback of another host, or a
    server with C(sglang_server_enable_metrics=false) is a problem of the host whose variable must change, with the
    fix in the message.
  - On every host it judges the ports the monitoring services will take (Prometheus, Alertmanager, Grafana, the node and
    GPU exporters) against the serving ports of that host and against each other, and looks at the listening sockets
    for processes other than the role's own units holding them.
  - It also checks the role's options that would fail later (a Grafana install without an admin password, empty
    lists of .deb files, alert thresholds that are not numbers or durations), and refuses a Prometheus that other
    hosts would reach without a password (a non-loopback listen address without C(basic_auth_users), unless opted
    out).
  - Returns every problem as C({host, variable, message, fix}) and fails listing all of them. Changes nothing.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; it judges the same in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  host:
    description: The inventory name of the host being judged (C(inventory_hostname)).
    type: str
    required: true
  topology:
    description: The result of P(pdserve.sglang.serving_topology#filter) for the whole inventory.
    type: dict
    required: true
  settings:
    description:
      - The monitoring settings of the inventory, from the filter C(pdserve.sglang.monitoring_settings). Monitoring and
        GPU hosts, addresses, exporter bind addresses, ports.
    type: dict
    required: true
  options:
    description:
      - The role's install choices (C(prometheus_install), C(package_source), C(deb_files), C(gpu_exporter_source),
        C(gpu_exporter_deb_files), C(grafana_source), C(grafana_admin_password_set), C(grafana_deb_file)), how
        Prometheus listens and authenticates (C(prometheus_host), C(prometheus_basic_auth_users),
        C(prometheus_client_auth_set), C(prometheus_allow_unauthenticated), booleans but the address) and
        C(own_units), the systemd units whose sockets count as the role's own, and C(own_users), the service users
        whose sockets count as the role's own when C(/proc) does not show a socket's process.
    type: dict
    default: {}
  rules:
    description:
      - The alert rule parameters (runbook URL, intervals, thresholds) to check on a monitoring host. Omit to skip.
    type: dict
  check_ports:
    description: Look for processes that are not the role's units holding the monitoring ports.
    type: bool
    default: true
  fail_on_problems:
    description: Fail when a problem is found. V(false) returns the problems for the caller to report.
    type: bool
    default: true
notes:
  - Needs only the Python standard library on the managed host. Run it as root to see the owners of every socket.
seealso:
  - module: pdserve.sglang.serving_preflight
  - module: pdserve.sglang.monitoring_verify
"""

EXAMPLES = r"""
- name: Judge this host's part of the monitoring layout
  pdserve.sglang.monitoring_preflight:
    host: "{{ inventory_hostname }}"
    topology: "{{ hostvars | pdserve.sglang.serving_topology(groups, sglang_topology_defaults) }}"
    settings: "{{ hostvars | pdserve.sglang.monitoring_settings(groups, {'prometheus': {'port': 9090}}) }}"
    options:
      own_units: [prometheus.service, prometheus-node-exporter.service]
"""

RETURN = r"""
problems:
  description: Every problem found.
  returned: always
  type: list
  elements: dict
  sample:
    - host: gpu-decode-1
      variable: sglang_decode_instances[decode-0].host
      message: "Prometheus on router-1 cannot scrape http://127.0.0.1:30002/metrics: it is served on 127.0.0.1, a loopback address of gpu-decode-1"
      fix: >-
        bind the instance to an address of gpu-decode-1 that router-1 can reach (its host, or sglang_server_host of
        gpu-decode-1), or run Prometheus on gpu-decode-1
problem_lines:
  description: "The problems as readable lines (C(host H: VARIABLE: message; fix))."
  returned: always
  type: list
  elements: str
ports:
  description: The ports the role's services will listen on, on this host, with the variable that sets each.
  returned: always
  type: list
  elements: dict
  sample: [{"port": 9100, "variable": "monitoring_node_exporter_port"}]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import host_judge
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import line, report


def run_module():
    spec = host_judge.argument_spec()
    spec.update(fail_on_problems=dict(type="bool", default=True))
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    error = host_judge.topology_error(params["topology"])
    if error:
        module.fail_json(msg=error)
    problems, ports = host_judge.judge_host(params)
    result = dict(changed=False, problems=problems, problem_lines=[line(p) for p in problems], ports=ports)
    if problems and params["fail_on_problems"]:
        module.fail_json(msg=report(problems, "monitoring preflight"), **result)
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
