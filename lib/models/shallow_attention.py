"""One-layer softmax-attention models with a leading batch-of-runs axis.

:class:`ShallowAttention` is the model (2.1) of H. Li's thesis (and the skeleton of (3.1) and (6.2)): for a
sequence ``X = (x_1, ..., x_L)`` of ``d``-dimensional tokens and a query position ``l``,

.. math::

    F_l(X) = \\sum_{i=1}^m a_i\\,\\mathrm{ReLU}\\Big(w_{O,i}^\\top \\sum_{s} W_V x_s\\,
    \\mathrm{softmax}_s\\big((W_K x_s)^\\top W_Q x_l + b_{ls}\\big)\\Big),

with the fixed output layer ``a_i = ±1/sqrt(m)`` (half each), an optional additive bias ``b`` (a positional
encoding) and an optional key mask (with a matching query mask, the masked tokens are removed). The read-out is
the mean of ``F_l`` over all queries (``readout="mean"``) or
``F_0`` alone (``readout="first"``). There is no ``1/sqrt(d)`` scaling, as in the thesis.

Every parameter carries a leading axis of ``R`` independent runs, so that many seeds or settings train in one
call: summing the runs' losses gives each run its own gradient. Freeze flags keep ``W_K, W_Q`` (or ``W_V``,
``W_O``) at their initial values.
"""

from __future__ import annotations

import math

import torch

from lib.config import check_bool, check_int, check_positive
from lib.models.transformer import softmax_attention


class ShallowAttention(torch.nn.Module):
    """``R`` one-layer single-head attention networks trained side by side.

    Args:
        runs: number ``R`` of independent networks (leading axis of every parameter).
        d: token dimension.
        m: hidden width of the ReLU layer.
        d_v: value dimension (default ``d``).
        readout: ``"mean"`` (average over queries) or ``"first"`` (query 0 only).
        freeze_qk: keep ``W_K`` and ``W_Q`` fixed.
        freeze_v: keep ``W_V`` fixed.
        freeze_o: keep ``W_O`` fixed.
        init_qk: ``(R, d, d)`` tensors ``(W_K, W_Q)`` or None (identity).
        init_v: ``(R, d_v, d)`` tensor or None (identity padded).
        init_o_std: standard deviation of the Gaussian ``W_O``.
        generator: ``torch.Generator`` for the random initial values.
    """

    def __init__(
        self,
        runs: int,
        d: int,
        m: int,
        *,
        d_v: int | None = None,
        readout: str = "mean",
        freeze_qk: bool = False,
        freeze_v: bool = False,
        freeze_o: bool = False,
        init_qk=None,
        init_v=None,
        init_o_std: float = 0.01,
        generator: torch.Generator | None = None,
    ):
        check_bool("freeze_qk", freeze_qk)
        check_bool("freeze_v", freeze_v)
        check_bool("freeze_o", freeze_o)
        super().__init__()
        check_int("runs", runs, minimum=1)
        check_int("d", d, minimum=1)
        check_int("m", m, minimum=2)
        if d_v is None:
            d_v = d
        check_int("d_v", d_v, minimum=1)
        check_positive("init_o_std", init_o_std, allow_zero=True)
        if readout not in ("mean", "first"):
            raise ValueError(f"readout must be 'mean' or 'first', got {readout!r}")
        self.readout = readout
        eye = torch.eye(d).expand(runs, d, d).clone()
        wk, wq = (eye.clone(), eye.clone()) if init_qk is None else init_qk
        wv = torch.eye(d_v, d).expand(runs, d_v, d).clone() if init_v is None else init_v
        wo = torch.randn(runs, m, d_v, generator=generator) * init_o_std
        self.W_K = torch.nn.Parameter(wk.clone(), requires_grad=not freeze_qk)
        self.W_Q = torch.nn.Parameter(wq.clone(), requires_grad=not freeze_qk)
        self.W_V = torch.nn.Parameter(wv.clone(), requires_grad=not freeze_v)
        self.W_O = torch.nn.Parameter(wo, requires_grad=not freeze_o)
        a = torch.ones(m) / math.sqrt(m)
        a[m // 2 :] *= -1
        self.register_buffer("a", a)

    def attention(self, X: torch.Tensor, bias=None, allowed=None) -> torch.Tensor:
        """Attention weights ``(R, B, L, L)`` (row ``l`` = query ``l``; rows sum to 1).

        Args:
            X: tokens ``(R, B, L, d)``.
            bias: additive score bias broadcastable to ``(R, B, L, L)`` or None.
            allowed: boolean key mask broadcastable to ``(R, B, L, L)`` or None.
        """
        k = torch.einsum("rij,rblj->rbli", self.W_K, X)
        q = torch.einsum("rij,rblj->rbli", self.W_Q, X)
        _, A = softmax_attention(q, k, k, bias=bias, allowed=allowed)
        return A

    def forward(self, X: torch.Tensor, bias=None, allowed=None, queries=None, return_attention: bool = False):
        """Network outputs ``(R, B)`` for tokens ``X`` of shape ``(R, B, L, d)``.

        ``bias`` and ``allowed`` are as in :meth:`attention`. ``queries`` (boolean, broadcastable to ``(R, B, L)``,
        mean read-out only) restricts the average to the marked queries: with ``allowed`` set to the same tokens
        as keys, the unmarked tokens are removed from the sequence altogether (token sparsification).
        ``return_attention=True`` returns ``(outputs, A)`` with the attention weights ``(R, B, L, L)`` of
        :meth:`attention`, computed once for both.
        """
        if X.dim() != 4 or X.shape[0] != self.W_K.shape[0]:
            raise ValueError(f"X must have shape (R={self.W_K.shape[0]}, B, L, d), got {tuple(X.shape)}")
        if queries is not None and self.readout != "mean":
            raise ValueError("queries needs readout='mean'")
        A_all = self.attention(X, bias, allowed)
        A = A_all[:, :, :1] if self.readout == "first" else A_all
        v = torch.einsum("rij,rblj->rbli", self.W_V, X)
        z = A @ v  # (R, B, Lq, d_v)
        h = torch.relu(torch.einsum("rmi,rbli->rblm", self.W_O, z))
        out = h @ self.a  # (R, B, Lq)
        if queries is None:
            y = out.mean(-1)
        else:
            w = torch.broadcast_to(torch.as_tensor(queries, dtype=torch.bool), out.shape).to(out.dtype)
            y = (out * w).sum(-1) / w.sum(-1).clamp_min(1.0)
        return (y, A_all) if return_attention else y


def attention_mass(A: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Average attention weight that the queries put on a set of keys.

    Args:
        A: attention weights ``(..., Lq, L)``.
        keys: boolean ``(..., L)`` marking the keys of interest (broadcast over queries).

    Returns:
        ``(...)``: the mean over queries of the total weight on the marked keys.
    """
    if A.shape[-1] != keys.shape[-1]:
        raise ValueError(f"keys must end in L={A.shape[-1]}, got {tuple(keys.shape)}")
    return (A * keys.unsqueeze(-2).to(A.dtype)).sum(-1).mean(-1)
