"""One way to start a chapter: style, seeding, threads, precision and the claims ledger in one call.

Every chapter's first code cell is::

    from lib import chapter
    rng = chapter.setup("eos-1d", "One-dimensional functions and the two-step map", "chen2023eos")
    STEPS = config.pick(quick=600, full=3000)   # ... and every other size of the chapter, in the same cell

Threads: the book's models are small, and on a shared 2-core machine one intra-op thread is both the fastest and
the least sensitive to load (measured: 0.3 ms against 20 ms per small op with 2 threads under load), so
``threads=1`` is the default; a chapter that wants parallelism runs independent processes (``lib.sweep`` with
``n_jobs``) rather than threads.
"""

from __future__ import annotations

import numpy as np

from . import claims, config, plots


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
    ``seed``, sets torch's intra-op threads to ``threads``, makes float64 torch's default dtype when
    ``float64`` (float32 otherwise, so a kernel reused by another chapter starts clean), and starts the
    chapter's claims with ``work`` as their default work.

    Args:
        slug: short id of the chapter, e.g. ``"eos-1d"`` (no spaces or slashes).
        title: the chapter's title, as in its heading.
        work: bibtex key of the work the chapter reproduces (one of :data:`lib.claims.WORKS`).
        threads: torch intra-op threads, >= 1.
        float64: use float64 as torch's default dtype.
        seed: non-negative integer seed.
    """
    config.check_in("work", work, claims.WORKS)
    config.check_int("threads", threads, minimum=1)
    if not isinstance(float64, bool):
        raise ValueError(f"float64 must be a bool, got {float64!r}")
    plots.use_style()
    config.set_threads(threads)
    config.set_float64(float64)
    rng = config.seed_everything(seed)
    claims.chapter(slug, title, work=work)
    return rng
