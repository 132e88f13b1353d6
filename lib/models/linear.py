"""Deep linear networks and small MLPs with an end-to-end Jacobian, plus exact population-loss GD.

Models (nanoGPT-style, short):

* :class:`DeepLinear` ``f(x) = W_L ... W_1 x`` (+ biases if ``bias=True``); ``model.jacobian()`` returns the
  end-to-end matrix ``W = W_L ... W_1`` of shape ``(d_out, d_in)`` (the Jacobian ``W_theta`` of Sec. 4 of
  Yang et al. 2025).
* :class:`MLP` with ``activation="relu"`` or ``"linear"``; ``model.jacobian_at(x)`` is ``df/dx`` at ``x``
  (shape ``(d_out, d_in)``, or ``(B, d_out, d_in)`` for a batch), computed with ``torch.func``.

Both use PyTorch's default ``nn.Linear`` initialisation ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for weights and
biases, multiplied by ``init_scale``. ``depth`` is the number of linear layers (``depth=1`` is ``f = W x``),
and ``width`` the size of every hidden layer.

Batched exact GD on the population loss of a linear model (Eq. (4.1) of Yang et al.):

    L(W_1..W_L) = 1/2 tr[(W - I) A (W - I)^T],   W = W_L ... W_1,

where ``A = E[x x^T]`` (``d x d``). With biases the same formula holds for the augmented input ``(x, 1)`` and
augmented second moment ``[[A, m], [m^T, 1]]`` (``m = E[x]``). :func:`population_gd_deep_linear` runs ``K``
independent networks (seeds) at once with batched matmuls.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ..config import check_in, check_int, check_positive

__all__ = [
    "DeepLinear",
    "MLP",
    "init_deep_linear",
    "population_gd_deep_linear",
    "end_to_end",
    "sgd_linear_batched",
]


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


# ----------------------------------------------------------------------------------------------------------
# ----
# Batched weights and exact population-loss GD
# ----------------------------------------------------------------------------------------------------------
# ----


def init_deep_linear(
    d_in: int,
    d_out: int,
    depth: int,
    width: int | None = None,
    *,
    K: int = 1,
    init_scale: float = 1.0,
    bias: bool = False,
    seed: int = 0,
    dtype=torch.float64,
):
    """PyTorch-default initialisation for ``K`` deep linear networks at once.

    Layer ``l`` has weight ``(K, n_l, n_{l-1})`` drawn from ``U(-c, c)``, ``c = init_scale /
    sqrt(n_{l-1})``, and
    (if ``bias``) bias ``(K, n_l)`` from the same law. Returns ``(weights, biases)`` (``biases`` is ``None``
    without bias).
    """
    sizes = _layer_sizes(d_in, d_out, depth, width)
    check_int("K", K, minimum=1)
    check_positive("init_scale", init_scale, allow_zero=True)
    gen = torch.Generator().manual_seed(int(seed))
    weights, biases = [], []
    for a, b in zip(sizes[:-1], sizes[1:]):
        c = float(init_scale) / math.sqrt(a)
        weights.append((torch.rand(K, b, a, generator=gen, dtype=dtype) * 2 - 1) * c)
        if bias:
            biases.append((torch.rand(K, b, generator=gen, dtype=dtype) * 2 - 1) * c)
    return weights, (biases if bias else None)


def end_to_end(weights: list[torch.Tensor], biases: list[torch.Tensor] | None = None):
    """End-to-end affine map of a (batched) deep linear net: ``(W, c)`` with ``f(x) = W x + c``.

    ``weights[l]``: ``(K, n_l, n_{l-1})``; ``biases[l]``: ``(K, n_l)`` or ``None``. Returns ``W`` of shape
    ``(K, d_out, d_in)`` and ``c`` of shape ``(K, d_out)`` (zeros without biases).
    """
    if not weights:
        raise ValueError("weights must contain at least one layer")
    W = weights[0]
    c = biases[0] if biases is not None else torch.zeros(W.shape[:2], dtype=W.dtype)
    for l in range(1, len(weights)):
        W = weights[l] @ W
        c = (weights[l] @ c.unsqueeze(-1)).squeeze(-1)
        if biases is not None:
            c = c + biases[l]
    return W, c


def population_gd_deep_linear(
    weights,
    A,
    *,
    lr: float,
    steps: int,
    biases=None,
    m=None,
    x_eval=None,
    record_every: int = 1,
    target=None,
    divergence_bound: float = 1e8,
    record_W: bool = True,
):
    """Exact GD on the population loss ``1/2 E||W x + c - T x||^2`` for ``K`` deep linear nets at once.

    The loss equals ``1/2 tr[(W~ - T~) A~ (W~ - T~)^T]`` with ``W~ = [W c]``, ``T~ = [T 0]`` and
    ``A~ = [[A, m], [m^T, 1]]`` (Eq. (4.1) of Yang et al. 2025; without biases just ``A``). The gradient of
    layer ``l`` is ``(P_{>l})^T G (P_{<l})^T`` with ``G = (W~ - T~) A~`` and ``P`` the partial products of the
    augmented layer matrices ``[[W_l, b_l], [0, 1]]``.

    Args:
        weights: list of ``L`` tensors ``(K, n_l, n_{l-1})`` (from :func:`init_deep_linear`); copied,
        not changed. A: second moment ``E[x x^T]``, shape ``(d, d)`` or ``(K, d, d)`` (NumPy or torch).
        lr: step size ``> 0``; steps: number of GD steps ``>= 0``.
        biases: list of ``L`` tensors ``(K, n_l)`` or ``None``; m: mean ``E[x]`` ``(d,)`` / ``(K, d)``, needed
            with biases.
        x_eval: evaluation points ``(P, d)`` or ``(K, P, d)`` (e.g. ``x_hat``); their outputs are recorded.
        record_every: record every this many steps (step 0 and the last step are always recorded).
        target: ``T`` of shape ``(d_out, d)`` (default: the identity, ``d_out = d``).
        divergence_bound: a run whose loss exceeds this (or is not finite) is frozen and flagged.
        record_W: record the end-to-end ``W`` and ``c`` (memory ``K * R * d_out * d`` floats; turn off for big
            sweeps).

    Returns:
        dict with ``step`` ``(R,)``, ``loss`` ``(K, R)``, ``outputs`` ``(K, R, P, d_out)`` (if ``x_eval``),
        ``W`` ``(K, R, d_out, d)`` end-to-end matrices, ``c`` ``(K, R, d_out)``,
        ``weights``/``biases`` (final),
        ``diverged`` ``(K,)`` bool, ``diverged_step`` ``(K,)`` (-1 if never).
    """
    check_positive("lr", lr)
    check_int("steps", steps, minimum=0)
    check_int("record_every", record_every, minimum=1)
    if not weights:
        raise ValueError("weights must contain at least one layer")
    dtype = weights[0].dtype
    K, d = weights[0].shape[0], weights[0].shape[2]
    d_out = weights[-1].shape[1]
    Ws = [w.detach().clone() for w in weights]
    bias = biases is not None
    bs = [b.detach().clone() for b in biases] if bias else None
    A = torch.as_tensor(np.asarray(A) if not isinstance(A, torch.Tensor) else A, dtype=dtype)
    if A.shape[-2:] != (d, d) or A.ndim not in (2, 3):
        raise ValueError(f"A must have shape ({d}, {d}) or (K, {d}, {d}), got {tuple(A.shape)}")
    if A.ndim == 2:
        A = A.expand(K, d, d)
    if bias:
        if m is None:
            raise ValueError("m (the mean E[x]) is required when biases are given")
        m = torch.as_tensor(np.asarray(m) if not isinstance(m, torch.Tensor) else m, dtype=dtype)
        if m.shape[-1] != d:
            raise ValueError(f"m must have shape ({d},) or (K, {d}), got {tuple(m.shape)}")
        m = m.expand(K, d)
        Aa = torch.zeros(K, d + 1, d + 1, dtype=dtype)
        Aa[:, :d, :d] = A
        Aa[:, :d, d] = m
        Aa[:, d, :d] = m
        Aa[:, d, d] = 1.0
    else:
        Aa = A
    T = torch.eye(d, dtype=dtype) if target is None else torch.as_tensor(target, dtype=dtype)
    if T.shape != (d_out, d):
        raise ValueError(f"target must have shape ({d_out}, {d}), got {tuple(T.shape)}")
    Ta = torch.cat([T, torch.zeros(d_out, 1, dtype=dtype)], dim=1) if bias else T
    if x_eval is not None:
        xe = torch.as_tensor(
            np.asarray(x_eval) if not isinstance(x_eval, torch.Tensor) else x_eval, dtype=dtype
        )
        if xe.ndim == 1:
            xe = xe[None]
        if xe.shape[-1] != d:
            raise ValueError(f"x_eval must have last dimension {d}, got {tuple(xe.shape)}")
        xe = xe.expand(K, *xe.shape[-2:])

    def aug_layers():
        if not bias:
            return Ws
        out = []
        for w, b in zip(Ws, bs):
            M = torch.zeros(K, w.shape[1] + 1, w.shape[2] + 1, dtype=dtype)
            M[:, :-1, :-1] = w
            M[:, :-1, -1] = b
            M[:, -1, -1] = 1.0
            out.append(M)
        return out

    rec_step, rec_loss, rec_out, rec_W, rec_c = [], [], [], [], []
    diverged = torch.zeros(K, dtype=torch.bool)
    diverged_step = torch.full((K,), -1, dtype=torch.long)
    L = len(Ws)
    for t in range(steps + 1):
        Ms = aug_layers()
        # prefix products P_<l (P_<0 = I) and the full product
        prefix = [None] * L
        P = None
        for l in range(L):
            prefix[l] = P
            P = Ms[l] if P is None else Ms[l] @ P
        E = P[:, :d_out, :] if bias else P  # (K, d_out, d(+1)) = [W c]
        R = E - Ta  # residual map
        G = R @ Aa  # (K, d_out, d(+1))
        loss = 0.5 * (G * R).sum(dim=(-1, -2))
        bad = ~torch.isfinite(loss) | (loss > divergence_bound)
        newly = bad & ~diverged
        diverged_step[newly] = t
        diverged |= bad
        if t % record_every == 0 or t == steps:
            rec_step.append(t)
            rec_loss.append(loss.clone())
            Wc = E[:, :, :d]
            cc = E[:, :, d] if bias else torch.zeros(K, d_out, dtype=dtype)
            if record_W:
                rec_W.append(Wc.clone())
                rec_c.append(cc.clone())
            if x_eval is not None:
                rec_out.append((xe @ Wc.transpose(-1, -2)) + cc[:, None, :])
        if t == steps:
            break
        # gradients: dL/dM_l = (S_{>l})^T G_full (P_<l)^T, with G_full padded by a zero last row when biased
        if bias:
            Gf = torch.zeros(K, d_out + 1, d + 1, dtype=dtype)
            Gf[:, :d_out] = G
        else:
            Gf = G
        suffix = None  # product M_L ... M_{l+1}
        grads = [None] * L
        for l in range(L - 1, -1, -1):
            g = Gf if suffix is None else suffix.transpose(-1, -2) @ Gf
            if prefix[l] is not None:
                g = g @ prefix[l].transpose(-1, -2)
            grads[l] = g
            suffix = Ms[l] if suffix is None else suffix @ Ms[l]
        keep = (~diverged).to(dtype)[:, None, None]
        for l in range(L):
            g = grads[l]
            if bias:
                Ws[l] = Ws[l] - lr * keep * g[:, :-1, :-1]
                bs[l] = bs[l] - lr * keep[:, :, 0] * g[:, :-1, -1]
            else:
                Ws[l] = Ws[l] - lr * keep * g
    out = dict(
        step=np.asarray(rec_step),
        loss=torch.stack(rec_loss, dim=1).numpy(),
        W=torch.stack(rec_W, dim=1).numpy() if record_W else None,
        c=torch.stack(rec_c, dim=1).numpy() if record_W else None,
        weights=Ws,
        biases=bs,
        diverged=diverged.numpy(),
        diverged_step=diverged_step.numpy(),
    )
    if x_eval is not None:
        out["outputs"] = torch.stack(rec_out, dim=1).numpy()
    return out


def sgd_linear_batched(
    X,
    *,
    lr: float,
    epochs: int,
    batch_size: int,
    W0,
    b0=None,
    Y=None,
    x_eval=None,
    record_every: int = 1,
    seed: int = 0,
    divergence_bound: float = 1e8,
):
    """Minibatch SGD for ``K`` one-layer linear (``b0=None``) or affine models at once, on the loss (2.1).

    The loss of a batch ``B`` is ``1/(2|B|) sum_{x in B} ||W x + b - y||^2`` (``y = x`` by default: the
    identity
    map of the SIM task); each seed ``k`` has its own data ``X[k]``, initialisation and shuffling. The
    last batch
    of an epoch may be smaller (``ceil(N / batch_size)`` steps per epoch, as a PyTorch ``DataLoader``).

    Args:
        X: inputs ``(K, N, d)``; Y: targets ``(K, N, d_out)`` (default ``X``).
        lr, epochs, batch_size: SGD settings; W0: ``(K, d_out, d)``; b0: ``(K, d_out)`` or ``None`` (no bias).
        x_eval: ``(P, d)`` or ``(K, P, d)`` points whose outputs are recorded every ``record_every`` steps.
    Returns:
        dict with ``step`` ``(R,)``, ``outputs`` ``(K, R, P, d_out)`` (if ``x_eval``), ``W`` ``(K,
        d_out, d)`` and
        ``b`` (final), ``diverged`` ``(K,)``.
    """
    check_positive("lr", lr)
    check_int("epochs", epochs, minimum=0)
    check_int("batch_size", batch_size, minimum=1)
    check_int("record_every", record_every, minimum=1)
    X = torch.as_tensor(X)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (K, N, d), got {tuple(X.shape)}")
    dtype = X.dtype
    K, N, d = X.shape
    Y = X if Y is None else torch.as_tensor(Y, dtype=dtype)
    if Y.shape[:2] != (K, N):
        raise ValueError(f"Y must have shape ({K}, {N}, d_out), got {tuple(Y.shape)}")
    W = torch.as_tensor(W0, dtype=dtype).clone()
    if W.shape != (K, Y.shape[2], d):
        raise ValueError(f"W0 must have shape ({K}, {Y.shape[2]}, {d}), got {tuple(W.shape)}")
    b = None if b0 is None else torch.as_tensor(b0, dtype=dtype).clone()
    if b is not None and b.shape != (K, Y.shape[2]):
        raise ValueError(f"b0 must have shape ({K}, {Y.shape[2]}), got {tuple(b.shape)}")
    if x_eval is not None:
        xe = torch.as_tensor(x_eval, dtype=dtype)
        xe = xe[None] if xe.ndim == 1 else xe
        xe = xe.expand(K, *xe.shape[-2:])
    gen = torch.Generator().manual_seed(int(seed))
    diverged = torch.zeros(K, dtype=torch.bool)
    steps, outs = [], []

    def record(t):
        steps.append(t)
        if x_eval is not None:
            o = xe @ W.transpose(-1, -2)
            outs.append(o + b[:, None, :] if b is not None else o)

    t = 0
    record(0)
    kidx = torch.arange(K)[:, None]
    for _ in range(epochs):
        perm = torch.argsort(torch.rand(K, N, generator=gen), dim=1)
        for start in range(0, N, batch_size):
            idx = perm[:, start : start + batch_size]
            xb, yb = X[kidx, idx], Y[kidx, idx]  # (K, B, d), (K, B, d_out)
            r = xb @ W.transpose(-1, -2) - yb
            if b is not None:
                r = r + b[:, None, :]
            keep = (~diverged).to(dtype)
            W = W - lr * keep[:, None, None] * (r.transpose(-1, -2) @ xb) / xb.shape[1]
            if b is not None:
                b = b - lr * keep[:, None] * r.mean(dim=1)
            t += 1
            bad = ~torch.isfinite(W).all(dim=(-1, -2)) | (W.abs().amax(dim=(-1, -2)) > divergence_bound)
            diverged |= bad
            if t % record_every == 0:
                record(t)
    if steps[-1] != t:
        record(t)
    out = dict(
        step=np.asarray(steps), W=W.numpy(), b=None if b is None else b.numpy(), diverged=diverged.numpy()
    )
    if x_eval is not None:
        out["outputs"] = torch.stack(outs, dim=1).numpy()
    return out
