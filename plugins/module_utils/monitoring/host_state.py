# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a monitoring host already has, judged from what it shows: packages at the wanted versions, its services
enabled and running, directories with the wanted owner and mode, apt source lines. Pure functions: the module
pdserve.sglang.monitoring_facts reads the host once and calls them, so an unchanged host skips the installs."""

import fnmatch
import os
import re

# The packages that bring a service: from a set of .deb files only the wanted ones are installed (the others are
# the dependencies, always installed with them).
SERVICE_PACKAGES = re.compile(
    r"^(prometheus|prometheus-node-exporter|prometheus-alertmanager|datacenter-gpu-manager-[a-z0-9-]+)_")
# systemctl's UnitFileState values under which `systemctl enable` has nothing to do.
ENABLED_STATES = ("enabled", "enabled-runtime", "static", "alias", "indirect", "generated", "linked", "linked-runtime")


def installed_packages(status_text: str) -> dict:
    """{package: version} of the installed packages in the text of /var/lib/dpkg/status."""
    found = {}
    for stanza in re.split(r"\n\s*\n", status_text or ""):
        fields = {}
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
        if fields.get("Package") and fields.get("Status", "").endswith(" installed"):
            found[fields["Package"]] = fields.get("Version", "")
    return found


def _strip_epoch(version):
    return version.split(":", 1)[1] if re.match(r"^[0-9]+:", version or "") else (version or "")


def deb_spec(path: str) -> str:
    """``name=version`` of a .deb file named the Debian way (``name_version_arch.deb``, ``%3a`` for the epoch)."""
    parts = os.path.basename(str(path)).split("_")
    if len(parts) < 3 or not parts[-1].endswith(".deb"):
        return parts[0].split(".deb")[0]
    return "%s=%s" % (parts[0], parts[1].replace("%3a", ":").replace("%3A", ":"))


def deb_selection(deb_files: list, wanted: list) -> list:
    """The .deb files to install together: every dependency, and of the service packages only the wanted ones."""
    names = set(str(w).split("=", 1)[0] for w in wanted or [])
    out = []
    for path in deb_files or []:
        base = os.path.basename(str(path))
        if not SERVICE_PACKAGES.match(base) or base.split("_", 1)[0] in names:
            out.append(path)
    return out


def missing_packages(specs: list, installed: dict) -> list:
    """The specs (``name``, ``name=version``, the version may hold ``*``) that are not installed at that version."""
    out = []
    for spec in specs or []:
        name, _sep, version = str(spec).partition("=")
        have = installed.get(name)
        if have is None or (version and not fnmatch.fnmatchcase(_strip_epoch(have), _strip_epoch(version))):
            out.append(str(spec))
    return out


def unit_states(show_text: str) -> dict:
    """{unit: {load, active, file_state}} from ``systemctl show -p Id,LoadState,ActiveState,UnitFileState U...``."""
    states = {}
    for block in re.split(r"\n\s*\n", show_text or ""):
        fields = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if fields.get("Id"):
            states[fields["Id"]] = {"load": fields.get("LoadState", ""), "active": fields.get("ActiveState", ""),
                                    "file_state": fields.get("UnitFileState", "")}
    return states


def units_to_start(units: list, states: dict) -> list:
    """The units that are not both enabled and running (an unknown unit included: its start says why)."""
    out = []
    for unit in units or []:
        state = states.get(unit) or states.get(unit + ".service") or {}
        if state.get("active") != "active" or state.get("file_state") not in ENABLED_STATES:
            out.append(unit)
    return out


def directory_fixes(wanted: list, observed: dict) -> list:
    """The paths of ``wanted`` [{path, owner, group, mode}] that are missing or have another owner, group or mode.
    ``observed``: {path: {owner, group, mode}} of the directories that exist."""
    out = []
    for item in wanted or []:
        have = observed.get(item["path"])
        if have is None or have.get("owner") != item.get("owner", "root") or \
                have.get("group") != item.get("group", "root") or \
                int(str(have.get("mode", "0")), 8) != int(str(item.get("mode", "0755")), 8):
            out.append(item["path"])
    return out


def lines_missing(wanted: list, read) -> list:
    """The paths of ``wanted`` [{path, line}] whose file does not hold that line (``read(path)``: text or None)."""
    out = []
    for item in wanted or []:
        text = read(item["path"])
        if text is None or str(item["line"]).strip() not in [l.strip() for l in text.splitlines()]:
            out.append(item["path"])
    return out


def package_specs(wanted: list, source: str, deb_files: list) -> list:
    """What must be installed for ``wanted``: the names themselves from apt, or ``name=version`` of every .deb file
    the install takes (the wanted service packages and all dependencies) from .deb files."""
    if source != "deb_files":
        return [str(w) for w in wanted or []]
    return [deb_spec(path) for path in deb_selection(deb_files, wanted)]
