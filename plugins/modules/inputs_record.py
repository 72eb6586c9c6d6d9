#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: inputs_record
short_description: Run a step only when its inputs changed, by comparing them with a JSON record
version_added: 0.4.0
description:
  - Compares a dict of inputs (source commit, build flags, versions, ...) with the JSON record written after the
    step last succeeded, and returns which keys differ. A task runs the step when RV(differs) is not empty.
  - With O(write=true), writes the inputs as the record; run it after the step succeeded, with the RV(current) of the
    comparison, so a failed step leaves no record and the next run tries again.
  - O(trees) adds the SHA-256 of source directories to the inputs (paths, executable bits and contents; VCS data and
    build outputs such as C(build/), C(dist/), C(*.egg-info) left out), so a build from a directory reruns exactly
    when its sources change.
  - Keys the record has and O(inputs) does not are ignored, so dropping an input never forces a rerun.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Comparing only reads. Writing reports whether the record would change and writes nothing.
  diff_mode:
    support: full
    details: With O(write=true), the record before and after.
  platform:
    platforms: posix
options:
  path:
    description:
      - The record file. Its directory must exist when O(write=true).
    type: path
    required: true
  inputs:
    description:
      - The inputs of the step. Values must be JSON types; they are compared as JSON.
    type: dict
    required: true
  trees:
    description:
      - Directories on the host whose tree hash is added to the inputs, as a mapping of input key to directory. A directory that does
        not exist hashes to an empty string.
    type: dict
    default: {}
  write:
    description:
      - V(false) compares only. V(true) writes O(inputs) (with O(trees) hashed) as the record.
    type: bool
    default: false
  owner:
    description: Owner of the record file (with O(write=true)).
    type: str
    default: root
  group:
    description: Group of the record file (with O(write=true)).
    type: str
    default: root
  mode:
    description: Permissions of the record file, as an octal string (with O(write=true)).
    type: str
    default: "0644"
notes:
  - Needs only the Python standard library on the managed host.
  - A record that is not a JSON object counts as no record (with a warning), so the step runs again.
"""

EXAMPLES = r"""
- name: Compare the inputs of a build with the record of the last successful one
  pdserve.sglang.inputs_record:
    path: /opt/sglang/build/flash-attention/pdserve-build-inputs.json
    inputs:
      source: {repo: "{{ repo }}", commit: "{{ checkout.after }}"}
      arch_list: "12.0"
      torch: "2.14.1"
    trees:
      tree_sha256: /opt/src/patches
  register: build_inputs

- name: Build
  ansible.builtin.command: /opt/sglang/build/flash-attention/build.sh
  when: build_inputs.differs | length > 0
  changed_when: true

- name: Record the inputs of the build that just succeeded
  pdserve.sglang.inputs_record:
    path: /opt/sglang/build/flash-attention/pdserve-build-inputs.json
    inputs: "{{ build_inputs.current }}"
    write: true
    owner: sglang
    group: sglang
  when: build_inputs.differs | length > 0
"""

RETURN = r"""
current:
  description: The inputs as compared and recorded (O(inputs) with the O(trees) hashes added).
  returned: always
  type: dict
  sample: {arch_list: "12.0", tree_sha256: 0c5d...}
recorded:
  description: The record's inputs, C(null) when there is no record.
  returned: always
  type: dict
record_found:
  description: Whether a record was found.
  returned: always
  type: bool
differs:
  description: Keys of RV(current) whose value differs from the record (every key when there is no record), sorted.
  returned: always
  type: list
  elements: str
  sample: [arch_list]
message:
  description: Why the step runs or is skipped, for the task output.
  returned: always
  type: str
  sample: "inputs changed (arch_list): running"
"""

import grp
import os
import pwd
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.install.inputs_record import (
    differs,
    explain,
    normalize,
    read_record,
    render,
    tree_hash,
)


def argument_spec():
    return dict(
        path=dict(type="path", required=True),
        inputs=dict(type="dict", required=True),
        trees=dict(type="dict", default={}),
        write=dict(type="bool", default=False),
        owner=dict(type="str", default="root"),
        group=dict(type="str", default="root"),
        mode=dict(type="str", default="0644"),
    )


def _ids(module, owner, group):
    """(uid, gid), or None when either does not exist yet (possible in check mode only)."""
    try:
        return pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid
    except KeyError:
        if not module.check_mode:
            module.fail_json(msg="cannot write the record: owner %s or group %s does not exist" % (owner, group))
        return None


def _write(module, path, text, ids, mode):
    """Write the record when its text or attributes differ; True when it did (or would)."""
    try:
        with open(path, "rb") as handle:
            before = handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        before = None
    if before == text and ids is not None:
        info = os.stat(path)
        if (info.st_uid, info.st_gid) == ids and stat.S_IMODE(info.st_mode) == mode:
            return False, before
    if module.check_mode:
        return True, before
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        module.fail_json(msg="cannot write the record %s: directory %s does not exist" % (path, directory))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".pdserve-")
    with os.fdopen(fd, "wb") as handle:
        handle.write(text.encode("utf-8"))
    module.atomic_move(tmp, path)
    # atomic_move keeps the attributes of the file it replaces: set ours after it.
    os.chmod(path, mode)
    os.chown(path, ids[0], ids[1])
    return True, before


def run_module():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    path = params["path"]
    if not os.path.isabs(path):
        module.fail_json(msg="path %s is not absolute" % path)
    try:
        mode = int(params["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode %r is not an octal string such as '0644'" % params["mode"])

    try:
        current = normalize(params["inputs"])
    except (TypeError, ValueError) as exc:
        module.fail_json(msg="inputs must hold JSON values only: %s" % exc)
    for key, directory in sorted(params["trees"].items()):
        current[key] = tree_hash(directory) if os.path.isdir(directory) else ""

    try:
        recorded = read_record(path)
    except ValueError as exc:
        module.warn("%s; it counts as no record" % exc)
        recorded = None
    keys = differs(current, recorded)
    result = dict(changed=False, current=current, recorded=recorded, record_found=recorded is not None,
                  differs=keys, message=explain(recorded, keys))

    if params["write"]:
        ids = _ids(module, params["owner"], params["group"])
        text = render(current)
        changed, before = _write(module, path, text, ids, mode)
        result["changed"] = changed
        if changed:
            result["message"] = "record written"
            if module._diff:
                result["diff"] = {"before_header": path, "after_header": path, "before": before or "", "after": text}
        else:
            result["message"] = "record unchanged"
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
