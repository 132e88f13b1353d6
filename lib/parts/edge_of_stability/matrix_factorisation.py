"""Matrix factorisation beyond the edge of stability (Chen & Bruna 2023, Sec. 6, App. A.2, B.1, J).

Loss (Eq. 7): ``L(Y, Z) = 1/2 ||Y Z^T - C||_F^2`` with ``C`` symmetric positive definite, eigenvalues
``sigma_1^2 >= sigma_2^2 >= ...``. Gradient descent is ``Y <- Y - eta (YZ^T - C) Z`` and
``Z <- Z - eta (YZ^T - C)^T Y``; the step size ``eta`` is the argument ``lr`` (``eta`` still works, deprecated,
for one release).

Everything here is batched: a batch of ``B`` problems is a stack of ``d x d`` matrices of shape (B, d, d), one
learning rate per problem, and one GD step is three batched matmuls (``torch.bmm``), so a whole phase diagram
(Fig 1) or bifurcation diagram (Fig 2) is a single loop over steps.
"""

from __future__ import annotations

import numpy as np
import torch

from lib.config import (
    check_array,
    check_in,
    check_instance,
    check_int,
    check_positive,
    check_range,
    check_seed,
    check_shape,
    renamed_arguments,
)
from lib.maps import lyapunov_exponent
from lib.parts.edge_of_stability.one_dimensional import period2_orbit


def rho_orbit(K: float) -> tuple[float, float]:
    """The two positive roots ``rho_low < 1 < rho_high`` of Eq. (8),
    ``K = 1/(rho^2 (sqrt(1/rho^2 - 3/4) + 1/2))``.

    ``K = eta sigma_1^2`` must lie in (1, 1.5]; the MF orbit's top singular values are ``rho * sigma_1`` (the
    paper names them rho_2 in (0, 1) and rho_1 in (1, 2)); they are the period-2 orbit of the quartic with
    ``mu = 1``, ``eta = K`` (:func:`lib.parts.edge_of_stability.one_dimensional.period2_orbit`).
    """
    check_range("K", K, 1.0, 1.5, lo_open=True)
    lo, hi = period2_orbit(1.0, float(K))
    return float(min(lo, hi)), float(max(lo, hi))


def _batch(t: torch.Tensor, name: str) -> torch.Tensor:
    t = torch.as_tensor(t, dtype=torch.float64)
    if t.ndim == 2:
        t = t.unsqueeze(0)
    if t.ndim != 3 or t.shape[-1] != t.shape[-2]:
        raise ValueError(f"{name} must have shape (d, d) or (B, d, d), got {tuple(t.shape)}")
    return t


def mf_loss(Y, Z, C) -> torch.Tensor:
    """Eq. (7) for a batch: ``1/2 ||Y_b Z_b^T - C_b||_F^2``; Y, Z, C of shape (B, d, d) (C may be (d, d)).

    Returns: tensor of shape (B,).
    """
    Y, Z, C = _batch(Y, "Y"), _batch(Z, "Z"), _batch(C, "C")
    R = Y @ Z.transpose(-1, -2) - C
    return 0.5 * (R**2).sum(dim=(-1, -2))


@renamed_arguments(eta="lr")
def mf_step(Y, Z, C, lr):
    """One GD step on Eq. (7) for a batch: returns ``(Y', Z')``, shapes (B, d, d); ``lr`` scalar or shape
    (B,).

    ``Y' = Y - eta (YZ^T - C) Z`` and ``Z' = Z - eta (YZ^T - C)^T Y`` (the gradient of Eq. 7).
    """
    Y, Z, C = _batch(Y, "Y"), _batch(Z, "Z"), _batch(C, "C")
    lr = torch.as_tensor(lr, dtype=torch.float64).reshape(-1, 1, 1)
    R = torch.matmul(Y, Z.transpose(-1, -2)) - C
    return Y - lr * torch.matmul(R, Z), Z - lr * torch.matmul(R.transpose(-1, -2), Y)


@renamed_arguments(eta="lr")
def mf_gd(Y0, Z0, C, lr, steps: int, *, tail: int = 0, record_every: int = 0, bound: float = 1e6) -> dict:
    """Batched GD on Eq. (7) with divergence detection.

    Args:
        Y0, Z0: initial factors, shape (B, d, d) (or (d, d)).
        C: targets, shape (B, d, d) or (d, d).
        lr: learning rate(s), a number or shape (B,).
        steps: number of GD steps.
        tail: also return sigma_max(Y), sigma_max(Z) at each of the last ``tail`` steps.
        record_every: if > 0, record loss, sigma_max(Y), sigma_max(Z) every that many steps (and the
            first and last).
        bound: a run is diverged once a factor entry exceeds ``bound`` in size or is not finite; it is then
            frozen at zero (its values are meaningless) and its step recorded.

    Returns:
        dict with ``Y``, ``Z`` (final, (B, d, d)), ``diverged`` (B,) bool, ``diverged_step`` (B,) int (-1 if
        not), and when asked ``tail_sy``, ``tail_sz`` (B, tail) and ``hist`` (dict of ``step`` (T,), ``loss``,
        ``sy``, ``sz`` each (B, T)); all NumPy.
    """
    check_array("Y0", Y0)
    check_array("Z0", Z0)
    check_array("C", C)
    check_int("steps", steps, minimum=1)
    check_int("tail", tail, minimum=0, maximum=steps)
    check_int("record_every", record_every, minimum=0)
    check_positive("bound", bound)
    check_array("lr", lr, positive=True)
    Y, Z = _batch(Y0, "Y0").clone(), _batch(Z0, "Z0").clone()
    if Y.shape != Z.shape:
        raise ValueError(f"Y0 and Z0 must have the same shape, got {tuple(Y.shape)} and {tuple(Z.shape)}")
    C = _batch(C, "C")
    B = Y.shape[0]
    eta_t = torch.as_tensor(lr, dtype=torch.float64)
    if eta_t.ndim == 0:
        eta_t = eta_t.expand(B)
    check_shape("lr", eta_t, (B,))
    if not torch.all(torch.isfinite(eta_t) & (eta_t > 0)):
        raise ValueError("lr must be finite and > 0")
    diverged = torch.zeros(B, dtype=torch.bool)
    div_step = torch.full((B,), -1, dtype=torch.long)
    tails_y, tails_z, hist = [], [], {"step": [], "loss": [], "sy": [], "sz": []}

    def smax(M):
        return torch.linalg.matrix_norm(M, ord=2)

    def rec(t):
        hist["step"].append(t)
        loss = mf_loss(Y, Z, C)
        loss[diverged] = float("nan")
        sy, sz = smax(Y), smax(Z)
        sy[diverged] = float("nan")
        sz[diverged] = float("nan")
        hist["loss"].append(loss.numpy().copy())
        hist["sy"].append(sy.numpy().copy())
        hist["sz"].append(sz.numpy().copy())

    if record_every:
        rec(0)
    for t in range(1, steps + 1):
        Y, Z = mf_step(Y, Z, C, eta_t)
        bad = ~(torch.isfinite(Y).all(dim=(-1, -2)) & torch.isfinite(Z).all(dim=(-1, -2)))
        bad |= (Y.abs().amax(dim=(-1, -2)) > bound) | (Z.abs().amax(dim=(-1, -2)) > bound)
        new = bad & ~diverged
        if new.any():
            div_step[new] = t
            diverged |= new
            Y[diverged] = 0.0
            Z[diverged] = 0.0
        if tail and t > steps - tail:
            tails_y.append(smax(Y).numpy().copy())
            tails_z.append(smax(Z).numpy().copy())
        if record_every and (t % record_every == 0 or t == steps):
            rec(t)
    out = dict(Y=Y.numpy(), Z=Z.numpy(), diverged=diverged.numpy(), diverged_step=div_step.numpy())
    if tail:
        ty, tz = np.stack(tails_y, axis=1), np.stack(tails_z, axis=1)
        ty[out["diverged"]] = np.nan
        tz[out["diverged"]] = np.nan
        out.update(tail_sy=ty, tail_sz=tz)
    if record_every:
        out["hist"] = {"step": np.array(hist["step"]),
                       **{k: np.stack(hist[k], axis=1) for k in ("loss", "sy", "sz")}}
    return out


@renamed_arguments(eta="lr")
def mf_trajectory(Y0, Z0, C, lr: float, steps: int, bound: float = 1e6) -> dict:
    """One GD run on Eq. (7) in NumPy (fast for a single small problem, e.g. a widget), recording every step.

    Y0, Z0, C: shape (d, d).

    Returns:
        dict with ``loss``, ``sy``, ``sz`` (sigma_max of Y and Z), each shape (steps + 1,), NaN after a
        divergence, the final ``Y``, ``Z`` and ``diverged_step`` (-1 if none).
    """
    check_array("Y0", Y0)
    check_array("Z0", Z0)
    check_array("C", C)
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    check_positive("bound", bound)
    Y, Z, C = (np.array(_np(a), dtype=float) for a in (Y0, Z0, C))
    for name, M in (("Y0", Y), ("Z0", Z)):
        check_shape(name, M, C.shape)
    loss, sy, sz = (np.full(steps + 1, np.nan) for _ in range(3))
    div = -1
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps + 1):
            R = Y @ Z.T - C
            if not (np.isfinite(R).all() and np.abs(Y).max() < bound and np.abs(Z).max() < bound):
                div = t
                break
            loss[t] = 0.5 * np.sum(R * R)
            sy[t], sz[t] = np.linalg.norm(Y, 2), np.linalg.norm(Z, 2)
            if t < steps:
                Y, Z = Y - lr * R @ Z, Z - lr * R.T @ Y
    return dict(loss=loss, sy=sy, sz=sz, Y=Y, Z=Z, diverged_step=div)


def top_direction_value(M, u) -> float:
    """``||M^T u||`` for a factor M (d, d) and C's top eigenvector u (d,): the singular value of M along u.

    Obs 2 predicts ``rho_i sigma_1`` for it on the orbit; it equals sigma_max(M) unless another direction of M
    is larger.
    """
    check_array("M", M)
    check_array("u", u)
    M, u = _np(M), _np(u)
    check_shape("u", u, (M.shape[0],))
    return float(np.linalg.norm(M.T @ u))


def generic_init(batch: int, d: int, scale: float = 0.5, seed: int = 0):
    """Generic initialisation: i.i.d. N(0, scale^2) entries for Y and Z, shapes (batch, d, d) each."""
    check_int("batch", batch, minimum=1)
    check_int("d", d, minimum=1)
    check_positive("scale", scale)
    check_seed("seed", seed)
    g = torch.Generator().manual_seed(int(seed))
    Y = scale * torch.randn(batch, d, d, generator=g, dtype=torch.float64)
    Z = scale * torch.randn(batch, d, d, generator=g, dtype=torch.float64)
    return Y, Z


def quasi_symmetric_init(X0, alpha: float, eps: float = 1e-3, seed: int = 0):
    """Def 3: start near the unbalanced minimum ``(alpha X0, X0 / alpha)``: ``Y = alpha X0 + eps N``,
    ``Z = X0 / alpha + eps N'`` with standard Gaussian N, N'. ``alpha = 1`` is the symmetric case.

    X0: shape (d, d) or (B, d, d); returns (Y, Z) of the same batched shape (B, d, d).
    """
    check_positive("alpha", alpha)
    check_positive("eps", eps, allow_zero=True)
    check_seed("seed", seed)
    check_array("X0", X0)
    X0 = _batch(X0, "X0")
    g = torch.Generator().manual_seed(int(seed))
    Y = alpha * X0 + eps * torch.randn(X0.shape, generator=g, dtype=torch.float64)
    Z = X0 / alpha + eps * torch.randn(X0.shape, generator=g, dtype=torch.float64)
    return Y, Z


def diag_target(spectra) -> torch.Tensor:
    """Targets ``C_b = diag(spectra[b])``; spectra shape (B, d) of positive eigenvalues -> C shape (B, d, d).
    """
    check_array("spectra", spectra)
    s = torch.as_tensor(np.asarray(spectra, dtype=np.float64))
    if s.ndim != 2 or not torch.all(s > 0):
        raise ValueError("spectra must have shape (B, d) with positive entries")
    return torch.diag_embed(s)


def _grid_spectra(k1, k2, tail):
    K1, K2 = np.meshgrid(np.asarray(k1, float), np.asarray(k2, float))  # (n2, n1)
    cols = [K1.ravel(), K2.ravel()] + [t * K2.ravel() for t in tail]
    return K1, K2, np.stack(cols, axis=1)


def divergence_grid(k1_values, k2_values, *, init: str = "generic", alpha: float = 0.8, d: int = 4,
                    spectrum_tail=(0.5, 0.25), steps: int = 3000, scale: float = 0.1, eps: float = 1e-3,
                    seed: int = 0) -> np.ndarray:
    """Fig 1: does GD on Eq. (7) stay finite on a grid of ``(eta sigma_1^2, eta sigma_2^2)``?

    With ``eta = 1`` the axes are the eigenvalues: ``C = diag(k1, k2, k2 * spectrum_tail...)`` (d = 2 +
    len(tail)).
    ``init``: ``"generic"`` (i.i.d. N(0, scale^2) entries), ``"quasi"`` (near (alpha X0, X0/alpha) with
    X0 = C^{1/2}, noise eps) or ``"symmetric"`` (the same with alpha = 1). Cells with k2 > k1 are NaN.

    Returns:
        array of shape (len(k2_values), len(k1_values)): 1.0 finite, 0.0 diverged, NaN where k2 > k1.
    """
    check_positive("eps", eps, allow_zero=True)
    check_array("spectrum_tail", spectrum_tail, nonempty=False)
    check_in("init", init, ("generic", "quasi", "symmetric"))
    check_int("d", d, minimum=2)
    check_positive("alpha", alpha)
    check_seed("seed", seed)
    k1_values = check_array("k1_values", k1_values, positive=True)
    k2_values = check_array("k2_values", k2_values, positive=True)
    if len(spectrum_tail) != d - 2:
        raise ValueError(f"spectrum_tail must have d - 2 = {d - 2} entries, got {len(spectrum_tail)}")
    K1, K2, spectra = _grid_spectra(k1_values, k2_values, spectrum_tail)
    if np.any(spectra <= 0):
        raise ValueError("k1_values and k2_values must be > 0")
    C = diag_target(spectra)
    B = C.shape[0]
    if init == "generic":
        Y, Z = generic_init(B, d, scale, seed)
    else:
        X0 = torch.diag_embed(torch.sqrt(torch.as_tensor(spectra)))
        Y, Z = quasi_symmetric_init(X0, 1.0 if init == "symmetric" else alpha, eps, seed)
    res = mf_gd(Y, Z, C, 1.0, steps)
    finite = (~res["diverged"]).astype(float).reshape(K1.shape)
    finite[K2 > K1] = np.nan
    return finite


def eq9_holds(k1, k2, alpha: float):
    """Eq. (9): ``eta * max(s1^2/alpha^2 + s2^2 alpha^2, s2^2/alpha^2 + s1^2 alpha^2) <= 2`` with
    ``k1 = eta s1^2``, ``k2 = eta s2^2`` (arrays broadcast); alpha = 1 gives ``k1 + k2 <= 2``."""
    check_positive("alpha", alpha)
    k1, k2 = check_array("k1", k1), check_array("k2", k2)
    a2 = alpha**2
    return np.maximum(k1 / a2 + k2 * a2, k2 / a2 + k1 * a2) <= 2.0


def line_holds(k1, k2):
    """Obs 1's condition ``eta (s1^2 + s2^2) < 2`` in the coordinates ``k1 = eta s1^2``, ``k2 = eta s2^2``."""
    return check_array("k1", k1) + check_array("k2", k2) < 2.0


def divergence_boundary(k1_values, k2_values, finite) -> np.ndarray:
    """For each column ``k1`` of a Fig 1 grid, the smallest ``k2`` at which GD diverged (NaN if none did).

    finite: array (len(k2_values), len(k1_values)) from :func:`divergence_grid`. Returns shape
    (len(k1_values),).
    """
    check_array("k1_values", k1_values)
    check_array("k2_values", k2_values)
    check_array("finite", finite, finite="some")  # NaN marks a point not run
    k2 = np.asarray(k2_values, float)
    finite = np.asarray(finite, float)
    check_shape("finite", finite, (len(k2), len(k1_values)))
    out = np.full(finite.shape[1], np.nan)
    for j in range(finite.shape[1]):
        idx = np.flatnonzero(finite[:, j] == 0.0)
        if idx.size:
            out[j] = k2[idx[0]]
    return out


def mf_bifurcation(K_values, *, ratio: float = 0.2, d: int = 4, steps: int = 6000, keep: int = 64,
                   scale: float = 0.1, seed: int = 0, lyapunov_steps: int = 0) -> dict:
    """Fig 2: the attractor of ``(sigma_max(Y), sigma_max(Z)) / sigma_1`` against ``K = eta sigma_1^2``.

    One generic initialisation (same for every K), eta = 1, ``C = diag(K, ratio K, ratio K / 2, ...)``, so
    ``eta (sigma_1^2 + sigma_2^2) = (1 + ratio) K``.

    Returns:
        dict with ``K`` (n,), ``sy``, ``sz`` (n, keep): the last ``keep`` values of sigma_max / sigma_1, and
        ``diverged`` (n,). With ``lyapunov_steps > 0`` also ``lyapunov`` (n,): the largest Lyapunov exponent of
        the GD map on ``(Y, Z)`` (:func:`lib.maps.lyapunov_exponent`) over that many further steps from the
        final state (positive: chaotic; NaN for a diverged run).
    """
    check_int("lyapunov_steps", lyapunov_steps, minimum=0)
    check_range("ratio", ratio, 0.0, 1.0, lo_open=True)
    check_int("d", d, minimum=2)
    check_int("steps", steps, minimum=1)
    check_int("keep", keep, minimum=1, maximum=steps)
    check_positive("scale", scale)
    check_seed("seed", seed)
    K = check_array("K_values", K_values, positive=True)
    if K.ndim != 1 or np.any(K <= 0):
        raise ValueError("K_values must be a 1-D array of positive numbers")
    tail = [ratio * 0.5**j for j in range(d - 1)]
    spectra = K[:, None] * np.array([1.0, *tail])[None, :]
    C = diag_target(spectra)
    Y, Z = generic_init(1, d, scale, seed)
    Y, Z = Y.expand(len(K), d, d).clone(), Z.expand(len(K), d, d).clone()
    res = mf_gd(Y, Z, C, 1.0, steps, tail=keep)
    s1 = np.sqrt(K)[:, None]
    out = dict(K=K, sy=res["tail_sy"] / s1, sz=res["tail_sz"] / s1, diverged=res["diverged"])
    if lyapunov_steps:
        ok = torch.as_tensor(~np.asarray(res["diverged"], dtype=bool))
        C_ok = C[ok]

        def step(x):  # x = (B, 2, d, d): Y and Z of the runs that did not diverge, stacked
            Yn, Zn = mf_step(x[:, 0], x[:, 1], C_ok, 1.0)
            return torch.stack([Yn, Zn], 1)

        x = torch.stack([torch.as_tensor(res["Y"]), torch.as_tensor(res["Z"])], 1)[ok]
        lam = np.full(len(K), np.nan)
        if ok.any():
            lam[ok.numpy()] = lyapunov_exponent(step, x, lyapunov_steps, seed=seed)
        out["lyapunov"] = lam
    return out


def _np(a):
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a, float)


def thm6_eigenpair(X, Y):
    """Thm 6: at a minimum ``XY = C`` (X: (m, p), Y: (p, q)) the top Hessian eigenvector is
    ``Delta = vec(C1 u_x1 u_y1^T, C2 v_x1 v_y1^T)`` with ``C1 = s_y1 / sqrt(s_x1^2 + s_y1^2)``,
    ``C2 = s_x1 / sqrt(s_x1^2 + s_y1^2)``, and the top eigenvalue is ``s_x1^2 + s_y1^2`` (Eq. 152-153).

    Returns ``(Delta, lam)``: Delta of shape (m p + p q,) (row-major vec of X then Y, unit norm), lam a float.
    """
    check_array("X", X)
    check_array("Y", Y)
    X, Y = _np(X), _np(Y)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[0]:
        raise ValueError(f"X (m, p) and Y (p, q) must be conformable, got {X.shape} and {Y.shape}")
    Ux, Sx, Vxt = np.linalg.svd(X)
    Uy, Sy, Vyt = np.linalg.svd(Y)
    sx, sy = Sx[0], Sy[0]
    n = np.hypot(sx, sy)
    dX = (sy / n) * np.outer(Ux[:, 0], Uy[:, 0])
    dY = (sx / n) * np.outer(Vxt[0], Vyt[0])
    # fix the relative sign so that dX Y and X dY add up (both parallel to u_x1 v_y1^T)
    if np.sum((dX @ Y) * (X @ dY)) < 0:
        dY = -dY
    return np.concatenate([dX.ravel(), dY.ravel()]), float(sx**2 + sy**2)


def thm6_condition(X, Y, Delta=None) -> float:
    """Eq. (160): ``3 f'''^2 - f'' f'''' = 96 ||dX Y + X dY||_F^2 ||dX dY||_F^2`` at the minimum along Delta
    (default: the Thm 6 eigenvector). X: (m, p), Y: (p, q), Delta: (m p + p q,)."""
    check_array("X", X)
    check_array("Y", Y)
    X, Y = _np(X), _np(Y)
    if Delta is None:
        Delta, _ = thm6_eigenpair(X, Y)
    Delta = _np(Delta)
    check_shape("Delta", Delta, (X.size + Y.size,))
    dX, dY = Delta[: X.size].reshape(X.shape), Delta[X.size:].reshape(Y.shape)
    A, Bm = dX @ Y + X @ dY, dX @ dY
    return float(96.0 * np.sum(A**2) * np.sum(Bm**2))


def mf_flat_loss(m: int, p: int, q: int, C):
    """The loss ``theta -> 1/2 ||X Y - C||_F^2`` of a flat parameter ``theta = vec(X, Y)`` (shape (m p + p
    q,)),
    for ``lib.curvature`` (Eq. 146)."""
    check_array("C", C)
    for name, v in (("m", m), ("p", p), ("q", q)):
        check_int(name, v, minimum=1)
    C = torch.as_tensor(C, dtype=torch.float64)
    check_shape("C", C, (m, q))

    def loss(theta):
        X = theta[: m * p].reshape(m, p)
        Y = theta[m * p:].reshape(p, q)
        return 0.5 * ((X @ Y - C) ** 2).sum()

    return loss


def orbit_structure(Y, Z, C) -> dict:
    """Measures Obs 1's description of an orbit point (Y, Z) of shape (d, d) for a target C (d, d).

    Returns:
        dict with ``rank1`` (second / first singular value of the residual ``YZ^T - C``; 0 for an exactly
        rank-one residual), ``align`` (``|u^T r|`` between C's top eigenvector u and the residual's top left
        singular vector r), ``resid_eig`` (``u^T (YZ^T - C) u``, predicted ``(rho^2 - 1) sigma_1^2``), ``sy`` and
        ``sz`` (sigma_max(Y) and sigma_max(Z), predicted both ``rho sigma_1``) and ``sigma1_sq`` (C's top
        eigenvalue ``sigma_1^2``).
    """
    check_array("Y", Y)
    check_array("Z", Z)
    check_array("C", C)
    Y, Z, C = _np(Y), _np(Z), _np(C)
    for name, M in (("Y", Y), ("Z", Z)):
        check_shape(name, M, C.shape)
    w, V = np.linalg.eigh(C)
    u = V[:, -1]
    R = Y @ Z.T - C
    Ur, Sr, _ = np.linalg.svd(R)
    return dict(
        rank1=float(Sr[1] / Sr[0]) if Sr[0] > 0 else 0.0,
        align=float(abs(u @ Ur[:, 0])),
        resid_eig=float(u @ R @ u),
        sy=float(np.linalg.norm(Y, 2)),
        sz=float(np.linalg.norm(Z, 2)),
        sigma1_sq=float(w[-1]),
    )


# ----------------------------------------------------------------------------------------------------------------
# Fig 6 (App. B.1): the symmetric and quasi-symmetric runs on a random 8 x 8 target
# ----------------------------------------------------------------------------------------------------------------


def fig6_run(seed: int, alpha: float, steps: int, K: float = 1.02, eps: float = 1e-3, d: int = 8) -> dict:
    """One run of Fig 6: target ``C = X_0 X_0^T`` with ``X_0`` (d, d) i.i.d. standard Gaussian (seed ``seed``; the
    paper does not say how it drew ``X_0``), ``eta = K / sigma_1^2``, start ``(alpha X_0, X_0 / alpha)`` plus
    ``eps`` noise (:func:`quasi_symmetric_init`), ``steps`` GD steps (:func:`mf_trajectory`).

    Returns:
        dict with ``X0``, its SVD ``U``, ``S``, ``Vt``, the target ``C``, the trajectory ``tr``
        (:func:`mf_trajectory`), the step ``lr`` and the settings ``alpha``, ``K`` and ``eps``.
    """
    check_seed("seed", seed)
    check_positive("alpha", alpha)
    check_int("steps", steps, minimum=1)
    check_range("K", K, 1.0, 1.5, lo_open=True)
    check_positive("eps", eps)
    check_int("d", d, minimum=2)
    X0 = np.random.default_rng(seed).standard_normal((d, d))
    U, S, Vt = np.linalg.svd(X0)
    C = X0 @ X0.T
    Y, Z = quasi_symmetric_init(X0, alpha, eps, seed)
    tr = mf_trajectory(Y[0], Z[0], C, K / S[0] ** 2, steps)
    return dict(X0=X0, U=U, S=S, Vt=Vt, C=C, tr=tr, lr=K / S[0] ** 2, alpha=alpha, K=K, eps=eps)


def fig6_orbit_check(run: dict) -> dict:
    """Obs 2 on a :func:`fig6_run`: where the last two GD iterates sit along the top direction ``u`` of ``C``.

    Returns:
        dict with ``err`` (largest relative error of ``||Y^T u||`` at the two steps against the orbit ``rho
        sigma_1`` of :func:`rho_orbit`), ``bal`` (largest ``| ||Y^T u|| - ||Z^T u|| | / sigma_1``), ``top_move``
        (movement of the top singular block of ``Y - alpha X_0``), ``off_eps`` (movement of the other blocks, in
        units of ``eps``), ``eq9`` (whether Eq. (9) holds for the second singular value) and ``smax_ok`` (the top
        singular value of ``Y`` is the one along ``u``).
    """
    check_instance("run", run, dict)
    tr, C, U, S = run["tr"], run["C"], run["U"], run["S"]
    lo, hi = rho_orbit(run["K"])
    Y, Z = tr["Y"], tr["Z"]
    R = Y @ Z.T - C
    Y2, Z2 = Y - run["lr"] * R @ Z, Z - run["lr"] * R.T @ Y
    u = U[:, 0]
    vy = sorted([top_direction_value(Y, u), top_direction_value(Y2, u)])
    vz = sorted([top_direction_value(Z, u), top_direction_value(Z2, u)])
    err = max(abs(vy[0] / S[0] - lo) / lo, abs(vy[1] / S[0] - hi) / hi)
    D = U.T @ (Y - run["alpha"] * run["X0"]) @ run["Vt"].T
    off = D.copy()
    off[0, 0] = 0.0
    k2 = run["K"] * (S[1] / S[0]) ** 2
    return dict(
        err=err,
        bal=max(abs(vy[0] - vz[0]), abs(vy[1] - vz[1])) / S[0],
        top_move=abs(D[0, 0]),
        off_eps=np.linalg.norm(off) / run["eps"],
        eq9=bool(eq9_holds(run["K"], k2, run["alpha"])),
        smax_ok=bool(abs(max(np.linalg.norm(Y, 2), np.linalg.norm(Y2, 2)) - vy[1]) < 1e-9 * S[0]),
    )


def eq203_eigenvalues(k1, kp, alpha: float) -> np.ndarray:
    """Eq. (203): ``{1, 1, (1 - k1/alpha^2 - kp alpha^2)^2, (1 - k1 alpha^2 - kp/alpha^2)^2}``, sorted.

    ``k1 = eta sigma_1^2``, ``kp = eta sigma_p^2``: the spectrum of the two-step transition matrix of the
    off-diagonal entries ``(1, p)``, ``(p, 1)`` of ``Y`` and ``Z`` next to the minimum ``(alpha X0, X0/alpha)``.
    """
    check_positive("k1", k1)
    check_positive("kp", kp)
    check_positive("alpha", alpha)
    a2 = alpha**2
    return np.sort([1.0, 1.0, (1 - k1 / a2 - kp * a2) ** 2, (1 - k1 * a2 - kp / a2) ** 2])


def offdiag_block(k1: float, kp: float, alpha: float, *, at: str = "minimum") -> dict:
    """The two-step Jacobian of GD on quasi-symmetric MF restricted to one off-diagonal block (App. J.2).

    ``eta = 1``, ``X0 = diag(sqrt(k1), sqrt(kp))`` (``d = 2``, so ``p = 2``). The Jacobian of ``F o F`` on the
    ``2 d^2`` entries of ``(Y, Z)`` comes from ``torch.func.jacfwd`` at ``(alpha X0, X0/alpha)``
    (``at="minimum"``, where Eq. 202-203 are written) or at the point ``Y_11 = Z_11 = rho_lo sigma_1`` of the
    period-2 orbit of Obs 2 (``at="orbit"``, ``1 < k1 <= 1.5``). The entries ``Y_12, Y_21, Z_12, Z_21`` span an
    invariant subspace at both points.

    Returns:
        dict with ``block`` (4, 4), its ``eig`` (sorted by modulus), ``leak`` (the largest Jacobian entry
        coupling the block to the other entries; zero up to rounding) and ``semi_convergent``
        (:func:`is_semi_convergent`).
    """
    check_positive("k1", k1)
    check_positive("kp", kp)
    check_positive("alpha", alpha)
    check_in("at", at, ("minimum", "orbit"))
    from torch.func import jacfwd

    s = np.sqrt([k1, kp])
    Y = np.diag(alpha * s)
    Z = np.diag(s / alpha)
    if at == "orbit":
        Y[0, 0] = Z[0, 0] = rho_orbit(k1)[0] * s[0]
    C = torch.diag(torch.tensor([k1, kp], dtype=torch.float64))

    def step(v):
        Yv, Zv = v[:4].reshape(2, 2), v[4:].reshape(2, 2)
        R = Yv @ Zv.T - C
        return torch.cat([(Yv - R @ Zv).reshape(-1), (Zv - R.T @ Yv).reshape(-1)])

    v0 = torch.tensor(np.concatenate([Y.ravel(), Z.ravel()]), dtype=torch.float64)
    J = jacfwd(lambda v: step(step(v)))(v0).numpy()
    idx = [1, 2, 5, 6]  # Y_12, Y_21, Z_12, Z_21 in the flattened (Y, Z)
    rest = [0, 3, 4, 7]
    block = J[np.ix_(idx, idx)]
    leak = float(max(np.abs(J[np.ix_(idx, rest)]).max(), np.abs(J[np.ix_(rest, idx)]).max()))
    eig = np.linalg.eigvals(block)
    eig = eig[np.argsort(np.abs(eig))]
    return dict(block=block, eig=eig, leak=leak, semi_convergent=is_semi_convergent(block))


def is_semi_convergent(A, tol: float = 1e-9) -> bool:
    """Whether ``A^k`` converges as ``k -> inf``: every eigenvalue has modulus below 1 or equals 1, and the
    eigenvalue 1 is semisimple (rank of ``A - I`` = n - its multiplicity). ``tol`` is the rounding allowance."""
    A = check_array("A", A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix, got shape {A.shape}")
    check_positive("tol", tol)
    eig = np.linalg.eigvals(A)
    unit = np.abs(eig - 1) <= np.sqrt(tol)
    if np.any(np.abs(eig[~unit]) >= 1 - tol):
        return False
    rank = np.linalg.matrix_rank(A - np.eye(A.shape[0]), tol=np.sqrt(tol))
    return bool(rank == A.shape[0] - unit.sum())
