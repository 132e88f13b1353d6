"""Generic analysis of training curves: peaks of non-monotone curves, detours, frequencies over seeds.

These helpers are work-independent. They turn a curve (or a batch of curves, one per seed) into the counts a
chapter reports: how many bumps a loss curve has (``count_peaks``), how far a trajectory moves away from its
target after having been closer (``detour``), and how often something happens over seeds, with a Wilson
confidence interval (``frequency``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.signal import find_peaks

from .config import check_int, check_positive, check_range

__all__ = [
    "count_peaks",
    "peak_positions",
    "n_descents",
    "detour",
    "distance_rebound",
    "wilson_interval",
    "Frequency",
    "frequency",
    "order_violations",
]


def _as_curves(curve, name: str = "curve") -> tuple[np.ndarray, bool]:
    arr = np.asarray(curve, dtype=float)
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
    curve = np.asarray(curve, dtype=float)
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
    traj = np.asarray(traj, dtype=float)
    target = np.asarray(target, dtype=float)
    if traj.ndim not in (2, 3) or target.ndim != 1 or traj.shape[-1] != target.shape[0]:
        raise ValueError(
            f"traj must have shape (T, k) or (B, T, k) and target (k,), got {traj.shape} and {target.shape}"
        )
    return distance_rebound(np.linalg.norm(traj - target, axis=-1))


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``k / n`` (default: 95 %, ``z = 1.96``)."""
    check_int("n", n, minimum=1)
    check_int("k", k, minimum=0, maximum=n)
    check_positive("z", z)
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Frequency:
    """How often an event happened over ``n`` trials (seeds), with a Wilson interval."""

    k: int
    n: int
    lo: float
    hi: float

    @property
    def p(self) -> float:
        return self.k / self.n

    def __str__(self) -> str:
        return f"{self.k}/{self.n} = {self.p:.2f} [95% CI {self.lo:.2f}-{self.hi:.2f}]"


def frequency(flags, z: float = 1.96) -> Frequency:
    """Frequency of ``True`` in a 1-D boolean array (one entry per seed), with a Wilson interval."""
    flags = np.asarray(flags)
    if flags.ndim != 1 or flags.size == 0:
        raise ValueError(f"flags must be a non-empty 1-D array, got shape {flags.shape}")
    check_range("z", z, 0, None, lo_open=True)
    k, n = int(np.count_nonzero(flags)), int(flags.size)
    lo, hi = wilson_interval(k, n, z)
    return Frequency(k, n, lo, hi)


def order_violations(V, values, *, tol: float = 0.0, exclude=None) -> tuple[int, int]:
    """Violations of an order homomorphism on binary vectors (App. B, Eq. B.2 of Yang et al. 2025).

    For every comparable pair ``u < v`` (componentwise ``u <= v``, ``u != v``) the map should satisfy
    ``values[u] <= values[v] + tol``. Rows of ``V`` listed in ``exclude`` (indices) are left out.

    Args:
        V: ``(n, s)`` 0/1 array (e.g. the corners of a hypercube); values: ``(n,)`` or ``(B, n)``.

    Returns:
        ``(violations, comparable_pairs)``; for a 2-D ``values`` the violations are an integer array ``(B,)``.
    """
    V = np.asarray(V)
    vals = np.asarray(values, dtype=float)
    if V.ndim != 2 or not np.isin(V, (0, 1)).all():
        raise ValueError(f"V must be a 2-D 0/1 array, got shape {V.shape}")
    if vals.shape[-1] != V.shape[0] or vals.ndim not in (1, 2):
        raise ValueError(f"values must have shape (n,) or (B, n) with n = {V.shape[0]}, got {vals.shape}")
    check_positive("tol", tol, allow_zero=True)
    keep = np.ones(V.shape[0], bool)
    if exclude is not None:
        keep[np.asarray(exclude, dtype=int)] = False
    le = (V[:, None, :] <= V[None, :, :]).all(-1) & ~(V[:, None, :] == V[None, :, :]).all(-1)
    le &= keep[:, None] & keep[None, :]
    iu, iv = np.nonzero(le)
    bad = vals[..., iu] > vals[..., iv] + tol
    return (bad.sum(-1) if bad.ndim > 1 else int(bad.sum())), int(iu.size)
