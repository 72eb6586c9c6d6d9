# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a NIXL transfer really uses: move a buffer both ways between two NIXL agents and ask UCX which transports it chose.

SGLang's PD KV transfer (``--disaggregation-transfer-backend nixl``) works or not, fast or not, through the UCX that
NIXL bundles, and nothing says which path it took: UCX falls back to TCP without RDMA and stages GPU memory through
host memory ("software emulation") without a warning (``../shared/research/kv-fabric.md``). ``UCX_PROTO_INFO=y`` makes
UCX print, at the first transfer of each kind, the protocol and transports it selected; this module reads those lines.

``probe_in_process`` runs both agents in one process (two buffers on one host or one GPU): it proves that NIXL and UCX
register and move that memory, and what they move it through, not the fabric between two hosts. ``judge`` turns a
probe's figures and the operator's expectations into problems.
"""

import os
import re
import statistics
import tempfile
import time
from typing import Any, Dict, List, Optional

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
MEMORY_KINDS = {"DRAM": "host", "VRAM": "cuda"}


def _kind(memory: str) -> str:
    """host, cuda (or rocm, ...) from UCX's name of a memory ("host memory", "cuda/GPU0", "cuda/dev[0]")."""
    memory = memory.strip()
    return "host" if memory.startswith("host") else memory.split("/", 1)[0]
EMULATION = "software emulation"
DATA_OPERATIONS = ("ucp_put", "ucp_get")


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
            ends = _ENDS.search(parts[1])
            scope = parts[0].split()[1] if len(parts[0].split()) > 1 else ""
            current = found.setdefault(key, {"context": parts[0], "scope": scope, "operation": parts[1], "rows": [],
                                             "source": _kind(ends.group(1)) if ends else None,
                                             "destination": _kind(ends.group(2)) if ends else None,
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
        if not direction["intact"]:
            problems.append("%s: the data did not arrive intact" % name)
        if min_gbps is not None and direction["gbps"] < min_gbps:
            problems.append("%s: %.2f GB/s, below the floor of %.2f GB/s" % (name, direction["gbps"], min_gbps))
    if result.get("memory") == "VRAM" and result.get("emulated"):
        problems.append("GPU memory moved by UCX's software emulation (staged through host memory): %s"
                        % ", ".join(result.get("transports") or ["no transport named"]))
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


class _OutputCapture:
    """The process's file descriptors 1 and 2 into a file while UCX prints (C code, to stdout by default: neither
    sys.stdout nor sys.stderr sees it, and a module's stdout must stay its JSON)."""

    def __enter__(self):
        self.file = tempfile.TemporaryFile(mode="w+b")
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        for fd, saved in zip((1, 2), self.saved):
            os.dup2(saved, fd)
            os.close(saved)
        self.file.seek(0)
        self.text = self.file.read().decode("utf-8", "replace")
        self.file.close()
        return False


def _move(sender, receiver, source, target, rounds: int, timeout: float) -> Dict[str, Any]:
    """WRITE ``source`` (``sender``'s) into ``target`` (``receiver``'s) ``rounds`` times; seconds of each round."""
    local = sender.get_xfer_descs(source)
    remote = sender.deserialize_descs(receiver.get_serialized_descs(receiver.get_xfer_descs(target)))
    seconds = []
    for _ in range(rounds):
        target.zero_()
        handle = sender.initialize_xfer("WRITE", local, remote, receiver.name)
        start = time.perf_counter()
        state = sender.transfer(handle)
        deadline = start + timeout
        while state == "PROC" and time.perf_counter() < deadline:
            state = sender.check_xfer_state(handle)
        seconds.append(time.perf_counter() - start)
        sender.release_xfer_handle(handle)
        if state != "DONE":
            raise RuntimeError("the transfer from %s to %s ended %s after %.1f s" % (sender.name, receiver.name, state, seconds[-1]))
    return {"seconds": seconds, "intact": bool((target == source).all())}


def probe_in_process(memory: str = "DRAM", size_mib: int = 64, rounds: int = 4, device: int = 0,
                     timeout: float = 60.0) -> Dict[str, Any]:
    """Two NIXL agents (UCX backend) in this process, a ``size_mib`` buffer each in ``memory`` (DRAM, or VRAM on GPU
    ``device``): each writes its buffer into the other's ``rounds`` times. Bandwidth is the median round's."""
    os.environ.setdefault("UCX_PROTO_INFO", "y")
    import torch  # noqa: E402  (NIXL's API takes tensors; imported here: the controller has neither)
    from nixl._api import nixl_agent, nixl_agent_config  # noqa: E402

    where = "cuda:%d" % device if memory == "VRAM" else "cpu"
    count = size_mib << 20
    with _OutputCapture() as captured:
        agents = [nixl_agent("pdserve-fabric-%s" % side, nixl_agent_config(backends=["UCX"])) for side in "ab"]
        buffers = [(torch.arange(count, dtype=torch.int64, device=where) % 251).to(torch.uint8),
                   (torch.arange(count, dtype=torch.int64, device=where) % 241).to(torch.uint8)]
        targets = [torch.empty_like(buffer) for buffer in buffers]
        # Every buffer registered before the agents swap metadata: a remote buffer must be in the metadata loaded.
        for agent, buffer, target in zip(agents, buffers, targets):
            agent.register_memory(buffer)
            agent.register_memory(target)
        agents[0].add_remote_agent(agents[1].get_agent_metadata())
        agents[1].add_remote_agent(agents[0].get_agent_metadata())
        directions = []
        for sender, receiver in ((0, 1), (1, 0)):
            moved = _move(agents[sender], agents[receiver], buffers[sender], targets[receiver], rounds, timeout)
            median = statistics.median(moved["seconds"])
            directions.append({"from": agents[sender].name, "to": agents[receiver].name, "intact": moved["intact"],
                               "seconds": [round(s, 6) for s in moved["seconds"]],
                               "gbps": round(count / median / 1e9, 3)})
    return dict(path_figures(captured.text, memory), memory=memory, device=where, bytes=count, rounds=rounds,
                directions=directions, ucx_output=captured.text)


def path_figures(ucx_output: str, memory: str) -> Dict[str, Any]:
    """What UCX's lines say about the path ``memory`` took: its operations, their transports, any emulation."""
    path = transfer_path(proto_info(ucx_output), memory)
    return {"operations": path, "transports": transports(path), "emulated": any(op["emulated"] for op in path)}
