r"""Gradient flows as ODEs: integration with event times on a logarithmic time grid.

A gradient flow :math:`\dot\theta = -\nabla\mathcal L(\theta)` on a few parameters is an ordinary differential
equation; :func:`integrate_flow` integrates it with ``scipy.integrate.solve_ivp`` on a (logarithmic) time grid,
which is what training-dynamics plots with a log-time axis need, and reports the times at which named events
(a parameter reaching a level, a loss dropping below a threshold) first happen. On an already sampled curve,
:func:`lib.curves.hitting_time` finds the same kind of time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from lib.config import check_array, check_callable, check_in, check_int, check_positive


@dataclass
class FlowResult:
    """Solution of :func:`integrate_flow`.

    Attributes:
        t: times, shape (n_t,).
        y: states, shape (n_state, n_t).
        events: event name -> first time the event fired (``nan`` if it never did).
        success: whether the solver reached the end of the time span.
        message: the solver's message.
        nfev: number of right-hand-side evaluations.
    """

    t: np.ndarray
    y: np.ndarray
    events: dict = field(default_factory=dict)
    success: bool = True
    message: str = ""
    nfev: int = 0


def log_time_grid(t0: float, t1: float, n: int, t_min: float | None = None) -> np.ndarray:
    """``[t0]`` followed by ``n`` log-spaced times from ``t_min`` (default ``t1 * 1e-6``) to ``t1``; shape (n+1,)."""
    check_int("n", n, minimum=2)
    check_positive("t0", t0, allow_zero=True)
    check_positive("t1", t1)
    if t_min is None:
        t_min = max(t1 * 1e-6, t0 * (1 + 1e-12)) if t0 > 0 else t1 * 1e-6
    check_positive("t_min", t_min)
    if not t0 < t_min < t1:
        raise ValueError(f"t_min must lie in (t0, t1) = ({t0}, {t1}), got {t_min}")
    return np.concatenate([[t0], np.geomspace(t_min, t1, n)])


def integrate_flow(
    rhs: Callable,
    y0,
    t_span: tuple[float, float],
    *,
    events: dict[str, Callable] | None = None,
    log_time_grid: int | None = None,
    t_min: float | None = None,
    t_eval=None,
    method: str = "LSODA",
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> FlowResult:
    """Integrate the flow ``dy/dt = rhs(t, y)`` from ``y0`` over ``t_span`` (any ODE; e.g. a gradient flow).

    Args:
        rhs: ``rhs(t, y) -> dy/dt`` with ``y`` of shape (n_state,).
        y0: initial state, shape (n_state,).
        t_span: ``(t0, t1)`` with ``t1 > t0 >= 0``.
        events: name -> ``f(t, y)``; the event fires where ``f`` changes sign. The first firing time is returned in
            ``result.events[name]`` (``nan`` if never). Events do not stop the integration.
        log_time_grid: if given, the number of log-spaced output times (plus ``t0``), see :func:`log_time_grid`.
        t_min: first positive output time of the log grid (default ``t1 * 1e-6``).
        t_eval: explicit output times (exclusive with ``log_time_grid``); default: the solver's own steps.
        method: a ``scipy.integrate.solve_ivp`` method (``"LSODA"``, ``"Radau"``, ``"BDF"``, ``"RK45"``,
            ``"DOP853"``).
        rtol, atol: solver tolerances.

    Returns:
        A :class:`FlowResult` with ``t`` (n_t,) and ``y`` (n_state, n_t).
    """
    check_array("t_span", t_span)
    if not callable(rhs):
        raise ValueError("rhs must be callable as rhs(t, y)")
    check_callable("rhs", rhs)
    y0 = np.atleast_1d(check_array("y0", y0))
    if y0.ndim != 1 or not np.all(np.isfinite(y0)):
        raise ValueError(f"y0 must be a finite 1-D array, got shape {y0.shape}")
    t0, t1 = (float(v) for v in t_span)
    if not (np.isfinite(t0) and np.isfinite(t1) and 0 <= t0 < t1):
        raise ValueError(f"t_span must satisfy 0 <= t0 < t1 (finite), got {t_span}")
    check_in("method", method, ("LSODA", "Radau", "BDF", "RK45", "RK23", "DOP853"))
    check_positive("rtol", rtol)
    check_positive("atol", atol)
    if log_time_grid is not None and t_eval is not None:
        raise ValueError("give at most one of log_time_grid and t_eval")
    if log_time_grid is not None:
        t_eval = globals()["log_time_grid"](t0, t1, log_time_grid, t_min)
    names = list((events or {}).keys())
    for name in names:
        if not callable(events[name]):
            raise ValueError(f"events[{name!r}] must be callable as f(t, y)")
    # Integrate once with dense output; events are located on the solver's own steps and refined with brentq on
    # the dense interpolant (more robust than solve_ivp's event handling near exact zeros).
    sol = solve_ivp(rhs, (t0, t1), y0, method=method, dense_output=True, rtol=rtol, atol=atol)
    hits = {}
    for name in names:
        fn = events[name]
        vals = np.array([float(fn(t, sol.y[:, k])) for k, t in enumerate(sol.t)])
        sign = np.sign(vals)
        change = np.flatnonzero(sign[1:] * sign[:-1] <= 0) if vals.size > 1 else np.array([], dtype=int)
        change = [k for k in change if not (vals[k] == 0 and vals[k + 1] == 0)]
        if not change:
            hits[name] = float("nan")
            continue
        k = change[0]
        a, b = sol.t[k], sol.t[k + 1]
        if vals[k] == 0:
            hits[name] = float(a)
            continue
        f = lambda t, _f=fn: float(_f(t, sol.sol(t)))  # noqa: E731
        hits[name] = (
            float(brentq(f, a, b, xtol=1e-12 * max(1.0, b), rtol=1e-12)) if f(a) * f(b) < 0 else float(b)
        )
    if t_eval is not None:
        t_out = np.asarray(t_eval, dtype=float)
        y_out = sol.sol(t_out)
        y_out[:, 0] = y0 if t_out[0] == t0 else y_out[:, 0]
    else:
        t_out, y_out = sol.t, sol.y
    return FlowResult(
        t=t_out, y=y_out, events=hits, success=bool(sol.success), message=str(sol.message), nfev=int(sol.nfev)
    )
