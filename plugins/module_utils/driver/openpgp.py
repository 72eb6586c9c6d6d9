# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Fingerprints of an OpenPGP public key (RFC 4880), to check an apt signing key without gpg.

Only what apt keys need: an ASCII-armored block of version-4 keys (primary keys and subkeys).
The fingerprint of a v4 key is SHA-1 over 0x99, the two-byte body length and the key packet body.
"""

import base64
import binascii
import hashlib
import re
from typing import List, Optional

_ARMOR_RE = re.compile(
    r"-----BEGIN PGP PUBLIC KEY BLOCK-----\r?\n(?P<body>.*?)-----END PGP PUBLIC KEY BLOCK-----", re.DOTALL
)
PUBLIC_KEY, PUBLIC_SUBKEY = 6, 14


class OpenPGPError(ValueError):
    """Input that is not a readable armored OpenPGP public key."""


def _crc24(data):
    crc = 0xB704CE
    for byte in bytearray(data):
        crc ^= byte << 16
        for dummy in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def dearmor(text: Optional[str]) -> bytes:
    """The binary packets of every armored public key block in ``text``, CRC checked."""
    blocks = _ARMOR_RE.findall(text or "")
    if not blocks:
        raise OpenPGPError("no '-----BEGIN PGP PUBLIC KEY BLOCK-----' in the key (an ASCII-armored key is needed)")
    data = b""
    for body in blocks:
        lines = body.strip().splitlines()
        # Armor headers (Version:, Comment:) end at the first empty line.
        if any(not line.strip() for line in lines):
            lines = lines[[i for i, line in enumerate(lines) if not line.strip()][0] + 1:]
        checksum = None
        if lines and lines[-1].startswith("="):
            checksum = lines.pop()[1:].strip()
        try:
            packets = base64.b64decode("".join(line.strip() for line in lines), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise OpenPGPError("the armored key is not valid base64 (%s)" % exc)
        if checksum is not None:
            expected = int(binascii.hexlify(base64.b64decode(checksum)), 16)
            if _crc24(packets) != expected:
                raise OpenPGPError("the armored key's checksum does not match: the key is damaged")
        data += packets
    return data


def _packets(data):
    """(tag, body) of each packet, old and new header formats."""
    data = bytearray(data)
    pos = 0
    while pos < len(data):
        header = data[pos]
        if not header & 0x80:
            raise OpenPGPError("not an OpenPGP packet at byte %d" % pos)
        if header & 0x40:  # new format
            tag = header & 0x3F
            first = data[pos + 1]
            if first < 192:
                length, pos = first, pos + 2
            elif first < 224:
                length, pos = ((first - 192) << 8) + data[pos + 2] + 192, pos + 3
            elif first == 255:
                length = int(binascii.hexlify(bytes(data[pos + 2:pos + 6])), 16)
                pos += 6
            else:
                raise OpenPGPError("partial-length packets do not occur in keys")
        else:  # old format
            tag = (header >> 2) & 0x0F
            size = {0: 1, 1: 2, 2: 4}.get(header & 0x03)
            if size is None:
                raise OpenPGPError("indeterminate-length packets do not occur in keys")
            length = int(binascii.hexlify(bytes(data[pos + 1:pos + 1 + size])), 16)
            pos += 1 + size
        body = bytes(data[pos:pos + length])
        if len(body) != length:
            raise OpenPGPError("the key ends inside a packet")
        yield tag, body
        pos += length


def fingerprints(text: Optional[str], primary_only: bool = False) -> List[str]:
    """Upper-case hex fingerprints of the primary keys and subkeys in an armored key, in order; with
    ``primary_only`` those of the primary keys alone (one per key a file holds, what apt would trust)."""
    result = []
    wanted = (PUBLIC_KEY,) if primary_only else (PUBLIC_KEY, PUBLIC_SUBKEY)
    for tag, body in _packets(dearmor(text)):
        if tag not in wanted:
            continue
        version = bytearray(body)[0]
        if version != 4:
            raise OpenPGPError("version-%d keys are not supported (apt repository keys are version 4)" % version)
        digest = hashlib.sha1(b"\x99" + bytes(bytearray([len(body) >> 8, len(body) & 0xFF])) + body)  # nosec B324 - RFC 4880 v4 fingerprint
        result.append(digest.hexdigest().upper())
    if not result:
        raise OpenPGPError("the armored block holds no public key")
    return result
