# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Where each model server instance keeps its compiled kernels: one directory per SGLang version and venv, per instance.

SGLang 0.5.23 puts its caches under the service user's home unless told otherwise (``SGLANG_CACHE_DIR`` ->
Triton, Inductor, CUDA, TileLang, FlashInfer, DeepGEMM; ``SGLANG_JIT_CACHE_DIR`` separately, as it does not follow
``SGLANG_CACHE_DIR``), so every instance of a host compiles into one directory, and two that compile different
DeepGEMM kernels at once crash (sglang#27604). Here each instance gets its own tree, keyed by what invalidates it:
the SGLang version and the venv (DeepGEMM's keys may embed the venv's absolute paths, vllm-project/vllm#48190). The GPU
architecture is in each cache's own keys (DeepGEMM's, Triton's, the JIT cache's ``<target>`` directory), so a GPU
swap leaves entries unused, never wrong ones; and a tree keyed by it would move every running instance to a cold tree
on the next deploy. What a swap does invalidate is the precompile's record of a complete cache: that record names the
instance's GPUs (precompile.py).
"""

import hashlib
import posixpath
import re
from typing import Any, Dict, List, Optional

# Set by the collection for each instance; an inventory env that sets one is refused (rules.py).
CACHE_VARIABLES = ("SGLANG_CACHE_DIR", "SGLANG_JIT_CACHE_DIR", "SGLANG_DG_CACHE_DIR")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]+")


def venv_digest(venv: str) -> str:
    """The part of a cache key that names a venv path (what removing that venv removes)."""
    return hashlib.sha256(posixpath.normpath(str(venv)).encode("utf-8")).hexdigest()[:10]


def cache_key(version: Any, venv: str) -> str:
    """``sglang-<version>-<venv digest>``: a new version or another venv gets a new, cold tree. The version is the
    fingerprint's label (``0.5.23``, ``git v0.5.23`` -> ``git_v0.5.23``, empty: SGLang managed elsewhere)."""
    label = _UNSAFE.sub("_", str(version)).strip("_") or "external"
    return "sglang-%s-%s" % (label, venv_digest(venv))


def root_problem(root: Any) -> Optional[str]:
    """Why ``root`` cannot hold the caches (it becomes a unit's ReadWritePaths= and is created, owned by the service
    user), or None."""
    text = str(root) if isinstance(root, str) else None
    if not text or not text.startswith("/") or re.search(r"[\s\"'\\%$;]", text) or any(ord(c) < 32 for c in text):
        return "must be an absolute path without spaces, quotes, %% or $, got %r" % (root,)
    if posixpath.normpath(text) != text or text.startswith("//"):
        return "must be a normalized path (no '..', '.', '//' or trailing '/'), got %r" % (root,)
    if text.count("/") < 2:
        return "must be a directory of its own below a top-level directory, not %r" % (root,)
    return None


def instance_caches(root: str, version: Any, venv: str, instance: str) -> Dict[str, Any]:
    """The environment and the directories (parents first, each for the service user to own) of one instance."""
    key_dir = posixpath.join(root, cache_key(version, venv))
    base = posixpath.join(key_dir, instance)
    return {
        "env": {"SGLANG_CACHE_DIR": base, "SGLANG_JIT_CACHE_DIR": base + "/jit",
                "SGLANG_DG_CACHE_DIR": base + "/deep_gemm"},
        "directories": [root, key_dir, base],
    }


def caches_of_venvs(root: str, names: List[str], venvs: List[str]) -> List[str]:
    """Of the entries ``names`` of the cache root, the ones that belong to one of ``venvs`` (removed with them)."""
    suffixes = tuple("-" + venv_digest(v) for v in venvs)
    return sorted(posixpath.join(root, n) for n in names if n.startswith("sglang-") and n.endswith(suffixes))
