"""Deep and symmetric linear models on the structured identity mapping (SIM) task (Yang et al. 2025, Sec. 4.2,
App. D-E).

The symmetric two-layer model is ``f(U; x) = U U^T x`` with ``U`` of shape ``(d, d')``; its input-output Jacobian
is ``W = U U^T``. On the SIM task the population loss of a linear map ``W`` is (Eq. 4.1)
``L(W) = 1/2 || (W - I) A^{1/2} ||_F^2`` with ``A = diag(a)``, ``a_p = sigma_p^2 + mu_p^2 / s`` for ``p <= s`` and 0
otherwise.

We run exact gradient descent on ``U`` (never the W-space map (D.2) directly, which can leave the cone of PSD
matrices and blow up). With the step ``U <- U - (eta / 2) grad_U L`` the induced update of ``W`` equals (D.2) with
step ``eta`` up to ``O(eta^2)``, so the time ``t = eta * k`` after ``k`` steps is the time of Eq. (4.3). The step
``eta`` is the argument ``lr`` (and the field ``SymmetricRun.lr``); ``eta`` still works, deprecated, for one release.

Contents:

* data moments: :func:`~lib.parts.concept_learning.sim_data.second_moment`; entry groups of Fig. 4:
  :func:`entry_groups`;
* the batched run: :func:`init_symmetric`, :func:`run_symmetric` -> :class:`SymmetricRun`;
* Eq. (4.3) / (D.2): :func:`growth_suppression_noise`, :func:`w_update_d2`;
* Fig. 5 stage sequence: :func:`stage_sequence`; Fig. 10 plateau: :func:`plateau_stats`;
* assumptions D.1-D.5: :func:`check_assumptions`, :func:`assumptions_satisfiable`;
* deep linear networks on the population loss (Fig. 2(c), 3, 13, 14): :func:`deep_linear_population_run`, on
  :mod:`lib.parts.concept_learning.linear_gd`, which also holds the batched MLP SGD on samples (Fig. 7, 11, 12);
  the same networks under SGD on sampled data with a held-out ID sample (Sec. 3.3, App. F.1):
  :func:`deep_linear_sgd_run`, and the rising stretches of their OOD bumps: :func:`bump_windows`.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from lib.config import (
    check_array,
    check_bool,
    check_instance,
    check_int,
    check_positive,
    check_range,
    check_seed,
    check_shape,
    renamed_arguments,
)
from lib.curves import hitting_time, peak_positions
from lib.parts.concept_learning.linear_gd import init_deep_linear, population_gd_deep_linear, sgd_mlp_batched
from lib.parts.concept_learning.sim_data import _vec, ood_point, population_moments, sim_gaussian_mixture_batch
from lib.stats import frequency

#: the held-out sample of run ``k`` of :func:`deep_linear_sgd_run` is drawn with data seed ``seed + k`` plus this
HELDOUT_SEED_OFFSET = 1_000


def entry_groups(s: int, d: int) -> dict:
    """Masks of the Jacobian entries of Fig. 4.

    Returns:
        dict of boolean ``(d, d)`` masks: ``major`` (first ``s`` diagonal entries), ``minor`` (off-diagonal
        entries in the first ``s`` rows or columns), ``irrelevant`` (the rest) and ``groups``, a list of ``s``
        masks: group ``p`` holds the minor entries of row ``p`` or column ``p`` (each minor entry between two
        informative indices belongs to two groups).
    """
    check_int("s", s, minimum=1)
    check_int("d", d, minimum=s)
    idx = np.arange(d)
    inf_r = idx[:, None] < s
    inf_c = idx[None, :] < s
    diag = idx[:, None] == idx[None, :]
    major = diag & inf_r
    minor = (inf_r | inf_c) & ~diag
    groups = [minor & ((idx[:, None] == p) | (idx[None, :] == p)) for p in range(s)]
    return {"major": major, "minor": minor, "irrelevant": ~(major | minor), "groups": groups}


def init_symmetric(d: int, d_prime: int, tau: float, n_seeds: int, seed: int = 0, positive: bool = False):
    """Initial factors ``U_0`` with i.i.d. ``N(0, tau^2)`` entries (App. E.2), one per seed.

    With ``positive=True`` the entries are replaced by their absolute values, so every entry of ``W_0 = U_0
    U_0^T``
    is positive (the setting of Fig. 5). Seed ``k`` of the batch is drawn from ``default_rng(seed + k)``, so a
    seed's initialisation does not depend on the batch size. Shape ``(n_seeds, d, d_prime)``.
    """
    check_int("d", d, minimum=1)
    check_int("d_prime", d_prime, minimum=1)
    check_positive("tau", tau)
    check_int("n_seeds", n_seeds, minimum=1)
    check_seed("seed", seed)
    check_bool("positive", positive)
    U = (
        np.stack([np.random.default_rng(seed + k).standard_normal((d, d_prime)) for k in range(n_seeds)])
        * tau
    )
    return np.abs(U) if positive else U


def default_record_steps(steps: int, n_log: int = 300, n_lin: int = 200) -> np.ndarray:
    """Recording grid: 0, ``n_log`` log-spaced and ``n_lin`` linearly spaced steps in ``[1, steps]``
    (unique)."""
    check_int("steps", steps, minimum=1)
    check_int("n_log", n_log, minimum=0)
    check_int("n_lin", n_lin, minimum=0)
    grid = np.concatenate([[0], np.geomspace(1, steps, n_log), np.linspace(1, steps, n_lin)])
    return np.unique(np.round(grid).astype(int))


@dataclass
class SymmetricRun:
    """A batch of GD runs of the symmetric two-layer model.

    Attributes:
        steps: ``(R,)`` recorded GD steps; ``time = eta * steps`` is the time of Eq. (4.3).
        W: ``(R, B, d, d)`` Jacobians ``U U^T`` at the recorded steps (``B`` seeds).
        a: ``(d,)`` data second moment; mu: ``(s,)`` signal strengths; lr: step (the paper's eta).
        diverged: ``(B,)`` True where a run produced a non-finite value.
    """

    steps: np.ndarray
    W: np.ndarray
    a: np.ndarray
    mu: np.ndarray
    lr: float
    diverged: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    @property
    def eta(self) -> float:
        """Deprecated alias of the field ``lr`` (kept for one release)."""
        warnings.warn("SymmetricRun.eta is deprecated and will be removed in the next release; use "
                      "SymmetricRun.lr", DeprecationWarning, stacklevel=2)
        return self.lr

    @property
    def time(self) -> np.ndarray:
        return self.lr * self.steps

    @property
    def x_hat(self) -> np.ndarray:
        return ood_point(self.mu, self.W.shape[-1])

    def output(self) -> np.ndarray:
        """``f(U_t; x_hat) = W_t x_hat``, shape ``(R, B, d)`` (Sec. 4.2.2)."""
        return self.W @ self.x_hat

    def ood_loss(self) -> np.ndarray:
        """OOD loss ``1/2 ||W_t x_hat - x_hat||^2``, shape ``(R, B)``."""
        return 0.5 * np.sum((self.output() - self.x_hat) ** 2, axis=-1)

    def train_loss(self) -> np.ndarray:
        """Population training loss ``1/2 ||(W - I) A^{1/2}||_F^2`` (Eq. 4.1), shape ``(R, B)``."""
        d = self.W.shape[-1]
        E = (self.W - np.eye(d)) * np.sqrt(self.a)
        return 0.5 * np.sum(E**2, axis=(-2, -1))

    def entry(self, i: int, j: int) -> np.ndarray:
        """Entry ``w_ij`` over time, shape ``(R, B)`` (0-based indices)."""
        return self.W[..., i, j]

    def seed(self, b: int) -> SymmetricRun:
        """The run of one seed of the batch (a batch of size 1)."""
        return SymmetricRun(
            self.steps, self.W[:, b : b + 1], self.a, self.mu, self.lr, self.diverged[b : b + 1]
        )


@renamed_arguments(eta="lr")
def run_symmetric(a, mu, U0, lr: float, steps: int, record_steps=None) -> SymmetricRun:
    """Batched GD on ``U`` for the symmetric two-layer model on the SIM population loss (Eq. 4.1).

    Update: ``U <- U - (eta / 2) * [(W - I) A + A (W - I)] U`` with ``W = U U^T`` (this is ``-(eta/2) grad_U
    L``),
    so that ``W`` follows (D.2) with step ``lr`` to first order.

    Args:
        a: ``(d,)`` second moment (see :func:`~lib.parts.concept_learning.sim_data.second_moment`); mu: ``(s,)``
            signal strengths (for ``x_hat``).
        U0: ``(B, d, d')`` initial factors (see :func:`init_symmetric`).
        lr: step, > 0; steps: number of GD steps, >= 1.
        record_steps: increasing integers in ``[0, steps]`` (default :func:`default_record_steps`).

    Returns:
        a :class:`SymmetricRun`; diverging seeds are flagged in ``diverged`` (their values become NaN).
    """
    check_array("U0", U0)
    a = _vec("a", a)
    mu = _vec("mu", mu)
    U = np.array(U0, dtype=float, copy=True)
    if U.ndim != 3 or U.shape[1] != a.size:
        raise ValueError(f"U0 must have shape (B, d={a.size}, d'), got {U.shape}")
    check_positive("lr", lr)
    check_int("steps", steps, minimum=1)
    rec = default_record_steps(steps) if record_steps is None else np.asarray(record_steps, dtype=int)
    if rec.ndim != 1 or rec.size == 0 or np.any(np.diff(rec) <= 0) or rec[0] < 0 or rec[-1] > steps:
        raise ValueError(f"record_steps must be strictly increasing integers in [0, {steps}]")
    B, d, _ = U.shape
    eye = np.eye(d)
    out = np.empty((rec.size, B, d, d))
    r = 0
    half_eta = 0.5 * lr
    with np.errstate(all="ignore"):
        for k in range(steps + 1):
            W = U @ U.transpose(0, 2, 1)
            if r < rec.size and rec[r] == k:
                out[r] = W
                r += 1
                if r == rec.size:
                    break
            E = W - eye
            M = E * a + a[:, None] * E
            U -= half_eta * (M @ U)
            if k % 1000 == 999:  # stop runaway seeds from overflowing forever
                bad = ~np.isfinite(U).all(axis=(1, 2)) | (np.abs(U).max(axis=(1, 2)) > 1e6)
                U[bad] = np.nan
    diverged = ~np.isfinite(out).all(axis=(0, 2, 3))
    return SymmetricRun(rec, out, a, mu, float(lr), diverged)


def w_update_d2(W, a) -> np.ndarray:
    """Right-hand side of (D.2): ``W A + A W - 1/2 [A W^2 + W^2 A + 2 W A W]``, shape ``(..., d, d)``."""
    check_array("W", W, finite=False)
    check_array("a", a)
    W = np.asarray(W, dtype=float)
    a = _vec("a", a)
    if W.shape[-2:] != (a.size, a.size):
        raise ValueError(f"W must have shape (..., {a.size}, {a.size}), got {W.shape}")
    WA = W * a
    AW = a[:, None] * W
    W2 = W @ W
    return WA + AW - 0.5 * (a[:, None] * W2 + W2 * a + 2 * WA @ W)


def growth_suppression_noise(W, a):
    """Growth, suppression and noise terms ``(G, S, N)`` of Eq. (4.3) / (D.4)-(D.6), each of shape ``(..., d,
    d)``.

    ``G_ij = w_ij (a_i + a_j)``;
    ``S_ij = 1/2 w_ij [w_ii (3 a_i + a_j) + 1{i != j} w_jj (3 a_j + a_i)]``;
    ``N_ij = 1/2 sum_{k != i, j} w_ki w_kj (a_i + a_j + 2 a_k)``.
    For a symmetric ``W``, ``G - S - N`` equals :func:`w_update_d2`.
    """
    check_array("W", W, finite=False)
    check_array("a", a)
    W = np.asarray(W, dtype=float)
    a = _vec("a", a)
    d = a.size
    if W.shape[-2:] != (d, d):
        raise ValueError(f"W must have shape (..., {d}, {d}), got {W.shape}")
    ai, aj = a[:, None], a[None, :]
    diag = np.diagonal(W, axis1=-2, axis2=-1)
    wii = diag[..., :, None]
    wjj = diag[..., None, :]
    offdiag = 1.0 - np.eye(d)
    G = W * (ai + aj)
    S = 0.5 * W * (wii * (3 * ai + aj) + offdiag * wjj * (3 * aj + ai))
    # full sum over k of w_ki w_kj (a_i + a_j + 2 a_k), then remove k = i and k = j
    WtW = np.swapaxes(W, -1, -2) @ W
    WtAW = np.swapaxes(W, -1, -2) @ (a[:, None] * W)
    full = 0.5 * ((ai + aj) * WtW + 2 * WtAW)
    k_eq_i = 0.5 * wii * W * (3 * ai + aj)  # k = i term: w_ii w_ij (a_i + a_j + 2 a_i)
    k_eq_j = 0.5 * W * wjj * (ai + 3 * aj) * offdiag  # k = j term (only when j != i)
    N = full - k_eq_i - k_eq_j
    return G, S, N


def stage_sequence(run: SymmetricRun, prominence: float = 1e-3) -> dict:
    """Times of the growth-suppression cycle of an ``s = 2`` run (Fig. 5), per seed.

    The concepts are labelled so that ``a_strong > a_weak``.

    Returns:
        dict of ``(B,)`` arrays: ``rise_strong`` / ``rise_weak`` (first time the major entry reaches 1/2),
        ``minor_peak`` (time of the largest value of the minor ``w_12``), ``loss_peak`` (time of the first
        OOD-loss bump with the given prominence, ``nan`` if none) and ``in_order`` (``rise_strong < minor_peak <
        loss_peak < rise_weak``, the order of Sec. 4.2).
    """
    check_instance("run", run, SymmetricRun)
    s = run.mu.size
    if s != 2:
        raise ValueError(f"stage_sequence needs s = 2 concepts, got s = {s}")


    strong, weak = (0, 1) if run.a[0] > run.a[1] else (1, 0)
    t = run.time
    rise_strong = hitting_time(t, run.entry(strong, strong), 0.5, direction="up", interpolate=False,
                               never=np.inf)
    rise_weak = hitting_time(t, run.entry(weak, weak), 0.5, direction="up", interpolate=False, never=np.inf)
    minor = run.entry(0, 1)
    minor_peak = t[np.nanargmax(np.abs(minor), axis=0)]
    loss = run.ood_loss().T
    peaks = peak_positions(loss, prominence)
    loss_peak = np.array([t[p[0]] if len(p) else np.nan for p in peaks])
    with np.errstate(invalid="ignore"):
        in_order = (rise_strong < minor_peak) & (minor_peak < loss_peak) & (loss_peak < rise_weak)
    return dict(
        rise_strong=rise_strong,
        rise_weak=rise_weak,
        minor_peak=minor_peak,
        loss_peak=loss_peak,
        in_order=in_order,
    )


def plateau_stats(run: SymmetricRun, i: int = 0, level: float = 0.5) -> dict:
    """Plateau of a suppressed major entry ``w_ii`` (the failure mode of Fig. 10), per seed.

    Linearising Eq. (4.3) around ``w_ii = 0`` with the other concepts learned gives ``d w_ii / dt ~ 2 a_i w_ii``,
    hence ``length ~ log(1 / w_min) / (2 a_i) + const`` (:func:`plateau_slope_theory`).

    Returns:
        dict of ``(B,)`` arrays: ``w_min`` (smallest value of ``w_ii``), ``t_min`` (when), ``t_escape`` (first
        time after ``t_min`` at which ``w_ii >= level``; ``inf`` if not within the run) and ``length``
        (``t_escape - t_min``).
    """
    check_instance("run", run, SymmetricRun)
    check_int("i", i, minimum=0, maximum=run.W.shape[-1] - 1)
    check_range("level", level, 0, 1, lo_open=True)
    t = run.time
    w = run.entry(i, i)
    kmin = np.nanargmin(w, axis=0)
    w_min = w[kmin, np.arange(w.shape[1])]
    after = (np.arange(w.shape[0])[:, None] >= kmin[None, :]) & (w >= level)
    k_esc = np.argmax(after, axis=0)
    t_escape = np.where(after.any(axis=0), t[k_esc], np.inf)
    return dict(w_min=w_min, t_min=t[kmin], t_escape=t_escape, length=t_escape - t[kmin])


def plateau_slope_theory(a, i: int = 0) -> float:
    """Predicted slope ``d length / d log(1/w_ii,min) = 1 / (2 a_i)`` of the Fig. 10 plateau (time units of
    Eq. 4.3)."""
    a = _vec("a", a)
    check_int("i", i, minimum=0, maximum=a.size - 1)
    if a[i] <= 0:
        raise ValueError(f"a[{i}] must be > 0, got {a[i]}")
    return 1.0 / (2.0 * a[i])


@renamed_arguments(eta="lr")
def check_assumptions(
    a, W0, lr: float, *, P: float = 2.0, K: float = 20.0, kappa: float = 1.2, C: float = 2.0
) -> dict:
    """Check Assumptions D.1-D.5 of App. D.1 for one initial Jacobian ``W0`` and given constants.

    ``alpha = min a``, ``gamma = max a / alpha`` (D.1 needs every ``a_k > 0``, i.e. ``d = s``),
    ``omega = min |w_ij(0)|``, ``beta = max |w_ij(0)| / omega``. Indices follow App. D (``a`` sorted
    ascending,
    ``i > j`` means a stronger concept ``i``); we sort ``a`` internally.

    Returns:
        dict with ``D.1``, ``D.2``, ``D.3``, ``D.4``, ``D.5`` (bool: whether that assumption holds), ``all``
        (all five hold) and ``constants`` (the dict of ``alpha, gamma, omega, beta, P, K, kappa, C`` used).
    """
    check_array("W0", W0)
    a = _vec("a", a)
    W0 = np.asarray(W0, dtype=float)
    check_shape("W0", W0, (a.size, a.size))
    check_positive("lr", lr)
    check_positive("P", P)
    check_positive("K", K)
    check_positive("kappa", kappa)
    check_positive("C", C)
    d = a.size
    res = {"constants": {}}
    alpha = float(a.min())
    absw = np.abs(W0)
    omega = float(absw.min())
    ok1 = alpha > 0 and omega > 0
    gamma = float(a.max() / alpha) if alpha > 0 else np.inf
    beta = float(absw.max() / omega) if omega > 0 else np.inf
    gamma, beta = max(gamma, 1.0 + 1e-12), max(beta, 1.0 + 1e-12)  # D.1 asks gamma, beta > 1
    res["D.1"] = bool(ok1)
    res["D.2"] = bool(K >= 20 and lr <= 1.0 / (9 * K * gamma * alpha)) if ok1 else False
    res["D.3"] = bool(P * omega * beta <= 0.4) if ok1 else False
    if ok1:
        bound = min(min(kappa - 1, 1 - kappa**-0.5) / (P * K * gamma * d * beta**2), 1 / math.sqrt(2 * beta))
        res["D.4"] = bool(omega <= bound and 1.1 < kappa <= 1 + 0.5 * K / C and P >= 2)
        srt = np.sort(a)
        pairs = [(srt[i], srt[j]) for i in range(d) for j in range(i)]
        pbw = P * beta * omega
        if pbw < 1:
            rhs = math.log(P) / (10 * kappa**2 * math.log(1 / pbw) + math.log(P * beta))
            ok5a = all((ai + aj) / (2 * ai) <= rhs for ai, aj in pairs)
        else:
            ok5a = False
        ok5b = all(ai - 3 * aj >= alpha / C for ai, aj in pairs) and C > 1
        res["D.5"] = bool(ok5a and ok5b)
        res["constants"] = dict(alpha=alpha, gamma=gamma, omega=omega, beta=beta, P=P, K=K, kappa=kappa, C=C)
    else:
        res["D.4"] = res["D.5"] = False
    res["all"] = all(res[k] for k in ("D.1", "D.2", "D.3", "D.4", "D.5"))
    return res


@renamed_arguments(eta="lr")
def assumptions_satisfiable(a, W0, lr: float) -> dict:
    """Search the free constants ``(P, K, kappa, C)`` of D.1-D.5 on a grid; report which assumptions can hold.

    Returns:
        dict with ``D.1``, ``D.2``, ``D.3``, ``D.4``, ``D.5`` (bool: whether SOME grid point satisfies that
        assumption) and ``all`` (whether one grid point satisfies all five at once).
    """
    check_array("W0", W0)
    names = ("D.1", "D.2", "D.3", "D.4", "D.5")
    any_ok = dict.fromkeys(names, False)
    all_ok = False
    for P, K, kappa, C in itertools.product(
        np.geomspace(2, 1e300, 61), (20.0, 40.0, 100.0), (1.15, 1.3, 1.6, 2.0), (1.01, 1.5, 3.0, 10.0)
    ):
        r = check_assumptions(a, W0, lr, P=P, K=K, kappa=kappa, C=C)
        for n in names:
            any_ok[n] |= r[n]
        all_ok |= r["all"]
    any_ok["all"] = all_ok
    return any_ok


# ----------------------------------------------------------------------------------------------------------------
# Sec. 4.2.2 and App. E.1: reading single runs
# ----------------------------------------------------------------------------------------------------------------


def illusion_fraction(run: SymmetricRun, loss, bump, prominence: float):
    """The "illusion of generalising" (Sec. 4.2.2): among the runs with a loss bump, the fraction whose first loss
    minimum (before the first peak) is carried by the minor entry, ``|w_12 mu_2| > |w_11 mu_1|``.

    ``loss`` (B, T) is the OOD loss of the ``B`` runs of ``run`` at its recorded times, ``bump`` (B,) bool marks
    the runs with a bump, ``prominence`` is the peak prominence used to find it. Returns a
    :class:`lib.stats.Frequency`.
    """
    loss = np.asarray(loss, dtype=float)
    bump = np.asarray(bump, dtype=bool)
    check_shape("bump", bump, (loss.shape[0],))
    check_positive("prominence", prominence)
    carried = []
    for b in np.nonzero(bump)[0]:
        pk = peak_positions(loss[b], prominence)[0][0]
        kmin = int(np.argmin(loss[b, : pk + 1]))
        carried.append(abs(run.W[kmin, b, 0, 1] * run.mu[1]) > abs(run.W[kmin, b, 0, 0] * run.mu[0]))
    return frequency(np.array(carried, dtype=bool))


def major_after_minor(run: SymmetricRun, b: int) -> bool:
    """App. E.1 on run ``b``: for each pair of consecutive concepts (stronger ``p``, next ``q``, by the rates
    ``a``), the minor entry ``w_pq`` peaks before the major ``w_qq`` first reaches 1/2."""
    check_instance("run", run, SymmetricRun)
    check_int("b", b, minimum=0, maximum=run.W.shape[1] - 1)
    order = np.argsort(-run.a[: run.mu.size])
    t = run.time
    ok = []
    for p, q in zip(order[:-1], order[1:]):
        t_peak = t[np.argmax(np.abs(run.W[:, b, p, q]))]
        t_rise = hitting_time(t, run.W[:, b, q, q], 0.5, direction="up", interpolate=False, never=np.inf)
        ok.append(t_peak < t_rise)
    return all(ok)


def deep_linear_population_run(mu, sigma, d: int, depth: int, width: int, *, n_seeds: int, lr: float,
                               steps: int) -> dict:
    """Figs 2(c), 3 and 13-14: exact GD on the population loss (4.1) of ``n_seeds`` bias-free deep linear networks
    ``R^d -> R^d`` (``depth`` layers of width ``width``, PyTorch-default initialisation, model ``k`` from seed
    ``k``) on unrotated SIM data, recorded at :func:`default_record_steps`.

    Returns:
        dict with ``steps`` (R,) the recorded steps, ``output`` (R, n_seeds, d) at the OOD point, ``ood_loss``
        and ``train_loss`` (R, n_seeds), ``diverged`` (n_seeds,) bool.
    """
    check_int("d", d, minimum=1)  # named here, not as the helper's d_in / K
    check_int("n_seeds", n_seeds, minimum=1)
    ws, _ = init_deep_linear(d, d, depth, width, K=n_seeds, seed=0)
    _, A = population_moments(mu, sigma, d)
    xh = ood_point(mu, d)
    res = population_gd_deep_linear(ws, A, lr=lr, steps=steps, x_eval=xh, record_every=default_record_steps(steps),
                                    record_W=False)
    out = res["outputs"][:, :, 0].transpose(1, 0, 2)
    return dict(steps=res["step"], output=out, ood_loss=0.5 * np.sum((out - xh) ** 2, axis=-1),
                train_loss=res["loss"].T, diverged=res["diverged"])


def deep_linear_sgd_run(mu, sigma, d: int, depth: int, width: int, *, n_seeds: int, lr: float, steps: int,
                        batch_size: int = 128, n_per_cluster: int = 5000, seed: int = 0, device="cpu") -> dict:
    """Sec. 3.3 / App. F.1 under SGD: the networks of :func:`deep_linear_population_run` (bias-free, PyTorch-default
    initialisation, model ``k`` from seed ``seed + k``) trained by minibatch SGD on *sampled* unrotated SIM data.

    Run ``k`` trains on its own training set (``n_per_cluster`` points per cluster, data seed ``seed + k``) and is
    evaluated on a held-out set drawn from the same clusters (data seed ``seed + k + HELDOUT_SEED_OFFSET``). The
    recorded outputs at the basis vectors give the end-to-end map ``W`` of each linear network, so the loss on a
    whole sample ``X`` is exact: ``1/2 tr[(W - I) S (W - I)^T]`` with ``S = X^T X / N``; the OOD loss is
    ``1/2 ||W x_hat - x_hat||^2``. Recorded at :func:`default_record_steps`.

    ``device``: where the networks train (:func:`~lib.parts.concept_learning.linear_gd.sgd_mlp_batched`).

    Returns:
        dict with ``steps`` (R,) the recorded steps, ``output`` (R, n_seeds, d) at the OOD point, ``ood_loss``,
        ``train_loss`` (on the whole training sample) and ``heldout_loss`` (R, n_seeds), ``diverged`` (n_seeds,)
        bool.
    """
    check_int("d", d, minimum=1)
    check_int("n_seeds", n_seeds, minimum=1)
    check_int("n_per_cluster", n_per_cluster, minimum=1)
    check_seed("seed", seed)
    seeds = [int(seed) + k for k in range(n_seeds)]
    train = sim_gaussian_mixture_batch(mu, sigma, d, n_per_cluster, seeds=seeds)["X"]
    held = sim_gaussian_mixture_batch(mu, sigma, d, n_per_cluster,
                                      seeds=[s + HELDOUT_SEED_OFFSET for s in seeds])["X"]
    ws, _ = init_deep_linear(d, d, depth, width, K=n_seeds, seed=seed)
    res = sgd_mlp_batched(train, weights=ws, lr=lr, steps=steps, batch_size=batch_size, x_eval=np.eye(d),
                          record_every=default_record_steps(steps), seed=seed, device=device)
    # outputs (K, R, d, d): row j is W e_j, so W = outputs^T
    R = np.swapaxes(res["outputs"], -1, -2) - np.eye(d)

    def sample_loss(X):
        S = np.einsum("kni,knj->kij", X, X) / X.shape[1]
        return 0.5 * np.einsum("krij,kjl,kril->kr", R, S, R).T

    xh = ood_point(mu, d)
    out = (R @ xh + xh).transpose(1, 0, 2)
    return dict(steps=res["step"], output=out, ood_loss=0.5 * np.sum((out - xh) ** 2, axis=-1),
                train_loss=sample_loss(train), heldout_loss=sample_loss(held), diverged=np.asarray(res["diverged"]))


def bump_windows(curve, prominence: float) -> list[list[tuple[int, int]]]:
    """The rising stretches of each curve's bumps: for every peak of prominence ``>= prominence``
    (:func:`lib.curves.peak_positions`), the pair ``(trough, peak)`` of indices, where ``trough`` is the minimum of
    the curve between the previous peak (or the start) and this peak.

    Args:
        curve: shape ``(T,)`` or ``(B, T)`` (e.g. the OOD loss per seed); prominence: as for ``peak_positions``.

    Returns:
        one list of ``(trough, peak)`` pairs per curve (empty for a curve without a bump).
    """
    check_array("curve", curve)
    c = np.asarray(curve, dtype=float)
    curves = c[None] if c.ndim == 1 else c
    out = []
    for row, peaks in zip(curves, peak_positions(c, prominence)):
        wins, start = [], 0
        for p in peaks:
            wins.append((start + int(np.argmin(row[start : p + 1])), int(p)))
            start = int(p)
        out.append(wins)
    return out
