#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: tree_owner
short_description: Give the entries of one user in a directory tree to another owner, never following a link
version_added: 0.4.0
description:
  - Converts a tree that an earlier version of the collection left to the service user (a venv, the model tree, a
    build directory) to its new owner. Every entry of O(from_owner) under O(path), O(path) included, gets O(owner)
    and O(group), and loses group and other write, set-user-ID, set-group-ID and sticky bits (mode C(& 0755)).
  - Entries of any other owner are left exactly as they are; nothing is removed.
  - Walks without following symbolic links and changes files through descriptors opened with C(O_NOFOLLOW), so a
    link inside the tree cannot make it change a file outside it; a link itself only gets its owner.
  - Idempotent - a converted tree reports no change.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Counts what would change and changes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  path:
    description:
      - The top of the tree; a directory, not a link.
    type: path
    required: true
  owner:
    description: The new owner (a user name).
    type: str
    required: true
  group:
    description: The new group (a group name).
    type: str
    required: true
  from_owner:
    description:
      - The user whose entries change (a user name). A user that does not exist owns nothing - no change.
    type: str
    required: true
seealso:
  - module: pdserve.sglang.install_facts
"""

EXAMPLES = r"""
- name: Give root the venv that the service user owned
  pdserve.sglang.tree_owner:
    path: /opt/sglang/venv
    owner: root
    group: root
    from_owner: sglang
"""

RETURN = r"""
converted:
  description: Entries changed (in check mode - that would change).
  returned: always
  type: int
  sample: 48211
others:
  description: Entries of other owners, left as they are.
  returned: always
  type: int
  sample: 0
msg:
  description: What was done, in one line.
  returned: always
  type: str
  sample: "/opt/sglang/venv: gave 48211 entries of sglang to root:root (no group or other write, no set-ID bits)"
"""

import grp
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.install.ownership import convert, message


def argument_spec():
    return dict(
        path=dict(type="path", required=True),
        owner=dict(type="str", required=True),
        group=dict(type="str", required=True),
        from_owner=dict(type="str", required=True),
    )


def run_module():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    try:
        uid = pwd.getpwnam(p["owner"]).pw_uid
        gid = grp.getgrnam(p["group"]).gr_gid
    except KeyError as exc:
        module.fail_json(msg="tree_owner: no such user or group: %s; create it first" % exc)
    try:
        from_uid = pwd.getpwnam(p["from_owner"]).pw_uid
    except KeyError:
        module.exit_json(changed=False, converted=0, others=0, msg="%s: user %s does not exist, nothing to convert" % (
            p["path"], p["from_owner"]))
    try:
        counts = convert(p["path"], uid, gid, from_uid, check=module.check_mode)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="tree_owner: cannot convert %s: %s" % (p["path"], exc))
    module.exit_json(changed=counts["changed"] > 0, converted=counts["changed"], others=counts["others"],
                     msg=message(p["path"], p["owner"], p["group"], p["from_owner"], counts, module.check_mode))


def main():
    run_module()


if __name__ == "__main__":
    main()
