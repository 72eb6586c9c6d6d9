"""Command line of the emulator: exactly the ``sglang.launch_server`` options of SGLang 0.5.23.

``sglang_flags.json`` lists every option SGLang's own parser registers (spellings, value or
switch, nargs, type, choices), dumped from sglang 0.5.23 by ``tools/dump_sglang_flags.py``.
The parser built from it behaves like SGLang's: unknown flags, ambiguous abbreviations and
values outside the choices exit 2 with argparse's message naming the flag. The emulator uses
a handful of the options (see README.md); every other one is accepted and ignored.
"""
import argparse
import json
import os
import re
from decimal import Decimal

FLAGS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang_flags.json")

# Defaults of the options the emulator acts on (SGLang's defaults).
DEFAULTS = {
    "served_model_name": None,
    "host": "127.0.0.1",
    "port": 30000,
    "tp_size": 1,
    "disaggregation_mode": "null",
    "disaggregation_transfer_backend": "mooncake",
    "disaggregation_bootstrap_port": 8998,
    "log_level": "info",
}


def load_spec(path=FLAGS_FILE):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def human_readable_int(value):
    """SGLang's integer parser for sizes: plain int or SI/IEC suffix (8k, 1Mi, 25.6k)."""
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        number, suffix = match.groups()
        iec = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40}
        if suffix in iec:
            if "." in number:
                raise argparse.ArgumentTypeError(
                    "Decimals are not allowed with IEC suffixes like '%s'." % suffix)
            return int(number) * iec[suffix]
        si = {"k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12}
        return int(Decimal(number) * si[suffix])
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("invalid integer value: %r" % value) from None


TYPES = {"int": int, "float": float, "human_readable_int": human_readable_int, "str": str}


def build_parser(spec=None):
    spec = spec or load_spec()
    parser = argparse.ArgumentParser(
        prog="sglang_emulator.py",
        description="GPU-free emulator of an SGLang %s server (launch_server options)."
        % spec["sglang_version"],
        allow_abbrev=spec.get("allow_abbrev", True))
    add_arguments(parser, spec)
    parser.set_defaults(**DEFAULTS)
    return parser


def add_arguments(parser, spec=None):
    """SGLang's launch_server options on ``parser`` (what ServerArgs.add_cli_args does; the stand-in
    sglang wheel's server_args uses it, so sglang_flag_check can run against it)."""
    spec = spec or load_spec()
    for option in spec["options"]:
        kwargs = {"dest": option["dest"]}
        if option["kind"] == "flag":
            kwargs["action"] = "store_true"
        elif option["kind"] == "bool_optional":
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = TYPES.get(option["type"], str)
            if option.get("nargs") is not None:
                kwargs["nargs"] = option["nargs"]
            if option.get("choices"):
                # choices are recorded as strings; convert them like the values
                kwargs["choices"] = [kwargs["type"](c) if option["type"] != "str" else c
                                     for c in option["choices"]]
            if option.get("required"):
                kwargs["required"] = True
        parser.add_argument(*option["flags"], **kwargs)


def choices_of(dest, spec=None):
    spec = spec or load_spec()
    for option in spec["options"]:
        if option["dest"] == dest:
            return list(option["choices"] or [])
    raise KeyError(dest)


def parse_args(argv=None):
    args = build_parser().parse_args(argv)
    if not args.served_model_name:
        args.served_model_name = args.model_path
    if args.context_length is None:
        args.context_length = 1048576  # DeepSeek-V4-Flash's max_position_embeddings
    return args
