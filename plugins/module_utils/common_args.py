# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Argument spec pieces shared by several modules: the HTTP modules' (documented in doc_fragments/http_client.py) and
the service account check's (doc_fragments/service_account_check.py)."""

from typing import Any, Dict, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.http_client import CaFileError, HttpClient


def http_argument_spec() -> Dict[str, Dict[str, Any]]:
    """Options every module that talks to SGLang or the router takes."""
    return dict(
        api_key=dict(type='str', no_log=True),
        validate_certs=dict(type='bool', default=True),
        request_timeout=dict(type='float', default=30.0),
    )


def router_argument_spec() -> Dict[str, Dict[str, Any]]:
    """The shared options plus the router's control-plane key (its /workers API) and the CA file its TLS
    certificate is verified against."""
    spec = http_argument_spec()
    spec.update(control_plane_api_key=dict(type='str', no_log=True), ca_path=dict(type='path'))
    return spec


def account_argument_spec() -> Dict[str, Dict[str, Any]]:
    """The ``account`` option of the modules that read whether a service account would change."""
    return dict(account=dict(type='dict', options=dict(
        name=dict(type='str', required=True),
        group=dict(type='str', required=True),
        home=dict(type='path', required=True),
        shell=dict(type='path', default='/usr/sbin/nologin'),
        extra_groups=dict(type='list', elements='str', default=[]),
        config_dir=dict(type='path'),
        config_mode=dict(type='str', default='0750'),
    )))


def client_from_params(params: Dict[str, Any], timeout: Optional[float] = None) -> HttpClient:
    """An HttpClient from the shared options (and control_plane_api_key and ca_path, when the module has them)."""
    return HttpClient(
        api_key=params.get('api_key'),
        control_plane_api_key=params.get('control_plane_api_key'),
        timeout=timeout if timeout is not None else params.get('request_timeout') or 30.0,
        validate_certs=params.get('validate_certs', True),
        ca_path=params.get('ca_path'),
    )


def module_client(module: Any, timeout: Optional[float] = None) -> HttpClient:
    """client_from_params for a module: a CA file that cannot be used fails the module, saying which and why."""
    try:
        return client_from_params(module.params, timeout=timeout)
    except CaFileError as exc:
        return module.fail_json(msg=str(exc))  # never returns (exits the module)
