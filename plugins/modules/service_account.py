#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: service_account
short_description: The system user, group and configuration directory of the serving processes, in one round trip
version_added: 0.4.0
description:
  - Makes sure the system group, the system user (no login shell, its home created), the supplementary groups that
    exist on the host (for example the groups of the GPU device nodes) and the configuration directory
    (C(root:<group>)) are in place, and changes only what differs.
  - One module call where the builtin group, user, getent and file modules take four round trips; every role that runs
    a serving process calls it through the C(pdserve.sglang.sglang_common) role with the same settings.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reports what would change, runs nothing.
  diff_mode:
    support: full
    details: The account and directories before and after.
  platform:
    platforms: posix
options:
  name:
    description: The user name.
    type: str
    required: true
  group:
    description: Its primary group (a system group, created when missing).
    type: str
    required: true
  home:
    description: Its home directory (created when missing, never moved).
    type: path
    required: true
  shell:
    description: Its login shell.
    type: path
    default: /usr/sbin/nologin
  extra_groups:
    description: Supplementary groups, added when they exist on the host; the others are reported in RV(skipped_groups).
    type: list
    elements: str
    default: []
  config_dir:
    description: A directory owned by root and readable by the group (the environment files).
    type: path
  config_mode:
    description: Mode of O(config_dir).
    type: str
    default: "0750"
notes:
  - Uses C(groupadd), C(useradd) and C(usermod) from the host's shadow utilities.
seealso:
  - module: ansible.builtin.user
"""

EXAMPLES = r"""
- name: The service user of the model servers
  pdserve.sglang.service_account:
    name: sglang
    group: sglang
    home: /var/lib/sglang
    extra_groups: [video, render]
    config_dir: /etc/sglang
"""

RETURN = r"""
commands:
  description: The commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: list
  sample: [[groupadd, --system, sglang]]
directories:
  description: Directories created or whose owner, group or mode were set.
  returned: always
  type: list
  elements: str
skipped_groups:
  description: Supplementary groups asked for that the host does not have.
  returned: always
  type: list
  elements: str
"""

import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.common_args import account_argument_spec
from ansible_collections.pdserve.sglang.plugins.module_utils.host.service_account import plan, read_state


def main():
    module = AnsibleModule(
        # The same options the plan modules' account option takes (managed_files, install_facts).
        argument_spec=account_argument_spec()["account"]["options"],
        supports_check_mode=True,
    )
    params = module.params
    before = read_state(params)
    commands, directories, skipped = plan(params, before)
    if not module.check_mode:
        for argv in commands:
            tool = module.get_bin_path(argv[0], required=True, opt_dirs=["/usr/sbin", "/sbin"])
            rc, out, err = module.run_command([tool] + argv[1:])
            if rc != 0:
                module.fail_json(msg="%s failed (rc=%s): %s" % (" ".join(argv), rc, (err or out).strip()), commands=commands)
        for item in directories:
            if item["create"] and not os.path.isdir(item["path"]):
                os.makedirs(item["path"])
            os.chown(item["path"], pwd.getpwnam(item["owner"]).pw_uid, grp.getgrnam(item["group"]).gr_gid)
            os.chmod(item["path"], int(item["mode"], 8))
    result = dict(changed=bool(commands or directories), commands=commands,
                  directories=[d["path"] for d in directories], skipped_groups=skipped)
    if module._diff and result["changed"]:
        after = before if module.check_mode else read_state(params)
        result["diff"] = {"before": _describe(before), "after": _describe(after) if not module.check_mode else
                          "would run: %s; directories: %s\n" % (commands, [d["path"] for d in directories])}
    module.exit_json(**result)


def _describe(state):
    return "user: %s\ndirectories: %s\n" % (state["user"], state["dirs"])


if __name__ == "__main__":
    main()
