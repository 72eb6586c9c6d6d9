#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r'''
---
module: sglang_flag_check
short_description: Ask the installed SGLang's (or router's) own argument parser whether command lines are valid
version_added: 0.4.0
description:
  - Runs the Python interpreter of the SGLang virtual environment once, builds the parser exactly as
    C(sglang.launch_server) does (C(sglang.srt.server_args.ServerArgs.add_cli_args) on an C(argparse) parser,
    abbreviations allowed, C(--config) YAML merged the way SGLang merges it), and parses every given
    command line with it. No server starts and no GPU is touched.
  - An unknown flag, a value outside a flag's choices (for example a misspelled C(--reasoning-parser) or
    C(--tool-call-parser) name), a missing value or a missing required flag fails the task, naming the
    command line, the flag and the closest valid spelling.
  - This catches what the parser knows. It does not run SGLang's later validation (C(ServerArgs.__post_init__)
    and the model, GPU, memory and port checks done at start-up).
  - Importing the parser needs SGLang with its import-time dependencies, torch included (a CPU build is
    enough). Expect 5 to 20 seconds for the import.
  - With O(parser=router), the same for C(sglang_router.launch_router) command lines, using the installed
    router's C(RouterArgs.add_cli_args), then C(RouterArgs.from_cli_args) and its own validation,
    which parse the C(--prefill URL [BOOTSTRAP_PORT]) and C(--decode URL) lists. Importing it takes about a second.
  - O(router_implementation=smg) checks with smg's own parser instead (C(smg.router_args.RouterArgs), the Shepherd
    Model Gateway that succeeded sglang-router), as C(smg.launch_router) parses its command line.
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; it runs the same check in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  python:
    description:
      - The interpreter of the virtual environment SGLang is installed in, for example C(/opt/sglang/venv/bin/python).
    type: path
    required: true
  parser:
    description:
      - V(server) checks C(sglang.launch_server) command lines, V(router) checks C(sglang_router.launch_router) ones.
    type: str
    choices: [server, router]
    default: server
  router_implementation:
    description:
      - With O(parser=router), the router package whose parser checks the lines - V(sglang-router) (C(sglang_router))
        or V(smg). Required with O(parser=router) (the router role passes C(sglang_router_implementation)).
    type: str
    choices: [sglang-router, smg]
    version_added: 0.4.0
  command_lines:
    description:
      - The command lines to check, without the launch command itself (everything after C(-m sglang.launch_server)
        or C(-m sglang_router.launch_router)).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - A name for messages and results, for example the instance name.
        type: str
        required: true
      argv:
        description:
          - The arguments, one list element per word as the process receives them (C(["--tp-size", "4"])).
          - Numbers and booleans are turned into strings.
        type: list
        elements: raw
        required: true
  environment:
    description:
      - Extra environment variables for the check. Some choices depend on C(SGLANG_*) variables, so pass the
        instance's environment when it sets any.
    type: dict
    default: {}
  pythonpath:
    description:
      - Directories put in front of C(sys.path), for an SGLang source tree that is not installed in the venv
        (for example C(/opt/sglang/src/sglang/python)).
      - The interpreter runs isolated (C(-I)), so C(PYTHONPATH) is ignored; use this option instead.
    type: list
    elements: path
    default: []
  timeout:
    description:
      - Seconds to wait for the import and the checks before failing.
    type: int
    default: 300
notes:
  - The target needs the virtual environment only; the module itself uses the Python standard library.
seealso:
  - name: SGLang server arguments
    description: The flags C(sglang.launch_server) accepts.
    link: https://docs.sglang.ai/advanced_features/server_arguments.html
'''

EXAMPLES = r'''
- name: Check the rendered prefill and decode command lines before any unit changes
  pdserve.sglang.sglang_flag_check:
    python: /opt/sglang/venv/bin/python
    command_lines:
      - name: prefill
        argv: [--model-path, /models/DeepSeek-V4-Flash, --tp-size, 4, --disaggregation-mode, prefill,
               --reasoning-parser, deepseek-v4, --tool-call-parser, deepseekv4]
      - name: decode
        argv: [--model-path, /models/DeepSeek-V4-Flash, --tp-size, 4, --disaggregation-mode, decode,
               --reasoning-parser, deepseek-v4, --tool-call-parser, deepseekv4]

- name: Check the router's command line with the installed sglang-router's parser
  pdserve.sglang.sglang_flag_check:
    python: /opt/sglang/venv/bin/python
    parser: router
    command_lines:
      - name: router
        argv: [--pd-disaggregation, --prefill, "http://127.0.0.1:30000", 8998, --decode, "http://127.0.0.1:30002",
               --host, 0.0.0.0, --port, 30001, --policy, cache_aware]

- name: The same with smg's parser (the router's venv holds both implementations)
  pdserve.sglang.sglang_flag_check:
    python: /opt/sglang/router-venv/bin/python
    parser: router
    router_implementation: smg
    command_lines:
      - name: router
        argv: [--pd-disaggregation, --prefill, "http://127.0.0.1:30000", 8998, --decode, "http://127.0.0.1:30002",
               --host, 0.0.0.0, --port, 30001]
- name: Check a patched source tree that is not installed in the venv
  pdserve.sglang.sglang_flag_check:
    python: /opt/sglang/venv/bin/python
    pythonpath: [/opt/sglang/src/sglang/python]
    environment:
      SGLANG_SM120_MMA_FLASHMLA: "1"
    command_lines:
      - name: prefill
        argv: "{{ my_rendered_argv }}"
'''

RETURN = r'''
sglang_version:
  description:
    - C(sglang.__version__) of the interpreter that ran the check; with O(parser=router) the installed router package's
      version (its distribution's metadata, C(sglang-router) or C(smg)).
  returned: when SGLang could be imported
  type: str
  sample: 0.5.23
import_seconds:
  description: Seconds the import of SGLang's argument parser took.
  returned: when SGLang could be imported
  type: float
  sample: 6.2
results:
  description: One entry per command line, in the order given.
  returned: when SGLang could be imported
  type: list
  elements: dict
  contains:
    name:
      description: The command line's name.
      type: str
      sample: prefill
    valid:
      description: Whether SGLang's parser accepted the command line.
      type: bool
      sample: false
    error:
      description: The parser's message (empty when valid).
      type: str
      sample: "argument --reasoning-parser: invalid choice: 'deepseekv4' (choose from ...)"
    flag:
      description: The flag the parser rejected, when it names one.
      type: str
      sample: --reasoning-parser
    suggestion:
      description: The closest valid value or flag, when there is one.
      type: str
      sample: deepseek-v4
invalid:
  description: Names of the command lines that were rejected.
  returned: when SGLang could be imported
  type: list
  elements: str
  sample: [decode]
'''

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native, to_text

from ansible_collections.pdserve.sglang.plugins.module_utils.serving.cmdline import ROUTER_IMPLEMENTATIONS

# Runs inside the SGLang venv (python -I -c CHECKER), reads the request as JSON on stdin and prints one
# JSON document on stdout. Anything SGLang prints while importing goes to stderr.
CHECKER = r'''
import argparse, contextlib, difflib, json, re, sys, time

request = json.load(sys.stdin)
sys.path[0:0] = request.get("pythonpath") or []
out = {}


class Rejected(Exception):
    pass


class CheckingParser(argparse.ArgumentParser):
    """launch_server's parser, raising instead of printing usage and exiting."""

    def error(self, message):
        raise Rejected(message)

    def exit(self, status=0, message=None):
        raise Rejected(message or "the parser exited with status %s (--help or --version is not a server flag)" % status)


def suggest(parser, message, argv):
    flag = value = None
    m = re.match(r"argument ([^:]+): invalid choice: '?(.*?)'? \(choose from", message)
    if m:
        flag = m.group(1).split("/")[0]
        value = m.group(2)
        for action in parser._actions:
            if flag in action.option_strings and action.choices:
                choices = [str(c) for c in action.choices]
                close = difflib.get_close_matches(value, choices, n=1, cutoff=0.5)
                return flag, close[0] if close else ""
        return flag, ""
    m = re.match(r"unrecognized arguments: (\S+)", message)
    if m:
        flag = m.group(1).split("=")[0]
        close = difflib.get_close_matches(flag, list(parser._option_string_actions), n=1, cutoff=0.6)
        return flag, close[0] if close else ""
    m = re.match(r"argument ([^:]+):", message)
    if m:
        return m.group(1).split("/")[0], ""
    m = re.match(r"the following arguments are required: (\S+?),?(\s|$)", message)
    if m:
        return m.group(1).split("/")[0], ""
    return "", ""


router = request.get("parser") == "router"
try:
    start = time.time()
    with contextlib.redirect_stdout(sys.stderr):
        if router:
            import importlib, importlib.metadata
            package = request.get("router_package") or "sglang_router"
            RouterArgs = importlib.import_module(package + ".router_args").RouterArgs
            # The distribution's version: smg 1.13.0's smg.version module still says 1.1.0.
            version = importlib.metadata.version(request.get("router_distribution") or "sglang-router")
        else:
            import sglang
            from sglang.srt.server_args import ServerArgs
            version = getattr(sglang, "__version__", "unknown")
    out["import_seconds"] = round(time.time() - start, 2)
    out["sglang_version"] = str(version)
except Exception as exc:  # report any import failure, not only ImportError
    out["import_error"] = "%s: %s" % (type(exc).__name__, exc)
    print(json.dumps(out))
    raise SystemExit(0)

results = []
for item in request["command_lines"]:
    argv = [str(a) for a in item["argv"]]
    result = {"name": item["name"], "valid": True, "error": "", "flag": "", "suggestion": ""}
    parser = CheckingParser(prog=(request.get("router_package") or "sglang_router") + ".launch_router" if router
                            else "sglang.launch_server")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            if router:
                # As <package>.launch_router.parse_router_args and launch_router do (sglang_router and smg alike).
                RouterArgs.add_cli_args(parser, use_router_prefix=False)
                RouterArgs.from_cli_args(parser.parse_args(argv), use_router_prefix=False)._validate_router_args()
                results.append(result)
                continue
            ServerArgs.add_cli_args(parser)
            if "--config" in argv:
                # As sglang.srt.server_args.prepare_server_args does.
                from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger
                argv = ConfigArgumentMerger(parser).merge_config_with_args(argv)
            parser.parse_args(argv)
    except Rejected as exc:
        message = str(exc).strip()
        result.update(valid=False, error=message)
        result["flag"], result["suggestion"] = suggest(parser, message, argv)
    except Exception as exc:
        result.update(valid=False, error="%s: %s" % (type(exc).__name__, exc))
    results.append(result)
out["results"] = results
print(json.dumps(out))
'''


def _normalize(command_lines):
    normalized = []
    for index, item in enumerate(command_lines):
        argv = []
        for word in item["argv"]:
            if isinstance(word, bool):
                word = "true" if word else "false"
            elif isinstance(word, (dict, list)):
                raise ValueError("command line %s (%s): argument %d is a %s, not a word"
                                 % (index, item["name"], len(argv), type(word).__name__))
            argv.append(to_text(word))
        normalized.append({"name": item["name"], "argv": argv})
    return normalized


def _describe(result):
    text = "%s: %s" % (result["name"], result["error"])
    if result.get("suggestion"):
        text += " (did you mean %s?)" % result["suggestion"]
    return text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="path", required=True),
            parser=dict(type="str", choices=["server", "router"], default="server"),
            router_implementation=dict(type="str", choices=sorted(ROUTER_IMPLEMENTATIONS)),
            command_lines=dict(
                type="list",
                elements="dict",
                required=True,
                options=dict(
                    name=dict(type="str", required=True),
                    argv=dict(type="list", elements="raw", required=True),
                ),
            ),
            environment=dict(type="dict", default={}),
            pythonpath=dict(type="list", elements="path", default=[]),
            timeout=dict(type="int", default=300),
        ),
        required_if=[("parser", "router", ["router_implementation"])],
        supports_check_mode=True,
    )
    python = module.params["python"]
    if not os.path.isfile(python) or not os.access(python, os.X_OK):
        module.fail_json(msg="%s is not an executable Python: install SGLang first (sglang_install role) "
                             "or point python at its virtual environment" % python)
    try:
        command_lines = _normalize(module.params["command_lines"])
    except ValueError as exc:
        module.fail_json(msg=to_native(exc))

    implementation = module.params["router_implementation"]
    request = json.dumps({"command_lines": command_lines, "pythonpath": module.params["pythonpath"],
                          "parser": module.params["parser"], "router_distribution": implementation,
                          "router_package": ROUTER_IMPLEMENTATIONS.get(implementation)})
    environ = dict((k, to_text(v)) for k, v in module.params["environment"].items())
    args = [python, "-I", "-c", CHECKER]
    timeout = module.params["timeout"]
    if timeout > 0:
        timeout_bin = module.get_bin_path("timeout")
        if timeout_bin:
            args = [timeout_bin, "--kill-after=10", str(timeout)] + args
    start = time.time()
    rc, stdout, stderr = module.run_command(args, data=request, environ_update=environ,
                                            cwd=module.tmpdir, binary_data=False)
    elapsed = round(time.time() - start, 2)
    if rc == 124:
        module.fail_json(msg="the flag check did not finish within %s s (importing SGLang hangs?)" % timeout,
                         stderr=stderr, elapsed=elapsed)
    try:
        report = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else None
    except ValueError:
        report = None
    if rc != 0 or not isinstance(report, dict):
        module.fail_json(msg="the flag check could not run in %s (exit %s): %s"
                             % (python, rc, (stderr or stdout).strip()[-2000:]), rc=rc, stderr=stderr,
                         stdout=stdout, elapsed=elapsed)
    what = implementation if module.params["parser"] == "router" else "SGLang"
    if "import_error" in report:
        module.fail_json(msg="%s cannot import %s's argument parser: %s. Is %s installed in this venv with its "
                             "dependencies?" % (python, what, report["import_error"], what),
                         stderr=stderr[-4000:], elapsed=elapsed)

    results = report["results"]
    invalid = [r["name"] for r in results if not r["valid"]]
    out = dict(changed=False, results=results, invalid=invalid, elapsed=elapsed,
               sglang_version=report["sglang_version"], import_seconds=report["import_seconds"])
    if invalid:
        out["msg"] = "%s %s rejects %d of %d command line(s): %s" % (
            what, report["sglang_version"], len(invalid), len(results),
            "; ".join(_describe(r) for r in results if not r["valid"]))
        module.fail_json(**out)
    out["msg"] = "%s %s accepts all %d command line(s)" % (what, report["sglang_version"], len(results))
    module.exit_json(**out)


if __name__ == "__main__":
    main()
