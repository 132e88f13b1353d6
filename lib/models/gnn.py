"""Message-passing graph neural networks: GIN and GIN with jumping knowledge (GIN-JK).

A GIN layer (Xu et al. 2019) maps node states :math:`H\\in\\mathbb R^{n\\times d}` to
:math:`H'_i=\\mathrm{MLP}\\big((1+\\epsilon)H_i+\\sum_{j\\in\\mathcal N(i)}H_j\\big)`, with sum aggregation and a
learnable scalar :math:`\\epsilon` per layer (initialised at 0). GIN-JK (Xu et al. 2018) concatenates the input and
every layer's output, :math:`[H^{(0)},H^{(1)},\\dots,H^{(K)}]`, and applies a node-wise readout MLP. Graphs are
given as an ``edge_index`` of shape ``(2, E)`` listing both directions of every undirected edge; aggregation uses
``index_add_`` (no sparse tensors). GA-MLP heads need no class here: they are :class:`lib.models.mlp.MLP` on
precomputed features.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import torch
from torch import nn

from ..config import check_bool, check_finite, check_int
from .mlp import MLP


def edge_index_of(G) -> torch.Tensor:
    """The ``(2, E)`` int64 ``edge_index`` of a networkx graph with nodes ``0..n-1`` (both directions of every
    edge, self-loops once)."""
    if not isinstance(G, nx.Graph) or G.is_directed():
        raise ValueError(f"G must be an undirected networkx graph, got {type(G).__name__}")
    if set(G.nodes) != set(range(G.number_of_nodes())):
        raise ValueError("G must have nodes 0..n-1")
    e = np.array([(u, v) for u, v in G.edges() if u != v], dtype=np.int64).reshape(-1, 2)
    loops = np.array([(u, u) for u, v in G.edges() if u == v], dtype=np.int64).reshape(-1, 2)
    both = np.concatenate([e, e[:, ::-1], loops], axis=0)
    return torch.as_tensor(both.T.copy())


def neighbour_sum(h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """:math:`\\sum_{j\\in\\mathcal N(i)}h_j` for every node ``i``: ``(n, d) -> (n, d)``."""
    src, dst = edge_index[0], edge_index[1]
    return torch.zeros_like(h).index_add_(0, dst, h[src])


class GINLayer(nn.Module):
    """One GIN layer: ``MLP((1 + eps) h_i + sum_j h_j)``.

    Args:
        d_in, d_out: state widths; width: hidden width of the MLP; mlp_depth: its number of linear layers
        (>= 1); train_eps: whether :math:`\\epsilon` is learnable (else fixed at ``eps``); eps: initial value.
    """

    def __init__(self, d_in: int, d_out: int, width: int = 32, *, mlp_depth: int = 2, train_eps: bool = True,
                 eps: float = 0.0):
        super().__init__()
        check_int("d_in", d_in, minimum=1)
        check_int("d_out", d_out, minimum=1)
        check_int("mlp_depth", mlp_depth, minimum=1)
        check_bool("train_eps", train_eps)
        check_finite("eps", eps)
        self.mlp = MLP(d_in, d_out, depth=mlp_depth, width=width)
        eps_t = torch.tensor(float(eps))
        if train_eps:
            self.eps = nn.Parameter(eps_t)
        else:
            self.register_buffer("eps", eps_t)

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.mlp((1 + self.eps) * h + neighbour_sum(h, edge_index))


class GIN(nn.Module):
    """A depth-``K`` GIN for node-level outputs, optionally with jumping knowledge.

    Each layer is a :class:`GINLayer` followed by a ReLU (the last one too when ``jk=True``). With ``jk=True``
    the readout MLP sees the concatenation of the input and all layer outputs; otherwise only the last layer.

    Args:
        d_in: input feature width; width: hidden width of the layers (and of every MLP); depth: number of GIN
        layers ``K >= 1``; d_out: output width; jk: jumping knowledge; mlp_depth: linear layers per layer MLP;
        readout_depth: linear layers of the readout MLP; train_eps: learnable :math:`\\epsilon`; mlp_width:
        hidden width of the layer MLPs (default ``width``).
    Shapes: ``forward(x, edge_index)``: ``(n, d_in), (2, E) -> (n, d_out)``.
    """

    def __init__(self, d_in: int, width: int = 32, depth: int = 2, d_out: int = 1, *, jk: bool = True,
                 mlp_depth: int = 2, readout_depth: int = 2, train_eps: bool = True, mlp_width: int | None = None):
        super().__init__()
        check_int("depth", depth, minimum=1)
        check_int("width", width, minimum=1)
        check_int("readout_depth", readout_depth, minimum=1)
        check_bool("jk", jk)
        check_bool("train_eps", train_eps)
        self.layers = nn.ModuleList(
            [GINLayer(d_in if k == 0 else width, width, mlp_width or width, mlp_depth=mlp_depth, train_eps=train_eps)
             for k in range(depth)]
        )
        self.jk = jk
        d_read = d_in + depth * width if jk else width
        self.readout = MLP(d_read, d_out, depth=readout_depth, width=width)

    def states(self, x: torch.Tensor, edge_index: torch.Tensor) -> list[torch.Tensor]:
        """``[H^(0), ..., H^(K)]``: the input and every layer's output (after its ReLU)."""
        hs = [x]
        for layer in self.layers:
            hs.append(torch.relu(layer(hs[-1], edge_index)))
        return hs

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        hs = self.states(x, edge_index)
        return self.readout(torch.cat(hs, dim=-1) if self.jk else hs[-1])
