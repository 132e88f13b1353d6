"""Theorem 3's prompt-length law for the CoT model of thesis chapter 7: how long must the training prompts be?

Theorem 3 asks for ``l_tr >~ 1/alpha`` context examples per training prompt (eq. 7.14), and the remark after
(7.16) reads it as "the required number of context examples is proportional to ``1/alpha``". The check trains the
model of :mod:`~lib.parts.generalisation.chain_of_thought` at several training prompt lengths and measures the
loss of (7.16) on fresh prompts of the training distribution (:func:`expected_cot_loss`);
:func:`prompt_length_search` bisects an increasing grid of lengths for the shortest one whose loss reaches a level
and places the threshold by interpolating the log-loss linearly in ``l_tr`` between the probed lengths around the
crossing (a perfectly trained model fails only on prompts without an example sharing the query's pattern, a
fraction ``(1 - alpha)^l_tr``, so the log-loss is close to linear in ``l_tr`` near the threshold).
"""

from __future__ import annotations

import numpy as np
import torch

from lib import curves
from lib.config import check_array, check_int, check_positive, check_range, check_seed
from lib.parts.generalisation.chain_of_thought import AttentionOnlyCoT, _check_weight, _loss, cot_training_batch

__all__ = ["expected_cot_loss", "prompt_length_search"]


def expected_cot_loss(W, *, n_examples: int, alpha: float, n_prompts: int = 4096, d: int = 30, n_patterns: int = 20,
                      n_steps: int = 3, seed: int = 0) -> float:
    """The loss of eq. (7.16) of weight ``W``: the squared loss (7.3) averaged over ``n_prompts`` fresh training
    prompts (7.1) with ``n_examples`` examples, a fraction ``alpha`` of them sharing the query's pattern, each with
    a fresh task, query pattern and step (:func:`~lib.parts.generalisation.chain_of_thought.cot_training_batch`).

    Args:
        W: ``(2 d + K, 2 d + K)`` trained weight.
        n_examples: ``l_tr``.
        alpha: fraction of examples sharing the query's TRR pattern.
        n_prompts: prompts averaged over.
        d, n_patterns, n_steps: ``d_X``, ``M``, ``K``, as in training.
        seed: seed of the prompts (use one the training did not use).
    """
    check_array("W", W)
    for name, value in (("n_examples", n_examples), ("n_prompts", n_prompts), ("d", d), ("n_patterns", n_patterns),
                        ("n_steps", n_steps)):
        check_int(name, value, minimum=1)
    check_range("alpha", alpha, 0.0, 1.0, lo_open=True)
    check_seed("seed", seed)
    _check_weight(W, d, n_steps)
    batch = cot_training_batch(n_prompts, n_examples=n_examples, alpha=alpha, n_patterns=n_patterns, d=d,
                               n_steps=n_steps, generator=torch.Generator().manual_seed(seed))
    model = AttentionOnlyCoT(d, n_steps)
    with torch.no_grad():
        model.W.copy_(torch.as_tensor(np.asarray(W), dtype=torch.float32))
        return float(_loss(model, batch))


def prompt_length_search(lengths, loss_of, level: float) -> dict:
    """Bisect an increasing grid of prompt lengths for the shortest whose loss is at most ``level``.

    The loss is assumed to fall as the length grows; ``loss_of(l)`` trains and evaluates at length ``l`` and
    returns one loss or several (e.g. after several training budgets): the search decides on the last, and every
    probe is kept. About ``log2(len(lengths))`` lengths are probed.

    Args:
        lengths: increasing positive integers.
        loss_of: callable ``l -> loss`` (a number or a 1-D sequence of the same length at every call).
        level: the loss level (> 0).

    Returns:
        dict with ``probed`` (the probed lengths, increasing), ``loss`` ``(n_probed, n_losses)``, ``first`` (the
        shortest probed length whose last loss is at most ``level``, or None), ``bracketed`` (whether the length of
        the grid just below ``first`` was probed and failed, so the threshold lies between two probed lengths)
        and ``threshold`` ``(n_losses,)``: for each loss, the length at which its log-loss, interpolated linearly
        in ``l`` between the probed lengths, first reaches ``log(level)``; NaN where the first probed length is
        already at or below the level or no probed length reaches it (only a bound is known).
    """
    ls = check_array("lengths", lengths, ndim=1, positive=True)
    if not np.all(ls == np.round(ls)) or np.any(np.diff(ls) <= 0):
        raise ValueError(f"lengths must be increasing integers, got {ls.tolist()}")
    if not callable(loss_of):
        raise ValueError(f"loss_of must be callable, got {type(loss_of).__name__}")
    check_positive("level", level)
    ls = [int(v) for v in ls]
    seen: dict[int, np.ndarray] = {}

    def probe(i):
        out = np.atleast_1d(np.asarray(loss_of(ls[i]), dtype=float))
        if out.ndim != 1 or out.size == 0 or not np.all(np.isfinite(out) & (out >= 0)):
            raise ValueError(f"loss_of must return finite losses >= 0 (one or a 1-D sequence), got {out!r}")
        if seen and out.size != next(iter(seen.values())).size:
            raise ValueError(f"loss_of must return the same number of losses at every length, got {out.size}")
        seen[ls[i]] = out
        return out[-1] <= level

    lo, hi = -1, len(ls)  # invariant: ls[lo] failed (or lo = -1), ls[hi] succeeded (or hi = len)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if probe(mid):
            hi = mid
        else:
            lo = mid
    probed = sorted(seen)
    loss = np.stack([seen[v] for v in probed])
    with np.errstate(divide="ignore"):
        logs = np.log(loss)
    threshold = np.full(loss.shape[1], np.nan)
    for b in range(loss.shape[1]):
        if loss[0, b] > level and np.any(loss[:, b] <= level):
            threshold[b] = float(curves.hitting_time(np.asarray(probed, float), logs[:, b], float(np.log(level))))
    first = ls[hi] if hi < len(ls) else None
    return {"probed": np.asarray(probed), "loss": loss, "first": first, "bracketed": bool(0 <= lo and hi < len(ls)),
            "threshold": threshold}
