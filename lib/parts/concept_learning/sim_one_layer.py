"""One-layer theory of the SIM task (Yang et al. 2025, Sec. 4.1, Thm 4.1, App. C) and the affine variant.

Notation: ``s`` concepts with signals ``mu`` and diversities ``sigma`` (both shape ``(s,)``), input dimension
``d >= s``, rates ``a_k = sigma_k^2 + mu_k^2 / s`` (Eq. 4.1; ``a_k = 0`` for ``k > s``), OOD point
``x_hat = sum_k mu_k e_k``. Gradient flow on the population loss ``1/2 ||(W - I) A^{1/2}||_F^2`` with
``A = diag(a)`` has the solution (C.17)

    W(t) = I_s + (W(0) - I_s) exp(-A t)           (I_s: identity on the first s coordinates, zero elsewhere)

so that (Thm 4.1, Eq. 4.2) ``f(W(t), x_hat)_k = 1{k<=s} (1 - e^{-a_k t}) mu_k + sum_{i<=s} e^{-a_i t} w_ki(0)
mu_i``.

With a bias, ``f = W x + b``, the same flow runs on the augmented input ``(x, 1)`` with second moment
``A~ = [[A, m], [m^T, 1]]``, ``m = E[x]``; its smallest non-zero eigenvalue, of order ``sigma^2``, sets the
stall of Sec. 3.2 (:func:`affine_flow`, :func:`affine_rates`).
"""

from __future__ import annotations

import numpy as np

from lib.config import check_array, check_bool, check_int, check_positive
from lib.maps import stop_at_divergence
from lib.parts.concept_learning.sim_data import (
    as_concepts,
    augmented_moment,
    concept_rates,
    ood_point,
    population_moments,
)


def _times(times) -> np.ndarray:
    t = np.atleast_1d(check_array("times", times))
    if t.ndim != 1 or not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError(f"times must be a 1-D array of finite values >= 0, got shape {t.shape}")
    return t


def _W0(W0, d: int) -> np.ndarray:
    if W0 is None:
        return np.zeros((d, d))
    W0 = np.asarray(W0, dtype=np.float64)
    if W0.shape != (d, d):
        raise ValueError(f"W0 must have shape ({d}, {d}), got {W0.shape}")
    return W0


def one_layer_weights(mu, sigma, times, W0=None, d: int | None = None) -> np.ndarray:
    """Exact gradient-flow weights ``W(t)`` of the one-layer model (Eq. C.17), shape ``(T, d, d)``.

    ``W(t)_{k,i} = delta_{ki} 1{i<=s} + (w_ki(0) - delta_{ki} 1{i<=s}) e^{-a_i t}`` (``a_i = 0`` for ``i >
    s``: those columns never move).
    """
    mu_arr, sig, d = as_concepts(mu, sigma, d)
    t = _times(times)
    W0 = _W0(W0, d)
    s = mu_arr.size
    a = np.zeros(d)
    a[:s] = concept_rates(mu_arr, sig)
    Is = np.diag((np.arange(d) < s).astype(float))
    decay = np.exp(-np.outer(t, a))  # (T, d): e^{-a_i t}, one per column i
    return Is[None] + (W0 - Is)[None] * decay[:, None, :]


def one_layer_flow(mu, sigma, times, W0=None, d: int | None = None) -> np.ndarray:
    """Theorem 4.1: the output ``f(W(t), x_hat)`` of gradient flow on the loss (2.1), one row per time.

    Args:
        mu, sigma: concept signals / diversities, shape ``(s,)`` (sigma may be a scalar).
        times: gradient-flow times ``t >= 0``, shape ``(T,)`` (for GD with step ``eta``: ``t = eta * step``).
        W0: initial weights ``(d, d)`` (default zero); d: input dimension ``>= s`` (default ``s``).
    Returns:
        array ``(T, d)``: ``1{k<=s}(1 - e^{-a_k t}) mu_k + sum_{i<=s} e^{-a_i t} w_ki(0) mu_i`` (Eq. 4.2).
    """
    check_array("times", times)
    G, N = theorem41_terms(mu, sigma, times, W0=W0, d=d)
    return G + N


def theorem41_terms(mu, sigma, times, W0=None, d: int | None = None, z=None) -> tuple[np.ndarray, np.ndarray]:
    """The growth term ``G~_k(t)`` and noise term ``N~_k(t)`` of Eq. (4.2), each of shape ``(T, d)``.

    ``z`` (default ``x_hat``) is the input; the theorem is exact for ``z`` supported on the first ``s``
    coordinates. For a general ``z`` the exact output is ``one_layer_weights(...) @ z``, which adds the
    non-decaying ``sum_{i>s} w_ki(0) z_i`` that Eq. (4.2) drops (App. C, step C.20 -> C.21).
    """
    mu_arr, sig, d = as_concepts(mu, sigma, d)
    t = _times(times)
    W0 = _W0(W0, d)
    s = mu_arr.size
    z = ood_point(mu_arr, d) if z is None else np.asarray(z, dtype=np.float64)
    if z.shape != (d,):
        raise ValueError(f"z must have shape ({d},), got {z.shape}")
    a = concept_rates(mu_arr, sig)
    decay = np.exp(-np.outer(t, a))  # (T, s)
    G = np.zeros((t.size, d))
    G[:, :s] = (1.0 - decay) * z[None, :s]
    N = (decay * z[None, :s]) @ W0[:, :s].T  # sum_i e^{-a_i t} w_ki(0) z_i
    return G, N


def one_layer_gd(mu, sigma, lr: float, steps: int, W0=None, d: int | None = None) -> dict:
    """Exact population-loss GD for the one-layer model: ``W_j - I_s = (W_0 - I_s)(I - lr A)^j``.

    Returns a dict: ``outputs`` ``f(W_j, x_hat)``, shape ``(steps + 1, d)`` (the Euler discretisation of
    Thm 4.1), and ``diverged``, ``diverged_step`` (-1 if never) by :func:`lib.maps.stop_at_divergence` (GD
    diverges when ``lr * a_k > 2`` for some rate ``a_k``; outputs after the divergence are NaN).
    """
    check_positive("lr", lr)
    check_int("steps", steps, minimum=0)
    mu_arr, sig, d = as_concepts(mu, sigma, d)
    W0 = _W0(W0, d)
    s = mu_arr.size
    a = concept_rates(mu_arr, sig)
    j = np.arange(steps + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        decay = (1.0 - lr * a)[None, :] ** j[:, None]  # (J, s)
        out = np.zeros((j.size, d))
        out[:, :s] = (1.0 - decay) * mu_arr[None]
        out += (decay * mu_arr[None]) @ W0[:, :s].T
    return stop_at_divergence({"outputs": out})


def affine_rates(mu, sigma, origin_cluster: bool = False) -> np.ndarray:
    """Eigenvalues (ascending) of the augmented second moment ``[[A, m], [m^T, 1]]`` restricted to the first
    ``s`` coordinates and the constant, shape ``(s + 1,)``: the gradient-flow rates of the affine one-
    layer model.

    The smallest is ``O(sigma^2)`` when the cluster means are affinely independent of ``x_hat`` (the Sec. 3.2
    stall); without a bias the rates are just ``a_k``.
    """
    mu_arr, sig, _ = as_concepts(mu, sigma)
    m, A = population_moments(mu_arr, sig, mu_arr.size, origin_cluster=origin_cluster)
    return np.linalg.eigvalsh(augmented_moment(A, m))


def affine_flow(
    mu, sigma, times, W0=None, b0=None, d: int | None = None, z=None, origin_cluster: bool = False
) -> np.ndarray:
    """Gradient flow of the affine model ``f = W x + b`` on the population loss (2.1): outputs at ``z``.

    ``[W b](t) = [I 0] + ([W0 b0] - [I 0]) expm(-A~ t)`` with ``A~ = [[A, m], [m^T, 1]]``. Returns ``(T, d)``;
    ``z`` defaults to ``x_hat``; ``W0`` ``(d, d)`` and ``b0`` ``(d,)`` default to zero.
    """
    mu_arr, sig, d = as_concepts(mu, sigma, d)
    t = _times(times)
    W0 = _W0(W0, d)
    b0 = np.zeros(d) if b0 is None else np.asarray(b0, dtype=np.float64)
    if b0.shape != (d,):
        raise ValueError(f"b0 must have shape ({d},), got {b0.shape}")
    z = ood_point(mu_arr, d) if z is None else np.asarray(z, dtype=np.float64)
    if z.shape != (d,):
        raise ValueError(f"z must have shape ({d},), got {z.shape}")
    check_bool("origin_cluster", origin_cluster)
    m, A = population_moments(mu_arr, sig, d, origin_cluster=origin_cluster)
    Aa = augmented_moment(A, m)
    lam, V = np.linalg.eigh(Aa)
    lam = np.clip(lam, 0.0, None)
    za = np.append(z, 1.0)
    target = np.hstack([np.eye(d), np.zeros((d, 1))])
    R0 = np.hstack([W0, b0[:, None]]) - target  # (d, d+1)
    coef = V.T @ za  # (d+1,)
    # expm(-A~ t) z~ = V diag(e^{-lam t}) V^T z~
    ez = (np.exp(-np.outer(t, lam)) * coef[None]) @ V.T  # (T, d+1)
    return (target @ za)[None] + ez @ R0.T


def learning_times(outputs, mu, times) -> np.ndarray:
    """Mean time to learn each concept: ``tau_k = sum_j (t_{j+1} - t_j) (1 - f_k(t_j) / mu_k)``, shape
    ``(..., s)``.

    ``outputs``: ``(..., T, d)`` outputs at ``x_hat`` in concept coordinates; ``times``: ``(T,)``
    increasing. The
    left Riemann sum of ``int (1 - f_k / mu_k) dt``: for GD with step ``eta`` from ``W(0) = 0`` it equals
    ``(1 - (1 - eta a_k)^J) / a_k`` exactly, and for Thm 4.1 it tends to ``1 / a_k``, so the concept with the
    larger ``a_k`` is learned first (:func:`predicted_learning_times`).
    """
    mu_arr = np.atleast_1d(check_array("mu", mu))
    t = _times(times)
    out = check_array("outputs", outputs, finite="some")  # NaN after a diverged run's step
    if out.ndim < 2 or out.shape[-2] != t.size or out.shape[-1] < mu_arr.size:
        raise ValueError(f"outputs must have shape (..., {t.size}, d >= {mu_arr.size}), got {out.shape}")
    if np.any(mu_arr <= 0):
        raise ValueError("mu must be > 0 to normalise the progress f_k / mu_k")
    gap = 1.0 - out[..., :-1, : mu_arr.size] / mu_arr
    return np.sum(gap * np.diff(t)[:, None], axis=-2)


def predicted_learning_times(mu, sigma, horizon: float = np.inf, lr: float | None = None) -> np.ndarray:
    """Thm 4.1 prediction of :func:`learning_times` from ``W(0) = 0``: ``(1 - e^{-a_k T}) / a_k`` over ``[0,
    T]``
    (``T = horizon``), or ``(1 - (1 - lr a_k)^{T / lr}) / a_k`` for GD with step ``lr``. Shape ``(s,)``."""
    a = concept_rates(mu, sigma)
    if not (isinstance(horizon, (int, float, np.floating)) and horizon == np.inf):  # inf: the flow's limit
        check_positive("horizon", horizon)
    if np.isinf(horizon):
        return 1.0 / a
    if lr is None:
        return -np.expm1(-a * horizon) / a
    check_positive("lr", lr)
    return (1.0 - (1.0 - lr * a) ** round(horizon / lr)) / a


class GDMoments(tuple):
    """``(steps, outputs)`` of :func:`one_layer_gd_moments`, with the divergence flags of :func:`lib.train.train`
    as attributes: ``diverged`` (bool) and ``diverged_step`` (the GD step, ``None`` if it did not diverge)."""

    diverged: bool
    diverged_step: int | None

    def __new__(cls, steps, outputs, diverged: bool, diverged_step):
        check_array("steps", steps, ndim=1)
        check_array("outputs", outputs, finite=False)  # NaN after a divergence, by design
        check_bool("diverged", diverged)
        if diverged_step is not None:
            check_int("diverged_step", diverged_step, minimum=0)
        obj = super().__new__(cls, (steps, outputs))
        obj.diverged, obj.diverged_step = diverged, diverged_step
        return obj


def one_layer_gd_moments(A, lr: float, steps: int, W0=None, z=None, record_every: int = 1):
    """Exact full-batch GD of ``f = W x`` on ``1/2 tr[(W - I) A (W - I)^T]`` for any PSD ``A`` (e.g. the
    empirical second moment of a sampled training set, for which this *is* GD on the loss (2.1)).

    ``W_j = I + (W_0 - I) V diag((1 - lr lambda)^j) V^T`` with ``A = V diag(lambda) V^T``. Returns
    ``(steps_recorded (R,), outputs (R, d))`` with the outputs ``W_j z`` (``z`` of shape ``(d,)``, required), a
    :class:`GDMoments` tuple whose ``diverged`` and ``diverged_step`` follow :func:`lib.maps.stop_at_divergence`
    on the outputs and the loss at the recorded steps (``lr > 2 / lambda_max`` diverges); the outputs after
    that step are NaN, as if the run had stopped there.
    """
    A = check_array("A", A, ndim=2)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix, got shape {A.shape}")
    d = A.shape[0]
    check_positive("lr", lr)
    check_int("steps", steps, minimum=0)
    check_int("record_every", record_every, minimum=1)
    if z is None:
        raise ValueError("z (the evaluation point, shape (d,)) is required")
    z = check_array("z", z)
    if z.shape != (d,):
        raise ValueError(f"z must have shape ({d},), got {z.shape}")
    W0 = _W0(W0, d)
    lam, V = np.linalg.eigh((A + A.T) / 2)
    j = np.unique(np.append(np.arange(0, steps + 1, record_every), steps))
    coef = V.T @ z
    decay = (1.0 - lr * lam)[None, :] ** j[:, None]  # (R, d)
    ez = (decay * coef[None]) @ V.T  # (R, d): e^{...} z
    outputs = z[None] + ez @ (W0 - np.eye(d)).T
    with np.errstate(over="ignore", invalid="ignore"):  # loss_j = 1/2 sum_k lambda_k decay_jk^2 |(W0 - I) v_k|^2
        loss = 0.5 * (decay**2 * (lam * ((W0 - np.eye(d)) @ V) ** 2).sum(0)[None]).sum(1)
    checked = stop_at_divergence({"outputs": outputs, "loss": loss}, loss_keys=["loss"])
    if not checked["diverged"]:
        return GDMoments(j, outputs, False, None)
    return GDMoments(j, checked["outputs"], True, int(j[checked["diverged_step"]]))


def rate_sampling_std(mu, sigma, n: int) -> np.ndarray:
    """Standard deviation of the empirical rate ``a_hat_k = (1/(s n)) sum x_k^2`` over a sampled training
    set with ``n`` points per cluster: ``sqrt((4 mu_k^2 sigma_k^2 + 2 s sigma_k^4) / (s^2 n))`` (CLT), shape
    ``(s,)``."""
    mu_arr, sig, _ = as_concepts(mu, sigma)
    check_int("n", n, minimum=1)
    s = mu_arr.size
    return np.sqrt((4 * mu_arr**2 * sig**2 + 2 * s * sig**4) / (s**2 * n))


def learning_order(mu, sigma) -> np.ndarray:
    """Concept indices (0-based) from first learned to last: ``argsort(-a)`` (Sec. 4.1)."""
    return np.argsort(-concept_rates(mu, sigma), kind="stable")


def flip_sigma(mu, sigma, k: int, j: int) -> float:
    """Diversity ``sigma_k`` at which concepts ``k`` and ``j`` are learned equally fast (``a_k = a_j``).

    ``sigma_k* = sqrt(sigma_j^2 + (mu_j^2 - mu_k^2) / s)``; ``nan`` when ``mu_k^2 / s > a_j`` (``k`` leads
    for every
    ``sigma_k``). For ``mu = (1, 2)``, ``sigma_2 = 0.05``: ``sigma_1* = sqrt(0.0025 + 3/2) = 1.2257``.
    """
    mu_arr, sig, _ = as_concepts(mu, sigma)
    s = mu_arr.size
    check_int("k", k, minimum=0, maximum=s - 1)
    check_int("j", j, minimum=0, maximum=s - 1)
    val = sig[j] ** 2 + (mu_arr[j] ** 2 - mu_arr[k] ** 2) / s
    return float(np.sqrt(val)) if val >= 0 else float("nan")


def flip_mu(mu, sigma, k: int, j: int) -> float:
    """Signal ``mu_k`` at which ``a_k = a_j``: ``sqrt(mu_j^2 + s (sigma_j^2 - sigma_k^2))`` (``nan`` if
    none)."""
    mu_arr, sig, _ = as_concepts(mu, sigma)
    s = mu_arr.size
    check_int("k", k, minimum=0, maximum=s - 1)
    check_int("j", j, minimum=0, maximum=s - 1)
    val = mu_arr[j] ** 2 + s * (sig[j] ** 2 - sig[k] ** 2)
    return float(np.sqrt(val)) if val >= 0 else float("nan")


def fit_exponential_rate(times, residual, lo: float, hi: float) -> tuple[float, int]:
    """Fit ``|residual(t)| ~ C e^{-r t}`` on the samples with ``lo <= |residual| <= hi``; return ``(r,
    n_used)``.

    ``times``: ``(T,)``; ``residual``: ``(T,)`` (e.g. ``f_k(t) - mu_k``); least squares on ``log |residual|``.
    Returns ``(nan, n)`` when fewer than 3 samples fall in the window.
    """
    check_array("times", times)
    check_array("residual", residual, finite="some")
    t = _times(times)
    r = np.abs(np.asarray(residual, dtype=np.float64))
    if r.shape != t.shape:
        raise ValueError(f"residual must have shape {t.shape}, got {r.shape}")
    check_positive("lo", lo)
    check_positive("hi", hi)
    if lo >= hi:
        raise ValueError(f"lo must be < hi, got lo={lo}, hi={hi}")
    sel = (r >= lo) & (r <= hi)
    if sel.sum() < 3:
        return float("nan"), int(sel.sum())
    slope = np.polyfit(t[sel], np.log(r[sel]), 1)[0]
    return float(-slope), int(sel.sum())
