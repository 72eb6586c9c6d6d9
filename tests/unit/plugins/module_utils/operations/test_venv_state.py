# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a host runs and keeps (fingerprints, versioned venvs, links) and the upgrade preflight, on a fake tree."""

import os

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.operations import venv_state as vs


def make_venv(path, version=None, package="sglang"):
    os.makedirs(os.path.join(path, "bin"))
    with open(os.path.join(path, "bin", "python"), "w") as handle:
        handle.write("")
    if version:
        info = os.path.join(path, "lib", "python3.11", "site-packages", "%s-%s.dist-info" % (package, version))
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as handle:
            handle.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (package, version))
    return path


def make_env(path, venv, version="0.5.23"):
    with open(path, "w") as handle:
        handle.write('# x\nPDSERVE_SGLANG="%s"\nPDSERVE_VENV="%s"\nCUDA_VISIBLE_DEVICES="0"\n' % (version, venv))
    return path


def layout(tmp_path):
    root = str(tmp_path / "venvs")
    units = str(tmp_path / "units")
    conf = str(tmp_path / "etc")
    for path in (root, units, conf):
        os.makedirs(path)
    # Venvs the collection created: each recorded before it was made, as the upgrade's install step does.
    for version in ("0.5.23", "0.5.22", "0.5.21"):
        assert vs.record_created(root, os.path.join(root, "sglang-%s" % version))["changed"]
        make_venv(os.path.join(root, "sglang-%s" % version), version)
    old = os.path.join(root, "sglang-0.5.23")
    instances = [{"name": n, "env_file": make_env(os.path.join(conf, "%s.env" % n), old)} for n in ("decode-0", "decode-1")]
    with open(os.path.join(units, "sglang-decode-0.service"), "w") as handle:
        handle.write("ExecStart=%s/bin/python -m sglang.launch_server\n" % old)
    with open(os.path.join(units, "sglang-other.service"), "w") as handle:
        handle.write("ExecStart=%s/bin/python -m sglang.launch_server\n" % os.path.join(root, "sglang-0.5.21"))
    return root, units, instances, old


def test_installed_version_from_dist_info(tmp_path):
    venv = make_venv(str(tmp_path / "v"), "90.0.2")
    assert vs.installed_version(venv) == "90.0.2"
    assert vs.installed_version(venv, "sglang-router") is None


def test_observe_and_judge_an_upgrade(tmp_path):
    root, units, instances, old = layout(tmp_path)
    os.symlink(os.path.join(root, "sglang-0.5.22"), os.path.join(root, "previous"))
    target = os.path.join(root, "sglang-0.5.24")
    seen = vs.observe(instances, root, units, target=target)
    assert seen["instances"]["decode-0"]["fingerprint"]["venv"] == old
    assert [v["version"] for v in seen["venvs"]] == ["0.5.21", "0.5.22", "0.5.23"]
    assert seen["links"] == {"current": None, "previous": os.path.join(root, "sglang-0.5.22")}
    assert seen["target"] == {"path": target, "exists": False, "version": None}
    decided = vs.judge("gpu", seen, target, min_free_gb=0.001)
    assert decided["problems"] == []
    # current: the one venv the instances run (no link yet); 0.5.21 is named by a unit, 0.5.22 is previous.
    assert decided["current"] == old
    assert decided["prunable"] == []


def test_prunable_and_disk(tmp_path):
    root, units, instances, old = layout(tmp_path)
    os.remove(os.path.join(units, "sglang-other.service"))
    seen = vs.observe(instances, root, units, target=os.path.join(root, "sglang-0.5.24"))
    decided = vs.judge("gpu", seen, os.path.join(root, "sglang-0.5.24"), min_free_gb=10 ** 9)
    assert decided["prunable"] == [os.path.join(root, "sglang-0.5.21"), os.path.join(root, "sglang-0.5.22")]
    (problem,) = decided["problems"]
    assert problem["variable"] == "sglang_operations_upgrade_min_free_gb" and "about 11 GB" in problem["message"]
    # An existing target needs no space.
    make_venv(os.path.join(root, "sglang-0.5.24"), "0.5.24")
    seen = vs.observe(instances, root, units, target=os.path.join(root, "sglang-0.5.24"))
    assert vs.judge("gpu", seen, os.path.join(root, "sglang-0.5.24"), min_free_gb=10 ** 9)["problems"] == []


def test_instances_on_different_venvs_or_without_fingerprint(tmp_path):
    root, units, instances, old = layout(tmp_path)
    make_env(instances[1]["env_file"], os.path.join(root, "sglang-0.5.22"))
    with open(os.path.join(str(tmp_path), "etc", "legacy.env"), "w") as handle:
        handle.write('CUDA_VISIBLE_DEVICES="0"\n')
    instances.append({"name": "legacy", "env_file": os.path.join(str(tmp_path), "etc", "legacy.env")})
    instances.append({"name": "gone", "env_file": os.path.join(str(tmp_path), "etc", "gone.env")})
    decided = vs.judge("gpu", vs.observe(instances, root, units))
    messages = " | ".join(p["message"] for p in decided["problems"])
    assert "different venvs" in messages and "no PDSERVE_VENV" in messages and "does not exist" in messages
    assert decided["current"] is None


def test_venv_names():
    assert vs.venv_name("0.5.24") == "sglang-0.5.24"
    assert vs.venv_name("0.5.24", "pypi", "v0.5.23") == "sglang-0.5.24"
    assert vs.venv_name(None, "git", "refs/heads/my patch") == "sglang-git-refs-heads-my-patch"
    assert vs.venv_name("0.5.24", "git", "v0.5.24") == "sglang-git-v0.5.24"
    # A git source without a ref, and characters a directory name should not hold.
    assert vs.venv_name("0.5.24", "git") == "sglang-git-head"
    assert vs.venv_name("0.5.24rc1/local") == "sglang-0.5.24rc1-local"


@pytest.mark.parametrize("source,version,git_version,label", [
    ("pypi", "0.5.23", "v0.5.23", "0.5.23"),
    ("pypi", "0.5.24", None, "0.5.24"),
    ("git", "0.5.23", "v0.5.24", "git v0.5.24"),
    ("git", "0.5.23", "refs/heads/my-patch", "git refs/heads/my-patch"),
    ("none", "0.5.23", "v0.5.23", ""),
])
def test_release_label(source, version, git_version, label):
    """What a unit's fingerprint says it runs (sglang_defaults_release): the version, "git <ref>", or nothing."""
    assert vs.release_label(source, version, git_version) == label


def test_an_interrupted_upgrade_can_be_finished(tmp_path):
    root, units, instances, old = layout(tmp_path)
    new = make_venv(os.path.join(root, "sglang-0.5.24"), "0.5.24")
    make_env(instances[1]["env_file"], new, "0.5.24")
    decided = vs.judge("gpu", vs.observe(instances, root, units, target=new), new)
    assert decided["problems"] == [] and decided["current"] == old and decided["venvs_in_use"] == sorted([old, new])


def test_a_link_as_target_is_the_venv_it_names(tmp_path):
    root, units, instances, old = layout(tmp_path)
    os.symlink(os.path.join(root, "sglang-0.5.22"), os.path.join(root, "previous"))
    seen = vs.observe(instances, root, units, target=os.path.join(root, "previous"))
    assert seen["target"] == {"path": os.path.join(root, "sglang-0.5.22"), "exists": True, "version": "0.5.22"}


# --- the previous venv (what rollback.yml returns to) is never pruned ------------------------------------------

def _final(root, units, instances):
    """What upgrade.yml's last venv_state call decides: no target, the links and units as left by the switch."""
    return vs.judge("gpu", vs.observe(instances, root, units))


def _unreferenced(tmp_path):
    """The layout with no unit naming sglang-0.5.21: only the links keep a venv that no instance runs."""
    root, units, instances, old = layout(tmp_path)
    os.remove(os.path.join(units, "sglang-other.service"))
    return root, units, instances, old


def test_previous_is_kept_after_an_upgrade_without_a_target(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    os.symlink(old, os.path.join(root, "current"))
    os.symlink(os.path.join(root, "sglang-0.5.22"), os.path.join(root, "previous"))
    decided = _final(root, units, instances)
    assert decided["previous"] == os.path.join(root, "sglang-0.5.22")
    assert decided["previous_version"] == "0.5.22"
    assert decided["prunable"] == [os.path.join(root, "sglang-0.5.21")]


def test_previous_is_kept_when_no_instance_and_no_unit_uses_it(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    new = make_venv(os.path.join(root, "sglang-0.5.24"), "0.5.24")
    for inst in instances:
        make_env(inst["env_file"], new, "0.5.24")
    with open(os.path.join(units, "sglang-decode-0.service"), "w") as handle:
        handle.write("ExecStart=%s/bin/python -m sglang.launch_server\n" % new)
    os.symlink(new, os.path.join(root, "current"))
    os.symlink(old, os.path.join(root, "previous"))
    decided = _final(root, units, instances)
    assert (decided["current"], decided["previous"]) == (new, old)
    assert old not in decided["prunable"] and new not in decided["prunable"]
    assert decided["prunable"] == [os.path.join(root, "sglang-0.5.21"), os.path.join(root, "sglang-0.5.22")]


def test_previous_is_kept_with_a_target_too(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    os.symlink(os.path.join(root, "sglang-0.5.21"), os.path.join(root, "previous"))
    target = make_venv(os.path.join(root, "sglang-0.5.24"), "0.5.24")
    decided = vs.judge("gpu", vs.observe(instances, root, units, target=target), target)
    assert decided["prunable"] == [os.path.join(root, "sglang-0.5.22")]


def test_after_a_rollback_both_links_keep_their_venvs(tmp_path):
    """rollback.yml swaps the links: current names the older venv, previous the newer one; neither goes."""
    root, units, instances, old = _unreferenced(tmp_path)
    newer = make_venv(os.path.join(root, "sglang-0.5.24"), "0.5.24")
    os.symlink(old, os.path.join(root, "current"))
    os.symlink(newer, os.path.join(root, "previous"))
    decided = _final(root, units, instances)
    assert (decided["current"], decided["previous"]) == (old, newer)
    assert decided["prunable"] == [os.path.join(root, "sglang-0.5.21"), os.path.join(root, "sglang-0.5.22")]


def test_a_relative_previous_link_is_kept(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    os.symlink("sglang-0.5.22", os.path.join(root, "previous"))
    decided = _final(root, units, instances)
    assert decided["previous"] == os.path.join(root, "sglang-0.5.22")
    assert decided["prunable"] == [os.path.join(root, "sglang-0.5.21")]


def test_the_links_are_not_venvs_of_their_own(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    os.symlink(os.path.join(root, "sglang-0.5.22"), os.path.join(root, "previous"))
    os.symlink(old, os.path.join(root, "current"))
    seen = vs.observe(instances, root, units)
    assert [v["path"] for v in seen["venvs"]] == [os.path.join(root, n) for n in ("sglang-0.5.21", "sglang-0.5.22",
                                                                                  "sglang-0.5.23")]
    assert all(os.path.basename(p) not in vs.LINKS for p in vs.judge("gpu", seen)["prunable"])


def test_previous_is_kept_under_a_venv_root_reached_through_a_symlink(tmp_path):
    (tmp_path / "data").mkdir()
    os.symlink(str(tmp_path / "data"), str(tmp_path / "opt"))
    root, units, instances, old = _unreferenced(tmp_path / "opt")
    os.symlink(os.path.join(root, "sglang-0.5.22"), os.path.join(root, "previous"))
    decided = _final(root, units, instances)
    assert os.path.join(root, "sglang-0.5.22") not in decided["prunable"]
    # What is prunable is still found, named as configured (under the symlinked root).
    assert decided["prunable"] == [os.path.join(root, "sglang-0.5.21")]


def test_a_unit_naming_the_resolved_path_keeps_the_venv(tmp_path):
    (tmp_path / "data").mkdir()
    os.symlink(str(tmp_path / "data"), str(tmp_path / "opt"))
    root, units, instances, old = _unreferenced(tmp_path / "opt")
    with open(os.path.join(units, "sglang-other.service"), "w") as handle:
        handle.write("ExecStart=%s/bin/python -m sglang.launch_server\n" % os.path.realpath(os.path.join(root, "sglang-0.5.21")))
    assert _final(root, units, instances)["prunable"] == [os.path.join(root, "sglang-0.5.22")]


# --- only venvs the collection recorded creating are ever pruned -------------------------------------------------

def test_a_venv_made_by_hand_is_never_prunable(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    mine = make_venv(os.path.join(root, "my-experiment"), "0.5.20")
    os.symlink(old, os.path.join(root, "current"))
    decided = _final(root, units, instances)
    assert mine not in decided["prunable"]
    assert decided["prunable"] == [os.path.join(root, "sglang-0.5.21"), os.path.join(root, "sglang-0.5.22")]
    # Recording it afterwards is refused: it existed before, so this run did not create it.
    result = vs.record_created(root, mine)
    assert (result["changed"], result["recorded"]) == (False, False) and "not created by this run" in result["reason"]
    assert "my-experiment" not in vs.read_record(root)


def test_without_a_record_nothing_is_prunable(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    os.remove(os.path.join(root, vs.RECORD))
    assert _final(root, units, instances)["prunable"] == []


def test_a_venv_an_instance_runs_is_kept_even_when_no_unit_names_it(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    make_env(instances[1]["env_file"], os.path.join(root, "sglang-0.5.21"), "0.5.21")
    assert os.path.join(root, "sglang-0.5.21") not in vs.judge("gpu", vs.observe(instances, root, units))["prunable"]


def test_record_created(tmp_path):
    root = str(tmp_path / "venvs")
    new = os.path.join(root, "sglang-0.5.24")
    # Check mode: says it would record, writes nothing (not even the root).
    assert vs.record_created(root, new, check_mode=True)["changed"] and not os.path.exists(root)
    result = vs.record_created(root, new)
    assert (result["changed"], result["recorded"], result["record"]) == (True, True, os.path.join(root, vs.RECORD))
    assert oct(os.stat(result["record"]).st_mode & 0o777) == "0o644"
    assert vs.read_record(root) == ["sglang-0.5.24"]
    make_venv(new, "0.5.24")
    # Again (a rerun after an interrupted install): already recorded, nothing changes.
    assert vs.record_created(root, new) == dict(result, changed=False, reason="%s is recorded already" % new)
    # An empty directory (made by a failed earlier step) is recorded; a venv outside the root never is.
    os.makedirs(os.path.join(root, "sglang-0.5.25"))
    assert vs.record_created(root, os.path.join(root, "sglang-0.5.25"))["recorded"]
    outside = vs.record_created(root, str(tmp_path / "venv"))
    assert not outside["changed"] and "never pruned" in outside["reason"]
    assert vs.read_record(root) == ["sglang-0.5.24", "sglang-0.5.25"]


def test_an_unreadable_record_records_nothing(tmp_path):
    root = str(tmp_path)
    with open(os.path.join(root, vs.RECORD), "w") as handle:
        handle.write('{"created": ["../escape", "", 3, "sglang-1"]')
    assert vs.read_record(root) == []
    with open(os.path.join(root, vs.RECORD), "w") as handle:
        handle.write('{"created": ["../escape", "", 3, "sglang-1"]}')
    assert vs.read_record(root) == ["sglang-1"]


# --- a rollback needs its previous venv ------------------------------------------------------------------------

def test_a_rollback_to_a_previous_link_whose_venv_is_gone_is_refused(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    gone = os.path.join(root, "sglang-0.5.20")
    os.symlink(gone, os.path.join(root, "previous"))
    target = os.path.join(root, "previous")
    decided = vs.judge("gpu", vs.observe(instances, root, units, target=target), target, must_exist=True)
    (found,) = decided["problems"]
    assert found["variable"] == "sglang_venv_root"
    assert found["message"] == "%s points to %s, which is gone (no %s/bin/python): there is no venv to return to" % (
        target, gone, gone)
    assert "restore %s" % gone in found["fix"] and "no worker was touched" in found["fix"]
    # An upgrade builds its target: a missing one is no problem there.
    assert vs.judge("gpu", vs.observe(instances, root, units, target=target), target)["problems"] == []


def test_a_rollback_without_a_previous_link_is_refused(tmp_path):
    root, units, instances, old = _unreferenced(tmp_path)
    target = os.path.join(root, "previous")
    (found,) = vs.judge("gpu", vs.observe(instances, root, units, target=target), target, must_exist=True)["problems"]
    assert found["message"] == "%s does not exist: there is no venv to return to" % target


def test_the_compile_caches_of_a_pruned_venv_go_with_it(tmp_path):
    from ansible_collections.pdserve.sglang.plugins.module_utils.operations.venv_state import prunable_caches
    from ansible_collections.pdserve.sglang.plugins.module_utils.serving.caches import cache_key
    old, kept = "/opt/sglang/venvs/sglang-0.5.22", "/opt/sglang/venvs/sglang-0.5.23"
    for name in (cache_key("0.5.22", old), cache_key("git v1", old), cache_key("0.5.23", kept), "mine"):
        (tmp_path / name).mkdir()
    assert prunable_caches(str(tmp_path), [old]) == sorted(str(tmp_path / cache_key(v, old)) for v in ("0.5.22", "git v1"))
    assert prunable_caches(str(tmp_path), []) == []
    assert prunable_caches(str(tmp_path / "missing"), [old]) == []
    assert prunable_caches(None, [old]) == []
