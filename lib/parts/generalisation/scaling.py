"""Scaling laws of the part's success maps, decided by a fitted exponent with a bootstrap interval.

A success map ``(settings, N, seeds)`` gives each seed its own boundary: the smallest ``N`` at which that seed's
run succeeds. :func:`boundary_exponent` fits the exponent of the boundary against the setting with the seeds as the
bootstrap's units (:func:`lib.stats.power_law_exponent`) and decides it with :func:`lib.claims.exponent_status`;
it says, as preconditions, when the map cannot resolve the exponent (too few settings where every seed has a
finite boundary above the grid's first ``N``).
"""

from __future__ import annotations

import numpy as np

from lib import claims
from lib.config import check_array, check_int
from lib.stats import power_law_exponent
from lib.success import fit_boundary


def seed_boundaries(success, Ns) -> np.ndarray:
    """Each seed's boundary ``(n_x, seeds)``: the smallest ``N`` at which the seed succeeds, placed at the
    geometric midpoint between it and the ``N`` before (``Ns[0]`` when the first succeeds, NaN when none does).

    Args:
        success: ``(n_x, n_N, seeds)`` indicators.
        Ns: the increasing sample sizes of the second axis.
    """
    s = check_array("success", success, ndim=3)
    Ns = check_array("Ns", Ns, ndim=1, positive=True)
    if s.shape[1] != Ns.size:
        raise ValueError(f"success must have {Ns.size} sizes on its second axis, got shape {s.shape}")
    return np.stack([fit_boundary(s[:, :, k], Ns) for k in range(s.shape[2])], axis=1)


def boundary_exponent(xs, success, Ns, predicted: float, *, competing=None, what: str = "N*",
                      min_points: int = 3, n_boot: int = 1000) -> dict:
    """Decide ``N* ~ x^predicted`` on a success map by the interval of the fitted exponent.

    The points used are the settings ``x`` at which every seed has a finite boundary above ``Ns[0]`` (a boundary
    at the grid's first ``N`` is only an upper bound).

    Returns:
        dict with ``status`` and ``reason`` (of :func:`lib.claims.exponent_status`), ``tolerance`` (the rule),
        ``preconditions`` (for :func:`lib.claims.record`), ``fit`` (the :class:`lib.stats.Exponent`, or None),
        ``boundaries`` (the boundary per setting and seed) and ``measured`` (a sentence with the boundaries and
        the fitted exponent).
    """
    check_int("n_boot", n_boot, minimum=1)
    check_int("min_points", min_points, minimum=2)
    xs = check_array("xs", xs, ndim=1, positive=True)
    check_int("min_points", min_points, minimum=3)
    b = seed_boundaries(success, Ns)
    if b.shape[0] != xs.size:
        raise ValueError(f"success must have {xs.size} settings on its first axis, got {b.shape[0]}")
    floor = float(np.min(Ns))
    usable = np.all(np.isfinite(b) & (b > floor), axis=1)
    seeds = b.shape[1]
    pre = {
        f"every seed's {what} is finite and above the grid's first N = {floor:g} at ≥ {min_points} settings "
        f"(here {int(usable.sum())} of {xs.size})": bool(usable.sum() >= min_points),
        f"≥ 3 seeds per setting (here {seeds})": bool(seeds >= 3),
    }
    per = ", ".join(f"{x:g}: {np.median(r[np.isfinite(r)]) if np.isfinite(r).any() else np.inf:.0f} "
                    f"({int(np.isfinite(r).sum())}/{seeds} finite)" for x, r in zip(xs, b))
    fit = None
    if all(pre.values()):
        fit = power_law_exponent(xs[usable], b[usable], n_boot=n_boot, seed=0)
        state, reason, rule = claims.exponent_status(fit, predicted, competing=competing)
    else:
        state, reason = claims.INCONCLUSIVE, ""
        rule = claims.exponent_rule(predicted, competing=competing)
    measured = f"median {what} per setting {per}" + (f"; fitted exponent {fit}" if fit is not None else "")
    return {"status": state, "reason": reason, "tolerance": rule, "preconditions": pre, "fit": fit,
            "boundaries": b, "measured": measured}


__all__ = ["seed_boundaries", "boundary_exponent"]
