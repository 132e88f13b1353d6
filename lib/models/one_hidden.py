"""The one-hidden-layer sigmoid network of Li's thesis, ch. 4: cross-entropy, gradient, Hessian, GD and Newton.

The model is :math:`H(W,x)=\\frac1K\\sum_{j=1}^K\\phi(w_j^\\top x)` with :math:`W=[w_1,\\dots,w_K]\\in\\mathbb
R^{d\\times K}` and a fixed second layer 1/K; the loss is the cross-entropy
:math:`\\ell=-y\\log H-(1-y)\\log(1-H)`, which is linear in y, so a soft label y = P(y = 1 | x) gives the
expected loss over the label noise. All functions take torch float64 tensors with any leading batch axes
(several initialisations and several data draws at once): W of shape (..., d, K), X of shape (..., n, d), y of
shape (..., n).

The gradient and Hessian are the closed forms of the thesis (C.71)-(C.73); the tests check them against autograd.
:func:`gd_one_hidden` is a hand-written full-batch GD loop on this closed-form gradient (Algorithm 1 of the
thesis without gradient noise): the members of the batch have different data, and the explicit gradient is
several times faster than autograd through :func:`lib.train.train_stacked` at these sizes, and the M
initialisations share their data set without copying it.
"""

from __future__ import annotations

import torch

from ..config import check_array, check_int, check_positive

__all__ = [
    "one_hidden_probability",
    "cross_entropy_risk",
    "cross_entropy_gradient",
    "cross_entropy_hessian",
    "gd_one_hidden",
    "newton_critical_point",
]

_CLIP = 1e-12


def _check(W: torch.Tensor, X: torch.Tensor) -> None:
    if not (torch.is_tensor(W) and torch.is_tensor(X)):
        raise ValueError("W and X must be torch tensors")
    if W.ndim < 2 or X.ndim < 2 or W.shape[-2] != X.shape[-1]:
        raise ValueError(f"W must be (..., d, K) and X (..., n, d) with the same d, got {W.shape}, {X.shape}")


def one_hidden_probability(W: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """H(W, x) for every row of X: shape (..., n)."""
    _check(W, X)
    return torch.sigmoid(torch.einsum("...nd,...dk->...nk", X, W)).mean(-1)


def cross_entropy_risk(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy f_n(W) over the n rows (labels y in [0, 1], soft labels allowed): shape (...)."""
    H = one_hidden_probability(W, X).clamp(_CLIP, 1 - _CLIP)
    return -(y * torch.log(H) + (1 - y) * torch.log1p(-H)).mean(-1)


def _parts(W, X, y):
    s = torch.sigmoid(torch.einsum("...nd,...dk->...nk", X, W))  # (..., n, K); no copy of X broadcast over W
    K = W.shape[-1]
    H = s.mean(-1).clamp(_CLIP, 1 - _CLIP)
    d1 = s * (1 - s)  # φ'
    return s, K, H, d1


def cross_entropy_gradient(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """∇f_n(W) of shape (..., d, K), from (C.71): ∂ℓ/∂w_j = -(1/K) (y - H) / (H (1 - H)) φ'(w_jᵀx) x."""
    _check(W, X)
    _, K, H, d1 = _parts(W, X, y)
    coef = -(y - H) / (H * (1 - H)) / K  # (..., n)
    return torch.einsum("...nd,...nk->...dk", X, coef[..., None] * d1) / X.shape[-2]


def cross_entropy_hessian(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """∇²f_n(W) of shape (..., dK, dK) from (C.72)-(C.73), W flattened column by column (index j d + a).

    Block (j, l) is the mean over rows of ξ_{j,l} x xᵀ with ξ_{j,l} = φ'_j φ'_l (H² + y - 2yH) / (K² H² (1-H)²)
    - 1[j = l] φ''_j (y - H) / (K H (1 - H)).
    """
    _check(W, X)
    s, K, H, d1 = _parts(W, X, y)
    d2 = d1 * (1 - 2 * s)  # φ''
    a = (H**2 + y - 2 * y * H) / (K**2 * H**2 * (1 - H) ** 2)
    b = (y - H) / (K * H * (1 - H))
    xi = a[..., None, None] * d1[..., :, None] * d1[..., None, :]
    xi = xi - torch.diag_embed(b[..., None] * d2)
    n, d = X.shape[-2:]
    # one product (K K, n) @ (n, d d) per member over the outer products x xᵀ, computed once for the members that
    # share X through a broadcast axis (einsum folds that axis into the product instead of copying X for each);
    # a three-operand einsum would build an (n, K, K, d) intermediate
    xx = (X[..., :, :, None] * X[..., :, None, :]).reshape(*X.shape[:-2], n, d * d)
    hess = torch.einsum("...nq,...nr->...qr", xi.reshape(*xi.shape[:-2], K * K), xx) / n  # (..., K K, d d)
    hess = hess.reshape(*hess.shape[:-2], K, K, d, d)
    return hess.transpose(-3, -2).reshape(*hess.shape[:-4], K * d, K * d)


def _gradient_inits(W: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """∇f_n for M initialisations sharing one data set: W (..., M, d, K), X (..., n, d), y (..., n).

    φ' = s - s² and its product with the per-sample coefficient are formed in place: the (..., M, n, K) arrays are
    the cost of a GD step, and one fresh array fewer per operation makes the step about 1.7x faster (measured)."""
    K = W.shape[-1]
    s = torch.sigmoid(torch.einsum("...nd,...mdk->...mnk", X, W))
    H = s.mean(-1).clamp(_CLIP, 1 - _CLIP)
    coef = (H - y[..., None, :]) / (H * (1 - H)) / K
    G = torch.addcmul(s, s, s, value=-1).mul_(coef[..., None])  # coef φ'(w_jᵀx)
    return torch.einsum("...nd,...mnk->...mdk", X, G) / X.shape[-2]


def gd_one_hidden(
    W0: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    lr,
    steps: int,
    record_every: int = 1,
    divergence_bound: float = 1e6,
) -> dict:
    """Full-batch gradient descent on the cross-entropy from M initialisations on each of several data sets.

    Args:
        W0: initial weights (..., M, d, K): M initialisations for each data set of the leading axes.
        X: inputs (..., n, d); y: labels (..., n) in [0, 1].
        lr: step size, a positive float or a tensor broadcasting against W0[..., 0, 0].
        steps: number of GD steps, >= 1.
        record_every: keep W every this many steps (and the last), >= 1.
        divergence_bound: a member whose weights become non-finite or exceed this norm is frozen and flagged.

    Returns:
        dict with ``W`` (final weights), ``steps`` (recorded step indices, a tensor), ``trajectory`` (the
        recorded weights, shape (T, ..., M, d, K)), ``diverged`` (bool tensor of shape W0.shape[:-2]) and
        ``diverged_step`` (first step where it diverged, -1 if never).
    """
    check_array("W0", W0)
    check_array("X", X)
    check_array("y", y)
    _check(W0, X)
    if W0.ndim < 3 or W0.shape[:-3] != X.shape[:-2] or y.shape != X.shape[:-1]:
        raise ValueError(
            f"W0 must be (..., M, d, K) with X (..., n, d) and y (..., n), got {W0.shape}, {X.shape}, {y.shape}"
        )
    check_int("steps", steps, minimum=1)
    check_int("record_every", record_every, minimum=1)
    check_positive("divergence_bound", divergence_bound)
    lr_t = torch.as_tensor(check_array("lr", lr, positive=True), dtype=W0.dtype)
    try:
        fits = torch.broadcast_shapes(lr_t.shape, W0.shape[:-2]) == W0.shape[:-2]
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"lr must be a number or broadcast against W0[..., 0, 0] of shape {tuple(W0.shape[:-2])}, "
                         f"got shape {tuple(lr_t.shape)}")
    lr_t = lr_t[..., None, None] if lr_t.ndim else lr_t
    W = W0.clone()
    batch = W.shape[:-2]
    diverged = torch.zeros(batch, dtype=torch.bool)
    div_step = torch.full(batch, -1, dtype=torch.long)
    rec_steps, traj = [0], [W.clone()]
    for t in range(1, steps + 1):
        W_new = W - lr_t * _gradient_inits(W, X, y)
        bad = ~torch.isfinite(W_new).all(-1).all(-1) | (W_new.flatten(-2).norm(dim=-1) > divergence_bound)
        div_step[bad & ~diverged] = t
        diverged |= bad
        W = torch.where(diverged[..., None, None], W, W_new)
        if t % record_every == 0 or t == steps:
            rec_steps.append(t)
            traj.append(W.clone())
    return {
        "W": W,
        "steps": torch.tensor(rec_steps),
        "trajectory": torch.stack(traj),
        "diverged": diverged,
        "diverged_step": div_step,
    }


def newton_critical_point(
    W0: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    iters: int = 30,
    tol: float = 1e-10,
    max_step: float = 1.0,
) -> dict:
    """The critical point of f_n near W0 by damped Newton steps (H with its eigenvalues made absolute, backtracking),
    batched.

    This is the limit Ŵ_n that GD reaches from a nearby start (Theorem 2 of the thesis), computed in a few
    steps instead of thousands.

    Args:
        W0: start (..., d, K), X (..., n, d), y (..., n) with the same leading axes.
        iters: at most this many Newton steps, >= 1.
        tol: stop when every member's gradient norm is below tol.
        max_step: longest step (Frobenius norm); longer Newton steps are shortened (a trust region that keeps
            nearly flat directions of a saturated sigmoid from throwing W far away).

    Returns:
        dict with ``W``, ``grad_norm`` (final ‖∇f_n‖_F per member) and ``min_eig`` (smallest Hessian eigenvalue
        at the end; positive means a strict local minimum).
    """
    check_array("W0", W0)
    check_array("X", X)
    check_array("y", y)
    _check(W0, X)
    check_int("iters", iters, minimum=1)
    check_positive("tol", tol)
    check_positive("max_step", max_step)
    W = W0.clone()
    d, K = W.shape[-2:]
    for _ in range(iters):
        g = cross_entropy_gradient(W, X, y)
        gnorm = g.flatten(-2).norm(dim=-1)
        if torch.all(gnorm < tol):
            break
        evals, evecs = torch.linalg.eigh(cross_entropy_hessian(W, X, y))
        evals = evals.abs().clamp_min(1e-10)  # |H|: a descent direction also near saddles
        gv = g.transpose(-1, -2).reshape(*g.shape[:-2], d * K)  # column-major flattening
        coords = (evecs.transpose(-1, -2) @ gv[..., None])[..., 0] / evals
        step = (evecs @ coords[..., None])[..., 0]
        step = step.reshape(*g.shape[:-2], K, d).transpose(-1, -2)
        norm = step.flatten(-2).norm(dim=-1).clamp_min(1e-300)
        step = step * (max_step / norm).clamp(max=1.0)[..., None, None]
        f0 = cross_entropy_risk(W, X, y)
        t = torch.ones(W.shape[:-2], dtype=W.dtype)
        for _ in range(20):
            ok = cross_entropy_risk(W - t[..., None, None] * step, X, y) <= f0 + 1e-15
            if torch.all(ok):
                break
            t = torch.where(ok, t, t / 2)
        W = W - t[..., None, None] * step
    g = cross_entropy_gradient(W, X, y)
    min_eig = torch.linalg.eigvalsh(cross_entropy_hessian(W, X, y))[..., 0]
    return {"W": W, "grad_norm": g.flatten(-2).norm(dim=-1), "min_eig": min_eig}
