"""Chapter I.2: the scalar factorisation ``(xy - mu)^2 / 2`` (Eqs. 13-16, Lemma 2, Props 5-7) and the single
ReLU neuron on the sphere (Sec. 5, Thm 4, App. B.1) of Chen & Bruna.

The step size, the paper's ``eta``, is the argument ``lr`` (``eta`` still works, deprecated, for one release).
"""

from __future__ import annotations

import math

import numpy as np

from lib.config import check_array, check_finite, check_int, check_positive, check_range, renamed_arguments
from lib.maps import stop_at_divergence


@renamed_arguments(eta="lr")
def scalar_fact_step(x, y, lr, mu: float = 1.0):
    """One GD step on ``(xy - mu)^2 / 2`` (Eq. 13); broadcasts. Returns ``(x', y')``."""
    check_array("x", x, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("y", y, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("lr", lr, positive=True)
    check_array("mu", mu, positive=True)
    r = x * y - mu
    return x - lr * r * y, y - lr * r * x


@renamed_arguments(eta="lr")
def run_scalar_fact(x0, y0, lr, steps: int, mu: float = 1.0, bound: float = 1e6):
    """GD trajectories on ``(xy - mu)^2 / 2``; ``x0, y0, lr`` broadcast to a batch shape ``S``.

    Returns ``(xs, ys)`` of shape ``(steps + 1, *S)``; diverging runs (``|x| or |y| > bound``) become ``inf``.
    """
    check_array("x0", x0, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("y0", y0, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("lr", lr, positive=True)
    check_array("mu", mu, positive=True)
    check_positive("bound", bound)
    check_int("steps", steps, minimum=0)
    check_array("mu", mu, positive=True)
    x, y, lr = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (x0, y0, lr)))
    x, y = x.copy(), y.copy()
    xs = np.empty((steps + 1, *x.shape))
    ys = np.empty_like(xs)
    xs[0], ys[0] = x, y
    with np.errstate(all="ignore"):
        for t in range(1, steps + 1):
            x, y = scalar_fact_step(x, y, lr, mu)
            bad = ~np.isfinite(x) | ~np.isfinite(y) | (np.abs(x) > bound) | (np.abs(y) > bound)
            x = np.where(bad, np.inf, x)
            y = np.where(bad, np.inf, y)
            xs[t], ys[t] = x, y
    return xs, ys


@renamed_arguments(eta="lr")
def imbalance_next(x, y, lr, mu: float = 1.0):
    """``y' - x' = (y - x)(1 + eta (xy - mu))`` (Eq. 50)."""
    check_array("x", x, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("y", y, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("lr", lr, positive=True)
    check_array("mu", mu, positive=True)
    return (y - x) * (1 + lr * (x * y - mu))


@renamed_arguments(eta="lr")
def product_next(x, y, lr, mu: float = 1.0):
    """``x' y' = xy (1 - eta (xy - mu))^2 - eta (xy - mu)(x - y)^2`` (Eq. 16)."""
    check_array("x", x, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("y", y, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("lr", lr, positive=True)
    check_array("mu", mu, positive=True)
    r = x * y - mu
    return x * y * (1 - lr * r) ** 2 - lr * r * (x - y) ** 2


@renamed_arguments(eta="lr")
def lemma2_certificate(x0, y0, lr, mu: float = 1.0) -> dict:
    """Lemma 2's sufficient condition for the iterates to stay positive (as stated in App. A.1).

    With ``m = |y0 - x0| / sqrt(mu)``, ``p = 4 / (m + sqrt(m^2 + 4))^2``, ``q = (1 + p)^2`` and ``K = eta
    mu``,
    the certificate is ``max{eta (x0 y0 - mu), 4/27 (1+K)^3 + (2/3 K^2 - K/3 + q K^2 m^2 / (2(K+1))) q
    m^2 - K}
    < p``; it requires ``x0 y0 > mu``. Arrays broadcast.

    Returns:
        dict with ``lhs`` (the certificate), ``p``, ``m`` (as above) and ``certified`` (``lhs < p``, ``x0 y0 >
        mu`` and ``x0, y0 > 0``).
    """
    check_array("x0", x0)
    check_array("y0", y0)
    check_array("lr", lr, positive=True)
    check_array("mu", mu, positive=True)
    check_array("mu", mu, positive=True)
    x0, y0, lr = (np.asarray(a, dtype=float) for a in (x0, y0, lr))
    if np.any(lr <= 0):
        raise ValueError(f"lr must be > 0, got {lr!r}")
    K = lr * mu
    m = np.abs(y0 - x0) / math.sqrt(mu)
    p = 4.0 / (m + np.sqrt(m * m + 4)) ** 2
    q = (1 + p) ** 2
    a = lr * (x0 * y0 - mu)
    b = 4 / 27 * (1 + K) ** 3 + (2 / 3 * K**2 - K / 3 + q * K**2 * m**2 / (2 * (K + 1))) * q * m**2 - K
    lhs = np.maximum(a, b)
    certified = (lhs < p) & (x0 * y0 > mu) & (x0 > 0) & (y0 > 0)
    return dict(lhs=lhs, p=p, certified=certified, m=m)


def _check_mu_shape(x, y, mu) -> None:
    """``mu`` (a number or an array) must broadcast to the shape of ``x`` and ``y`` without enlarging it."""
    try:
        xy = np.broadcast_shapes(np.shape(x), np.shape(y))
        fits = np.broadcast_shapes(xy, np.shape(mu)) == xy
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"mu must broadcast to the shape of x and y, got shapes {np.shape(mu)}, {np.shape(x)}, "
                         f"{np.shape(y)}")


def hessian_xy(x, y, mu: float = 1.0) -> np.ndarray:
    """Hessian of ``(xy - mu)^2 / 2`` (Eq. 14), shape ``(*S, 2, 2)``."""
    check_array("x", x, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("y", y, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("mu", mu, positive=True)
    _check_mu_shape(x, y, mu)
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    off = 2 * x * y - mu
    return np.stack([np.stack([y * y, off], -1), np.stack([off, x * x], -1)], -2)


def sharpness_xy(x, y, mu: float = 1.0):
    """Largest Hessian eigenvalue of ``(xy - mu)^2 / 2`` at ``(x, y)`` (closed form of the 2x2 problem)."""
    check_array("x", x, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("y", y, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("mu", mu, positive=True)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    tr = x * x + y * y
    disc = np.sqrt((y * y - x * x) ** 2 + 4 * (2 * x * y - mu) ** 2)
    return (tr + disc) / 2


@renamed_arguments(eta="lr")
def damian_indicator(x, y, lr, mu: float = 1.0):
    """``(lambda_1, grad L . u_1)`` at ``(x, y)``: the two quantities defining Damian et al.'s set
    ``M = {lambda_1 < 2/eta, grad L . u_1 = 0}`` (Sec. 6.2). Arrays broadcast; ``u_1`` is sign-fixed by
    ``u_1 . (1, 1) >= 0``."""
    check_array("x", x, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("y", y, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("lr", lr, positive=True)
    check_array("mu", mu, positive=True)
    _check_mu_shape(x, y, mu)
    check_positive("lr", lr)
    H = hessian_xy(x, y, mu)
    w, V = np.linalg.eigh(H)
    u = V[..., :, 1]
    u = u * np.where((u[..., 0] + u[..., 1]) >= 0, 1.0, -1.0)[..., None]
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    r = x * y - mu
    g = np.stack([r * y, r * x], -1)
    return w[..., 1], np.sum(g * u, -1)


@renamed_arguments(eta="lr")
def candidate_manifold_indicator(x, y, lr, mu: float = 1.0):
    """``(lambda_2, grad L . u_1)`` at ``(x, y)``: the two quantities defining the paper's candidate set
    ``M_c = {lambda_2 < 2/eta, grad L . u_1 = 0}`` (Def 4), with ``lambda_2`` the second (here: smallest)
    Hessian eigenvalue and ``u_1`` the leading eigenvector, sign-fixed as in :func:`damian_indicator`.

    For ``(xy - mu)^2 / 2`` the gradient ``(xy - mu)(y, x)`` is an eigenvector of the Hessian only where
    ``(x^2 - y^2)(xy - mu) = 0``, so off the minima ``grad L . u_1 = 0`` holds only on the diagonal ``x = y``, and
    there exactly when ``(1, 1)`` is the second eigenvector (``x^2 < mu / 2``).
    """
    check_array("x", x, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("y", y, finite=False)
    _check_mu_shape(x, y, mu)
    lam1, gu = damian_indicator(x, y, lr, mu)
    lam2 = np.linalg.eigvalsh(hessian_xy(x, y, mu))[..., 0]
    return lam2, gu


@renamed_arguments(eta="lr")
def damian_manifold_interval(lr, mu: float = 1.0):
    """The minimisers of ``(xy - mu)^2 / 2`` (``x, y > 0``) with sharpness ``x^2 + y^2 < 2 / eta`` (Props
    5-6).

    On ``xy = mu`` the gradient vanishes, so these points lie in ``M``. Returns ``(x_lo, x_hi)`` with
    ``y = mu / x``, or ``None`` when ``eta * mu >= 1`` (Prop 5: no minimiser is flat enough). For ``mu = 1``
    this is Prop 6's ``x + y < sqrt(2 + 2/eta)``.
    """
    check_positive("lr", lr)
    check_positive("mu", mu)
    c = 2.0 / lr  # x^2 + mu^2 / x^2 < c  <=>  s^2 - c s + mu^2 < 0 with s = x^2
    disc = c * c - 4 * mu * mu
    if disc <= 0:
        return None
    s_lo, s_hi = (c - math.sqrt(disc)) / 2, (c + math.sqrt(disc)) / 2
    return math.sqrt(s_lo), math.sqrt(s_hi)


@renamed_arguments(eta="lr")
def project_onto_manifold(x, y, lr, mu: float = 1.0):
    """Closest point (Euclidean) of the segment ``M`` of :func:`damian_manifold_interval` to each ``(x, y)``.

    A stand-in for Damian et al.'s projection. Returns ``(px, py)`` arrays (nan when ``M`` is empty).
    """
    check_array("x", x, finite=False)
    check_array("y", y, finite=False)
    from scipy.optimize import minimize_scalar

    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    iv = damian_manifold_interval(lr, mu)
    px = np.full(x.shape, np.nan)
    if iv is None:
        return px, px.copy()
    lo, hi = iv
    for idx in np.ndindex(x.shape):
        a, b = x[idx], y[idx]
        if not (np.isfinite(a) and np.isfinite(b)):
            continue
        res = minimize_scalar(
            lambda s, a=a, b=b: (s - a) ** 2 + (mu / s - b) ** 2,
            bounds=(lo, hi),
            method="bounded",
            options=dict(xatol=1e-12),
        )
        px[idx] = res.x
    return px, mu / px


def product_hessian_top(x) -> float:
    """Largest Hessian eigenvalue of ``(prod_i x_i - 1)^2 / n`` at ``x`` (shape ``(n,)``), Prop 7."""
    check_array("x", x)
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"x must be a 1-D array with n >= 2 entries, got shape {x.shape}")
    n = x.size
    P = np.prod(x)
    g = P / x  # d prod / d x_i
    H2 = np.outer(g, g)
    cross = P / np.outer(x, x)
    np.fill_diagonal(cross, 0.0)
    H = 2 / n * (H2 + (P - 1) * cross)
    return float(np.linalg.eigvalsh(H)[-1])


def prop7_min_sharpness(n: int) -> float:
    """Smallest sharpness over the minimisers ``prod x_i = 1`` of ``(prod x_i - 1)^2 / n``: ``2`` (at
    ``x_i = 1``).

    At a minimiser the Hessian is ``(2/n) g g^T`` with ``g_i = 1/x_i``, so ``lambda = (2/n) sum 1/x_i^2
    >= 2`` by
    AM-GM; hence for ``eta > 1`` no minimiser has ``lambda < 2/eta`` (Prop 7).
    """
    check_int("n", n, minimum=2)
    return 2.0


def _h(alpha):
    return np.sin(alpha) + (np.pi - alpha) * np.cos(alpha)


def _single_neuron_args(v, w, w_teacher):
    """``(v, w, w_teacher)`` checked: a finite number and two finite 1-D arrays of the same length."""
    check_finite("v", v)
    w = check_array("w", w, ndim=1)
    wt = check_array("w_teacher", w_teacher, ndim=1)
    if w.shape != wt.shape:
        raise ValueError(f"w and w_teacher must be 1-D of the same length, got {w.shape} and {wt.shape}")
    return float(v), w, wt


def single_neuron_population_loss(v, w, w_teacher):
    """Population loss ``E_x (v relu(w.x) - relu(w~.x))^2`` for ``x ~ Unif(S^{d-1})``.

    ``= (v^2 |w|^2 - (2/pi) v |w| |w~| (sin a + (pi - a) cos a) + |w~|^2) / (2d)`` with ``a = angle(w, w~)``
    (our integration; consistent with the paper's gradient in Sec. 5). ``w``: shape ``(d,)``.
    """
    v, w, wt = _single_neuron_args(v, w, w_teacher)
    d = w.size
    nw, nt = np.linalg.norm(w), np.linalg.norm(wt)
    a = np.arccos(np.clip(w @ wt / (nw * nt), -1, 1))
    return float((v * v * nw**2 - 2 / np.pi * v * nw * nt * _h(a) + nt**2) / (2 * d))


def single_neuron_population_grad(v, w, w_teacher):
    """The population gradient of Sec. 5: returns ``(dL/dv, dL/dw)`` with ``dL/dw`` of shape ``(d,)``.

    ``dL/dv = (v|w|^2 - |w| |w~| (sin a + (pi-a) cos a)/pi) / d`` and
    ``dL/dw = (v^2 w - v (pi - a + sin(2a)/2) w~/pi - v |w~| (1 - cos 2a)/(2 pi) w~_perp) / d``, where
    ``w~_perp``
    is the unit vector of ``w`` orthogonal to ``w~`` (zero when ``w`` is parallel to ``w~``).
    """
    v, w, wt = _single_neuron_args(v, w, w_teacher)
    d = w.size
    nw, nt = np.linalg.norm(w), np.linalg.norm(wt)
    if nw == 0 or nt == 0:
        raise ValueError("w and w_teacher must be non-zero")
    cos_a = np.clip(w @ wt / (nw * nt), -1, 1)
    a = np.arccos(cos_a)
    perp = w - (w @ wt) / nt**2 * wt
    np_ = np.linalg.norm(perp)
    perp = perp / np_ if np_ > 1e-300 else np.zeros_like(w)
    gv = (v * nw**2 - nw * nt * _h(a) / np.pi) / d
    gw = (
        v * v * w
        - v * (np.pi - a + 0.5 * np.sin(2 * a)) * wt / np.pi
        - v * nt * (1 - np.cos(2 * a)) / (2 * np.pi) * perp
    ) / d
    return float(gv), gw


def single_neuron_reduced_step(v, wx, wy, K):
    """One population-GD step in reduced coordinates, Eqs. (77)-(80), teacher ``[1, 0]``, ``eta = K d``.

    Uses the angle ``a = atan2(wy, wx)`` (so ``wx = 0`` is allowed) and ``gamma = (a - wx wy / |w|^2) / pi``:
    ``dwx = K v [(1 - v wx) - gamma]``, ``dwy = wy K (-v^2 + v wy / (pi |w|^2))``,
    ``dv = K wx [(1 - v wx) - gamma] + K wy^2 / v (-v^2 + v wy / (pi |w|^2))``, ``wy' = |wy + dwy|``.
    Broadcasts over arrays.
    """
    v, wx, wy = (np.asarray(a, dtype=float) for a in (v, wx, wy))
    n2 = wx * wx + wy * wy
    a = np.arctan2(wy, wx)
    gamma = (a - wx * wy / n2) / np.pi
    common = (1 - v * wx) - gamma
    fy = K * (-v * v + v * wy / (np.pi * n2))
    dwx = K * v * common
    dwy = wy * fy
    # dv written without dividing by v: K wy^2 / v (-v^2 + v wy/(pi n2)) = K wy^2 (-v + wy/(pi n2))
    dv = K * wx * common + K * wy * wy * (-v + wy / (np.pi * n2))
    return v + dv, wx + dwx, np.abs(wy + dwy)


def run_single_neuron_population(K, steps: int, v0=0.1, w0=(0.0, 0.1)):
    """Population GD (reduced map) from ``(v0, w0)`` with teacher ``[1, 0]``; ``K``, ``v0`` may be arrays.

    ``w0 = (w_x, w_y)`` may hold arrays too. Returns a dict of arrays ``v, wx, wy`` of shape
    ``(steps + 1, *S)``, and ``diverged``, ``diverged_step`` of shape ``S`` (:func:`lib.maps.stop_at_divergence`:
    entries after a run's divergence are NaN).
    """
    check_int("steps", steps, minimum=0)
    K = check_array("K", K, positive=True)
    if np.any(K <= 0):
        raise ValueError(f"K must be > 0, got {K!r}")
    if isinstance(w0, (str, bytes)) or not hasattr(w0, "__len__") or len(w0) != 2:
        raise ValueError(f"w0 must be a pair (w_x, w_y) of numbers or arrays, got {w0!r}")
    v, wx, wy = np.broadcast_arrays(
        check_array("v0", v0), check_array("w0", w0[0]), np.abs(check_array("w0", w0[1])), K
    )[:3]
    out = {k: np.empty((steps + 1, *v.shape)) for k in ("v", "wx", "wy")}
    out["v"][0], out["wx"][0], out["wy"][0] = v, wx, wy
    with np.errstate(all="ignore"):
        for t in range(1, steps + 1):
            v, wx, wy = single_neuron_reduced_step(v, wx, wy, K)
            out["v"][t], out["wx"][t], out["wy"][t] = v, wx, wy
    return stop_at_divergence(out, batch_ndim=v.ndim)


@renamed_arguments(eta="lr")
def run_single_neuron_empirical(X, lr: float, steps: int, v0=0.1, w0=(0.0, 0.1), w_teacher=(1.0, 0.0)):
    """Full-batch GD on the empirical loss ``(1/m) sum_i (v relu(w.x_i) - relu(w~.x_i))^2`` (Fig 5).

    ``X``: data of shape ``(B, m, d)`` or ``(m, d)`` (a batch of ``B`` independent data sets, e.g. seeds).

    Returns:
        dict with ``v`` ``(steps+1, B)``, ``w`` ``(steps+1, B, d)``, ``loss`` ``(steps+1, B)`` (with 2-D ``X``
        the batch axis is dropped); when ``d = 2`` also ``wx`` and ``wy``, ``w`` in the teacher frame (along the
        teacher and the absolute value across it); ``diverged`` ``(B,)`` and ``diverged_step`` ``(B,)`` (-1 if
        never) follow :func:`lib.maps.stop_at_divergence`; entries after a run's divergence are NaN.
    """
    check_array("w_teacher", w_teacher)
    check_array("X", X)
    check_positive("lr", lr)
    check_int("steps", steps, minimum=0)
    X = np.asarray(X, dtype=float)
    single = X.ndim == 2
    if single:
        X = X[None]
    if X.ndim != 3:
        raise ValueError(f"X must have shape (m, d) or (B, m, d), got {X.shape}")
    B, m, d = X.shape
    wt = np.asarray(w_teacher, dtype=float)
    if wt.shape != (d,):
        raise ValueError(f"w_teacher must have shape ({d},), got {wt.shape}")
    Y = np.maximum(X @ wt, 0.0)  # (B, m)
    check_finite("v0", v0)
    check_array("w0", w0, ndim=1)
    v = np.full(B, float(v0))
    w = np.tile(np.asarray(w0, dtype=float), (B, 1))
    vs = np.empty((steps + 1, B))
    ws = np.empty((steps + 1, B, d))
    losses = np.empty((steps + 1, B))
    with np.errstate(all="ignore"):
        for t in range(steps + 1):
            pre = np.einsum("bmd,bd->bm", X, w)
            act = np.maximum(pre, 0.0)
            r = v[:, None] * act - Y
            vs[t], ws[t], losses[t] = v, w, np.mean(r * r, axis=1)
            if t == steps:
                break
            gv = 2 * np.mean(r * act, axis=1)
            gw = 2 * v[:, None] * np.einsum("bm,bmd->bd", r * (pre > 0), X) / m
            v, w = v - lr * gv, w - lr * gw
    out = dict(v=vs, w=ws, loss=losses)
    if d == 2:
        out["wx"] = ws[..., 0] * wt[0] / np.linalg.norm(wt) + ws[..., 1] * wt[1] / np.linalg.norm(wt)
        out["wy"] = np.abs(ws[..., 0] * (-wt[1]) + ws[..., 1] * wt[0]) / np.linalg.norm(wt)
    out = stop_at_divergence(out, ["v", "w", "loss"], loss_keys=["loss"], batch_ndim=1)
    if single:
        out = {k: (a[:, 0] if np.ndim(a) > 1 else a[0]) for k, a in out.items()}
        out["diverged"], out["diverged_step"] = bool(out["diverged"]), int(out["diverged_step"])
    return out


def thm4_bound(t, K: float, eps: float):
    """Thm 4's bound ``w_y(t) < 0.1 (1 - 0.030 K)^(t - T1 - 4)`` for ``t >= T1 + 4``.

    ``T1 = ceil(log_{2.56}(1.35 / (pi beta^2)))`` with ``beta = (1 + 1.1/pi) eps``. Returns ``(bound, T1)``;
    the bound is ``inf`` for ``t < T1 + 4`` (the theorem says nothing there). Valid for ``K in (1, 1.1]``,
    ``eps in (0, 0.1]``.
    """
    check_range("K", K, 1, 1.1, lo_open=True)
    check_range("eps", eps, 0, 0.1, lo_open=True)
    beta = (1 + 1.1 / np.pi) * eps
    T1 = int(math.ceil(math.log(1.35 / (np.pi * beta**2)) / math.log(2.56)))
    t = check_array("t", t)
    bound = np.where(t >= T1 + 4, 0.1 * (1 - 0.030 * K) ** (t - T1 - 4), np.inf)
    return bound, T1
