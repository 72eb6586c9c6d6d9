#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: monitoring_facts
short_description: Read in one round trip what a monitoring host already has, changing nothing
version_added: 0.4.0
description:
  - Reads the installed packages (C(/var/lib/dpkg/status)), the state of the given systemd units (one C(systemctl show)),
    the owner, group and mode of the given directories, whether apt source files hold the given lines and whether the
    given paths exist.
  - Says what is missing, so that on a host where everything is in place the monitoring role skips its installs,
    directories and service starts in one check instead of a task result each.
  - With O(judge) it also judges the host's part of the monitoring layout as P(pdserve.sglang.monitoring_preflight#module)
    does, in the same round trip, and fails listing every problem before it returns anything.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  packages:
    description:
      - Packages that must be installed, as C(name) or C(name=version) (the version may hold C(*); an epoch is ignored).
    type: list
    elements: str
    default: []
  units:
    description: systemd units that must be enabled and running.
    type: list
    elements: str
    default: []
  directories:
    description: Directories that must exist with this owner, group and mode.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
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
        description: Permissions, an octal string.
        type: str
        default: "0755"
  lines:
    description: Files (apt sources) that must hold a line.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file.
        type: path
        required: true
      line:
        description: The line, compared without surrounding blanks.
        type: str
        required: true
  paths:
    description: Paths that must exist (for example a signing key).
    type: list
    elements: path
    default: []
  files:
    description:
      - Files as M(pdserve.sglang.managed_files) takes them; those it would write are returned in RV(files_to_write),
        so the role plans its configuration files in this same round trip.
    type: list
    elements: dict
    default: []
    version_added: 0.4.0
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
  judge:
    description:
      - The options of P(pdserve.sglang.monitoring_preflight#module) (without C(fail_on_problems)); the module fails on
        any problem, as that module does. Omit to judge nothing.
    type: dict
    version_added: 0.4.0
    suboptions:
      host:
        description: The inventory name of the host being judged.
        type: str
        required: true
      topology:
        description: The result of P(pdserve.sglang.serving_topology#filter).
        type: dict
        required: true
      settings:
        description: The monitoring settings of the inventory (filter C(pdserve.sglang.monitoring_settings)).
        type: dict
        required: true
      options:
        description: The role's install choices and own units and users, as monitoring_preflight takes them.
        type: dict
        default: {}
      rules:
        description: The alert rule parameters to check on a monitoring host.
        type: dict
      check_ports:
        description: Look for processes that are not the role's units holding the monitoring ports.
        type: bool
        default: true
  secret_values:
    description: Strings in O(files) (a password hash) that no log of this module's arguments may show.
    type: list
    elements: str
    default: []
    version_added: 0.4.0
notes:
  - Needs only the Python standard library on the managed host.
seealso:
  - module: pdserve.sglang.monitoring_preflight
"""

EXAMPLES = r"""
- name: Read what this host has
  pdserve.sglang.monitoring_facts:
    packages: [prometheus, prometheus-node-exporter]
    units: [prometheus.service, prometheus-node-exporter.service]
    directories:
      - {path: /etc/prometheus/rules, group: prometheus, mode: "0750"}
  register: __monitoring_facts
"""

RETURN = r"""
problems:
  description: Every problem O(judge) found, each C({host, variable, message, fix}); the module then fails.
  returned: when O(judge) finds a problem
  type: list
  elements: dict
  version_added: 0.4.0
problem_lines:
  description: The problems as readable lines.
  returned: when O(judge) finds a problem
  type: list
  elements: str
  version_added: 0.4.0
packages:
  description: The installed version of each package asked for (null when not installed).
  returned: always
  type: dict
  sample: {"prometheus": "2.42.0+ds-5+b5"}
missing_packages:
  description: The specs of O(packages) not installed at their version.
  returned: always
  type: list
  elements: str
missing_names:
  description: The package names of RV(missing_packages).
  returned: always
  type: list
  elements: str
units_to_start:
  description: The units of O(units) that are not both enabled and running.
  returned: always
  type: list
  elements: str
directories_to_fix:
  description: The directories of O(directories) that are missing or have another owner, group or mode.
  returned: always
  type: list
  elements: str
lines_missing:
  description: The files of O(lines) that do not hold their line.
  returned: always
  type: list
  elements: str
paths_missing:
  description: The paths of O(paths) that do not exist.
  returned: always
  type: list
  elements: str
files_to_write:
  description:
    - The paths of O(files) whose content, owner, group or mode differs, or whose owner, group or directory does not
      exist yet (what M(pdserve.sglang.managed_files) would write).
  returned: always
  type: list
  elements: str
"""

import grp
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.host import file_state
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import host_judge
from ansible_collections.pdserve.sglang.plugins.module_utils.monitoring import host_state
from ansible_collections.pdserve.sglang.plugins.module_utils.problems import line, report

DPKG_STATUS = "/var/lib/dpkg/status"


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def _name(lookup, ident, attr):
    try:
        return getattr(lookup(ident), attr)
    except KeyError:
        return str(ident)


def _directories(wanted):
    observed = {}
    for item in wanted:
        try:
            info = os.stat(item["path"])
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            observed[item["path"]] = {"owner": _name(pwd.getpwuid, info.st_uid, "pw_name"),
                                      "group": _name(grp.getgrgid, info.st_gid, "gr_name"),
                                      "mode": "%04o" % stat.S_IMODE(info.st_mode)}
    return observed


def _unit_states(module, units):
    systemctl = module.get_bin_path("systemctl")
    if not units or not systemctl:
        return {}
    rc, out, dummy = module.run_command(
        [systemctl, "show", "--property=Id,LoadState,ActiveState,UnitFileState", "--"] + list(units))
    return host_state.unit_states(out) if rc == 0 else {}


def run_module():
    module = AnsibleModule(argument_spec=dict(
        packages=dict(type="list", elements="str", default=[]),
        units=dict(type="list", elements="str", default=[]),
        directories=dict(type="list", elements="dict", default=[], options=dict(
            path=dict(type="path", required=True),
            owner=dict(type="str", default="root"),
            group=dict(type="str", default="root"),
            mode=dict(type="str", default="0755"),
        )),
        lines=dict(type="list", elements="dict", default=[], options=dict(
            path=dict(type="path", required=True),
            line=dict(type="str", required=True),
        )),
        paths=dict(type="list", elements="path", default=[]),
        files=dict(type="list", elements="dict", default=[], options=dict(
            path=dict(type="path", required=True),
            content=dict(type="str", required=True),
            owner=dict(type="str", default="root"),
            group=dict(type="str", default="root"),
            mode=dict(type="str", default="0644"),
        )),
        secret_values=dict(type="list", elements="str", default=[], no_log=True),
        judge=dict(type="dict", options=host_judge.argument_spec()),
    ), supports_check_mode=True)
    p = module.params
    if p["judge"]:
        error = host_judge.topology_error(p["judge"]["topology"])
        if error:
            module.fail_json(msg=error)
        problems, _ports = host_judge.judge_host(p["judge"])
        if problems:
            module.fail_json(msg=report(problems, "monitoring preflight"), problems=problems,
                             problem_lines=[line(item) for item in problems])
    installed = host_state.installed_packages(_read(DPKG_STATUS) or "") if p["packages"] else {}
    missing = host_state.missing_packages(p["packages"], installed)
    names = [spec.split("=", 1)[0] for spec in p["packages"]]
    module.exit_json(
        changed=False,
        packages=dict((name, installed.get(name)) for name in names),
        missing_packages=missing,
        missing_names=[spec.split("=", 1)[0] for spec in missing],
        units_to_start=host_state.units_to_start(p["units"], _unit_states(module, p["units"])),
        directories_to_fix=host_state.directory_fixes(p["directories"], _directories(p["directories"])),
        lines_missing=host_state.lines_missing(p["lines"], _read),
        paths_missing=[path for path in p["paths"] if not os.path.exists(path)],
        files_to_write=file_state.files_to_write(p["files"]),
    )


def main():
    run_module()


if __name__ == "__main__":
    main()
