"""Low-dimensional theory of Chen & Bruna, *Beyond the Edge of Stability via Two-step Gradient Updates*.

Contents (paper numbering, ICML 2023 version):

* one-dimensional functions: the GD map ``F_eta(x) = x - eta f'(x)`` (Eq. 3), the stable-oscillation
  condition ``3 f'''^2 - f'' f''''`` of Thm 1, the higher-order test of Lemma 1, the example functions of
  Corollaries 1-8 (plus the quartic, ``2 sin x``, compositions and the quadratic control), the period-2
  orbit of
  ``(x^2 - mu)^2 / 4`` (Eq. 4 / Thm 2) and its multiplier ``7 - 4K - 2K^2`` (App. L);
* the two-dimensional scalar factorisation ``(xy - mu)^2 / 2``: GD map (Eq. 13), the balancing identities
  (Eq. 15-16, 50, 52), Lemma 2's positivity certificate, the Damian et al. manifold (Props 5-6) and the
  product of ``n`` scalars (Prop 7);
* the single ReLU neuron on the sphere: the population loss and gradient (Sec. 5), the reduced map in
  ``(v, w_x, w_y)`` (Eqs. 77-80), Thm 4's bound, and empirical-loss GD (App. B.1, Fig 5).

Shapes follow NumPy broadcasting: scalar arguments may be arrays and results broadcast.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lib.config import check_int, check_positive, check_range

__all__ = [
    # configurations of the paper's figures
    "PAPER_FIG3",
    "PAPER_FIG4",
    "PAPER_FIG5",
    "PAPER_FIG7",
    "PAPER_FIG12",
    "SQRT5_MINUS_1",
    "THM2_K_MAX",
    # one dimension
    "ScalarFunction",
    "example_functions",
    "quartic",
    "two_sin",
    "least_squares",
    "compose",
    "stable_oscillation_condition",
    "higher_order_test",
    "oscillation_test",
    "gd_map",
    "two_step_gap",
    "gd_iterate_many",
    "two_cycle_learning_rate",
    "period2_orbit",
    "two_cycle_multiplier",
    "quartic_gd_map",
    "quartic_multiplier_numeric",
    # two dimensions
    "scalar_fact_step",
    "run_scalar_fact",
    "imbalance_next",
    "product_next",
    "lemma2_certificate",
    "hessian_xy",
    "sharpness_xy",
    "damian_manifold_interval",
    "damian_indicator",
    "project_onto_manifold",
    "product_hessian_top",
    "prop7_min_sharpness",
    # single neuron
    "single_neuron_population_loss",
    "single_neuron_population_grad",
    "single_neuron_reduced_step",
    "run_single_neuron_population",
    "run_single_neuron_empirical",
    "sample_sphere",
    "thm4_bound",
]

SQRT5_MINUS_1 = math.sqrt(5.0) - 1.0  #: loss of stability of the period-2 orbit (App. L)
THM2_K_MAX = math.sqrt(4.5) - 1.0  #: upper end of Thm 2's range of K = eta * mu

#: The paper's settings (Appendix B). Initial points and step counts are not stated there; ``None`` marks
#: them.
PAPER_FIG4 = dict(eta=1.01, functions=("quartic, mu=1", "2 sin x"), x0=None, steps=None)
PAPER_FIG12 = dict(mu=1.0, etas=(1.05, 1.235, 1.237), x0=None, steps=None)
PAPER_FIG7 = dict(mu=1.0, etas=(1.05, 1.25), x0=None, y0=None, steps=None)
PAPER_FIG3 = dict(mu=1.0, etas=(1.08, 0.95), x0=None, y0=None, steps=None)
PAPER_FIG5 = dict(d=2, m=1000, eta=2.2, K=1.1, w0=(0.0, 0.1), v0=0.1, w_teacher=(1.0, 0.0), steps=None)


# ====================================================================================================
# One-dimensional functions
# ====================================================================================================


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
    return ScalarFunction(name, label, lambda x: (g(x) - y) ** 2, float(xbar), source, expect_oscillation)


def compose(q: Callable, p: Callable) -> Callable:
    """The base model ``q(p(x))`` of Prop 2 (composition rule); torch callables in and out."""
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

    Positive (with ``f''' != 0``) means GD has period-2 orbits for ``eta`` just above ``2 / f''``.
    """
    f2, f3, f4 = (np.asarray(a, dtype=float) for a in (f2, f3, f4))
    out = 3.0 * f3**2 - f2 * f4
    return float(out) if out.ndim == 0 else out


def higher_order_test(derivs, tol: float = 1e-9) -> dict:
    """Lemma 1's test from the derivatives ``(f'', f''', f^(4), ...)`` at a minimum (a 1-D sequence).

    Finds the lowest ``k >= 3`` with ``|f^(k)| > tol`` and returns a dict with ``k``, ``case`` (``"thm1"`` for
    ``k = 3``, ``"even"`` or ``"odd"`` for Lemma 1, ``"flat"`` if none) and ``holds`` (bool or ``None``
    when the
    derivatives given are not enough to decide). Thm 1: ``3 f'''^2 - f'' f'''' > 0``. Lemma 1 (ii): ``k`` even
    and ``f^(k) < 0``. Lemma 1 (i): ``k`` odd and ``f^(k+1) < 0`` (with ``epsilon`` of the sign of ``f^(k)``).
    """
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
    """Evaluate Thm 1 / Lemma 1 for ``func`` at its minimum; adds the derivatives and the Thm 1 quantity."""
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


def gd_map(func: ScalarFunction, eta: float) -> Callable:
    """The GD map ``F_eta(x) = x - eta f'(x)`` of Eq. (3) as a NumPy callable (arrays of any shape)."""
    check_positive("eta", eta)
    return lambda x: np.asarray(x, dtype=float) - eta * func.grad(x)


def gd_iterate_many(funcs: list[ScalarFunction], x0, etas, steps: int, bound: float = 1e8) -> np.ndarray:
    """GD on several 1-D functions at once (one backward pass per step for all of them).

    ``x0``: shape ``(F, n)`` (``n`` starts per function) or ``(F,)``; ``etas``: shape ``(F,)``. Entries whose
    magnitude exceeds ``bound`` or become non-finite are set to ``inf`` (divergence) and frozen.
    Returns the trajectories, shape ``(steps + 1, *x0.shape)``.
    """
    import torch

    check_int("steps", steps, minimum=0)
    x = np.array(x0, dtype=float)
    etas = np.asarray(etas, dtype=float)
    if x.shape[0] != len(funcs) or etas.shape != (len(funcs),):
        raise ValueError(
            f"x0 must have leading size {len(funcs)} and etas shape ({len(funcs)},), got "
            f"{x.shape} and {etas.shape}"
        )
    eta_b = etas.reshape((-1,) + (1,) * (x.ndim - 1))
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


def two_step_gap(func: ScalarFunction, x0, eta):
    """``F_eta(F_eta(x0)) - x0`` (zero at a period-2 point, Def 2); broadcasts over ``x0`` and ``eta``."""
    x0 = np.asarray(x0, dtype=float)
    eta = np.asarray(eta, dtype=float)
    x1 = x0 - eta * func.grad(np.broadcast_to(x0, np.broadcast_shapes(x0.shape, eta.shape)))
    return x1 - eta * func.grad(x1) - x0


def two_cycle_learning_rate(func: ScalarFunction, eps: float, span: float = 0.3, n_grid: int = 301) -> dict:
    """The learning rate for which ``x0 = xbar - eps`` is a period-2 point, nearest to ``2 / f''`` (Thm 1).

    Scans ``eta`` on ``[(1 - span), (1 + span)] * 2/f''`` for sign changes of ``F^2(x0) - x0`` and refines the
    one closest to ``2/f''`` with brentq. Returns ``eta`` (nan if none), its ratio to ``2/f''``, the
    multiplier
    ``(F^2)'(x0) = F'(x0) F'(x1)`` of the cycle, and ``stable = |multiplier| < 1``.
    """
    from scipy.optimize import brentq

    check_range("span", span, 0, 1, lo_open=True, hi_open=True)
    if eps == 0:
        raise ValueError("eps must be non-zero")
    e0 = func.eos_lr
    x0 = func.xbar - eps
    etas = e0 * np.linspace(1 - span, 1 + span, n_grid)
    with np.errstate(all="ignore"):
        gaps = two_step_gap(func, np.full_like(etas, x0), etas)
    cands = []
    for i in range(n_grid - 1):
        a, b = gaps[i], gaps[i + 1]
        if np.isfinite(a) and np.isfinite(b) and a * b < 0:
            root = brentq(
                lambda e: float(two_step_gap(func, np.array(x0), np.array(e))),
                etas[i],
                etas[i + 1],
                xtol=1e-14,
            )
            cands.append(root)
    if not cands:
        return dict(eta=math.nan, ratio=math.nan, multiplier=math.nan, stable=False, x0=x0)
    eta = min(cands, key=lambda e: abs(e - e0))
    x1 = x0 - eta * float(func.grad(np.array(x0)))
    d0, d1 = func.derivatives(np.array([x0, x1]), 2)[2]
    mult = (1 - eta * d0) * (1 - eta * d1)
    return dict(eta=eta, ratio=eta / e0, multiplier=float(mult), stable=bool(abs(mult) < 1), x0=x0, x1=x1)


def period2_orbit(mu, eta):
    """The period-2 orbit ``(delta1, delta2)`` of GD on ``(x^2 - mu)^2 / 4``, Eq. (4).

    ``delta1 < sqrt(mu) < delta2``.

    Solving Eq. (4) for ``s = delta^2 / mu`` gives ``K s^2 - (K + 1) s + 1/K = 0`` with ``K = eta mu``, i.e.
    ``delta^2 = mu ((K + 1) -+ sqrt((K - 1)(K + 3))) / (2K)``. A positive orbit straddling ``sqrt(mu)``
    exists iff ``1 < K <= 3/2`` (Eq. 36); otherwise ``ValueError`` naming ``eta``. Broadcasts over arrays.
    """
    mu_a = np.asarray(mu, dtype=float)
    eta_a = np.asarray(eta, dtype=float)
    if np.any(~np.isfinite(mu_a)) or np.any(mu_a <= 0):
        raise ValueError(f"mu must be finite and > 0, got {mu!r}")
    K = eta_a * mu_a
    if np.any(~np.isfinite(K)) or np.any(K <= 1) or np.any(K > 1.5):
        raise ValueError(
            f"eta must satisfy 1 < eta*mu <= 1.5 (a period-2 orbit of Eq. (4) exists), got "
            f"eta={eta!r}, mu={mu!r}"
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
    K = np.asarray(K, dtype=float)
    out = 7 - 4 * K - 2 * K**2
    return float(out) if out.ndim == 0 else out


def quartic_gd_map(x, K, mu: float = 1.0):
    """GD map of ``(x^2 - mu)^2 / 4`` with ``eta = K / mu``: ``x + (K/mu)(mu - x^2) x`` (broadcasts)."""
    x = np.asarray(x, dtype=float)
    K = np.asarray(K, dtype=float)
    return x + (K / mu) * (mu - x * x) * x


def quartic_multiplier_numeric(K, mu: float = 1.0) -> float:
    """``F'(delta_1) F'(delta_2)`` evaluated at the orbit of :func:`period2_orbit` (an independent check of
    :func:`two_cycle_multiplier`)."""
    d1, d2 = period2_orbit(mu, K / mu)
    eta = K / mu
    return float((1 + eta * (mu - 3 * d1**2)) * (1 + eta * (mu - 3 * d2**2)))


# ====================================================================================================
# Two dimensions: f(x, y) = (xy - mu)^2 / 2
# ====================================================================================================


def scalar_fact_step(x, y, eta, mu: float = 1.0):
    """One GD step on ``(xy - mu)^2 / 2`` (Eq. 13); broadcasts. Returns ``(x', y')``."""
    r = x * y - mu
    return x - eta * r * y, y - eta * r * x


def run_scalar_fact(x0, y0, eta, steps: int, mu: float = 1.0, bound: float = 1e6):
    """GD trajectories on ``(xy - mu)^2 / 2``; ``x0, y0, eta`` broadcast to a batch shape ``S``.

    Returns ``(xs, ys)`` of shape ``(steps + 1, *S)``; diverging runs (``|x| or |y| > bound``) become ``inf``.
    """
    check_int("steps", steps, minimum=0)
    check_positive("mu", mu)
    x, y, eta = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (x0, y0, eta)))
    x, y = x.copy(), y.copy()
    xs = np.empty((steps + 1, *x.shape))
    ys = np.empty_like(xs)
    xs[0], ys[0] = x, y
    with np.errstate(all="ignore"):
        for t in range(1, steps + 1):
            x, y = scalar_fact_step(x, y, eta, mu)
            bad = ~np.isfinite(x) | ~np.isfinite(y) | (np.abs(x) > bound) | (np.abs(y) > bound)
            x = np.where(bad, np.inf, x)
            y = np.where(bad, np.inf, y)
            xs[t], ys[t] = x, y
    return xs, ys


def imbalance_next(x, y, eta, mu: float = 1.0):
    """``y' - x' = (y - x)(1 + eta (xy - mu))`` (Eq. 50)."""
    return (y - x) * (1 + eta * (x * y - mu))


def product_next(x, y, eta, mu: float = 1.0):
    """``x' y' = xy (1 - eta (xy - mu))^2 - eta (xy - mu)(x - y)^2`` (Eq. 16)."""
    r = x * y - mu
    return x * y * (1 - eta * r) ** 2 - eta * r * (x - y) ** 2


def lemma2_certificate(x0, y0, eta, mu: float = 1.0) -> dict:
    """Lemma 2's sufficient condition for the iterates to stay positive (as stated in App. A.1).

    With ``m = |y0 - x0| / sqrt(mu)``, ``p = 4 / (m + sqrt(m^2 + 4))^2``, ``q = (1 + p)^2`` and ``K = eta
    mu``,
    the certificate is ``max{eta (x0 y0 - mu), 4/27 (1+K)^3 + (2/3 K^2 - K/3 + q K^2 m^2 / (2(K+1))) q
    m^2 - K}
    < p``; it requires ``x0 y0 > mu``. Returns ``lhs``, ``p`` and ``certified`` (arrays broadcast).
    """
    check_positive("mu", mu)
    x0, y0, eta = (np.asarray(a, dtype=float) for a in (x0, y0, eta))
    if np.any(eta <= 0):
        raise ValueError(f"eta must be > 0, got {eta!r}")
    K = eta * mu
    m = np.abs(y0 - x0) / math.sqrt(mu)
    p = 4.0 / (m + np.sqrt(m * m + 4)) ** 2
    q = (1 + p) ** 2
    a = eta * (x0 * y0 - mu)
    b = 4 / 27 * (1 + K) ** 3 + (2 / 3 * K**2 - K / 3 + q * K**2 * m**2 / (2 * (K + 1))) * q * m**2 - K
    lhs = np.maximum(a, b)
    certified = (lhs < p) & (x0 * y0 > mu) & (x0 > 0) & (y0 > 0)
    return dict(lhs=lhs, p=p, certified=certified, m=m)


def hessian_xy(x, y, mu: float = 1.0) -> np.ndarray:
    """Hessian of ``(xy - mu)^2 / 2`` (Eq. 14), shape ``(*S, 2, 2)``."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    off = 2 * x * y - mu
    return np.stack([np.stack([y * y, off], -1), np.stack([off, x * x], -1)], -2)


def sharpness_xy(x, y, mu: float = 1.0):
    """Largest Hessian eigenvalue of ``(xy - mu)^2 / 2`` at ``(x, y)`` (closed form of the 2x2 problem)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    tr = x * x + y * y
    disc = np.sqrt((y * y - x * x) ** 2 + 4 * (2 * x * y - mu) ** 2)
    return (tr + disc) / 2


def damian_indicator(x, y, eta, mu: float = 1.0):
    """``(lambda_1, grad L . u_1)`` at ``(x, y)``: the two quantities defining Damian et al.'s set
    ``M = {lambda_1 < 2/eta, grad L . u_1 = 0}`` (Sec. 6.2). Arrays broadcast; ``u_1`` is sign-fixed by
    ``u_1 . (1, 1) >= 0``."""
    check_positive("eta", eta)
    H = hessian_xy(x, y, mu)
    w, V = np.linalg.eigh(H)
    u = V[..., :, 1]
    u = u * np.where((u[..., 0] + u[..., 1]) >= 0, 1.0, -1.0)[..., None]
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    r = x * y - mu
    g = np.stack([r * y, r * x], -1)
    return w[..., 1], np.sum(g * u, -1)


def damian_manifold_interval(eta, mu: float = 1.0):
    """The minimisers of ``(xy - mu)^2 / 2`` (``x, y > 0``) with sharpness ``x^2 + y^2 < 2 / eta`` (Props
    5-6).

    On ``xy = mu`` the gradient vanishes, so these points lie in ``M``. Returns ``(x_lo, x_hi)`` with
    ``y = mu / x``, or ``None`` when ``eta * mu >= 1`` (Prop 5: no minimiser is flat enough). For ``mu = 1``
    this is Prop 6's ``x + y < sqrt(2 + 2/eta)``.
    """
    check_positive("eta", eta)
    check_positive("mu", mu)
    c = 2.0 / eta  # x^2 + mu^2 / x^2 < c  <=>  s^2 - c s + mu^2 < 0 with s = x^2
    disc = c * c - 4 * mu * mu
    if disc <= 0:
        return None
    s_lo, s_hi = (c - math.sqrt(disc)) / 2, (c + math.sqrt(disc)) / 2
    return math.sqrt(s_lo), math.sqrt(s_hi)


def project_onto_manifold(x, y, eta, mu: float = 1.0):
    """Closest point (Euclidean) of the segment ``M`` of :func:`damian_manifold_interval` to each ``(x, y)``.

    A stand-in for Damian et al.'s projection. Returns ``(px, py)`` arrays (nan when ``M`` is empty).
    """
    from scipy.optimize import minimize_scalar

    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    iv = damian_manifold_interval(eta, mu)
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


# ====================================================================================================
# Single ReLU neuron on the sphere (Sec. 5, App. B.1)
# ====================================================================================================


def _h(alpha):
    return np.sin(alpha) + (np.pi - alpha) * np.cos(alpha)


def single_neuron_population_loss(v, w, w_teacher):
    """Population loss ``E_x (v relu(w.x) - relu(w~.x))^2`` for ``x ~ Unif(S^{d-1})``.

    ``= (v^2 |w|^2 - (2/pi) v |w| |w~| (sin a + (pi - a) cos a) + |w~|^2) / (2d)`` with ``a = angle(w, w~)``
    (our integration; consistent with the paper's gradient in Sec. 5). ``w``: shape ``(d,)``.
    """
    w = np.asarray(w, dtype=float)
    wt = np.asarray(w_teacher, dtype=float)
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
    w = np.asarray(w, dtype=float)
    wt = np.asarray(w_teacher, dtype=float)
    if w.ndim != 1 or w.shape != wt.shape:
        raise ValueError(f"w and w_teacher must be 1-D of the same length, got {w.shape} and {wt.shape}")
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
    ``(steps + 1, *S)``.
    """
    check_int("steps", steps, minimum=0)
    K = np.asarray(K, dtype=float)
    if np.any(K <= 0):
        raise ValueError(f"K must be > 0, got {K!r}")
    v, wx, wy = np.broadcast_arrays(
        np.asarray(v0, float), np.asarray(w0[0], float), np.abs(np.asarray(w0[1], float)), K
    )[:3]
    out = {k: np.empty((steps + 1, *v.shape)) for k in ("v", "wx", "wy")}
    out["v"][0], out["wx"][0], out["wy"][0] = v, wx, wy
    with np.errstate(all="ignore"):
        for t in range(1, steps + 1):
            v, wx, wy = single_neuron_reduced_step(v, wx, wy, K)
            out["v"][t], out["wx"][t], out["wy"][t] = v, wx, wy
    return out


def sample_sphere(m: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` points uniform on the unit sphere ``S^{d-1}``, shape ``(m, d)``."""
    check_int("m", m, minimum=1)
    check_int("d", d, minimum=1)
    x = rng.standard_normal((m, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def run_single_neuron_empirical(X, eta: float, steps: int, v0=0.1, w0=(0.0, 0.1), w_teacher=(1.0, 0.0)):
    """Full-batch GD on the empirical loss ``(1/m) sum_i (v relu(w.x_i) - relu(w~.x_i))^2`` (Fig 5).

    ``X``: data of shape ``(B, m, d)`` or ``(m, d)`` (a batch of ``B`` independent data sets, e.g. seeds).
    Returns a dict with ``v`` ``(steps+1, B)``, ``w`` ``(steps+1, B, d)``, ``loss`` ``(steps+1, B)``;
    with 2-D ``X``
    the batch axis is dropped. ``w`` is reported in the teacher frame only when ``d = 2`` (``wx, wy`` keys).
    """
    check_positive("eta", eta)
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
            v, w = v - eta * gv, w - eta * gw
    out = dict(v=vs, w=ws, loss=losses)
    if d == 2:
        out["wx"] = ws[..., 0] * wt[0] / np.linalg.norm(wt) + ws[..., 1] * wt[1] / np.linalg.norm(wt)
        out["wy"] = np.abs(ws[..., 0] * (-wt[1]) + ws[..., 1] * wt[0]) / np.linalg.norm(wt)
    if single:
        out = {k: a[:, 0] for k, a in out.items()}
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
    t = np.asarray(t, dtype=float)
    bound = np.where(t >= T1 + 4, 0.1 * (1 - 0.030 * K) ** (t - T1 - 4), np.inf)
    return bound, T1
