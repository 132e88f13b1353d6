"""Deep and symmetric linear models on the structured identity mapping (SIM) task (Yang et al. 2025, Sec. 4.2,
App. D-E).

The symmetric two-layer model is ``f(U; x) = U U^T x`` with ``U`` of shape ``(d, d')``; its input-output
Jacobian is
``W = U U^T``. On the SIM task the population loss of a linear map ``W`` is (Eq. 4.1)

    L(W) = 1/2 || (W - I) A^{1/2} ||_F^2,   A = diag(a),   a_p = sigma_p^2 + mu_p^2 / s  (p <= s),  0
    otherwise.

We run exact gradient descent on ``U`` (never the W-space map (D.2) directly, which can leave the cone of PSD
matrices
and blow up). With the step ``U <- U - (eta / 2) grad_U L`` the induced update of ``W`` equals (D.2) with step
``eta``
up to ``O(eta^2)``, so the time ``t = eta * k`` after ``k`` steps is the time of Eq. (4.3).

Contents
* data moments: :func:`second_moment`; entry groups of Fig. 4: :func:`entry_groups`;
* the batched run: :func:`init_symmetric`, :func:`run_symmetric` -> :class:`SymmetricRun`;
* Eq. (4.3) / (D.2): :func:`growth_suppression_noise`, :func:`w_update_d2`;
* Fig. 5 stage sequence: :func:`stage_sequence`; Fig. 10 plateau: :func:`plateau_stats`;
* assumptions D.1-D.5: :func:`check_assumptions`, :func:`assumptions_satisfiable`;
* deep linear networks on the population loss (Fig. 2(c), 3, 13, 14): :func:`deep_linear_population_gd`;
* batched MLP SGD on samples (Fig. 7, 11, 12): :func:`sgd_mlp_batched`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ..config import check_in, check_int, check_positive, check_shape

# ------------------------------------------------------------------------------------------------------------
# Paper settings (named configurations; the chapter says which one it runs)
# ------------------------------------------------------------------------------------------------------------

#: Fig. 5: s = 2, "all entries of W initialised positive"; d, d', mu, eta and init scale are not given (our
#: guesses).
PAPER_FIG5 = dict(
    mu=(1.0, 2.0), sigma=(0.05, 0.05), d=2, d_prime=2, tau=0.05, positive=True, eta=0.01, steps=6000
)
#: Fig. 8 (triple descent) and Fig. 9 (quadruple descent): mu, sigma and d = s from the captions; eta, tau, d'
#: guessed.
PAPER_FIG8 = dict(
    mu=(1.0, 1.5, 2.2), sigma=(0.05, 0.05, 0.05), d=3, d_prime=3, tau=0.05, eta=0.01, steps=20000
)
PAPER_FIG9 = dict(
    mu=(1.0, 1.5, 2.2, 2.7), sigma=(0.05, 0.05, 0.05, 0.5), d=4, d_prime=4, tau=0.05, eta=0.01, steps=20000
)
#: Fig. 10 (failure mode): mu, sigma, d = s from the caption.
PAPER_FIG10 = dict(
    mu=(0.7, 1.7, 3.0), sigma=(0.05, 0.05, 0.05), d=3, d_prime=3, tau=0.05, eta=0.01, steps=20000
)
#: Fig. 2(c) / 3: 4-layer linear MLPs, width 64, d = 64 (high dim) and d = 2 (low dim); SGD lr 0.1, batch 128,
#: 40 epochs of 5000 samples per cluster (App. F.1); mu, sigma not given (our guess below).
PAPER_FIG2C = dict(
    mu=(1.0, 2.0),
    sigma=(0.05, 0.05),
    dims=(64, 2),
    depth=4,
    width=64,
    lr=0.1,
    batch=128,
    epochs=40,
    n_per_cluster=5000,
)
#: Fig. 7: 2-layer ReLU MLP, mu = (1, 2, 3, 4), sigma = 1/2 each; d = 64, width 64, SGD lr 0.1, batch 128
#: (F.1).
PAPER_FIG7 = dict(
    mu=(1.0, 2.0, 3.0, 4.0),
    sigma=(0.5, 0.5, 0.5, 0.5),
    d=64,
    width=64,
    lr=0.1,
    batch=128,
    n_per_cluster=5000,
    epochs=(1, 3, 5),
)
#: Fig. 13 / 14: 3-layer linear, 3 hidden units, d = 3, s = 2, sigma = 0.05, not rotated; mu = (1, 2) and (2,
#: 4).
PAPER_FIG13 = dict(
    mus=((1.0, 2.0), (2.0, 4.0)),
    sigma=(0.05, 0.05),
    d=3,
    depth=3,
    width=3,
    lr=0.1,
    batch=128,
    epochs=40,
    n_per_cluster=5000,
)


# ------------------------------------------------------------------------------------------------------------
# Data moments and entry groups
# ------------------------------------------------------------------------------------------------------------


def _vec(name, value, length=None) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a non-empty 1-D finite vector, got {value!r}")
    if length is not None and arr.size != length:
        raise ValueError(f"{name} must have length {length}, got {arr.size}")
    return arr


def second_moment(mu, sigma, d: int) -> np.ndarray:
    """Diagonal ``a`` of the population second moment ``A`` of the SIM data (Eq. 4.1 / C.13).

    ``a_p = sigma_p^2 + mu_p^2 / s`` for ``p <= s = len(mu)`` and ``a_p = 0`` for ``p > s``. Shape ``(d,)``.
    """
    mu = _vec("mu", mu)
    sigma = _vec("sigma", sigma, len(mu))
    s = len(mu)
    check_int("d", d, minimum=s)
    if np.any(mu <= 0) or np.any(sigma < 0):
        raise ValueError(f"mu must be > 0 and sigma >= 0, got mu={mu}, sigma={sigma}")
    a = np.zeros(d)
    a[:s] = sigma**2 + mu**2 / s
    return a


def test_point(mu, d: int) -> np.ndarray:
    """The OOD test point ``x_hat = sum_p mu_p e_p`` (Sec. 2.1), shape ``(d,)``."""
    mu = _vec("mu", mu)
    check_int("d", d, minimum=len(mu))
    x = np.zeros(d)
    x[: len(mu)] = mu
    return x


def entry_groups(s: int, d: int) -> dict:
    """Masks of the Jacobian entries of Fig. 4.

    Returns a dict with boolean ``(d, d)`` masks ``"major"`` (first ``s`` diagonal entries), ``"minor"``
    (off-diagonal entries in the first ``s`` rows or columns), ``"irrelevant"`` (the rest) and ``"groups"``, a
    list of ``s`` masks: group ``p`` holds the minor entries of row ``p`` or column ``p`` (each minor entry
    between
    two informative indices belongs to two groups).
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


# ------------------------------------------------------------------------------------------------------------
# Symmetric two-layer model: batched GD on U
# ------------------------------------------------------------------------------------------------------------


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
    check_int("seed", seed, minimum=0)
    U = (
        np.stack([np.random.default_rng(seed + k).standard_normal((d, d_prime)) for k in range(n_seeds)])
        * tau
    )
    return np.abs(U) if positive else U


def default_record_steps(steps: int, n_log: int = 300, n_lin: int = 200) -> np.ndarray:
    """Recording grid: 0, ``n_log`` log-spaced and ``n_lin`` linearly spaced steps in ``[1, steps]``
    (unique)."""
    check_int("steps", steps, minimum=1)
    grid = np.concatenate([[0], np.geomspace(1, steps, n_log), np.linspace(1, steps, n_lin)])
    return np.unique(np.round(grid).astype(int))


@dataclass
class SymmetricRun:
    """A batch of GD runs of the symmetric two-layer model.

    Attributes:
        steps: ``(R,)`` recorded GD steps; ``time = eta * steps`` is the time of Eq. (4.3).
        W: ``(R, B, d, d)`` Jacobians ``U U^T`` at the recorded steps (``B`` seeds).
        a: ``(d,)`` data second moment; mu: ``(s,)`` signal strengths; eta: step.
        diverged: ``(B,)`` True where a run produced a non-finite value.
    """

    steps: np.ndarray
    W: np.ndarray
    a: np.ndarray
    mu: np.ndarray
    eta: float
    diverged: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    @property
    def time(self) -> np.ndarray:
        return self.eta * self.steps

    @property
    def x_hat(self) -> np.ndarray:
        return test_point(self.mu, self.W.shape[-1])

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
            self.steps, self.W[:, b : b + 1], self.a, self.mu, self.eta, self.diverged[b : b + 1]
        )


def run_symmetric(a, mu, U0, eta: float, steps: int, record_steps=None) -> SymmetricRun:
    """Batched GD on ``U`` for the symmetric two-layer model on the SIM population loss (Eq. 4.1).

    Update: ``U <- U - (eta / 2) * [(W - I) A + A (W - I)] U`` with ``W = U U^T`` (this is ``-(eta/2) grad_U
    L``),
    so that ``W`` follows (D.2) with step ``eta`` to first order.

    Args:
        a: ``(d,)`` second moment (see :func:`second_moment`); mu: ``(s,)`` signal strengths (for ``x_hat``).
        U0: ``(B, d, d')`` initial factors (see :func:`init_symmetric`).
        eta: step, > 0; steps: number of GD steps, >= 1.
        record_steps: increasing integers in ``[0, steps]`` (default :func:`default_record_steps`).

    Returns:
        a :class:`SymmetricRun`; diverging seeds are flagged in ``diverged`` (their values become NaN).
    """
    a = _vec("a", a)
    mu = _vec("mu", mu)
    U = np.array(U0, dtype=float, copy=True)
    if U.ndim != 3 or U.shape[1] != a.size:
        raise ValueError(f"U0 must have shape (B, d={a.size}, d'), got {U.shape}")
    check_positive("eta", eta)
    check_int("steps", steps, minimum=1)
    rec = default_record_steps(steps) if record_steps is None else np.asarray(record_steps, dtype=int)
    if rec.ndim != 1 or rec.size == 0 or np.any(np.diff(rec) <= 0) or rec[0] < 0 or rec[-1] > steps:
        raise ValueError(f"record_steps must be strictly increasing integers in [0, {steps}]")
    B, d, _ = U.shape
    eye = np.eye(d)
    out = np.empty((rec.size, B, d, d))
    r = 0
    half_eta = 0.5 * eta
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
    return SymmetricRun(rec, out, a, mu, float(eta), diverged)


# ------------------------------------------------------------------------------------------------------------
# Eq. (4.3) / (D.2)
# ------------------------------------------------------------------------------------------------------------


def w_update_d2(W, a) -> np.ndarray:
    """Right-hand side of (D.2): ``W A + A W - 1/2 [A W^2 + W^2 A + 2 W A W]``, shape ``(..., d, d)``."""
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


# ------------------------------------------------------------------------------------------------------------
# Stage detection (Fig. 5, 8, 9) and the failure-mode plateau (Fig. 10)
# ------------------------------------------------------------------------------------------------------------


def first_crossing(time, curve, level: float) -> np.ndarray:
    """First time at which ``curve >= level``; ``inf`` if never. ``curve`` ``(R,)`` or ``(R, B)`` -> scalar /
    ``(B,)``."""
    time = np.asarray(time, dtype=float)
    c = np.asarray(curve, dtype=float)
    if c.shape[0] != time.shape[0]:
        raise ValueError(f"curve must have {time.shape[0]} rows (one per time), got shape {c.shape}")
    hit = c >= level
    idx = np.argmax(hit, axis=0)
    return np.where(hit.any(axis=0), time[idx], np.inf)


def stage_sequence(run: SymmetricRun, prominence: float = 1e-3) -> dict:
    """Times of the growth-suppression cycle of an ``s = 2`` run (Fig. 5), per seed.

    With the concepts labelled so that ``a_strong > a_weak``, returns a dict of ``(B,)`` arrays:
    ``rise_strong`` / ``rise_weak`` (first time the major entry reaches 1/2), ``minor_peak`` (time of the
    largest value of the minor ``w_12``), ``loss_peak`` (time of the first OOD-loss bump with the given
    prominence,
    ``nan`` if none) and ``in_order`` (``rise_strong < minor_peak < loss_peak < rise_weak``, the order of Sec.
    4.2).
    """
    s = run.mu.size
    if s != 2:
        raise ValueError(f"stage_sequence needs s = 2 concepts, got s = {s}")
    from ..analysis import peak_positions

    strong, weak = (0, 1) if run.a[0] > run.a[1] else (1, 0)
    t = run.time
    rise_strong = first_crossing(t, run.entry(strong, strong), 0.5)
    rise_weak = first_crossing(t, run.entry(weak, weak), 0.5)
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

    Returns a dict of ``(B,)`` arrays: ``w_min`` (smallest value of ``w_ii``), ``t_min`` (when), ``t_escape``
    (first time after ``t_min`` at which ``w_ii >= level``; ``inf`` if not within the run) and ``length =
    t_escape - t_min``. Linearising Eq. (4.3) around ``w_ii = 0`` with the other concepts learned gives
    ``d w_ii / dt ~ 2 a_i w_ii``, hence ``length ~ log(1 / w_min) / (2 a_i) + const``
    (:func:`plateau_slope_theory`).
    """
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


# ------------------------------------------------------------------------------------------------------------
# Assumptions D.1-D.5
# ------------------------------------------------------------------------------------------------------------


def check_assumptions(
    a, W0, eta: float, *, P: float = 2.0, K: float = 20.0, kappa: float = 1.2, C: float = 2.0
) -> dict:
    """Check Assumptions D.1-D.5 of App. D.1 for one initial Jacobian ``W0`` and given constants.

    ``alpha = min a``, ``gamma = max a / alpha`` (D.1 needs every ``a_k > 0``, i.e. ``d = s``),
    ``omega = min |w_ij(0)|``, ``beta = max |w_ij(0)| / omega``. Indices follow App. D (``a`` sorted
    ascending,
    ``i > j`` means a stronger concept ``i``); we sort ``a`` internally.

    Returns a dict ``{"D.1": bool, ..., "D.5": bool, "all": bool, "constants": {...}}``.
    """
    a = _vec("a", a)
    W0 = np.asarray(W0, dtype=float)
    check_shape("W0", W0, (a.size, a.size))
    check_positive("eta", eta)
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
    res["D.2"] = bool(K >= 20 and eta <= 1.0 / (9 * K * gamma * alpha)) if ok1 else False
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


def assumptions_satisfiable(a, W0, eta: float) -> dict:
    """Search the free constants ``(P, K, kappa, C)`` of D.1-D.5 on a grid; report which assumptions can hold.

    Returns ``{"D.1": bool, ..., "D.5": bool, "all": bool}`` where each entry says whether SOME grid point
    satisfies
    that assumption, and ``"all"`` whether one grid point satisfies all five at once.
    """
    names = ("D.1", "D.2", "D.3", "D.4", "D.5")
    any_ok = dict.fromkeys(names, False)
    all_ok = False
    for P, K, kappa, C in itertools.product(
        np.geomspace(2, 1e300, 61), (20.0, 40.0, 100.0), (1.15, 1.3, 1.6, 2.0), (1.01, 1.5, 3.0, 10.0)
    ):
        r = check_assumptions(a, W0, eta, P=P, K=K, kappa=kappa, C=C)
        for n in names:
            any_ok[n] |= r[n]
        all_ok |= r["all"]
    any_ok["all"] = all_ok
    return any_ok


# ------------------------------------------------------------------------------------------------------------
# Deep linear networks on the population loss, batched over seeds (Fig. 2(c), 3, 13, 14)
# ------------------------------------------------------------------------------------------------------------


def torch_default_init(shapes, n_models: int, init_scale: float = 1.0, seed: int = 0, bias: bool = False):
    """PyTorch's default ``nn.Linear`` initialisation ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` times
    ``init_scale``.

    Args:
        shapes: list of ``(fan_out, fan_in)``; n_models: batch of independent models (seeds).

    Returns:
        list of float64 tensors ``(n_models, fan_out, fan_in)`` (and, with ``bias``, a second list
        ``(n_models, fan_out)``). Model ``k`` is drawn from ``torch.Generator().manual_seed(seed + k)``.
    """
    import torch

    check_int("n_models", n_models, minimum=1)
    check_positive("init_scale", init_scale)
    check_int("seed", seed, minimum=0)
    Ws = [[] for _ in shapes]
    bs = [[] for _ in shapes]
    for k in range(n_models):
        g = torch.Generator().manual_seed(seed + k)
        for li, (fo, fi) in enumerate(shapes):
            bound = init_scale / math.sqrt(fi)
            Ws[li].append((torch.rand(fo, fi, generator=g, dtype=torch.float64) * 2 - 1) * bound)
            bs[li].append((torch.rand(fo, generator=g, dtype=torch.float64) * 2 - 1) * bound)
    Ws = [torch.stack(w) for w in Ws]
    if bias:
        return Ws, [torch.stack(b) for b in bs]
    return Ws


def deep_linear_population_gd(
    mu,
    sigma,
    d: int,
    widths,
    *,
    n_seeds: int,
    lr: float,
    steps: int,
    init_scale: float = 1.0,
    seed: int = 0,
    record_steps=None,
) -> dict:
    """Full-batch GD of bias-free deep linear networks on the SIM population loss (Eq. 4.1), batched over
    seeds.

    The network is ``x -> W_L ... W_1 x`` with hidden widths ``widths`` (depth ``len(widths) + 1``), PyTorch
    default
    initialisation times ``init_scale`` (input fan-in ``d``). Only the first ``s`` columns of ``W_1`` receive
    gradient (``A`` has rank ``s``), so only they are simulated. The data are not rotated (a rotation leaves
    the
    population dynamics unchanged up to the rotation of the initial weights).

    Returns a dict with ``steps`` ``(R,)``, ``W`` ``(R, B, d, s)`` (first ``s`` columns of the end-to-end
    matrix),
    ``ood_loss`` ``(R, B)`` (``1/2 ||W x_hat - x_hat||^2``), ``train_loss`` ``(R, B)``, ``output`` ``(R, B,
    d)``
    and ``diverged`` ``(B,)``.
    """
    import torch

    mu = _vec("mu", mu)
    s = mu.size
    a = second_moment(mu, sigma, d)
    widths = [int(w) for w in widths]
    if any(w < 1 for w in widths):
        raise ValueError(f"widths must be positive integers, got {widths}")
    check_positive("lr", lr)
    check_int("steps", steps, minimum=1)
    rec = default_record_steps(steps) if record_steps is None else np.asarray(record_steps, dtype=int)
    dims = [d] + widths + [d]
    shapes = [(dims[i + 1], dims[i]) for i in range(len(dims) - 1)]
    Ws = torch_default_init(shapes, n_seeds, init_scale, seed)
    Ws[0] = Ws[0][:, :, :s].contiguous()
    a_s = torch.tensor(a[:s], dtype=torch.float64)
    target = torch.zeros(d, s, dtype=torch.float64)
    target[:s, :s] = torch.eye(s, dtype=torch.float64)
    R = rec.size
    out_W = np.empty((R, n_seeds, d, s))
    tr_loss = np.empty((R, n_seeds))
    r = 0
    L = len(Ws)
    frozen = torch.zeros(n_seeds, dtype=torch.bool)
    for k in range(steps + 1):
        prefix = [None] * L  # prefix[l] = W_{l-1} ... W_1 (None for l = 0)
        P = None
        for li in range(L):
            prefix[li] = P
            P = Ws[li] if P is None else Ws[li] @ P
        res = P - target  # (B, d, s)
        G = res * a_s  # dL/dP for L = 1/2 sum_p a_p ||P e_p - e_p||^2
        per_seed = 0.5 * (G * res).sum(dim=(1, 2))
        frozen |= ~torch.isfinite(per_seed) | (per_seed > 1e8)
        if r < R and rec[r] == k:
            out_W[r] = P.numpy()
            tr_loss[r] = per_seed.numpy()
            r += 1
            if r == R:
                break
        keep = (~frozen).to(torch.float64)[:, None, None]
        back = G  # (W_L ... W_{l+1})^T G, thin: (B, n_l, s)
        grads = [None] * L
        for li in range(L - 1, -1, -1):
            grads[li] = back if prefix[li] is None else back @ prefix[li].transpose(1, 2)
            back = Ws[li].transpose(1, 2) @ back
        for li in range(L):
            Ws[li] = Ws[li] - lr * keep * torch.nan_to_num(grads[li], nan=0.0, posinf=0.0, neginf=0.0)
    output = out_W @ mu
    xh = np.zeros(d)
    xh[:s] = mu
    ood = 0.5 * np.sum((output - xh) ** 2, axis=-1)
    diverged = frozen.numpy() | ~np.isfinite(ood).all(axis=0)
    return dict(steps=rec, W=out_W, ood_loss=ood, train_loss=tr_loss, output=output, diverged=diverged)


# ------------------------------------------------------------------------------------------------------------
# Batched MLP SGD on SIM samples (Fig. 7, 11, 12)
# ------------------------------------------------------------------------------------------------------------


def sim_samples(
    mu, sigma, d: int, n_per_cluster: int, *, rotate: bool = True, seed: int = 0, origin_cluster: bool = False
):
    """SIM training data (Sec. 2.1, App. F.1): clusters ``N(mu_p e_p, diag(sigma)^2)`` (noise in the first
    ``s``
    coordinates only), optionally a cluster at 0, then an optional random rotation ``Q``.

    Returns ``X`` ``(n_clusters * n_per_cluster, d)`` and ``Q`` ``(d, d)`` (``x_rotated = Q x``).
    """
    mu = _vec("mu", mu)
    sigma = _vec("sigma", sigma, mu.size)
    s = mu.size
    check_int("d", d, minimum=s)
    check_int("n_per_cluster", n_per_cluster, minimum=1)
    rng = np.random.default_rng(seed)
    centres = [mu[p] * np.eye(d)[p] for p in range(s)] + ([np.zeros(d)] if origin_cluster else [])
    X = []
    for c in centres:
        z = np.zeros((n_per_cluster, d))
        z[:, :s] = rng.standard_normal((n_per_cluster, s)) * sigma
        X.append(c + z)
    X = np.concatenate(X)
    if rotate:
        Q, R = np.linalg.qr(rng.standard_normal((d, d)))
        Q = Q * np.sign(np.diag(R))
    else:
        Q = np.eye(d)
    return X @ Q.T, Q


def sgd_mlp_batched(
    X,
    eval_points,
    *,
    widths,
    activation: str = "relu",
    bias: bool = True,
    n_models: int = 1,
    lr: float = 0.1,
    batch: int = 128,
    steps: int = 100,
    init_scale: float = 1.0,
    seed: int = 0,
    record_steps=None,
) -> dict:
    """Minibatch SGD on the identity-mapping loss (Eq. 2.1) for ``n_models`` MLPs at once (one per seed).

    The MLP is ``x -> L_{D} o phi o ... o phi o L_1 (x)`` with hidden widths ``widths``, ``phi`` = ReLU or
    identity,
    PyTorch default initialisation times ``init_scale``. Every model draws its own minibatches (epochs are
    reshuffles of ``X``). Returns a dict with ``steps`` ``(R,)``, ``eval_out`` ``(R, B, E, d)`` (outputs at
    the
    ``E`` evaluation points) and ``train_loss`` ``(R, B)`` (loss of the last minibatch).
    """
    import torch

    check_in("activation", activation, ("relu", "linear"))
    X = torch.as_tensor(np.asarray(X, dtype=float))
    Ev = torch.as_tensor(np.asarray(eval_points, dtype=float))
    if X.ndim != 2 or Ev.ndim != 2 or Ev.shape[1] != X.shape[1]:
        raise ValueError(
            f"X must be (n, d) and eval_points (E, d), got {tuple(X.shape)} and {tuple(Ev.shape)}"
        )
    check_positive("lr", lr)
    check_int("batch", batch, minimum=1, maximum=X.shape[0])
    check_int("steps", steps, minimum=1)
    n, d = X.shape
    rec = default_record_steps(steps) if record_steps is None else np.asarray(record_steps, dtype=int)
    dims = [d] + [int(w) for w in widths] + [d]
    shapes = [(dims[i + 1], dims[i]) for i in range(len(dims) - 1)]
    Ws, bs = torch_default_init(shapes, n_models, init_scale, seed, bias=True)
    params = [w.requires_grad_(True) for w in Ws]
    if bias:
        params += [b.requires_grad_(True) for b in bs]
    nl = len(Ws)
    act = torch.relu if activation == "relu" else (lambda z: z)

    def forward(inp):  # inp (B, m, d)
        h = inp
        for li in range(nl):
            h = h @ params[li].transpose(1, 2)
            if bias:
                h = h + params[nl + li][:, None, :]
            if li < nl - 1:
                h = act(h)
        return h

    g = torch.Generator().manual_seed(10_000 + seed)
    per_epoch = n // batch
    perms = None
    R = rec.size
    eval_out = np.empty((R, n_models, Ev.shape[0], d))
    tr = np.full((R, n_models), np.nan)
    last = torch.full((n_models,), float("nan"), dtype=torch.float64)
    r = 0
    Evb = Ev.expand(n_models, -1, -1)
    for k in range(steps + 1):
        if r < R and rec[r] == k:
            with torch.no_grad():
                eval_out[r] = forward(Evb).numpy()
            tr[r] = last.numpy()
            r += 1
            if r == R:
                break
        pos = k % per_epoch
        if pos == 0:
            perms = torch.stack([torch.randperm(n, generator=g) for _ in range(n_models)])
        idx = perms[:, pos * batch : (pos + 1) * batch]
        xb = X[idx]
        loss = 0.5 * ((forward(xb) - xb) ** 2).sum(-1).mean(-1)
        grads = torch.autograd.grad(loss.sum(), params)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                p -= lr * gr
        last = loss.detach()
    return dict(steps=rec, eval_out=eval_out, train_loss=tr)


def hypercube_corners(mu) -> tuple[np.ndarray, np.ndarray]:
    """Corners ``x_hat^(v) = sum_p v_p mu_p e_p`` for ``v in {0,1}^s`` (App. B, Eq. B.1).

    Returns ``V`` ``(2^s, s)`` (0/1 rows in lexicographic order) and ``X`` ``(2^s, s)``.
    """
    mu = _vec("mu", mu)
    V = np.array(list(itertools.product((0, 1), repeat=mu.size)), dtype=int)
    return V, V * mu
