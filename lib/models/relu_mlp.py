"""A plain fully connected ReLU network (nanoGPT-style short module).

``ReLUMLP(in_dim, width, depth)`` has ``depth`` linear layers (so ``depth - 1`` hidden ReLU layers of
``width`` units) and a scalar output; with ``bias=True`` it is the "non-homogeneous" MLP of Chen & Bruna
(App. B.3.2).
"""

from __future__ import annotations

import torch
from torch import nn

from ..config import check_int

__all__ = ["ReLUMLP"]


class ReLUMLP(nn.Module):
    """ReLU MLP ``R^in_dim -> R^out_dim`` with ``depth`` linear layers of width ``width``.

    Input shape (n, in_dim), output shape (n,) when ``out_dim == 1`` else (n, out_dim). Parameters use
    PyTorch's default (uniform fan-in) initialisation, drawn from the global torch generator (seed it first).
    """

    def __init__(self, in_dim: int, width: int = 16, depth: int = 3, out_dim: int = 1, bias: bool = True,
                 dtype=torch.float64):
        super().__init__()
        check_int("in_dim", in_dim, minimum=1)
        check_int("width", width, minimum=1)
        check_int("depth", depth, minimum=1)
        check_int("out_dim", out_dim, minimum=1)
        dims = [in_dim] + [width] * (depth - 1) + [out_dim]
        self.layers = nn.ModuleList(
            nn.Linear(a, b, bias=bias, dtype=dtype) for a, b in zip(dims[:-1], dims[1:])
        )
        self.out_dim = out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            x = torch.relu(layer(x))
        x = self.layers[-1](x)
        return x.squeeze(-1) if self.out_dim == 1 else x

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
