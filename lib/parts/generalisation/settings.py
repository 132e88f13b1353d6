"""Part VI settings: what the thesis states (``PAPER_*``; ``None`` where it is silent) and the CPU stand-ins.

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``. One section per
chapter of the thesis.
"""

from __future__ import annotations

# ---- Chapter 7: chain-of-thought with a one-layer attention-only transformer ----

#: Section 7.5 of the thesis: data, model and test defaults (None where the thesis is silent).
PAPER_COT = {
    "d_X": 30, "M": 20, "M_prime": 10, "K": 3, "alpha": 0.4, "noise": 0.2,
    "tau": 0.5, "rho": 0.8, "alpha_prime": 0.8,
    "l_tr": None, "lr": None, "batch": None, "steps": None, "init_std": None, "seeds": None,
    "fig75_tau_o": 0.4, "fig75_rho_o": 0.1,
    "fig77": {"layers": 3, "heads": 2, "K": 2},
}

#: Example 1 (Fig 7.1): the two step matrices, the correct step maps (0-based) and the thesis's numbers.
EXAMPLE_1 = {
    "A": [[[0.6, 0.4], [0.4, 0.6]], [[0.4, 0.6], [0.8, 0.2]]],
    "steps": [[0, 1], [1, 0]],
    "B": [[0.56, 0.44], [0.64, 0.36]],
    "tau": 0.36, "tau_o": 0.56, "condition": False,
}

#: The book's defaults where the thesis is silent (online SGD on fresh permutation tasks).
COT_TRAINING = {"l_tr": 20, "batch": 128, "lr": 1.0, "init_std": 0.01}
