"""Multi-layer perceptrons: the bias-free ReLU MLP of Part I and the deep linear net / MLP with a depth-
dependent initial scale of Part III.
"""

from __future__ import annotations

import torch
from torch import nn

from lib.config import check_bool, check_in, check_int, check_positive


def _layer_sizes(d_in: int, d_out: int, depth: int, width: int | None) -> list[int]:
    check_int("d_in", d_in, minimum=1)
    check_int("d_out", d_out, minimum=1)
    check_int("depth", depth, minimum=1)
    if depth > 1:
        if width is None:
            raise ValueError("width must be given (an integer >= 1) when depth > 1")
        check_int("width", width, minimum=1)
    return [d_in] + [int(width)] * (depth - 1) + [d_out] if depth > 1 else [d_in, d_out]


def _scaled_linear(n_in: int, n_out: int, bias: bool, init_scale: float) -> nn.Linear:
    layer = nn.Linear(n_in, n_out, bias=bias)
    with torch.no_grad():
        layer.weight.mul_(init_scale)
        if bias:
            layer.bias.mul_(init_scale)
    return layer


class DeepLinear(nn.Module):
    """``f(x) = W_L (... (W_1 x + b_1) ...) + b_L``: a deep linear network.

    Args:
        d_in, d_out: input / output dimension; depth: number of layers ``L >= 1``; width: hidden size (needed
        when ``depth > 1``); bias: add a bias to every layer; init_scale: multiplier (``> 0``) of PyTorch's
        default initialisation.
    Shapes: ``forward(x)``: ``(..., d_in) -> (..., d_out)``.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        depth: int = 1,
        width: int | None = None,
        *,
        bias: bool = False,
        init_scale: float = 1.0,
    ):
        super().__init__()
        check_positive("init_scale", init_scale, allow_zero=True)
        check_bool("bias", bias)
        sizes = _layer_sizes(d_in, d_out, depth, width)
        self.layers = nn.ModuleList(
            [_scaled_linear(a, b, bias, float(init_scale)) for a, b in zip(sizes[:-1], sizes[1:])]
        )
        self.bias = bool(bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x

    def jacobian(self) -> torch.Tensor:
        """End-to-end matrix ``W = W_L ... W_1``, shape ``(d_out, d_in)`` (the Jacobian ``W_theta`` of Sec.
        4)."""
        W = self.layers[0].weight
        for layer in self.layers[1:]:
            W = layer.weight @ W
        return W

    def offset(self) -> torch.Tensor:
        """End-to-end bias ``f(0)``, shape ``(d_out,)`` (zeros when ``bias=False``)."""
        d_in = self.layers[0].in_features
        return self.forward(torch.zeros(d_in, dtype=self.layers[0].weight.dtype))

    def weights(self) -> list[torch.Tensor]:
        """The layer weights ``[W_1, ..., W_L]`` (views, not copies)."""
        return [layer.weight for layer in self.layers]


class MLP(nn.Module):
    """Multi-layer perceptron ``d_in -> width -> ... -> d_out`` with ReLU or linear activations.

    Args:
        d_in, d_out, depth (number of linear layers ``>= 1``), width (hidden size), activation
        (``"relu"`` or ``"linear"``), bias, init_scale (multiplier of PyTorch's default initialisation).
    Shapes: ``forward(x)``: ``(..., d_in) -> (..., d_out)``.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        depth: int = 2,
        width: int | None = 64,
        *,
        activation: str = "relu",
        bias: bool = True,
        init_scale: float = 1.0,
    ):
        super().__init__()
        check_in("activation", activation, ("relu", "linear"))
        check_positive("init_scale", init_scale, allow_zero=True)
        check_bool("bias", bias)
        sizes = _layer_sizes(d_in, d_out, depth, width)
        self.layers = nn.ModuleList(
            [_scaled_linear(a, b, bias, float(init_scale)) for a, b in zip(sizes[:-1], sizes[1:])]
        )
        self.activation = activation
        self.d_in = d_in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1 and self.activation == "relu":
                x = torch.relu(x)
        return x

    def jacobian_at(self, x: torch.Tensor) -> torch.Tensor:
        """Input Jacobian ``df/dx`` at ``x``: ``(d_in,) -> (d_out, d_in)`` or ``(B, d_in) -> (B, d_out,
        d_in)``."""
        from torch.func import jacrev, vmap

        x = torch.as_tensor(x, dtype=self.layers[0].weight.dtype)
        if x.shape[-1] != self.d_in or x.ndim not in (1, 2):
            raise ValueError(f"x must have shape ({self.d_in},) or (B, {self.d_in}), got {tuple(x.shape)}")
        jac = jacrev(self.forward)
        return jac(x) if x.ndim == 1 else vmap(jac)(x)


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
        check_bool("bias", bias)
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
