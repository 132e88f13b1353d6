"""The Hessian toolkit: Hessian-vector products, top eigenpairs and directional derivatives.

Every function takes ``loss``, a callable mapping a flat 1-D parameter tensor ``theta`` of shape ``(n,)`` to a
scalar, and ``theta`` itself. :func:`flatten_module` turns an ``nn.Module`` and a loss of its outputs into that
form. Products use ``torch.func`` (forward-over-reverse), eigenpairs use Lanczos
(``scipy.sparse.linalg.eigsh`` on a ``LinearOperator``), power iteration, or the dense Hessian.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch.func import functional_call, grad, jvp

from .config import check_in, check_int, check_positive

METHODS = ("lanczos", "power", "dense")


def _check(loss, theta):
    if not callable(loss):
        raise ValueError("loss must be a callable mapping a flat parameter tensor to a scalar")
    if not isinstance(theta, torch.Tensor) or theta.ndim != 1 or theta.numel() == 0:
        shape = tuple(theta.shape) if isinstance(theta, torch.Tensor) else type(theta).__name__
        raise ValueError(f"theta must be a non-empty 1-D tensor, got {shape}")


def hvp(loss: Callable, theta: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Hessian-vector product ``H(theta) v`` (shape ``(n,)``) by forward-over-reverse AD: jvp of grad."""
    _check(loss, theta)
    if not isinstance(v, torch.Tensor) or v.shape != theta.shape:
        raise ValueError(f"v must be a tensor of shape {tuple(theta.shape)}")
    return jvp(grad(loss), (theta.detach(),), (v.to(theta.dtype),))[1]


def hessian(loss: Callable, theta: torch.Tensor) -> torch.Tensor:
    """Dense Hessian ``(n, n)`` by ``torch.func.hessian`` (for small models only)."""
    _check(loss, theta)
    return torch.func.hessian(loss)(theta.detach())


def _power(matvec, n, k, tol, maxiter, rng, dtype):
    """Top-``k`` eigenpairs (largest algebraic) by deflated power iteration with a spectral shift."""
    vals, vecs = [], []
    for _ in range(k):
        v = torch.as_tensor(rng.standard_normal(n), dtype=dtype)
        v /= v.norm()
        lam = 0.0
        for _it in range(maxiter):
            w = matvec(v)
            for lv, u in zip(vals, vecs):
                w = w - lv * (u @ v) * u
            new = float(v @ w)
            nrm = w.norm()
            if nrm == 0:
                break
            v = w / nrm
            if abs(new - lam) <= tol * max(1.0, abs(new)):
                lam = new
                break
            lam = new
        vals.append(lam)
        vecs.append(v)
    order = np.argsort(vals)[::-1]
    return (torch.tensor([vals[i] for i in order], dtype=dtype),
            torch.stack([vecs[i] for i in order], dim=1))


def hessian_top_eigenpairs(
    loss: Callable,
    theta: torch.Tensor,
    k: int = 1,
    *,
    method: str = "lanczos",
    tol: float = 1e-8,
    maxiter: int = 1000,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-``k`` Hessian eigenvalues (descending, shape ``(k,)``) and eigenvectors (columns, shape ``(n, k)``).

    ``"lanczos"`` runs ``scipy.sparse.linalg.eigsh(which="LA")`` on HVPs, ``"power"`` deflated power iteration
    (finds the largest-magnitude eigenvalues, which are the top ones near a minimum), ``"dense"`` builds the
    Hessian and calls ``torch.linalg.eigh``. Eigenvectors have unit norm; their sign is fixed so that the
    largest-magnitude entry is positive.
    """
    _check(loss, theta)
    n = theta.numel()
    check_int("k", k, minimum=1, maximum=n)
    check_in("method", method, METHODS)
    check_positive("tol", tol)
    check_int("maxiter", maxiter, minimum=1)
    theta = theta.detach()
    dtype = theta.dtype
    if method == "dense" or (method == "lanczos" and n <= k + 1):
        evals, evecs = torch.linalg.eigh(hessian(loss, theta))
        vals, vecs = evals.flip(0)[:k], evecs.flip(1)[:, :k]
    elif method == "lanczos":
        from scipy.sparse.linalg import LinearOperator, eigsh

        hv = grad(loss)

        def matvec(x):
            x = torch.as_tensor(np.asarray(x).ravel(), dtype=dtype)
            return jvp(hv, (theta,), (x,))[1].detach().numpy().astype(np.float64)

        op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
        v0 = np.random.default_rng(seed).standard_normal(n)
        w, U = eigsh(op, k=k, which="LA", tol=tol, maxiter=maxiter * n, v0=v0)
        order = np.argsort(w)[::-1]
        vals = torch.as_tensor(w[order].copy(), dtype=dtype)
        vecs = torch.as_tensor(U[:, order].copy(), dtype=dtype)
    else:
        hv = grad(loss)
        vals, vecs = _power(lambda x: jvp(hv, (theta,), (x,))[1].detach(), n, k, tol, maxiter,
                            np.random.default_rng(seed), dtype)
    idx = vecs.abs().argmax(dim=0)
    signs = torch.sign(vecs[idx, torch.arange(vecs.shape[1])])
    signs[signs == 0] = 1
    return vals, vecs * signs


def directional_derivatives(loss: Callable, theta: torch.Tensor, u: torch.Tensor, max_order: int = 4) -> torch.Tensor:
    """Derivatives of ``c -> loss(theta + c u)`` at ``c = 0`` of orders ``0..max_order`` (shape
    ``(max_order+1,)``), by nested forward-mode AD (exact, no finite differences). Used for the stable-oscillation
    condition ``3 f'''^2 - f'' f''''`` of Thm 1 of Chen & Bruna (2023)."""
    _check(loss, theta)
    if not isinstance(u, torch.Tensor) or u.shape != theta.shape:
        raise ValueError(f"u must be a tensor of shape {tuple(theta.shape)}")
    check_int("max_order", max_order, minimum=0, maximum=8)
    theta, u = theta.detach(), u.detach().to(theta.dtype)

    def along(c):
        return loss(theta + c * u)

    fns = [along]
    for _ in range(max_order):
        prev = fns[-1]
        fns.append(lambda c, prev=prev: jvp(prev, (c,), (torch.ones_like(c),))[1])
    c0 = torch.zeros((), dtype=theta.dtype)
    return torch.stack([f(c0).detach() for f in fns])


def flatten_module(model: torch.nn.Module, loss_of_model: Callable) -> tuple[torch.Tensor, Callable]:
    """Flat view of a module's parameters: returns ``theta`` (shape ``(n,)``) and ``loss(theta)``.

    ``loss_of_model(call)`` receives ``call(*inputs)``, a function evaluating the model with the parameters
    ``theta`` (through ``torch.func.functional_call``), and returns a scalar.
    """
    if not isinstance(model, torch.nn.Module):
        raise ValueError("model must be a torch.nn.Module")
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    theta = torch.cat([p.detach().reshape(-1) for _, p in model.named_parameters()])

    def unflatten(flat):
        return {n: t.reshape(s) for n, t, s in zip(names, torch.split(flat, sizes), shapes)}

    def loss(flat):
        params = unflatten(flat)
        return loss_of_model(lambda *inputs: functional_call(model, params, inputs))

    return theta, loss


def grad_eigvec_cosine(loss: Callable, theta: torch.Tensor, eigvec: torch.Tensor) -> float:
    """``|cos(grad L(theta), v)|``, the alignment of the gradient with a (top) Hessian eigenvector."""
    _check(loss, theta)
    g = grad(loss)(theta.detach())
    return float((g @ eigvec).abs() / (g.norm() * eigvec.norm() + 1e-30))
