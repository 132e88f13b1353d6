"""Group imbalance: a one-hidden-layer sigmoid network learning from a Gaussian mixture (Li's thesis, ch. 4, app. C).

The data, teacher and model live in :mod:`lib.data.gmm` and :mod:`lib.models.one_hidden`. This module adds the
thesis's auxiliary functions ρ (Def. C.2.2) and Γ (Def. C.2.3), its step size, the local initialisation of the
experiments, the spread V_W of several GD runs and its contraction rate, the curvature of the expected risk at W*,
excess risks per group, the permutation-invariant weight error, the GMM score functions and the tensor
initialisation (Subroutine 1).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from scipy.special import expit

from lib.config import check_array, check_instance, check_int, check_int_array, check_positive, check_range, check_seed
from lib.data.gmm import GaussianMixture, gaussian_mixture, sample_mixture, teacher_probability
from lib.models.one_hidden import cross_entropy_hessian, cross_entropy_risk, newton_critical_point

__all__ = [
    "rho",
    "gamma_function",
    "gmm_step_size",
    "local_initialization",
    "weight_spread",
    "spread_rate",
    "teacher_curvature",
    "asymptotic_excess",
    "excess_risks",
    "permutation_error",
    "draw_problems",
    "local_uniqueness",
    "uniqueness_map",
    "score_moments",
    "tensor_initialization",
]

_Z = np.linspace(-14.0, 14.0, 56001)  # quadrature grid for ρ (wide and fine: φ'(σz) has width 1/σ)


def _dphi(x):
    s = expit(x)
    return s * (1 - s)


def rho(u, sigma):
    """The ρ-function of Def. C.2.2, by quadrature on a fine grid.

    With z_i ~ N(u_i, 1), α_q(i) = E[φ'(σ z_i) z_i^q] and β_q(i) = E[φ'(σ z_i)² z_i^q]; ρ is the smallest of
    (u_j² + 1)(β_0(i) - α_0(i)²) over j ≠ i and of β_2(i) - α_2(i)²/(u_i² + 1).

    Args:
        u: mean vector, 1-D with at least 2 entries.
        sigma: positive scale, a float or a 1-D array (then one value per entry).

    Returns:
        ρ(u, σ) as a float, or an array matching ``sigma``.
    """
    u = check_array("u", u)
    if u.ndim != 1 or u.size < 2:
        raise ValueError(f"u must be a 1-D array with at least 2 entries, got shape {u.shape}")
    sig = np.atleast_1d(check_array("sigma", sigma, finite=False))
    if np.any(~np.isfinite(sig)) or np.any(sig <= 0):
        raise ValueError(f"sigma must be positive, got {sigma!r}")
    # normalised weights, and the variances computed as means of squares about the mean: the differences
    # β0 - α0² and β2 - α2²/(u² + 1) cancel to ~σ⁴ and lose their digits at small σ otherwise
    dens = np.exp(-0.5 * _Z**2)
    dens = dens / dens.sum()
    out = np.empty(sig.size)
    for k, s in enumerate(sig):
        z = u[:, None] + _Z[None, :]  # (d, Q)
        p = _dphi(s * z)
        a0, a2 = (p * dens).sum(1), (p * z**2 * dens).sum(1)
        var0 = ((p - a0[:, None]) ** 2 * dens).sum(1)
        t1 = (u[None, :] ** 2 + 1) * var0[:, None]
        np.fill_diagonal(t1, np.inf)
        c = a2 / (u**2 + 1)
        ez2 = (z**2 * dens).sum(1)
        # β2 - α2²/(u² + 1) = E[z² (φ' - c)²] + c² (u² + 1 - E[z²]), the last term ~0 by quadrature
        t2 = (z**2 * (p - c[:, None]) ** 2 * dens).sum(1) + c**2 * (u**2 + 1 - ez2)
        out[k] = min(t1.min(), t2.min())
    return float(out[0]) if np.ndim(sigma) == 0 else out


def gamma_function(W_star, gmm: GaussianMixture) -> float:
    """The Γ-function of Def. C.2.3 (thesis eq. C.7) for teacher ``W_star`` (d, K) and mixture ``gmm``:

    Γ(Ψ) = Σ_l λ_l / (τ^K κ² η) · ‖Σ_l⁻¹‖⁻¹ / σ_max² · ρ(W*ᵀ μ_l / (δ_K s_l), δ_K s_l),  s_l = ‖Σ_l⁻¹‖^(-1/2),

    with δ_i the singular values of W* (largest first), κ = δ_1/δ_K, η = Π_i δ_i/δ_K, σ_max = max_l ‖Σ_l‖^(1/2),
    σ_min = min_l ‖Σ_l⁻¹‖^(-1/2) and τ = σ_max/σ_min (Section 4.3). Lemma C.3.1 (C.83) bounds the smallest
    eigenvalue of the risk's Hessian near W* below by Ω((1 - 2ε0) Γ(Ψ) σ_max² / K²).
    """
    W = check_array("W_star", W_star, ndim=2)
    check_instance("gmm", gmm, GaussianMixture)
    if W.shape[0] != gmm.dim or W.shape[1] < 2:
        raise ValueError(f"W_star must have shape ({gmm.dim}, K) with K >= 2, got {W.shape}")
    delta = np.linalg.svd(W, compute_uv=False)
    if delta[-1] <= 0:
        raise ValueError("W_star must have full column rank")
    K = W.shape[1]
    kappa, eta = delta[0] / delta[-1], float(np.prod(delta / delta[-1]))
    eig = [np.linalg.eigvalsh(c) for c in gmm.covs]
    s = np.sqrt([e[0] for e in eig])  # ‖Σ_l⁻¹‖^(-1/2), the smallest standard deviation of group l
    sigma_max = np.sqrt(max(e[-1] for e in eig))
    tau = sigma_max / s.min()
    total = 0.0
    for lam, mu, s_l in zip(gmm.lambdas, gmm.means, s):
        scale = delta[-1] * s_l
        total += lam / (tau**K * kappa**2 * eta) * s_l**2 / sigma_max**2 * rho(W.T @ mu / scale, scale)
    return float(total)


def gmm_step_size(gmm: GaussianMixture, c: float = 4.0) -> float:
    """The step size η0 = c / Σ_l λ_l (‖μ_l‖_∞ + ‖Σ_l^{1/2}‖)² of Algorithm 1 (the authors' code uses this form).

    Args:
        gmm: the mixture.
        c: positive constant (the thesis leaves it open).
    """
    check_instance("gmm", gmm, GaussianMixture)
    check_positive("c", c)
    spec = np.sqrt(np.linalg.eigvalsh(gmm.covs)[:, -1])
    return float(c / np.sum(gmm.lambdas * (np.abs(gmm.means).max(1) + spec) ** 2))


def local_initialization(W_star: torch.Tensor, count: int, generator: torch.Generator, eps: float = 0.1):
    """Starts W* + eps ‖W*‖_F G / ‖G‖_F with G standard Gaussian (the experiments' local random init).

    Args:
        W_star: teacher weights (..., d, K).
        count: initialisations per teacher, >= 1 (a new axis before d).
        generator: torch generator.
        eps: relative radius, > 0.

    Returns:
        Tensor of shape (..., count, d, K).
    """
    check_array("W_star", W_star)
    check_instance("generator", generator, torch.Generator)
    check_int("count", count, minimum=1)
    check_positive("eps", eps)
    shape = W_star.shape[:-2] + (count,) + W_star.shape[-2:]
    G = torch.randn(shape, generator=generator, dtype=W_star.dtype)
    G = G / G.flatten(-2).norm(dim=-1)[..., None, None]
    norm = W_star.flatten(-2).norm(dim=-1)[..., None, None, None]
    return W_star[..., None, :, :] + eps * norm * G


def weight_spread(W: torch.Tensor) -> torch.Tensor:
    """V_W = sqrt(mean_m ‖W^(m) - W̄‖_F²) over the initialisation axis (-3) of W (..., M, d, K)."""
    check_array("W", W)
    if W.ndim < 3:
        raise ValueError(f"W must have shape (..., M, d, K), got {tuple(W.shape)}")
    dev = W - W.mean(-3, keepdim=True)
    return (dev**2).sum((-1, -2)).mean(-1).sqrt()


def spread_rate(steps, spreads, fit_from: float = 0.5):
    """Per-step contraction factor v of a spread curve: exp of the slope of log V_W(t) on its late part.

    Args:
        steps: 1-D increasing step indices.
        spreads: V_W at those steps, shape (T, ...).
        fit_from: fraction of the run after which the line is fitted, in [0, 1); points where V_W has
            fallen below 1e-10 of its start (round-off) are left out, and a run that gets there before the
            late part starts is fitted on all its remaining points.

    Returns:
        ``(v, r2)``: contraction factors and the R² of the straight-line fits, arrays of shape spreads.shape[1:].
    """
    check_range("fit_from", fit_from, 0, 1, hi_open=True)
    t = check_array("steps", steps, ndim=1)
    sp = check_array("spreads", spreads, finite="some")
    if sp.ndim == 0 or sp.shape[0] != t.size:
        raise ValueError(f"spreads must have shape ({t.size}, ...) to match steps, got {sp.shape}")
    sp = sp.reshape(len(t), -1)
    # points at round-off level (a run that has fully converged) carry no rate information
    valid = sp > 1e-10 * sp[:1]
    w = (t >= t[0] + fit_from * (t[-1] - t[0]))[:, None] & valid
    # a run that reaches round-off before the late part starts is fitted on all its valid points
    w = np.where(w.sum(0) >= 3, w, valid).astype(np.float64)
    y = np.log(np.maximum(sp, 1e-300))
    cnt = np.maximum(w.sum(0), 1)
    tm, ym = (w * t[:, None]).sum(0) / cnt, (w * y).sum(0) / cnt
    tc, yc = t[:, None] - tm, y - ym
    slope = (w * tc * yc).sum(0) / np.maximum((w * tc**2).sum(0), 1e-300)
    resid = yc - slope * tc
    r2 = 1 - (w * resid**2).sum(0) / np.maximum((w * yc**2).sum(0), 1e-300)
    shape = np.asarray(spreads).shape[1:]
    return np.exp(slope).reshape(shape), r2.reshape(shape)


def teacher_curvature(W_star: np.ndarray, gmm: GaussianMixture, n: int, rng: np.random.Generator):
    """Eigenvalues of the expected-risk Hessian at W*, by Monte Carlo over n inputs.

    At W* the label terms (y - H) of (C.73) vanish in expectation, so the Hessian is
    E[φ'_j φ'_l x xᵀ / (K² H (1 - H))]; we use the soft labels y = H(W*, x), which makes this exact per sample.

    Args:
        W_star: (d, K) teacher.
        gmm: the input mixture.
        n: Monte-Carlo inputs, >= 1.
        rng: NumPy generator.

    Returns:
        The dK eigenvalues in increasing order (NumPy array).
    """
    check_array("W_star", W_star)
    check_instance("gmm", gmm, GaussianMixture)
    check_instance("rng", rng, np.random.Generator)
    X, _ = sample_mixture(gmm, n, rng)
    H = teacher_probability(W_star, X)
    Wt, Xt, Ht = (torch.tensor(a) for a in (W_star, X, H))
    return torch.linalg.eigvalsh(cross_entropy_hessian(Wt, Xt, Ht)).numpy()


def asymptotic_excess(W_star: torch.Tensor, gmm: GaussianMixture, n: int, n_mc: int, rng) -> np.ndarray:
    """Large-n prediction of the expected excess CE of each group: tr(H_l H⁻¹) / (2n) (our addition).

    H_l is group l's expected Hessian at W* (Fisher information of the well-specified model) and
    H = Σ_l λ_l H_l; the average excess is then Σ_l λ_l tr(H_l H⁻¹)/(2n) = dK/(2n) whatever Ψ is.

    Args:
        W_star: teachers (draws, d, K) or (d, K).
        gmm: the mixture.
        n: training-set size, >= 1.
        n_mc: Monte-Carlo inputs per group, >= 1.
        rng: NumPy generator.

    Returns:
        Array of shape W_star.shape[:-2] + (L,).
    """
    check_array("W_star", W_star)
    check_instance("gmm", gmm, GaussianMixture)
    check_instance("rng", rng, np.random.Generator)
    check_int("n", n, minimum=1)
    check_int("n_mc", n_mc, minimum=1)
    Hs = []
    for l in range(gmm.groups):
        chol = np.linalg.cholesky(gmm.covs[l])
        X = torch.tensor(gmm.means[l] + rng.standard_normal((n_mc, gmm.dim)) @ chol.T)
        p = torch.tensor(teacher_probability(W_star.numpy(), X.numpy()))
        Hs.append(cross_entropy_hessian(W_star, X, p))
    Hs = torch.stack(Hs, -3)  # (..., L, dK, dK)
    H = (torch.tensor(gmm.lambdas)[:, None, None] * Hs).sum(-3)
    sol = torch.linalg.solve(H[..., None, :, :], Hs)
    return (torch.diagonal(sol, dim1=-2, dim2=-1).sum(-1) / (2 * n)).numpy()


def excess_risks(W: torch.Tensor, W_star: torch.Tensor, gmm: GaussianMixture, n_test: int, rng):
    """Excess cross-entropy f(W) - f(W*) per group and on average, with soft labels H(W*, x).

    Each group's risk is the mean over n_test inputs of that group; the average is Σ_l λ_l times them.

    Args:
        W: learnt weights (..., d, K); W_star: teachers of the same shape.
        gmm: the mixture.
        n_test: test inputs per group, >= 1.
        rng: NumPy generator.

    Returns:
        ``(average, groups)``: NumPy arrays of shapes W.shape[:-2] and W.shape[:-2] + (L,).
    """
    check_array("W", W)
    check_array("W_star", W_star)
    check_instance("gmm", gmm, GaussianMixture)
    check_instance("rng", rng, np.random.Generator)
    check_int("n_test", n_test, minimum=1)
    per = []
    for l in range(gmm.groups):
        chol = np.linalg.cholesky(gmm.covs[l])
        X = torch.tensor(gmm.means[l] + rng.standard_normal((n_test, gmm.dim)) @ chol.T)
        p = teacher_probability(W_star.numpy(), X.numpy())
        p = torch.tensor(p)
        per.append((cross_entropy_risk(W, X, p) - cross_entropy_risk(W_star, X, p)).numpy())
    groups = np.stack(per, -1)
    return groups @ gmm.lambdas, groups


def permutation_error(W: np.ndarray, W_star: np.ndarray) -> float:
    """min over column permutations P of ‖W - W* P‖_F (Hungarian matching of the columns)."""
    W, W_star = check_array("W", W), check_array("W_star", W_star)
    if W.shape != W_star.shape or W.ndim != 2:
        raise ValueError(f"W and W_star must be (d, K) of the same shape, got {W.shape}, {W_star.shape}")
    cost = ((W[:, :, None] - W_star[:, None, :]) ** 2).sum(0)
    r, c = linear_sum_assignment(cost)
    return float(np.sqrt(cost[r, c].sum()))


def draw_problems(gmms, K: int, n: int, draws: int, rng: np.random.Generator):
    """Independent (W*, training set) draws, shared by several mixtures (common random numbers).

    W* has N(0, 1) entries; x = μ_g + Σ_g^{1/2} z with the group g read from one uniform per sample; y is
    Bernoulli(H(W*, x)) read from another uniform. The same W*, z and uniforms serve every mixture, so a sweep
    over Ψ compares like with like.

    Args:
        gmms: one :class:`~lib.data.gmm.GaussianMixture` or a list of them with equal d and L.
        K: hidden neurons, >= 1.
        n: samples per draw, >= 1.
        draws: independent draws, >= 1.
        rng: NumPy generator.

    Returns:
        ``(W_star, X, y)`` as torch float64 tensors of shapes (draws, d, K), (C, draws, n, d), (C, draws, n)
        with C the number of mixtures (no C axis for a single mixture).
    """
    check_instance("gmms", gmms, (list, tuple, GaussianMixture))
    check_instance("rng", rng, np.random.Generator)
    single = isinstance(gmms, GaussianMixture)
    gmms = [gmms] if single else list(gmms)
    check_int("K", K, minimum=1)
    check_int("n", n, minimum=1)
    check_int("draws", draws, minimum=1)
    d = gmms[0].dim
    if any(g.dim != d or g.groups != gmms[0].groups for g in gmms):
        raise ValueError("all mixtures must share d and the number of groups")
    W = rng.standard_normal((draws, d, K))
    ug, z, uy = rng.random((draws, n)), rng.standard_normal((draws, n, d)), rng.random((draws, n))
    Xs, ys = [], []
    for g in gmms:
        grp = np.minimum(np.searchsorted(np.cumsum(g.lambdas), ug, side="right"), g.groups - 1)
        chol = np.linalg.cholesky(g.covs)
        X = g.means[grp] + np.einsum("...ij,...j->...i", chol[grp], z)
        Xs.append(X)
        ys.append((uy < teacher_probability(W, X)).astype(np.float64))
    X, y = torch.tensor(np.stack(Xs)), torch.tensor(np.stack(ys))
    return torch.tensor(W), (X[0] if single else X), (y[0] if single else y)


def local_uniqueness(gmm: GaussianMixture, K: int, n: int, draws: int, inits: int, seed: int, tol: float = 1e-4):
    """Success of the thesis's phase diagrams: do several local starts reach one strict local minimum?

    For each of ``draws`` (W*, data) draws, ``inits`` starts W* + 0.1 ‖W*‖ G/‖G‖ are each driven to a critical
    point by Newton's method (in place of long GD runs); the draw succeeds when the spread V_W of the limits is at
    most ``tol``, every gradient is below 1e-6 and every Hessian is positive definite.

    Args:
        gmm: the mixture; K: hidden neurons; n: samples; draws, inits: counts (>= 1, inits >= 2).
        seed: seed of the draws and the starts.
        tol: threshold on V_W (the authors' code uses 1e-4).

    Returns:
        The fraction of successful draws.
    """
    check_instance("gmm", gmm, GaussianMixture)
    check_seed("seed", seed)
    check_int("inits", inits, minimum=2)
    check_positive("tol", tol)
    W, X, y = draw_problems(gmm, K, n, draws, np.random.default_rng(seed))
    W0 = local_initialization(W, inits, torch.Generator().manual_seed(seed))
    crit = newton_critical_point(W0, X[:, None], y[:, None], iters=25)
    ok = (weight_spread(crit["W"]) <= tol) & (crit["grad_norm"].amax(-1) < 1e-6) & (crit["min_eig"].amin(-1) > 0)
    return float(ok.double().mean())


def uniqueness_map(lambdas, means, covs, K: int, ns, draws: int, inits: int, seed: int) -> np.ndarray:
    """Success rates of :func:`local_uniqueness` over a grid of mixtures and sample sizes (Figs 4.2-4.3).

    Args:
        lambdas: the L group fractions, shared by every mixture.
        means: ``(C, L, d)`` group means, one mixture per row.
        covs: ``(C, L)`` scalar covariances ``s`` (meaning ``s I``), one mixture per row.
        K: hidden neurons; ns: sample sizes; draws, inits: as in :func:`local_uniqueness`.
        seed: base seed; the cell of sample size ``n`` uses ``seed + n`` for every mixture, so the mixtures share
            ``W*``, noise and starts (common random numbers).

    Returns:
        ``(C, len(ns))`` success rates.
    """
    means = check_array("means", means, ndim=3)
    covs = check_array("covs", covs, ndim=2)
    if covs.shape != means.shape[:2]:
        raise ValueError(f"covs must have shape {means.shape[:2]} to match means, got {covs.shape}")
    ns = [int(n) for n in check_int_array("ns", ns, minimum=1)]
    check_seed("seed", seed)
    gmms = [gaussian_mixture(lambdas, m, c) for m, c in zip(means, covs)]
    return np.array([[local_uniqueness(g, K, n, draws, inits, seed=seed + n) for n in ns] for g in gmms])


# ---------------------------------------------------------------- tensor initialisation (Subroutine 1)


def _responsibilities(X, gmm):
    P = np.linalg.inv(gmm.covs)
    diff = X[:, None, :] - gmm.means[None]  # (n, L, d)
    a = np.einsum("lij,nlj->nli", P, diff)
    logdet = np.linalg.slogdet(gmm.covs)[1]
    logp = np.log(gmm.lambdas) - 0.5 * (np.einsum("nli,nli->nl", diff, a) + logdet)
    logp -= logp.max(1, keepdims=True)
    r = np.exp(logp)
    return r / r.sum(1, keepdims=True), a, P


def score_moments(X, y, gmm: GaussianMixture, alpha=None, U=None) -> dict:
    """Empirical moments Q̂_j = mean y S_j(x) with the GMM score functions S_j = (-1)^j ∇^j p / p (Def. C.1.1).

    Args:
        X: (n, d) inputs; y: (n,) labels (or any weights, e.g. a test function's values).
        gmm: the input mixture (known, as in the thesis).
        alpha: optional d-vector: also return Q̂_3(I, I, α) (d x d).
        U: optional (d, K) matrix: also return Q̂_3(U, U, U) (K x K x K).

    Returns:
        dict with ``Q1`` (d,), ``Q2`` (d, d) and, when asked, ``Q3_IIa`` and ``Q3_UUU``.
    """
    check_array("X", X)
    check_array("y", y)
    check_instance("gmm", gmm, GaussianMixture)
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != X.shape[:1] or X.shape[1] != gmm.dim:
        raise ValueError(f"X must be (n, {gmm.dim}) and y (n,), got {X.shape}, {y.shape}")
    r, a, P = _responsibilities(X, gmm)
    w = r * y[:, None] / len(y)  # (n, L)
    out = {
        "Q1": np.einsum("nl,nli->i", w, a),
        "Q2": np.einsum("nl,nli,nlj->ij", w, a, a) - np.einsum("l,lij->ij", w.sum(0), P),
    }
    if alpha is not None:
        al = np.asarray(alpha, dtype=np.float64)
        aa = a @ al  # (n, L)
        Pa = P @ al  # (L, d)
        m = np.einsum("nl,nli,nlj->ij", w * aa, a, a) - np.einsum("l,lij->ij", (w * aa).sum(0), P)
        cross = np.einsum("nl,nli,lj->ij", w, a, Pa)
        out["Q3_IIa"] = m - cross - cross.T
    if U is not None:
        U = np.asarray(U, dtype=np.float64)
        b = a @ U  # (n, L, K)
        Pt = np.einsum("di,lde,ej->lij", U, P, U)
        t3 = np.einsum("nl,nli,nlj,nlk->ijk", w, b, b, b)
        wb = np.einsum("nl,nli->li", w, b)
        s = np.einsum("li,ljk->ijk", wb, Pt)
        out["Q3_UUU"] = t3 - s - s.transpose(1, 0, 2) - s.transpose(1, 2, 0)
    return out


def _is_symmetric(gmm: GaussianMixture) -> bool:
    for l in range(gmm.groups):
        if np.allclose(gmm.means[l], 0):
            continue
        mates = [
            m
            for m in range(gmm.groups)
            if np.allclose(gmm.means[m], -gmm.means[l])
            and np.allclose(gmm.covs[m], gmm.covs[l])
            and np.isclose(gmm.lambdas[m], gmm.lambdas[l])
        ]
        if not mates:
            return False
    return True


def _top_abs_eigvecs(M, K):
    vals, vecs = np.linalg.eigh(0.5 * (M + M.T))
    order = np.argsort(-np.abs(vals))[:K]
    return np.linalg.qr(vecs[:, order])[0]


def _magnitude(direction, target, K, gmm):
    """Solve (z/K) E[φ'(z w̄ᵀx)] = target for z >= 0 (first crossing on a grid, clipped at the maximum)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    m = gmm.means @ direction
    s = np.sqrt(np.einsum("i,lij,j->l", direction, gmm.covs, direction))
    proj = m[:, None] + s[:, None] * nodes[None]  # (L, Q)
    zs = np.linspace(0.0, 30.0, 1201)[1:]
    g = zs / K * np.einsum("l,lq,zlq->z", gmm.lambdas, weights[None].repeat(len(m), 0), _dphi(zs[:, None, None] * proj))
    above = np.flatnonzero(g >= target)
    return float(zs[above[0]] if above.size else zs[np.argmax(g)])


def tensor_initialization(X, y, K: int, gmm: GaussianMixture, rng: np.random.Generator) -> np.ndarray:
    """Subroutine 1 of the thesis: a method-of-moments estimate of W* from the GMM score moments.

    Thirds D1, D2, D3 of the data give: the subspace Û from the top-K (by absolute eigenvalue) eigenvectors of Q̂_2
    (or of Q̂_3(I, I, α) for a symmetric mixture, where Q_2 = 0); the directions from Q̂_3(Û, Û, Û) by
    Jennrich's simultaneous diagonalisation (in place of the KCL algorithm); the coefficients c_j of Q̂_1 on
    those directions by least squares. Two corrections of ours: a negative c_j flips its direction (φ' > 0),
    and c_j = (‖w_j‖/K) E[φ'(w_jᵀx)] is inverted for ‖w_j‖ (the thesis takes c_j itself as the norm).

    Args:
        X: (n, d) inputs, n >= 3; y: (n,) labels in {0, 1}.
        K: number of hidden neurons, 1 <= K <= d.
        gmm: the input mixture (known).
        rng: NumPy generator (random projections).

    Returns:
        W0 of shape (d, K), columns in arbitrary order.
    """
    check_array("X", X)
    check_array("y", y)
    check_instance("gmm", gmm, GaussianMixture)
    check_instance("rng", rng, np.random.Generator)
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    check_int("K", K, minimum=1, maximum=X.shape[1] if X.ndim == 2 else None)
    if X.ndim != 2 or len(X) < 3 or y.shape != (len(X),):
        raise ValueError(f"X must be (n >= 3, d) and y (n,), got {X.shape}, {y.shape}")
    d = X.shape[1]
    parts = np.array_split(np.arange(len(X)), 3)
    D1, D2, D3 = ((X[p], y[p]) for p in parts)
    if _is_symmetric(gmm):
        alpha = rng.standard_normal(d)
        M = score_moments(*D1, gmm, alpha=alpha / np.linalg.norm(alpha))["Q3_IIa"]
    else:
        M = score_moments(*D1, gmm)["Q2"]
    U = _top_abs_eigvecs(M, K)
    R3 = score_moments(*D2, gmm, U=U)["Q3_UUU"]
    if K == 1:
        V = np.ones((1, 1))
    else:
        ga, gb = rng.standard_normal(K), rng.standard_normal(K)
        Ma, Mb = np.einsum("ijk,k->ij", R3, ga), np.einsum("ijk,k->ij", R3, gb)
        V = np.real(np.linalg.eig(Ma @ np.linalg.pinv(Mb))[1])
        V = V / np.linalg.norm(V, axis=0, keepdims=True)
    dirs = U @ V  # (d, K) unit columns
    Q1 = score_moments(*D3, gmm)["Q1"]
    c = np.linalg.lstsq(dirs, Q1, rcond=None)[0]
    dirs = dirs * np.sign(np.where(c == 0, 1.0, c))
    mags = [_magnitude(dirs[:, j], abs(c[j]), K, gmm) for j in range(K)]
    return dirs * np.asarray(mags)[None, :]
