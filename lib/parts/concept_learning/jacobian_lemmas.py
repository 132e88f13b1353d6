"""The lemmas of App. D (Yang et al. 2025) checked along runs that satisfy Assumptions D.1-D.5.

App. D iterates the W-space map (D.2), ``W(t+1) = W(t) + eta [W A + A W - 1/2 (A W^2 + W^2 A + 2 W A W)]``, from a
small symmetric ``W(0)``, and proves entry-wise bounds (Cor. D.1, Lemmas D.1-D.8, Cor. D.2) under Assumptions
D.1-D.5. The paper's figure settings lie outside those assumptions, so here we build settings that satisfy them
(:func:`lemma_setting`: tiny initialisation, widely separated signals, small step) and run the
population dynamics of the lemmas (a hand-written loop: an exact population map, not training), checking every
bound at every step (:func:`check_lemmas`): by default gradient descent on ``U``, whose map on ``W = U U^T`` is
(D.2) up to ``O(eta^2)``, or (D.2) itself.

Indices follow App. D: ``a`` is sorted ascending, so ``i > j`` means that concept ``i`` has the stronger signal.
"""

from __future__ import annotations

import math

import numpy as np

from lib.config import check_in, check_int, check_positive, check_range, check_seed, renamed_key
from lib.parts.concept_learning.deep_models import check_assumptions, w_update_d2
from lib.parts.concept_learning.sim_data import _vec


def _ascending(a) -> np.ndarray:
    a = _vec("a", a)
    if a.size < 2 or np.any(a <= 0) or np.any(np.diff(a) <= 0):
        raise ValueError(f"a must hold >= 2 positive, strictly increasing values (App. D order), got {a}")
    return a


def lemma_setting(a, n_seeds: int, *, seed: int = 0, K: float = 20.0, kappa: float = 1.15, r: float = 1.1,
                  delta: float = 0.3) -> dict:
    """Initial Jacobians and constants that satisfy Assumptions D.1-D.5 for the signals ``a``.

    ``W(0) = omega M`` with ``M = u u^T + delta I`` (PSD), ``u_i = +-|u_i|``, random signs and ``|u_i|`` uniform
    in ``[1, r]``, so every ``|M_ij| >= 1`` and the common ``beta = max |M| / min |M|`` is at most
    ``r^2 + delta``. ``eta = 1 / (9 K gamma alpha)`` meets D.2 with equality. ``omega`` is half the bound of D.4,
    which makes ``P beta omega = c0 / (K gamma d beta)`` independent of ``P`` (D.3 then holds), and ``log P``
    is 1 % above the smallest value allowed by the first inequality of D.5. ``C = max(1.01, alpha / min_{i>j}
    (a_i - 3 a_j))`` for the second (``a_i > 3 a_j`` is needed).

    Args: ``a`` (d,) ascending, positive; ``n_seeds`` >= 1; ``seed``; ``K >= 20``; ``kappa`` in ``(1.1, 2]``;
    ``r >= 1``; ``delta > 0``.

    Returns:
        dict with ``W0`` (n_seeds, d, d), ``a``, ``lr`` (the step, the paper's eta), the constants ``omega``,
        ``beta``, ``P`` (may be huge), ``logP``, ``K``, ``kappa``, ``C``, ``alpha``, ``gamma`` of App. D, and
        ``check`` (the result of :func:`~lib.parts.concept_learning.deep_models.check_assumptions` for every
        seed: all True by construction).
    """
    a = _ascending(a)
    check_int("n_seeds", n_seeds, minimum=1)
    check_seed("seed", seed)
    check_range("K", K, 20.0, 1e6)
    check_range("kappa", kappa, 1.1, 2.0)
    if kappa <= 1.1:
        raise ValueError(f"kappa must be > 1.1, got {kappa}")
    check_range("r", r, 1.0, 10.0)
    check_positive("delta", delta)
    d = a.size
    diffs = [a[i] - 3 * a[j] for i in range(d) for j in range(i)]
    if min(diffs) <= 0:
        raise ValueError(f"a must satisfy a_i > 3 a_j for i > j (Assumption D.5), got {a}")
    alpha, gamma = float(a[0]), float(a[-1] / a[0])
    C = max(1.01, alpha / min(diffs))
    if kappa > 1 + 0.5 * K / C:
        raise ValueError(f"kappa must be <= 1 + K / (2 C) = {1 + 0.5 * K / C:.3f}, got {kappa}")
    rng = np.random.default_rng(seed)
    u = rng.uniform(1.0, r, (n_seeds, d)) * rng.choice([-1.0, 1.0], (n_seeds, d))
    M = u[:, :, None] * u[:, None, :] + delta * np.eye(d)
    M /= np.abs(M).min(axis=(1, 2), keepdims=True)
    beta = max(float(np.abs(M).max()), 1.0 + 1e-9)
    c0 = 0.5 * min(kappa - 1, 1 - kappa**-0.5)
    L = math.log(K * gamma * d * beta / c0)  # log 1 / (P beta omega)
    q = max((a[i] + a[j]) / (2 * a[i]) for i in range(d) for j in range(i))
    logP = max(1.01 * q * (10 * kappa**2 * L + math.log(beta)) / (1 - q), math.log(2.0))
    P = math.exp(logP)
    omega = c0 / (P * K * gamma * d * beta**2)
    lr = 1.0 / (9 * K * gamma * alpha)
    W0 = omega * M
    check = [check_assumptions(a, w, lr, P=P, K=K, kappa=kappa, C=C) for w in W0]
    # check_assumptions reads omega and beta from each W0; the common beta bounds every seed
    return dict(W0=W0, a=a, lr=lr, omega=omega, beta=beta, P=P, logP=logP, K=K, kappa=kappa, C=C,
                alpha=alpha, gamma=gamma, check=check)


def check_lemmas(setting: dict, max_steps: int, *, dynamics: str = "d2", lam: float = 0.85,
                 chunk: int = 2000) -> dict:
    """Run the symmetric model from ``setting["W0"]`` and measure the margin of every bound of App. D at every
    step.

    ``dynamics="d2"`` (default) iterates (D.2) itself, the map of App. D. It need not stay in the cone of PSD
    matrices that the proofs of Lemmas D.4-D.5 assume: a major entry can be pushed below zero by the noise term
    and then runs away (a diverged run gives infinite margins). ``dynamics="gd_u"`` runs gradient descent on ``U``
    (``U(0)`` the Cholesky factor of ``W(0)``) with the step ``U <- U - (eta / 2) grad_U L``, whose map on
    ``W = U U^T`` is (D.2) up to ``O(eta^2)`` and stays PSD; but ``w_ij = u_i . u_j`` then carries a round-off
    of order ``1e-16 sqrt(w_ii w_jj)``, far above the ``omega``-sized bounds of Lemma D.7.

    Runs until every major entry has stayed above ``1 - 2/K`` for as many steps as it took to get there (or
    ``max_steps``). Each returned margin is ``<= 0`` when the bound holds (relative to the bound's scale):

    * ``cor_d1``: ``max_t |N_ij(t)| / (2 P gamma alpha d beta^2 omega^2) - 1`` (the bound as printed), and
      ``cor_d1_p2`` the same with ``P^2`` for ``P`` (what Assertion D.1 gives: every off-diagonal factor of
      ``N_ij`` is at most ``P beta omega``);
    * ``lemma_d1``: ``max_t [log|w_ij(t)| - log|w_ij(0)| - eta t (a_i + a_j) kappa]``;
    * ``lemma_d2``: for ``t <= T1 = log P / (2 eta gamma alpha kappa)``: the larger of
      ``max [log|w_ij(0)| + eta t (a_i + a_j) / kappa - log|w_ij(t)|]``, ``max |w_ij(t)| / (P beta omega) - 1``
      and ``-min sign(w_ij(t) w_ij(0))``;
    * ``lemma_d3``: for ``t <= T1(i) = log(P beta omega / w_ii(0)) / (2 eta a_i kappa)``: the larger of
      ``max [log w_ii(0) + 2 eta t a_i / kappa - log w_ii(t)]`` and ``max w_ii(t) / (P beta omega) - 1``;
    * ``lemma_d4``: from the exit time ``t0`` of ``w_ii`` from its initial phase until ``w_ii`` first reaches
      ``lam``: ``max [log w_ii(t0) + 2 eta (t - t0) a_i (1 - lam) / kappa - log w_ii(t)]``, and
      ``-min_t w_ii(t)``;
    * ``lemma_d5``: the larger of ``max w_ii / (1 + 2/K) - 1`` and ``-min w_ii``;
    * ``cor_d2``: ``K max |w_ii(t+1) - w_ii(t)| - 1``;
    * ``lemma_d6``: ``(1 - 2/K) - min w_ii(t')`` over ``t'`` after ``w_ii`` first reaches ``1 - 2/K``;
    * ``lemma_d7``: for ``i > j``, after the first ``t0`` with ``w_ii(t0) > 0.8``:
      ``max |w_ij(t')| / max(|w_ij(t0)|, omega) - 1``;
    * ``lemma_d8``: ``max_t max_{i != j} |w_ij(t)| / (P beta omega) - 1``.

    Returns:
        dict with ``margins`` (the dict of the margins above, by name), ``exit_ratio`` (n_seeds, d) the measured
        exit times of the majors over ``T1(i)`` (Lemma D.3 says >= 1), ``t_converged`` (n_seeds,) the first step
        with all majors >= 1 - 2/K, ``steps`` run, ``T1`` and ``T1i`` (d,) (the times of Lemmas D.2 and D.3), and
        ``final_W`` (n_seeds, d, d).
    """
    setting = renamed_key(setting, "eta", "lr", name="setting")
    W = np.array(setting["W0"], dtype=np.float64)
    a = _ascending(setting["a"])
    check_int("max_steps", max_steps, minimum=1)
    check_range("lam", lam, 0.0, 1.0)
    check_int("chunk", chunk, minimum=1)
    if W.ndim != 3 or W.shape[1:] != (a.size, a.size):
        raise ValueError(f"setting['W0'] must have shape (B, {a.size}, {a.size}), got {W.shape}")
    B, d = W.shape[0], a.size
    lr, K, kappa = setting["lr"], setting["K"], setting["kappa"]
    omega, beta, logP = setting["omega"], setting["beta"], setting["logP"]
    alpha, gamma = setting["alpha"], setting["gamma"]
    pbw = math.exp(logP) * beta * omega
    ai, aj = a[:, None], a[None, :]
    rate = ai + aj
    off = ~np.eye(d, dtype=bool)
    lower = np.tril(np.ones((d, d), dtype=bool), -1)  # i > j
    coef = (ai + aj)[None] + 2 * a[:, None, None]  # (k, i, j): a_i + a_j + 2 a_k, zero where k = i or k = j
    idx = np.arange(d)
    coef = coef * ((idx[:, None, None] != idx[None, :, None]) & (idx[:, None, None] != idx[None, None, :]))
    check_in("dynamics", dynamics, ("gd_u", "d2"))
    U = np.linalg.cholesky(W) if dynamics == "gd_u" else None
    logw0 = np.log(np.abs(W))
    sign0 = np.sign(W)
    diag0 = np.diagonal(W, axis1=1, axis2=2).copy()
    T1 = logP / (2 * lr * gamma * alpha * kappa)
    T1i = np.log(pbw / diag0) / (2 * lr * a * kappa)
    n_bound = 2 * math.exp(logP) * gamma * alpha * d * beta**2 * omega**2
    keys = ("cor_d1", "cor_d1_p2", "lemma_d1", "lemma_d2", "lemma_d3", "lemma_d4", "lemma_d5", "cor_d2", "lemma_d6",
            "lemma_d7", "lemma_d8")
    m = dict.fromkeys(keys, -np.inf)
    t_exit = np.full((B, d), -1)
    w_exit = np.zeros((B, d))
    reached_lam = np.zeros((B, d), dtype=bool)
    t_high = np.full((B, d), -1)
    t_08 = np.full((B, d), -1)
    ref7 = np.zeros((B, d, d))
    t_conv = np.full(B, -1)
    t = 0
    hist = [W]
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        while True:
            n = min(chunk, max_steps - t)
            for _ in range(n):
                if U is None:
                    W = W + lr * w_update_d2(W, a)
                else:  # U <- U - (eta / 2) grad_U L, grad_U L = [(W - I) A + A (W - I)] U
                    X = W * a + a[:, None] * W - 2 * np.diag(a)
                    U = U - 0.5 * lr * (X @ U)
                    W = U @ np.swapaxes(U, 1, 2)
                hist.append(W)
            tr = np.stack(hist)  # (n + 1, B, d, d): steps t .. t + n
            if not np.isfinite(tr).all():  # a diverged run breaks every bound
                m = dict.fromkeys(m, np.inf)
                t += n
                break
            ts = t + np.arange(n + 1)
            tt = ts[:, None, None, None]
            dg = np.diagonal(tr, axis1=2, axis2=3)  # (n + 1, B, d)
            absw = np.abs(tr)
            logw = np.log(absw)
            # Cor. D.1: the noise term, N = G - S - (D.2)
            # N_ij = 1/2 sum_{k != i, j} w_ki w_kj (a_i + a_j + 2 a_k), summed term by term (no cancellation)
            N = 0.5 * np.einsum("kij,...ki,...kj->...ij", coef, tr, tr)
            m["cor_d1"] = max(m["cor_d1"], float(np.abs(N).max() / n_bound - 1))
            m["cor_d1_p2"] = max(m["cor_d1_p2"], float(np.abs(N).max() / (n_bound * math.exp(logP)) - 1))
            m["lemma_d1"] = max(m["lemma_d1"], float((logw - logw0 - lr * tt * rate * kappa).max()))
            early = ts <= T1
            if early.any():
                e = tr[early]
                m["lemma_d2"] = max(m["lemma_d2"], float((logw0 + lr * tt[early] * rate / kappa - logw[early]).max()),
                                    float(np.abs(e).max() / pbw - 1), float(-(np.sign(e) * sign0).min()))
            # per major entry: the initial phase (D.3), the exit time, the growth after it (D.4)
            for b in range(B):
                for i in range(d):
                    x = dg[:, b, i]
                    before = ts <= T1i[b, i]
                    if before.any():
                        m["lemma_d3"] = max(m["lemma_d3"], float(np.max(
                            np.log(diag0[b, i]) + 2 * lr * ts[before] * a[i] / kappa - np.log(x[before]))),
                            float(x[before].max() / pbw - 1))
                    if t_exit[b, i] < 0 and (x > pbw).any():
                        k = int(np.argmax(x > pbw))
                        t_exit[b, i], w_exit[b, i] = ts[k], x[k]
                    if t_exit[b, i] >= 0 and not reached_lam[b, i]:
                        after = ts >= t_exit[b, i]
                        hit = after & (x >= lam)
                        stop = ts[int(np.argmax(hit))] if hit.any() else ts[-1] + 1
                        seg = after & (ts < stop)
                        if seg.any():
                            m["lemma_d4"] = max(m["lemma_d4"], float(np.max(
                                np.log(w_exit[b, i]) + 2 * lr * (ts[seg] - t_exit[b, i]) * a[i] * (1 - lam) / kappa
                                - np.log(x[seg]))))
                        reached_lam[b, i] = bool(hit.any())
                    if t_high[b, i] < 0 and (x >= 1 - 2 / K).any():
                        t_high[b, i] = ts[int(np.argmax(x >= 1 - 2 / K))]
                    if t_high[b, i] >= 0:
                        m["lemma_d6"] = max(m["lemma_d6"], float((1 - 2 / K) - x[ts >= t_high[b, i]].min()))
                    if t_08[b, i] < 0 and (x > 0.8).any():
                        k = int(np.argmax(x > 0.8))
                        t_08[b, i] = ts[k]
                        ref7[b, i] = np.maximum(absw[k, b, i], omega)
                    if t_08[b, i] >= 0:
                        sel = ts >= t_08[b, i]
                        row = absw[sel, b, i, :][:, lower[i]]
                        if row.size:
                            m["lemma_d7"] = max(m["lemma_d7"], float((row / ref7[b, i][lower[i]] - 1).max()))
            m["lemma_d4"] = max(m["lemma_d4"], float(-dg.min()))
            m["lemma_d5"] = max(m["lemma_d5"], float(dg.max() / (1 + 2 / K) - 1), float(-dg.min()))
            m["cor_d2"] = max(m["cor_d2"], float(K * np.abs(np.diff(dg, axis=0)).max() - 1))  # dg[0]: last chunk's end
            m["lemma_d8"] = max(m["lemma_d8"], float(absw[:, :, off].max() / pbw - 1))
            allhigh = (dg >= 1 - 2 / K).all(axis=2)  # (n + 1, B)
            newly = (t_conv < 0) & allhigh.any(axis=0)
            t_conv[newly] = ts[np.argmax(allhigh, axis=0)][newly]
            t += n
            hist = [W]
            if t >= max_steps or ((t_conv >= 0).all() and t >= 1.25 * t_conv.max()):
                break
    exit_ratio = np.where(t_exit >= 0, t_exit / T1i, np.nan)
    return dict(margins=m, exit_ratio=exit_ratio, t_converged=t_conv, steps=t, T1=T1, T1i=T1i, final_W=W)
