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

from lib.config import check_array, check_int, check_positive, check_range, check_seed

__all__ = [
    "sample_recall_sequences",
    "one_step_gradients",
    "one_step_margins",
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
    etas = np.atleast_1d(check_array("eta", eta, finite=False))
    if etas.ndim != 1 or np.any(~np.isfinite(etas)) or np.any(etas <= 0):
        raise ValueError("eta must be a positive scalar or a 1-d array of positive values")
    xi = np.zeros((etas.size, steps + 1))
    for t in range(1, steps + 1):
        prev = xi[:, t - 1]
        p = 1.0 / (1.0 + n_tokens * np.exp(-prev))
        xi[:, t] = prev + etas * (alpha - p)
    return xi[0] if np.ndim(eta) == 0 else xi


def sample_recall_sequences(
    m: int, n_tokens: int, seq_len: int, alpha: float, rng: np.random.Generator, trigger: int = 0
) -> dict:
    """Noisy-recall sequences of Sec 4.4 with a uniform π, batched over ``m`` sequences.

    ``z_1 ~ Unif[N]``; after the trigger ``q`` the next token is ``ȳ ~ Unif[N]`` (one per sequence) with
    probability 1-α and the noise ``τ = N`` (0-based) with probability α; every other token is drawn from
    ``Unif[N]``. The last token is forced to ``q`` and the label ``y`` is ``ȳ`` or ``τ`` by the same law.

    Args:
        m: number of sequences, >= 1.
        n_tokens: number N of clean tokens, >= 2.
        seq_len: length T, >= 2.
        alpha: noise probability, in [0, 1).
        rng: numpy generator.
        trigger: the trigger token q, in 0..N-1.

    Returns:
        dict with ``z`` (m, T) tokens in 0..N, ``y`` (m,) labels and ``ybar`` (m,).
    """
    check_int("m", m, minimum=1)
    check_int("n_tokens", n_tokens, minimum=2)
    check_int("seq_len", seq_len, minimum=2)
    check_range("alpha", alpha, 0.0, 1.0, hi_open=True)
    check_int("trigger", trigger, minimum=0, maximum=n_tokens - 1)
    ybar = rng.integers(0, n_tokens, m)
    z = np.empty((m, seq_len), dtype=np.int64)
    z[:, 0] = rng.integers(0, n_tokens, m)
    for t in range(1, seq_len):
        after = z[:, t - 1] == trigger
        noisy = rng.random(m) < alpha
        fresh = rng.integers(0, n_tokens, m)
        z[:, t] = np.where(after, np.where(noisy, n_tokens, ybar), fresh)
    z[:, -1] = trigger
    y = np.where(rng.random(m) < alpha, n_tokens, ybar)
    return {"z": z, "y": y, "ybar": ybar}


def _features(z: np.ndarray, n_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs of model (4.2) with one-hot embeddings in R^{2(N+1)}: x_t = e_{z_t} + e_{N+1+z_{t-1}}.

    Returns the last input x_T and the context mean (1/T) Σ_t x_t (z_0 has no previous token).
    """
    m, seq_len = z.shape
    v = n_tokens + 1
    rows = np.arange(m)
    x_last = np.zeros((m, 2 * v))
    x_last[rows, z[:, -1]] = 1.0
    x_last[rows, v + z[:, -2]] = 1.0
    x_mean = np.zeros((m, 2 * v))
    np.add.at(x_mean, (np.repeat(rows, seq_len), z.ravel()), 1.0)
    np.add.at(x_mean, (np.repeat(rows, seq_len - 1), v + z[:, :-1].ravel()), 1.0)
    return x_last, x_mean / seq_len


def one_step_gradients(z: np.ndarray, y: np.ndarray, n_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Gradients of the mean cross-entropy of model (4.2) at zero weights w.r.t. W_F and W_V (Lemma C.12).

    At zero the prediction is uniform over N+1 outputs and attention is uniform over the context, so
    ``∇_{W_F} = (1/m) Σ_i (1/(N+1) - e_{y_i}) x_{T,i}ᵀ`` and the same with the context mean for ``W_V``
    (output embeddings one-hot, ``W_U = I``).

    Args:
        z: tokens, shape (m, T), values in 0..N.
        y: labels, shape (m,), values in 0..N.
        n_tokens: N.

    Returns:
        ``(grad_F, grad_V)``, each of shape (N+1, 2(N+1)).
    """
    z = np.asarray(z)
    y = np.asarray(y)
    if z.ndim != 2 or y.shape != (z.shape[0],):
        raise ValueError("z must have shape (m, T) and y shape (m,)")
    x_last, x_mean = _features(z, n_tokens)
    c = np.full((len(y), n_tokens + 1), 1.0 / (n_tokens + 1))
    c[np.arange(len(y)), y] -= 1.0
    return c.T @ x_last / len(y), c.T @ x_mean / len(y)


def one_step_margins(m: int, n_tokens: int, seq_len: int, alpha: float, *, reps: int = 20, seed: int = 0) -> dict:
    """Thm 4.1 by simulation: noise margins per unit step of W_F and W_V after one step from zero.

    For each repetition, draw ``m`` training sequences, take one gradient step (step 1) on W_F and W_V and
    evaluate ``Δ(ξ) = ξ_τ - max_{j<N} ξ_j`` on a fresh test sequence, separately for the feed-forward and the
    attention logits.

    Args:
        m: training sequences, >= 1.
        n_tokens: N, >= 2.
        seq_len: T, >= 2.
        alpha: noise probability, in [0, 1).
        reps: repetitions, >= 1.
        seed: seed of the generator.

    Returns:
        dict with ``ff`` and ``attn`` margins, arrays of shape (reps,).
    """
    check_int("reps", reps, minimum=1)
    check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    ff, attn = np.empty(reps), np.empty(reps)
    for r in range(reps):
        tr = sample_recall_sequences(m, n_tokens, seq_len, alpha, rng)
        te = sample_recall_sequences(1, n_tokens, seq_len, alpha, rng)
        g_f, g_v = one_step_gradients(tr["z"], tr["y"], n_tokens)
        x_last, x_mean = _features(te["z"], n_tokens)
        xi_f, xi_v = -g_f @ x_last[0], -g_v @ x_mean[0]
        ff[r] = xi_f[n_tokens] - xi_f[:n_tokens].max()
        attn[r] = xi_v[n_tokens] - xi_v[:n_tokens].max()
    return {"ff": ff, "attn": attn}


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
    a = check_array("a", a)
    b = check_array("b", b)
    if a.shape != b.shape:
        raise ValueError("a and b must have the same shape")
    zf = 1.0 + np.exp(a) + np.exp(b)
    z1 = 1.0 + np.exp(a) + np.exp(a / 2)
    return {"full": np.exp(b) / zf, "full_correct": 1.0 / zf, "rank1": np.exp(a / 2) / z1}
