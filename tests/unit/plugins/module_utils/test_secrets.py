# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which values are secrets, by the names they are set under (what --diff masks)."""

import pytest

from ansible_collections.pdserve.sglang.plugins.filter import secrets as filters
from ansible_collections.pdserve.sglang.plugins.module_utils import secrets


@pytest.mark.parametrize("name,secret", [
    ("HF_TOKEN", True), ("WANDB_API_KEY", True), ("AWS_SECRET_ACCESS_KEY", True), ("DB_PASSWORD", True),
    ("MY_PASSWD", True), ("GOOGLE_APPLICATION_CREDENTIALS_JSON", True), ("hf_token", True),
    ("HF_TOKEN_PATH", False), ("SSL_KEY_FILE", False), ("KEY_DIR", False),
    ("CUDA_VISIBLE_DEVICES", False), ("SGLANG_DISAGGREGATION_NIXL_BACKEND", False), ("HF_ENDPOINT", False),
])
def test_names_that_look_secret(name, secret):
    assert secrets.looks_secret(name) is secret


def test_env_secret_values_as_given_and_as_the_env_file_writes_them():
    envs = [{"HF_TOKEN": "hf_abc", "CUDA_VISIBLE_DEVICES": "0,1"}, None,
            {"DB_PASSWORD": 'a"b\\c', "FEATURE_KEY_ON": "1", "OTHER_KEY": "${HF_TOKEN}", "EMPTY_SECRET": ""},
            {"HF_TOKEN": "hf_abc"}]
    assert secrets.env_secret_values(envs) == ["hf_abc", 'a"b\\c', 'a\\"b\\\\c']
    assert filters.env_secret_values({"HF_TOKEN": "t0k"}) == ["t0k"]
    with pytest.raises(Exception):
        filters.env_secret_values("HF_TOKEN=x")


def test_env_without_secrets_keeps_what_a_parser_check_needs():
    assert secrets.env_without_secrets({"HF_TOKEN": "x", "SGLANG_X": "1", "HF_TOKEN_PATH": "/p"}) == {
        "SGLANG_X": "1", "HF_TOKEN_PATH": "/p"}


def test_nested_secret_values_of_receivers_and_scrape_configs():
    config = {
        "global": {"slack_api_url": "https://hooks.slack/T/B/x", "smtp_auth_password": "pw", "resolve_timeout": "5m",
                   "smtp_auth_password_file": "/etc/pw"},
        "receivers": [{"name": "a", "webhook_configs": [{"url": "https://hook/?t=1", "send_resolved": True}],
                       "pagerduty_configs": [{"routing_key": "rk123"}], "telegram_configs": [{"bot_token": "bt"}],
                       "msteams_configs": [{"webhook_url": "https://teams/x"}],
                       "email_configs": [{"to": "a@b", "auth_secret": "as"}]}],
        "scrape": [{"basic_auth": {"username": "u", "password": 1234}, "authorization": {"credentials": "c"},
                    "remote": {"url": "https://user:pass@remote/write"}, "static_configs": [{"targets": ["h:1"]}]}],
    }
    assert secrets.nested_secret_values(config) == [
        "https://hooks.slack/T/B/x", "pw", "https://hook/?t=1", "rk123", "bt", "https://teams/x", "as", "1234", "c",
        "https://user:pass@remote/write"]
