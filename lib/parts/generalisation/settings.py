"""Part VI settings: what the thesis states (``PAPER_*``; ``None`` where it is silent) and the CPU stand-ins.

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``. One section per
chapter of the thesis.
"""

from __future__ import annotations

# ---------------------------------------------------------------- chapter 3 (thesis ch. 4): group imbalance

#: Sec. 4.5.1 of the thesis: the common synthetic setting (W* entries N(0, 1); local random start of radius 0.1).
PAPER_GMM = {
    "L": 2,
    "d": 5,
    "K": 3,
    "init_radius": 0.1,
    "W_star": "N(0, 1) entries",
    "inits_M": 20,
    "draws": 20,
    "success_spread": 1e-3,
    "step_size": None,
    "steps": None,
    "test_size": None,
}
#: Fig C.1 of the thesis: the tensor initialisation's setting (Σ not stated).
PAPER_GMM_TENSOR_INIT = {
    "n": 200_000,
    "d": 50,
    "K": 2,
    "lambdas": (0.5, 0.5),
    "mu1": -0.3,
    "mu2": 0.0,
    "W_star": "U[-0.1, 0.1] entries",
    "covariance": None,
    "relative_error": 0.65,
}
#: The book's defaults for chapter 3: the thesis's d and K, and the step-size constant c of the authors' code
#: (eta0 = c / sum_l lambda_l (|mu_l|_inf + |Sigma_l|^1/2)^2), with c = 4 (c = 40 made the spread grow).
GMM_DEFAULTS = {"d": 5, "K": 3, "c_step": 4.0}
