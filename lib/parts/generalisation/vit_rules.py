"""The decision rules of chapter 1's (thesis ch. 2) laws that are not success-map boundaries: the iteration count
of Fig 2.2 (Eq. 2.10) and the drop of ``1/sqrt(N*)`` with the initial value error of Fig 2.1(b) (Eq. 2.11).

Both fit an exponent with a bootstrap interval over the seeds (:func:`lib.stats.power_law_exponent`) and decide it
with :func:`lib.claims.exponent_status`, after preconditions that say when the runs cannot resolve the law. The
chapter and its named paper-scale run (:mod:`lib.parts.generalisation.paper_runs`) decide with the same function.
"""

from __future__ import annotations

import numpy as np

from lib import claims
from lib.config import check_array, check_finite, check_int
from lib.parts.generalisation.scaling import seed_boundaries
from lib.stats import power_law_exponent

#: A record must resolve the step count: at the smallest ``alpha_*`` the mean count spans at least this many
#: recording intervals (a ``1/alpha_*`` law over the chapter's range changes the count by less than a factor 2).
MIN_RECORDS = 10


def iteration_exponent(alphas, iters, record_every: int, predicted: float = -1.0, *, competing=None,
                       n_boot: int = 1000) -> dict:
    """Decide Fig 2.2's ``T ~ alpha_*^predicted`` (Eq. 2.10: -1) from the first steps at which runs reach the
    success level.

    Preconditions: every seed reaches the level within its run at every ``alpha_*``; the mean step count at the
    smallest ``alpha_*`` spans at least :data:`MIN_RECORDS` recording intervals; at least 3 seeds.

    Args:
        alphas: the fractions ``alpha_*`` (increasing or not; the smallest is found).
        iters: ``(len(alphas), seeds)`` first recorded step at or below the level (NaN if never;
            :func:`~lib.parts.generalisation.shallow_vits.first_step_below`).
        record_every: steps between the recorded test losses.
        predicted: the exponent of the law; competing: the competing exponents (default 0 and ``2 predicted``).
        n_boot: bootstrap resamples.

    Returns:
        dict with ``status``, ``reason``, ``tolerance`` (the rule), ``preconditions``, ``fit`` (or None),
        ``mean_steps`` (per ``alpha_*``, over the seeds that get there) and ``measured`` (a sentence).
    """
    a = check_array("alphas", alphas, ndim=1, positive=True)
    it = check_array("iters", iters, ndim=2, finite=False)  # NaN: the run never reached the level
    if np.isinf(it).any() or (it < 0).any():
        raise ValueError("iters must hold step counts >= 0 or NaN (never reached)")
    if it.shape[0] != a.size:
        raise ValueError(f"iters must have {a.size} rows (one per alpha), got shape {it.shape}")
    check_int("record_every", record_every, minimum=1)
    check_finite("predicted", predicted)
    check_int("n_boot", n_boot, minimum=1)
    mean = np.array([np.mean(r[np.isfinite(r)]) if np.isfinite(r).any() else np.nan for r in it])
    k = int(np.argmin(a))
    pre = {
        "every seed reaches the level within the run at every α*": bool(np.isfinite(it).all()),
        f"the mean step count at α* = {a[k]:g} ({mean[k]:.0f}) is at least {MIN_RECORDS} recording intervals "
        f"({MIN_RECORDS * record_every} steps), so the record can resolve the law":
            bool(mean[k] >= MIN_RECORDS * record_every),
        f"≥ 3 seeds (here {it.shape[1]})": bool(it.shape[1] >= 3),
    }
    fit = None
    if all(pre.values()):
        fit = power_law_exponent(a, it, n_boot=n_boot, seed=0)
        state, reason, rule = claims.exponent_status(fit, predicted, competing=competing)
    else:
        state, reason = claims.INCONCLUSIVE, ""
        rule = claims.exponent_rule(predicted, competing=competing)
    measured = (f"mean steps of the seeds that get there = {np.round(mean, 0).tolist()}; seeds reaching the "
                f"level: {np.isfinite(it).sum(1).tolist()} of {it.shape[1]}"
                + (f"; fitted exponent {fit}" if fit is not None else ""))
    return {"status": state, "reason": reason, "tolerance": rule, "preconditions": pre, "fit": fit,
            "mean_steps": mean, "measured": measured}


def sigma_drop_exponent(sigmas, success, Ns, predicted: float = 1.0, *, competing=None, min_points: int = 3,
                        n_boot: int = 1000) -> dict:
    """Decide Fig 2.1(b)'s Eq. 2.11 at fixed ``alpha_*``: ``1/sqrt(N*)`` falls linearly in ``sigma``, so the
    drop of each seed's ``1/sqrt(N*)`` from the first ``sigma`` grows like ``(sigma - sigma_0)^predicted``
    (1; with ``sigma_0 = 0``, as in the chapter, like ``sigma^1``).

    Preconditions: every seed has a finite ``N*`` at the first ``sigma`` and a positive drop at
    ``>= min_points`` later ones.

    Args:
        sigmas: the increasing initial value errors; success: ``(len(sigmas), len(Ns), seeds)`` indicators;
        Ns: the increasing sample sizes; predicted, competing, n_boot: as :func:`iteration_exponent`.

    Returns:
        dict with ``status``, ``reason``, ``tolerance``, ``preconditions``, ``fit``, ``boundaries``
        (``(len(sigmas), seeds)``) and ``drop``.
    """
    s = check_array("sigmas", sigmas, ndim=1)
    if (s < 0).any() or (np.diff(s) <= 0).any():
        raise ValueError(f"sigmas must be increasing and >= 0, got {s.tolist()}")
    check_finite("predicted", predicted)
    check_int("min_points", min_points, minimum=2)
    check_int("n_boot", n_boot, minimum=1)
    b = seed_boundaries(success, Ns)
    if b.shape[0] != s.size:
        raise ValueError(f"success must have {s.size} settings on its first axis, got {b.shape[0]}")
    drop = 1 / np.sqrt(b[:1]) - 1 / np.sqrt(b[1:])
    use = np.all(np.isfinite(drop) & (drop > 0), axis=1)
    pre = {
        f"every seed has a finite N* at σ = {s[0]:g} and a lower 1/√N* at ≥ {min_points} larger σ "
        f"(here {int(use.sum())} of {s.size - 1})": bool(use.sum() >= min_points),
        f"≥ 3 seeds (here {b.shape[1]})": bool(b.shape[1] >= 3),
    }
    fit = None
    if all(pre.values()):
        fit = power_law_exponent(s[1:][use] - s[0], drop[use], n_boot=n_boot, seed=0)
        state, reason, rule = claims.exponent_status(fit, predicted, competing=competing)
    else:
        state, reason = claims.INCONCLUSIVE, ""
        rule = claims.exponent_rule(predicted, competing=competing)
    return {"status": state, "reason": reason, "tolerance": rule, "preconditions": pre, "fit": fit,
            "boundaries": b, "drop": drop}


__all__ = ["MIN_RECORDS", "iteration_exponent", "sigma_drop_exponent"]
