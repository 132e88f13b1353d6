"""Chapter I.1: one-dimensional losses, the two-step map and its period-2 orbits (Chen & Bruna, Sec. 3-4,
Thm 1-2, Lemma 1, Corollaries 1-8, App. L).

The step size, the paper's ``eta``, is the argument ``lr`` (``eta`` and ``etas`` still work, deprecated, for one
release).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lib.config import (
    check_array,
    check_bool,
    check_callable,
    check_finite,
    check_instance,
    check_int,
    check_positive,
    check_range,
    renamed_arguments,
)

SQRT5_MINUS_1 = math.sqrt(5.0) - 1.0  #: loss of stability of the period-2 orbit (App. L)


THM2_K_MAX = math.sqrt(4.5) - 1.0  #: upper end of Thm 2's range of K = eta * mu


@dataclass(frozen=True)
class ScalarFunction:
    """A 1-D loss ``f`` with a local minimum ``xbar``; derivatives by nested torch autodiff (float64).

    Attributes:
        name: short identifier, e.g. ``"tanh"``.
        label: LaTeX formula for plots and tables.
        fn: torch callable mapping a 0-d float64 tensor to a 0-d tensor.
        xbar: the local minimum studied.
        source: where the paper uses it (e.g. ``"Cor 4"``).
        expect_oscillation: what the paper predicts (True: a stable 2-cycle just beyond EoS).
    """

    name: str
    label: str
    fn: Callable = field(repr=False)
    xbar: float
    source: str = ""
    expect_oscillation: bool = True

    def derivatives(self, x, order: int = 4) -> np.ndarray:
        """Derivatives ``f^(k)(x)`` for ``k = 0..order``; shape ``(order + 1, *x.shape)``."""
        import torch
        from torch.func import grad, vmap

        check_int("order", order, minimum=0, maximum=8)
        fs = [self.fn]
        for _ in range(order):
            fs.append(grad(fs[-1]))
        xa = np.asarray(x, dtype=float)
        xt = torch.tensor(xa.reshape(-1), dtype=torch.float64)
        out = np.stack([vmap(f)(xt).detach().numpy() for f in fs])
        return out.reshape((order + 1, *xa.shape))

    def value(self, x) -> np.ndarray:
        """``f(x)``, same shape as ``x``."""
        return self.derivatives(x, 0)[0]

    def grad(self, x) -> np.ndarray:
        """``f'(x)``, same shape as ``x`` (one backward pass; ``fn`` acts elementwise)."""
        import torch

        xa = np.array(x, dtype=float)
        xt = torch.tensor(xa, dtype=torch.float64, requires_grad=True)
        with torch.enable_grad():
            (g,) = torch.autograd.grad(self.fn(xt).sum(), xt)
        return g.detach().numpy().reshape(xa.shape)

    def at_min(self, order: int = 4) -> np.ndarray:
        """``(f, f', ..., f^(order))`` at ``xbar``."""
        return self.derivatives(np.array(self.xbar), order)

    @property
    def eos_lr(self) -> float:
        """The edge-of-stability learning rate ``2 / f''(xbar)``."""
        return float(2.0 / self.at_min(2)[2])


def _torch():
    import torch

    return torch


def quartic(mu: float = 1.0) -> ScalarFunction:
    """``f(x) = (x^2 - mu)^2 / 4`` with minimum ``sqrt(mu)`` (Sec. 4.2, Thm 2)."""
    check_positive("mu", mu)
    return ScalarFunction(
        "quartic",
        rf"$\frac{{1}}{{4}}(x^2-{mu:g})^2$",
        lambda x: (x * x - mu) ** 2 / 4,
        math.sqrt(mu),
        "Thm 2, Fig 4",
    )


def two_sin() -> ScalarFunction:
    """``f(x) = 2 sin x`` at its minimum ``-pi/2`` (``f'' = 2``, Fig 4)."""
    return ScalarFunction("2sin", r"$2\sin x$", lambda x: 2 * _torch().sin(x), -math.pi / 2, "Fig 4, Lemma 1")


def least_squares(
    g: Callable,
    y: float,
    xbar: float,
    name: str,
    label: str,
    source: str = "",
    expect_oscillation: bool = True,
) -> ScalarFunction:
    """``f(x) = (g(x) - y)^2`` with ``g(xbar) = y`` (Prop 1); ``g`` is a torch callable."""
    check_callable("g", g)
    check_finite("y", y)
    check_finite("xbar", xbar)
    check_bool("expect_oscillation", expect_oscillation)
    return ScalarFunction(name, label, lambda x: (g(x) - y) ** 2, float(xbar), source, expect_oscillation)


def compose(q: Callable, p: Callable) -> Callable:
    """The base model ``q(p(x))`` of Prop 2 (composition rule); torch callables in and out."""
    check_callable("q", q)
    check_callable("p", p)
    return lambda x: q(p(x))


def example_functions() -> list[ScalarFunction]:
    """The paper's example functions (Cor 1-8, the quartic, ``2 sin x``) plus three controls.

    Targets ``y`` are our choice where a corollary allows a range. The controls are the quadratic ``x^2/2``
    (diverges beyond EoS), ``(x^0.9 - 1)^2`` (Cor 5's formula with an exponent in (0.8, 1), where the
    condition fails) and ``(log(exp x) - 1)^2``, the composition of Cor 6's and Cor 7's base models,
    which is a
    quadratic although both parts satisfy Prop 1 (see Prop 2).
    """
    t = _torch()
    sig = t.sigmoid
    y3, y4, y8 = 0.5, 0.5, 0.3
    return [
        ScalarFunction("sin", r"$\sin x$", t.sin, -math.pi / 2, "Cor 1"),
        least_squares(lambda x: x * x, 1.0, 1.0, "x^2", r"$(x^2-1)^2$", "Cor 2"),
        least_squares(t.sin, y3, math.asin(y3), "sin-y", r"$(\sin x-0.5)^2$", "Cor 3"),
        least_squares(t.tanh, y4, math.atanh(y4), "tanh", r"$(\tanh x-0.5)^2$", "Cor 4"),
        least_squares(lambda x: x**3, 2.0, 2.0 ** (1 / 3), "x^3", r"$(x^3-2)^2$", "Cor 5 (alpha=3)"),
        least_squares(t.exp, 2.0, math.log(2.0), "exp", r"$(e^x-2)^2$", "Cor 6"),
        least_squares(t.log, 1.0, math.e, "log", r"$(\log x-1)^2$", "Cor 7"),
        least_squares(sig, y8, math.log(y8 / (1 - y8)), "sigmoid", r"$(\mathrm{sigmoid}(x)-0.3)^2$", "Cor 8"),
        quartic(1.0),
        two_sin(),
        least_squares(
            compose(t.tanh, t.sin),
            math.tanh(math.sin(0.5)),
            0.5,
            "tanh(sin)",
            r"$(\tanh(\sin x)-\tanh(\sin 0.5))^2$",
            "Prop 2 (q=tanh, p=sin)",
        ),
        ScalarFunction(
            "quadratic", r"$\frac{1}{2} x^2$", lambda x: x * x / 2, 0.0, "control (Sec. 4.1)", False
        ),
        least_squares(
            lambda x: x**0.9, 1.0, 1.0, "x^0.9", r"$(x^{0.9}-1)^2$", "control (Cor 5, alpha=0.9)", False
        ),
        least_squares(
            compose(t.log, t.exp),
            1.0,
            1.0,
            "log(exp)",
            r"$(\log(e^x)-1)^2$",
            "control (Prop 2, q=log, p=exp)",
            False,
        ),
    ]


def stable_oscillation_condition(f2, f3, f4):
    """Thm 1's quantity ``3 f'''^2 - f'' f''''`` at a minimum (floats or broadcastable arrays).

    Positive (with ``f''' != 0``) means GD has period-2 orbits for ``lr`` just above ``2 / f''``.
    """
    check_array("f2", f2)
    check_array("f3", f3)
    check_array("f4", f4)
    f2, f3, f4 = (np.asarray(a, dtype=float) for a in (f2, f3, f4))
    out = 3.0 * f3**2 - f2 * f4
    return float(out) if out.ndim == 0 else out


def higher_order_test(derivs, tol: float = 1e-9) -> dict:
    """Lemma 1's test from the derivatives ``(f'', f''', f^(4), ...)`` at a minimum (a 1-D sequence).

    Finds the lowest ``k >= 3`` with ``|f^(k)| > tol``. Thm 1: ``3 f'''^2 - f'' f'''' > 0``. Lemma 1 (ii): ``k``
    even and ``f^(k) < 0``. Lemma 1 (i): ``k`` odd and ``f^(k+1) < 0`` (with ``epsilon`` of the sign of
    ``f^(k)``).

    Returns:
        dict with ``k``, ``case`` (``"thm1"`` for ``k = 3``, ``"even"`` or ``"odd"`` for Lemma 1, ``"flat"`` if
        none) and ``holds`` (bool, or ``None`` when the derivatives given are not enough to decide).
    """
    check_array("derivs", derivs)
    d = np.asarray(derivs, dtype=float).ravel()
    if d.size < 2:
        raise ValueError(f"derivs must hold at least f'' and f''', got {d.size} values")
    check_positive("tol", tol)
    if d[0] <= 0:
        raise ValueError(f"derivs[0] = f''(xbar) must be > 0 at a strict minimum, got {d[0]}")
    for i in range(1, d.size):
        k = i + 2
        if abs(d[i]) > tol:
            if k == 3:
                if d.size < 3:
                    return dict(k=3, case="thm1", holds=None)
                return dict(k=3, case="thm1", holds=bool(stable_oscillation_condition(d[0], d[1], d[2]) > 0))
            if k % 2 == 0:
                return dict(k=k, case="even", holds=bool(d[i] < 0))
            if i + 1 >= d.size:
                return dict(k=k, case="odd", holds=None)
            return dict(k=k, case="odd", holds=bool(d[i + 1] < 0))
    return dict(k=None, case="flat", holds=False if d.size >= 3 else None)


def oscillation_test(func: ScalarFunction, order: int = 6, tol: float = 1e-9) -> dict:
    """Evaluate Thm 1 / Lemma 1 for ``func`` at its minimum.

    Returns:
        the dict of :func:`higher_order_test` plus ``f2``, ``f3``, ``f4`` (the derivatives at the minimum),
        ``condition`` (Thm 1's ``3 f'''^2 - f'' f''''``) and ``derivs`` (all derivatives up to ``order``).
    """
    check_instance("func", func, ScalarFunction)
    d = func.at_min(order)
    out = higher_order_test(d[2:], tol=tol)
    out.update(
        f2=float(d[2]),
        f3=float(d[3]),
        f4=float(d[4]),
        condition=stable_oscillation_condition(d[2], d[3], d[4]),
        derivs=d,
    )
    return out


@renamed_arguments(eta="lr")
def gd_map(func: ScalarFunction, lr: float) -> Callable:
    """The GD map ``F_eta(x) = x - eta f'(x)`` of Eq. (3) as a NumPy callable (arrays of any shape)."""
    if not isinstance(func, ScalarFunction):
        raise ValueError(f"func must be a ScalarFunction, got {func!r}")
    check_positive("lr", lr)
    return lambda x: np.asarray(x, dtype=float) - lr * func.grad(x)


@renamed_arguments(etas="lrs")
def gd_iterate_many(funcs: list[ScalarFunction], x0, lrs, steps: int, bound: float = 1e8) -> np.ndarray:
    """GD on several 1-D functions at once (one backward pass per step for all of them).

    ``x0``: shape ``(F, n)`` (``n`` starts per function) or ``(F,)``; ``lrs``: shape ``(F,)``. Entries whose
    magnitude exceeds ``bound`` or become non-finite are set to ``inf`` (divergence) and frozen.
    Returns the trajectories, shape ``(steps + 1, *x0.shape)``.
    """
    check_positive("bound", bound)
    check_array("x0", x0)
    check_array("lrs", lrs, positive=True)
    import torch

    check_int("steps", steps, minimum=0)
    x = np.array(x0, dtype=float)
    lrs = np.asarray(lrs, dtype=float)
    if x.shape[0] != len(funcs) or lrs.shape != (len(funcs),):
        raise ValueError(
            f"x0 must have leading size {len(funcs)} and lrs shape ({len(funcs)},), got "
            f"{x.shape} and {lrs.shape}"
        )
    eta_b = lrs.reshape((-1,) + (1,) * (x.ndim - 1))
    out = np.empty((steps + 1, *x.shape))
    out[0] = x
    with np.errstate(all="ignore"):
        for t in range(1, steps + 1):
            alive = np.isfinite(x)
            xt = torch.tensor(np.where(alive, x, 0.0), dtype=torch.float64, requires_grad=True)
            with torch.enable_grad():
                total = sum(f.fn(xt[i]).sum() for i, f in enumerate(funcs))
                (g,) = torch.autograd.grad(total, xt)
            x = x - eta_b * g.numpy()
            x = np.where(alive & np.isfinite(x) & (np.abs(x) < bound), x, np.inf)
            out[t] = x
    return out


@renamed_arguments(eta="lr")
def two_step_gap(func: ScalarFunction, x0, lr):
    """``F_eta(F_eta(x0)) - x0`` (zero at a period-2 point, Def 2); broadcasts over ``x0`` and ``lr``."""
    check_instance("func", func, ScalarFunction)
    x0 = check_array("x0", x0, finite=False)  # a map: diverged states pass through
    lr = check_array("lr", lr, positive=True)
    x0 = np.asarray(x0, dtype=float)
    lr = np.asarray(lr, dtype=float)
    x1 = x0 - lr * func.grad(np.broadcast_to(x0, np.broadcast_shapes(x0.shape, lr.shape)))
    return x1 - lr * func.grad(x1) - x0


def two_cycle_learning_rate(func: ScalarFunction, eps: float, span: float = 0.3, n_grid: int = 301) -> dict:
    """The learning rate for which ``x0 = xbar - eps`` is a period-2 point, nearest to ``2 / f''`` (Thm 1).

    Scans ``lr`` on ``[(1 - span), (1 + span)] * 2/f''`` for sign changes of ``F^2(x0) - x0`` and refines the
    one closest to ``2/f''`` with brentq.

    Returns:
        dict with ``lr`` (nan if none), its ``ratio`` to ``2/f''``, the ``multiplier`` ``(F^2)'(x0) = F'(x0)
        F'(x1)`` of the cycle, ``stable`` (``|multiplier| < 1``) and the cycle's points ``x0`` and ``x1`` (no
        ``x1`` when there is no such learning rate).
    """
    check_instance("func", func, ScalarFunction)
    check_finite("eps", eps)
    check_int("n_grid", n_grid, minimum=2)
    from scipy.optimize import brentq

    check_range("span", span, 0, 1, lo_open=True, hi_open=True)
    if eps == 0:
        raise ValueError("eps must be non-zero")
    e0 = func.eos_lr
    x0 = func.xbar - eps
    lrs = e0 * np.linspace(1 - span, 1 + span, n_grid)
    with np.errstate(all="ignore"):
        gaps = two_step_gap(func, np.full_like(lrs, x0), lrs)
    cands = []
    for i in range(n_grid - 1):
        a, b = gaps[i], gaps[i + 1]
        if np.isfinite(a) and np.isfinite(b) and a * b < 0:
            root = brentq(
                lambda e: float(two_step_gap(func, np.array(x0), np.array(e))),
                lrs[i],
                lrs[i + 1],
                xtol=1e-14,
            )
            cands.append(root)
    if not cands:
        return dict(lr=math.nan, ratio=math.nan, multiplier=math.nan, stable=False, x0=x0)
    lr = min(cands, key=lambda e: abs(e - e0))
    x1 = x0 - lr * float(func.grad(np.array(x0)))
    d0, d1 = func.derivatives(np.array([x0, x1]), 2)[2]
    mult = (1 - lr * d0) * (1 - lr * d1)
    return dict(lr=lr, ratio=lr / e0, multiplier=float(mult), stable=bool(abs(mult) < 1), x0=x0, x1=x1)


@renamed_arguments(eta="lr")
def period2_orbit(mu, lr):
    """The period-2 orbit ``(delta1, delta2)`` of GD on ``(x^2 - mu)^2 / 4``, Eq. (4).

    ``delta1 < sqrt(mu) < delta2``.

    Solving Eq. (4) for ``s = delta^2 / mu`` gives ``K s^2 - (K + 1) s + 1/K = 0`` with ``K = eta mu``, i.e.
    ``delta^2 = mu ((K + 1) -+ sqrt((K - 1)(K + 3))) / (2K)``. A positive orbit straddling ``sqrt(mu)``
    exists iff ``1 < K <= 3/2`` (Eq. 36); otherwise ``ValueError`` naming ``lr``. Broadcasts over arrays.
    """
    check_array("mu", mu, positive=True)
    check_array("lr", lr, positive=True)
    mu_a = np.asarray(mu, dtype=float)
    eta_a = np.asarray(lr, dtype=float)
    if np.any(~np.isfinite(mu_a)) or np.any(mu_a <= 0):
        raise ValueError(f"mu must be finite and > 0, got {mu!r}")
    K = eta_a * mu_a
    if np.any(~np.isfinite(K)) or np.any(K <= 1) or np.any(K > 1.5):
        raise ValueError(
            f"lr must satisfy 1 < lr*mu <= 1.5 (a period-2 orbit of Eq. (4) exists), got "
            f"lr={lr!r}, mu={mu!r}"
        )
    root = np.sqrt(np.maximum((K - 1) * (K + 3), 0.0))
    d1 = np.sqrt(mu_a * ((K + 1) - root) / (2 * K))
    d2 = np.sqrt(mu_a * ((K + 1) + root) / (2 * K))
    if d1.ndim == 0:
        return float(d1), float(d2)
    return d1, d2


def two_cycle_multiplier(K):
    """Multiplier ``(F^2)'(delta_1) = F'(delta_1) F'(delta_2) = 7 - 4K - 2K^2`` of the Eq. (4) orbit (App. L).

    Equals ``+1`` at ``K = 1`` (the orbit is born) and ``-1`` at ``K = sqrt(5) - 1`` (period doubling).
    Our derivation: with ``F'(x) = 1 + K(1 - 3x^2)`` for ``mu = 1`` and the orbit's ``s1 + s2 = (K+1)/K``,
    ``s1 s2 = 1/K^2``.
    """
    check_array("K", K, positive=True)
    K = np.asarray(K, dtype=float)
    out = 7 - 4 * K - 2 * K**2
    return float(out) if out.ndim == 0 else out


def quartic_gd_map(x, K, mu: float = 1.0):
    """GD map of ``(x^2 - mu)^2 / 4`` with ``eta = K / mu``: ``x + (K/mu)(mu - x^2) x`` (broadcasts)."""
    check_array("x", x, finite=False)  # a map: diverged (inf/NaN) states pass through
    check_array("K", K, positive=True)
    check_array("mu", mu, positive=True)
    x = np.asarray(x, dtype=float)
    K = np.asarray(K, dtype=float)
    return x + (K / mu) * (mu - x * x) * x


def quartic_multiplier_numeric(K, mu: float = 1.0) -> float:
    """``F'(delta_1) F'(delta_2)`` evaluated at the orbit of :func:`period2_orbit` (an independent check of
    :func:`two_cycle_multiplier`)."""
    check_positive("K", K)
    check_array("mu", mu, positive=True)
    d1, d2 = period2_orbit(mu, K / mu)
    lr = K / mu
    return float((1 + lr * (mu - 3 * d1**2)) * (1 + lr * (mu - 3 * d2**2)))


@renamed_arguments(eta="lr")
def orbit_eos_ratios(func: ScalarFunction, lr: float, points) -> np.ndarray:
    """``eta / (2 / f''(x)) = eta f''(x) / 2`` at each point of an orbit (Remark 1 after Thm 1).

    Below 1 where ``lr`` is under the local edge of stability ``2 / f''(x)``, above 1 where it is beyond it;
    Remark 1 says that a period-2 orbit of Thm 1 has one point of each kind. Same shape as ``points``.
    """
    if not isinstance(func, ScalarFunction):
        raise ValueError(f"func must be a ScalarFunction, got {func!r}")
    check_positive("lr", lr)
    pts = check_array("points", points)
    return 0.5 * lr * func.derivatives(np.asarray(pts, dtype=float), 2)[2]


def prop1_quantity(g: Callable, x) -> np.ndarray:
    """Prop 1's quantity ``g'(x) g'''(x) - 6 g''(x)^2`` of a base model ``g`` (a torch callable), by autodiff.

    Prop 1 asks for it to be negative (and ``g' != 0``) at the minimum of ``(g - y)^2``; then
    ``3 f'''^2 - f'' f'''' = 16 g'^2 (6 g''^2 - g' g''') > 0``. Same shape as ``x``.
    """
    check_callable("g", g)
    xa = check_array("x", x)
    d = ScalarFunction("g", "g", g, 0.0).derivatives(np.asarray(xa, dtype=float), 3)
    return d[1] * d[3] - 6.0 * d[2] ** 2


def softplus_gaussian_functions() -> list[ScalarFunction]:
    """The two base models Sec. 4.1 names without a corollary: ``(softplus(x) - y)^2`` and ``(exp(-x^2) - y)^2``.

    Targets (our choice): softplus ``y = 0.5, 2`` (minimum ``log(e^y - 1)``); Gaussian ``y = 0.3, e^{-1/2}, 0.8``
    (minimum ``sqrt(-log y) > 0``; ``y = e^{-1/2}`` puts it at the inflection point ``g'' = 0``, where
    ``f''' = 0`` and Lemma 1 with ``k = 4`` decides). By hand, softplus gives
    ``g'g''' - 6g''^2 = s^2 (1 - s)(4s - 5) < 0`` with ``s = sigmoid(x)``, and the Gaussian gives
    ``(-80x^4 + 72x^2 - 24) e^{-2x^2} < 0``: the condition holds wherever ``g' != 0``.
    """
    t = _torch()
    sp = t.nn.functional.softplus

    def gauss(x):
        return t.exp(-x * x)

    out = []
    for y in (0.5, 2.0):
        out.append(
            least_squares(sp, y, math.log(math.expm1(y)), f"softplus-{y:g}", rf"$(\mathrm{{softplus}}(x)-{y:g})^2$",
                          "Prop 1 (softplus)")
        )
    for y, lab in ((0.3, "0.3"), (math.exp(-0.5), "e^{-1/2}"), (0.8, "0.8")):
        out.append(
            least_squares(gauss, y, math.sqrt(-math.log(y)), f"gauss-{y:.3g}", rf"$(e^{{-x^2}}-{lab})^2$",
                          "Prop 1 (Gaussian)")
        )
    return out
