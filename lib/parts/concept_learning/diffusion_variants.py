"""The Fig. 6 verdicts of the diffusion chapter as one function, and re-runs under training details of Park et
al.'s released code (the authors' configuration files, which the paper's App. G follows).

:func:`fig6_verdicts` applies the chapter's decision rules (order reversal, bend, speed decay, final error, MSE
bump) to one result of :func:`~lib.parts.concept_learning.diffusion.concept_diffusion_experiment`;
:func:`decay_laws` decides, per colour signal, whether the slowing down is exponential or a power law (fitted
exponents with intervals), :func:`decay_law_status` combines the signals; :func:`verdicts_survive` compares the
verdicts of a variant with the chapter's; :func:`variant_runs` trains the chapter's configuration once per variant of
:data:`~lib.parts.concept_learning.settings.AUTHORS_CODE_VARIANTS` (cached, two processes).
"""

from __future__ import annotations

import numpy as np

from lib.claims import exponent_status
from lib.claims import status as _status
from lib.config import check_array, check_int, check_positive
from lib.curves import geometric_midpoints, path_bend, speed
from lib.parts.concept_learning.diffusion import (
    concept_diffusion_experiment,
    concept_mse,
    learned_step,
    merge_diffusion_runs,
    mse_rebound_bootstrap,
)
from lib.stats import bootstrap_paired_mean, power_law_exponent


def fig6_verdicts(run: dict, *, level: float, bend: float, bend_se: float, decay: float, bump: float,
                  bump_se: float, first_step: int = 0) -> dict:
    """The chapter's Fig. 6 rules on one run (the same computations as the chapter's claims cells).

    ``run``: a (merged) result of ``concept_diffusion_experiment`` with at least two colour signals; ``level``,
    ``bend``, ``bend_se``, ``decay``, ``bump``, ``bump_se``: the chapter's constants ``LEVEL`` ... ``BUMP_SE``.
    ``first_step``: ignore the checkpoints before this step (the authors' code records from step 500 of 20,000,
    i.e. from 2.5 % of training).

    Returns:
        dict with, per rule, the numbers and the status the chapter's rule gives: ``deltas`` (the run's colour
        signals), ``seeds`` (its number of seeds), ``steps`` (the checkpoints used); ``order_strong`` /
        ``order_weak`` (seed-mean (colour, size) learned steps at the strongest and the weakest signal),
        ``order_mean`` (reversal in the seed mean),
        ``order_seeds`` (number of seeds reversed), ``order_status``; ``bend_strong`` / ``bend_weak`` (seeds
        bending at the strongest and the weakest signal), ``bend_offsets_strong`` / ``bend_offsets_weak`` (their
        offsets), ``bend_status``; ``decay_ratio`` (first/last-quarter speed ratio per signal), ``decays`` (where
        it reaches ``decay``), ``decay_status``; ``final_mse`` and ``final_status``; ``bump_weak`` (seeds with an
        MSE bump at the weakest signal) and ``bump_status``; ``laws`` (the law of the decay, exponential or power,
        per signal from the seed paths, :func:`decay_laws`) and ``law_status``.
    """
    for name, value in (("level", level), ("bend", bend), ("bend_se", bend_se), ("decay", decay), ("bump", bump),
                        ("bump_se", bump_se)):
        check_positive(name, value)
    check_int("first_step", first_step, minimum=0)
    _check_run(run)
    deltas = np.asarray(run["deltas"], float)
    if deltas.size < 2:
        raise ValueError(f"run must hold at least two colour signals, got {deltas.tolist()}")
    keep = np.asarray(run["checkpoint"]) >= first_step
    if keep.sum() < 8:
        raise ValueError(f"first_step={first_step} leaves {int(keep.sum())} checkpoints; at least 8 are needed")
    steps = np.asarray(run["checkpoint"], float)[keep]
    concepts = np.asarray(run["concepts"])[:, :, keep]  # (D, R, P, n, 2)
    per_seed = concepts.mean(axis=3)
    C = per_seed.mean(axis=1)
    R = per_seed.shape[1]
    strong, weak = int(np.argmax(deltas)), int(np.argmin(deltas))

    def order(ci):
        return learned_step(ci[:, 0], steps, level), learned_step(ci[:, 1], steps, level)

    ms, mw = order(C[strong]), order(C[weak])
    rev_mean = bool(ms[0] < ms[1] and mw[1] < mw[0])
    rev_seeds = np.array([order(per_seed[strong, r])[0] < order(per_seed[strong, r])[1]
                          and order(per_seed[weak, r])[1] < order(per_seed[weak, r])[0] for r in range(R)])
    out = dict(deltas=deltas, steps=steps, order_strong=ms, order_weak=mw, order_mean=rev_mean,
               order_seeds=int(rev_seeds.sum()), seeds=R,
               order_status=_status(rev_mean and rev_seeds.all(), rev_mean or rev_seeds.any()))

    bent = {}
    offsets = {}
    for i, side in ((strong, 1.0), (weak, -1.0)):
        vals = [bootstrap_paired_mean(concepts[i, r], lambda p, s=side: path_bend(p, (1.0, 1.0), side=s), seed=r)
                for r in range(R)]
        offsets[i] = [float(v[0]) for v in vals]
        bent[i] = np.array([v[0] > max(bend, bend_se * v[1]) for v in vals])
    out.update(bend_strong=int(bent[strong].sum()), bend_weak=int(bent[weak].sum()),
               bend_offsets_strong=offsets[strong], bend_offsets_weak=offsets[weak],
               bend_status=_status(bent[strong].mean() > 0.5 and bent[weak].mean() > 0.5,
                                   bent[strong].mean() > 0.5 or bent[weak].mean() > 0.5))

    sp = speed(C, steps)
    q = max(1, sp.shape[1] // 4)
    ratio = np.median(sp[:, :q], axis=1) / np.maximum(np.median(sp[:, -q:], axis=1), 1e-12)
    decays = ratio >= decay
    out.update(decay_ratio=ratio, decays=tuple(bool(x) for x in decays),
               decay_status=_status(bool(np.all(decays)), bool(np.any(decays))))
    laws = decay_laws(per_seed, steps)[1]
    out.update(laws=laws, law_status=decay_law_status(laws))

    final = concept_mse(C)[:, -1]
    out.update(final_mse=final, final_status=_status(bool(final[strong] < 0.1), False))
    boot = np.array([[mse_rebound_bootstrap(concepts[i, r], seed=r) for r in range(R)] for i in range(len(deltas))])
    has_bump = (boot[..., 0] > bump) & (boot[..., 0] > bump_se * boot[..., 1])  # (D, R)
    out.update(bump_weak=int(has_bump[weak].sum()),
               bump_status=_status(has_bump[weak].mean() > 0.5, bool(has_bump.any())))
    return out


def decay_laws(per_seed_paths, steps) -> tuple[np.ndarray, list[dict]]:
    """Speed decay of concept-space paths ``per_seed_paths`` ``(D, R, P, 2)`` (signals, seeds, checkpoints at
    ``steps``, colour and size read-outs): the first/last-quarter ratio of the seed-mean speed per signal ``(D,)``
    and, per signal, the law of the slowing down.

    The later half of the speed path is split into two segments; a power law ``v ~ k^p`` keeps the same log-log
    slope in both, an exponential ``v ~ exp(-k/tau)`` steepens it in proportion to the step: its prediction for the
    second segment is the slope of the exponential whose first-segment slope is the measured one, on the same
    checkpoints. The second segment's slope (fitted with a t interval over seeds)
    is compared with the exponential's prediction ``p1 * kr`` against the power law's ``p1``
    (:func:`lib.claims.exponent_status`). Each law is a dict with ``state`` (``reproduced`` = exponential),
    ``reason``, ``rule`` and ``text``; with fewer than three speed intervals in a segment or three seeds every law
    is ``inconclusive``.
    """
    per_seed_paths = check_array("per_seed_paths", per_seed_paths, ndim=4)
    steps = check_array("steps", steps, ndim=1)
    if per_seed_paths.shape[2] != steps.size or per_seed_paths.shape[3] != 2:
        raise ValueError(f"per_seed_paths must have shape (D, R, {steps.size}, 2) for {steps.size} steps, "
                         f"got {per_seed_paths.shape}")
    mean = per_seed_paths.mean(axis=1)
    mid, sp = geometric_midpoints(steps), speed(mean, steps)
    q = max(1, sp.shape[1] // 4)
    ratio = np.median(sp[:, :q], axis=1) / np.maximum(np.median(sp[:, -q:], axis=1), 1e-12)
    seg1, seg2 = np.array_split(np.arange(sp.shape[1] // 2, sp.shape[1]), 2)
    laws = []
    short = min(len(seg1), len(seg2)) < 3 or per_seed_paths.shape[1] < 3
    for paths in per_seed_paths:
        if short:  # a slope with an interval needs three speeds per segment and three seeds
            laws.append(dict(state="inconclusive", rule="later slope against the exponential's and the power law's",
                             reason=f"{len(seg1)} and {len(seg2)} speed intervals in the two segments and "
                                    f"{per_seed_paths.shape[1]} seeds: at least 3 of each are needed",
                             text="too few checkpoints or seeds to fit the two slopes"))
            continue
        # one column per seed; a frozen model would move by exactly 0 (same noise)
        v = np.maximum(speed(paths, steps).T, 1e-12)
        p1 = power_law_exponent(mid[seg1], v[seg1], seed=0)
        p2 = power_law_exponent(mid[seg2], v[seg2], seed=1)
        exp_p2 = _exponential_later_slope(steps, seg1, seg2, p1.exponent)
        state, reason, rule = exponent_status(p2, exp_p2, competing=[p1.exponent])
        laws.append(dict(state=state, reason=reason, rule=rule,
                         text=f"slope {p1.exponent:.2f}, then {p2}; exponential predicts {exp_p2:.2f}, "
                              f"a power law {p1.exponent:.2f}"))
    return ratio, laws


def _segment_slope(steps: np.ndarray, seg: np.ndarray, tau: float) -> float:
    """Log-log slope over the speed intervals ``seg`` of the path ``exp(-k/tau)`` sampled at ``steps``."""
    v = np.abs(np.diff(np.exp(-steps / tau))) / np.diff(steps)
    return float(np.polyfit(np.log(geometric_midpoints(steps)[seg]), np.log(np.maximum(v[seg], 1e-300)), 1)[0])


def _exponential_later_slope(steps: np.ndarray, seg1: np.ndarray, seg2: np.ndarray, p1: float) -> float:
    """The later segment's slope of the exponential ``exp(-k/tau)`` whose earlier segment has slope ``p1``, on the
    same checkpoints: ``tau`` solved for, then the slope computed, so that the prediction is exact for an
    exponential, not an approximation (the ratio of the segments' geometric mean steps was 1-2 % off, more than a
    nearly noiseless interval's width). Where no ``tau`` gives ``p1`` (a speed that does not fall), that ratio."""
    from scipy.optimize import brentq

    kr = np.exp(np.log(geometric_midpoints(steps)[seg2]).mean() - np.log(geometric_midpoints(steps)[seg1]).mean())
    span = float(steps.max())
    lo, hi = 1e-3 * span, 1e4 * span  # slopes from very steep to nearly flat
    f = lambda log_tau: _segment_slope(steps, seg1, np.exp(log_tau)) - p1  # noqa: E731
    if not (np.isfinite(p1) and p1 < 0 and f(np.log(lo)) < 0 < f(np.log(hi))):
        return float(p1 * kr)
    return _segment_slope(steps, seg2, float(np.exp(brentq(f, np.log(lo), np.log(hi), xtol=1e-10))))


def _check_run(run) -> None:
    """``run`` must be a dict holding the arrays of a ``concept_diffusion_experiment`` result."""
    if not isinstance(run, dict) or any(k not in run for k in ("deltas", "checkpoint", "concepts")):
        raise ValueError("run must be a result of concept_diffusion_experiment (a dict with deltas, checkpoint, "
                         f"concepts), got {type(run).__name__}")


def decay_law_status(laws: list[dict]) -> str:
    """The decay-law verdict over signals (:func:`decay_laws`): reproduced when exponential for every signal,
    partly when for some, not reproduced when a power law for every decided one, inconclusive when none is
    decided."""
    if not isinstance(laws, (list, tuple)) or not laws or not all(isinstance(law, dict) for law in laws):
        raise ValueError("laws must be a non-empty list of the dicts decay_laws returns")
    states = [law["state"] for law in laws]
    if all(s == "inconclusive" for s in states):
        return "inconclusive"
    n_exp = sum(s == "reproduced" for s in states)
    return _status(n_exp == len(states), partly=n_exp > 0)


#: the verdicts :func:`verdicts_survive` compares
SURVIVING_VERDICTS = ("order_status", "bend_status", "decays", "law_status")


def verdicts_survive(v: dict, base: dict) -> dict:
    """``{verdict: same as in base}`` for the verdicts of :data:`SURVIVING_VERDICTS` of two
    :func:`fig6_verdicts` results (a variant ``v`` and the chapter's training ``base``)."""
    for name, value in (("v", v), ("base", base)):
        if not isinstance(value, dict) or any(k not in value for k in SURVIVING_VERDICTS):
            raise ValueError(f"{name} must be a result of fig6_verdicts")
    return {k: v[k] == base[k] for k in SURVIVING_VERDICTS}


def verdict_line(v: dict) -> str:
    """One line summarising :func:`fig6_verdicts`' result ``v`` (order, bend, decay, final error, bump)."""
    need = ("deltas", "order_strong", "order_weak", "order_seeds", "seeds", "bend_strong", "bend_weak", "decay_ratio",
            "final_mse", "bump_weak")
    if not isinstance(v, dict) or any(k not in v for k in need):
        raise ValueError(f"v must be a result of fig6_verdicts, got {type(v).__name__}")
    d = v["deltas"]
    s, w = int(np.argmax(d)), int(np.argmin(d))
    return (f"order: δ = {d[s]:g} colour/size at {v['order_strong'][0]:g}/{v['order_strong'][1]:g}, "
            f"δ = {d[w]:g} at {v['order_weak'][0]:g}/{v['order_weak'][1]:g}, reversal in "
            f"{v['order_seeds']}/{v['seeds']} seeds ({v['order_status']}); bend in {v['bend_strong']}/{v['seeds']} "
            f"seeds at δ = {d[s]:g} and {v['bend_weak']}/{v['seeds']} at δ = {d[w]:g} ({v['bend_status']}); "
            f"first/last-quarter speed ratio " + "/".join(f"{r:.0f}" for r in v["decay_ratio"])
            + f" ({v['decay_status']}"
            + (f"; decay law {v['law_status']}" if "law_status" in v else "") + "); final MSE "
            + "/".join(f"{m:.3f}" for m in v["final_mse"]) + f" ({v['final_status']}); MSE bump in "
            f"{v['bump_weak']}/{v['seeds']} weak-signal seeds ({v['bump_status']})")


def variant_runs(cfg: dict, variants: dict, *, n_jobs: int = 2, name: str = "sim3_concept_diffusion") -> dict:
    """Train ``cfg`` (keyword arguments of ``concept_diffusion_experiment``) once per variant.

    ``variants``: ``{label: extra keyword arguments}`` (e.g. ``settings.AUTHORS_CODE_VARIANTS``; ``{}`` is the
    chapter's own training). The colour signals are split over ``n_jobs`` processes (``lib.sweep``, cached under
    ``name``: with the chapter's name and configuration the unmodified run is the chapter's cached one). Returns
    ``{label: merged run}``.
    """
    from lib.sweep import sweep

    check_int("n_jobs", n_jobs, minimum=1)
    if not isinstance(variants, dict) or not variants:
        raise ValueError("variants must be a non-empty dict {label: options}")
    out = {}
    for label, opts in variants.items():
        if not isinstance(opts, dict):
            raise ValueError(f"variants[{label!r}] must be a dict of options, got {opts!r}")
        halves = [tuple(float(d) for d in h) for h in np.array_split(np.asarray(cfg["deltas"], float), n_jobs)
                  if len(h)]
        parts = sweep(concept_diffusion_experiment, [dict(cfg, deltas=h, **opts) for h in halves], name=name,
                      n_jobs=n_jobs)
        out[label] = merge_diffusion_runs(parts)
    return out
