# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""TLS of the router's client port, judged on the controller: what its certificate must name, and whether the
files an operator provides (sglang_router_tls provided) fit together, before anything changes on a host.

The files are controller paths: the filters that call this run where they are. The certificate checks use the
``cryptography`` library (a dependency of ansible-core, so the controller has it); without it only readability and
the PEM headers are judged. No message ever holds a key's content.
"""

import ipaddress
import os
from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import problem


def _cryptography():
    """(x509, serialization) from the library cryptography, or None where it is missing. Imported when a certificate
    is read, not with this file: every task that renders a router filter imports this file afresh (Ansible forks a
    worker per task), and cryptography's import alone cost tens of milliseconds each time."""
    try:
        from cryptography import x509  # pylint: disable=import-outside-toplevel
        from cryptography.hazmat.primitives import serialization  # pylint: disable=import-outside-toplevel
    except ImportError:  # pragma: no cover - ansible-core depends on it
        return None
    return x509, serialization


def has_cryptography() -> bool:
    """Whether the controller's Python has the library cryptography."""
    return _cryptography() is not None


# What the operator sets for sglang_router_tls provided: the certificate (chain), its key, the CA clients verify with.
PROVIDED = (("cert", "sglang_router_tls_cert_src"), ("key", "sglang_router_tls_key_src"),
            ("ca", "sglang_router_tls_ca_src"))
_PEM = {"cert": b"-----BEGIN CERTIFICATE-----", "ca": b"-----BEGIN CERTIFICATE-----", "key": b"PRIVATE KEY-----"}
_FIX_PROVIDED = ("set sglang_router_tls_cert_src, sglang_router_tls_key_src and sglang_router_tls_ca_src to PEM files "
                 "on the controller, or use sglang_router_tls: stack_ca (README \"Router TLS\")")


def _address(name: str) -> Optional[Any]:
    try:
        return ipaddress.ip_address(str(name).strip("[]"))
    except ValueError:
        return None


def subject_alt_names(names: Iterable[Any], extra: Iterable[Any] = ()) -> List[str]:
    """``["IP:10.0.0.5", "DNS:router-1", ...]`` for community.crypto's subject_alt_name, without repeats."""
    out = []
    for name in list(names or []) + list(extra or []):
        address = _address(name)
        entry = "IP:%s" % address if address is not None else "DNS:%s" % str(name).strip().lower()
        if entry not in out:
            out.append(entry)
    return out


def name_problems(host: str, extra: Any) -> List[Dict[str, Any]]:
    """Problems of sglang_router_tls_extra_names: a list of DNS names or IP addresses."""
    if not isinstance(extra, (list, tuple)):
        return [problem(host, "sglang_router_tls_extra_names", "must be a list of DNS names or addresses, got %r" % (extra,),
                        "e.g. [router.example.com]")]

    def dns(name):
        return all(part == "*" or (0 < len(part) < 64 and part.replace("-", "").isalnum()) for part in name.split("."))

    bad = [n for n in extra if not isinstance(n, str) or not n or (_address(n) is None and not dns(n.strip()))]
    if bad:
        return [problem(host, "sglang_router_tls_extra_names", "holds entries that are neither a DNS name nor an address: %s"
                        % ", ".join(repr(b) for b in bad), "write each as router.example.com or 10.0.0.5")]
    return []


def _read(host, variable, path, kind, problems):
    """The file's bytes, or None with a problem."""
    if not path:
        problems.append(problem(host, variable, "is empty, but sglang_router_tls is provided", _FIX_PROVIDED))
        return None
    if not os.path.isabs(str(path)):
        problems.append(problem(host, variable, "must be an absolute path on the controller, got %r" % (path,),
                                "e.g. {{ inventory_dir }}/files/router.pem"))
        return None
    try:
        with open(str(path), "rb") as handle:
            data = handle.read()
    except OSError as exc:
        problems.append(problem(host, variable, "cannot be read on the controller: %s (%s)" % (path, exc.strerror or exc),
                                "point it at a readable PEM file on the controller"))
        return None
    if _PEM[kind] not in data:
        what = "a private key" if kind == "key" else "a certificate"
        problems.append(problem(host, variable, "%s is not %s in PEM format" % (path, what),
                                "give the PEM file (-----BEGIN ...-----); convert DER with openssl x509 -inform der"))
        return None
    return data


def _san_covers(cert, name) -> bool:
    x509 = _cryptography()[0]
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    address = _address(name)
    if address is not None:
        return address in sans.get_values_for_type(x509.IPAddress)
    return str(name).lower() in [n.lower() for n in sans.get_values_for_type(x509.DNSName)]


def provided_problems(host: str, files: Dict[str, Any], router: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """Problems of the operator's files: each readable PEM of its kind, the key the certificate's, the certificate
    issued by the CA, and naming the host the collection's own clients reach the router at (``router``: the
    topology's router, whose local_url they use)."""
    problems = []  # type: List[Dict[str, Any]]
    data = {}
    for kind, variable in PROVIDED:
        data[kind] = _read(host, variable, (files or {}).get(kind), kind, problems)
    crypto = _cryptography()
    if problems or crypto is None:
        return problems
    x509, serialization = crypto
    try:
        cert = x509.load_pem_x509_certificate(data["cert"])
    except ValueError:
        return [problem(host, "sglang_router_tls_cert_src", "%s holds no certificate the controller can read"
                        % files["cert"], "give the PEM certificate (the server's first, then any intermediates)")]
    try:
        cas = x509.load_pem_x509_certificates(data["ca"])
    except ValueError:
        return [problem(host, "sglang_router_tls_ca_src", "%s holds no certificate the controller can read" % files["ca"],
                        "give the CA certificate (PEM) that issued the router's certificate")]
    try:
        key = serialization.load_pem_private_key(data["key"], password=None)
    except (ValueError, TypeError):
        # Never the key's content: only that it is not usable.
        return [problem(host, "sglang_router_tls_key_src", "%s is not an unencrypted private key the controller can read "
                        "(encrypted keys are not supported: the router reads it at start)" % files["key"],
                        "give the key without a passphrase (PEM, PKCS#8 or traditional), kept in a 0600 file")]
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.PEM, public) != \
            cert.public_key().public_bytes(serialization.Encoding.PEM, public):
        problems.append(problem(host, "sglang_router_tls_key_src", "%s is not the key of the certificate %s"
                                % (files["key"], files["cert"]), "give the key the certificate was issued for"))
    if not any(_issued_by(cert, ca) for ca in cas):
        problems.append(problem(host, "sglang_router_tls_ca_src", "the certificate %s was not issued by the CA in %s: "
                                "clients verifying against it would refuse the router" % (files["cert"], files["ca"]),
                                "give the CA that issued the certificate (for a chain: its root)"))
    local = router and router.get("local_url")
    if local:
        name = local.split("://", 1)[1].rsplit(":", 1)[0].strip("[]")
        if not _san_covers(cert, name):
            problems.append(problem(host, "sglang_router_tls_cert_src", "the certificate %s does not name %s, where the "
                                    "collection's own clients on the host reach the router (%s)" % (files["cert"], name, local),
                                    "issue it with %s among its subject alternative names (with the names and addresses "
                                    "your clients use), or use sglang_router_tls: stack_ca" % name))
    return problems


def _issued_by(cert, ca) -> bool:
    """Whether ``ca`` signed ``cert`` directly, or is the certificate itself (a self-signed one given as its CA)."""
    if cert == ca:
        return True
    if not hasattr(cert, "verify_directly_issued_by"):
        # cryptography before 40: the names only.
        return cert.issuer == ca.subject
    try:
        cert.verify_directly_issued_by(ca)
        return True
    except Exception:  # pylint: disable=broad-except
        # InvalidSignature, an issuer name that differs, or a key type that cannot sign.
        return False


def router_tls_problems(host: str, router: Optional[Dict[str, Any]], files: Dict[str, Any], extra_names: Any = (),
                        has_crypto_collection: bool = True) -> List[Dict[str, Any]]:
    """Every TLS problem of one router host found on the controller: the extra names, for ``stack_ca`` what making the
    CA needs (community.crypto, cryptography), and for ``provided`` the files."""
    if not router or router.get("tls") in (None, "none"):
        return []
    problems = name_problems(host, extra_names)
    if router["tls"] == "stack_ca":
        missing = [what for what, there in (("the community.crypto collection", has_crypto_collection),
                                            ("the Python library cryptography", has_cryptography())) if not there]
        if missing:
            problems.append(problem(host, "sglang_router_tls", "is stack_ca, but the controller lacks %s (needed to "
                                    "make the CA)" % " and ".join(missing),
                                    "install PyPI's ansible package (it has community.crypto; ansible-core brings "
                                    "cryptography), or use sglang_router_tls: provided"))
    if router["tls"] == "provided":
        problems += provided_problems(host, files, router)
    return problems
