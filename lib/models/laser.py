"""LASER: layer-selective rank reduction of a weight matrix (Sharma, Ash & Misra, 2024), as used by Chen (ch. 4).

A weight ``W`` is replaced by its best rank-``k`` approximation ``W^(k) = sum_{i<=k} s_i u_i v_i^T`` (truncated
SVD; Eckart-Young: the spectral error ``||W - W^(k)||_2`` is the next singular value ``s_{k+1}``). A fraction
``rho`` keeps rank ``floor(rho * min(d_in, d_out))``; ``rho = 0`` removes the matrix, ``rho = 1`` is the
identity. Truncation commutes with transposition, so an ``nn.Linear`` weight ``(out, in)`` and a GPT-2-style
``Conv1D`` weight ``(in, out)`` are handled alike.

* :func:`low_rank` - the rank-``k`` truncation of a matrix;
* :func:`laser_rank` - the rank that a fraction ``rho`` keeps;
* :func:`laser` - a context manager that swaps a module's (or a parameter's) weight for its truncation and
  restores it bit for bit on exit.

Example::

    with laser(model.blocks[1].ffn.fc1, fraction=0.1):
        logits = model(tokens)       # F_2's input matrix at 10% of its rank
"""

from __future__ import annotations

import contextlib
import math

import torch

from ..config import check_array, check_int, check_range

__all__ = ["low_rank", "laser_rank", "laser"]


def low_rank(W: torch.Tensor, k: int) -> torch.Tensor:
    """Best rank-``k`` approximation of a matrix (truncated SVD).

    Args:
        W: ``(m, n)`` matrix.
        k: kept rank, ``0 <= k``; ``k >= min(m, n)`` returns a copy of ``W``; ``k = 0`` the zero matrix.

    Returns:
        ``(m, n)`` tensor of rank at most ``k`` (same dtype and device).
    """
    if not torch.is_tensor(W):
        raise ValueError(f"W must be a torch tensor (a matrix), got {type(W).__name__}")
    if W.ndim == 2 and not torch.isfinite(W).all():
        raise ValueError("W must hold finite numbers only (found NaN or inf)")
    if W.ndim != 2:
        raise ValueError(f"W must be a matrix (2-D), got shape {tuple(W.shape)}")
    check_int("k", k, minimum=0)
    r = min(W.shape)
    if k >= r:
        return W.detach().clone()
    if k == 0:
        return torch.zeros_like(W)
    U, S, Vh = torch.linalg.svd(W.detach(), full_matrices=False)
    return (U[:, :k] * S[:k]) @ Vh[:k]


def laser_rank(shape, fraction: float) -> int:
    """Rank ``floor(fraction * min(shape))`` kept by LASER at a fraction ``rho`` in ``[0, 1]``."""
    check_array("shape", shape)
    check_range("fraction", fraction, 0.0, 1.0)
    if len(shape) != 2:
        raise ValueError(f"shape must be 2-D, got {tuple(shape)}")
    return int(math.floor(fraction * min(shape) + 1e-9))


def _weight_of(target):
    if isinstance(target, torch.Tensor):
        return target
    w = getattr(target, "weight", None)
    if not isinstance(w, torch.Tensor):
        raise ValueError(f"target must be a tensor or a module with a 2-D .weight, got {type(target).__name__}")
    return w


def laser(target, rank: int | None = None, fraction: float | None = None):
    """Temporarily replace a weight by its rank-``k`` truncation.

    Args:
        target: an ``nn.Linear``, any module with a 2-D ``weight`` (e.g. GPT-2's transposed ``Conv1D``), or a
            2-D parameter/tensor (changed in place).
        rank: kept rank ``k >= 0`` (give exactly one of ``rank`` and ``fraction``).
        fraction: kept fraction ``rho`` in ``[0, 1]`` of ``min(d_in, d_out)``.

    Yields:
        the kept rank ``k``. On exit the original values are restored exactly.
    """
    if (rank is None) == (fraction is None):
        raise ValueError("give exactly one of rank and fraction")
    W = _weight_of(target)
    if W.ndim != 2:
        raise ValueError(f"the weight must be 2-D, got shape {tuple(W.shape)}")
    k = laser_rank(W.shape, fraction) if fraction is not None else rank
    check_int("rank", k, minimum=0)
    return _truncated(W, k)


@contextlib.contextmanager
def _truncated(W: torch.Tensor, k: int):
    """The context of :func:`laser` (its arguments are checked when it is called, before ``with`` enters)."""
    saved = W.detach().clone()
    with torch.no_grad():
        W.copy_(low_rank(saved, k))
    try:
        yield k
    finally:
        with torch.no_grad():
            W.copy_(saved)
