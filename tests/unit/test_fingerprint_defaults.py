# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fingerprint the server role writes falls back to sglang_install's own defaults, so a unit says the version the
install layer installs even when the inventory leaves it unset."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _defaults(role):
    with open(ROOT / "roles" / role / "defaults" / "main.yml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_server_fingerprint_defaults_are_the_install_defaults():
    server = _defaults("sglang_server")
    install = _defaults("sglang_install")
    version = server["sglang_server_sglang_version"]
    assert "sglang_install_version | default('%s')" % install["sglang_install_version"] in version
    assert "sglang_install_git_version | default('%s')" % install["sglang_install_git_version"] in version
    assert "sglang_install_source | default('%s')" % install["sglang_install_source"] in version
    revision = server["sglang_server_model_revision"]
    assert "sglang_install_model_revision | default('%s')" % install["sglang_install_model_revision"] in revision
    assert "sglang_install_model_source | default('%s')" % install["sglang_install_model_source"] in revision


def test_router_version_is_the_install_default():
    assert _defaults("sglang_router")["sglang_router_version"] == _defaults("sglang_install")["sglang_install_router_version"]
