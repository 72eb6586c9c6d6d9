# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Just enough ``systemctl`` and ``journalctl`` to run the operations playbooks on loopback, without systemd.

This machine's PID 1 is not systemd, so the playbooks' own tests (tests/integration/test_operations_playbooks.py)
put this file, linked as ``systemctl`` and ``journalctl``, first on PATH. Units are processes described in a JSON
registry (``PDSERVE_FAKE_SYSTEMD``): ``{unit: {cmd, env, log, pid, start_usec}}``. It knows:
``systemctl restart|start|stop UNIT``, ``systemctl daemon-reload``, ``systemctl show UNIT --property=...``,
``journalctl -u UNIT [-n N]`` and ``systemd-run --wait --pipe [-p EnvironmentFile=...] -- COMMAND`` (the precompile's
transient unit: the command with the env file's variables, waited for, its output and exit status passed through; the
other properties, user and sandbox, are not emulated). A restart stops the process group (SIGTERM, then SIGKILL after 10 s) and starts
the same command line again, as ``systemctl restart`` of a ``Type=exec`` unit with ``KillMode=control-group`` does.
"""
import fcntl
import json
import os
import signal
import subprocess
import sys
import time


def _registry_path():
    return os.environ["PDSERVE_FAKE_SYSTEMD"]


class Registry(object):
    def __enter__(self):
        self.lock = open(_registry_path() + ".lock", "a+")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        with open(_registry_path()) as handle:
            self.units = json.load(handle)
        return self

    def __exit__(self, *exc):
        with open(_registry_path() + ".tmp", "w") as handle:
            json.dump(self.units, handle)
        os.replace(_registry_path() + ".tmp", _registry_path())
        fcntl.flock(self.lock, fcntl.LOCK_UN)
        self.lock.close()


def alive(pid):
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (IOError, OSError, IndexError):
        return False


def stop(unit):
    pid = unit.get("pid")
    if alive(pid):
        try:
            os.killpg(pid, signal.SIGTERM)
        except OSError:
            pass
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)
    unit["pid"] = 0


def _words(text):
    """The words of an ExecStart= value, as systemd splits and unquotes them (double quotes, \\, $$, %%)."""
    words, word, quoted, i = [], None, False, 0
    while i < len(text):
        char = text[i]
        if char == "\\" and quoted and i + 1 < len(text):
            word = (word or "") + {"n": "\n"}.get(text[i + 1], text[i + 1])
            i += 2
            continue
        if char == '"':
            quoted = not quoted
            word = word or ""
        elif char.isspace() and not quoted:
            if word is not None:
                words.append(word)
            word = None
        else:
            word = (word or "") + char
        i += 1
    if word is not None:
        words.append(word)
    return [w.replace("$$", "$").replace("%%", "%") for w in words]


def read_unit(path):
    """(argv, environment) from a unit file the roles wrote: its ExecStart (continuation lines joined) and
    EnvironmentFile (KEY="value" lines)."""
    with open(path) as handle:
        text = handle.read().replace("\\\n", " ")
    argv, env = [], {}
    for line in text.splitlines():
        if line.startswith("ExecStart="):
            argv = _words(line[len("ExecStart="):])
        elif line.startswith("EnvironmentFile="):
            env.update(read_unit_env(line.split("=", 1)[1])[1])
    return argv, env


def start(unit):
    env = dict(os.environ)
    env.update(unit.get("env") or {})
    cmd = unit.get("cmd")
    if unit.get("unit_file"):
        cmd, unit_env = read_unit(unit["unit_file"])
        env.update(unit_env)
    log = open(unit["log"], "ab")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True, cwd=unit.get("cwd") or "/")
    unit["pid"] = proc.pid
    unit["start_usec"] = int(time.monotonic() * 1e6)
    unit["restarts"] = unit.get("restarts", 0) + 1


def systemctl(args):
    args = [a for a in args if a not in ("--no-pager", "--quiet")]
    if not args:
        return 1
    verb = args[0]
    if verb == "daemon-reload":
        return 0
    if verb in ("restart", "start", "stop"):
        with Registry() as reg:
            for name in args[1:]:
                if name not in reg.units:
                    sys.stderr.write("Failed to %s %s: Unit %s not found.\n" % (verb, name, name))
                    return 5
                if verb in ("restart", "stop"):
                    stop(reg.units[name])
                if verb in ("restart", "start") and not alive(reg.units[name].get("pid")):
                    start(reg.units[name])
        return 0
    if verb == "show":
        with Registry() as reg:
            name = args[1]
            unit = reg.units.get(name)
            if unit is None:
                print("LoadState=not-found\nActiveState=inactive\nSubState=dead")
                return 0
            running = alive(unit.get("pid"))
            print("LoadState=loaded")
            print("ActiveState=%s" % ("active" if running else "failed"))
            print("SubState=%s" % ("running" if running else "failed"))
            print("Result=success")
            print("NRestarts=0")
            print("MainPID=%d" % (unit.get("pid") or 0))
            print("ExecMainStartTimestampMonotonic=%d" % unit.get("start_usec", 0))
        return 0
    sys.stderr.write("fake systemctl: %s is not emulated\n" % verb)
    return 1


def journalctl(args):
    unit = args[args.index("-u") + 1] if "-u" in args else None
    lines = int(args[args.index("-n") + 1]) if "-n" in args else 200
    with Registry() as reg:
        entry = reg.units.get(unit)
    if entry is None or not os.path.exists(entry["log"]):
        print("-- No entries --")
        return 0
    with open(entry["log"], "rb") as handle:
        text = handle.read().decode("utf-8", "replace").splitlines()[-lines:]
    for line in text:
        print("[%12.6f] fake %s: %s" % (entry.get("start_usec", 0) / 1e6, unit, line))
    return 0


def systemd_run(args):
    """``systemd-run --wait --pipe ... -- COMMAND`` as a transient unit runs it, with its ``EnvironmentFile=``."""
    split = args.index("--")
    options, command = args[:split], args[split + 1:]
    env = dict(os.environ)
    for index, word in enumerate(options):
        if word == "-p" and options[index + 1].startswith("EnvironmentFile="):
            _argv, unit_env = read_unit_env(options[index + 1].split("=", 1)[1])
            env.update(unit_env)
    if "--wait" not in options or "--pipe" not in options:
        sys.stderr.write("fake systemd-run: only --wait --pipe is emulated\n")
        return 1
    return subprocess.run(command, env=env, stdin=subprocess.DEVNULL, check=False).returncode


def read_unit_env(path):
    """([], environment) of one env file, as read_unit() reads a unit's EnvironmentFile=."""
    env = {}
    with open(path.lstrip("-")) as handle:
        for item in handle.read().splitlines():
            if "=" in item and not item.startswith("#"):
                key, value = item.split("=", 1)
                env[key] = _words(value)[0] if value else ""
    return [], env


def install(bin_dir, python=sys.executable):
    """Write ``systemctl``, ``journalctl`` and ``systemd-run`` into ``bin_dir`` (put it first on PATH)."""
    os.makedirs(bin_dir, exist_ok=True)
    for tool in ("systemctl", "journalctl", "systemd-run"):
        path = os.path.join(bin_dir, tool)
        with open(path, "w") as handle:
            handle.write('#!/bin/sh\nexec "%s" "%s" %s "$@"\n' % (python, os.path.abspath(__file__), tool))
        os.chmod(path, 0o755)
    return bin_dir


def main(argv):
    if argv[1:2] == ["journalctl"]:
        return journalctl(argv[2:])
    if argv[1:2] == ["systemd-run"]:
        return systemd_run(argv[2:])
    return systemctl(argv[2:] if argv[1:2] == ["systemctl"] else argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
