"""Plotting attention maps (rows = queries, columns = keys)."""

from __future__ import annotations

import numpy as np

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
    im = ax.imshow(A, cmap=cmap, vmin=0.0, vmax=vmax if vmax is not None else max(float(A.max()), 1e-12),
                   aspect="auto", interpolation="nearest", extent=(0.5, T1 + 0.5, T0 + 0.5, 0.5))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label="attention weight")
    return im
