#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: monitoring_config_check
short_description: Check new monitoring configuration texts with the services' own tools before they are written
version_added: 0.4.0
description:
  - Writes each text to a temporary file beside its destination (so relative references resolve the same), runs the
    tool that must accept it (C(promtool check config), C(promtool check rules), C(amtool check-config)) and removes the
    file again, all in one round trip; fails listing every text a tool refused, with the tool's words.
  - What M(ansible.builtin.template)'s C(validate) does for one file, for every changed file of a host at once, so that
    a refused file is never written.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: >-
      Checks the same in check mode (only temporary files are written). A tool that is not installed yet (check mode
      before the packages) is reported in RV(not_checked) instead of failing.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  host:
    description: The inventory name of the host (C(inventory_hostname)), for the failure message.
    type: str
    default: this host
  files:
    description: The texts to check.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Where the text will be written.
        type: path
        required: true
      content:
        description: The text.
        type: str
        required: true
      argv:
        description: The command that must accept it; C(%s) stands for the temporary file.
        type: list
        elements: str
        required: true
  secret_values:
    description:
      - Secrets the texts hold (passwords, tokens). Kept out of the module's invocation log on the host (its journal)
        and out of its results, as the texts themselves are arguments.
    type: list
    elements: str
    default: []
notes:
  - Needs only the Python standard library on the managed host.
seealso:
  - module: pdserve.sglang.managed_files
"""

EXAMPLES = r"""
- name: Check the new prometheus.yml before writing it
  pdserve.sglang.monitoring_config_check:
    host: "{{ inventory_hostname }}"
    files:
      - path: /etc/prometheus/prometheus.yml
        content: "{{ prometheus_yml }}"
        argv: [promtool, check, config, "%s"]
"""

RETURN = r"""
checked:
  description: The paths whose text the tool accepted.
  returned: always
  type: list
  elements: str
not_checked:
  description:
    - The paths not checked because their tool is not installed (check mode only).
    - Named so that a list here does not make Ansible show or treat the task as skipped (a result key C(skipped)
      does).
  returned: always
  type: list
  elements: str
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem, report


def _check(module, item):
    """None when the tool accepts the text, else what it said."""
    directory = os.path.dirname(item["path"])
    fd, tmp = tempfile.mkstemp(dir=directory if os.path.isdir(directory) else None, prefix=".pdserve-check-",
                               suffix=os.path.splitext(item["path"])[1])
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(item["content"].encode("utf-8"))
        argv = [tmp if word == "%s" else word.replace("%s", tmp) for word in item["argv"]]
        rc, out, err = module.run_command(argv)
    finally:
        os.remove(tmp)
    if rc == 0:
        return None
    return " ".join((err or out or "exit status %d" % rc).replace(tmp, item["path"]).split())[:2000]


def run_module():
    module = AnsibleModule(argument_spec=dict(
        host=dict(type="str", default="this host"),
        secret_values=dict(type="list", elements="str", default=[], no_log=True),
        files=dict(type="list", elements="dict", required=True, options=dict(
            path=dict(type="path", required=True),
            content=dict(type="str", required=True),
            argv=dict(type="list", elements="str", required=True),
        )),
    ), supports_check_mode=True)
    checked, skipped, problems = [], [], []
    for item in module.params["files"]:
        tool = module.get_bin_path(item["argv"][0])
        if tool is None:
            if module.check_mode:
                skipped.append(item["path"])
                continue
            module.fail_json(msg="%s is not installed: cannot check %s" % (item["argv"][0], item["path"]))
        said = _check(module, dict(item, argv=[tool] + item["argv"][1:]))
        if said is None:
            checked.append(item["path"])
        else:
            problems.append(problem(module.params["host"], item["path"], "%s refuses it: %s" % (" ".join(item["argv"][:3]), said),
                                    "correct the variable that feeds it (nothing was written)"))
    if problems:
        module.fail_json(msg=report(problems, "the configuration check"), checked=checked, not_checked=skipped)
    module.exit_json(changed=False, checked=checked, not_checked=skipped)


def main():
    run_module()


if __name__ == "__main__":
    main()
