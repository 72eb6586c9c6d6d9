#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: managed_files
short_description: Write a set of small text files in one round trip and prune the ones no longer wanted
version_added: 0.4.0
description:
  - Writes every file of O(files) whose content, owner, group or mode differs, atomically, and returns which
    changed, so a handler can restart exactly the services whose unit or environment file changed.
  - With O(prune), also finds files in a directory that carry a marker line and are not in O(files) (for example
    the unit of an instance that left the inventory); they are returned in RV(stale) and removed when
    O(remove_stale=true).
  - One module call for all files, where M(ansible.builtin.copy) in a loop costs a round trip per file.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reports what would change and writes nothing.
  diff_mode:
    support: full
    details: A before/after diff per changed file; O(secret_values) are masked in it.
  platform:
    platforms: posix
options:
  files:
    description:
      - The files to have.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path of the file.
        type: path
        required: true
      content:
        description: The whole content.
        type: str
        required: true
      owner:
        description: Owner (name).
        type: str
        default: root
      group:
        description: Group (name).
        type: str
        default: root
      mode:
        description: Permissions, as an octal string such as C("0640").
        type: str
        default: "0644"
  prune:
    description:
      - Where to look for files this collection wrote earlier that are not in O(files) any more.
    type: list
    elements: dict
    default: []
    suboptions:
      directory:
        description: The directory to look in (not recursive).
        type: path
        required: true
      pattern:
        description: Shell pattern of the file names, for example C(sglang-*.service).
        type: str
        required: true
      marker:
        description: A line the file must contain to count as one of ours.
        type: str
        required: true
  remove_stale:
    description:
      - Remove the files found by O(prune). V(false) only reports them in RV(stale).
    type: bool
    default: true
  secret_values:
    description:
      - Strings (for example an API key inside an environment file) never shown in the result or the diff.
    type: list
    elements: str
    default: []
  services:
    description:
      - The services these files belong to. Each one whose unit or environment file changes is returned in
        RV(restarts) with the reasons, read from the old and new texts (the C(PDSERVE_*) fingerprint lines first,
        then the names of the changed keys and flags, never their values), for the restart handler and the run's
        restart plan (callback C(pdserve.sglang.restart_plan)).
    type: list
    elements: dict
    default: []
    suboptions:
      unit:
        description: The unit name, for example C(sglang-decode-0.service).
        type: str
        required: true
      unit_path:
        description: Its unit file (one of O(files)).
        type: path
      env_file:
        description: Its environment file (one of O(files)).
        type: path
notes:
  - Needs only the Python standard library on the managed host.
"""

EXAMPLES = r"""
- name: Write the units and environment files of the instances, pruning units of removed instances
  pdserve.sglang.managed_files:
    files:
      - {path: /etc/sglang/decode.env, content: "{{ env_text }}", group: sglang, mode: "0640"}
      - {path: /etc/systemd/system/sglang-decode.service, content: "{{ unit_text }}"}
    prune:
      - directory: /etc/systemd/system
        pattern: sglang-*.service
        marker: "# pdserve.sglang.sglang_server mode=decode"
      - directory: /etc/sglang
        pattern: "*.env"
        marker: "# pdserve.sglang.sglang_server mode=decode"
  register: written
"""

RETURN = r"""
changed_paths:
  description: Files that were (or in check mode would be) written.
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/sglang-decode.service]
stale:
  description: Files found by O(prune) that are not in O(files).
  returned: always
  type: list
  elements: str
removed:
  description: Stale files that were (or in check mode would be) removed.
  returned: always
  type: list
  elements: str
restarts:
  description:
    - The O(services) whose unit or environment file changed (or in check mode would change), with why;
      C(planned) is true in check mode.
  returned: always
  type: list
  elements: dict
  sample: [{"unit": "sglang-decode-0.service", "reasons": ["fingerprint sglang 0.5.23 -> 0.5.24"], "planned": false}]
"""

import fnmatch
import grp
import os
import pwd
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.restart_plan import unit_reasons


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def _mask(text, secrets):
    for secret in secrets:
        if secret:
            text = text.replace(secret, "********")
    return text


def _attributes_differ(path, owner, group, mode):
    info = os.stat(path)
    return (info.st_uid != pwd.getpwnam(owner).pw_uid or info.st_gid != grp.getgrnam(group).gr_gid
            or stat.S_IMODE(info.st_mode) != int(mode, 8))


def _write(module, item):
    directory = os.path.dirname(item["path"])
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".pdserve-")
    with os.fdopen(fd, "wb") as handle:
        handle.write(item["content"].encode("utf-8"))
    module.atomic_move(tmp, item["path"])
    # atomic_move gives the file the old file's (or the umask's) attributes: set ours afterwards.
    os.chmod(item["path"], int(item["mode"], 8))
    os.chown(item["path"], pwd.getpwnam(item["owner"]).pw_uid, grp.getgrnam(item["group"]).gr_gid)


def _stale(prunes, wanted):
    found = []
    for prune in prunes:
        if not os.path.isdir(prune["directory"]):
            continue
        for name in sorted(os.listdir(prune["directory"])):
            path = os.path.join(prune["directory"], name)
            if path in wanted or path in found or not fnmatch.fnmatch(name, prune["pattern"]) or not os.path.isfile(path):
                continue
            if prune["marker"] in (_read(path) or "").splitlines():
                found.append(path)
    return found


def _restarts(services, changed_paths, texts, planned):
    """The services with a changed file, each with its reasons (secrets never appear: only names are read)."""
    changed = set(changed_paths)
    out = []
    for service in services:
        paths = [service.get("unit_path"), service.get("env_file")]
        if not any(p in changed for p in paths if p):
            continue
        unit_before, unit_after = texts.get(service.get("unit_path"), (None, None))
        env_before, env_after = texts.get(service.get("env_file"), (None, None))
        attributes = [what for what, path in (("unit", paths[0]), ("env", paths[1]))
                      if path in changed and texts.get(path, (None, None))[0] == texts.get(path, (None, None))[1]]
        out.append({"unit": service["unit"], "planned": bool(planned),
                    "reasons": unit_reasons(unit_before, unit_after, env_before, env_after, attributes)})
    return out


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="list", elements="dict", required=True, options=dict(
                path=dict(type="path", required=True),
                content=dict(type="str", required=True),
                owner=dict(type="str", default="root"),
                group=dict(type="str", default="root"),
                mode=dict(type="str", default="0644"),
            )),
            prune=dict(type="list", elements="dict", default=[], options=dict(
                directory=dict(type="path", required=True),
                pattern=dict(type="str", required=True),
                marker=dict(type="str", required=True),
            )),
            remove_stale=dict(type="bool", default=True),
            secret_values=dict(type="list", elements="str", default=[], no_log=True),
            services=dict(type="list", elements="dict", default=[], options=dict(
                unit=dict(type="str", required=True),
                unit_path=dict(type="path"),
                env_file=dict(type="path"),
            )),
        ),
        supports_check_mode=True,
    )
    files = module.params["files"]
    secrets = module.params["secret_values"]
    # In check mode on a new host the user, group and directories may not exist yet: those files would change.
    pending = set()
    for item in files:
        if not os.path.isabs(item["path"]):
            module.fail_json(msg="path %s is not absolute" % item["path"])
        try:
            int(item["mode"], 8)
        except ValueError:
            module.fail_json(msg="%s: mode %r is not an octal string such as '0644'" % (item["path"], item["mode"]))
        missing = []
        for kind, lookup, name in (("owner", pwd.getpwnam, item["owner"]), ("group", grp.getgrnam, item["group"])):
            try:
                lookup(name)
            except KeyError:
                missing.append("%s %s does not exist" % (kind, name))
        if not os.path.isdir(os.path.dirname(item["path"])):
            missing.append("directory %s does not exist" % os.path.dirname(item["path"]))
        if missing and not module.check_mode:
            module.fail_json(msg="cannot write %s: %s" % (item["path"], ", ".join(missing)))
        if missing:
            pending.add(item["path"])

    changed_paths = []
    diffs = []
    texts = {}
    for item in files:
        before = _read(item["path"])
        texts[item["path"]] = (before, item["content"])
        if (item["path"] not in pending and before == item["content"]
                and not _attributes_differ(item["path"], item["owner"], item["group"], item["mode"])):
            continue
        changed_paths.append(item["path"])
        if before != item["content"]:
            diffs.append({"before_header": item["path"], "after_header": item["path"],
                          "before": _mask(before or "", secrets), "after": _mask(item["content"], secrets)})
        if not module.check_mode:
            _write(module, item)

    stale = _stale(module.params["prune"], set(item["path"] for item in files))
    removed = stale if module.params["remove_stale"] else []
    for path in removed:
        diffs.append({"before_header": path, "after_header": path, "before": _mask(_read(path) or "", secrets), "after": ""})
        if not module.check_mode:
            os.remove(path)

    restarts = _restarts(module.params["services"], changed_paths, texts, module.check_mode)
    result = dict(changed=bool(changed_paths or removed), changed_paths=changed_paths, stale=stale, removed=removed,
                  restarts=restarts)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
