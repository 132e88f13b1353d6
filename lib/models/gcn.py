"""The three-layer graph convolutional network (5.4) of H. Li's thesis, chapter 5, for K independent copies at once.

:math:`F_A(e_g, X; W, V) = e_g^\\top A\\,\\sigma(A\\,\\sigma(A X W + B_1) V + B_2)\\,C` with ReLU :math:`\\sigma`,
trainable :math:`W \\in \\mathbb R^{d\\times m_1}`, :math:`V \\in \\mathbb R^{m_1\\times m_2}`, and fixed random
:math:`C \\in \\mathbb R^{m_2\\times K_{out}}`, :math:`B_1 = \\mathbf 1 b_1^\\top`, :math:`B_2 = \\mathbf 1 b_2^\\top`.
Initialisation as in Section 5.3: :math:`W_{ij} \\sim \\mathcal N(0, 1/m_1)`, :math:`V_{ij} \\sim \\mathcal N(0,
1/m_2)`, :math:`b_1 \\sim \\mathcal N(0, I/m_1)`, :math:`b_2 \\sim \\mathcal N(0, I/m_2)`, :math:`C_{ij} \\sim
\\mathcal N(0, 1)`.

``copies`` independent networks share the graph: their hidden features are laid side by side, so each layer's
aggregation is one sparse product ``A @ H`` with ``H`` of shape (N, copies * m). The copies never interact, so a
summed loss trains each exactly as it would be trained alone (Adam acts elementwise).
"""

from __future__ import annotations

import torch
from torch import nn

from lib.config import check_int


class GCN3(nn.Module):
    """Three-layer GCN (5.4), ``copies`` independent networks at once; one sparse adjacency per layer.

    Args:
        d: feature dimension (>= 1).
        m1, m2: hidden widths (>= 1).
        k_out: output dimension (>= 1).
        copies: number of independent networks (>= 1).
        generator: torch generator of the initialisation (default: seeded with 0).

    Shapes: ``forward(adjs, X)``: ``adjs`` one sparse (N, N) matrix or a sequence of three (one per layer, first
    layer first), ``X`` (N, d) -> (copies, N, k_out).
    """

    def __init__(self, d: int, m1: int, m2: int, k_out: int, copies: int = 1, generator: torch.Generator | None = None):
        super().__init__()
        for name, v in (("d", d), ("m1", m1), ("m2", m2), ("k_out", k_out), ("copies", copies)):
            check_int(name, v, minimum=1)
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        self.copies, self.m1, self.m2 = copies, m1, m2
        self.W = nn.Parameter(torch.randn(copies, d, m1, generator=g) / m1**0.5)
        self.V = nn.Parameter(torch.randn(copies, m1, m2, generator=g) / m2**0.5)
        self.register_buffer("b1", torch.randn(copies, m1, generator=g) / m1**0.5)
        self.register_buffer("b2", torch.randn(copies, m2, generator=g) / m2**0.5)
        self.register_buffer("C", torch.randn(copies, m2, k_out, generator=g))

    @staticmethod
    def _aggregate(A: torch.Tensor, H: torch.Tensor) -> torch.Tensor:
        """``A @ H[k]`` for every copy k in one sparse product; ``H`` (copies, N, m) -> (copies, N, m)."""
        k, n, m = H.shape
        flat = H.permute(1, 0, 2).reshape(n, k * m)
        return torch.sparse.mm(A, flat).reshape(n, k, m).permute(1, 0, 2)

    def forward(self, adjs, X: torch.Tensor) -> torch.Tensor:
        if isinstance(adjs, torch.Tensor):
            adjs = (adjs, adjs, adjs)
        if len(adjs) != 3:
            raise ValueError(f"adjs must be one sparse matrix or three, got {len(adjs)}")
        h = torch.einsum("nd,kdm->knm", X, self.W)
        h = torch.relu(self._aggregate(adjs[0], h) + self.b1[:, None, :])
        h = torch.einsum("knm,kmp->knp", h, self.V)
        h = torch.relu(self._aggregate(adjs[1], h) + self.b2[:, None, :])
        return self._aggregate(adjs[2], h @ self.C)  # A (h C) = (A h) C, cheaper
