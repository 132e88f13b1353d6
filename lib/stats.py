"""Frequencies with Wilson intervals, and counts of order violations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lib.config import check_array, check_int, check_positive, check_range


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
    if isinstance(flags, (str, bytes)) or flags is None:
        raise ValueError(f"flags must be an array of booleans, got {flags!r}")
    flags = np.asarray(flags)
    if flags.dtype.kind == "f" and not np.isin(flags[np.isfinite(flags)], (0.0, 1.0)).all() or (
            flags.dtype.kind == "f" and not np.isfinite(flags).all()):
        raise ValueError("flags must be booleans (or 0/1), found other values")
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
    V = check_array("V", V)
    vals = check_array("values", values)
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
