# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the tests share about the serving model: the topology's per-host defaults, read from their one owner
(roles/sglang_defaults/defaults/main.yml), never copied."""

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def shared_defaults():
    """The defaults of pdserve.sglang.sglang_defaults, as the roles see them."""
    with open(ROOT / "roles" / "sglang_defaults" / "defaults" / "main.yml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


TOPOLOGY_DEFAULTS = shared_defaults()["sglang_topology_defaults"]
_NAME_ONLY = re.compile(r"^\{\{ *([a-z_][a-z0-9_]*) *\}\}$")


def role_defaults(role):
    """A role's defaults with the shared ones, as the role sees them: a value that only names another
    ("{{ sglang_service_user }}") is that value, so the tests never restate a default."""
    with open(ROOT / "roles" / role / "defaults" / "main.yml", encoding="utf-8") as handle:
        values = dict(shared_defaults(), **(yaml.safe_load(handle) or {}))
    for _round in range(5):
        for name, value in values.items():
            match = _NAME_ONLY.match(value) if isinstance(value, str) else None
            if match and match.group(1) in values:
                values[name] = values[match.group(1)]
    return values
