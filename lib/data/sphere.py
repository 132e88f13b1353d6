"""Points drawn uniformly on the unit sphere S^{d-1}."""

from __future__ import annotations

import numpy as np

from lib.config import check_int, check_seed


def sample_sphere(m: int, d: int, seed: int | np.random.Generator = 0, *, dtype=np.float64) -> np.ndarray:
    """``m`` i.i.d. points uniform on the unit sphere of R^d (normalised Gaussians).

    Args:
        m, d: number of points and dimension (>= 1).
        seed: a non-negative integer seed, or a NumPy ``Generator`` to draw from (and advance).

    Returns:
        array of shape (m, d) whose rows have unit Euclidean norm.
    """
    check_int("m", m, minimum=1)
    check_int("d", d, minimum=1)
    if not isinstance(seed, np.random.Generator):
        check_seed("seed", seed)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    x = rng.standard_normal((m, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(dtype)
