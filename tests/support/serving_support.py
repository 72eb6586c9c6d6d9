# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the tests share about the serving model: the topology's per-host defaults, read from their one owner
(roles/sglang_defaults/defaults/main.yml), never copied."""

import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def shared_defaults():
    """The defaults of pdserve.sglang.sglang_defaults, as the roles see them."""
    with open(ROOT / "roles" / "sglang_defaults" / "defaults" / "main.yml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


TOPOLOGY_DEFAULTS = shared_defaults()["sglang_topology_defaults"]
