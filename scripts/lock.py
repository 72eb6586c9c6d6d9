"""Write the pip locks with hashes; run it as `bash scripts/lock.sh [--wheelhouse]` (that script brings uv).

Default: the locks that need PyPI.
  requirements.lock                                  the test tool chain (requirements.txt), CPython 3.11, for
                                                     scripts/setup.sh
  roles/sglang_install/files/locks/<profile>-py<X.Y>.lock
                                                     what sglang_install installs with its pinned versions
                                                     (profile servers: torch, SGLang, sglang-router, NIXL;
                                                     router: sglang-router and smg), CPython 3.11 (Debian 12) and 3.12
                                                     (Ubuntu 24.04), x86_64 Linux, glibc >= 2.34
--out DIR [-e NAME=VALUE ...]: only the role's locks, for other pins (-e sglang_install_version=0.5.24), into DIR;
  point sglang_install_pip_lock at DIR.
--wheelhouse [DIR]: the locks of the test inventories, from the exact files of the machine's wheelhouse (offline):
  <locks dir>/local/{servers,router}-py3.11.lock     inventories/local (the serving and monitoring scenarios)
  <locks dir>/sglang_install/servers-py3.11.lock     the sglang_install scenario
  where <locks dir> is $PDSERVE_CACHE/wheelhouse-locks (PDSERVE_CACHE: default /var/cache/pdserve), where the
  inventories look for them.

Each lock is `uv pip compile --generate-hashes` of the requirements the role asks for (plan.py's pip_requirements(),
the same function the role reads them from), written next to its input (<name>.in).
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_DIR = ROOT / "roles" / "sglang_install" / "files" / "locks"
# The CPython of each supported target: Debian 12 and Ubuntu 24.04.
SHIPPED_PYTHONS = ("3.11", "3.12")
# SGLang 0.5.23's wheels are manylinux_2_34 (Debian 12 has glibc 2.36, Ubuntu 24.04 2.39).
PLATFORM = "x86_64-manylinux_2_34"
# The Python scripts/setup.sh makes the tool chain's venv with on these machines (python3.11).
TOOLCHAIN_PYTHON = "3.11"
WHEELHOUSE_PYTHON = "3.11"  # the bookworm test containers
COMMAND = "bash scripts/lock.sh"
# The test inventories whose installs the wheelhouse locks cover: (name, inventory variables file, key path to the
# variables inside it, profiles).
TEST_INVENTORIES = (
    ("local", "inventories/local/group_vars/all/main.yml", (), ("servers", "router")),
    ("sglang_install", "extensions/molecule/sglang_install/molecule.yml", ("provisioner", "inventory", "group_vars", "all"),
     ("servers",)),
)


def collection():
    """Import the collection's plan and lock modules from this tree (as ansible_collections.pdserve.sglang)."""
    links = tempfile.mkdtemp(prefix="pdserve-lock-")
    os.makedirs(os.path.join(links, "ansible_collections", "pdserve"))
    os.symlink(str(ROOT), os.path.join(links, "ansible_collections", "pdserve", "sglang"))
    sys.path.insert(0, links)
    from ansible_collections.pdserve.sglang.plugins.module_utils.install import lock, plan  # noqa: E402
    return plan, lock


def _scalar(text, name):
    """A top-level ``name: value`` of a YAML file (quotes dropped): the defaults files hold plain scalars."""
    match = re.search(r"^%s:[ \t]*(.*?)[ \t]*$" % re.escape(name), text, re.M)
    if not match:
        sys.exit("lock: %s is not set at the top level of its defaults file" % name)
    return match.group(1).strip("'\"")


def _list(text, name):
    """A top-level ``name:`` followed by ``  - item`` lines, or ``name: []``."""
    match = re.search(r"^%s:[ \t]*(\[\])?[ \t]*\n((?:[ \t]+-[^\n]*\n)*)" % re.escape(name), text, re.M)
    if not match:
        sys.exit("lock: %s is not a list at the top level of its defaults file" % name)
    return [line.split("-", 1)[1].strip().strip("'\"") for line in match.group(2).splitlines()]


def role_defaults():
    """The pins the collection installs by default (sglang_defaults and sglang_install defaults), without YAML."""
    shared = (ROOT / "roles" / "sglang_defaults" / "defaults" / "main.yml").read_text()
    install = (ROOT / "roles" / "sglang_install" / "defaults" / "main.yml").read_text()
    return {
        "source": _scalar(shared, "sglang_install_source"),
        "version": _scalar(shared, "sglang_install_version"),
        "router_version": _scalar(shared, "sglang_router_version"),
        # The router's venv only (the router profile): smg beside sglang-router.
        "router_smg_version": _scalar(shared, "sglang_router_smg_version"),
        "torch_packages": _list(install, "sglang_install_torch_packages"),
        "nixl_source": _scalar(install, "sglang_install_nixl_source"),
        "nixl_package": _scalar(install, "sglang_install_nixl_package"),
        "nixl_version": _scalar(install, "sglang_install_nixl_version"),
        "extras": _list(install, "sglang_install_extras"),
        "extra_packages": _list(install, "sglang_install_extra_packages"),
        "no_deps": _scalar(install, "sglang_install_no_deps") == "true",
    }


def settings_of(variables, defaults):
    """The role's settings (plan.py's keys) that an inventory's sglang_install_* variables give."""
    s = dict(defaults)
    for key in list(s):
        if "sglang_install_" + key in variables:
            s[key] = variables["sglang_install_" + key]
    if "sglang_router_version" in variables and "sglang_install_router_version" not in variables:
        s["router_version"] = variables["sglang_router_version"]
    if "sglang_router_smg_version" in variables:
        s["router_smg_version"] = variables["sglang_router_smg_version"]
    for key, value in s.items():
        if isinstance(value, str) and "{{" in value:
            sys.exit("lock: the inventory sets sglang_install_%s to a template (%s): write the value" % (key, value))
    return s


def nixl_mode(source):
    """Where NIXL comes from in a container without a system UCX (plan.nixl_mode with no UCX)."""
    return "pypi" if source in ("auto", "pypi") else source


def asked(plan, settings, profile):
    """``(resolved with dependencies, installed with --no-deps)``: the requirements of one venv."""
    base = {key: value for key, value in settings.items() if key != "router_smg_version"}
    s = plan.profile(base, profile, "/venv", settings["router_version"], settings.get("router_smg_version") or "")
    wanted = plan.pip_requirements(s, nixl_mode(s["nixl_source"]))
    if s.get("no_deps") and wanted["sglang"]:
        return wanted["torch"] + wanted["packages"], wanted["sglang"]
    return wanted["all"], []


def uv(args):
    command = [os.environ.get("PDSERVE_UV", "uv"), "pip", "compile", "--no-config", "--quiet", "--generate-hashes",
               "--custom-compile-command", COMMAND] + args
    result = subprocess.run(command, cwd=str(ROOT), check=False)
    if result.returncode != 0:
        sys.exit("lock: uv failed (%s): %s" % (result.returncode, " ".join(command)))


def _relative(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def published(lock_module, python):
    """``{(name, version): hashes}`` of the committed locks resolved from PyPI for ``python``."""
    known = {}
    for path in [ROOT / "requirements.lock"] + sorted(SHIPPED_DIR.glob("*-py%s.lock" % python)):
        for key, pin in lock_module.parse(path.read_text())["pins"].items():
            known.setdefault((key, pin["version"]), set()).update(pin["hashes"])
    return known


def unpublished(parsed, known):
    """The pins of a wheelhouse lock whose file has none of the hashes the committed locks list for that version."""
    return sorted("%s==%s" % (pin["name"], pin["version"]) for key, pin in parsed["pins"].items()
                  if (key, pin["version"]) in known and not set(pin["hashes"]) & known[(key, pin["version"])])


def compile_lock(lock_module, requirements, no_deps, out, python, sources, files_dir=None, source=None, known=None):
    """Write ``out`` (and its input: ``out`` with .in, unless ``source`` is given) and check it with the parser the
    role uses."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if source is None:
        source = out.with_suffix(".in")
        lines = ["# The input of %s (written by %s)." % (out.name, COMMAND)] + list(requirements)
        source.write_text("\n".join(lines) + "\n")
    tmp = out.with_name(out.name + ".new")
    uv(sources + ["--python-version", python, "--python-platform", PLATFORM, "-o", _relative(tmp), _relative(source)])
    text = tmp.read_text()
    for requirement in no_deps:
        text += file_pin(requirement, files_dir)
    parsed = lock_module.parse(text)
    if parsed["errors"]:
        sys.exit("lock: %s: %s" % (out, "; ".join(parsed["errors"])))
    # A wheelhouse file of a version the committed locks also pin must be one of the files PyPI published for it.
    strangers = unpublished(parsed, known or {})
    if strangers:
        tmp.unlink()
        sys.exit("lock: %s: the wheelhouse files of %s have none of the hashes requirements.lock or the shipped locks list "
                 "for them: replace them (scripts/wheelhouse.sh --force)" % (files_dir, ", ".join(strangers)))
    tmp.write_text(text)
    tmp.replace(out)
    print("lock: %s: %d pins (Python %s)" % (_relative(out), len(parsed["pins"]), python))


def file_pin(requirement, files_dir):
    """A lock entry, from the wheel files in ``files_dir``, for a requirement installed without its dependencies."""
    name, version = requirement.partition("==")[::2]
    base = re.sub(r"[-_.]+", "_", name).lower()
    wheels = sorted(p for p in Path(files_dir).glob("*.whl")
                    if p.name.split("-")[0].lower() == base and p.name.split("-")[1] == version)
    if not wheels:
        sys.exit("lock: no wheel of %s in %s" % (requirement, files_dir))
    hashes = " \\\n".join("    --hash=sha256:%s" % hashlib.sha256(p.read_bytes()).hexdigest() for p in wheels)
    return "%s==%s \\\n%s\n    # without its dependencies (sglang_install_no_deps)\n" % (name, version, hashes)


LIST_SETTINGS = ("torch_packages", "extra_packages", "extras")


def overrides(pairs):
    """``-e sglang_install_version=0.5.24``-style settings (lists comma-separated) for a lock of other versions."""
    variables = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        key = name[len("sglang_install_"):] if name.startswith("sglang_install_") else None
        if not sep or (name not in ("sglang_router_version", "sglang_router_smg_version") and key not in role_defaults()):
            sys.exit("lock: -e %s: give NAME=VALUE with one of sglang_router_version, sglang_router_smg_version, %s" % (
                pair, ", ".join("sglang_install_" + k for k in sorted(role_defaults()))))
        variables[name] = [v for v in value.split(",") if v] if key in LIST_SETTINGS else value
    return variables


def shipped(plan, lock_module, out=None, variables=None):
    """requirements.lock and the shipped locks; with ``out``, only the role's locks for ``variables``, into ``out``."""
    # A mirror instead of PyPI, and an index searched first (uv's order), e.g. PyTorch's for a torch of a CUDA of choice.
    index = (["--index-url", os.environ["PDSERVE_LOCK_INDEX_URL"]] if os.environ.get("PDSERVE_LOCK_INDEX_URL") else []) \
        + (["--extra-index-url", os.environ["PDSERVE_LOCK_EXTRA_INDEX_URL"]] if os.environ.get("PDSERVE_LOCK_EXTRA_INDEX_URL") else [])
    if out is None:
        compile_lock(lock_module, [], [], ROOT / "requirements.lock", TOOLCHAIN_PYTHON, index, source=ROOT / "requirements.txt")
    settings = settings_of(variables or {}, role_defaults())
    for profile in ("servers", "router"):
        resolved, no_deps = asked(plan, settings, profile)
        for python in SHIPPED_PYTHONS:
            compile_lock(lock_module, resolved, no_deps, Path(out or SHIPPED_DIR) / ("%s-py%s.lock" % (profile, python)),
                         python, index)


def wheelhouse(plan, lock_module, directory):
    import yaml  # the tool chain's Python (scripts/lock.sh runs this mode with .venv/bin/python)

    locks = Path(os.environ.get("PDSERVE_CACHE") or "/var/cache/pdserve") / "wheelhouse-locks"
    if not Path(directory).is_dir():
        sys.exit("lock: %s is not a directory (fill it with scripts/wheelhouse.sh)" % directory)
    # Idempotent, as scripts/setup.sh is: nothing is written when the wheels and every input are as last time.
    digest = hashlib.sha256()
    for wheel in sorted(Path(directory).glob("*.whl")):
        info = wheel.stat()
        digest.update(("%s %d %d\n" % (wheel.name, info.st_size, info.st_mtime_ns)).encode())
    inputs = [inventory[1] for inventory in TEST_INVENTORIES] + [
        "requirements.lock", "roles/sglang_install/files/locks/servers-py%s.lock" % WHEELHOUSE_PYTHON,
        "roles/sglang_defaults/defaults/main.yml", "roles/sglang_install/defaults/main.yml", "scripts/lock.py",
        "plugins/module_utils/install/plan.py", "plugins/module_utils/install/lock.py"]
    for path in inputs:
        digest.update((ROOT / path).read_bytes())
    stamp = locks / ".stamp"
    if stamp.is_file() and stamp.read_text().strip() == digest.hexdigest():
        print("lock: %s is up to date with %s" % (locks, directory))
        return
    defaults = role_defaults()
    known = published(lock_module, WHEELHOUSE_PYTHON)
    for name, path, keys, profiles in TEST_INVENTORIES:
        variables = yaml.safe_load((ROOT / path).read_text())
        for key in keys:
            variables = variables[key]
        settings = settings_of(variables, defaults)
        for profile in profiles:
            resolved, no_deps = asked(plan, settings, profile)
            compile_lock(lock_module, resolved, no_deps, locks / name / ("%s-py%s.lock" % (profile, WHEELHOUSE_PYTHON)),
                         WHEELHOUSE_PYTHON, ["--no-index", "--find-links", str(directory)], files_dir=directory,
                         known=known)
    stamp.write_text(digest.hexdigest() + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheelhouse", nargs="?", const=os.environ.get("PDSERVE_WHEELHOUSE") or os.path.join(
        os.environ.get("PDSERVE_CACHE", "/var/cache/pdserve"), "wheelhouse"), metavar="DIR",
        help="write the test inventories' locks from this wheelhouse instead (default: the machine's)")
    parser.add_argument("--out", metavar="DIR", help="write only the role's locks, into DIR (set sglang_install_pip_lock to it)")
    parser.add_argument("-e", dest="variables", action="append", metavar="NAME=VALUE",
                        help="with --out: another pin than the defaults, e.g. -e sglang_install_version=0.5.24")
    args = parser.parse_args(argv)
    if args.variables and not args.out:
        parser.error("-e needs --out: the shipped locks are those of the role's defaults")
    plan, lock_module = collection()
    if args.wheelhouse:
        wheelhouse(plan, lock_module, args.wheelhouse)
    else:
        shipped(plan, lock_module, args.out and os.path.abspath(args.out), overrides(args.variables))


if __name__ == "__main__":
    main()
