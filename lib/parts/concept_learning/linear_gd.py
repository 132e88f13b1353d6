"""Deep linear networks and MLPs on SIM data, K models at once: PyTorch-default initialisation, exact GD on the
population loss and online minibatch SGD on samples.

* :func:`init_deep_linear`: PyTorch's default ``nn.Linear`` initialisation for K models, model ``k`` drawn from its
  own generator (seed ``seed + k``), so a model does not depend on how many are drawn with it;
* :func:`end_to_end`: the end-to-end affine map of a deep linear network;
* :func:`population_gd_deep_linear`: exact GD on the population loss (Eq. 4.1 of Yang et al. 2025, with or without
  biases). This is the closed-form map of the population loss, so it is a hand-written loop, not :mod:`lib.train`;
* :func:`sgd_mlp_batched`: online minibatch SGD on samples for K MLPs (or one-layer linear/affine models), run by
  :func:`lib.train.train_stacked`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from lib.config import (
    check_array,
    check_bool,
    check_device,
    check_in,
    check_instance,
    check_int,
    check_positive,
    check_seed,
)
from lib.models.mlp import _layer_sizes
from lib.train import train_stacked

#: model k of :func:`sgd_mlp_batched` draws its minibatches from ``torch.Generator().manual_seed(offset + seed + k)``,
#: a stream kept apart from the initialisation's ``seed + k``
SHUFFLE_SEED_OFFSET = 10_000


def init_deep_linear(
    d_in: int,
    d_out: int,
    depth: int,
    width=None,
    *,
    K: int = 1,
    init_scale: float = 1.0,
    bias: bool = False,
    seed: int = 0,
    dtype=torch.float64,
):
    """PyTorch-default initialisation for ``K`` deep linear networks (or MLPs) at once.

    Layer ``l`` has weight ``(K, n_l, n_{l-1})`` drawn from ``U(-c, c)``, ``c = init_scale / sqrt(n_{l-1})``, and
    (if ``bias``) bias ``(K, n_l)`` from the same law. Model ``k`` is drawn from
    ``torch.Generator().manual_seed(seed + k)``, layer by layer, weight then bias (the bias is drawn even when
    ``bias=False``), so model ``k`` does not depend on ``K`` and its weights not on ``bias``.

    Args:
        d_in, d_out: input / output dimension; depth: number of layers ``L >= 1``.
        width: hidden width (an int, needed when ``depth > 1``) or the list of the ``depth - 1`` hidden widths.
        K: number of models; init_scale: multiplier (``>= 0``) of the PyTorch bound; seed: seed of model 0.

    Returns:
        ``(weights, biases)``: lists of ``L`` tensors (``biases`` is ``None`` without bias).
    """
    check_bool("bias", bias)
    check_seed("seed", seed)
    if width is not None and not isinstance(width, (int, np.integer)):
        if isinstance(width, (str, bytes, bool, float)) or not hasattr(width, "__iter__"):
            raise ValueError(f"width must be an int or a list of depth - 1 positive ints, got {width!r}")
        for w in width:
            check_int("width", w, minimum=1)
        hidden = [int(w) for w in width]
        check_int("depth", depth, minimum=1)
        if len(hidden) != depth - 1 or any(w < 1 for w in hidden):
            raise ValueError(f"width must be an int or a list of depth - 1 = {depth - 1} positive ints, got {width}")
        check_int("d_in", d_in, minimum=1)
        check_int("d_out", d_out, minimum=1)
        sizes = [int(d_in)] + hidden + [int(d_out)]
    else:
        sizes = _layer_sizes(d_in, d_out, depth, width)
    check_int("K", K, minimum=1)
    check_positive("init_scale", init_scale, allow_zero=True)
    check_seed("seed", seed)
    weights = [[] for _ in sizes[1:]]
    biases = [[] for _ in sizes[1:]]
    for k in range(K):
        gen = torch.Generator().manual_seed(int(seed) + k)
        for li, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            c = float(init_scale) / math.sqrt(a)
            weights[li].append((torch.rand(b, a, generator=gen, dtype=dtype) * 2 - 1) * c)
            biases[li].append((torch.rand(b, generator=gen, dtype=dtype) * 2 - 1) * c)
    weights = [torch.stack(w) for w in weights]
    return weights, ([torch.stack(b) for b in biases] if bias else None)


def end_to_end(weights: list[torch.Tensor], biases: list[torch.Tensor] | None = None):
    """End-to-end affine map of a (batched) deep linear net: ``(W, c)`` with ``f(x) = W x + c``.

    ``weights[l]``: ``(K, n_l, n_{l-1})``; ``biases[l]``: ``(K, n_l)`` or ``None``. Returns ``W`` of shape
    ``(K, d_out, d_in)`` and ``c`` of shape ``(K, d_out)`` (zeros without biases).
    """
    check_instance("weights", weights, (list, tuple))
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


def _record_steps(record_every, steps: int) -> np.ndarray:
    """Sorted steps to record: every ``record_every`` steps (an int >= 1) or the given steps; the last always."""
    if isinstance(record_every, (int, np.integer)) and not isinstance(record_every, bool):
        check_int("record_every", record_every, minimum=1)
        rec = np.arange(0, steps + 1, int(record_every))
    else:
        try:
            if isinstance(record_every, (str, bytes)):
                raise TypeError
            rec = np.asarray([float(s) for s in record_every])
        except (TypeError, ValueError):
            msg = f"record_every must be an int >= 1 or a collection of steps, got {record_every!r}"
            raise ValueError(msg) from None
        if rec.size and (np.any(rec != np.round(rec)) or rec.min() < 0 or rec.max() > steps):
            raise ValueError(f"record_every must hold integer steps in [0, {steps}], got {record_every!r}")
    return np.unique(np.r_[rec.astype(int), steps])


def _as_tensor(name, value, dtype):
    if value is None:
        return None
    t = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
    if not t.is_floating_point():
        raise ValueError(f"{name} must hold floating-point numbers")
    return t.to(dtype)


def population_gd_deep_linear(
    weights,
    A,
    *,
    lr: float,
    steps: int,
    biases=None,
    m=None,
    x_eval=None,
    record_every=1,
    target=None,
    divergence_bound: float = 1e8,
    record_W: bool = True,
):
    """Exact GD on the population loss ``1/2 E||W x + c - T x||^2`` for ``K`` deep linear nets at once.

    The loss equals ``1/2 tr[(W~ - T~) A~ (W~ - T~)^T]`` with ``W~ = [W c]``, ``T~ = [T 0]`` and
    ``A~ = [[A, m], [m^T, 1]]`` (Eq. (4.1) of Yang et al. 2025; without biases just ``A``). With ``M_l`` the
    (augmented) layer matrices ``[[W_l, b_l], [0, 1]]`` and ``G = (W~ - T~) A~``, the gradient of layer ``l`` is
    ``B_l (M_{l-1} ... M_1)^T`` where ``B_L = G`` and ``B_{l-1} = M_l^T B_l`` (back-propagation). This is the
    closed-form map of the population loss, so it is a hand-written loop, not :mod:`lib.train`.

    Input coordinates on which ``A`` and ``m`` vanish (e.g. the ``d - s`` non-signal coordinates of unrotated SIM
    data) get no gradient: the matching columns of the first layer keep their initial values and are left out of
    the products, which is exact and makes a rank-``s`` ``A`` cost ``O(s)`` instead of ``O(d)`` per column.

    A model whose loss exceeds ``divergence_bound`` or is not finite, or whose next step would not be finite, is
    frozen at its last finite state and flagged; the others go on.

    Args:
        weights: list of ``L`` tensors ``(K, n_l, n_{l-1})`` (from :func:`init_deep_linear`); copied, not changed.
        A: second moment ``E[x x^T]``, shape ``(d, d)`` or ``(K, d, d)`` (NumPy or torch).
        lr: step size ``> 0``; steps: number of GD steps ``>= 0``.
        biases: list of ``L`` tensors ``(K, n_l)`` or ``None``; m: mean ``E[x]`` ``(d,)`` / ``(K, d)``, needed
            with biases.
        x_eval: evaluation points ``(P, d)`` or ``(K, P, d)`` (e.g. ``x_hat``); their outputs are recorded.
        record_every: record every this many steps, or a collection of the steps to record (e.g. log-spaced);
            the last step is always recorded.
        target: ``T`` of shape ``(d_out, d)`` (default: the identity, ``d_out = d``).
        divergence_bound: a run whose loss exceeds this (or is not finite) is frozen and flagged.
        record_W: record the end-to-end ``W`` and ``c`` (memory ``K * R * d_out * d`` floats; turn off for big
            sweeps).

    Returns:
        dict with ``step`` ``(R,)``, ``loss`` ``(K, R)``, ``outputs`` ``(K, R, P, d_out)`` (if ``x_eval``),
        ``W`` ``(K, R, d_out, d)`` end-to-end matrices, ``c`` ``(K, R, d_out)`` (``None`` without ``record_W``),
        ``weights``/``biases`` (final), ``diverged`` ``(K,)`` bool, ``diverged_step`` ``(K,)`` (-1 if never).
    """
    check_instance("weights", weights, (list, tuple))
    check_array("A", A)
    check_bool("record_W", record_W)
    check_positive("lr", lr)
    check_int("steps", steps, minimum=0)
    check_positive("divergence_bound", divergence_bound)
    rec = _record_steps(record_every, steps)
    if not weights:
        raise ValueError("weights must contain at least one layer")
    dtype = weights[0].dtype
    K, d = weights[0].shape[0], weights[0].shape[2]
    d_out = weights[-1].shape[1]
    Ws = [w.detach().clone() for w in weights]
    bias = biases is not None
    bs = [b.detach().clone() for b in biases] if bias else None
    A = _as_tensor("A", A, dtype)
    if A.shape[-2:] != (d, d) or A.ndim not in (2, 3) or (A.ndim == 3 and A.shape[0] != K):
        raise ValueError(f"A must have shape ({d}, {d}) or (K, {d}, {d}), got {tuple(A.shape)}")
    A = A.expand(K, d, d)
    if bias:
        if m is None:
            raise ValueError("m (the mean E[x]) is required when biases are given")
        m = _as_tensor("m", m, dtype)
        if m.shape[-1] != d or m.ndim not in (1, 2) or (m.ndim == 2 and m.shape[0] != K):
            raise ValueError(f"m must have shape ({d},) or (K, {d}), got {tuple(m.shape)}")
        m = m.expand(K, d)
        Aa = torch.zeros(K, d + 1, d + 1, dtype=dtype)
        Aa[:, :d, :d] = A
        Aa[:, :d, d] = m
        Aa[:, d, :d] = m
        Aa[:, d, d] = 1.0
    else:
        Aa = A
    T = torch.eye(d, dtype=dtype) if target is None else _as_tensor("target", target, dtype)
    if T.shape != (d_out, d):
        raise ValueError(f"target must have shape ({d_out}, {d}), got {tuple(T.shape)}")
    Ta = torch.cat([T, torch.zeros(d_out, 1, dtype=dtype)], dim=1) if bias else T
    if x_eval is not None:
        xe = _as_tensor("x_eval", x_eval, dtype)
        xe = xe[None] if xe.ndim == 1 else xe
        if xe.shape[-1] != d or xe.ndim not in (2, 3) or (xe.ndim == 3 and xe.shape[0] != K):
            raise ValueError(f"x_eval must have shape (P, {d}) or (K, P, {d}), got {tuple(xe.shape)}")
        xe = xe.expand(K, *xe.shape[-2:])

    # active (augmented) input coordinates: the columns of A~ that are not identically zero; the others get no
    # gradient and are left out of every product
    cols = torch.nonzero((Aa != 0).any(dim=0).any(dim=0)).flatten()
    full = cols.numel() == Aa.shape[-1]
    Ac = Aa if full else Aa[:, cols][:, :, cols]
    Tc = Ta if full else Ta[:, cols]
    wcols = cols[cols < d]  # columns of W_1 that are trained
    W1 = Ws[0] if full else Ws[0][:, :, wcols]

    if x_eval is not None:
        fixed = torch.ones(d, dtype=torch.bool)
        fixed[wcols] = False
        xe_fixed = xe[..., fixed] @ Ws[0][:, :, fixed].transpose(-1, -2)

    def layers():
        """The layer matrices M_1 (active columns only), M_2, ..., M_L, augmented when biased."""
        first = [W1] + Ws[1:]
        if not bias:
            return first
        out = []
        for w, b in zip(first, bs):
            M = torch.zeros(K, w.shape[1] + 1, w.shape[2] + 1, dtype=dtype)
            M[:, :-1, :-1] = w
            M[:, :-1, -1] = b
            M[:, -1, -1] = 1.0
            out.append(M)
        return out

    def full_first():
        if full:
            return W1
        w = Ws[0].clone()
        w[:, :, wcols] = W1
        return w

    rec_step, rec_loss, rec_out, rec_W, rec_c = [], [], [], [], []
    diverged = torch.zeros(K, dtype=torch.bool)
    diverged_step = torch.full((K,), -1, dtype=torch.long)
    L = len(Ws)
    r = 0
    for t in range(steps + 1):
        Ms = layers()
        prefix = [None] * L  # prefix[l] = M_{l-1} ... M_1 (active columns), None for l = 0
        P = None
        for li in range(L):
            prefix[li] = P
            P = Ms[li] if P is None else Ms[li] @ P
        R = P[:, :d_out] - Tc  # residual of the end-to-end map on the active columns
        G = R @ Ac
        loss = 0.5 * (G * R).sum(dim=(-1, -2))
        bad = (~torch.isfinite(loss) | (loss > divergence_bound)) & ~diverged
        diverged_step[bad] = t
        diverged |= bad
        if r < rec.size and rec[r] == t:
            r += 1
            rec_step.append(t)
            rec_loss.append(loss.clone())
            if record_W:
                Wc, cc = end_to_end([full_first()] + Ws[1:], bs)
                rec_W.append(Wc)
                rec_c.append(cc)
            if x_eval is not None:  # the layers applied to x_eval (the frozen columns' part is a constant)
                h = xe_fixed + xe[..., wcols] @ W1.transpose(-1, -2)
                for li in range(L):
                    h = h if li == 0 else h @ Ws[li].transpose(-1, -2)
                    h = h + bs[li][:, None, :] if bias else h
                rec_out.append(h)
        if t == steps:
            break
        back = torch.cat([G, torch.zeros(K, 1, G.shape[-1], dtype=dtype)], dim=1) if bias else G
        grads = [None] * L
        for li in range(L - 1, -1, -1):
            grads[li] = back if prefix[li] is None else back @ prefix[li].transpose(-1, -2)
            if li > 0:
                back = Ms[li].transpose(-1, -2) @ back
        if bias:
            new_W = [w - lr * g[:, :-1, :-1] for w, g in zip([W1] + Ws[1:], grads)]
            new_b = [b - lr * g[:, :-1, -1] for b, g in zip(bs, grads)]
        else:
            new_W = [w - lr * g for w, g in zip([W1] + Ws[1:], grads)]
            new_b = []
        # a model's sum of entries is finite iff they all are (or they overflow, far above divergence_bound)
        finite = torch.isfinite(sum(p.flatten(1).sum(dim=1) for p in new_W + new_b))
        newly = ~finite & ~diverged
        if newly.any():
            diverged_step[newly] = t + 1
            diverged |= newly
        if diverged.any():  # frozen models keep their last finite state (torch.where, never 0 * nan)
            live = ~diverged
            new_W = [torch.where(live[:, None, None], nw, w) for nw, w in zip(new_W, [W1] + Ws[1:])]
            new_b = [torch.where(live[:, None], nb, b) for nb, b in zip(new_b, bs or [])]
        W1, Ws[1:] = new_W[0], new_W[1:]
        if bias:
            bs = new_b
    Ws[0] = full_first()
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


def sgd_mlp_batched(
    X,
    *,
    weights,
    biases=None,
    activation: str = "linear",
    lr: float,
    steps: int,
    batch_size: int,
    Y=None,
    x_eval=None,
    record_every=1,
    seed: int = 0,
    divergence_bound: float = 1e8,
    progress: bool = False,
    device="cpu",
) -> dict:
    """Online minibatch SGD on the loss (2.1) for ``K`` MLPs at once, by :func:`lib.train.train_stacked`.

    The model is ``x -> L_D o phi o ... o phi o L_1 (x)`` with the layers ``weights`` (and ``biases``) of
    :func:`init_deep_linear`, ``phi`` the identity (``"linear"``; one layer gives the one-layer linear or affine
    model) or ReLU. The loss of a batch ``B`` is ``1/(2|B|) sum_{x in B} ||f(x) - y||^2`` (``y = x`` by default:
    the identity map of the SIM task). Model ``k`` shuffles its data (its own ``X[k]``, or the shared ``X``) at every
    epoch boundary with its own generator (seed ``SHUFFLE_SEED_OFFSET + seed + k``), so it does not depend on ``K``;
    an epoch is ``ceil(N / batch_size)`` steps, the last batch possibly smaller (a PyTorch ``DataLoader``).
    A model that diverges (non-finite loss, parameter norm above ``divergence_bound``, or loss 1e6 times its
    initial value: the tests of :func:`lib.train.train_stacked`) is frozen at its last finite state and flagged.

    Args:
        X: inputs ``(N, d)`` shared by the models or ``(K, N, d)``; Y: targets ``(..., N, d_out)`` (default ``X``).
        weights, biases: initial layers (lists of ``(K, n_l, n_{l-1})`` / ``(K, n_l)`` tensors; copied).
        activation: ``"linear"`` or ``"relu"``; lr, steps, batch_size: SGD settings (``steps`` updates).
        x_eval: ``(P, d)`` or ``(K, P, d)`` points whose outputs are recorded.
        record_every: record every this many steps, or a collection of the steps to record; the last step is
            always recorded (and the step at which a model diverges).
        seed: seed of model 0's minibatch stream; progress: show a tqdm bar.
        device: where to train (:func:`lib.config.check_device`); the data and initial layers are moved there,
            the shuffles drawn on the CPU; the final ``weights``/``biases`` come back on the CPU.

    Returns:
        dict with ``step`` ``(R,)``, ``loss`` ``(K, R)`` (minibatch loss at the recorded steps), ``outputs``
        ``(K, R, P, d_out)`` (if ``x_eval``; NaN after a model's divergence), ``weights``/``biases`` (final),
        ``diverged`` ``(K,)`` and ``diverged_step`` ``(K,)`` (-1 if never).
    """
    check_array("X", X)
    check_instance("weights", weights, (list, tuple))
    check_bool("progress", progress)
    check_in("activation", activation, ("linear", "relu"))
    check_positive("lr", lr)
    check_int("steps", steps, minimum=0)
    check_seed("seed", seed)
    dev = check_device("device", device)
    if not weights:
        raise ValueError("weights must contain at least one layer")
    dtype = weights[0].dtype
    K, d = weights[0].shape[0], weights[0].shape[2]
    d_out = weights[-1].shape[1]
    X = _as_tensor("X", X, dtype)
    if X.ndim == 2:
        X = X.expand(K, *X.shape)
    if X.ndim != 3 or X.shape[0] != K or X.shape[2] != d:
        raise ValueError(f"X must have shape (N, {d}) or ({K}, N, {d}), got {tuple(X.shape)}")
    N = X.shape[1]
    check_int("batch_size", batch_size, minimum=1, maximum=N)
    Y = X if Y is None else _as_tensor("Y", Y, dtype)
    if Y.ndim == 2:
        Y = Y.expand(K, *Y.shape)
    if Y.shape != (K, N, d_out):
        raise ValueError(f"Y must have shape ({N}, {d_out}) or ({K}, {N}, {d_out}), got {tuple(Y.shape)}")
    L = len(weights)
    params = {f"W{l}": w.detach().clone() for l, w in enumerate(weights)}
    if biases is not None:
        params |= {f"b{l}": b.detach().clone() for l, b in enumerate(biases)}
    if x_eval is not None:
        xe = _as_tensor("x_eval", x_eval, dtype)
        xe = xe[None] if xe.ndim == 1 else xe
        if xe.shape[-1] != d or xe.ndim not in (2, 3) or (xe.ndim == 3 and xe.shape[0] != K):
            raise ValueError(f"x_eval must have shape (P, {d}) or (K, P, {d}), got {tuple(xe.shape)}")
        params["x_eval"] = xe.expand(K, *xe.shape[-2:]).clone()  # a per-model constant, frozen below
    act = torch.relu if activation == "relu" else (lambda z: z)
    params = {k: v.to(dev) for k, v in params.items()}  # no-ops on the CPU
    X, Y = X.to(dev), Y.to(dev)

    def forward(p, x):
        h = x
        for l in range(L):
            h = h @ p[f"W{l}"].transpose(-1, -2)
            if biases is not None:
                h = h + p[f"b{l}"]
            if l < L - 1:
                h = act(h)
        return h

    gens = [torch.Generator().manual_seed(SHUFFLE_SEED_OFFSET + int(seed) + k) for k in range(K)]
    per_epoch = math.ceil(N / batch_size)
    kidx = torch.arange(K, device=dev)[:, None]
    perm = {}

    def batch_fn(step, _generator):
        pos = step % per_epoch
        if pos == 0:
            perm["now"] = torch.stack([torch.randperm(N, generator=g) for g in gens]).to(dev)
        idx = perm["now"][:, pos * batch_size : (pos + 1) * batch_size]
        return X[kidx, idx], Y[kidx, idx]

    res = train_stacked(
        params,
        lambda p, bt: 0.5 * ((forward(p, bt[0]) - bt[1]) ** 2).sum(-1).mean(),
        optimizer="sgd",
        lr=lr,
        steps=steps,
        batch_fn=batch_fn,
        record=(lambda p, step: {"outputs": forward(p, p["x_eval"])}) if x_eval is not None else None,
        record_every=record_every,
        divergence_bound=divergence_bound,
        progress=progress,
        frozen=["x_eval"] if x_eval is not None else (),
        device=dev,
    )
    h = res.history
    out = dict(
        step=np.asarray(h["step"]),
        loss=h["loss"].T,
        weights=[res.params[f"W{l}"].cpu() for l in range(L)],
        biases=[res.params[f"b{l}"].cpu() for l in range(L)] if biases is not None else None,
        diverged=res.diverged,
        diverged_step=res.diverged_step,
    )
    if x_eval is not None:
        out["outputs"] = np.moveaxis(h["outputs"], 0, 1)
    return out
