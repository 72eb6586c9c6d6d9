# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The KV fabric check's module as the role runs it, on a real GPU: started as root, the probe as an unprivileged user.

    python3 tests/device/kv_fabric_user.py OUTDIR SITE [USER] [SIZE_MIB] [MEMORY]

SITE holds NIXL (and ansible-core for AnsibleModule), unpacked from their wheels. ``kv_fabric_probe`` runs as a module
process of its own (its arguments in a file, its JSON on stdout) with ``user: USER`` (``nobody`` by default), as root:
once in one process (GPU memory both ways), then a target and an initiator in two processes (GPU memory, the handoff in
a directory of USER's). Writes ``<case>.json`` (the module's result) and ``access.json`` (who may open the GPU's device
files and read the Python) into OUTDIR, prints one line per case, and exits non-zero when a case failed.
"""

import json
import os
import pathlib
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODULE = "ansible_collections.pdserve.sglang.plugins.modules.kv_fabric_probe"


def readable_copy(site):
    """This checkout as the collection, and SITE, where USER can read them (the checkout may lie under root's home)."""
    base = pathlib.Path(tempfile.mkdtemp(prefix="pdserve-fabric-user-"))
    os.chmod(base, 0o755)
    tree = base / "coll" / "ansible_collections" / "pdserve"
    tree.mkdir(parents=True)
    shutil.copytree(ROOT / "plugins", tree / "sglang" / "plugins")
    shutil.copytree(site, base / "site")
    subprocess.run(["chmod", "-R", "a+rX", str(base)], check=True)
    return base


def access(user, python):
    """What USER may open: the GPU's device files, and this interpreter's standard library."""
    entry = pwd.getpwnam(user)
    devices = {}
    for path in sorted(pathlib.Path("/dev").glob("nvidia*")):
        info = path.stat()
        devices[str(path)] = {"mode": oct(info.st_mode & 0o777), "uid": info.st_uid, "gid": info.st_gid}
    stdlib = os.path.dirname(os.__file__)
    return {"user": user, "uid": entry.pw_uid, "gid": entry.pw_gid, "devices": devices, "python": python,
            "stdlib": stdlib, "stdlib_mode": oct(os.stat(stdlib).st_mode & 0o777)}


def start(env, work, name, args):
    path = work / (name + ".args.json")
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    return subprocess.Popen([sys.executable, "-m", MODULE, str(path)], env=env, cwd=str(work),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process, timeout=300):
    out, err = process.communicate(timeout=timeout)
    try:
        return json.loads(out)
    except ValueError:
        return {"failed": True, "msg": "no JSON (exit %s)" % process.returncode, "stdout": out[-4000:],
                "stderr": err[-4000:]}


def main():
    out, site = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    user = sys.argv[3] if len(sys.argv) > 3 else "nobody"
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    memory = sys.argv[5] if len(sys.argv) > 5 else "VRAM"  # DRAM: a try of this script where there is no GPU
    out.mkdir(parents=True, exist_ok=True)
    base = readable_copy(site)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(base / "site"), str(base / "coll")]))
    (out / "access.json").write_text(json.dumps(access(user, sys.executable), indent=2), encoding="utf-8")
    work = base / "work"
    work.mkdir()
    results = {"in_process": finish(start(env, work, "one", {"mode": "in_process", "memory": memory, "size_mib": size,
                                                             "rounds": 4, "user": user}))}
    handoff_dir = base / "handoff"
    handoff_dir.mkdir(mode=0o700)
    entry = pwd.getpwnam(user)
    os.chown(handoff_dir, entry.pw_uid, entry.pw_gid)
    handoff = handoff_dir / "handoff.json"
    target = start(env, work, "target", {"mode": "target", "name": "fabric-decode", "slots": 1, "memory": memory,
                                         "size_mib": size, "timeout": 120, "handoff_path": str(handoff), "user": user})
    deadline = time.monotonic() + 120
    while not handoff.exists() and target.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if handoff.exists():
        results["handoff_owner_uid"] = handoff.stat().st_uid
        results["initiator"] = finish(start(env, work, "init", {
            "mode": "initiator", "name": "fabric-prefill", "slot": 0, "memory": memory, "rounds": 4, "timeout": 120,
            "handoff": json.loads(handoff.read_text(encoding="utf-8")), "user": user}))
    results["target"] = finish(target)
    failed = []
    for case in ("in_process", "initiator", "target"):
        result = results.get(case) or {"failed": True, "msg": "did not run (no handoff)"}
        (out / ("%s.json" % case)).write_text(json.dumps(result, indent=2), encoding="utf-8")
        print("%s: %s" % (case, result.get("msg")))
        if result.get("failed"):
            failed.append(case)
    print("handoff written by uid %s (%s is uid %d)" % (results.get("handoff_owner_uid"), user, entry.pw_uid))
    shutil.rmtree(base, ignore_errors=True)
    return 1 if failed or results.get("handoff_owner_uid") != entry.pw_uid else 0


if __name__ == "__main__":
    sys.exit(main())
