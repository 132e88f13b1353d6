"""Part VI settings: what the thesis states (``PAPER_*``; ``None`` where it is silent) and the CPU stand-ins.

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``. One section per
chapter of the thesis.
"""

from __future__ import annotations

# ---- Chapter 1 (thesis ch. 2): shallow vision transformers ----

PAPER_VIT = {
    "M": 5,  # orthonormal patterns
    "d": 10,  # token dimension
    "L": 100,  # |S^n| after sparsification in Fig 2.1(a) (50 in Fig 2.1(b))
    "c0": 0.01,  # token noise (degenerate: N = 2 suffices, spec pilot)
    "m": 1000,  # neurons of W_O (Sec. 2.5)
    "W_O_std": 0.01,
    "eta": None,  # SGD step: not stated
    "batch": None,
    "sigma": 0.1,  # Fig 2.1(a)
    "delta": 0.2,  # Fig 2.1(a)
    "S": 100,  # |S| in Fig 2.1(a)
    "trials": 20,
    "success_hinge": 1e-3,
}

VIT = {
    "M": 5, "d": 10, "L": 30, "c0": 0.3, "m": 100, "eta": 0.5, "batch": 16, "steps": 300,
    "sigma": 0.1, "delta": 0.2, "kappa": 1.0, "n_test": 500, "success_hinge": 1e-3,
}
