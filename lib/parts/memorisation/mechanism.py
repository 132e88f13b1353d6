"""Chapter 2 of Part V: the mechanism behind noisy recall, in closed forms and exact population maps.

Three small pieces of the thesis's theory (ch. 4 and app. C of ``chen2025thesis``):

* the noise-logit recursion of Sec 4.4.4.3 (a scalar map, iterated exactly);
* the linear associative memory with noise (C.33) of Fig 4.5, trained by full-batch gradient descent on the
  *population* cross-entropy (an exact population map, written by hand and batched over seeds with a leading
  axis, so :func:`lib.train.train_stacked` is not used);
* the two-variable gradient flow (C.38) behind Thm 4.3, integrated with ``scipy.integrate.solve_ivp``;
* Monte Carlo estimates of the one-step gradients of model (4.2) at zero (Lemma C.2, Table C.1) and of the
  attention gradient of Thm 4.2 (the population expectations as means over many sampled sequences).
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from lib.config import (
    check_array,
    check_in,
    check_instance,
    check_int,
    check_positive,
    check_range,
    check_seed,
    renamed_arguments,
)
from lib.maps import stop_at_divergence

__all__ = [
    "sample_recall_sequences",
    "one_step_gradients",
    "one_step_margins",
    "C1_CASES",
    "table_c1",
    "value_gradient_cases",
    "qk_gradient_scores",
    "noise_logit_fixed_point",
    "noise_logit_recursion",
    "associative_memory_run",
    "C38_FLOWS",
    "c38_flow",
    "memory_gradient_descent",
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


@renamed_arguments(eta="lr")
def noise_logit_recursion(alpha: float, n_tokens: int, lr, steps: int) -> np.ndarray:
    """Iterate ``ξ_t = ξ_{t-1} + η (α - e^ξ/(N + e^ξ))`` from ξ_0 = 0 (explicit update).

    Args:
        alpha: noise probability, in (0, 1).
        n_tokens: number N of clean tokens, >= 1.
        lr: step size(s) > 0; a scalar or a 1-d array (one trajectory per value, batched).
        steps: number of iterations, >= 1.

    Returns:
        Array of shape ``(steps + 1,)`` (scalar ``lr``) or ``(len(lr), steps + 1)`` with ξ_0..ξ_steps.
    """
    check_range("alpha", alpha, 0.0, 1.0, lo_open=True, hi_open=True)
    check_int("n_tokens", n_tokens, minimum=1)
    check_int("steps", steps, minimum=1)
    lrs = np.atleast_1d(check_array("lr", lr, finite=False))
    if lrs.ndim != 1 or np.any(~np.isfinite(lrs)) or np.any(lrs <= 0):
        raise ValueError("lr must be a positive scalar or a 1-d array of positive values")
    xi = np.zeros((lrs.size, steps + 1))
    for t in range(1, steps + 1):
        prev = xi[:, t - 1]
        p = 1.0 / (1.0 + n_tokens * np.exp(-prev))
        xi[:, t] = prev + lrs * (alpha - p)
    return xi[0] if np.ndim(lr) == 0 else xi


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
    check_instance("rng", rng, np.random.Generator)
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
    check_array("z", z)
    check_array("y", y)
    check_int("n_tokens", n_tokens, minimum=1)
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


#: The ten cases ``(j, k)`` of Table C.1: output row ``j`` and input token ``k`` of ``W_U(j)^T grad_{W_V} W_E(k)``;
#: "other" is any clean token other than the trigger ``q``, "same" the same one as ``j``, "other'" a third one.
C1_CASES = (("N+1", "N+1"), ("N+1", "q"), ("N+1", "other"), ("q", "N+1"), ("q", "q"), ("q", "other"),
            ("other", "N+1"), ("other", "q"), ("other", "same"), ("other", "other'"))


def table_c1(n_tokens: int, alpha: float) -> np.ndarray:
    """The means ``mu(j, k)`` of Table C.1 (leading order in ``N``, ``T``), in the order of :data:`C1_CASES`."""
    check_int("n_tokens", n_tokens, minimum=2)
    check_range("alpha", alpha, 0.0, 1.0, lo_open=True, hi_open=True)
    n, a = float(n_tokens), float(alpha)
    return np.array([-a * a / n, -a / n, -a / n, (2 * a - 1) / n**2, (2 * a - 1) / (a * n**2), a / n**2,
                     a * a / n**2, a / n**2, (-a * a + 3 * a - 1) / n**2, a / n**2])


def _case_masks(n_tokens: int, trigger: int) -> list[np.ndarray]:
    """Boolean (N+1, N+1) masks of the (j, k) entries that make up each case of :data:`C1_CASES`."""
    v = n_tokens + 1
    noise = np.zeros(v, bool)
    noise[n_tokens] = True
    q = np.zeros(v, bool)
    q[trigger] = True
    other = ~noise & ~q
    eye = np.eye(v, dtype=bool)
    rows = {"N+1": noise, "q": q, "other": other}
    cols = {"N+1": noise, "q": q, "other": other}
    masks = []
    for j, k in C1_CASES:
        if k == "same":
            masks.append(rows[j][:, None] & eye)
        elif k == "other'":
            masks.append(rows[j][:, None] & other[None, :] & ~eye)
        else:
            masks.append(rows[j][:, None] & cols[k][None, :])
    return masks


def value_gradient_cases(n_tokens: int, seq_len: int, alpha: float, *, m: int = 20000, reps: int = 10,
                         seed: int = 0) -> dict:
    """Lemma C.2 by Monte Carlo: ``W_U(j)^T grad_{W_V} L W_E(k)`` at zero weights for the cases of Table C.1.

    Each repetition draws ``m`` sequences (:func:`sample_recall_sequences`, trigger ``q = 0``) and takes the
    empirical gradient (:func:`one_step_gradients`); the entries of one case (equal by symmetry) are averaged.

    Returns:
        dict with ``mean`` and ``se`` (standard error over the repetitions) of shape (10,), ``table`` (the
        Table C.1 values, :func:`table_c1`), in the order of :data:`C1_CASES`.
    """
    check_int("m", m, minimum=1)
    check_int("reps", reps, minimum=2)
    check_seed("seed", seed)
    table = table_c1(n_tokens, alpha)
    check_int("seq_len", seq_len, minimum=2)
    if n_tokens < 3:
        raise ValueError(f"n_tokens must be >= 3 (Table C.1 needs two clean tokens besides q), got {n_tokens}")
    rng = np.random.default_rng(seed)
    masks = _case_masks(n_tokens, 0)
    est = np.empty((reps, len(C1_CASES)))
    for r in range(reps):
        s = sample_recall_sequences(m, n_tokens, seq_len, alpha, rng)
        g_v = one_step_gradients(s["z"], s["y"], n_tokens)[1][:, : n_tokens + 1]
        est[r] = [g_v[mask].mean() for mask in masks]
    return {"mean": est.mean(0), "se": est.std(0, ddof=1) / np.sqrt(reps), "table": table}


def _qk_key_gradient(z, y, n_tokens, alpha, beta1, beta2) -> np.ndarray:
    """``W_E(q)^T (-grad_{W_QK} L)`` on the ``2(N+1)`` key coordinates (token, then previous token) for the
    sequences ``z`` (m, T) with labels ``y``, in the setting of :func:`qk_gradient_scores`.

    At uniform attention ``d xi_k / d s_t = (v_{k,t} - mean_t v_{k,t}) / T`` and ``d s_t / d W_QK = x_T x_t^T``,
    so the gradient is ``mean_i sum_k (p_k - 1{y_i = k}) (1/T) sum_t (v_{k,t} - v_k-bar) x_T x_t^T``.
    """
    m, seq_len = z.shape
    n, v = n_tokens, n_tokens + 1
    p_hat = np.full(v, (1 - alpha) / n)
    p_hat[n] = alpha
    c = -np.tile(p_hat, (m, 1))
    c[np.arange(m), y] += 1.0
    c[:, n] = 0.0  # W_V has no noise row in the reduced structure: v_{N+1, t} = 0
    rows = np.arange(m)[:, None]
    w = beta1 * c[rows, z]
    w[:, 1:] += beta2 * c[rows, z[:, :-1]]
    d = (w - w.mean(1, keepdims=True)) / seq_len
    g = np.zeros(2 * v)
    np.add.at(g, z.ravel(), d.ravel())
    np.add.at(g, v + z[:, :-1].ravel(), d[:, 1:].ravel())
    return g / m


def qk_gradient_scores(n_tokens: int, seq_len: int, alpha: float, *, beta1: float = 1.0, beta2: float = 0.5,
                       m: int = 20000, reps: int = 10, seed: int = 0) -> dict:
    """Thm 4.2 by Monte Carlo: the attention scores that one step of ``W_QK`` gives each kind of key.

    The setting of the proof (App. C.4, phase 3): attention uniform (``W_QK = 0``), the prediction already
    ``p(N+1) = alpha`` and ``(1 - alpha)/N`` for each clean token (Assumption C.4.1), and ``W_V`` with the
    structure (C.21) reduced to ``W_U(j)^T W_V x_t = beta1 1{z_t = j} + beta2 1{z_{t-1} = j}`` for clean ``j``
    (the proof's own simplification). The negative gradient ``-grad_{W_QK} L``, projected on the query's token
    ``W_E(q)``, gives a score to every key ``x_t = W_E(z_t) + W~_E(z_{t-1})``.

    Returns:
        dict of floats (means over the repetitions, ``*_se`` their standard errors): ``clean_after_q`` (a clean
        token after the trigger, averaged over clean tokens), ``noise_after_q`` (the noise token after it),
        ``gap`` (their difference), ``max_other`` (the largest score of a key not after the trigger), and the
        proof's values ``c29`` = (1-a)^2 beta1 (1 + 1/N)/N, ``c31`` = (1-a)^2 beta1 / N and the bound
        ``c32`` = (1-a)^2 (beta1 + 2 beta2)/N^2.
    """
    check_int("n_tokens", n_tokens, minimum=3)
    check_int("seq_len", seq_len, minimum=2)
    check_range("alpha", alpha, 0.0, 1.0, lo_open=True, hi_open=True)
    check_positive("beta1", beta1)
    check_positive("beta2", beta2, allow_zero=True)
    check_int("m", m, minimum=1)
    check_int("reps", reps, minimum=2)
    check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    n, v, q = n_tokens, n_tokens + 1, 0
    keys = {"clean_after_q": [], "noise_after_q": [], "gap": [], "max_other": []}
    for _ in range(reps):
        s = sample_recall_sequences(m, n, seq_len, alpha, rng)
        g = _qk_key_gradient(s["z"], s["y"], n, alpha, beta1, beta2)
        clean = g[1:n].mean() + g[v + q]
        noise = g[n] + g[v + q]
        score = g[:v, None] + g[None, v:]  # (token, previous token)
        keys["clean_after_q"].append(clean)
        keys["noise_after_q"].append(noise)
        keys["gap"].append(clean - noise)
        keys["max_other"].append(np.delete(score, q, axis=1).max())
    out = {}
    for k, vals in keys.items():
        vals = np.asarray(vals)
        out[k], out[k + "_se"] = float(vals.mean()), float(vals.std(ddof=1) / np.sqrt(reps))
    a2 = (1 - alpha) ** 2
    out.update(c29=a2 * beta1 * (1 + 1 / n) / n, c31=a2 * beta1 / n, c32=a2 * (beta1 + 2 * beta2) / n**2)
    return out


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
    check_array("ranks", ranks)
    check_int("n", n, minimum=2)
    check_range("alpha", alpha, 0.0, 1.0, hi_open=True)
    check_int("d", d, minimum=n + 1)
    check_int("seeds", seeds, minimum=1)
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    check_int("every", every, minimum=1)
    check_seed("seed", seed)
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
        with np.errstate(invalid="ignore", over="ignore"):
            bad = (~np.isfinite(w).all(axis=(1, 2)) | (np.sqrt((w**2).sum(axis=(1, 2))) > 1e8)) & ~diverged
        div_step[bad] = t
        diverged |= bad
        w[diverged] = 0.0
        if t % every == 0 or t == steps:
            evaluate(t)
    loss = np.stack(losses, axis=-1)
    # the book's rule on the full model's loss too (lib.maps.stop_at_divergence: 1e6 x the first value, or a
    # sustained blow-up): a finite but exploding run is flagged at the evaluation where it is detected
    later = stop_at_divergence({"loss": np.where(diverged[:, None], 0.0, loss[-1]).T}, loss_keys=["loss"],
                               batch_ndim=1)
    new = later["diverged"] & ~diverged
    div_step[new] = np.asarray(eval_steps)[later["diverged_step"][new]]
    diverged |= new
    loss[:, diverged, :] = np.nan
    return {
        "steps": np.array(eval_steps),
        "loss": loss,
        "ranks": ranks,
        "diverged": diverged,
        "diverged_step": div_step,
    }


#: Flows of Thm 4.3's memory: ``"coefficients"`` is (C.37)/(C.38) as printed, β̇ = -∂L/∂β; ``"matrix"`` is
#: gradient flow on W itself, β̇ᵢ = -(∂L/∂βᵢ)/‖Mᵢ‖² with ‖M₁‖² = 4 and ‖M₂‖² = 12 for the basis of (C.36).
C38_FLOWS = ("coefficients", "matrix")


def c38_flow(alpha: float, t_max: float = 1e6, n_points: int = 200, *, flow: str = "coefficients") -> dict:
    """Integrate the flow (C.38) of Thm 4.3 from a = b = 0.

    ``ȧ = F_a = (2 - 2e^a)/(e^a + e^b + 1) - 2 + 2α`` and ``ḃ = F_b = (2 - 8e^b)/(e^a + e^b + 1) - 2 + 10α``, where
    ``a = -2β₁``, ``b = -β₁ - 3β₂`` (N = 2, orthonormal embeddings, W(0) = 0). This is the flow of the
    coefficients, β̇ = -∂L/∂β, as the thesis prints it. With ``flow="matrix"``, gradient flow on W:
    ``ȧ = F_a/4`` and ``ḃ = (F_a + F_b)/12``. Solved with ``solve_ivp`` (LSODA, rtol 1e-10) on a log-spaced grid
    of times.

    Args:
        alpha: noise probability, in (0, 0.5).
        t_max: final time > 1.
        n_points: number of log-spaced output times in [1e-2, t_max], >= 2.
        flow: one of :data:`C38_FLOWS`.

    Returns:
        dict with ``t``, ``a``, ``b``.
    """
    check_range("alpha", alpha, 0.0, 0.5, lo_open=True, hi_open=True)
    check_range("t_max", t_max, 1.0, None, lo_open=True)
    check_int("n_points", n_points, minimum=2)
    check_in("flow", flow, C38_FLOWS)

    def rhs(_, y):
        ea, eb = np.exp(y[0]), np.exp(y[1])
        z = ea + eb + 1.0
        fa, fb = (2 - 2 * ea) / z - 2 + 2 * alpha, (2 - 8 * eb) / z - 2 + 10 * alpha
        return [fa, fb] if flow == "coefficients" else [fa / 4.0, (fa + fb) / 12.0]

    t = np.concatenate([[0.0], np.logspace(-2, np.log10(t_max), n_points)])
    t[-1] = t_max  # logspace can overshoot t_max by rounding, which solve_ivp rejects
    sol = solve_ivp(rhs, (0.0, t_max), [0.0, 0.0], t_eval=t, method="LSODA", rtol=1e-10, atol=1e-12)
    return {"t": sol.t[1:], "a": sol.y[0, 1:], "b": sol.y[1, 1:]}


def memory_gradient_descent(alpha: float, t_max: float, dt: float = 1e-3) -> dict:
    """Gradient descent on the matrix W of Thm 4.3's associative memory (n = 2 inputs, c = 3 outputs, standard
    basis embeddings, W(0) = 0), a small-step discretisation of gradient flow on W: loss the cross-entropy averaged
    over the two inputs against p(y|x) = (1-α)1{y=x} + α1{y=3} (C.33).

    Args:
        alpha: noise probability in (0, 0.5); t_max: final time > 0; dt: step size in (0, 0.1].

    Returns:
        dict with ``t`` (the final time reached), ``beta`` (β₁, β₂: projections of W on the basis of (C.36)),
        ``a``, ``b`` (-2β₁ and -β₁ - 3β₂) and ``off_span`` (the Frobenius norm of W outside that basis).
    """
    check_range("alpha", alpha, 0.0, 0.5, lo_open=True, hi_open=True)
    check_positive("t_max", t_max)
    check_range("dt", dt, 0.0, 0.1, lo_open=True)
    W = np.zeros((3, 3))
    target = np.array([[1 - alpha, 0.0], [0.0, 1 - alpha], [alpha, alpha]])  # columns: inputs 1, 2
    steps = int(round(t_max / dt))
    for _ in range(steps):
        z = W[:, :2]
        p = np.exp(z - z.max(axis=0))
        p /= p.sum(axis=0)
        W[:, :2] -= dt * 0.5 * (p - target)
    M1 = np.outer([1.0, -1.0, 0.0], [1.0, -1.0, 0.0])
    M2 = np.outer([1.0, 1.0, -2.0], [1.0, 1.0, 0.0])
    b1, b2 = float((W * M1).sum() / 4.0), float((W * M2).sum() / 12.0)
    return {"t": steps * dt, "beta": (b1, b2), "a": -2 * b1, "b": -b1 - 3 * b2,
            "off_span": float(np.linalg.norm(W - b1 * M1 - b2 * M2))}


def c38_probabilities(a, b) -> dict:
    """Noise probabilities of the full and rank-one models from the flow variables (a, b) of (C.38).

    The full model has margins (-a, -b) of the correct token over the other clean token and over the noise;
    its rank-one truncation has margins (2β₁, β₁) = (-a, -a/2). That truncation keeps the β₁ term, which is the
    top singular direction only when 2|β₁| > 2√3|β₂| (the thesis writes "β₁ > β₂"); for α ≥ 0.2 this holds at
    every t from a = b = 0, while for α ≲ 0.15 the β₂ term dominates at early times (t ≲ 1) and ``rank1`` is
    then not the rank-one truncation.

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
