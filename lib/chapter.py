"""One way to start a chapter: style, seeding, threads, precision and the claims ledger in one call.

Every chapter's first code cell is::

    from lib import chapter
    rng = chapter.setup("eos-1d", "One-dimensional functions and the two-step map", "chen2023eos")
    STEPS = config.pick(quick=600, full=3000)   # ... and every other size of the chapter, in the same cell

Threads: the book's models are small, and on a shared 2-core machine one intra-op thread is both the fastest and
the least sensitive to load (measured: 0.3 ms against 20 ms per small op with 2 threads under load), so
``threads=1`` is the default; a chapter that wants parallelism runs independent processes (``lib.sweep`` with
``n_jobs``) rather than threads. The same holds for the BLAS and OpenMP pools of NumPy, SciPy and scikit-learn:
with two kernels side by side on two cores, OpenBLAS's second thread spins against the other kernel (measured: a
scikit-learn logistic regression on 32 points, 28 ms a fit with OpenBLAS's default of one thread a core, 2.6 ms with
one thread), so ``setup`` limits them to ``threads`` as well.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import claims, config, plots

#: what this kernel has measured about itself for the build's report (see :func:`note_widget_frames`)
_resources: dict = {"widgets": [], "registered": False}


def setup(
    slug: str,
    title: str,
    work: str,
    *,
    threads: int = 1,
    float64: bool = False,
    seed: int = 0,
) -> np.random.Generator:
    """Prepare a chapter and return its NumPy generator.

    Applies the book's plot style (and the inline backend in a kernel), seeds Python, NumPy and torch with
    ``seed``, sets torch's intra-op threads and the BLAS/OpenMP thread pools (``threadpoolctl``) to ``threads``,
    makes float64 torch's default dtype when
    ``float64`` (float32 otherwise, so a kernel reused by another chapter starts clean), and starts the
    chapter's claims with ``work`` as their default work.

    Args:
        slug: short id of the chapter, e.g. ``"eos-1d"`` (no spaces or slashes).
        title: the chapter's title, as in its heading.
        work: bibtex key of the work the chapter reproduces (one of :data:`lib.claims.WORKS`).
        threads: torch intra-op threads and BLAS/OpenMP threads, >= 1.
        float64: use float64 as torch's default dtype.
        seed: non-negative integer seed.
    """
    config.mode()  # a bad BOOK_MODE stops the chapter here, before any cell runs in the wrong mode
    config.check_in("work", work, claims.WORKS)
    config.check_int("threads", threads, minimum=1)
    if not isinstance(float64, bool):
        raise ValueError(f"float64 must be a bool, got {float64!r}")
    plots.use_style()
    config.set_threads(threads)
    _limit_native_threads(threads)
    config.set_float64(float64)
    rng = config.seed_everything(seed)
    claims.chapter(slug, title, work=work)
    if resources_dir() is not None and not _resources["registered"]:
        atexit.register(write_resources)
        _resources["registered"] = True
    return rng


def _limit_native_threads(n: int) -> None:
    """Limit NumPy's and SciPy's BLAS and the OpenMP pools loaded so far to ``n`` threads, and, through the
    environment, the pools of libraries loaded later and of child processes."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(int(n))
    import scipy.linalg  # noqa: F401  (loads SciPy's own OpenBLAS, so that the limit reaches it too)
    from threadpoolctl import threadpool_limits

    _resources["thread_limits"] = threadpool_limits(limits=int(n))  # kept: the limit holds for the kernel's life


def processes(n: int) -> int:
    """The processes a chapter's own sweeps may use: ``n`` when the chapter runs alone, at most the slots the
    book's build gives it when the build runs chapters side by side (``ELD_PROCESSES``, which the build sets for
    each chapter from ``book/execution_estimates.json``), so that the build never runs more processes than cores.
    The number changes only the wall time: a sweep's results do not depend on it."""
    config.check_int("n", n, minimum=1)
    value = os.environ.get("ELD_PROCESSES", "").strip()
    if not value:
        return int(n)
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"ELD_PROCESSES must be a positive integer, got {value!r}")
    return min(int(n), int(value))


def resources_dir() -> Path | None:
    """Directory of the per-chapter resource records (``ELD_RESOURCES_DIR``, set by the book's build), or None."""
    value = os.environ.get("ELD_RESOURCES_DIR")
    return Path(value) if value else None


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (``getrusage``; kilobytes on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def note_widget_frames(seconds) -> None:
    """Record the wall-clock seconds of one widget's frames (its callback: compute and render) for the build's
    report, and write the chapter's resource record at once."""
    values = np.asarray(seconds, dtype=float).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError(f"seconds must be a non-empty array of finite times >= 0, got {seconds!r}")
    _resources["widgets"].append(
        {"frames": int(values.size), "median_s": float(np.median(values)), "max_s": float(values.max())}
    )
    write_resources()


def write_resources() -> None:
    """Write this chapter's resource record (peak memory so far, widget callback times) to
    ``$ELD_RESOURCES_DIR/<document>.json``, atomically; nothing happens outside a book build."""
    directory = resources_dir()
    docname = os.environ.get("ELD_DOCNAME")
    if directory is None or not docname:
        return
    directory.mkdir(parents=True, exist_ok=True)
    payload = {"peak_rss_mb": round(peak_rss_mb(), 1), "widgets": _resources["widgets"]}
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(payload, fh, indent=1)
    os.replace(tmp, directory / (docname.replace("/", "__") + ".json"))
