# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Systemd containers on a private podman network, reached over SSH like real hosts.

The test image (tests/platform/build-image.sh) has openssh-server installed but disabled and
without host keys. ``bootstrap`` turns running containers into SSH hosts, through ``podman exec``
(the out-of-band channel a cloud provider's console or cloud-init would be):
  - a key pair generated here (``STATE/id_ed25519``), authorized for user ``pdserve``, who has
    password-less sudo (Ansible connects as it and becomes root, as on real hosts);
  - fresh host keys in each container, written to ``STATE/known_hosts`` (strict checking: the
    keys come over the trusted channel, not from the first connection);
  - ssh.service enabled and started;
  - ``STATE/config``, an ssh_config that maps each container name to its address on the network,
    with connection sharing (ControlMaster/ControlPersist) so Ansible's tasks reuse one connection.
``ssh -F STATE/config <container>`` then works, and so does Ansible with
``ansible_ssh_common_args: -F STATE/config``.

``up`` creates the network and the containers, then bootstraps them; ``down`` removes
containers, network and STATE. Molecule scenarios let the podman driver create the containers and
the network, run ``bootstrap`` in prepare and ``forget`` in cleanup (extensions/molecule/README.md).

    python tests/platform/ssh_stand.py up --state /tmp/stand --network pdserve-x pdserve-x-a pdserve-x-b
    ssh -F /tmp/stand/config pdserve-x-a sudo systemctl is-system-running
    python tests/platform/ssh_stand.py down --state /tmp/stand --network pdserve-x pdserve-x-a pdserve-x-b

Standard library only; only loopback and these containers are contacted.
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

USER = "pdserve"
IMAGE = "localhost/pdserve-systemd:bookworm"

# Run as root inside each container; the public key comes on stdin.
BOOTSTRAP = r"""
set -eu
command -v sshd >/dev/null || {{ echo "no openssh-server in this image: rebuild it (tests/platform/build-image.sh)" >&2; exit 3; }}
id -u {user} >/dev/null 2>&1 || useradd --create-home --shell /bin/bash {user}
install -d -m 0700 -o {user} -g {user} /home/{user}/.ssh
cat >/home/{user}/.ssh/authorized_keys
chown {user}:{user} /home/{user}/.ssh/authorized_keys
chmod 0600 /home/{user}/.ssh/authorized_keys
printf '%s ALL=(ALL) NOPASSWD:ALL\n' {user} >/etc/sudoers.d/{user}
chmod 0440 /etc/sudoers.d/{user}
test -s /etc/ssh/ssh_host_ed25519_key || ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
systemctl enable --now --quiet ssh.service
cat /etc/ssh/ssh_host_ed25519_key.pub
"""


def run(cmd, stdin=None, check=True, timeout=120):
    proc = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError("%s failed (%s): %s" % (" ".join(cmd), proc.returncode, proc.stderr.strip()))
    return proc


def container_address(name):
    """The container's IPv4 address on its (single) podman network."""
    out = run(["podman", "inspect", "--format", "{{json .NetworkSettings.Networks}}", name]).stdout
    addresses = [n.get("IPAddress") for n in (json.loads(out) or {}).values() if n.get("IPAddress")]
    if not addresses:
        raise RuntimeError("container %s has no address on a podman network (network: none?)" % name)
    return addresses[0]


def ssh_config(state, hosts):
    """The ssh_config text for {container name: address}."""
    lines = ["# Written by tests/platform/ssh_stand.py: the test stand's containers over SSH."]
    for name, address in sorted(hosts.items()):
        lines += ["Host %s" % name, "    HostName %s" % address, "    HostKeyAlias %s" % name]
    lines += [
        "Host %s" % " ".join(sorted(hosts)),
        "    User %s" % USER,
        "    IdentityFile %s" % os.path.join(state, "id_ed25519"),
        "    IdentitiesOnly yes",
        "    UserKnownHostsFile %s" % os.path.join(state, "known_hosts"),
        "    StrictHostKeyChecking yes",
        "    PasswordAuthentication no",
        # One connection per host, shared by every command and kept a while (as Ansible does).
        "    ControlMaster auto",
        "    ControlPersist 120s",
        "    ControlPath %s" % os.path.join(state, "cm-%C"),
        "    ServerAliveInterval 15",
        "",
    ]
    return "\n".join(lines)


def bootstrap(state, containers, timeout=60):
    """Make running containers SSH hosts; returns {name: address}."""
    os.makedirs(state, mode=0o700, exist_ok=True)
    key = os.path.join(state, "id_ed25519")
    if not os.path.exists(key):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pdserve-test-stand", "-f", key])
    with open(key + ".pub", encoding="utf-8") as handle:
        public = handle.read()

    def one(name):
        proc = run(["podman", "exec", "-i", name, "sh", "-c", BOOTSTRAP.format(user=USER)], stdin=public)
        host_key = proc.stdout.strip().splitlines()[-1].split()[:2]
        return name, container_address(name), host_key

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(containers) or 1) as pool:
        results = list(pool.map(one, containers))
    hosts = {name: address for name, address, _key in results}
    with open(os.path.join(state, "known_hosts"), "w", encoding="utf-8") as handle:
        for name, _address, host_key in results:
            handle.write("%s %s\n" % (name, " ".join(host_key)))
    with open(os.path.join(state, "config"), "w", encoding="utf-8") as handle:
        handle.write(ssh_config(state, hosts))
    # {name: address}: what an inventory needs where a host must be known by address (the host firewall's peers).
    with open(os.path.join(state, "addresses.json"), "w", encoding="utf-8") as handle:
        json.dump(hosts, handle, sort_keys=True)
    deadline = time.monotonic() + timeout
    for name in containers:
        while True:
            proc = run(ssh_command(state, name, "true"), check=False, timeout=30)
            if proc.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("ssh to %s failed: %s" % (name, proc.stderr.strip()))
            time.sleep(0.5)
    return hosts


def ssh_command(state, name, command):
    return ["ssh", "-F", os.path.join(state, "config"), "-o", "BatchMode=yes", name, command]


def forget(state):
    """Close the shared connections and remove the key, the config and known_hosts."""
    config = os.path.join(state, "config")
    if os.path.exists(config):
        with open(config, encoding="utf-8") as handle:
            names = [line.split()[1] for line in handle if line.startswith("Host ") and len(line.split()) == 2]
        for name in names:
            run(["ssh", "-F", config, "-O", "exit", name], check=False, timeout=10)
    shutil.rmtree(state, ignore_errors=True)


def create_containers(network, containers, image=IMAGE, wheelhouse=None):
    """Systemd containers with the options of extensions/molecule/config.yml, on ``network``
    (created when missing; ``none``: no network, reached through podman exec only)."""
    if network != "none" and run(["podman", "network", "exists", network], check=False).returncode != 0:
        run(["podman", "network", "create", network])
    nofile = os.environ.get("PDSERVE_NOFILE", "1024")
    cache = os.environ.get("PDSERVE_CACHE", "/var/cache/pdserve")
    wheelhouse = wheelhouse or os.path.join(cache, "wheelhouse")
    # site.yml's exporters play installs Debian's node exporter from this local apt repository
    # (scripts/apt-monitoring.sh), mounted like the molecule scenarios mount it.
    apt_monitoring = os.path.join(cache, "apt-monitoring")
    # The KV fabric check's NIXL and CPU torch (scripts/setup.sh), mounted like the molecule
    # scenarios and inventories/local expect them.
    fabric_site = os.path.join(cache, "kv-fabric-site")
    for name in containers:
        run(["podman", "rm", "-f", "-t", "0", name], check=False)
        run(["podman", "run", "-d", "--name", name, "--hostname", name, "--network", network,
             # NET_ADMIN: the host firewall (pdserve.sglang.sglang_firewall) loads its nftables table.
             "--systemd=always", "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN",
             "--ulimit", "nofile=%s:%s" % (nofile, nofile), "--ulimit", "nproc=32768:32768",
             "--label", "pdserve.stand=%s" % network,
             "-v", "%s:/opt/pdserve/wheelhouse:ro" % wheelhouse,
             "-v", "%s:/opt/pdserve/apt-monitoring:ro" % apt_monitoring,
             "-v", "%s:/opt/pdserve/kv-fabric-site:ro" % fabric_site, image, "/sbin/init"])
    for name in containers:
        run(["podman", "exec", name, "systemctl", "is-system-running", "--wait"], check=False, timeout=120)


def up(state, network, containers, image=IMAGE, wheelhouse=None):
    """Network + systemd containers + bootstrap; returns {name: address}."""
    create_containers(network, containers, image, wheelhouse)
    return bootstrap(state, containers)


def down(state, network, containers):
    forget(state)
    for name in containers:
        run(["podman", "rm", "-f", "-t", "0", name], check=False)
    if network and network != "none":
        run(["podman", "network", "rm", "-f", network], check=False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["up", "bootstrap", "forget", "down"])
    parser.add_argument("containers", nargs="*")
    parser.add_argument("--state", required=True, help="directory for the key, known_hosts and ssh config")
    parser.add_argument("--network", default="", help="podman network (up, down)")
    parser.add_argument("--image", default=os.environ.get("PDSERVE_IMAGE", IMAGE))
    args = parser.parse_intermixed_args(argv)
    if args.action == "up":
        hosts = up(args.state, args.network, args.containers, image=args.image)
    elif args.action == "bootstrap":
        hosts = bootstrap(args.state, args.containers)
    elif args.action == "forget":
        forget(args.state)
        return 0
    else:
        down(args.state, args.network, args.containers)
        return 0
    for name, address in sorted(hosts.items()):
        print("%s %s  (ssh -F %s %s)" % (name, address, shlex.quote(os.path.join(args.state, "config")), name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
