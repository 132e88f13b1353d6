"""A spectral GNN (sGNN) on the operator family :math:`\\{I, A, A^2, \\dots\\}`, after Chen, Li & Bruna (2019).

Each layer mixes the node states with their images under the powers of the adjacency matrix,

.. math:: z = \\sum_{j=0}^{J} A^j h\\, W_j + b,

normalises ``z`` over the nodes of each graph (instance norm, no affine part), applies ReLU to the first half
of the channels and leaves the second half linear (the split of Chen et al.'s sGNN), and adds the result to
``h`` (a residual connection; the first layer, which changes the width, has none). A linear read-out gives
per-node logits. Chen's thesis (appendix A.11) uses :math:`\\{I, A, A^2\\}` and depth 60 but gives neither the
width nor the normalisation; width 10, instance norm and the residual are the book's choices.

Graphs are batched as one block-diagonal edge list: ``G`` graphs of ``n`` nodes each, nodes of graph ``g``
numbered ``g * n .. (g + 1) * n - 1``; :math:`A` is applied with ``index_add_`` (no sparse tensors).
"""

from __future__ import annotations

import torch
from torch import nn

from lib.config import check_bool, check_int, check_positive


def apply_adjacency(h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """:math:`A h` for the directed edge list ``edge_index`` of shape ``(2, m)`` (source row, target row): row
    ``i`` of the result sums ``h[j]`` over the edges ``j -> i``. List each undirected edge in both directions."""
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, m), got {tuple(edge_index.shape)}")
    out = torch.zeros_like(h)
    return out.index_add(0, edge_index[1], h[edge_index[0]])


def instance_norm(z: torch.Tensor, n: int, eps: float = 1e-5) -> torch.Tensor:
    """Standardise each channel of ``z`` (shape ``(G * n, w)``) over the ``n`` nodes of each of the ``G`` graphs
    (mean 0, variance 1; a constant channel becomes 0)."""
    check_int("n", n, minimum=1)
    if z.ndim != 2 or z.shape[0] % n:
        raise ValueError(f"z must have shape (G * n, w) with n={n}, got {tuple(z.shape)}")
    zg = z.reshape(-1, n, z.shape[1])
    zg = (zg - zg.mean(1, keepdim=True)) / torch.sqrt(zg.var(1, unbiased=False, keepdim=True) + eps)
    return zg.reshape(z.shape)


class SGNNLayer(nn.Module):
    """One sGNN layer on :math:`\\{I, A, \\dots, A^J\\}` (see the module docstring).

    Args:
        d_in, d_out: input and output widths (>= 1; ``d_out >= 2`` so that both halves exist).
        powers: the highest power ``J`` of :math:`A` (>= 0); ``J = 2`` gives :math:`\\{I, A, A^2\\}`.
        residual: add the input (needs ``d_in == d_out``).
    """

    def __init__(self, d_in: int, d_out: int, powers: int = 2, *, residual: bool = True):
        super().__init__()
        check_int("d_in", d_in, minimum=1)
        check_int("d_out", d_out, minimum=2)
        check_int("powers", powers, minimum=0)
        check_bool("residual", residual)
        if residual and d_in != d_out:
            raise ValueError(f"residual needs d_in == d_out, got {d_in} and {d_out}")
        self.mix = nn.Linear(d_in * (powers + 1), d_out)
        self.powers, self.residual, self.half = powers, residual, d_out // 2

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor, n: int) -> torch.Tensor:
        feats = [h]
        for _ in range(self.powers):
            feats.append(apply_adjacency(feats[-1], edge_index))
        z = instance_norm(self.mix(torch.cat(feats, dim=1)), n)
        z = torch.cat([torch.relu(z[:, : self.half]), z[:, self.half :]], dim=1)
        return h + z if self.residual else z


class SGNN(nn.Module):
    """A depth-``depth`` sGNN with width ``width`` and a linear per-node read-out to ``n_classes`` logits.

    Args:
        d_in: node-input width (1 for the all-ones input of community detection).
        width: hidden width (>= 2).
        depth: number of sGNN layers (>= 1); the receptive field is ``depth * powers`` hops.
        n_classes: output logits per node (>= 1).
        powers: highest power of :math:`A` per layer (2: :math:`\\{I, A, A^2\\}`).
        init_scale: multiplier (> 0) of PyTorch's default initialisation of the residual layers.
    Shapes: ``forward(x, edge_index, n)``: ``x`` ``(G * n, d_in)``, ``edge_index`` ``(2, m)`` (block-diagonal,
    both directions) -> logits ``(G * n, n_classes)``.
    """

    def __init__(
        self,
        d_in: int = 1,
        width: int = 10,
        depth: int = 10,
        n_classes: int = 2,
        powers: int = 2,
        *,
        init_scale: float = 1.0,
    ):
        super().__init__()
        check_int("depth", depth, minimum=1)
        check_int("width", width, minimum=2)
        check_int("n_classes", n_classes, minimum=1)
        check_positive("init_scale", init_scale)
        layers = [SGNNLayer(d_in, width, powers, residual=False)]
        layers += [SGNNLayer(width, width, powers, residual=True) for _ in range(depth - 1)]
        self.layers = nn.ModuleList(layers)
        with torch.no_grad():
            for layer in self.layers[1:]:
                layer.mix.weight.mul_(init_scale)
        self.readout = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, n: int) -> torch.Tensor:
        h = x
        for layer in self.layers:
            h = layer(h, edge_index, n)
        return self.readout(h)
