# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Regenerate sglemu/sglang_flags.json from an installed sglang (needs torch; CPU build is enough).

    python tests/emulator/tools/dump_sglang_flags.py > tests/emulator/sglemu/sglang_flags.json

Records, for every ``launch_server`` option, its spellings, whether it takes a value, nargs,
value type and choices: facts about SGLang's command line, no SGLang code.
"""
import argparse
import json
import sys

import sglang
from sglang.srt.server_args import ServerArgs


def main():
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    options = []
    for action in parser._actions:  # pylint: disable=protected-access
        if not action.option_strings or action.dest == "help":
            continue
        kind = "value"
        if isinstance(action, argparse.BooleanOptionalAction):
            kind = "bool_optional"
        elif action.nargs == 0:
            kind = "flag"
        type_name = getattr(action.type, "__name__", None)
        options.append({
            "flags": [f for f in action.option_strings if not f.startswith("--no-")]
            if kind == "bool_optional" else list(action.option_strings),
            "dest": action.dest,
            "kind": kind,
            "nargs": action.nargs if kind == "value" else None,
            "type": type_name if type_name in ("int", "float", "human_readable_int") else "str",
            "choices": ([str(c) for c in action.choices] if isinstance(action.choices, (list, tuple))
                        else sorted(str(c) for c in action.choices)) if action.choices else None,
            "required": bool(action.required),
        })
    # one option per line keeps diffs between SGLang versions readable
    out = sys.stdout
    out.write('{"sglang_version": %s, "allow_abbrev": %s, "options": [\n'
              % (json.dumps(sglang.__version__), json.dumps(parser.allow_abbrev)))
    out.write(",\n".join(json.dumps(o, sort_keys=True) for o in options))
    out.write("\n]}\n")


if __name__ == "__main__":
    main()
