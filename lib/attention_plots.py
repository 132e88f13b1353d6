"""Plotting attention maps (rows = queries, columns = keys)."""

from __future__ import annotations

import numpy as np

from .plots import matrix_heatmap

__all__ = ["attention_heatmap"]


def attention_heatmap(ax, A, *, title: str = "", xlabel: str = "key position $j$",
                      ylabel: str = "query position $i$", cmap: str = "magma", colorbar: bool = True,
                      vmax: float | None = None):
    """Draw one attention map ``A`` (``(T, T)`` array or tensor, rows = queries, each row summing to 1 or 0).

    Positions are labelled from 1 as in the paper. Returns the image.
    """
    A = np.asarray(A.detach().cpu() if hasattr(A, "detach") else A, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"A must be a 2-D (T, T) array, got shape {A.shape}")
    T0, T1 = A.shape
    return matrix_heatmap(ax, A, xlabel=xlabel, ylabel=ylabel, title=title, cmap=cmap, colorbar=colorbar,
                          colorbar_label="attention weight", vmin=0.0,
                          vmax=vmax if vmax is not None else max(float(A.max()), 1e-12),
                          extent=(0.5, T1 + 0.5, T0 + 0.5, 0.5))
