#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: monitoring_verify
short_description: Wait until a Prometheus is ready, scrapes every expected target and evaluates every rule
version_added: 0.4.0
description:
  - Probes a Prometheus (C(/-/ready), C(/api/v1/targets), C(/api/v1/rules), C(/api/v1/query)) until it is ready,
    every expected target is C(up), every rule is healthy (C(ok)) and no series is stored under an C(sglang_) name,
    or until O(timeout).
  - The C(sglang_) check proves the name fix of the SGLang scrape jobs. Prometheus 2.x negotiates a format in which
    the C(prometheus_client) of SGLang writes C(sglang_) for C(sglang:) in sample names. When SGLang jobs are
    expected, C(sglang:*) series must also be present.
  - On timeout it fails naming every target that is not up (with Prometheus' last scrape error), every rule that is
    not healthy and the C(sglang_) names found.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode the module probes once and does not fail when something is not right yet.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  url:
    description: Base URL of Prometheus as seen from the host the module runs on.
    type: str
    default: http://127.0.0.1:9090
  expected_targets:
    description:
      - The targets that must be up, each with C(job) and C(address) (C(host:port) as in the scrape config), optionally
        C(labels). The filter C(pdserve.sglang.monitoring_targets) gives them for a monitoring host.
    type: list
    elements: dict
    default: []
  check_sglang_names:
    description: Require that no C(sglang_*) series is stored (and C(sglang:*) ones are, when SGLang jobs are expected).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for everything together.
    type: float
    default: 120
  interval:
    description:
      - Seconds between probes. A server that just became ready is up at Prometheus' next scrape of it; a short
        interval sees that scrape without adding up to a second of its own (five local API calls a probe).
    type: float
    default: 0.25
  username:
    description: Basic-auth user, when Prometheus' web config asks for one.
    type: str
  password:
    description: Basic-auth password.
    type: str
  validate_certs:
    description: Verify the TLS certificate of an C(https://) URL.
    type: bool
    default: true
  request_timeout:
    description: Seconds one HTTP request may take.
    type: float
    default: 10.0
notes:
  - The module never changes anything; it always reports C(changed=false). Standard library only.
seealso:
  - module: pdserve.sglang.wait_ready
  - module: pdserve.sglang.monitoring_preflight
"""

EXAMPLES = r"""
- name: Check the monitoring host's Prometheus
  pdserve.sglang.monitoring_verify:
    url: http://127.0.0.1:9090
    expected_targets: >-
      {{ hostvars | pdserve.sglang.serving_topology(groups, sglang_topology_defaults)
         | pdserve.sglang.monitoring_targets(inventory_hostname, __settings) }}
    timeout: 120
  register: __prometheus

- name: Summary
  ansible.builtin.debug:
    msg: "{{ __prometheus.url }}: {{ __prometheus.targets_up }}/{{ __prometheus.targets_total }} targets up"
"""

RETURN = r"""
url:
  description: The Prometheus probed.
  returned: always
  type: str
ok:
  description: Whether everything was right in the end.
  returned: always
  type: bool
ready:
  description: Whether C(/-/ready) answered 200.
  returned: always
  type: bool
seconds:
  description: Seconds until everything was right (or until the module gave up).
  returned: always
  type: float
targets_up:
  description: Expected targets that are up.
  returned: always
  type: int
  sample: 7
targets_total:
  description: Expected targets.
  returned: always
  type: int
  sample: 7
down:
  description: Expected targets Prometheus scrapes but that are not up, with C(last_error).
  returned: always
  type: list
  elements: dict
missing:
  description: Expected targets Prometheus does not scrape at all.
  returned: always
  type: list
  elements: dict
rules_total:
  description: Rules Prometheus has loaded.
  returned: always
  type: int
rules_bad:
  description: Rules whose health is not C(ok).
  returned: always
  type: list
  elements: dict
sglang_underscore_names:
  description: Series names starting with C(sglang_) (must be none).
  returned: always
  type: list
  elements: str
sglang_colon_series:
  description: Number of C(sglang:*) series.
  returned: always
  type: int
"""

import base64

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import HttpClient
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring.prometheus import PrometheusCheck, describe


def run_module():
    module = AnsibleModule(argument_spec=dict(
        url=dict(type="str", default="http://127.0.0.1:9090"),
        expected_targets=dict(type="list", elements="dict", default=[]),
        check_sglang_names=dict(type="bool", default=True),
        timeout=dict(type="float", default=120),
        interval=dict(type="float", default=0.25),
        username=dict(type="str"),
        password=dict(type="str", no_log=True),
        validate_certs=dict(type="bool", default=True),
        request_timeout=dict(type="float", default=10.0),
    ), supports_check_mode=True, required_together=[("username", "password")])
    params = module.params
    if params["timeout"] <= 0 or params["interval"] <= 0:
        module.fail_json(msg="timeout and interval must be greater than 0")
    for target in params["expected_targets"]:
        if not target.get("job") or not target.get("address"):
            module.fail_json(msg="every expected target needs job and address, got %r" % (target,))
    headers = {}
    if params["username"]:
        token = base64.b64encode(("%s:%s" % (params["username"], params["password"])).encode()).decode()
        headers["Authorization"] = "Basic %s" % token
    client = HttpClient(timeout=params["request_timeout"], validate_certs=params["validate_certs"], headers=headers)
    check = PrometheusCheck(client, params["url"], params["expected_targets"], params["check_sglang_names"])
    if module.check_mode:
        state = check.once()
        state["seconds"] = 0.0
        state["ok"] = check.done(state)
    else:
        state = check.wait(params["timeout"], params["interval"])
    result = dict(
        changed=False, url=state["url"], ok=state["ok"], ready=state["ready"], seconds=state["seconds"],
        targets_up=len(state["up"]), targets_total=len(params["expected_targets"]), down=state["down"],
        missing=state["missing"], rules_total=state["rules_total"], rules_bad=state["rules_bad"],
        sglang_underscore_names=state["sglang_underscore_names"], sglang_colon_series=state["sglang_colon_series"],
    )
    if not state["ok"] and not module.check_mode:
        module.fail_json(msg="after %.0f s: %s" % (state["seconds"], describe(state)), **result)
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
