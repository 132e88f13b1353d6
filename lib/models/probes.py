"""Probes of attention maps shared by the parts: how much a head looks like a previous-token head or an induction
head (Elhage et al., 2021; Olsson et al., 2022).

* :func:`prev_token_score` - mean attention of each query on the key right before it;
* :func:`induction_key_mask` - the keys that follow an earlier occurrence of the query's token.

Example::

    A = model.attention_maps[0]                  # (B, H, T, T)
    prev_token_score(A[:, 0])                   # (B,) scores in [0, 1]
"""

from __future__ import annotations

import torch

from lib.config import check_array

__all__ = ["prev_token_score", "induction_key_mask"]


def prev_token_score(A: torch.Tensor) -> torch.Tensor:
    """Mean attention of query ``i`` on key ``i - 1`` over ``i = 1..T-1`` (the previous-token head score).

    Args:
        A: attention weights ``(..., T, T)`` (rows = queries), ``T >= 2``.

    Returns:
        ``(...)`` scores in ``[0, 1]``; 1 for an exact previous-token head (the layer-1 head of Thm 4.1 as
        ``p -> infinity``).
    """
    check_array("A", A)
    A = torch.as_tensor(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2] or A.shape[-1] < 2:
        raise ValueError(f"A must have shape (..., T, T) with T >= 2, got {tuple(A.shape)}")
    T = A.shape[-1]
    i = torch.arange(1, T)
    return A[..., i, i - 1].mean(-1)


def induction_key_mask(tokens: torch.Tensor) -> torch.Tensor:
    """Keys an induction head may attend to: ``M[b, i, k]`` is True when ``1 <= k <= i`` and the token before key
    ``k`` equals the query's token, ``x_{k-1} = x_i`` (the key follows an earlier occurrence of ``x_i``).

    Args:
        tokens: ``(B, T)`` integer ids.

    Returns:
        ``(B, T, T)`` bool (rows = queries, columns = keys).
    """
    check_array("tokens", tokens)
    tokens = torch.as_tensor(tokens)
    if tokens.ndim != 2 or tokens.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"tokens must be integer ids of shape (B, T), got {tuple(tokens.shape)} {tokens.dtype}")
    B, T = tokens.shape
    prev = torch.cat([torch.full_like(tokens[:, :1], -1), tokens[:, :-1]], dim=1)  # x_{k-1}, -1 for k = 0
    same = tokens[:, :, None] == prev[:, None, :]
    ar = torch.arange(T, device=tokens.device)
    k_le_i = ar[None, :] <= ar[:, None]
    return same & k_le_i[None] & (prev[:, None, :] >= 0)
