# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a change of each monitoring configuration file means: the check it must pass before it is written and the
handlers it notifies. The role lays the files out ({path, content, owner, group, mode, kind}); every file of one
entry point is then planned, checked and written in one pdserve.sglang.managed_files call each."""

from typing import List

from ansible_collections.pdserve.sglang.plugins.module_utils.secrets import nested_secret_values

# kind: (the handlers a change notifies, the command that must accept the new text, %s being its path)
KINDS = {
    "prometheus_start": (["monitoring restart prometheus"], None),
    "prometheus_config": (["monitoring reload prometheus"], ["promtool", "check", "config", "%s"]),
    "prometheus_rules": (["monitoring reload prometheus"], ["promtool", "check", "rules", "%s"]),
    "alertmanager_start": (["monitoring restart alertmanager"], None),
    "alertmanager_config": (["monitoring reload alertmanager"], ["amtool", "check-config", "%s"]),
    "grafana_provisioning": (["monitoring restart grafana"], None),
    "grafana_unit": (["monitoring daemon-reload", "monitoring restart grafana"], None),
    # Grafana rescans its dashboard files itself (updateIntervalSeconds).
    "dashboard": ([], None),
    "node_exporter": (["monitoring restart node exporter"], None),
    "gpu_exporter": (["monitoring restart gpu exporter"], None),
    "gpu_exporter_unit": (["monitoring daemon-reload", "monitoring restart gpu exporter"], None),
}
MANAGED_KEYS = ("path", "content", "owner", "group", "mode")


class FilesError(ValueError):
    """A file without a known kind: a mistake of the role, not of the inventory."""


def _kind(item):
    kind = item.get("kind")
    if kind not in KINDS:
        raise FilesError("%s: kind %r is not one of %s" % (item.get("path"), kind, ", ".join(sorted(KINDS))))
    return KINDS[kind]


def managed(files: list) -> list:
    """The files as pdserve.sglang.managed_files takes them (without the kind)."""
    for item in files:
        _kind(item)
    return [dict((k, item[k]) for k in MANAGED_KEYS if k in item) for item in files]


def checks(files: list, changed_paths: list) -> list:
    """``[{path, content, argv}]``: the changed files that a tool must accept before they are written."""
    changed = set(changed_paths or [])
    out = []
    for item in files:
        argv = _kind(item)[1]
        if argv and item["path"] in changed:
            out.append({"path": item["path"], "content": item["content"], "argv": list(argv)})
    return out


def actions(files: list, changed_paths: list) -> list:
    """The handlers the changed files notify, in order; a restart makes the reload of the same service moot."""
    changed = set(changed_paths or [])
    found = []
    for item in files:
        if item["path"] in changed:
            for action in _kind(item)[0]:
                if action not in found:
                    found.append(action)
    restarted = set(a.replace(" restart ", " ", 1) for a in found if " restart " in a)
    return [a for a in found if not (" reload " in a and a.replace(" reload ", " ", 1) in restarted)]


def secret_values(values: list) -> list:
    """The secrets among the role's settings, for managed_files' secret_values: plain strings, and in nested settings
    (authentication settings ``{password}``, ``{basic_auth: {password}}``, Alertmanager's configuration with its
    receivers, extra scrape configurations) every value under a secret-looking key or URL that carries a token
    (plugins/module_utils/secrets.py)."""
    found: List[str] = []
    for value in values or []:
        if isinstance(value, (dict, list, tuple)):
            found.extend(v for v in nested_secret_values(value) if v not in found)
        elif value and str(value) not in found:
            found.append(str(value))
    return found
