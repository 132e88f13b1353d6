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


def interleaved(fns, repeats: int):
    """CPU seconds (``time.process_time``; median over ``repeats``, after one warm-up each) and the last output of
    every function; the functions run round-robin so that a change of machine load hits all of them alike."""
    outs = [fn() for fn in fns]
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t = time.process_time()
            outs[i] = fn()
            times[i].append(time.process_time() - t)
    return [statistics.median(t) for t in times], outs
