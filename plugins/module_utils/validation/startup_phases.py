# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

"""Where a model server's last start spent its time, from the lines SGLang 0.5.23 logs (its unit's journal).

SGLang logs ``Load weight begin.`` / ``Load weight end. elapsed=..`` (the DeepGEMM pre-compile, ``Try DeepGEMM JIT
Compiling for ..`` lines, runs inside the weight load), ``Memory pool end.``, ``Capture .. CUDA graph begin/end.``,
then ``Engine startup timings (s): load_weight=.., kv_cache_allocation=.., scheduler_e2e=.., cuda_graph={..},
tokenizer_e2e=..`` when the engine is up (the HTTP port opens then), and ``The server is fired up and ready to
roll!`` after its warmup request. It does not say whether a compile cache was warm: the time between the first
``Try DeepGEMM JIT Compiling`` line and ``Load weight end`` is what compiling (or finding) the kernels took.
Journal lines are read as ``journalctl -o short-monotonic`` writes them, from the unit's last start.
"""

import math
import re
from typing import Any, Dict, List, Optional, Tuple

_MONOTONIC = re.compile(r'^\[\s*(\d+(?:\.\d+)?)\]')
_TIMINGS = re.compile(r'Engine startup timings \(s\): load_weight=([\d.]+), kv_cache_allocation=([\d.]+), '
                      r'scheduler_e2e=([\d.]+), cuda_graph=\{([^}]*)\}, tokenizer_e2e=([\d.]+)')
READY = 'The server is fired up and ready to roll!'
# (what a line says, the phase the server is in after it), in start order.
_MARKERS = (
    ('Load weight begin.', 'loading weights'),
    ('Try DeepGEMM JIT Compiling', 'compiling DeepGEMM kernels'),
    ('Load weight end.', 'allocating the KV cache'),
    ('Memory pool end.', 'capturing CUDA graphs'),
    ('CUDA graph begin.', 'capturing CUDA graphs'),
    ('Engine startup timings (s):', 'warming up, port open, /health 503'),
    (READY, 'ready'),
)
BEFORE = 'starting: imports, distributed init, the port closed'
# The SGLang emulator's own line after the weights (tests/emulator): how many kernels this start compiled. SGLang 0.5.23
# logs nothing like it (the same ``Try DeepGEMM JIT Compiling`` lines whether the cache was warm or not): without the
# line the count is unknown (None) and only ``kernel_compile``'s seconds tell.
_COMPILED = re.compile(r'compile caches (?:cold|warm): compiled (\d+) of \d+ DeepGEMM kernel groups and (\d+) JIT module')


def lines_since_start(start_usec: Any, lines: List[str]):
    """``[(seconds since the unit's start, text)]`` of the lines logged since then; None without a start time."""
    try:
        start = int(start_usec) / 1e6
    except (TypeError, ValueError):
        return None
    if start <= 0:
        return None
    out = []
    for line in lines or []:
        match = _MONOTONIC.match(line)
        if match and float(match.group(1)) >= start:
            out.append((float(match.group(1)) - start, line[match.end():]))
    return out


def startup_report(start_usec: Any, lines: List[str]) -> Optional[Dict[str, Any]]:
    """What the last start did: ``phase`` (where it is now), ``ready_s`` (None until ready), ``phases`` (seconds per
    phase SGLang measured, plus ``warmup`` and ``kernel_compile`` from the journal's stamps); None without a start."""
    seen = lines_since_start(start_usec, lines)
    if seen is None:
        return None
    phase = BEFORE
    stamps: Dict[str, Tuple[float, str]] = {}
    for offset, text in seen:
        for marker, after in _MARKERS:
            if marker in text:
                phase = after
                stamps.setdefault(marker, (offset, text))
    report: Dict[str, Any] = {'phase': phase, 'ready_s': None, 'phases': {}, 'kernels_compiled': None}
    for _offset, text in seen:
        match = _COMPILED.search(text)
        if match:
            report['kernels_compiled'] = int(match.group(1)) + int(match.group(2))
    if 'Engine startup timings (s):' in stamps:
        offset, text = stamps['Engine startup timings (s):']
        match = _TIMINGS.search(text)
        if match:
            graphs = [float(v) for v in re.findall(r'=([\d.]+)', match.group(4))]
            report['phases'].update({'load_weight': float(match.group(1)), 'kv_cache_allocation': float(match.group(2)),
                                     'cuda_graph': round(sum(graphs), 3), 'engine': float(match.group(5))})
        if READY in stamps:
            report['phases']['warmup'] = round(stamps[READY][0] - offset, 3)
    if 'Try DeepGEMM JIT Compiling' in stamps and 'Load weight end.' in stamps:
        report['phases']['kernel_compile'] = round(stamps['Load weight end.'][0] - stamps['Try DeepGEMM JIT Compiling'][0], 3)
    if READY in stamps:
        report['ready_s'] = round(stamps[READY][0], 3)
    return report


def describe(name: str, report: Optional[Dict[str, Any]]) -> str:
    """One line: ``prefill-0 ready in 12.3 s: load weights 8.1 s (of which DeepGEMM kernels 2.0 s), KV cache 0.1 s,
    CUDA graphs 1.5 s, warmup 2.0 s``, or where a start that is not ready yet is."""
    return '%s%s' % (name, summary(report) if report else ': no start-up lines in its journal')


def phase_parts(report: Dict[str, Any]) -> List[str]:
    """``['load weights 8.1 s (of which DeepGEMM kernels 2.0 s)', 'KV cache 0.1 s', ...]``: the phases measured so far."""
    phases = report['phases']
    parts = []
    if 'load_weight' in phases:
        compile_s = phases.get('kernel_compile')
        compiled = report.get('kernels_compiled')
        detail = []
        if compile_s is not None:
            detail.append('DeepGEMM kernels %.1f s' % compile_s)
        if compiled is not None:
            detail.append('%d kernel(s) compiled' % compiled)
        parts.append('load weights %.1f s%s' % (phases['load_weight'],
                                                ' (of which %s)' % ', '.join(detail) if detail else ''))
        parts.append('KV cache %.1f s' % phases['kv_cache_allocation'])
        parts.append('CUDA graphs %.1f s' % phases['cuda_graph'])
    if 'warmup' in phases:
        parts.append('warmup %.1f s' % phases['warmup'])
    return parts


def summary(report: Dict[str, Any]) -> str:
    """``describe`` without the name: `` ready in 12.3 s: ...`` or `` not ready: <phase> ...``."""
    parts = phase_parts(report)
    if report['ready_s'] is not None:
        return ' ready in %.1f s%s' % (report['ready_s'], (': ' + ', '.join(parts)) if parts else '')
    return ' not ready: %s%s' % (report['phase'], (' (so far: ' + ', '.join(parts) + ')') if parts else '')


def limit_warnings(name: str, report: Optional[Dict[str, Any]], limit_s: float, margin: float,
                   variables: List[str]) -> List[str]:
    """A warning when the server's last measured start (``ready_s``) times ``margin`` is more than the time it is
    given (``limit_s``): the next cold start may not make it. It names ``variables``, the settings to raise together.
    Only a measurement warns, never the rendering, so a rerun changes nothing because of it."""
    if not report or report.get('ready_s') is None or margin <= 0:
        return []
    needed = round(report['ready_s'] * margin, 3)
    if needed <= limit_s:
        return []
    named = ' and '.join(variables) if variables else 'the wait\'s timeout'
    return ['%s: its last start took %.1f s (its journal), and %s %s it %.0f s, less than %g times that: '
            'raise %s to at least %d' % (name, report['ready_s'], named, 'give' if len(variables) > 1 else 'gives',
                                         limit_s, margin, named, math.ceil(needed))]
