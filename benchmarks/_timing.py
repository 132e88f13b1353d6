"""Timing helper shared by the benchmark scripts."""

from __future__ import annotations

import statistics
import time


def timed(fn, repeats: int, *, warmup: bool = False):
    """Median wall time of ``repeats`` calls of ``fn`` and the last result; ``warmup`` calls it once first
    (the first ``torch.func`` calls carry a one-off cost)."""
    if warmup:
        fn()
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out
