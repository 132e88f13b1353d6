"""Deep linear networks and MLPs on SIM data: PyTorch-default batched initialisation, exact population GD
(the closed-form map of the population loss, so a hand-written loop) and batched online SGD on samples.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from lib.config import check_in, check_int, check_positive
from lib.models.mlp import _layer_sizes
from lib.parts.concept_learning.data import _vec, second_moment
from lib.parts.concept_learning.deep_models import default_record_steps


def torch_default_init(shapes, n_models: int, init_scale: float = 1.0, seed: int = 0, bias: bool = False):
    """PyTorch's default ``nn.Linear`` initialisation ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` times
    ``init_scale``.

    Args:
        shapes: list of ``(fan_out, fan_in)``; n_models: batch of independent models (seeds).

    Returns:
        list of float64 tensors ``(n_models, fan_out, fan_in)`` (and, with ``bias``, a second list
        ``(n_models, fan_out)``). Model ``k`` is drawn from ``torch.Generator().manual_seed(seed + k)``.
    """
    import torch

    check_int("n_models", n_models, minimum=1)
    check_positive("init_scale", init_scale)
    check_int("seed", seed, minimum=0)
    Ws = [[] for _ in shapes]
    bs = [[] for _ in shapes]
    for k in range(n_models):
        g = torch.Generator().manual_seed(seed + k)
        for li, (fo, fi) in enumerate(shapes):
            bound = init_scale / math.sqrt(fi)
            Ws[li].append((torch.rand(fo, fi, generator=g, dtype=torch.float64) * 2 - 1) * bound)
            bs[li].append((torch.rand(fo, generator=g, dtype=torch.float64) * 2 - 1) * bound)
    Ws = [torch.stack(w) for w in Ws]
    if bias:
        return Ws, [torch.stack(b) for b in bs]
    return Ws


def deep_linear_population_gd(
    mu,
    sigma,
    d: int,
    widths,
    *,
    n_seeds: int,
    lr: float,
    steps: int,
    init_scale: float = 1.0,
    seed: int = 0,
    record_steps=None,
) -> dict:
    """Full-batch GD of bias-free deep linear networks on the SIM population loss (Eq. 4.1), batched over
    seeds.

    The network is ``x -> W_L ... W_1 x`` with hidden widths ``widths`` (depth ``len(widths) + 1``), PyTorch
    default
    initialisation times ``init_scale`` (input fan-in ``d``). Only the first ``s`` columns of ``W_1`` receive
    gradient (``A`` has rank ``s``), so only they are simulated. The data are not rotated (a rotation leaves
    the
    population dynamics unchanged up to the rotation of the initial weights).

    Returns a dict with ``steps`` ``(R,)``, ``W`` ``(R, B, d, s)`` (first ``s`` columns of the end-to-end
    matrix),
    ``ood_loss`` ``(R, B)`` (``1/2 ||W x_hat - x_hat||^2``), ``train_loss`` ``(R, B)``, ``output`` ``(R, B,
    d)``
    and ``diverged`` ``(B,)``.
    """
    import torch

    mu = _vec("mu", mu)
    s = mu.size
    a = second_moment(mu, sigma, d)
    widths = [int(w) for w in widths]
    if any(w < 1 for w in widths):
        raise ValueError(f"widths must be positive integers, got {widths}")
    check_positive("lr", lr)
    check_int("steps", steps, minimum=1)
    rec = default_record_steps(steps) if record_steps is None else np.asarray(record_steps, dtype=int)
    dims = [d] + widths + [d]
    shapes = [(dims[i + 1], dims[i]) for i in range(len(dims) - 1)]
    Ws = torch_default_init(shapes, n_seeds, init_scale, seed)
    Ws[0] = Ws[0][:, :, :s].contiguous()
    a_s = torch.tensor(a[:s], dtype=torch.float64)
    target = torch.zeros(d, s, dtype=torch.float64)
    target[:s, :s] = torch.eye(s, dtype=torch.float64)
    R = rec.size
    out_W = np.empty((R, n_seeds, d, s))
    tr_loss = np.empty((R, n_seeds))
    r = 0
    L = len(Ws)
    frozen = torch.zeros(n_seeds, dtype=torch.bool)
    for k in range(steps + 1):
        prefix = [None] * L  # prefix[l] = W_{l-1} ... W_1 (None for l = 0)
        P = None
        for li in range(L):
            prefix[li] = P
            P = Ws[li] if P is None else Ws[li] @ P
        res = P - target  # (B, d, s)
        G = res * a_s  # dL/dP for L = 1/2 sum_p a_p ||P e_p - e_p||^2
        per_seed = 0.5 * (G * res).sum(dim=(1, 2))
        frozen |= ~torch.isfinite(per_seed) | (per_seed > 1e8)
        if r < R and rec[r] == k:
            out_W[r] = P.numpy()
            tr_loss[r] = per_seed.numpy()
            r += 1
            if r == R:
                break
        keep = (~frozen).to(torch.float64)[:, None, None]
        back = G  # (W_L ... W_{l+1})^T G, thin: (B, n_l, s)
        grads = [None] * L
        for li in range(L - 1, -1, -1):
            grads[li] = back if prefix[li] is None else back @ prefix[li].transpose(1, 2)
            back = Ws[li].transpose(1, 2) @ back
        for li in range(L):
            Ws[li] = Ws[li] - lr * keep * torch.nan_to_num(grads[li], nan=0.0, posinf=0.0, neginf=0.0)
    output = out_W @ mu
    xh = np.zeros(d)
    xh[:s] = mu
    ood = 0.5 * np.sum((output - xh) ** 2, axis=-1)
    diverged = frozen.numpy() | ~np.isfinite(ood).all(axis=0)
    return dict(steps=rec, W=out_W, ood_loss=ood, train_loss=tr_loss, output=output, diverged=diverged)


def sgd_mlp_batched(
    X,
    eval_points,
    *,
    widths,
    activation: str = "relu",
    bias: bool = True,
    n_models: int = 1,
    lr: float = 0.1,
    batch: int = 128,
    steps: int = 100,
    init_scale: float = 1.0,
    seed: int = 0,
    record_steps=None,
) -> dict:
    """Minibatch SGD on the identity-mapping loss (Eq. 2.1) for ``n_models`` MLPs at once (one per seed).

    The MLP is ``x -> L_{D} o phi o ... o phi o L_1 (x)`` with hidden widths ``widths``, ``phi`` = ReLU or
    identity,
    PyTorch default initialisation times ``init_scale``. Every model draws its own minibatches (epochs are
    reshuffles of ``X``). Returns a dict with ``steps`` ``(R,)``, ``eval_out`` ``(R, B, E, d)`` (outputs at
    the
    ``E`` evaluation points) and ``train_loss`` ``(R, B)`` (loss of the last minibatch).
    """
    import torch

    check_in("activation", activation, ("relu", "linear"))
    X = torch.as_tensor(np.asarray(X, dtype=float))
    Ev = torch.as_tensor(np.asarray(eval_points, dtype=float))
    if X.ndim != 2 or Ev.ndim != 2 or Ev.shape[1] != X.shape[1]:
        raise ValueError(
            f"X must be (n, d) and eval_points (E, d), got {tuple(X.shape)} and {tuple(Ev.shape)}"
        )
    check_positive("lr", lr)
    check_int("batch", batch, minimum=1, maximum=X.shape[0])
    check_int("steps", steps, minimum=1)
    n, d = X.shape
    rec = default_record_steps(steps) if record_steps is None else np.asarray(record_steps, dtype=int)
    dims = [d] + [int(w) for w in widths] + [d]
    shapes = [(dims[i + 1], dims[i]) for i in range(len(dims) - 1)]
    Ws, bs = torch_default_init(shapes, n_models, init_scale, seed, bias=True)
    params = [w.requires_grad_(True) for w in Ws]
    if bias:
        params += [b.requires_grad_(True) for b in bs]
    nl = len(Ws)
    act = torch.relu if activation == "relu" else (lambda z: z)

    def forward(inp):  # inp (B, m, d)
        h = inp
        for li in range(nl):
            h = h @ params[li].transpose(1, 2)
            if bias:
                h = h + params[nl + li][:, None, :]
            if li < nl - 1:
                h = act(h)
        return h

    g = torch.Generator().manual_seed(10_000 + seed)
    per_epoch = n // batch
    perms = None
    R = rec.size
    eval_out = np.empty((R, n_models, Ev.shape[0], d))
    tr = np.full((R, n_models), np.nan)
    last = torch.full((n_models,), float("nan"), dtype=torch.float64)
    r = 0
    Evb = Ev.expand(n_models, -1, -1)
    for k in range(steps + 1):
        if r < R and rec[r] == k:
            with torch.no_grad():
                eval_out[r] = forward(Evb).numpy()
            tr[r] = last.numpy()
            r += 1
            if r == R:
                break
        pos = k % per_epoch
        if pos == 0:
            perms = torch.stack([torch.randperm(n, generator=g) for _ in range(n_models)])
        idx = perms[:, pos * batch : (pos + 1) * batch]
        xb = X[idx]
        loss = 0.5 * ((forward(xb) - xb) ** 2).sum(-1).mean(-1)
        grads = torch.autograd.grad(loss.sum(), params)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                p -= lr * gr
        last = loss.detach()
    return dict(steps=rec, eval_out=eval_out, train_loss=tr)


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
