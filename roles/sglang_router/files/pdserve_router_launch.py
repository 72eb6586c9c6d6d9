# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Start the PD router with its keys read from systemd credentials, never from a command line.

sglang-router 0.3.2 and its successor smg 1.13 (the Shepherd Model Gateway) take their keys only as flags (--api-key,
--control-plane-api-keys), and a flag is readable by every local user in /proc/PID/cmdline, ps and systemctl status.
The unit loads each key as a credential (LoadCredential=NAME:PATH of a root-only file); systemd hands the process a
private copy under $CREDENTIALS_DIRECTORY. This launcher reads them and calls the chosen router's Python entry point
(sglang_router.launch_router or smg.launch_router: parse_router_args, launch_router; both take the same flags) with
the flags built in Python:

    python pdserve_router_launch.py --implementation sglang-router|smg [--api-key-credential NAME] \
        [--control-plane-api-key-credential NAME] [--tls-cert-credential NAME --tls-key-credential NAME] \
        [--workers-file PATH] -- ROUTER FLAGS...

The TLS certificate and key of the client port are credentials too: the router reads files, so the launcher passes
the path of systemd's private copy ($CREDENTIALS_DIRECTORY/NAME, readable by the router alone), never the key itself.

The workers come from the worker set file (JSON: {"prefill": [{"url", "bootstrap_port"}], "decode": [{"url"}]}),
not from the unit: the role rewrites the file and registers or deregisters workers at run time (POST and DELETE
/workers) without a restart, and the router reads the same set here at its next start.

Installed by pdserve.sglang.sglang_router (root-owned, read-only); run by the router's own python.
"""
import argparse
import importlib
import json
import os
import sys
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

# The Python package of each router implementation (its launch_router module has parse_router_args and launch_router).
# This file runs on the host without the collection: serving/cmdline.py's ROUTER_IMPLEMENTATIONS is held equal by a test.
IMPLEMENTATIONS = {"sglang-router": "sglang_router", "smg": "smg"}
# id:name:role:key, as sglang-router and smg parse it; admin may add and remove workers.
CONTROL_PLANE_ENTRY = "pdserve:pdserve-operations:admin:%s"
SECRET_FLAGS = ("--api-key", "--control-plane-api-keys")
# Given by the launcher when TLS is on; the same flag on the command line as well would be ambiguous.
TLS_FLAGS = {"tls_cert_credential": "--tls-cert-path", "tls_key_credential": "--tls-key-path"}


class LaunchError(Exception):
    """What stops the launch, said in one line (never a key)."""


def read_credential(name: str, directory: Optional[str]) -> str:
    """The key in credential ``name``: one line of visible ASCII (a trailing line break is dropped)."""
    if not directory:
        raise LaunchError("credential %s: $CREDENTIALS_DIRECTORY is not set; start the router through "
                          "sglang-router.service, whose LoadCredential= provides it" % name)
    path = os.path.join(directory, name)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise LaunchError("credential %s: cannot read %s (%s); the unit's LoadCredential= names it: rerun the "
                          "router role (site.yml --tags router)" % (name, path, exc.strerror or exc))
    value = raw.decode("ascii", "replace").rstrip("\r\n")
    if not value:
        raise LaunchError("credential %s (%s) is empty: set the key in the inventory and rerun the router role" % (name, path))
    if any(not 0x21 <= ord(char) <= 0x7e for char in value):
        raise LaunchError("credential %s (%s) holds spaces, control or non-ASCII characters: a key is one bearer "
                          "token of visible ASCII" % (name, path))
    return value


def credential_path(name: str, directory: Optional[str]) -> str:
    """The path of credential ``name`` (a PEM file), after checking that it is there, readable and not empty."""
    if not directory:
        raise LaunchError("credential %s: $CREDENTIALS_DIRECTORY is not set; start the router through "
                          "sglang-router.service, whose LoadCredential= provides it" % name)
    path = os.path.join(directory, name)
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError as exc:
        raise LaunchError("credential %s: cannot read %s (%s); the unit's LoadCredential= names it: rerun the "
                          "router role (site.yml --tags router)" % (name, path, exc.strerror or exc))
    if b"-----BEGIN " not in head:
        raise LaunchError("credential %s (%s) is not a PEM file: check sglang_router_tls and its files, then rerun "
                          "the router role" % (name, path))
    return path


def read_workers(path: str) -> List[str]:
    """The --prefill URL PORT and --decode URL flags of the worker set file at ``path``."""
    try:
        with open(path, "r") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise LaunchError("worker set %s: cannot read it as JSON (%s); rerun the router role (site.yml --tags router)"
                          % (path, getattr(exc, "strerror", None) or exc))
    if not isinstance(data, dict) or not all(isinstance(data.get(kind, []), list) for kind in ("prefill", "decode")):
        raise LaunchError("worker set %s: expected {\"prefill\": [...], \"decode\": [...]}" % path)
    words = []
    for kind in ("prefill", "decode"):
        for entry in data.get(kind, []):
            url = entry.get("url") if isinstance(entry, dict) else None
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise LaunchError("worker set %s: a %s entry has no http(s) url: %r" % (path, kind, entry))
            words += ["--%s" % kind, url]
            if kind == "prefill" and entry.get("bootstrap_port") is not None:
                port = entry["bootstrap_port"]
                if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
                    raise LaunchError("worker set %s: %s has bootstrap_port %r, not a port" % (path, url, port))
                words.append(str(port))
    if "--prefill" not in words or "--decode" not in words:
        raise LaunchError("worker set %s: a PD router needs at least one prefill and one decode worker; mark fewer "
                          "instances in_service: false and rerun the router role" % path)
    return words


def parse(argv: Sequence[str]) -> Tuple[argparse.Namespace, List[str]]:
    """The launcher's own options (before ``--``) and the router's flags (after it)."""
    argv = list(argv)
    if "--" in argv:
        split = argv.index("--")
        own, router = argv[:split], argv[split + 1:]
    else:
        own, router = [], argv
    parser = argparse.ArgumentParser(prog="pdserve_router_launch", allow_abbrev=False,
                                     description="the PD router with its keys from systemd credentials")
    parser.add_argument("--implementation", choices=sorted(IMPLEMENTATIONS), required=True,
                        help="the router package to start: sglang-router (sglang_router) or smg")
    parser.add_argument("--api-key-credential", metavar="NAME", help="credential holding the client key (--api-key)")
    parser.add_argument("--control-plane-api-key-credential", metavar="NAME",
                        help="credential holding the worker-management key (--control-plane-api-keys, role admin)")
    parser.add_argument("--tls-cert-credential", metavar="NAME",
                        help="credential holding the client port's TLS certificate chain (PEM, --tls-cert-path)")
    parser.add_argument("--tls-key-credential", metavar="NAME",
                        help="credential holding the client port's TLS private key (PEM, --tls-key-path)")
    parser.add_argument("--workers-file", metavar="PATH",
                        help="worker set file (JSON) whose workers become --prefill and --decode flags")
    return parser.parse_args(own), router


def router_argv(options: argparse.Namespace, router: Sequence[str], environ: Mapping[str, str]) -> List[str]:
    """The router's flags with the keys added; refuses a key given on the command line."""
    for word in router:
        if str(word).split("=", 1)[0] in SECRET_FLAGS:
            raise LaunchError("%s is on the command line, where every local user can read it: give the key as a "
                              "credential (--api-key-credential / --control-plane-api-key-credential)"
                              % str(word).split("=", 1)[0])
    tls = [option for option in TLS_FLAGS if getattr(options, option)]
    if len(tls) == 1:
        raise LaunchError("TLS needs both --tls-cert-credential and --tls-key-credential (got only --%s)"
                          % tls[0].replace("_", "-"))
    for word in router:
        if tls and str(word).split("=", 1)[0] in TLS_FLAGS.values():
            raise LaunchError("%s is on the command line and given by a credential: leave it to the credential"
                              % str(word).split("=", 1)[0])
    if options.workers_file and any(str(word).split("=", 1)[0] in ("--prefill", "--decode") for word in router):
        raise LaunchError("--prefill/--decode are on the command line and the worker set file gives the workers: "
                          "keep them in one place (the file)")
    argv = list(router)
    if options.workers_file:
        argv += read_workers(options.workers_file)
    directory = environ.get("CREDENTIALS_DIRECTORY")
    if options.api_key_credential:
        argv += ["--api-key", read_credential(options.api_key_credential, directory)]
    if options.control_plane_api_key_credential:
        key = read_credential(options.control_plane_api_key_credential, directory)
        argv += ["--control-plane-api-keys", CONTROL_PLANE_ENTRY % key]
    for option in tls:
        argv += [TLS_FLAGS[option], credential_path(getattr(options, option), directory)]
    return argv


def _launch(argv: List[str], implementation: str) -> None:
    module = importlib.import_module("%s.launch_router" % IMPLEMENTATIONS[implementation])
    module.launch_router(module.parse_router_args(argv))


def main(argv: Optional[Sequence[str]] = None, environ: Optional[Dict[str, str]] = None,
         launch: Callable[[List[str], str], None] = _launch) -> int:
    options, router = parse(sys.argv[1:] if argv is None else argv)
    try:
        args = router_argv(options, router, os.environ if environ is None else environ)
    except LaunchError as exc:
        sys.stderr.write("pdserve_router_launch: %s\n" % exc)
        return 2
    launch(args, options.implementation)
    return 0


if __name__ == "__main__":
    sys.exit(main())
