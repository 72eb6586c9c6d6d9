# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""ansible-playbook from ansible-core's wheels unzipped into the directory PDSERVE_ANSIBLE_SITE, for a machine
without pip or venv (tests/device/README.md; bin/ansible-playbook runs it). That directory goes on this process's
sys.path only, not on PYTHONPATH: a PYTHONPATH would reach every command the play runs, through su the build user's
compile too (whose pip then fails on the unreadable directory, or imports ansible-core's packaging instead of the
machine's)."""
import os
import runpy
import sys

sys.path.insert(0, os.environ.pop("PDSERVE_ANSIBLE_SITE"))
sys.argv[0] = "ansible-playbook"
runpy.run_module("ansible.cli.playbook", run_name="__main__", alter_sys=True)
