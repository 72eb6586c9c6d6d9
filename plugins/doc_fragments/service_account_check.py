# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)


class ModuleDocFragment(object):
    # Options of plugins/module_utils/common_args.py:account_argument_spec
    DOCUMENTATION = r'''
options:
  account:
    description:
      - A service account as P(pdserve.sglang.service_account#module) takes it. The module only reads whether that
        module would change anything for it (RV(account_to_fix)), and changes nothing of the account itself, so a
        caller creates or fixes the account only where it differs, without a round trip of its own on an unchanged
        host.
    type: dict
    version_added: 0.4.0
    suboptions:
      name:
        description: The user name.
        type: str
        required: true
      group:
        description: Its primary group.
        type: str
        required: true
      home:
        description: Its home directory.
        type: path
        required: true
      shell:
        description: Its login shell.
        type: path
        default: /usr/sbin/nologin
      extra_groups:
        description: Supplementary groups (only those that exist on the host count).
        type: list
        elements: str
        default: []
      config_dir:
        description: The configuration directory (C(root:<group>)).
        type: path
      config_mode:
        description: Mode of O(account.config_dir).
        type: str
        default: "0750"
'''
