# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a NIXL transfer really uses: move a buffer both ways between two NIXL agents and ask UCX which transports it chose.

SGLang's PD KV transfer (``--disaggregation-transfer-backend nixl``) works or not, fast or not, through the UCX that
NIXL bundles, and nothing says which path it took: UCX falls back to TCP without RDMA and stages GPU memory through
host memory ("software emulation") without a warning. ``UCX_PROTO_INFO=y`` makes
UCX print, at the first transfer of each kind, the protocol and transports it selected; this module reads those lines.

``probe_in_process`` runs both agents in one process (two buffers on one host or one GPU): it proves that NIXL and UCX
register and move that memory, and what they move it through, not the fabric between two hosts. ``judge`` turns a
probe's figures and the operator's expectations into problems.
"""

import base64
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

from ansible_collections.pdserve.sglang.plugins.module_utils.problems import control_character, env_problems, problem
from ansible_collections.pdserve.sglang.plugins.module_utils.serving.unit_values import ACCOUNT_NAME

# UCX_PROTO_INFO's tables (UCX's log lines: "[time] [host:pid:thread]" then the table), one per operation and context:
#   | ucp_context_0 intra-node cfg#1 | remote memory write by ucp_put* from host memory to host |
#   |                         0..inf | zero-copy                             | cma/memory        |
# Each row is a size range, the protocol, and the transports as <transport>/<device> (several where UCX splits).
# "software emulation" names a protocol where UCX found no transport that reaches that memory and copies it through
# host memory itself. NIXL's READ and WRITE are ucp_get and ucp_put: the KV path; active messages carry control.
# UCX prints a table for every pair of memory kinds an endpoint could meet ("from host memory to cuda/dev[0]"), and for
# "self" (an agent to itself) beside "intra-node"/"inter-node" (to another agent): only the tables of the memory the
# transfer moved, between two agents, say what it went through (on an H200 the host-to-GPU table is software emulation
# over tcp while GPU to GPU is cuda_ipc).
_PREFIX = re.compile(r"^\s*\[[0-9.]+\]\s+\[[^]]*\]\s*")
_CELLS = re.compile(r"^[|](.*)[|]\s*$")
_TRANSPORT = re.compile(r"\b([a-z][a-z0-9_]*)/([A-Za-z0-9_:.-]+)")
_ENDS = re.compile(r"\bfrom (.+?) to (.+?)\s*$")
# A READ's table says it the other way round: "remote memory read by ucp_get*(multi) into cuda/GPU0 from cuda/dev[0]".
_ENDS_READ = re.compile(r"\binto (.+?) from (.+?)\s*$")
MEMORY_KINDS = {"DRAM": "host", "VRAM": "cuda"}


def is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _kind(memory: str) -> str:
    """host, cuda (or rocm, ...) from UCX's name of a memory ("host memory", "cuda/GPU0", "cuda/dev[0]")."""
    memory = memory.strip()
    return "host" if memory.startswith("host") else memory.split("/", 1)[0]


EMULATION = "software emulation"
DATA_OPERATIONS = ("ucp_put", "ucp_get")


def _ends(operation: str):
    """(source kind, destination kind) of a UCX_PROTO_INFO operation, (None, None) where it names none."""
    read = _ENDS_READ.search(operation)
    if read:
        return _kind(read.group(2)), _kind(read.group(1))
    ends = _ENDS.search(operation)
    return (_kind(ends.group(1)), _kind(ends.group(2))) if ends else (None, None)


def proto_info(text: str) -> List[Dict[str, Any]]:
    """The operations UCX_PROTO_INFO printed in ``text``, once each: context, operation, rows (size range, protocol,
    transports), the transports and devices named, whether a row is software emulation, and whether it moves data."""
    found: Dict[Any, Dict[str, Any]] = {}
    current: Optional[Dict[str, Any]] = None
    for line in text.splitlines():
        cells = _CELLS.match(_PREFIX.sub("", line).strip())
        if not cells:
            continue
        parts = [part.strip() for part in cells.group(1).split("|")]
        if len(parts) == 2 and parts[0].startswith("ucp_context"):
            key = (parts[0], parts[1])
            source, destination = _ends(parts[1])
            scope = parts[0].split()[1] if len(parts[0].split()) > 1 else ""
            current = found.setdefault(key, {"context": parts[0], "scope": scope, "operation": parts[1], "rows": [],
                                             "source": source, "destination": destination,
                                             "transports": [], "devices": [], "emulated": EMULATION in parts[1].lower(),
                                             "data": any(name in parts[1] for name in DATA_OPERATIONS)})
            if current["rows"]:
                current = None  # printed again (another endpoint of the same configuration): counted once
        elif len(parts) == 3 and current is not None:
            size, protocol, where = parts
            current["rows"].append({"size": size, "protocol": protocol, "transports": where})
            current["emulated"] = current["emulated"] or EMULATION in (protocol + " " + where).lower()
            for transport, device in _TRANSPORT.findall(where):
                if transport not in current["transports"]:
                    current["transports"].append(transport)
                if transport + "/" + device not in current["devices"]:
                    current["devices"].append(transport + "/" + device)
    return list(found.values())


def transfer_path(operations: List[Dict[str, Any]], memory: str) -> List[Dict[str, Any]]:
    """The operations that moved ``memory`` (DRAM or VRAM) from one agent to another: data operations whose source
    and destination are that memory's kind, other than an agent's path to itself."""
    kind = MEMORY_KINDS.get(memory, memory)
    return [operation for operation in operations if operation["data"] and operation["scope"] != "self"
            and operation["source"] == kind and operation["destination"] == kind]


def transports(operations: List[Dict[str, Any]]) -> List[str]:
    """The transports the operations name, in the order first seen."""
    seen: List[str] = []
    for operation in operations:
        seen.extend(name for name in operation["transports"] if name not in seen)
    return seen


def judge(result: Dict[str, Any], expect: Optional[List[str]] = None, min_gbps: Optional[float] = None) -> List[str]:
    """Problems of a probe's ``result``: data that did not arrive intact, a direction below ``min_gbps``, GPU memory
    moved by software emulation, transports outside ``expect`` (UCX's names, e.g. ``rc_mlx5`` or ``tcp``), or, where
    ``expect`` is given, no transport learnt at all (said as such rather than passed)."""
    problems = []
    for direction in result.get("directions", []):
        name = "%s -> %s" % (direction["from"], direction["to"])
        if direction.get("intact") is False:
            problems.append("%s: the data did not arrive intact" % name)
        if min_gbps is not None and direction["gbps"] < min_gbps:
            problems.append("%s: %.2f GB/s, below the floor of %.2f GB/s" % (name, direction["gbps"], min_gbps))
    if result.get("memory") == "VRAM" and result.get("emulated"):
        emulated = [op for op in result.get("operations") or [] if op.get("emulated")]
        problems.append("GPU memory moved by UCX's software emulation (staged through host memory): %s"
                        % ("; ".join("%s over %s" % (_verb(op["operation"]), ", ".join(op["devices"]) or "no transport")
                                     for op in emulated)
                           or ", ".join(result.get("transports") or ["no transport named"])))
    if expect:
        learnt = result.get("transports") or []
        if not learnt:
            problems.append("UCX named no transport for %s between the agents (UCX_PROTO_INFO printed nothing this "
                            "probe could read): the transport could not be checked against %s"
                            % (result.get("memory", "the memory"), ", ".join(expect)))
        outside = [name for name in learnt if name not in expect and name != "self"]
        if outside:
            problems.append("UCX moved the data through %s, which the inventory does not expect (expected: %s)"
                            % (", ".join(outside), ", ".join(expect)))
    return problems


def _verb(operation: str) -> str:
    """"the READ (ucp_get)" or "the WRITE (ucp_put)" of a UCX_PROTO_INFO operation, else the operation itself."""
    if "ucp_get" in operation:
        return "the READ (ucp_get)"
    return "the WRITE (ucp_put)" if "ucp_put" in operation else operation


def summary(result: Dict[str, Any]) -> str:
    """One line: the directions with their bandwidth, the transports, emulation (a target: what it received)."""
    paired = "target" in result  # an initiator: its line names the pair; a direction is its operation
    parts = ["%s%s %.2f GB/s%s" % ("" if paired else "%s -> %s " % (d["from"], d["to"]), d.get("operation", "WRITE"),
                                   d["gbps"], " NOT INTACT" if d.get("intact") is False else "")
             for d in result.get("directions", [])]
    parts += ["slot %d from %s%s" % (r["slot"], r["from"], "" if r["intact"] else " NOT INTACT")
              for r in result.get("received", [])]
    parts += ["slot %d: nothing received" % slot for slot in result.get("missing_slots", [])]
    return "%s %d MiB: %s; through %s%s" % (result.get("memory"), int(result.get("bytes", 0)) >> 20, ", ".join(parts),
                                            ", ".join(result.get("transports") or []) or "(UCX named no transport)",
                                            # of GPU memory (host memory's READ over tcp is emulated, and nothing)
                                            " (software emulation)" if result.get("emulated")
                                            and result.get("memory") == "VRAM" else "")


def pair_report(initiators: List[Dict[str, Any]], targets: List[Dict[str, Any]], expect: Optional[List[str]] = None,
                min_gbps: Optional[float] = None) -> Dict[str, Any]:
    """Every pair's line and the problems of all of them, from the initiators' results and the targets' (Ansible's
    registered results: skipped ones are left out, failed ones are problems): a WRITE is intact as its target says."""
    initiators = [result for result in initiators if isinstance(result, dict) and not result.get("skipped")]
    targets = [result for result in targets if isinstance(result, dict) and not result.get("skipped")]
    by_agent = {target.get("agent"): target for target in targets if target.get("agent")}
    lines, problems = [], []
    for target in targets:
        if target.get("failed") or "agent" not in target:
            problems.append("the target %s failed: %s" % (target.get("agent", "of a decode host"),
                                                          target.get("msg") or "it returned no result"))
    for result in initiators:
        pair = "%s -> %s" % (result.get("agent") or "?", result.get("target") or result.get("item", "?"))
        if result.get("failed") or "directions" not in result:
            problems.append("%s: the probe failed: %s" % (pair, result.get("msg") or "it returned no result"))
            continue
        target = by_agent.get(result.get("target"), {})
        got = {r["slot"]: r["intact"] for r in target.get("received", [])}
        directions = [dict(d, intact=got.get(result.get("slot"), False) if d["intact"] is None else d["intact"])
                      for d in result["directions"]]
        merged = dict(result, directions=directions)
        lines.append("%s: %s" % (pair, summary(merged)))
        problems.extend("%s: %s" % (pair, problem) for problem in judge(merged, expect, min_gbps))
    for target in targets:
        for slot in target.get("missing_slots", []):
            problems.append("%s: slot %d received nothing within the probe's time" % (target.get("agent"), slot))
    return {"lines": lines, "problems": problems}


# UCX's transport names as an inventory writes them (rc_mlx5, dc_mlx5, ud_verbs, tcp, cuda_ipc, ...).
_TRANSPORT_NAME = re.compile(r"^[a-z][a-z0-9_]{1,31}$")


def settings_problems(host: str, settings: Dict[str, Any], prefix: str = "sglang_kv_fabric_") -> List[Dict[str, Any]]:
    """``{host, variable, message, fix}`` for the check's settings (the role's variables without ``prefix``), before
    anything runs: what the probe would refuse, or take for something else, and what no shell may see."""
    found = []

    def bad(key: str, message: str, fix: str) -> None:
        found.append(problem(host, prefix + key, message, fix))

    if settings.get("memory") not in MEMORY_KINDS:
        bad("memory", "must be VRAM or DRAM, got %r" % (settings.get("memory"),),
            "VRAM on GPU hosts (the KV cache's memory), DRAM where the servers have no GPU")
    for key, least in (("size_mib", 1), ("rounds", 1), ("device", 0)):
        value = settings.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < least or (key == "size_mib" and value > 65536):
            bad(key, "must be a whole number of at least %d%s, got %r" % (least, " and at most 65536" if key == "size_mib"
                                                                          else "", value), "e.g. %s" % {"size_mib": 64, "rounds": 4, "device": 0}[key])
    for key in ("timeout", "min_gbps"):
        value = settings.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0 \
                or (key == "timeout" and not 0 < value <= 3600):
            bad(key, "must be a number %s, got %r" % ("of seconds above 0 and at most 3600" if key == "timeout"
                                                      else "of GB/s, at least 0 (0: no floor)", value),
                "e.g. %s" % ("120" if key == "timeout" else "10.0"))
    expect = settings.get("expect_transports")
    if not isinstance(expect, list) or not all(isinstance(name, str) and _TRANSPORT_NAME.match(name) for name in expect):
        bad("expect_transports", "must be a list of UCX transport names (lower case letters, digits, _), got %r"
            % (expect,), "e.g. [rc_mlx5] for RDMA, [tcp] where the hosts have only Ethernet, [] to accept any")
    user = settings.get("user")
    if not isinstance(user, str) or not ACCOUNT_NAME.fullmatch(user):
        bad("user", "must be a user name (letters, digits, '_', '.', '-', not starting with a digit or '-'), got %r"
            % (user,), "the model servers' service user, e.g. sglang (sglang_service_user)")
    python = settings.get("python")
    if not isinstance(python, str) or not python.startswith("/") or any(ch.isspace() for ch in python) \
            or control_character(python):
        bad("python", "must be an absolute path without spaces or control characters, got %r" % (python,),
            "the model servers' venv Python, e.g. /opt/sglang/venv/bin/python")
    environment = settings.get("environment")
    if not isinstance(environment, dict):
        bad("environment", "must be a mapping of variable names to values, got %r" % (environment,),
            "e.g. {UCX_NET_DEVICES: 'mlx5_0:1,tcp'}")
        return found
    # Names and one-line values as every other environment the collection takes; a value must also be one word of text.
    found.extend(env_problems(host, prefix + "environment", environment))
    for name in sorted(name for name, value in environment.items() if not is_scalar(value) and isinstance(name, str)):
        bad("environment.%s" % name, "must be a string or a number, got %r" % (environment[name],),
            "one value, e.g. 'mlx5_0:1,tcp'")
    return found


class _OutputCapture:
    """The process's file descriptors 1 and 2 into a file from here on: UCX prints from C (to stdout by default, where
    neither sys.stdout nor sys.stderr sees it), also from its progress thread after the transfers and at teardown, and
    a module's stdout must stay its JSON. On leaving, ``text`` holds what UCX printed so far, descriptors 1 and 2 go to
    /dev/null, and sys.stdout and sys.stderr write to the original ones."""

    def __enter__(self):
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        self.file = tempfile.TemporaryFile(mode="w+b")
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        sys.stdout = os.fdopen(self.saved[0], "w", buffering=1)
        sys.stderr = os.fdopen(self.saved[1], "w", buffering=1)
        self.file.seek(0)
        self.text = self.file.read().decode("utf-8", "replace")
        self.file.close()
        return False


def _nixl():
    """torch and NIXL's agent classes, imported where the probe runs (the server venv; the controller has neither)."""
    os.environ.setdefault("UCX_PROTO_INFO", "y")
    import torch  # noqa: E402
    from nixl._api import nixl_agent, nixl_agent_config  # noqa: E402
    return torch, nixl_agent, nixl_agent_config


def _agent(name: str):
    torch, nixl_agent, nixl_agent_config = _nixl()
    return nixl_agent(name, nixl_agent_config(backends=["UCX"]))


def pattern(torch: Any, count: int, seed: int, where: str) -> Any:
    """``count`` bytes that differ from every other seed's at most places (what each side expects to receive)."""
    return ((torch.arange(count, dtype=torch.int64, device=where) * (2 * seed + 1) + seed) % 251).to(torch.uint8)


def _transfer(agent, operation: str, local, remote, peer: str, rounds: int, timeout: float, notify: bytes = b"") -> List[float]:
    """``operation`` (WRITE or READ) between ``local`` and ``peer``'s ``remote`` descriptors ``rounds`` times; the
    seconds of each round (post to done). The last round carries ``notify`` to the peer."""
    seconds = []
    for round_ in range(rounds):
        handle = agent.initialize_xfer(operation, local, remote, peer, notify if round_ == rounds - 1 else b"")
        start = time.perf_counter()
        state = agent.transfer(handle)
        while state == "PROC" and time.perf_counter() < start + timeout:
            state = agent.check_xfer_state(handle)
        seconds.append(time.perf_counter() - start)
        agent.release_xfer_handle(handle)
        if state != "DONE":
            raise RuntimeError("%s between %s and %s ended %s after %.1f s" % (operation, agent.name, peer, state, seconds[-1]))
    return seconds


def _direction(source: str, destination: str, operation: str, count: int, seconds: List[float],
               intact: Optional[bool]) -> Dict[str, Any]:
    return {"from": source, "to": destination, "operation": operation, "intact": intact,
            "seconds": [round(value, 6) for value in seconds],
            "gbps": round(count / statistics.median(seconds) / 1e9, 3)}


def _where(memory: str, device: int) -> str:
    return "cuda:%d" % device if memory == "VRAM" else "cpu"


def probe_in_process(memory: str = "DRAM", size_mib: int = 64, rounds: int = 4, device: int = 0,
                     timeout: float = 60.0) -> Dict[str, Any]:
    """Two NIXL agents (UCX backend) in this process, a ``size_mib`` buffer each in ``memory`` (DRAM, or VRAM on GPU
    ``device``): each writes its buffer into the other's ``rounds`` times. Bandwidth is the median round's."""
    torch = _nixl()[0]
    where, count = _where(memory, device), size_mib << 20
    with _OutputCapture() as captured:
        agents = [_agent("pdserve-fabric-%s" % side) for side in "ab"]
        sources = [pattern(torch, count, seed, where) for seed in (1, 2)]
        targets = [torch.zeros_like(source) for source in sources]
        # Every buffer registered before the agents swap metadata: a remote buffer must be in the metadata loaded.
        for agent, source, target in zip(agents, sources, targets):
            agent.register_memory(source)
            agent.register_memory(target)
        agents[0].add_remote_agent(agents[1].get_agent_metadata())
        agents[1].add_remote_agent(agents[0].get_agent_metadata())
        directions = []
        for sender, receiver in ((0, 1), (1, 0)):
            local = agents[sender].get_xfer_descs(sources[sender])
            remote = agents[receiver].get_xfer_descs(targets[receiver])
            seconds = _transfer(agents[sender], "WRITE", local, remote, agents[receiver].name, rounds, timeout)
            directions.append(_direction(agents[sender].name, agents[receiver].name, "WRITE", count, seconds,
                                         bool((targets[receiver] == sources[sender]).all())))
        del agents  # UCX's teardown prints too: inside the capture
    return dict(path_figures(captured.text, memory), memory=memory, device=where, bytes=count, rounds=rounds,
                directions=directions, ucx_output=captured.text)


def path_figures(ucx_output: str, memory: str) -> Dict[str, Any]:
    """What UCX's lines say about the path ``memory`` took: its operations, their transports, any emulation."""
    path = transfer_path(proto_info(ucx_output), memory)
    return {"operations": path, "transports": transports(path), "emulated": any(op["emulated"] for op in path)}


# Two hosts. The target (a decode host) registers one buffer to be written per initiator and one to be read, writes
# its agent's metadata and their descriptors into a handoff file (the controller carries it to the initiators), and
# waits for each initiator's last WRITE, whose notification names its slot. Each initiator (a prefill host, the KV's
# direction) WRITEs its pattern into its slot and READs the target's buffer back: the buffer moves both ways, both
# started from the initiator, so the target needs no initiator's metadata. The target checks what was written; the
# initiator what it read. The target keeps its agent (and its memory) until each initiator says it finished, after its
# READ: a target that left at the WRITE's notification broke the READ back (NIXL_ERR_REMOTE_DISCONNECT, GPU memory of
# two processes on the H200).
_DONE = b"pdserve-fabric-done:"
# pdserve-fabric-finished:<slot>:<1 when its WRITE completed, so its done notification comes or came, else 0>
_FINISHED = b"pdserve-fabric-finished:"


def target_handoff(agent: Any, torch: Any, slots: int, count: int, where: str) -> Dict[str, Any]:
    """Register the target's buffers; the handoff an initiator needs (metadata and descriptors, base64) and the
    buffers themselves (``_buffers``, kept by the caller)."""
    receive = [torch.zeros(count, dtype=torch.uint8, device=where) for _slot in range(slots)]
    send = pattern(torch, count, 0, where)
    for buffer in receive + [send]:
        agent.register_memory(buffer)

    def encode(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    return {"agent": agent.name, "metadata": encode(agent.get_agent_metadata()), "bytes": count,
            "receive": [encode(agent.get_serialized_descs(agent.get_xfer_descs(buffer))) for buffer in receive],
            "send": encode(agent.get_serialized_descs(agent.get_xfer_descs(send))), "_buffers": (receive, send)}


def serve_target(name: str, handoff_path: str, slots: int, memory: str = "DRAM", size_mib: int = 64, device: int = 0,
                 timeout: float = 120.0) -> Dict[str, Any]:
    """Be the target of ``slots`` initiators: write the handoff file (mode 0600), check what each wrote (its slot's
    pattern, seed slot + 1) at its WRITE's done notification, and keep the buffers until each says it finished."""
    torch = _nixl()[0]
    where, count = _where(memory, device), size_mib << 20
    received: Dict[int, Dict[str, Any]] = {}
    finished: Dict[int, bool] = {}  # slot -> whether its WRITE completed
    with _OutputCapture() as captured:
        agent = _agent(name)
        handoff = target_handoff(agent, torch, slots, count, where)
        receive, _send = handoff.pop("_buffers")
        _write_private(handoff_path, json.dumps(handoff))
        deadline = time.monotonic() + timeout
        while not _all_finished(slots, finished, received) and time.monotonic() < deadline:
            for sender, messages in agent.get_new_notifs().items():
                for message in messages:
                    slot, wrote = _finished_slot(message)
                    if slot is not None and 0 <= slot < slots:
                        finished[slot] = wrote
                    if message.startswith(_DONE) and message[len(_DONE):].isdigit():
                        slot = int(message[len(_DONE):])
                        if 0 <= slot < slots and slot not in received:
                            intact = bool((receive[slot] == pattern(torch, count, slot + 1, where)).all())
                            received[slot] = {"from": sender.decode() if isinstance(sender, bytes) else sender,
                                              "slot": slot, "intact": intact}
            time.sleep(0.01)
        del agent
    missing = sorted(set(range(slots)) - set(received))
    return dict(path_figures(captured.text, memory), memory=memory, device=where, bytes=count, agent=name,
                received=[received[slot] for slot in sorted(received)], missing_slots=missing,
                ucx_output=captured.text)


def _finished_slot(message: bytes):
    """(slot, whether its WRITE completed) of an initiator's finished notification, else (None, False)."""
    fields = message[len(_FINISHED):].split(b":") if message.startswith(_FINISHED) else []
    if len(fields) != 2 or not fields[0].isdigit() or fields[1] not in (b"0", b"1"):
        return None, False
    return int(fields[0]), fields[1] == b"1"


def _all_finished(slots: int, finished: Dict[int, bool], received: Dict[int, Any]) -> bool:
    """Every initiator finished, and the done notification of each whose WRITE completed has come."""
    return len(finished) == slots and all(slot in received for slot, wrote in finished.items() if wrote)


def run_initiator(name: str, handoff: Dict[str, Any], slot: int, memory: str = "DRAM", device: int = 0,
                  rounds: int = 4, timeout: float = 60.0) -> Dict[str, Any]:
    """WRITE this initiator's pattern into its slot of the target ``handoff`` describes, READ the target's buffer
    back, and tell the target it finished. The WRITE's intactness is the target's to say."""
    torch = _nixl()[0]
    where, count = _where(memory, device), int(handoff["bytes"])
    with _OutputCapture() as captured:
        agent = _agent(name)
        source = pattern(torch, count, slot + 1, where)
        back = torch.zeros(count, dtype=torch.uint8, device=where)
        agent.register_memory(source)
        agent.register_memory(back)
        peer = agent.add_remote_agent(base64.b64decode(handoff["metadata"]))
        peer = peer.decode() if isinstance(peer, bytes) else peer
        remote_receive = agent.deserialize_descs(base64.b64decode(handoff["receive"][slot]))
        remote_send = agent.deserialize_descs(base64.b64decode(handoff["send"]))
        written: List[float] = []
        try:
            written = _transfer(agent, "WRITE", agent.get_xfer_descs(source), remote_receive, peer, rounds, timeout,
                                notify=_DONE + str(slot).encode())
            read = _transfer(agent, "READ", agent.get_xfer_descs(back), remote_send, peer, rounds, timeout)
        finally:
            # After the READ (or a failure): only now may the target let its memory go.
            try:
                agent.send_notif(peer, _FINISHED + ("%d:%d" % (slot, 1 if written else 0)).encode())
            except Exception:  # noqa: BLE001  a transfer's own error is the one to report; the target then times out
                pass
        intact = bool((back == pattern(torch, count, 0, where)).all())
        del agent
    return dict(path_figures(captured.text, memory), memory=memory, device=where, bytes=count, agent=name,
                target=peer, slot=slot,
                directions=[_direction(name, peer, "WRITE", count, written, None),
                            _direction(peer, name, "READ", count, read, intact)],
                ucx_output=captured.text)


def _write_private(path: str, text: str) -> None:
    """``text`` into ``path`` readable by its owner alone, whole or not at all (the controller polls for it)."""
    partial = path + ".partial"
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, path)
