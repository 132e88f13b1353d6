"""Points drawn uniformly on the unit sphere S^{d-1}."""

from __future__ import annotations

import numpy as np

from ..config import check_int

__all__ = ["sample_sphere"]


def sample_sphere(m: int, d: int, seed: int = 0, *, dtype=np.float64) -> np.ndarray:
    """``m`` i.i.d. points uniform on the unit sphere of R^d (normalised Gaussians).

    Returns:
        array of shape (m, d) whose rows have unit Euclidean norm.
    """
    check_int("m", m, minimum=1)
    check_int("d", d, minimum=1)
    check_int("seed", seed, minimum=0)
    x = np.random.default_rng(seed).standard_normal((m, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(dtype)
