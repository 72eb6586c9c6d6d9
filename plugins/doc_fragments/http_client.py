# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)


class ModuleDocFragment(object):
    # Options of plugins/module_utils/common_args.py:http_argument_spec
    DOCUMENTATION = r'''
options:
  api_key:
    description:
      - Bearer token sent in the C(Authorization) header (C(Bearer) scheme) with every request.
      - The value of the router's C(--api-key) (or the server's), when one is set.
    type: str
  validate_certs:
    description:
      - Verify TLS certificates of C(https://) endpoints.
    type: bool
    default: true
  request_timeout:
    description:
      - Seconds one HTTP request may take before it counts as failed.
    type: float
    default: 30.0
notes:
  - The modules use only the Python standard library on the target host.
  - Proxy environment variables are ignored; the endpoints are reached directly.
'''
