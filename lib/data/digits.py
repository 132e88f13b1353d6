"""A small real-data stand-in for MNIST 0-vs-1: scikit-learn's bundled 8x8 digits.

MNIST cannot be downloaded when the book is built; scikit-learn ships the UCI 8x8 digits (values 0-16) inside
the package. :func:`digits_binary` keeps two classes and, as Chen & Bruna do with MNIST (App. B.3.2), only the
"significant" pixels whose standard deviation over the kept images is at least ``std_min``.
"""

from __future__ import annotations

import numpy as np

from ..config import check_positive

__all__ = ["digits_binary"]


def digits_binary(classes=(0, 1), std_min: float = 3.0, scale: float = 1 / 16):
    """Images of two digit classes with low-variance pixels removed.

    Args:
        classes: the two digit labels kept, in 0..9; the first gets target 0 and the second target 1.
        std_min: keep a pixel when its standard deviation over the kept images (raw 0-16 scale) is >= std_min.
        scale: factor applied to the kept raw pixels (1/16 maps them to [0, 1]).

    Returns:
        ``(X, y, kept)``: X of shape (n, p) float64, y of shape (n,) with values in {0., 1.}, and the indices
        (into the 64 pixels) of the p kept pixels.
    """
    from sklearn.datasets import load_digits

    classes = tuple(classes)
    if len(classes) != 2 or classes[0] == classes[1] or any(c not in range(10) for c in classes):
        raise ValueError(f"classes must be two different digits in 0..9, got {classes!r}")
    check_positive("std_min", std_min, allow_zero=True)
    check_positive("scale", scale)
    data = load_digits()
    mask = np.isin(data.target, classes)
    X = data.data[mask].astype(np.float64)
    y = (data.target[mask] == classes[1]).astype(np.float64)
    kept = np.flatnonzero(X.std(axis=0) >= std_min)
    if kept.size == 0:
        raise ValueError(f"std_min={std_min} removes every pixel; use a smaller value")
    return X[:, kept] * scale, y, kept
