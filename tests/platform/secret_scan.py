# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Look for secrets where a local user or a log reader would find them; print where, never what.

The secrets come as a JSON list of strings on stdin (never on this command line). Two modes:

  secret_scan.py host [ROOT ...]   on a stand host, as root: every process's command line (/proc/*/cmdline),
                                   `systemctl status` of the collection's units, the whole journal as JSON (its
                                   _CMDLINE fields too), and every world-readable regular file under the ROOTs
                                   that other users can reach (every directory on the way searchable by them;
                                   default /etc /opt /var /run /tmp /srv /home /root /usr/local)
  secret_scan.py files FILE ...    the given files (the Ansible output of a run)

Prints one JSON object: {"hits": [{"where": ..., "secret": index}], "scanned": {what: count}}. It exits 0 when it
could scan; the caller judges the hits (a test fails on any).
"""

import glob
import json
import os
import stat
import subprocess
import sys

DEFAULT_ROOTS = ["/etc", "/opt", "/var", "/run", "/tmp", "/srv", "/home", "/root", "/usr/local"]
# Larger files are model weights or wheels, not where a key is written.
MAX_FILE = 64 * 2 ** 20
UNITS = ["sglang-*", "pdserve-*", "prometheus*", "grafana*", "alertmanager*"]


def _hits(where, data, secrets):
    return [{"where": where, "secret": i} for i, secret in enumerate(secrets) if secret in data]


def scan_processes(secrets):
    hits, count = [], 0
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue  # the process ended
        count += 1
        hits += _hits("command line of pid %s" % path.split("/")[2], data.replace(b"\0", b" "), secrets)
    return hits, count


def _command(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    return proc.stdout


def scan_logs(secrets):
    hits = _hits("systemctl status", _command(["systemctl", "status", "--no-pager", "--full", "--lines=200"] + UNITS),
                 secrets)
    journal = _command(["journalctl", "--no-pager", "-o", "json", "--all"])
    hits += _hits("journal", journal, secrets)
    return hits, journal.count(b"\n")


def _searchable(path):
    """Whether another user can pass through directory ``path`` (its other-execute bit)."""
    try:
        return bool(os.lstat(path).st_mode & stat.S_IXOTH)
    except OSError:
        return False


def scan_files(roots, secrets, world_readable_only=True):
    """World-readable regular files under the roots that another user can reach: a file below a directory others
    cannot pass through (root's 0700 home, Ansible's 0700 temporary directories) is not theirs to read."""
    hits, count = [], 0
    for root in roots:
        if world_readable_only and not _searchable(root):
            continue
        for directory, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(directory, d))
                       and (not world_readable_only or _searchable(os.path.join(directory, d)))]
            for name in files:
                path = os.path.join(directory, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE:
                    continue
                if world_readable_only and not info.st_mode & stat.S_IROTH:
                    continue
                try:
                    with open(path, "rb") as handle:
                        data = handle.read()
                except OSError:
                    continue
                count += 1
                hits += _hits(path, data, secrets)
    return hits, count


def main(argv):
    secrets = [s.encode() for s in json.load(sys.stdin) if isinstance(s, str) and len(s) >= 8]
    if not secrets:
        print(json.dumps({"error": "no secrets of 8 characters or more on stdin: nothing to look for"}))
        return 2
    mode, args = (argv[0], argv[1:]) if argv else ("", [])
    scanned, hits = {"secrets": len(secrets)}, []
    if mode == "host":
        for what, (found, count) in (("processes", scan_processes(secrets)), ("journal lines", scan_logs(secrets)),
                                     ("world-readable files", scan_files(args or DEFAULT_ROOTS, secrets))):
            hits += found
            scanned[what] = count
    elif mode == "files" and args:
        missing = [path for path in args if not os.path.isfile(path)]
        if missing:
            print(json.dumps({"error": "no such file: %s" % ", ".join(missing)}))
            return 2
        for path in args:
            with open(path, "rb") as handle:
                hits += _hits(path, handle.read(), secrets)
        scanned["files"] = len(args)
    else:
        print(__doc__)
        return 2
    print(json.dumps({"hits": hits, "scanned": scanned}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
