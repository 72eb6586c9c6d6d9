# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Build a stand-in ``sglang`` wheel: the emulator packaged so that ``python -m sglang.launch_server`` runs it.

Upgrade tests need SGLang versions that install into a venv like the real one, start the way the units start
it, answer the flag check (``sglang.srt.server_args.ServerArgs.add_cli_args``) and report their version, without
4 GB of CUDA wheels. The wheel holds the emulator (``sglemu``, ``sglang_emulator``) and a small ``sglang`` package
around it; it depends on the emulator's web stack (pinned like requirements.txt). ``--broken-tool-parser`` builds
a version whose servers fail validation the way a broken release would: its tool-call parser parses nothing, so
tool calls come back as text in ``content``.

    python tests/emulator/standin/build_wheel.py --version 90.0.1 --out /tmp/wheels
    python tests/emulator/standin/build_wheel.py --version 90.0.3 --broken-tool-parser --out /tmp/wheels

Only the standard library: a wheel is a zip with a dist-info directory (PEP 427), so no build backend is needed.
Versions are deliberately far from real ones (90.x): the machine wheelhouse holds the real sglang 0.5.23.
"""
import argparse
import base64
import hashlib
import io
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
EMULATOR = os.path.dirname(HERE)
REQUIRES = ("fastapi==0.165.0", "uvicorn==0.54.0", "prometheus-client==0.26.0")
# Fixed timestamps: the same inputs give the same wheel, byte for byte.
DATE = (2026, 1, 1, 0, 0, 0)

INIT = '''"""Stand-in for SGLang {version} (the pdserve.sglang emulator; tests only)."""
__version__ = "{version}"
'''
STANDIN = '''"""Runs the pdserve.sglang emulator as this stand-in SGLang version."""
import sys

import sglang
import sglang_emulator
from sglemu import app, parsers

BROKEN_TOOL_PARSER = {broken}


def _no_tool_calls(normal, parser, body, forward_unknown=False):
    return normal, [], False


def main(argv=None):
    app.VERSION = sglang.__version__
    if BROKEN_TOOL_PARSER:
        parsers.parse_tool_calls = _no_tool_calls
    return sglang_emulator.main(argv)


if __name__ == "__main__":
    sys.exit(main())
'''
LAUNCH = '''"""python -m sglang.launch_server: the stand-in's emulator."""
import sys

from sglang import _standin

if __name__ == "__main__":
    sys.exit(_standin.main(sys.argv[1:]))
'''
COMPILE_DEEP_GEMM = '''"""python -m sglang.compile_deep_gemm: the stand-in's emulated DeepGEMM pre-compile."""
import sys

from sglemu import compile_deep_gemm

if __name__ == "__main__":
    sys.exit(compile_deep_gemm.main(sys.argv[1:]))
'''
SERVER_ARGS = '''"""ServerArgs.add_cli_args: SGLang 0.5.23's launch_server options, from the emulator's recorded list."""
from sglemu import cli


class ServerArgs(object):
    @staticmethod
    def add_cli_args(parser):
        cli.add_arguments(parser)
'''


def _files(version, broken):
    files = {
        "sglang/__init__.py": INIT.format(version=version),
        "sglang/_standin.py": STANDIN.format(broken=bool(broken)),
        "sglang/launch_server.py": LAUNCH,
        "sglang/compile_deep_gemm.py": COMPILE_DEEP_GEMM,
        "sglang/version.py": '__version__ = "%s"\n' % version,
        "sglang/srt/__init__.py": "",
        "sglang/srt/server_args.py": SERVER_ARGS,
    }
    with open(os.path.join(EMULATOR, "sglang_emulator.py"), encoding="utf-8") as handle:
        files["sglang_emulator.py"] = handle.read()
    package = os.path.join(EMULATOR, "sglemu")
    for name in sorted(os.listdir(package)):
        if name.endswith((".py", ".json")):
            with open(os.path.join(package, name), encoding="utf-8") as handle:
                files["sglemu/%s" % name] = handle.read()
    return files


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def build(version, out, broken=False):
    """Write sglang-<version>-py3-none-any.whl into ``out``; returns its path."""
    files = dict((k, v.encode("utf-8")) for k, v in _files(version, broken).items())
    info = "sglang-%s.dist-info" % version
    summary = "Stand-in for SGLang (pdserve.sglang emulator)%s" % (", broken tool-call parser" if broken else "")
    metadata = ["Metadata-Version: 2.1", "Name: sglang", "Version: %s" % version, "Summary: %s" % summary,
                "Requires-Python: >=3.9"] + ["Requires-Dist: %s" % r for r in REQUIRES]
    files[info + "/METADATA"] = ("\n".join(metadata) + "\n").encode()
    files[info + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: pdserve-standin\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[info + "/top_level.txt"] = b"sglang\nsglang_emulator\nsglemu\n"
    record = [_record_line(name, data) for name, data in sorted(files.items())] + ["%s/RECORD,," % info]
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "sglang-%s-py3-none-any.whl" % version)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name in sorted(files):
            item = zipfile.ZipInfo(name, DATE)
            item.external_attr = 0o644 << 16
            wheel.writestr(item, files[name])
    with open(path, "wb") as handle:
        handle.write(buf.getvalue())
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--version", required=True, help="the stand-in's version, e.g. 90.0.1")
    parser.add_argument("--out", required=True, help="directory to write the wheel into")
    parser.add_argument("--broken-tool-parser", action="store_true", help="a version whose tool-call parser parses nothing")
    args = parser.parse_args(argv)
    print(build(args.version, args.out, args.broken_tool_parser))
    return 0


if __name__ == "__main__":
    sys.exit(main())
