"""Chapter 2 of Part V: the mechanism behind noisy recall, in closed forms and exact population maps.

Three small pieces of the thesis's theory (ch. 4 and app. C of ``chen2025thesis``):

* the noise-logit recursion of Sec 4.4.4.3 (a scalar map, iterated exactly);
* the linear associative memory with noise (C.33) of Fig 4.5, trained by full-batch gradient descent on the
  *population* cross-entropy (an exact population map, written by hand and batched over seeds with a leading
  axis, so :func:`lib.train.train_stacked` is not used);
* the two-variable gradient flow (C.38) behind Thm 4.3, integrated with ``scipy.integrate.solve_ivp``.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from lib.config import check_int, check_positive, check_range

__all__ = [
    "noise_logit_fixed_point",
    "noise_logit_recursion",
    "associative_memory_run",
    "c38_flow",
    "c38_probabilities",
]


def noise_logit_fixed_point(alpha: float, n_tokens: int) -> float:
    """Stationary noise logit ``log N + log(α/(1-α))`` of the recursion of Sec 4.4.4.3.

    Args:
        alpha: noise probability, in (0, 1).
        n_tokens: vocabulary size N of the clean tokens, >= 1.

    Returns:
        The fixed point ξ*.
    """
    check_range("alpha", alpha, 0.0, 1.0, lo_open=True, hi_open=True)
    check_int("n_tokens", n_tokens, minimum=1)
    return float(np.log(n_tokens) + np.log(alpha / (1.0 - alpha)))


def noise_logit_recursion(alpha: float, n_tokens: int, eta, steps: int) -> np.ndarray:
    """Iterate ``ξ_t = ξ_{t-1} + η (α - e^ξ/(N + e^ξ))`` from ξ_0 = 0 (explicit update).

    Args:
        alpha: noise probability, in (0, 1).
        n_tokens: number N of clean tokens, >= 1.
        eta: step size(s) > 0; a scalar or a 1-d array (one trajectory per value, batched).
        steps: number of iterations, >= 1.

    Returns:
        Array of shape ``(steps + 1,)`` (scalar ``eta``) or ``(len(eta), steps + 1)`` with ξ_0..ξ_steps.
    """
    check_range("alpha", alpha, 0.0, 1.0, lo_open=True, hi_open=True)
    check_int("n_tokens", n_tokens, minimum=1)
    check_int("steps", steps, minimum=1)
    etas = np.atleast_1d(np.asarray(eta, dtype=float))
    if etas.ndim != 1 or np.any(~np.isfinite(etas)) or np.any(etas <= 0):
        raise ValueError("eta must be a positive scalar or a 1-d array of positive values")
    xi = np.zeros((etas.size, steps + 1))
    for t in range(1, steps + 1):
        prev = xi[:, t - 1]
        p = 1.0 / (1.0 + n_tokens * np.exp(-prev))
        xi[:, t] = prev + etas * (alpha - p)
    return xi[0] if np.ndim(eta) == 0 else xi


def _sphere(rng: np.random.Generator, shape) -> np.ndarray:
    v = rng.standard_normal(shape)
    return v / np.linalg.norm(v, axis=-2, keepdims=True)


def _pure_loss(logits: np.ndarray) -> np.ndarray:
    """Pure-label cross-entropy: input i labelled i; logits (..., n+1, n) -> (...)."""
    n = logits.shape[-1]
    m = logits.max(axis=-2, keepdims=True)
    lse = (m + np.log(np.exp(logits - m).sum(axis=-2, keepdims=True)))[..., 0, :]
    idx = np.arange(n)
    return (lse - logits[..., idx, idx]).mean(axis=-1)


def _truncate(w: np.ndarray, rank: int) -> np.ndarray:
    u, s, vt = np.linalg.svd(w)
    s = s.copy()
    s[..., rank:] = 0.0
    return (u * s[..., None, :]) @ vt


def associative_memory_run(
    n: int = 3,
    alpha: float = 0.03,
    d: int = 8,
    *,
    seeds: int = 20,
    steps: int = 5000,
    lr: float = 1.0,
    ranks=(1, 2, 3, 4),
    every: int = 50,
    seed: int = 0,
) -> dict:
    """Train the associative memory (C.33) by population gradient descent, batched over seeds.

    ``f(i, j; W) = u_jᵀ W e_i`` with inputs e_1..e_n and outputs u_1..u_{n+1} uniform on the sphere of R^d,
    ``W_ij ~ N(0, 1/d)``; ``x ~ Unif[n]``, ``y = x`` w.p. 1-α and ``y = n+1`` (noise) w.p. α. Each step is
    one exact full-batch step on the population cross-entropy (hand-written gradient, Lemma C.12). Every
    ``every`` steps the pure-label loss (α = 0) of each rank-k SVD truncation of W and of W itself is stored.

    Args:
        n: number of inputs, >= 2.
        alpha: noise probability, in [0, 1).
        d: embedding dimension, >= n + 1.
        seeds: number of independent runs (leading batch axis), >= 1.
        steps: gradient steps, >= 1.
        lr: learning rate > 0.
        ranks: truncation ranks, each in 1..d.
        every: evaluation interval, >= 1.
        seed: base seed of the embeddings and initialisations.

    Returns:
        dict with ``steps`` (evaluated steps), ``loss`` (array ``(len(ranks) + 1, seeds, n_eval)``; the last row
        is the full model), ``ranks``, ``diverged`` (bool per seed) and ``diverged_step`` (-1 if not).
    """
    check_int("n", n, minimum=2)
    check_range("alpha", alpha, 0.0, 1.0, hi_open=True)
    check_int("d", d, minimum=n + 1)
    check_int("seeds", seeds, minimum=1)
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    check_int("every", every, minimum=1)
    ranks = tuple(int(r) for r in ranks)
    for r in ranks:
        check_int("ranks", r, minimum=1, maximum=d)
    rng = np.random.default_rng(seed)
    e = _sphere(rng, (seeds, d, n))
    u = _sphere(rng, (seeds, d, n + 1))
    w = rng.standard_normal((seeds, d, d)) / np.sqrt(d)
    target = np.zeros((n + 1, n))
    target[np.arange(n), np.arange(n)] = 1.0 - alpha
    target[n, :] += alpha
    ut = np.swapaxes(u, 1, 2)
    eval_steps, losses = [], []
    diverged = np.zeros(seeds, dtype=bool)
    div_step = np.full(seeds, -1)

    def evaluate(t):
        rows = [_pure_loss(ut @ _truncate(w, r) @ e) for r in ranks]
        rows.append(_pure_loss(ut @ w @ e))
        eval_steps.append(t)
        losses.append(np.stack(rows))

    evaluate(0)
    for t in range(1, steps + 1):
        logits = ut @ w @ e
        logits = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad = u @ (p - target) @ np.swapaxes(e, 1, 2) / n
        w = w - lr * grad
        bad = ~np.isfinite(w).all(axis=(1, 2)) & ~diverged
        div_step[bad] = t
        diverged |= bad
        w[diverged] = 0.0
        if t % every == 0 or t == steps:
            evaluate(t)
    loss = np.stack(losses, axis=-1)
    loss[:, diverged, :] = np.nan
    return {
        "steps": np.array(eval_steps),
        "loss": loss,
        "ranks": ranks,
        "diverged": diverged,
        "diverged_step": div_step,
    }


def c38_flow(alpha: float, t_max: float = 1e6, n_points: int = 200) -> dict:
    """Integrate the gradient flow (C.38) of Thm 4.3 from a = b = 0.

    ``ȧ = (2 - 2e^a)/(e^a + e^b + 1) - 2 + 2α`` and ``ḃ = (2 - 8e^b)/(e^a + e^b + 1) - 2 + 10α``, where
    ``a = -2β₁``, ``b = -β₁ - 3β₂`` (N = 2, orthonormal embeddings, W(0) = 0). Solved with ``solve_ivp``
    (LSODA, rtol 1e-10) on a log-spaced grid of times.

    Args:
        alpha: noise probability, in (0, 0.5).
        t_max: final time > 1.
        n_points: number of log-spaced output times in [1e-2, t_max], >= 2.

    Returns:
        dict with ``t``, ``a``, ``b``.
    """
    check_range("alpha", alpha, 0.0, 0.5, lo_open=True, hi_open=True)
    check_range("t_max", t_max, 1.0, None, lo_open=True)
    check_int("n_points", n_points, minimum=2)

    def rhs(_, y):
        ea, eb = np.exp(y[0]), np.exp(y[1])
        z = ea + eb + 1.0
        return [(2 - 2 * ea) / z - 2 + 2 * alpha, (2 - 8 * eb) / z - 2 + 10 * alpha]

    t = np.concatenate([[0.0], np.logspace(-2, np.log10(t_max), n_points)])
    sol = solve_ivp(rhs, (0.0, t_max), [0.0, 0.0], t_eval=t, method="LSODA", rtol=1e-10, atol=1e-12)
    return {"t": sol.t[1:], "a": sol.y[0, 1:], "b": sol.y[1, 1:]}


def c38_probabilities(a, b) -> dict:
    """Noise probabilities of the full and rank-one models from the flow variables (a, b) of (C.38).

    The full model has margins (-a, -b) of the correct token over the other clean token and over the noise;
    its rank-one truncation has margins (2β₁, β₁) = (-a, -a/2).

    Args:
        a: first flow variable (array or scalar).
        b: second flow variable (same shape).

    Returns:
        dict with ``full`` and ``rank1`` noise probabilities, and ``full_correct``.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("a and b must have the same shape")
    zf = 1.0 + np.exp(a) + np.exp(b)
    z1 = 1.0 + np.exp(a) + np.exp(a / 2)
    return {"full": np.exp(b) / zf, "full_correct": 1.0 / zf, "rank1": np.exp(a / 2) / z1}
