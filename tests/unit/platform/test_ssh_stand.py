# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""tests/platform/ssh_stand.py: the ssh_config it writes (the containers themselves are tested by
the multihost molecule scenario)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "platform"))

import ssh_stand  # noqa: E402  pylint: disable=wrong-import-position


def test_ssh_config_maps_names_to_addresses_with_strict_keys_and_shared_connections():
    text = ssh_stand.ssh_config("/state", {"pdserve-x-b": "10.89.0.3", "pdserve-x-a": "10.89.0.2"})
    lines = [line.strip() for line in text.splitlines()]
    a = lines.index("Host pdserve-x-a")
    assert lines[a + 1:a + 3] == ["HostName 10.89.0.2", "HostKeyAlias pdserve-x-a"]
    common = lines.index("Host pdserve-x-a pdserve-x-b")
    assert common > lines.index("Host pdserve-x-b")  # specific entries first: ssh takes the first value
    for option in ("User pdserve", "IdentityFile /state/id_ed25519", "IdentitiesOnly yes",
                   "UserKnownHostsFile /state/known_hosts", "StrictHostKeyChecking yes",
                   "PasswordAuthentication no", "ControlMaster auto", "ControlPersist 120s",
                   "ControlPath /state/cm-%C"):
        assert option in lines[common:], option


def test_bootstrap_makes_a_sudo_user_its_own_host_key_and_starts_sshd():
    script = ssh_stand.BOOTSTRAP.format(user="pdserve")
    assert "systemctl enable --now --quiet ssh.service" in script
    assert "NOPASSWD:ALL" in script and "chmod 0440 /etc/sudoers.d/pdserve" in script
    assert "ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key" in script
