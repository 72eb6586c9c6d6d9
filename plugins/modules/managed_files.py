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
  - pdserve.sglang.service_account_check
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
  directories:
    description:
      - Directories to have, created (missing parents as C(mkdir -p) makes them) or given their owner, group and mode
        before O(files) are written; one that changes counts as a change, listed in RV(changed_directories).
    type: list
    elements: dict
    default: []
    version_added: 0.4.0
    suboptions:
      path:
        description: Absolute path of the directory.
        type: path
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
        description: Permissions, as an octal string such as C("0755").
        type: str
        default: "0755"
  units:
    description:
      - systemd units to read, changing nothing (one C(systemctl show)); those not both enabled and running are
        returned in RV(units_to_start), so a caller starts only those instead of a task per unit.
    type: list
    elements: str
    default: []
    version_added: 0.4.0
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
  daemon_reload:
    description:
      - After a write that changed or removed a file, run C(systemctl daemon-reload) once, in the same round trip, so
        systemd sees the new units before anything starts or restarts them.
    type: bool
    default: false
    version_added: 0.4.0
  start:
    description:
      - systemd units to enable and start after the write (and the reload), in the same round trip (one
        C(systemctl enable --now)); usually the RV(units_to_start) of a check-mode call that planned the write. Nothing
        is started in check mode.
      - A unit that was not running is started here and is not among RV(restarts_left), as it runs its new files already.
        One that was running is only enabled, and stays among them.
    type: list
    elements: str
    default: []
    version_added: 0.4.0
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
      credential_files:
        description:
          - Its credential files (of O(files), loaded with C(LoadCredential=)); a change restarts it with the reason
            C(credential <file name>). Their content never shows in the diff, before or after.
        type: list
        elements: path
        default: []
        version_added: 0.4.0
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
changed_directories:
  description: Directories of O(directories) that were (or in check mode would be) created or given their attributes.
  returned: always
  type: list
  elements: str
daemon_reloaded:
  description: Whether this call ran C(systemctl daemon-reload) (O(daemon_reload)).
  returned: always
  type: bool
  version_added: 0.4.0
started:
  description: The O(start) units that were not running and that this call started (each of O(start) is enabled).
  returned: always
  type: list
  elements: str
  version_added: 0.4.0
restarts_left:
  description: The RV(restarts) whose unit this call did not start (O(start)), which the caller still restarts.
  returned: always
  type: list
  elements: dict
  version_added: 0.4.0
account_to_fix:
  description: Whether P(pdserve.sglang.service_account#module) would change the O(account); V(null) without one.
  returned: always
  type: bool
  version_added: 0.4.0
units_to_start:
  description: The O(units) that are not both enabled and running (read before anything is written).
  returned: always
  type: list
  elements: str
  sample: [sglang-decode-0.service]
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

from ansible_collections.pdserve.sglang.plugins.module_utils.common_args import account_argument_spec
from ansible_collections.pdserve.sglang.plugins.module_utils.host import file_state
from ansible_collections.pdserve.sglang.plugins.module_utils.host import service_account
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import host_state
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.restart_plan import unit_reasons


HIDDEN = "(a credential: its content is not shown)\n"


def _mask(text, secrets):
    for secret in secrets:
        if secret:
            text = text.replace(secret, "********")
    return text


def _write(module, item):
    directory = os.path.dirname(item["path"])
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".pdserve-")
    with os.fdopen(fd, "wb") as handle:
        handle.write(item["content"].encode("utf-8"))
    module.atomic_move(tmp, item["path"])
    # atomic_move gives the file the old file's (or the umask's) attributes: set ours afterwards.
    os.chmod(item["path"], int(item["mode"], 8))
    os.chown(item["path"], pwd.getpwnam(item["owner"]).pw_uid, grp.getgrnam(item["group"]).gr_gid)


def _unit_states(module, units):
    systemctl = module.get_bin_path("systemctl")
    if not units or not systemctl:
        return {}
    rc, out, dummy = module.run_command(
        [systemctl, "show", "--property=Id,LoadState,ActiveState,UnitFileState", "--"] + list(units))
    return host_state.unit_states(out) if rc == 0 else {}


def _systemctl(module, reload, start, diffs, secrets):
    """daemon-reload, then enable and start ``start``: one round trip instead of a task each."""
    systemctl = module.get_bin_path("systemctl", required=True)
    steps = ([[systemctl, "daemon-reload"]] if reload else []) + ([[systemctl, "enable", "--now", "--"] + start] if start else [])
    for argv in steps:
        rc, out, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg="%s failed (rc=%s): %s" % (" ".join(argv[1:]), rc, _mask((err or out).strip(), secrets)),
                             diff=diffs if module._diff else [])


def _directory_line(info):
    return "directory %s:%s %04o\n" % (_user_name(info.st_uid), _group_name(info.st_gid), stat.S_IMODE(info.st_mode))


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid):
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _directories(module, wanted, diffs):
    """Create the missing directories and set the attributes that differ; returns the paths that changed."""
    changed = []
    for item in wanted:
        try:
            int(item["mode"], 8)
        except ValueError:
            module.fail_json(msg="%s: mode %r is not an octal string such as '0755'" % (item["path"], item["mode"]))
        try:
            info = os.stat(item["path"])
        except OSError:
            info = None
        if info is not None and not stat.S_ISDIR(info.st_mode):
            module.fail_json(msg="%s exists and is not a directory" % item["path"])
        if info is not None:
            try:
                if not file_state.attributes_differ(item["path"], item["owner"], item["group"], item["mode"]):
                    continue
            except KeyError:
                pass  # an owner or group that does not exist yet: reported below (check mode) or refused (writing)
        changed.append(item["path"])
        diffs.append({"before_header": item["path"], "after_header": item["path"],
                      "before": _directory_line(info) if info is not None else "",
                      "after": "directory %s:%s %s\n" % (item["owner"], item["group"], item["mode"])})
        if module.check_mode:
            continue
        try:
            uid, gid = pwd.getpwnam(item["owner"]).pw_uid, grp.getgrnam(item["group"]).gr_gid
        except KeyError as exc:
            module.fail_json(msg="cannot create %s: %s does not exist" % (item["path"], exc))
        if info is None:
            os.makedirs(item["path"], int(item["mode"], 8))
        os.chmod(item["path"], int(item["mode"], 8))
        os.chown(item["path"], uid, gid)
    return changed


def _stale(prunes, wanted):
    found = []
    for prune in prunes:
        if not os.path.isdir(prune["directory"]):
            continue
        for name in sorted(os.listdir(prune["directory"])):
            path = os.path.join(prune["directory"], name)
            if path in wanted or path in found or not fnmatch.fnmatch(name, prune["pattern"]) or not os.path.isfile(path):
                continue
            if prune["marker"] in (file_state.read_text(path) or "").splitlines():
                found.append(path)
    return found


def _restarts(services, changed_paths, texts, planned):
    """The services with a changed file, each with its reasons (secrets never appear: only names are read)."""
    changed = set(changed_paths)
    out = []
    for service in services:
        paths = [service.get("unit_path"), service.get("env_file")]
        credentials = [p for p in service.get("credential_files") or [] if p in changed]
        if not credentials and not any(p in changed for p in paths if p):
            continue
        unit_before, unit_after = texts.get(service.get("unit_path"), (None, None))
        env_before, env_after = texts.get(service.get("env_file"), (None, None))
        attributes = [what for what, path in (("unit", paths[0]), ("env", paths[1]))
                      if path in changed and texts.get(path, (None, None))[0] == texts.get(path, (None, None))[1]]
        reasons = []
        if any(p in changed for p in paths if p):
            reasons = unit_reasons(unit_before, unit_after, env_before, env_after, attributes)
        # Only the file's name: its content is a secret.
        reasons += ["credential %s" % os.path.basename(p) for p in credentials]
        out.append({"unit": service["unit"], "planned": bool(planned), "reasons": reasons})
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
            directories=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path", required=True),
                owner=dict(type="str", default="root"),
                group=dict(type="str", default="root"),
                mode=dict(type="str", default="0755"),
            )),
            units=dict(type="list", elements="str", default=[]),
            prune=dict(type="list", elements="dict", default=[], options=dict(
                directory=dict(type="path", required=True),
                pattern=dict(type="str", required=True),
                marker=dict(type="str", required=True),
            )),
            remove_stale=dict(type="bool", default=True),
            daemon_reload=dict(type="bool", default=False),
            start=dict(type="list", elements="str", default=[]),
            secret_values=dict(type="list", elements="str", default=[], no_log=True),
            services=dict(type="list", elements="dict", default=[], options=dict(
                unit=dict(type="str", required=True),
                unit_path=dict(type="path"),
                env_file=dict(type="path"),
                credential_files=dict(type="list", elements="path", default=[]),
            )),
            **account_argument_spec()
        ),
        supports_check_mode=True,
    )
    files = module.params["files"]
    secrets = module.params["secret_values"]
    # Read before anything is written: what the caller must start afterwards.
    units_to_start = host_state.units_to_start(module.params["units"], _unit_states(module, module.params["units"]))
    account_to_fix = service_account.differs(module.params["account"])
    diffs = []
    changed_directories = _directories(module, module.params["directories"], diffs)
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

    credentials = set(p for service in module.params["services"] for p in service.get("credential_files") or [])
    changed_paths = []
    texts = {}
    for item in files:
        before = file_state.read_text(item["path"])
        texts[item["path"]] = (before, item["content"])
        if (item["path"] not in pending and before == item["content"]
                and not file_state.attributes_differ(item["path"], item["owner"], item["group"], item["mode"])):
            continue
        changed_paths.append(item["path"])
        if before != item["content"] and item["path"] in credentials:
            # A key being replaced is not among secret_values any more: a credential's content is never shown.
            diffs.append({"before_header": item["path"], "after_header": item["path"],
                          "before": HIDDEN if before is not None else "", "after": HIDDEN})
        elif before != item["content"]:
            diffs.append({"before_header": item["path"], "after_header": item["path"],
                          "before": _mask(before or "", secrets), "after": _mask(item["content"], secrets)})
        if not module.check_mode:
            _write(module, item)

    stale = _stale(module.params["prune"], set(item["path"] for item in files))
    removed = stale if module.params["remove_stale"] else []
    for path in removed:
        diffs.append({"before_header": path, "after_header": path, "before": _mask(file_state.read_text(path) or "", secrets), "after": ""})
        if not module.check_mode:
            os.remove(path)

    restarts = _restarts(module.params["services"], changed_paths, texts, module.check_mode)
    reloaded = bool(module.params["daemon_reload"] and (changed_paths or removed) and not module.check_mode)
    to_start = [] if module.check_mode else list(module.params["start"])
    # Only a unit that was not running starts with its new files; one that ran is enabled here and restarted by the caller.
    before = _unit_states(module, to_start)
    started = [u for u in to_start if ((before.get(u) or before.get(u + ".service") or {}).get("active")
                                       not in ("active", "activating", "reloading"))]
    if reloaded or to_start:
        _systemctl(module, reloaded, to_start, diffs, secrets)
    result = dict(changed=bool(changed_paths or removed or changed_directories or to_start), changed_paths=changed_paths,
                  stale=stale, removed=removed, restarts=restarts, changed_directories=changed_directories,
                  units_to_start=units_to_start, account_to_fix=account_to_fix, daemon_reloaded=reloaded,
                  started=started, restarts_left=[r for r in restarts if r["unit"] not in started])
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
