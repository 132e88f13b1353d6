"""Chapter II.2, after the plateau: Lyapunov rates of phases III-IV and the balance of separate query/key
weights (Lemma 5.4) in the reparametrised dynamics of Wang et al. (App. C).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lib.config import check_array, check_bool, check_finite, check_instance, check_int, check_positive
from lib.flows import integrate_flow
from lib.parts.induction_heads.four_phases import (
    FourPhaseResult,
    _check_setting,
    phi,
    psi,
    rhs_g4,
    rhs_ih,
    targets_star,
)


# ------------------------------------------------------------------------------------------ phase IV, Lyapunov
def lyapunov_g4(p, g, alpha_star: float):
    """``G(u, v) = (u^2 + v^2)/2`` with ``u = e^{-p}``, ``v = u g* + g* - g`` (App. C.1, 4-gram head)."""
    check_array("p", p, finite=False)
    check_array("g", g, finite=False)
    g_star, _ = targets_star(alpha_star)
    u = np.exp(-np.asarray(p, dtype=float))
    v = u * g_star + g_star - np.asarray(g, dtype=float)
    return 0.5 * (u**2 + v**2)


def lyapunov_ih(w, h, alpha_star: float, w_star: float):
    """``G(v, h) = ((v - v*)^2 + (h - h*)^2)/2`` with ``v = w^2`` (App. C.2, induction head)."""
    check_array("w", w, finite=False)
    check_array("h", h, finite=False)
    check_positive("w_star", w_star)
    _, h_star = targets_star(alpha_star)
    v = np.asarray(w, dtype=float) ** 2
    return 0.5 * ((v - w_star**2) ** 2 + (np.asarray(h, dtype=float) - h_star) ** 2)


def lyapunov_rates(res: FourPhaseResult) -> dict:
    """The two Lyapunov functions along a trajectory and their exact time derivatives (chain rule on the ODE).

    Returns:
        dict of arrays (n_t,): ``G4`` and ``Gih`` (the two Lyapunov functions), ``dG4`` and ``dGih`` (their time
        derivatives).
    """
    check_instance("res", res, FourPhaseResult)
    s = res.setting
    a, ws, L = s["alpha_star"], s["w_star"], s["L"]
    g_star, h_star = targets_star(a)
    dG4 = np.empty_like(res.t)
    dGih = np.empty_like(res.t)
    for k in range(res.t.size):
        p, g, w, h = res.p[k], res.g[k], res.w[k], res.h[k]
        dp, dg = rhs_g4(p, g, a, L)
        dw, dh = rhs_ih(w, h, a, ws, L, separate_qk=s["separate_qk"])
        u = np.exp(-p)
        v = u * g_star + g_star - g
        du = -u * dp
        dG4[k] = u * du + v * (du * g_star - dg)
        dGih[k] = (w**2 - ws**2) * 2 * w * dw + (h - h_star) * dh
    return dict(G4=lyapunov_g4(res.p, res.g, a), dG4=dG4, Gih=lyapunov_ih(res.w, res.h, a, ws), dGih=dGih)


def ih_linear_rate(alpha_star: float, w_star: float, L: int, *, separate_qk: bool = False) -> float:
    """Slowest relaxation rate of (w, h) at the optimum (w*, h*): the smallest ``-Re(eig)`` of the Jacobian.

    Near the optimum ``L_IH`` decays like ``exp(-2 lambda t)``; ``lambda`` is ``Theta(w*^2/((1+a)^2 L))``.
    """
    check_bool("separate_qk", separate_qk)
    _check_setting(alpha_star, w_star, L)
    _, h_star = targets_star(alpha_star)
    x0 = np.array([w_star, h_star])
    eps = 1e-6
    J = np.empty((2, 2))
    for j in range(2):
        d = np.zeros(2)
        d[j] = eps
        fp = np.array(rhs_ih(*(x0 + d), alpha_star, w_star, L, separate_qk=separate_qk))
        fm = np.array(rhs_ih(*(x0 - d), alpha_star, w_star, L, separate_qk=separate_qk))
        J[:, j] = (fp - fm) / (2 * eps)
    return float(np.min(-np.linalg.eigvals(J).real))


def ih_grad_v(v, h, alpha_star: float, w_star: float, L: int) -> tuple[float, float]:
    """``(dL/dv, dL/dh)`` of Eq. 22 written in ``v = wq*wk``."""
    check_array("v", v, finite=False)
    check_array("h", h, finite=False)
    check_positive("w_star", w_star)
    check_int("L", L, minimum=1)
    _, h_star = targets_star(alpha_star)
    vs = w_star**2
    dv = (h**2 * phi(2 * v) - h * h_star * phi(v + vs)) / (L - 2)
    dh = (h * psi(2 * v) - h_star * psi(v + vs)) / (L - 2)
    return float(dv), float(dh)


def balance_flow(
    wq0: float,
    wk0: float,
    h0: float,
    alpha_star: float,
    w_star: float,
    L: int,
    t_max: float,
    *,
    n_points: int = 400,
):
    """Gradient flow on ``(wq, wk, h)`` (Eq. 22 in ``v = wq wk``); returns ``(t, wq, wk, h)``, shape (n_points+1,).

    Lemma 5.4: ``wq^2 - wk^2`` is conserved, because ``d/dt (wq^2 - wk^2) = -2 wq wk dL/dv + 2 wk wq dL/dv = 0``.
    """
    for name, value in (("wq0", wq0), ("wk0", wk0), ("h0", h0)):
        check_finite(name, value)
    check_positive("t_max", t_max)
    check_int("n_points", n_points, minimum=2)
    _check_setting(alpha_star, w_star, L)

    def rhs(t, y):
        wq, wk, h = y
        dv, dh = ih_grad_v(wq * wk, h, alpha_star, w_star, L)
        return [-dv * wk, -dv * wq, -dh]

    res = integrate_flow(
        rhs, [wq0, wk0, h0], (0.0, t_max), log_time_grid=n_points, t_min=t_max * 1e-5, rtol=1e-11, atol=1e-15
    )
    return res.t, res.y[0], res.y[1], res.y[2]


@dataclass
class BalanceRun:
    """What :func:`balance_gd` returns; unpacks as ``wq, wk, h, G`` (arrays of shape (steps+1,)).

    A run that leaves the model's domain (``|2 wq wk| >= 1`` or ``|wq wk + w*^2| >= 1``, where the IH loss of
    Eq. 22 is not defined) or produces a non-finite value stops there: ``diverged`` is True, ``diverged_step`` the
    first step whose iterate is out, and the entries from that step on are nan.
    """

    wq: np.ndarray
    wk: np.ndarray
    h: np.ndarray
    G: np.ndarray
    diverged: bool = False
    diverged_step: int | None = None

    def __iter__(self):
        return iter((self.wq, self.wk, self.h, self.G))


def balance_gd(
    wq0: float, wk0: float, h0: float, alpha_star: float, w_star: float, L: int, *, lr: float, steps: int
) -> BalanceRun:
    """Gradient descent on ``(wq, wk, h)`` with step ``lr`` (a hand-written loop: the exact discrete map of the
    reduced IH loss of Eq. 22); returns a :class:`BalanceRun` (arrays (steps+1,) ``wq, wk, h, G``).

    ``G = dL/dv`` at each step (last entry nan). One step maps ``wq^2 - wk^2`` to ``(wq^2 - wk^2)(1 - lr^2 G^2)``
    exactly, so the balance of Lemma 5.4 drifts at second order per step. A run that leaves the loss's domain is
    recorded as diverged, not raised.
    """
    for name, value in (("wq0", wq0), ("wk0", wk0), ("h0", h0)):
        check_finite(name, value)
    _check_setting(alpha_star, w_star, L)
    check_positive("lr", lr)
    check_int("steps", steps, minimum=1)
    wq, wk, h = np.full(steps + 1, np.nan), np.full(steps + 1, np.nan), np.full(steps + 1, np.nan)
    G = np.full(steps + 1, np.nan)
    wq[0], wk[0], h[0] = wq0, wk0, h0

    def inside(k):
        v = wq[k] * wk[k]
        return bool(np.isfinite([wq[k], wk[k], h[k]]).all() and abs(2 * v) < 1 and abs(v + w_star**2) < 1)

    if not inside(0):
        raise ValueError("wq0, wk0 and h0 must be finite with |2 wq0 wk0| < 1 and |wq0 wk0 + w_star^2| < 1")
    for k in range(steps):
        dv, dh = ih_grad_v(wq[k] * wk[k], h[k], alpha_star, w_star, L)
        G[k] = dv
        wq[k + 1] = wq[k] - lr * dv * wk[k]
        wk[k + 1] = wk[k] - lr * dv * wq[k]
        h[k + 1] = h[k] - lr * dh
        if not inside(k + 1):
            wq[k + 1], wk[k + 1], h[k + 1] = np.nan, np.nan, np.nan
            return BalanceRun(wq, wk, h, G, diverged=True, diverged_step=k + 1)
    return BalanceRun(wq, wk, h, G)
