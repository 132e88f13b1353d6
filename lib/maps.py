"""Iterated maps: trajectories batched over parameters, periods, Lyapunov exponents, bifurcation diagrams,
two-step fixed points, cobweb plots.

A map is a callable ``F(x)`` acting elementwise (or row-wise) on a NumPy array or torch tensor, so a batch of
independent starts or parameters is one array: ``F = lambda x: x - eta[:, None] * fprime(x)`` runs a whole
sweep over learning rates at once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lib._optim import GROWTH_WINDOW
from lib.config import (
    check_array,
    check_callable,
    check_finite,
    check_instance,
    check_int,
    check_positive,
    check_range,
    check_seed,
)


def iterate_map(F: Callable, x0, steps: int, *, keep: int | None = None, bound: float = 1e12):
    """Iterate ``x_{t+1} = F(x_t)``.

    Args:
        F: the map; acts on arrays of the shape of ``x0``.
        x0: the start, any shape ``S`` (a batch of starts and/or parameters).
        steps: number of iterations.
        keep: keep only the last ``keep`` states (default: all ``steps + 1``).
        bound: entries whose magnitude exceeds it are set to ``inf`` and stay there (divergence).

    Returns:
        array of shape ``(T, *S)`` with ``T = steps + 1`` or ``keep``.
    """
    check_callable("F", F)
    check_int("steps", steps, minimum=0)
    check_positive("bound", bound)
    if keep is not None:
        check_int("keep", keep, minimum=1, maximum=steps + 1)
    x = check_array("x0", x0)
    n_keep = steps + 1 if keep is None else keep
    out = np.empty((n_keep, *x.shape))
    start = steps + 1 - n_keep
    if start == 0:
        out[0] = x
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, steps + 1):
            bad = ~np.isfinite(x) | (np.abs(x) > bound)
            x = np.asarray(F(x), dtype=float)
            x = np.where(bad | ~np.isfinite(x) | (np.abs(x) > bound), np.inf, x)
            if t >= start:
                out[t - start] = x
    return out


def _sustained_growth(loss: np.ndarray, growth: float) -> np.ndarray:
    """(T, *batch) bool: the loss rose at each of the last :data:`GROWTH_WINDOW` steps, by more than ``growth``
    in all, and is above its value at step 0 (the rule of ``lib._optim.GrowthTest``)."""
    T, W = loss.shape[0], GROWTH_WINDOW
    out = np.zeros(loss.shape, dtype=bool)
    if T <= W:
        return out
    with np.errstate(invalid="ignore", over="ignore"):
        rises = np.concatenate([np.zeros((1, *loss.shape[1:]), dtype=int), np.cumsum(loss[1:] > loss[:-1], axis=0)])
        first = loss[:-W]
        out[W:] = ((rises[W:] - rises[:-W]) == W) & (first > 0) & (loss[W:] > growth * first) & (loss[W:] > loss[0])
    return out


def stop_at_divergence(history: dict, keys=None, *, loss_keys=(), batch_ndim: int = 0, bound: float = 1e8,
                       factor: float | None = 1e6, growth: float | None = 1e4) -> dict:
    """Apply the book's divergence rule (that of :func:`lib.train.train`) to the history of a hand-written map.

    A run diverges at the first step where one of its recorded values is not finite or exceeds ``bound`` in
    magnitude, or where a loss exceeds ``factor`` times its value at step 0 (when that is > 0; ``factor=None``
    switches the relative test off; parameters started near zero may grow by any factor), or where a loss rose at
    each of the last 8 recorded steps, by more than ``growth`` in all, and is above its value at step 0 (the
    per-step test of :func:`lib.train.train`; ``growth=None`` switches it off). The history up to and including
    that step is kept; later entries become NaN, as if the run had stopped there.

    Args:
        history: name -> array of shape ``(T, *batch, ...)`` (the same ``T`` and batch shape for all).
        keys: the names the rule looks at (default: all).
        loss_keys: the names among them that are losses (the relative test).
        batch_ndim: number of batch axes after the time axis (runs that diverge independently).
        bound: absolute bound (> 0).
        factor: relative bound (> 1) or None.
        growth: growth over 8 rising steps (> 1) or None.

    Returns:
        a new dict: the masked arrays, plus ``diverged`` (batch-shaped bool) and ``diverged_step`` (batch-shaped
        int, -1 where the run did not diverge).
    """
    check_positive("bound", bound)
    if factor is not None:
        check_positive("factor", factor)
        if factor <= 1:
            raise ValueError(f"factor must be > 1 or None, got {factor!r}")
    if growth is not None:
        check_range("growth", growth, 1.0, None, lo_open=True)
    check_int("batch_ndim", batch_ndim, minimum=0)
    if not isinstance(history, dict) or not history:
        raise ValueError("history must be a non-empty dict name -> array")
    keys = list(history) if keys is None else list(keys)
    if isinstance(loss_keys, str) or any(k not in history for k in loss_keys):
        raise ValueError(f"loss_keys must be a sequence of keys of history, got {loss_keys!r}")
    arrays = {k: np.asarray(v, dtype=float) for k, v in history.items()}
    T = arrays[keys[0]].shape[0]
    batch = arrays[keys[0]].shape[1:1 + batch_ndim]
    bad = np.zeros((T, *batch), dtype=bool)
    for k in keys:
        a = arrays[k]
        if a.shape[:1 + batch_ndim] != (T, *batch):
            raise ValueError(f"history[{k!r}] has shape {a.shape}, expected (T={T}, *{batch}, ...)")
        mag = np.abs(a.reshape(T, *batch, -1))
        with np.errstate(invalid="ignore"):
            b = ~np.isfinite(mag).all(axis=-1) | (np.nan_to_num(mag, nan=np.inf).max(axis=-1) > bound)
            if factor is not None and k in loss_keys:
                start = mag[0].max(axis=-1)
                b |= (start > 0) & (np.nan_to_num(mag, nan=np.inf).max(axis=-1) > factor * start)
            if growth is not None and k in loss_keys:
                b |= _sustained_growth(mag.max(axis=-1), growth)
        bad |= b
    diverged = bad.any(axis=0)
    step = np.where(diverged, bad.argmax(axis=0), -1)
    after = np.arange(T).reshape(T, *([1] * len(batch))) > np.where(diverged, step, T)
    out = {}
    for k, a in arrays.items():
        mask = after.reshape(after.shape + (1,) * (a.ndim - after.ndim))
        out[k] = np.where(mask, np.nan, a)
    out["diverged"] = diverged if batch else bool(diverged)
    out["diverged_step"] = step if batch else int(step)
    return out


def detect_period(traj, max_period: int = 64, tol: float = 1e-6) -> np.ndarray:
    """Smallest period of the tail of a trajectory.

    Args:
        traj: array ``(T, *S)`` (time first), e.g. the output of :func:`iterate_map` with ``keep``.
        max_period: longest period looked for (``T`` must exceed ``2 * max_period``).
        tol: two states are equal when they differ by at most ``tol * (1 + |x|)``.

    Returns:
        integer array of shape ``S``: the period ``p >= 1``, ``0`` if none up to ``max_period`` (quasi-periodic
        or chaotic), ``-1`` if the trajectory diverged.
    """
    traj = check_array("traj", traj, finite=False)  # NaN/inf: a diverged run (period -1)
    check_int("max_period", max_period, minimum=1)
    check_positive("tol", tol)
    if traj.ndim < 1 or traj.shape[0] <= 2 * max_period:
        raise ValueError(f"traj must have more than 2*max_period = {2 * max_period} time steps, got {traj.shape}")
    tail = traj[-2 * max_period:]
    periods = np.zeros(traj.shape[1:], dtype=int)
    found = np.zeros(traj.shape[1:], dtype=bool)
    scale = 1 + np.abs(tail[-max_period:])
    for p in range(1, max_period + 1):
        with np.errstate(invalid="ignore"):
            same = np.all(np.abs(tail[-max_period:] - tail[-max_period - p:len(tail) - p]) <= tol * scale,
                          axis=0)
        new = same & ~found
        periods[new] = p
        found |= same
    diverged = ~np.all(np.isfinite(traj[-1:]), axis=0)
    periods[diverged] = -1
    return periods


def lyapunov_exponent(F: Callable, x0, steps: int, *, transient: int = 0, seed: int = 0) -> np.ndarray:
    """Largest Lyapunov exponent of ``x -> F(x)`` for a batch of independent states (Benettin's method).

    A tangent vector is carried along the orbit by the map's Jacobian (``torch.func.jvp``, exact, no finite
    differences) and renormalised every step; the exponent is the mean log of its growth per step. Positive means
    nearby orbits separate exponentially (chaos); negative means the orbit is attracted to a stable fixed point or
    cycle; about zero at a bifurcation or on a quasi-periodic orbit.

    Args:
        F: torch map acting row-wise on ``(B, *S)`` (batch member ``b`` only reads row ``b``).
        x0: ``(B, *S)`` starting states (array or tensor; float64 is used).
        steps: steps over which the growth is averaged.
        transient: steps iterated first (orbit and tangent) and not counted.
        seed: seed of the random initial tangent vectors.

    Returns:
        ``(B,)`` exponents per step (natural log); NaN where the orbit or its tangent became non-finite.
    """
    import torch
    from torch.func import jvp

    check_callable("F", F)
    check_int("steps", steps, minimum=1)
    check_int("transient", transient, minimum=0)
    check_seed("seed", seed)
    x = torch.as_tensor(check_array("x0", x0, finite=False) if not isinstance(x0, torch.Tensor) else x0,
                        dtype=torch.float64)
    if x.ndim < 1 or x.shape[0] < 1:
        raise ValueError(f"x0 must have a leading batch axis, got shape {tuple(x.shape)}")
    if not torch.all(torch.isfinite(x)):
        raise ValueError("x0 must be finite")
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(x.shape, generator=g, dtype=torch.float64)
    shape = (-1,) + (1,) * (x.ndim - 1)

    def unit(v):
        n = v.reshape(v.shape[0], -1).norm(dim=1)
        return v / torch.where(n > 0, n, torch.ones_like(n)).view(shape), n

    v, _ = unit(v)
    total = torch.zeros(x.shape[0], dtype=torch.float64)
    with torch.no_grad():
        for t in range(transient + steps):
            x, v = jvp(F, (x,), (v,))
            v, n = unit(v)
            if t >= transient:
                total += torch.log(n)
    out = (total / steps).numpy()
    bad = ~np.isfinite(out) | ~np.all(np.isfinite(x.reshape(x.shape[0], -1).numpy()), axis=1)
    out[bad] = np.nan
    return out


def bifurcation_diagram(F_param: Callable, params, x0, transient: int = 2000, keep: int = 64):
    """Attractor points of ``x -> F_param(x, p)`` for each parameter ``p``.

    Returns ``(p_rep, x)``, two flat arrays of length ``len(params) * keep`` ready for a scatter plot.
    """
    check_array("x0", x0)
    check_callable("F_param", F_param)
    params = check_array("params", params)
    if params.ndim != 1 or params.size == 0:
        raise ValueError("params must be a non-empty 1-D array")
    check_int("transient", transient, minimum=0)
    check_int("keep", keep, minimum=1)
    try:
        x_start = np.broadcast_to(np.asarray(x0, dtype=float), params.shape).copy()
    except ValueError:
        raise ValueError(f"x0 must broadcast to params' shape {params.shape}, got shape {np.shape(x0)}") from None
    traj = iterate_map(lambda x: F_param(x, params), x_start, transient + keep, keep=keep)
    return np.broadcast_to(params, traj.shape).ravel(), traj.ravel()


def two_step_fixed_points(F: Callable, lo: float, hi: float, n_grid: int = 4001, exclude=None, tol=1e-12):
    """Roots of ``F(F(x)) - x`` in ``[lo, hi]`` (period-2 points and fixed points of the two-step map ``F^2``).

    Sign changes on a grid of ``n_grid`` points are refined with ``scipy.optimize.brentq``. Points within
    ``1e-7`` of any value in ``exclude`` (e.g. the minimiser, a fixed point of ``F`` itself) are dropped.
    """
    from scipy.optimize import brentq

    check_callable("F", F)
    check_finite("lo", lo)
    check_finite("hi", hi)
    if not lo < hi:
        raise ValueError(f"hi must be > lo = {lo}, got {hi}")
    check_int("n_grid", n_grid, minimum=3)
    check_positive("tol", tol)
    g = lambda x: F(F(x)) - x
    xs = np.linspace(lo, hi, n_grid)
    with np.errstate(all="ignore"):
        gs = np.asarray(g(xs), dtype=float)
    roots = []
    for a, b, ga, gb in zip(xs[:-1], xs[1:], gs[:-1], gs[1:]):
        if not (np.isfinite(ga) and np.isfinite(gb)):
            continue
        if ga == 0:
            roots.append(a)
        elif ga * gb < 0:
            roots.append(brentq(lambda x: float(g(np.asarray(x))), a, b, xtol=tol))
    roots = np.unique(np.round(roots, 12))
    if exclude is not None:
        ex = np.atleast_1d(np.asarray(exclude, dtype=float))
        roots = np.array([r for r in roots if np.all(np.abs(r - ex) > 1e-7)])
    return roots


def cobweb(ax, F: Callable, x0: float, steps: int, xlim, *, n_curve: int = 400, label: str = "F", color="C0"):
    """Cobweb plot of ``x_{t+1} = F(x_t)`` from ``x0`` on ``ax``: the graph of ``F``, the diagonal, the path."""
    from matplotlib.axes import Axes
    check_instance("ax", ax, Axes)
    check_callable("F", F)
    check_finite("x0", x0)
    check_int("n_curve", n_curve, minimum=2)
    check_array("xlim", xlim)
    check_int("steps", steps, minimum=0)
    xs = np.linspace(*xlim, n_curve)
    with np.errstate(all="ignore"):
        ax.plot(xs, F(xs), color=color, label=label)
    ax.plot(xs, xs, color="0.5", lw=0.8, ls="--", label="diagonal $y=x$")
    x = float(x0)
    path_x, path_y = [x], [x]
    for _ in range(steps):
        y = float(F(np.asarray(x)))
        if not np.isfinite(y) or abs(y) > 1e6:
            break
        path_x += [x, y]
        path_y += [y, y]
        x = y
    ax.plot(path_x, path_y, color="C3", lw=0.8, alpha=0.8, label="iterates")
    ax.plot([x0], [x0], "k*", ms=8, label="start")
    ax.set_xlim(*xlim)
    ax.set_xlabel("$x_t$")
    ax.set_ylabel("$x_{t+1}$")
