# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Fingerprints of armored OpenPGP keys without gpg (module_utils/driver/openpgp.py), on real Debian archive keys
whose fingerprints gpg printed (tests/unit/fixtures/openpgp/README.md)."""

import os

import pytest

from ansible_collections.pdserve.sglang.plugins.module_utils.driver import openpgp

KEYS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "openpgp"))


def _key(name):
    with open(os.path.join(KEYS, name)) as handle:
        return handle.read()


@pytest.mark.parametrize("name, expected", [
    ("debian-archive-bookworm-automatic.asc",
     ["B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8", "4CB50190207B4758A3F73A796ED0E7B82643E131"]),
    ("debian-archive-bookworm-stable.asc", ["4D64FEC119C2029067D6E791F8D2585B8783D481"]),
])
def test_fingerprints_of_real_keys_match_gpg(name, expected):
    assert openpgp.fingerprints(_key(name)) == expected


def test_two_blocks_in_one_file():
    both = _key("debian-archive-bookworm-stable.asc") + _key("debian-archive-bookworm-automatic.asc")
    assert openpgp.fingerprints(both)[0] == "4D64FEC119C2029067D6E791F8D2585B8783D481"
    assert len(openpgp.fingerprints(both)) == 3


def test_a_damaged_key_fails_its_checksum():
    text = _key("debian-archive-bookworm-stable.asc")
    lines = text.splitlines()
    body = [i for i, line in enumerate(lines) if line and not line.startswith(("-----", "=")) and ":" not in line]
    target = body[len(body) // 2]
    lines[target] = lines[target][:10] + ("A" if lines[target][10] != "A" else "B") + lines[target][11:]
    with pytest.raises(openpgp.OpenPGPError, match="checksum"):
        openpgp.fingerprints("\n".join(lines))


@pytest.mark.parametrize("text, message", [
    ("", "BEGIN PGP PUBLIC KEY BLOCK"),
    ("\x99\x01\x0d binary keyring", "BEGIN PGP PUBLIC KEY BLOCK"),
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!!\n-----END PGP PUBLIC KEY BLOCK-----\n", "not valid base64"),
])
def test_unreadable_keys(text, message):
    with pytest.raises(openpgp.OpenPGPError, match=message):
        openpgp.fingerprints(text)


def test_primary_only_lists_one_fingerprint_per_key_so_an_extra_key_shows():
    """A key with a subkey is one key; a file with a second key holds two (apt would trust both)."""
    automatic = _key("debian-archive-bookworm-automatic.asc")
    assert openpgp.fingerprints(automatic, primary_only=True) == ["B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8"]
    both = _key("debian-archive-bookworm-stable.asc") + automatic
    assert openpgp.fingerprints(both, primary_only=True) == ["4D64FEC119C2029067D6E791F8D2585B8783D481",
                                                             "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8"]
    assert openpgp.fingerprints(both, primary_only=True) != ["4D64FEC119C2029067D6E791F8D2585B8783D481"]
