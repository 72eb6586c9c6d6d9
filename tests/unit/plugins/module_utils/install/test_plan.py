# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""sglang_install's decisions and preflight judgement (plugins/module_utils/install/plan.py), and the
install_plan filter over it. Each check is shown to pass on a good host and to fail on a bad one."""

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.pdserve.sglang.plugins.filter import install as F
from ansible_collections.pdserve.sglang.plugins.module_utils.install import plan as P

NIXL_BUILD = {"name": "nixl", "repo": "https://github.com/ai-dynamo/nixl.git", "version": "1.3.0", "cuda": True,
              "command": "pip install .", "check": "python -c 'import nixl'"}
SETTINGS = {
    "user": "sglang", "group": "sglang", "build_user": "sglang-build", "root": "/opt/sglang",
    "state_dir": "/opt/sglang/install-state", "venv": "/opt/sglang/venv",
    "build_dir": "/opt/sglang/build", "src_dir": "/opt/sglang/src/sglang", "python": "/usr/bin/python3",
    "python_versions": ["3.11", "3.12", "3.13"], "min_glibc": "2.34", "source": "pypi", "version": "0.5.23",
    "offline": False, "wheelhouse": "", "git_repo": "https://github.com/sgl-project/sglang.git", "git_version": "v0.5.23",
    "nixl_source": "auto", "nixl_ucx_prefix": "/usr", "nixl_fail_on_ucx_conflict": True, "nixl_build": NIXL_BUILD,
    "kernel_builds": [], "cuda_home": "/usr/local/cuda", "model_source": "none", "model_path": "/models/m",
    "model_repo_id": "", "chat_template_source": "none", "chat_template_file": "", "chat_template_dest": "/opt/t.jinja",
    "chat_template_git_repo": "https://github.com/sgl-project/sglang.git",
}
FACTS = {
    "python": {"path": "/usr/bin/python3", "found": True, "version": "3.11", "full_version": "3.11.2", "venv": True, "error": ""},
    "libc": {"name": "glibc", "version": "2.36"},
    "machine": "x86_64",
    "ucx": {"present": False, "ucx_info": "", "libucp": "", "version": ""},
    "cuda": {"home": "/usr/local/cuda", "nvcc": "/usr/local/cuda/bin/nvcc", "version": "13.0"},
    "git": "/usr/bin/git",
    "cc": "/usr/bin/cc",
    "disk": [{"name": "venv", "path": "/opt/sglang/venv", "min_free_gb": 25.0, "checked": "/opt", "exists": False,
              "need_gb": 25.0, "need_gb_total": 25.0, "free_gb": 80.0, "shared_with": [], "ok": True, "error": ""}],
    "paths": {"/opt/sglang/venv/lib": {"exists": False, "isdir": False, "owner": "", "group": ""}},
    "users": {"sglang": {"exists": True, "uid": 999, "home": "/var/lib/sglang"}},
}
UCX = {"present": True, "ucx_info": "/usr/bin/ucx_info", "libucp": "/usr/lib/x86_64-linux-gnu/libucp.so.0", "version": "1.16.0"}


def judge(settings=None, facts=None, **changes):
    s = copy.deepcopy(SETTINGS)
    s.update(settings or {})
    f = copy.deepcopy(FACTS)
    f.update(facts or {})
    for key, value in changes.items():
        s[key] = value
    return P.plan("gpu1", s, f)


def variables(result):
    return [p["variable"] for p in result["problems"]]


def only(result):
    assert len(result["problems"]) == 1, result["problems"]
    return result["problems"][0]


def test_a_good_host_has_no_problem():
    result = judge()
    assert result["problems"] == [] and result["report"] == "" and result["warnings"] == []
    assert result["nixl_mode"] == "pypi" and result["kernel_builds"] == []
    assert result["needs_cuda"] is False and result["needs_git"] is False


@pytest.mark.parametrize("source, ucx, mode", [
    ("auto", False, "pypi"), ("auto", True, "source"), ("pypi", True, "pypi"), ("source", False, "source"),
    ("none", True, "none")])
def test_nixl_mode(source, ucx, mode):
    assert P.nixl_mode(source, ucx) == mode


def test_auto_next_to_a_system_ucx_builds_nixl_from_source():
    result = judge(facts={"ucx": UCX})
    assert result["nixl_mode"] == "source"
    assert result["kernel_builds"] == [NIXL_BUILD]
    assert result["needs_cuda"] is True and result["needs_git"] is True
    assert result["problems"] == []


def test_decisions_do_not_depend_on_the_problems():
    # A host full of problems gets the same decisions: skipping the judgement never changes what is installed.
    bad = judge(facts={"ucx": UCX, "python": dict(FACTS["python"], version="3.9"), "git": "", "cuda": {"nvcc": ""}})
    good = judge(facts={"ucx": UCX})
    assert bad["problems"]
    for key in ("nixl_mode", "kernel_builds", "needs_cuda", "needs_git"):
        assert bad[key] == good[key]


def test_settings_that_depend_on_each_other():
    result = judge(offline=True, wheelhouse="", source="git", git_repo="", git_version="", model_source="hf", model_path="",
                   model_repo_id="", chat_template_source="file", chat_template_file="", venv="venv", root="opt")
    assert variables(result)[:6] == ["sglang_install_wheelhouse", "sglang_install_git_repo", "sglang_install_git_version",
                                     "sglang_install_model_path", "sglang_install_model_repo_id",
                                     "sglang_install_chat_template_file"]
    assert "sglang_install_venv" in variables(result) and "sglang_install_root" in variables(result)
    assert only(judge(chat_template_source="sglang", chat_template_dest=""))["variable"] == "sglang_install_chat_template_dest"
    assert only(judge(nixl_source="pip"))["variable"] == "sglang_install_nixl_source"


def test_kernel_build_items():
    good = [{"name": "fa", "repo": "https://x/fa.git", "version": "v1"}, {"name": "k.2", "src": "/opt/k", "cuda": False}]
    assert judge(kernel_builds=good)["problems"] == []
    result = judge(kernel_builds=[
        {"name": "bad name", "src": "/x"},
        {"name": "both", "repo": "r", "version": "v", "src": "/x"},
        {"name": "neither"},
        {"name": "half", "repo": "r"},
        {"name": "env", "src": "/x", "env": ["A=1"]},
        {"name": "cmd", "src": "/x", "command": ["make"]},
        "fa",
    ], facts={"git": "/usr/bin/git"})
    text = result["report"]
    assert "sglang_install_kernel_builds[bad name]: needs a name of letters" in text
    for name in ("both", "neither", "half"):
        assert "sglang_install_kernel_builds[%s]: needs either repo + version" % name in text
    assert "sglang_install_kernel_builds[env].env: must be a mapping" in text
    assert "sglang_install_kernel_builds[cmd].command: must be a string" in text
    assert "sglang_install_kernel_builds[6]: must be a mapping, got 'fa'" in text
    assert only(judge(kernel_builds="fa"))["message"].startswith("must be a list of mappings")


def test_kernel_build_names_are_unique_with_the_nixl_build():
    dup = [{"name": "fa", "src": "/a"}, {"name": "fa", "src": "/b"}]
    assert only(judge(kernel_builds=dup))["message"] == "two items share a name: fa"
    clash = judge(kernel_builds=[{"name": "nixl", "src": "/n"}], facts={"ucx": UCX})
    problem = only(clash)
    assert problem["message"] == "two items share a name: nixl" and "NIXL source build" in problem["fix"]
    assert judge(kernel_builds=[{"name": "nixl", "src": "/n"}])["problems"] == []  # pip NIXL: no clash


def test_python_version_and_venv_module():
    problem = only(judge(python_versions=["3.12", "3.13"]))
    assert problem["variable"] == "sglang_install_python"
    assert "/usr/bin/python3 is Python 3.11.2; SGLang 0.5.23 needs one of 3.12, 3.13" == problem["message"]
    problem = only(judge(facts={"python": dict(FACTS["python"], venv=False)}))
    assert "without the venv module" in problem["message"] and problem["fix"] == "install python3-venv"
    problem = only(judge(facts={"python": {"found": False, "error": "/usr/bin/python3.12 does not exist or is not executable"}}))
    assert problem["message"] == "cannot be run: /usr/bin/python3.12 does not exist or is not executable"


def test_glibc_for_the_pypi_wheels():
    assert only(judge(facts={"libc": {"name": "glibc", "version": "2.31"}}))["variable"] == "sglang_install_min_glibc"
    assert "an unknown libc" in only(judge(facts={"libc": {"name": "", "version": ""}}))["message"]
    assert "musl" in only(judge(facts={"libc": {"name": "musl", "version": "1.2"}}))["message"]
    assert judge(facts={"libc": {"name": "glibc", "version": "2.34"}})["problems"] == []
    assert judge(facts={"libc": {"name": "glibc", "version": "2.100"}})["problems"] == []  # numbers, not strings
    # Not from PyPI, or the check turned off: no glibc requirement.
    assert judge(source="none", facts={"libc": {"name": "glibc", "version": "2.31"}})["problems"] == []
    assert judge(min_glibc="", facts={"libc": {"name": "glibc", "version": "2.31"}})["problems"] == []


def test_free_disk():
    full = dict(FACTS["disk"][0], need_gb_total=27.0, free_gb=10.5, ok=False, shared_with=["model"])
    problem = only(judge(facts={"disk": [full]}))
    assert problem["variable"] == "sglang_install_min_free_gb_venv"
    assert problem["message"] == ("Not enough free disk: venv at /opt/sglang/venv needs 27 GiB on the filesystem of /opt "
                                  "(together with model) and has 10.5 GiB free")
    bad = dict(FACTS["disk"][0], ok=False, error="'venv' is not an absolute path")
    assert "not an absolute path" in only(judge(facts={"disk": [bad]}))["message"]


def test_wheelhouse_must_be_a_directory():
    facts = {"paths": {"/wh": {"exists": True, "isdir": True}}}
    assert judge(wheelhouse="/wh", facts=facts)["problems"] == []
    problem = only(judge(wheelhouse="/wh", facts={"paths": {"/wh": {"exists": False, "isdir": False}}}))
    assert problem["message"] == "/wh is not a directory on gpu1"


def test_pip_nixl_next_to_a_system_ucx():
    problem = only(judge(nixl_source="pypi", facts={"ucx": UCX}))
    assert problem["variable"] == "sglang_install_nixl_source"
    assert "has a system UCX (/usr/bin/ucx_info 1.16.0)" in problem["message"] and "NIXL_ERR_BACKEND" in problem["message"]
    assert "build against /usr" in problem["fix"]
    lib_only = dict(UCX, ucx_info="", version="")
    assert "(/usr/lib/x86_64-linux-gnu/libucp.so.0)" in only(judge(nixl_source="pypi", facts={"ucx": lib_only}))["message"]
    accepted = judge(nixl_source="pypi", nixl_fail_on_ucx_conflict=False, facts={"ucx": UCX})
    assert accepted["problems"] == [] and "NIXL_ERR_BACKEND" in accepted["warnings"][0]
    assert judge(nixl_source="none", facts={"ucx": UCX})["problems"] == []


def test_cuda_toolkit_for_cuda_builds():
    builds = [{"name": "fa", "src": "/fa"}, {"name": "cpu", "src": "/c", "cuda": False}]
    problem = only(judge(kernel_builds=builds, facts={"cuda": {"nvcc": "", "version": ""}}))
    assert problem["message"] == "Kernel builds (fa) need the CUDA toolkit, and no nvcc was found in /usr/local/cuda/bin or on PATH"
    assert judge(kernel_builds=[builds[1]], facts={"cuda": {"nvcc": ""}})["problems"] == []
    assert judge(kernel_builds=[dict(builds[0], cuda="false")], facts={"cuda": {"nvcc": ""}})["problems"] == []
    # Each build is named once.
    twice = judge(kernel_builds=[builds[0], builds[0]], facts={"cuda": {"nvcc": ""}})
    assert "Kernel builds (fa) need" in twice["report"]
    # auto next to a system UCX: the NIXL source build needs the toolkit too.
    assert "Kernel builds (nixl) need the CUDA toolkit" in judge(facts={"ucx": UCX, "cuda": {"nvcc": ""}})["report"]


@pytest.mark.parametrize("settings, variable, reason", [
    ({"source": "git"}, "sglang_install_source", "SGLang from git"),
    ({"chat_template_source": "sglang"}, "sglang_install_chat_template_source", "the chat template from the SGLang tree"),
    ({"kernel_builds": [{"name": "fa", "repo": "r", "version": "v"}]}, "sglang_install_kernel_builds", "kernel builds from git (fa)"),
])
def test_git_when_a_git_source_is_used(settings, variable, reason):
    problem = only(judge(settings, facts={"git": ""}))
    assert problem["variable"] == variable and reason in problem["message"]
    assert judge(settings)["problems"] == []


def test_git_for_the_nixl_source_build_names_nixl_source():
    problem = only(judge(facts={"ucx": UCX, "git": ""}))
    assert problem["variable"] == "sglang_install_nixl_source"
    assert "NIXL built from source against the system UCX (sglang_install_nixl_source: auto)" in problem["message"]


def test_git_sources_offline():
    facts = {"paths": {"/wh": {"isdir": True}}}
    problem = only(judge(offline=True, wheelhouse="/wh", source="git", facts=facts))
    assert problem["variable"] == "sglang_install_git_repo"
    assert "a git checkout from https://github.com/sgl-project/sglang.git is asked for" in problem["message"]
    problem = only(judge(offline=True, wheelhouse="/wh", chat_template_source="sglang", facts=facts))
    assert problem["variable"] == "sglang_install_chat_template_git_repo"
    assert judge(offline=True, wheelhouse="/wh", source="git", git_repo="file:///srv/sglang.git", facts=facts)["problems"] == []
    assert judge(offline=True, wheelhouse="/wh", facts=facts)["problems"] == []


def test_model_path_needs_config_json():
    missing = {"paths": {"/models/m/config.json": {"exists": False}}}
    problem = only(judge(model_source="path", facts=missing))
    assert problem["message"] == "/models/m holds no config.json on gpu1"
    assert judge(model_source="path", facts={"paths": {"/models/m/config.json": {"exists": True}}})["problems"] == []
    assert judge(model_source="hf", model_repo_id="org/m", facts=missing)["problems"] == []


def test_venv_made_by_another_user():
    alice = {"paths": {"/opt/sglang/venv/lib": {"exists": True, "isdir": True, "owner": "alice", "group": "alice"}}}
    problem = only(judge(facts=alice))
    assert problem["message"].startswith("/opt/sglang/venv already exists and its lib/ belongs to alice, neither root")
    assert problem["fix"].endswith("or chown -R root:root /opt/sglang/venv")
    assert judge(facts=alice)["conversions"] == []  # never someone else's
    top = {"paths": {"/opt/sglang/venv": {"exists": True, "isdir": True, "owner": "alice", "group": "alice"}}}
    assert "its directory belongs to alice" in only(judge(facts=top))["message"]
    # Root's (this version) and the service user's (an earlier version, converted) are no problem.
    for owner in ("root", "sglang"):
        ours = {"paths": {"/opt/sglang/venv/lib": {"exists": True, "owner": owner}}}
        assert judge(facts=ours)["problems"] == []
    assert P.venv_probe("/opt/sglang/venv") == "/opt/sglang/venv/lib"


def test_a_user_that_comes_from_elsewhere_must_exist():
    absent = {"users": {"sglang": {"exists": False, "uid": None, "home": ""}}}
    assert judge(facts=absent)["problems"] == []  # the role creates it
    problem = only(judge(create_user=False, facts=absent))
    assert problem["variable"] == "sglang_install_user" and "does not exist on gpu1" in problem["message"]
    assert judge(create_user=False)["problems"] == []


def test_a_build_user_that_comes_from_elsewhere_must_exist_when_something_is_built():
    absent = {"users": {"sglang": {"exists": True}, "sglang-build": {"exists": False}}}
    assert judge(create_user=False, facts=absent)["problems"] == []  # nothing built: not needed
    build = [{"name": "fa", "src": "/fa"}]
    assert judge(kernel_builds=build, facts=absent)["problems"] == []  # the role creates it
    problem = only(judge(create_user=False, kernel_builds=build, facts=absent))
    assert problem["variable"] == "sglang_install_build_user" and "sglang-build does not exist on gpu1" in problem["message"]
    assert only(judge(create_user=False, source="git", facts=absent))["variable"] == "sglang_install_build_user"


def test_every_problem_at_once_in_one_report():
    result = judge(python_versions=["3.12"], kernel_builds=[{"name": "fa", "src": "/a"}, {"name": "fa", "src": "/b"}],
                   facts={"cuda": {"nvcc": ""}, "git": ""})
    assert result["report"].startswith("sglang_install preflight found 3 problem(s):\n- host gpu1: ")
    assert len(result["report"].splitlines()) == 4
    for problem in result["problems"]:
        assert sorted(problem) == ["fix", "host", "message", "variable"] and problem["host"] == "gpu1"


def d(path, owner=None, mode="0755"):
    return {"path": path, "owner": owner, "group": owner, "mode": mode}


PLAIN_DIRECTORIES = [d("/opt/sglang"), d("/opt/sglang/install-state", "root", "0700"), d("/opt/sglang/venv", "root")]


def test_directories_wanted_and_those_to_fix():
    plain = judge()
    assert plain["directories"] == PLAIN_DIRECTORIES
    assert plain["directories_to_fix"] == plain["directories"]  # nothing there yet
    everything = judge(source="git", model_source="hf", model_repo_id="org/m", chat_template_source="sglang",
                       chat_template_dest="/opt/sglang/chat_templates/t.jinja", kernel_builds=[{"name": "fa", "src": "/fa"}])
    # What the services run and read is root's; what is checked out and compiled the build user's; root's state 0700.
    assert [(e["path"], e["owner"], e["mode"]) for e in everything["directories"]] == [
        ("/opt/sglang", None, "0755"), ("/opt/sglang/install-state", "root", "0700"), ("/opt/sglang/libexec", None, "0755"),
        ("/opt/sglang/chat_templates", None, "0755"), ("/opt/sglang/venv", "root", "0755"),
        ("/opt/sglang/build", "sglang-build", "0755"), ("/opt/sglang/src/sglang", "sglang-build", "0755"),
        ("/models/m", "root", "0755")]
    assert all(e["group"] == e["owner"] for e in everything["directories"])
    assert everything["needs_build_user"] and not plain["needs_build_user"]
    # A model download needs the job runner even without builds; a template next to the venv is not repeated.
    assert "/opt/sglang/libexec" in [e["path"] for e in judge(model_source="hf", model_repo_id="o/m")["directories"]]
    assert len(judge(chat_template_source="file", chat_template_file="t", chat_template_dest="/opt/sglang/venv/t.jinja")
               ["directories"]) == 3
    # SGLang from git builds its wheel in the build directory.
    assert "/opt/sglang/build" in [e["path"] for e in judge(source="git")["directories"]]

    def there(owner="root", group="root", mode="0755"):
        return {"exists": True, "isdir": True, "owner": owner, "group": group, "mode": mode}
    paths = {"/opt/sglang": there(), "/opt/sglang/venv": there(), "/opt/sglang/install-state": there(mode="0700")}
    assert judge(facts={"paths": paths})["directories_to_fix"] == []
    for wrong in (there("sglang"), there(group="sglang"), there(mode="0775"), dict(there(), isdir=False)):
        fix = judge(facts={"paths": dict(paths, **{"/opt/sglang/venv": wrong})})["directories_to_fix"]
        assert fix == [d("/opt/sglang/venv", "root")], wrong
    # The root directory's owner is not the role's business, its mode is.
    assert judge(facts={"paths": dict(paths, **{"/opt/sglang": there("admin", "adm")})})["directories_to_fix"] == []
    assert judge(facts={"paths": dict(paths, **{"/opt/sglang": there(mode="0750")})})["directories_to_fix"] == [d("/opt/sglang")]


def test_what_an_earlier_version_gave_the_service_user_is_converted_once():
    def there(owner, group=None):
        return {"exists": True, "isdir": True, "owner": owner, "group": group or owner, "mode": "0755"}
    settings = dict(model_source="hf", model_repo_id="org/m", kernel_builds=[{"name": "fa", "src": "/fa"}],
                    chat_template_source="sglang")
    old = {"/opt/sglang/venv": there("sglang"), "/opt/sglang/venv/lib": there("sglang"), "/opt/sglang/build": there("sglang"),
           "/opt/sglang/src/sglang": there("sglang"), "/models/m": there("sglang"), "/opt/sglang": there("root")}
    result = judge(facts={"paths": old}, **settings)
    assert result["problems"] == []
    assert [(c["what"], c["path"], c["owner"], c["group"], c["from_owner"]) for c in result["conversions"]] == [
        ("venv", "/opt/sglang/venv", "root", "root", "sglang"),
        ("build directory", "/opt/sglang/build", "sglang-build", "sglang-build", "sglang"),
        ("build directory", "/opt/sglang/src/sglang", "sglang-build", "sglang-build", "sglang"),
        ("model tree", "/models/m", "root", "root", "sglang")]
    # The venv directory chowned but lib/ still the service user's (an interrupted conversion): converted again.
    half = dict(old, **{"/opt/sglang/venv": there("root")})
    assert "/opt/sglang/venv" in [c["path"] for c in judge(facts={"paths": half}, **settings)["conversions"]]
    # Converted (or deployed by this version): nothing to do, so a rerun runs no conversion.
    new = {"/opt/sglang/venv": there("root"), "/opt/sglang/venv/lib": there("root"), "/opt/sglang/build": there("sglang-build"),
           "/opt/sglang/src/sglang": there("sglang-build"), "/models/m": there("root")}
    assert judge(facts={"paths": new}, **settings)["conversions"] == []
    # A fresh host: nothing there.
    assert judge(**settings)["conversions"] == []


def test_a_model_the_role_did_not_download_is_left_alone_with_a_warning():
    mine = {"paths": {"/models/m": {"exists": True, "isdir": True, "owner": "sglang", "group": "sglang", "mode": "0755"}}}
    result = judge(facts=mine, model_source="path")
    assert result["conversions"] == [] and "/models/m" not in [e["path"] for e in result["directories"]]
    (warning,) = result["warnings"]
    assert "belongs to sglang, the user the model servers run as" in warning and "chown -R root:root /models/m" in warning
    assert judge(facts={"paths": {"/models/m": dict(mine["paths"]["/models/m"], owner="root")}}, model_source="path")["warnings"] == []


def test_a_umask_that_hides_what_root_installs_is_a_problem():
    assert judge(facts={"umask": 0o022})["problems"] == []
    assert judge(facts={"umask": 0o002})["problems"] == []
    for umask in (0o077, 0o027, 0o007):
        problem = only(judge(facts={"umask": umask}))
        assert "root's umask on gpu1 is %04o" % umask in problem["message"] and "umask=0022" in problem["fix"]


def test_a_build_command_must_leave_wheels_for_root_to_install():
    ok = {"name": "fa", "src": "/fa", "command": 'python -m pip wheel --no-deps -w "$PDSERVE_WHEEL_DIR" .'}
    assert judge(kernel_builds=[ok])["problems"] == []
    assert judge(kernel_builds=[{"name": "fa", "src": "/fa"}])["problems"] == []  # the default does
    old = dict(ok, command="/opt/sglang/venv/bin/python -m pip install --no-build-isolation .")
    problem = only(judge(kernel_builds=[old]))
    assert problem["variable"] == "sglang_install_kernel_builds[fa].command"
    assert "builds run as sglang-build, who cannot write the venv" in problem["message"]
    assert P.DEFAULT_BUILD_EXAMPLE in problem["fix"]


def test_filter_wraps_the_plan_and_rejects_what_is_not_a_mapping():
    assert F.FilterModule().filters()["install_plan"] is F.install_plan
    assert F.install_plan(FACTS, "gpu1", SETTINGS) == P.plan("gpu1", SETTINGS, FACTS)
    with pytest.raises(AnsibleFilterError, match="settings must be a mapping"):
        F.install_plan(FACTS, "gpu1", ["x"])
    with pytest.raises(AnsibleFilterError, match="install_facts"):
        F.install_plan("x", "gpu1", SETTINGS)


PROFILE_SETTINGS = dict(SETTINGS, torch_packages=["torch==2.14.1"], router_version="0.3.2", extra_packages=["x==1"],
                        min_free_gb_venv=25, kernel_builds=[{"name": "fa", "repo": "r", "version": "v"}],
                        model_source="hf", chat_template_source="sglang", nixl_source="auto")


def test_servers_profile_keeps_the_settings():
    assert P.profile(PROFILE_SETTINGS, "servers", "/opt/sglang/router-venv", "0.3.3") == dict(PROFILE_SETTINGS, profile="servers")


def test_router_profile_installs_the_router_alone_into_its_venv():
    s = P.profile(PROFILE_SETTINGS, "router", "/opt/sglang/router-venv", "0.3.3")
    assert s["venv"] == "/opt/sglang/router-venv" and s["router_version"] == "0.3.3" and s["profile"] == "router"
    assert (s["source"], s["nixl_source"], s["model_source"], s["chat_template_source"]) == ("none",) * 4
    assert s["torch_packages"] == s["extra_packages"] == s["kernel_builds"] == []
    assert s["min_free_gb_venv"] == P.ROUTER_MIN_FREE_GB
    # Who installs and from where stays as set.
    assert all(s[key] == PROFILE_SETTINGS[key] for key in ("user", "group", "python", "wheelhouse", "offline", "root"))
    # What the plan then decides: no builds, no git, no CUDA, no build user; the venv is root's.
    planned = P.plan("router1", s, FACTS)
    assert planned["kernel_builds"] == [] and planned["nixl_mode"] == "none" and not planned["needs_git"]
    assert not planned["needs_build_user"]
    assert planned["directories"] == [d("/opt/sglang"), d("/opt/sglang/install-state", "root", "0700"),
                                      d("/opt/sglang/router-venv", "root")]
    assert PROFILE_SETTINGS["venv"] == "/opt/sglang/venv"  # the input is left alone


def test_unknown_profile_and_the_filter():
    with pytest.raises(ValueError, match="sglang_install_profile"):
        P.profile(SETTINGS, "monitoring", "/r", "1")
    assert F.FilterModule().filters()["install_profile"] is F.install_profile
    assert F.install_profile(SETTINGS, "router", "/r", "1")["venv"] == "/r"
    with pytest.raises(AnsibleFilterError, match="is not one of servers, router"):
        F.install_profile(SETTINGS, "x", "/r", "1")
    with pytest.raises(AnsibleFilterError, match="mapping"):
        F.install_profile(["x"], "router", "/r", "1")


INSTALLED = {"sglang-router": "0.3.2", "torch": "2.9.1+cu130", "Prometheus_Client": "0.26.0", "sglang": "0.5.23"}


@pytest.mark.parametrize("requirement", ["sglang-router==0.3.2", "torch==2.9.1", "torch==2.9.1+cu130",
                                         "prometheus-client==0.26.0", "prometheus.client==0.26.0", "SGLang==0.5.23"])
def test_pins_met_by_the_installed_versions(requirement):
    assert P.unmet_requirements([requirement], INSTALLED) == []


@pytest.mark.parametrize("requirement", [
    "sglang-router==0.3.1",          # another version
    "torch==2.9.1+cu128",            # another local label
    "uvicorn==0.54.0",               # not installed
    "sglang[all]==0.5.23",           # extras: pip knows whether their dependencies are there
    "sglang-router>=0.3.2",          # a range
    "sglang-router",                 # no version
    "sglang-router==0.3.2; python_version > '3'",
    "nixl @ file:///wheels/nixl.whl",
    "sglang-router==0.3.2\n",
])
def test_whatever_is_not_a_met_pin_is_left_to_pip(requirement):
    assert P.unmet_requirements([requirement], INSTALLED) == [requirement]


def test_unmet_keeps_the_order_and_an_empty_venv_meets_nothing():
    wanted = ["torch==2.9.1", "uvicorn==0.54.0", "sglang-router==0.3.2", "fastapi==0.165.0"]
    assert P.unmet_requirements(wanted, INSTALLED) == ["uvicorn==0.54.0", "fastapi==0.165.0"]
    assert P.unmet_requirements(wanted, {}) == wanted
    assert P.unmet_requirements([], {}) == []


def test_pip_unmet_filter_reads_install_facts():
    assert F.pip_unmet(["sglang-router==0.3.2", "x==1"], {"venv_packages": INSTALLED}) == ["x==1"]
    assert F.pip_unmet(["x==1"], None) == ["x==1"]
    with pytest.raises(AnsibleFilterError, match="list of requirements"):
        F.pip_unmet("x==1", {})
    with pytest.raises(AnsibleFilterError, match="install_facts"):
        F.pip_unmet([], "facts")


def _installed_host():
    """FACTS of a host where the plain settings' directories, venv and every pin are in place."""
    there = {"exists": True, "isdir": True, "owner": "root", "group": "root", "mode": "0755"}
    paths = {"/opt/sglang": there, "/opt/sglang/venv": there, "/opt/sglang/install-state": dict(there, mode="0700"),
             "/opt/sglang/venv/bin/python": dict(there, isdir=False)}
    pins = judge()["pip"]["all"]
    assert pins and all("==" in pin for pin in pins)
    packages = dict(pin.split("[")[0].split("==") if "[" in pin else pin.split("==") for pin in pins)
    packages = {name.split("[")[0]: version for name, version in packages.items()}
    return {"paths": paths, "venv_packages": packages, "account_to_fix": False}


def test_up_to_date_only_when_account_directories_venv_and_every_pin_are_in_place():
    host = _installed_host()
    ready = judge(facts=host)
    assert ready["pins_met"] and ready["up_to_date"], ready
    older = dict(host["venv_packages"], sglang="0.5.22")
    no_venv = dict(host["paths"])
    no_venv.pop("/opt/sglang/venv/bin/python")
    wrong_mode = dict(host["paths"], **{"/opt/sglang/venv": dict(host["paths"]["/opt/sglang/venv"], mode="0775")})
    for facts in ({"venv_packages": older}, {"paths": no_venv}, {"paths": wrong_mode}, {"account_to_fix": True}):
        assert not judge(facts=dict(host, **facts))["up_to_date"], facts
    assert not judge(facts=dict(host, venv_packages=older))["pins_met"]
    # SGLang from git has its own record of what was built; a build user the host lacks must be created first.
    assert not judge(facts=host, source="git")["up_to_date"]
    builds = [{"name": "fa", "src": "/fa"}]
    assert not judge(facts=host, kernel_builds=builds, create_user=True)["up_to_date"]
    with_builder = dict(host, users=dict(FACTS["users"], **{"sglang-build": {"exists": True}}))
    builder_dir = dict(host["paths"]["/opt/sglang"], owner="sglang-build", group="sglang-build")
    build_paths = dict(host["paths"], **{"/opt/sglang/build": builder_dir, "/opt/sglang/libexec": host["paths"]["/opt/sglang"]})
    built = judge(facts=dict(with_builder, paths=build_paths), kernel_builds=builds, create_user=True)
    assert built["up_to_date"], (built["directories_to_fix"], built["conversions"], built["pins_met"])


def test_router_profile_installs_both_router_implementations_and_servers_neither_smg():
    s = P.profile(PROFILE_SETTINGS, "router", "/opt/sglang/router-venv", "0.3.2", "1.13.0")
    assert s["router_smg_version"] == "1.13.0"
    assert P.pip_requirements(s, "none")["packages"] == ["sglang-router==0.3.2", "smg==1.13.0"]
    servers = P.profile(dict(PROFILE_SETTINGS, router_version="0.3.2"), "servers", "/opt/sglang/router-venv", "0.3.2",
                        "1.13.0")
    assert not any(r.startswith("smg") for r in P.pip_requirements(servers, "none")["all"])
    assert F.install_profile(SETTINGS, "router", "/r", "0.3.2", "1.13.0")["router_smg_version"] == "1.13.0"


def test_free_disk_names_the_filesystem_and_its_free_bytes():
    small = dict(FACTS["disk"][0], min_free_gb=1.0, need_gb_total=1.0, free_gb=0.0, free_bytes=16 * 2 ** 20,
                 size_bytes=64 * 2 ** 20, checked="/opt/sglang/venvs/sglang-90.0.4", ok=False,
                 filesystem={"mount": "/opt/sglang/venvs/sglang-90.0.4", "fstype": "tmpfs", "source": "pdserve-small"})
    problem = only(judge(facts={"disk": [small]}))
    assert problem["message"] == (
        "Not enough free disk: venv at /opt/sglang/venv needs 1 GiB on the filesystem mounted at "
        "/opt/sglang/venvs/sglang-90.0.4 (tmpfs pdserve-small, 64 MiB in all) and has 16 MiB free")
    assert problem["fix"] == "free space there, or lower sglang_install_min_free_gb_venv"


@pytest.mark.parametrize("value, text", [(1536, "1.5 KiB"), (2 ** 20 * 40, "40 MiB"), (2.5 * 2 ** 30, "2.5 GiB"),
                                         (3 * 2 ** 40, "3 TiB"), (12, "12 B"), (None, "?"), ("x", "?")])
def test_human_size(value, text):
    assert P.human_size(value) == text


@pytest.mark.parametrize("retries, timeout, bad", [
    (5, 30, []), (0, 1, []), (20, 600, []), ("3", "2.5", []),
    (-1, 30, ["sglang_install_pip_retries"]), (21, 30, ["sglang_install_pip_retries"]),
    (2.5, 30, ["sglang_install_pip_retries"]), ("many", 30, ["sglang_install_pip_retries"]),
    (True, 30, ["sglang_install_pip_retries"]),
    (5, 0, ["sglang_install_pip_timeout"]), (5, 601, ["sglang_install_pip_timeout"]),
    (5, "soon", ["sglang_install_pip_timeout"]), (None, None, ["sglang_install_pip_retries", "sglang_install_pip_timeout"])])
def test_pip_retries_and_timeout_are_bounded(retries, timeout, bad):
    result = judge(pip_retries=retries, pip_timeout=timeout)
    assert variables(result) == bad
    for found in result["problems"]:
        assert "pip's own default" in found["fix"]


def test_pip_retries_and_timeout_may_be_left_out():
    assert judge()["problems"] == []


def test_an_incomplete_venv_is_installed_again_whatever_it_lists():
    host = _installed_host()
    marker = "/opt/sglang/venv/pdserve-install-incomplete"
    assert judge(facts=host, incomplete_marker_name="pdserve-install-incomplete")["pins_met"]
    marked = dict(host, paths=dict(host["paths"], **{marker: {"exists": True, "isdir": False}}))
    result = judge(facts=marked, incomplete_marker_name="pdserve-install-incomplete")
    assert result["venv_incomplete"] is True
    assert not result["pins_met"] and not result["up_to_date"]
    # Without a marker name nothing is read.
    assert judge(facts=marked)["venv_incomplete"] is False
    assert P.incomplete_marker({"venv": "/v", "incomplete_marker_name": "m"}) == "/v/m"
    assert P.incomplete_marker({"venv": "/v"}) == ""
