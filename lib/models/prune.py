"""Neuron pruning masks: keep or drop whole hidden units by a score (magnitude pruning and its controls).

:func:`neuron_mask` turns per-neuron scores (for instance the row norms of a layer's weight) into a boolean keep
mask that removes a given fraction of the neurons: the smallest scores (``"magnitude"``, the usual magnitude-based
pruning), the largest ones (``"largest"``), or a uniformly random subset (``"random"``, the control). The mask acts
on the last axis, so a leading axis of runs is pruned run by run.
"""

from __future__ import annotations

import torch

from lib.config import check_in, check_range

__all__ = ["neuron_mask"]


def neuron_mask(scores: torch.Tensor, rate: float, method: str = "magnitude", *,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """Boolean keep mask that prunes ``round(rate * m)`` of the ``m`` neurons on the last axis.

    Args:
        scores: ``(..., m)`` per-neuron scores (e.g. row norms); ties are broken by position.
        rate: pruned fraction in [0, 1].
        method: ``"magnitude"`` (drop the smallest scores), ``"largest"`` (drop the largest) or ``"random"``.
        generator: torch generator for ``"random"`` (default: seed 0).

    Returns:
        Bool tensor of ``scores``' shape, True for the kept neurons.
    """
    if not isinstance(scores, torch.Tensor) or scores.ndim < 1 or scores.shape[-1] < 1:
        raise ValueError(f"scores must be a tensor (..., m) with m >= 1, got {scores!r}")
    if not torch.isfinite(scores).all():
        raise ValueError("scores must be finite")
    check_range("rate", rate, 0.0, 1.0)
    check_in("method", method, ("magnitude", "largest", "random"))
    m = scores.shape[-1]
    n_drop = int(round(float(rate) * m))
    if method == "random":
        generator = generator if generator is not None else torch.Generator().manual_seed(0)
        key = torch.rand(scores.shape, generator=generator)
    else:
        key = scores.detach().to(torch.float64) * (1.0 if method == "magnitude" else -1.0)
    order = torch.argsort(key, dim=-1, stable=True)
    keep = torch.ones(scores.shape, dtype=torch.bool)
    keep.scatter_(-1, order[..., :n_drop], False)
    return keep
