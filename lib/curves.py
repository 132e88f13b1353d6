"""Reading curves: peaks and descents, running medians, rebounds, detours, the first time a curve crosses a
level, log-log slopes, spreads of ratios, and finite-difference speed along a trajectory.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import find_peaks

from lib.config import check_array, check_bool, check_finite, check_in, check_int, check_positive


def _as_curves(curve, name: str = "curve") -> tuple[np.ndarray, bool]:
    arr = check_array(name, curve, finite="some", nonempty=False)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D (time,) or 2-D (batch, time), got shape {arr.shape}")
    if arr.shape[-1] < 1:
        raise ValueError(f"{name} must have at least one time point, got shape {arr.shape}")
    return np.atleast_2d(arr), arr.ndim == 1


def peak_positions(curve, prominence: float) -> list[np.ndarray]:
    """Indices of the local maxima of each curve whose topographic prominence is at least ``prominence``.

    Args:
        curve: array of shape ``(T,)`` or ``(B, T)`` (e.g. an OOD loss per seed); non-finite values end a
        curve.
        prominence: minimal prominence (same units as the curve), > 0.

    Returns:
        a list with one integer array of peak indices per curve (a list of length 1 for a 1-D input).
    """
    check_positive("prominence", prominence)
    curves, _ = _as_curves(curve)
    out = []
    for c in curves:
        finite = np.isfinite(c)
        if not finite.all():  # a diverged run: analyse the finite prefix only
            c = c[: int(np.argmin(finite))] if finite[0] else c[:0]
        if c.size < 3:
            out.append(np.zeros(0, dtype=int))
            continue
        idx, _ = find_peaks(c, prominence=prominence)
        out.append(idx.astype(int))
    return out


def count_peaks(curve, prominence: float):
    """Number of bumps (local maxima with prominence >= ``prominence``) of a non-monotone curve.

    A loss curve with ``k`` such peaks shows ``k + 1`` descents ("double descent" for k = 1).

    Args:
        curve: shape ``(T,)`` or ``(B, T)``.
        prominence: minimal prominence, > 0.

    Returns:
        an ``int`` for a 1-D input, an integer array of shape ``(B,)`` for a 2-D input.
    """
    _, single = _as_curves(curve)
    counts = np.array([len(p) for p in peak_positions(curve, prominence)], dtype=int)
    return int(counts[0]) if single else counts


def n_descents(curve, prominence: float):
    """Number of descents of a loss curve = number of peaks + 1 (same shapes as :func:`count_peaks`)."""
    return count_peaks(curve, prominence) + 1


def running_median(curve, window: int = 3) -> np.ndarray:
    """Trailing running median along the last axis: ``out[..., t] = median(curve[..., max(0, t-window+1):t+1])``.

    Removes one-point spikes of a noisy read-out before a curve is tested for rebounds. Shape is kept.
    """
    check_int("window", window, minimum=1)
    curve = check_array("curve", curve, finite="some", nonempty=False)
    if curve.ndim == 0 or curve.shape[-1] == 0:
        raise ValueError(f"curve must have a non-empty last axis, got shape {curve.shape}")
    return np.stack([np.median(curve[..., max(0, t - window + 1):t + 1], axis=-1)
                     for t in range(curve.shape[-1])], axis=-1)


def distance_rebound(dist) -> np.ndarray:
    """Largest rebound of a distance curve: ``max_t [dist(t) - min_{s<=t} dist(s)]``.

    Zero iff the curve is non-increasing. Shapes: ``(T,)`` -> scalar array, ``(B, T)`` -> ``(B,)``.
    """
    curves, single = _as_curves(dist, "dist")
    running_min = np.minimum.accumulate(curves, axis=-1)
    reb = np.nanmax(curves - running_min, axis=-1)
    return reb[0] if single else reb


def detour(traj, target) -> np.ndarray:
    """Detour size of an output trajectory towards a target point.

    The detour is the largest amount by which the Euclidean distance to ``target`` grows back after having
    been
    smaller earlier (see :func:`distance_rebound`); a trajectory that heads straight to the target has detour
    0.

    Args:
        traj: shape ``(T, k)`` or ``(B, T, k)``: outputs over training time.
        target: shape ``(k,)``.

    Returns:
        the detour size, a scalar array for ``(T, k)`` or shape ``(B,)`` for ``(B, T, k)``.
    """
    traj = check_array("traj", traj, finite="some")
    target = check_array("target", target)
    if traj.ndim not in (2, 3) or target.ndim != 1 or traj.shape[-1] != target.shape[0]:
        raise ValueError(
            f"traj must have shape (T, k) or (B, T, k) and target (k,), got {traj.shape} and {target.shape}"
        )
    return distance_rebound(np.linalg.norm(traj - target, axis=-1))


def path_bend(paths, target, *, side: float = 1.0, window: int = 3) -> np.ndarray:
    """How far 2-D paths bend away from the straight line from their start to ``target``.

    ``paths`` (..., P, 2): points along each path (e.g. a model's output in a concept plane at P checkpoints);
    ``target`` (2,). The signed offset of point p from the line through the start p_0 along u = (target - p_0) /
    ||target - p_0|| is ``u_y (p - p_0)_x - u_x (p - p_0)_y`` (positive to the right of the direction of travel);
    it is multiplied by ``side`` (+1 or -1: which side counts), smoothed by a trailing ``window``-point
    :func:`running_median` and its largest value returned, shape (...). A straight path gives 0.
    """
    pts = check_array("paths", paths)
    tgt = check_array("target", target)
    if pts.ndim < 2 or pts.shape[-1] != 2 or pts.shape[-2] < 1:
        raise ValueError(f"paths must have shape (..., P >= 1, 2), got {pts.shape}")
    if tgt.shape != (2,):
        raise ValueError(f"target must have shape (2,), got {tgt.shape}")
    if side not in (1, -1, 1.0, -1.0):
        raise ValueError(f"side must be +1 or -1, got {side!r}")
    u = tgt - pts[..., 0, :]
    norm = np.linalg.norm(u, axis=-1, keepdims=True)
    if np.any(norm == 0):
        raise ValueError("paths must not start at target (the line to it is undefined)")
    u = u / norm
    v = pts - pts[..., :1, :]
    off = side * (u[..., None, 1] * v[..., 0] - u[..., None, 0] * v[..., 1])
    return running_median(off, window).max(axis=-1)


def hitting_time(t, y, threshold: float, *, direction: str = "down", after: float | None = None,
                 interpolate: bool = True, window: int = 1, never: float = float("nan")):
    """First time the sampled curve ``y(t)`` reaches ``threshold``: the book's one crossing function.

    Args:
        t: increasing times, shape (n,).
        y: values, shape (n,), or (n, B) for B curves at once (then the result has shape (B,)).
        threshold: the level (finite).
        direction: ``"down"`` (first ``y <= threshold``), ``"up"`` (first ``y >= threshold``) or ``"either"``
            (first sign change of ``y - threshold``, in whichever direction).
        after: only consider times ``>= after``.
        interpolate: interpolate linearly between the last sample before and the first sample at the level
            (``False``: return the time of that sample).
        window: with ``window > 1`` a crossing counts only once the running median over ``window`` samples has
            crossed (it ignores one-sample spikes of a noisy read-out); the time returned is that of the
            first sample inside that window which crossed. Needs ``interpolate=False``.
        never: what to return for a curve that never crosses (``nan``; ``inf`` where a comparison "crossed
            before" must come out False for a curve that never crossed).

    Returns:
        The crossing time (``t[0]`` if the curve starts beyond the level), or ``never``.
    """
    t = check_array("t", t)
    y = check_array("y", y, finite="some")
    check_finite("threshold", threshold)
    check_bool("interpolate", interpolate)
    if t.ndim != 1 or y.ndim not in (1, 2) or y.shape[0] != t.shape[0]:
        raise ValueError(f"t must be 1-D and y (n,) or (n, B) with n = len(t), got {t.shape} and {y.shape}")
    check_in("direction", direction, ("down", "up", "either"))
    check_int("window", window, minimum=1)
    if not isinstance(interpolate, bool):
        raise ValueError(f"interpolate must be a bool, got {interpolate!r}")
    if window > 1 and interpolate:
        raise ValueError("window > 1 needs interpolate=False")
    if not np.isfinite(threshold):
        raise ValueError(f"threshold must be finite, got {threshold}")
    if y.ndim == 2:
        return np.array([hitting_time(t, y[:, j], threshold, direction=direction, after=after,
                                      interpolate=interpolate, window=window, never=never)
                         for j in range(y.shape[1])])
    idx = np.flatnonzero(np.ones_like(t, dtype=bool) if after is None else t >= after)
    if idx.size == 0:
        return float(never)
    tt, yy = t[idx], y[idx]
    if direction == "either":
        signs = np.sign(yy - threshold)
        changes = np.flatnonzero(signs[1:] != signs[:-1])
        if changes.size == 0:
            return float(never)
        direction = "down" if signs[changes[0]] > 0 else "up"
    hit = yy <= threshold if direction == "down" else yy >= threshold
    if window > 1:
        for i in range(len(yy) - window + 1):
            win = yy[i:i + window]
            med = np.median(win)
            if (med <= threshold) if direction == "down" else (med >= threshold):
                return float(tt[i + int(np.argmax(hit[i:i + window]))])
        return float(never)
    if not hit.any():
        return float(never)
    k = int(np.argmax(hit))
    if k == 0 or not interpolate:
        return float(tt[k])
    y_a, y_b = yy[k - 1], yy[k]
    frac = (threshold - y_a) / (y_b - y_a) if y_b != y_a else 1.0
    return float(tt[k - 1] + frac * (tt[k] - tt[k - 1]))


def speed(values, times) -> np.ndarray:
    """Finite-difference speed ``||v(t_{i+1}) - v(t_i)|| / (t_{i+1} - t_i)`` along a trajectory.

    ``values`` (..., T, d) at strictly increasing ``times`` (T,) -> speeds (..., T - 1), one per interval (see
    :func:`geometric_midpoints` for where to plot them on a log axis).
    """
    t = check_array("times", times, finite=False)
    v = check_array("values", values)
    if t.ndim != 1 or t.size < 2 or not np.all(np.isfinite(t)):
        raise ValueError(f"times must be 1-D, finite, with at least 2 entries, got shape {t.shape}")
    if np.any(np.diff(t) <= 0):
        raise ValueError("times must be strictly increasing")
    if v.ndim < 2 or v.shape[-2] != t.size:
        raise ValueError(f"values must have shape (..., {t.size}, d), got {v.shape}")
    return np.linalg.norm(np.diff(v, axis=-2), axis=-1) / np.diff(t)


def geometric_midpoints(times) -> np.ndarray:
    """Geometric means ``sqrt(t_i t_{i+1})`` of consecutive times (times below 1 count as 1): where the
    interval speeds of :func:`speed` sit on a log axis. ``times`` (T,) -> (T - 1,)."""
    t = check_array("times", times)
    if t.ndim != 1 or t.size < 2:
        raise ValueError(f"times must be 1-D with at least 2 entries, got shape {t.shape}")
    return np.sqrt(np.maximum(t[1:], 1) * np.maximum(t[:-1], 1))


def loglog_slope(x, y) -> tuple[float, float]:
    """Least-squares slope ``b`` of ``log y = a + b log x`` and its spread.

    The spread is the largest deviation of the local slopes between consecutive points (sorted by ``x``) from the
    fitted slope: a small spread means a clean power law over the whole range.

    Args:
        x, y: positive values, shape (n,), n >= 2.

    Returns:
        ``(slope, spread)``.
    """
    x = check_array("x", x, finite=False)
    y = check_array("y", y, finite=False)
    if x.ndim != 1 or y.shape != x.shape or x.size < 2:
        raise ValueError(f"x and y must be 1-D of equal length >= 2, got {x.shape} and {y.shape}")
    if not (np.all(x > 0) and np.all(y > 0) and np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite and > 0 for a log-log fit")
    order = np.argsort(x)
    lx, ly = np.log(x[order]), np.log(y[order])
    if np.ptp(lx) == 0:
        raise ValueError("x must take at least two distinct values")
    slope = float(np.polyfit(lx, ly, 1)[0])
    dx = np.diff(lx)
    ok = dx > 0
    local = np.diff(ly)[ok] / dx[ok]
    spread = float(np.max(np.abs(local - slope))) if local.size else 0.0
    return slope, spread


def decay_law(t, y) -> dict:
    """Which law describes a decaying positive curve better: exponential in ``t`` or a power of ``t``?

    Fits ``log y = a + b t`` (exponential, rate ``-b``) and ``log y = a + b log t`` (power law, exponent ``b``) by
    least squares and compares their residual sums of squares (same number of parameters, so the smaller one
    wins). Args: ``t`` (n,) positive and ``y`` (n,) positive, n >= 3.

    Returns:
        dict with ``law`` (``"exponential"`` or ``"power"``, the smaller residual), ``rss_exp`` and ``rss_power``
        (the two residual sums of squares), ``rate`` (of the exponential fit) and ``exponent`` (of the power fit).
    """
    t = check_array("t", t)
    y = check_array("y", y)
    if t.ndim != 1 or y.shape != t.shape or t.size < 3:
        raise ValueError(f"t and y must be 1-D of equal length >= 3, got {t.shape} and {y.shape}")
    if not (np.all(t > 0) and np.all(y > 0)):
        raise ValueError("t and y must be > 0 (logarithms are fitted)")
    if np.ptp(t) == 0:
        raise ValueError("t must take at least two distinct values")
    ly = np.log(y)
    fits = {}
    for name, x in (("exp", t), ("power", np.log(t))):
        coef, res, *_ = np.polyfit(x, ly, 1, full=True)
        fits[name] = (float(coef[0]), float(res[0]) if res.size else 0.0)
    return dict(law="exponential" if fits["exp"][1] < fits["power"][1] else "power", rss_exp=fits["exp"][1],
                rss_power=fits["power"][1], rate=-fits["exp"][0], exponent=fits["power"][0])


def ratio_spread(values) -> tuple[float, float]:
    """Mean of positive ``values`` (shape (n,)) and their relative spread ``max/min - 1``."""
    v = check_array("values", values)
    if v.ndim != 1 or v.size < 1 or not np.all(v > 0):
        raise ValueError("values must be a non-empty 1-D array of positive numbers")
    return float(v.mean()), float(v.max() / v.min() - 1.0)


def attention_mass_by_type(weights, same_a, same_b) -> np.ndarray:
    """Total attention on the four key types given by two binary labels (e.g. same pattern x same step).

    Args:
        weights: attention weights over keys, shape (..., L) (rows need not sum to one).
        same_a, same_b: boolean arrays broadcastable to ``weights``: whether each key shares property a (b) with
            the query.

    Returns:
        Array of shape (..., 4): the mass on keys with (a, b), (a, not b), (not a, b), (not a, not b).
    """
    weights = check_array("weights", weights)
    check_array("same_a", same_a)
    check_array("same_b", same_b)
    w = np.asarray(weights, dtype=float)
    a = np.broadcast_to(np.asarray(same_a, dtype=bool), w.shape)
    b = np.broadcast_to(np.asarray(same_b, dtype=bool), w.shape)
    masks = (a & b, a & ~b, ~a & b, ~a & ~b)
    return np.stack([(w * m).sum(-1) for m in masks], axis=-1)
