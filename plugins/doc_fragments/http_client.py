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

    # router_argument_spec: the shared options plus the router's control-plane key (and ROUTER_TLS: its CA file).
    CONTROL_PLANE = r'''
options:
  control_plane_api_key:
    description:
      - Bearer token for the router's worker-management API (C(GET), C(POST) and C(DELETE) of C(/workers)), the key of
        its C(--control-plane-api-keys) entry (role admin); C(sglang_router_control_plane_api_key) in the inventory.
      - Unset, O(api_key) is sent there too (a router without control-plane keys lets its client key manage workers).
    type: str
'''

    # router_argument_spec: the CA file of the router's TLS port.
    ROUTER_TLS = r'''
options:
  ca_path:
    description:
      - A CA certificate file (PEM) on the host the module runs on; C(https://) endpoints are verified against it instead
        of the system's trust store.
      - For a router served over TLS (C(sglang_router_tls) V(stack_ca) or V(provided)), the router role puts the CA that
        issued its certificate at C(sglang_router_tls_ca_path) (C(/etc/pdserve/router-ca.pem)) on the router hosts; the
        serving topology names it as the router's C(ca_path).
      - Ignored with O(validate_certs=false). A file that cannot be read fails the module.
    type: path
    version_added: 0.4.0
'''
