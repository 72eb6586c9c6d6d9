# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""--diff masks every secret in every file the collection writes: the servers' env files (HF_TOKEN and names that look
secret, in the model env and an instance's own env), Grafana's datasource and env file, prometheus.yml's scrape
credentials (the collection's and extra scrape configurations) and Alertmanager's receivers.

Each file is laid out by its role as a play does (diffs.yml, local connection, the roles' own variables), then planned
by managed_files in check mode with --diff and the role's own secret_values: the secret is in the file's text, and
nowhere in the output (the diff, the result, the module's arguments)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
PLAYBOOK = pathlib.Path(__file__).resolve().parent / "diffs.yml"

SERVER_SECRETS = {"HF_TOKEN": "hf_tok3n_value", "WANDB_API_KEY": "wandb-k3y-value", "DB_PASSWORD": 'pa"ss\\w0rd'}
MONITORING_SECRETS = ["admin-s3cret", "client-s3cret", "scrape-s3cret", "extra-basic-s3cret", "extra-bearer-t0ken",
                      "https://hooks.slack.example/T000/B000/slack-t0ken", "smtp-s3cret",
                      "https://hooks.example/alert?token=webhook-t0ken"]
INVENTORY = {
    "sglang_venv": "/opt/sglang/venv",
    "sglang_model_path": "/models/m",
    "sglang_model_served_name": "m",
    # The router listens on every address: it needs its keys (their credential files are tested in test_managed_files).
    "sglang_router_api_key": "r0uter-client-k3y",
    "sglang_router_control_plane_api_key": "r0uter-admin-k3y",
    "sglang_model_env": {"HF_TOKEN": SERVER_SECRETS["HF_TOKEN"], "SGLANG_SOMETHING": "1"},
    "sglang_prefill_instances": [{"name": "prefill-0", "port": 30000, "bootstrap_port": 8998, "dist_init_port": 30335,
                                  "env": {"WANDB_API_KEY": SERVER_SECRETS["WANDB_API_KEY"]}}],
    "sglang_decode_instances": [{"name": "decode-0", "port": 30002, "dist_init_port": 30435,
                                 "env": {"DB_PASSWORD": SERVER_SECRETS["DB_PASSWORD"], "NCCL_KEY_OFF": "1"}}],
    "monitoring_alertmanager_enabled": True,
    "monitoring_grafana_source": "apt_repo",
    "monitoring_grafana_admin_password": "admin-s3cret",
    "monitoring_prometheus_client_auth": {"username": "grafana", "password": "client-s3cret"},
    "monitoring_node_exporter_scrape_auth": {"basic_auth": {"username": "prom", "password": "scrape-s3cret"}},
    "monitoring_extra_scrape_configs": [
        {"job_name": "other", "basic_auth": {"username": "u", "password": "extra-basic-s3cret"},
         "static_configs": [{"targets": ["10.0.0.9:9100"]}]},
        {"job_name": "bearer", "authorization": {"type": "Bearer", "credentials": "extra-bearer-t0ken"},
         "static_configs": [{"targets": ["10.0.0.9:9101"]}]}],
    "monitoring_alertmanager_config": {
        "global": {"slack_api_url": MONITORING_SECRETS[5], "smtp_auth_password": "smtp-s3cret",
                   "smtp_smarthost": "mail.example:587", "smtp_from": "am@example"},
        "route": {"receiver": "team"},
        "receivers": [{"name": "team", "slack_configs": [{"channel": "#alerts"}],
                       "webhook_configs": [{"url": MONITORING_SECRETS[7]}]}]},
}


def _roles_path(base):
    """A roles path with the role "diffs_monitoring": its task (diffs_monitoring/main.yml) and, linked, the monitoring
    role's templates and files, so a template lookup finds them as in the role's own tasks (made here: the collection
    ships no directory links)."""
    role = base / "roles" / "diffs_monitoring"
    (role / "tasks").mkdir(parents=True)
    shutil.copy(str(pathlib.Path(__file__).resolve().parent / "diffs_monitoring" / "main.yml"), str(role / "tasks"))
    for name in ("templates", "files"):
        os.symlink(str(ROOT / "roles" / "monitoring" / name), str(role / name))
    return str(base / "roles")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("diffs")
    groups = dict((g, {"hosts": {"box": None}})
                  for g in ("sglang_prefill", "sglang_decode", "sglang_router", "monitoring"))
    (base / "group_vars").mkdir()
    (base / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": groups}}))
    (base / "group_vars" / "all.yml").write_text(yaml.safe_dump(INVENTORY))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_ROLES_PATH=_roles_path(base))
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(PLAYBOOK),
                           "-i", str(base / "hosts.yml"), "--check", "--diff", "--tags", "diffs"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # Task names as given, without the role's prefix.
    tasks = dict((t["task"]["name"].split(" : ")[-1], t["hosts"]["box"]) for play in json.loads(proc.stdout)["plays"]
                 for t in play["tasks"])
    return tasks, proc.stderr


def _check(tasks, output, layout, plan, secrets, paths):
    contents = dict((f["path"], f["content"]) for f in tasks[layout]["msg"])
    for path in paths:
        assert path in contents, sorted(contents)
    for secret in secrets:
        assert any(secret in text or secret.replace("\\", "\\\\").replace('"', '\\"') in text
                   for text in contents.values()), secret
    diffs = tasks[plan]["diff"]
    shown = json.dumps(diffs)
    assert "********" in shown and set(d["after_header"] for d in diffs if d["after"]) >= set(paths)
    # Everything but the layout tasks (which show the texts on purpose): the plans' diffs, results and arguments.
    rest = json.dumps(dict((k, v) for k, v in tasks.items() if not k.startswith("Lay out"))) + output
    for secret in secrets:
        assert secret not in shown, secret
        assert json.dumps(secret)[1:-1] not in rest, secret


def test_server_env_files_mask_their_secrets(run):
    tasks, output = run
    secrets = list(SERVER_SECRETS.values()) + ['pa\\"ss\\\\w0rd']  # the value as the env file writes it, too
    _check(tasks, output, "Lay out the server files", "Plan the server files with --diff", secrets,
           ["/etc/sglang/prefill-0.env", "/etc/sglang/decode-0.env"])
    # A switch value under a secret-looking name is not masked (it would mask every "1" of the file).
    assert 'NCCL_KEY_OFF="1"' in json.dumps(tasks["Plan the server files with --diff"]["diff"]).replace('\\"', '"')


def test_monitoring_files_mask_their_secrets(run):
    tasks, output = run
    _check(tasks, output, "Lay out the monitoring files", "Plan the monitoring files with --diff", MONITORING_SECRETS,
           ["/etc/prometheus/prometheus.yml", "/etc/prometheus/alertmanager.yml",
            "/etc/grafana/provisioning/datasources/pdserve.yml", "/etc/grafana/pdserve.env"])
