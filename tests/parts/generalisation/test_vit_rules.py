"""Fig 2.2's and Fig 2.1(b)'s rules (lib.parts.generalisation.vit_rules): a rule that passes for the predicted
exponent fails for twice it, and runs that cannot resolve the law are inconclusive."""

import numpy as np

from lib.parts.generalisation import vit_rules

ALPHAS = np.array([0.35, 0.4, 0.45, 0.5, 0.55, 0.6])


def _iters(exponent, seeds=8, scale=30.0):
    noise = np.random.default_rng(0).normal(1.0, 0.03, size=(ALPHAS.size, seeds))
    return np.round(scale * ALPHAS[:, None] ** exponent * noise)


def test_iteration_exponent_passes_minus_one_and_fails_minus_two():
    law = vit_rules.iteration_exponent(ALPHAS, _iters(-1.0), 1)
    assert law["status"] == "reproduced" and all(law["preconditions"].values()), law["measured"]
    assert law["fit"].lo <= -1.0 <= law["fit"].hi
    assert vit_rules.iteration_exponent(ALPHAS, _iters(-2.0, scale=10.0), 1)["status"] == "not reproduced"


def test_iteration_exponent_is_inconclusive_when_the_record_is_too_coarse_or_a_run_never_gets_there():
    coarse = vit_rules.iteration_exponent(ALPHAS, _iters(-1.0), 10)  # about 86 steps < 10 records of 10
    assert coarse["status"] == "inconclusive" and coarse["fit"] is None
    never = _iters(-1.0)
    never[0, 0] = np.nan
    assert vit_rules.iteration_exponent(ALPHAS, never, 1)["status"] == "inconclusive"
    assert vit_rules.iteration_exponent(ALPHAS, _iters(-1.0, seeds=2), 1)["status"] == "inconclusive"


def test_sigma_drop_exponent_reads_eq_2_11():
    sigmas = np.array([0.0, 0.2, 0.4, 0.6, 0.8])
    Ns = np.geomspace(50, 5000, 80)  # a fine grid: the boundary is read between neighbouring N
    nstar = 100 * (0.5 - 0.4 * sigmas) ** -2  # 1/sqrt(N*) affine in sigma: the drop grows like sigma^1
    seeds = np.random.default_rng(1).normal(1.0, 0.05, size=8)
    success = Ns[None, :, None] >= nstar[:, None, None] * seeds[None, None, :]
    law = vit_rules.sigma_drop_exponent(sigmas, success, Ns)
    assert all(law["preconditions"].values()) and law["status"] in ("reproduced", "inconclusive")
    assert law["fit"].lo <= 1.0 <= law["fit"].hi
    flat = np.broadcast_to(Ns[None, :, None] >= 400, success.shape)  # N* does not move with sigma
    assert vit_rules.sigma_drop_exponent(sigmas, flat, Ns)["status"] == "inconclusive"
