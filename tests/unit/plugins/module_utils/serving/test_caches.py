# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Per-instance compile caches (module_utils/serving/caches.py), as the units carry them and the preflight judges them."""

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.serving import caches as C
from ansible_collections.pdserve.sglang.plugins.module_utils.serving import units as U
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.unit_values import settings_problems
from serving_support import DECODE, MODEL, PREFILL, instance, role_defaults  # noqa: E402  pylint: disable=wrong-import-position
from .test_units import env_pairs, sections, server_settings, value

VENV = "/opt/sglang/venvs/sglang-0.5.23"


def test_the_key_follows_version_and_venv():
    key = C.cache_key("0.5.23", VENV)
    assert key.startswith("sglang-0.5.23-") and key.endswith(C.venv_digest(VENV))
    assert C.cache_key("0.5.24", VENV) != key and C.cache_key("0.5.23", "/opt/sglang/venv") != key
    assert C.cache_key("git v0.5.23", VENV).startswith("sglang-git_v0.5.23-")
    assert C.cache_key("", VENV).startswith("sglang-external-")
    assert C.venv_digest(VENV + "/") == C.venv_digest(VENV)  # one venv, one digest


def _settings(**extra):
    # the role's default, resolved through the shared one (sglang_defaults): below the service home
    d = role_defaults("sglang_server")
    root = d["sglang_server_cache_root"].replace("{{ sglang_service_home }}", d["sglang_server_home"])
    settings = server_settings(cache_root=root,
                               fingerprint={"sglang": "0.5.23", "venv": VENV, "model": "m"})
    settings.update(extra)
    return settings


def test_each_instance_gets_its_own_directories_in_its_env_file():
    prefill = U.server_unit(instance(PREFILL, "prefill"), MODEL, _settings())
    decode = U.server_unit(instance(DECODE, "decode"), MODEL, _settings())
    envs = [dict(env_pairs(u["env_text"])) for u in (prefill, decode)]
    base = "/var/lib/sglang/cache/%s/" % C.cache_key("0.5.23", VENV)
    assert envs[0]["SGLANG_CACHE_DIR"] == base + "prefill" and envs[1]["SGLANG_CACHE_DIR"] == base + "decode"
    for env in envs:
        assert env["SGLANG_JIT_CACHE_DIR"] == env["SGLANG_CACHE_DIR"] + "/jit"  # does not follow SGLANG_CACHE_DIR
        assert env["SGLANG_DG_CACHE_DIR"] == env["SGLANG_CACHE_DIR"] + "/deep_gemm"
    assert [d["path"] for d in prefill["directories"]] == ["/var/lib/sglang/cache", base.rstrip("/"), base + "prefill"]
    assert all(d["owner"] == "sglang" and d["mode"] == "0750" for d in prefill["directories"])
    # below the home: the home's ReadWritePaths= covers it
    assert value(sections(prefill["unit_text"])["Service"], "ReadWritePaths") == "/var/lib/sglang"


def test_a_root_outside_the_home_is_made_writable():
    unit = U.server_unit(instance(PREFILL, "prefill"), MODEL, _settings(cache_root="/srv/sglang-cache"))
    paths = [v for k, v in sections(unit["unit_text"])["Service"] if k == "ReadWritePaths"]
    assert paths == ["/var/lib/sglang", "/srv/sglang-cache"]


def test_the_collection_value_wins_over_an_env():
    """The topology refuses an instance env that sets one (test_instances); rendered anyway, ours is the one kept.
    A shared env that sets one is refused by the renderer itself."""
    inst = dict(instance(PREFILL, "prefill"), env={"SGLANG_CACHE_DIR": "/tmp/shared"})
    env = dict(env_pairs(U.server_unit(inst, MODEL, _settings())["env_text"]))
    assert env["SGLANG_CACHE_DIR"].endswith("/prefill")
    with pytest.raises(U.UnitValueError, match="SGLANG_JIT_CACHE_DIR"):
        U.server_unit(instance(PREFILL, "prefill"), MODEL, _settings(env={"SGLANG_JIT_CACHE_DIR": "/x"}))


@pytest.mark.parametrize("root", ["relative/cache", "/", "/cache", "/var/lib/sglang/../../etc", "/var/lib/sglang/cache/",
                                  "/var/lib/with space", "/var/lib/$HOME", "/var/lib/sglang", "/var/lib", 7, "",
                                  "/var/lib/a\nb"])
def test_a_hostile_cache_root_is_refused_before_anything_changes(root):
    found = [f for f in settings_problems(_settings(cache_root=root), "sglang_server_") if f[0] == "sglang_server_cache_root"]
    if root == "":
        assert found == []  # empty: no per-instance caches (SGLang's defaults)
    else:
        assert len(found) == 1, found


def test_the_default_root_is_accepted():
    assert settings_problems(_settings(), "sglang_server_") == []


def test_a_shared_env_that_sets_a_cache_directory_is_refused():
    found = settings_problems(_settings(env={"SGLANG_CACHE_DIR": "/srv/c", "OTHER": "1"}), "sglang_server_")
    assert [f[0] for f in found] == ["sglang_server_env.SGLANG_CACHE_DIR"]
    assert "27604" in found[0][1]


def test_caches_of_removed_venvs():
    names = [C.cache_key("0.5.23", VENV), C.cache_key("0.5.24", VENV), C.cache_key("0.5.24", "/opt/sglang/venvs/b"),
             "hand-made", "sglang-0.5.23-" + C.venv_digest(VENV) + "x"]
    assert C.caches_of_venvs("/c", names, [VENV]) == sorted("/c/" + n for n in names[:2])
    assert C.caches_of_venvs("/c", names, []) == []
