# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""After a reboot: did this host's units start by themselves, in their order? Run on the host (python3, systemctl).

For each unit named on the command line (glob patterns as systemctl takes them): it is active, started in this boot
(after systemd itself started), did not restart, and every unit of its After= list that is active entered its active
state before this unit left inactive. Prints one line per unit (seconds since systemd started); exit 1 on a violation.

    python3 unit_order.py 'sglang-*.service' prometheus.service
"""
import subprocess
import sys

PROPS = ("Id", "ActiveState", "NRestarts", "After", "InactiveExitTimestampMonotonic", "ActiveEnterTimestampMonotonic")


def show(properties, *units):
    """[{property: value}] of each unit (of the manager itself without units)."""
    out = subprocess.run(["systemctl", "show", "--no-pager", "--property=" + properties, "--"] + list(units),
                         check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    units, current = [], {}
    for line in out.splitlines() + [""]:
        if not line.strip():
            if current:
                units.append(current)
            current = {}
            continue
        key, _sep, value = line.partition("=")
        current[key] = value
    return units


def main(patterns):
    boot = int(show("UserspaceTimestampMonotonic")[0]["UserspaceTimestampMonotonic"])
    names = subprocess.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "--type=service"] + patterns,
                           check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout.split()
    names = [n for n in names if n.endswith(".service")]
    if not names:
        print("VIOLATION: no unit matches %s" % " ".join(patterns))
        return 1
    bad = []
    for unit in show(",".join(PROPS), *names):
        name, started = unit["Id"], int(unit["InactiveExitTimestampMonotonic"] or 0)
        before = []
        for dep in (unit.get("After") or "").split():
            dep_state = show("Id,ActiveState,ActiveEnterTimestampMonotonic", dep)[0]
            entered = int(dep_state.get("ActiveEnterTimestampMonotonic") or 0)
            if dep_state.get("ActiveState") != "active" or not entered:
                continue
            if entered > started:
                bad.append("%s started %.2f s before %s (its After=) was active" % (name, (entered - started) / 1e6, dep))
            elif dep.endswith(".target") or dep.startswith(("sglang-", "pdserve-", "prometheus")):
                before.append("%s %.2f s" % (dep, (entered - boot) / 1e6))
        if unit["ActiveState"] != "active":
            bad.append("%s is %s" % (name, unit["ActiveState"]))
        if started <= boot:
            bad.append("%s did not start in this boot" % name)
        if unit["NRestarts"] not in ("0", ""):
            bad.append("%s restarted %s times since boot" % (name, unit["NRestarts"]))
        print("%s: started %.2f s after systemd, active at %.2f s, after %s" % (
            name, (started - boot) / 1e6, (int(unit["ActiveEnterTimestampMonotonic"] or 0) - boot) / 1e6,
            ", ".join(sorted(before)) or "nothing of ours"))
    for line in bad:
        print("VIOLATION: " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
