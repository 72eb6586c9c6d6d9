#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

DOCUMENTATION = r"""
---
module: install_facts
short_description: What installing SGLang needs to know about a host, in one round trip
version_added: 0.4.0
description:
  - Reads, in one call, what the C(pdserve.sglang.sglang_install) role decides and judges with - the version of the
    interpreter the venv is made from and whether it has the C(venv) module, the C library, the machine, a system
    UCX (C(ucx_info) on E(PATH) or C(libucp) in the library paths, with its version), the CUDA toolkit (C(nvcc) under
    O(cuda_home) or on E(PATH), with its release), git, a C compiler, the free disk for a list of paths, whether
    some paths and users exist and who owns the paths (the role reads who owns the venv's C(lib/) to convert a venv
    an earlier version gave the service user), and the umask.
  - Free disk - each entry of O(disk) is checked on the filesystem of its nearest existing ancestor, named by its mount
    point, type and source (from C(/proc/self/mountinfo)), with its size and free bytes. Entries on one filesystem add
    up. A path that exists already (O(disk[].present), without O(disk[].incomplete)) asks for nothing (what it is for
    is there), so a rerun never fails on space.
  - Judges nothing and fails only on bad arguments; the role turns these facts and its settings into problems.
  - Results are returned as plain keys and as the fact C(pdserve_install).
author:
  - pdserve.sglang developers (@pdserve)
extends_documentation_fragment:
  - pdserve.sglang.service_account_check
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
    details: The module only reads; it behaves the same in check mode.
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
options:
  python:
    description:
      - The interpreter the venv will be made from. It is run once (C(-c)) for its version, its C(venv) module and
        the C library it runs on; it may differ from the interpreter running this module.
    type: path
    default: /usr/bin/python3
  cuda_home:
    description:
      - The CUDA toolkit directory; C(bin/nvcc) there is preferred to an C(nvcc) on E(PATH).
    type: path
    default: /usr/local/cuda
  disk:
    description:
      - Paths that need free space.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: A name for the messages (for example C(venv)).
        type: str
        required: true
      path:
        description: The path that will be created. An entry whose path is not absolute is returned with RV(disk[].error).
        type: str
        required: true
      min_free_gb:
        description: GiB it needs while it does not exist.
        type: float
        required: true
      present:
        description:
          - The path whose existence says what the entry is for is in place (default O(disk[].path)), for example a
            venv's C(bin/python), so an empty directory or a mount point where the venv goes still needs its space.
        type: str
      incomplete:
        description:
          - A marker an interrupted install leaves; while it exists the entry needs its space, even where
            O(disk[].present) exists.
        type: str
  paths:
    description:
      - Paths whose existence, type, owner, group and mode are returned in RV(paths).
    type: list
    elements: path
    default: []
  users:
    description:
      - User names whose existence is returned in RV(users).
    type: list
    elements: str
    default: []
  venv_python:
    description:
      - The interpreter of an existing venv, asked once for every distribution it holds (RV(venv_packages)). A venv
        that does not exist (or cannot answer) returns none.
    type: path
    version_added: 0.4.0
notes:
  - Needs only the Python standard library on the managed host.
seealso:
  - module: pdserve.sglang.gpu_facts
"""

EXAMPLES = r"""
- name: Read the host
  pdserve.sglang.install_facts:
    python: /usr/bin/python3
    disk:
      - {name: venv, path: /opt/sglang/venv, min_free_gb: 25}
      - {name: model, path: /models/DeepSeek-V4-Flash, min_free_gb: 300}
    paths: [/opt/pdserve/wheelhouse]
    users: [sglang]
  register: host

- name: Fail when the model and the venv do not fit
  ansible.builtin.assert:
    that: host.disk | rejectattr('ok') | list | length == 0
"""

RETURN = r"""
account_to_fix:
  description: Whether P(pdserve.sglang.service_account#module) would change the O(account); V(null) without one.
  returned: always
  type: bool
  version_added: 0.4.0
python:
  description: The interpreter of O(python).
  returned: always
  type: dict
  contains:
    path:
      description: "O(python)."
      type: str
    found:
      description: Whether it exists and answered.
      type: bool
    version:
      description: "C(major.minor)."
      type: str
      sample: "3.11"
    full_version:
      description: "C(major.minor.micro)."
      type: str
      sample: "3.11.2"
    venv:
      description: Whether C(venv) and C(ensurepip) import (Debian - package python3-venv).
      type: bool
    error:
      description: Why it did not answer; empty when it did.
      type: str
libc:
  description: The C library, C({name, version}); C(name) is C(glibc) on Debian and Ubuntu.
  returned: always
  type: dict
  sample: {name: glibc, version: "2.36"}
machine:
  description: The machine type.
  returned: always
  type: str
  sample: x86_64
ucx:
  description: A UCX outside Python packages.
  returned: always
  type: dict
  contains:
    present:
      description: Whether C(ucx_info) or C(libucp) was found.
      type: bool
    ucx_info:
      description: Path of C(ucx_info), empty when absent.
      type: str
    libucp:
      description: The C(libucp) found, empty when none.
      type: str
    version:
      description: The version C(ucx_info -v) reports, empty when unknown.
      type: str
cuda:
  description: The CUDA toolkit.
  returned: always
  type: dict
  contains:
    home:
      description: "O(cuda_home)."
      type: str
    nvcc:
      description: The C(nvcc) found, empty when none.
      type: str
    version:
      description: Its release, empty when unknown.
      type: str
      sample: "13.0"
git:
  description: Path of git, empty when absent.
  returned: always
  type: str
cc:
  description: Path of a C compiler (C(cc) or C(gcc)), empty when absent.
  returned: always
  type: str
disk:
  description: One entry per O(disk) entry, in order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The entry's name.
      type: str
    path:
      description: The entry's path.
      type: str
    min_free_gb:
      description: What the entry asks for while the path does not exist.
      type: float
    checked:
      description: The path whose filesystem was measured (the nearest existing one).
      type: str
    exists:
      description: Whether the path exists (then it needs nothing).
      type: bool
    need_gb:
      description: GiB this entry needs.
      type: float
    need_gb_total:
      description: GiB every entry on the same filesystem needs together.
      type: float
    free_gb:
      description: Free GiB on that filesystem.
      type: float
    shared_with:
      description: The other entries on the same filesystem.
      type: list
      elements: str
    free_bytes:
      description: Free bytes on that filesystem (for messages about small filesystems).
      type: int
    size_bytes:
      description: Size of that filesystem in bytes.
      type: int
    filesystem:
      description: The mount that holds the measured path, C({mount, fstype, source}) (empty strings when unknown).
      type: dict
    ok:
      description: Whether the free space covers RV(disk[].need_gb_total).
      type: bool
    error:
      description: Why the entry could not be measured (a path that is not absolute); empty otherwise.
      type: str
paths:
  description: For each of O(paths), C({exists, isdir, owner, group, mode}) (names; the mode as C("0755")).
  returned: always
  type: dict
  sample: {/opt/sglang/venv/lib: {exists: true, isdir: true, owner: sglang, group: sglang, mode: "0755"}}
users:
  description: For each of O(users), C({exists, uid, home}).
  returned: always
  type: dict
  sample: {sglang: {exists: true, uid: 998, home: /var/lib/sglang}}
venv_packages:
  description:
    - "C({name: version}) of every distribution installed in the venv of O(venv_python), as its metadata spells the
      name; empty without O(venv_python) or when that venv does not exist."
  returned: always
  type: dict
  sample: {"sglang-router": "0.3.2"}
  version_added: 0.4.0
umask:
  description:
    - The umask of the module's process (an integer, C(18) for C(0022)); the role's pip and download run as the same
      user, and the services must read what they write.
  returned: always
  type: int
  sample: 18
  version_added: 0.4.0
ansible_facts:
  description: The same values under one fact.
  returned: always
  type: dict
  contains:
    pdserve_install:
      description: All the keys above.
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.pdserve.sglang.plugins.module_utils.common_args import account_argument_spec
from ansible_collections.pdserve.sglang.plugins.module_utils.host import service_account
from ansible_collections.pdserve.sglang.plugins.module_utils.install.host import gather


def argument_spec():
    return dict(
        python=dict(type="path", default="/usr/bin/python3"),
        cuda_home=dict(type="path", default="/usr/local/cuda"),
        disk=dict(type="list", elements="dict", default=[], options=dict(
            name=dict(type="str", required=True),
            path=dict(type="str", required=True),
            min_free_gb=dict(type="float", required=True),
            present=dict(type="str"),
            incomplete=dict(type="str"),
        )),
        paths=dict(type="list", elements="path", default=[]),
        users=dict(type="list", elements="str", default=[]),
        venv_python=dict(type="path"),
        **account_argument_spec()
    )


def run_module():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params

    def run(argv):
        return module.run_command(argv, check_rc=False)

    def which(name):
        return module.get_bin_path(name)

    facts = gather(run, which, params["python"], params["cuda_home"], params["disk"], params["paths"], params["users"],
                   params["venv_python"])
    # Not a fact: it is stale as soon as the caller fixed the account.
    module.exit_json(changed=False, ansible_facts={"pdserve_install": facts},
                     account_to_fix=service_account.differs(params["account"]), **facts)


def main():
    run_module()


if __name__ == "__main__":
    main()
