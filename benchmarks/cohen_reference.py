"""A Cohen-et-al.-style reference for the top Hessian eigenvalue (the baseline of ``bench_sharpness.py``).

Follows ``src/utilities.py`` of Cohen et al., "Gradient descent on neural networks typically occurs at the edge of
stability" (ICLR 2021; repository ``locuslab/edge-of-stability``), in float64 and without the ``DataLoader``:

* ``compute_hvp``: for every batch, a forward pass, ``autograd.grad(loss, params, create_graph=True)``, the dot
  product with the vector and a second ``autograd.grad`` (double backward per product and per batch), summed over
  the batches;
* ``lanczos``: ``scipy.sparse.linalg.eigsh`` on a ``LinearOperator`` of those products (``which="LM"``, ``ncv=20``
  for one eigenvalue, ARPACK's random start). Unlike the original, the operator is given its dtype, so scipy does
  not spend an extra product to infer it.
* ``gd_with_sharpness``: their ``gd.py`` loop (full-batch gradient as a sum over batches, a plain GD step, the top
  eigenvalue every ``eig_freq`` steps with ``neigs=1``).

**At equal tolerance** (the default, ``fair=True``): ``eigsh(tol=TOL)`` with ``TOL = 1e-6``, ARPACK's stopping
test ``||H u - lam u|| <= tol |lam|``, the same residual test as ``lib.curvature``, and the whole data set as one
batch (one double backward per product, as ``lib`` takes one backward per product). Cohen et al.'s own settings,
``tol=0`` (in float64 ARPACK then works to round-off, 31-41 products instead of 21 on some models) and batches of
1,000 samples (ten passes per product on 10,000 points), handicap the reference; ``fair=False`` keeps them for the
benchmark's labelled "Cohen's settings" column only.

``PRODUCTS[0]`` counts every Hessian-vector product taken (the benchmark reads counts, it never extrapolates).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, eigsh
from torch.nn.utils import parameters_to_vector, vector_to_parameters

#: ARPACK's relative tolerance at equal tolerance with ``lib.curvature`` (its default certificate)
TOL = 1e-6
#: Hessian-vector products taken so far (reset it before a measurement)
PRODUCTS = [0]


def _flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def _batches(problem, fair):
    return problem.one_batch if fair else problem.batches


def compute_hvp(problem, vector, fair=True):
    """Hessian-vector product of the mean loss over all batches (double backward per batch)."""
    PRODUCTS[0] += 1
    params = list(problem.model.parameters())
    hvp = torch.zeros_like(vector)
    for X, y in _batches(problem, fair):
        loss = problem.loss_sum(problem.model(X), y) / problem.n
        grads = torch.autograd.grad(loss, params, create_graph=True)
        dot = _flat(grads).mul(vector).sum()
        hvp += _flat(torch.autograd.grad(dot, params, retain_graph=True))
    return hvp


def lanczos(matrix_vector, dim, neigs=1, tol=TOL):
    """Top ``neigs`` eigenvalues (descending) and eigenvectors of a symmetric operator by ``eigsh``."""

    def mv(vec):
        return matrix_vector(torch.as_tensor(np.asarray(vec).ravel(), dtype=torch.float64)).numpy()

    operator = LinearOperator((dim, dim), matvec=mv, dtype=np.float64)
    evals, evecs = eigsh(operator, neigs, tol=tol)
    return evals[::-1].copy(), evecs[:, ::-1].copy()


def top_eigenvalue(problem, neigs=1, fair=True):
    """The reference value: largest-magnitude Hessian eigenvalue at the module's current parameters."""
    dim = sum(p.numel() for p in problem.model.parameters())
    evals, _ = lanczos(lambda v: compute_hvp(problem, v, fair).detach(), dim, neigs, tol=TOL if fair else 0.0)
    return float(evals[0])


def full_gradient(problem, fair=True):
    params = list(problem.model.parameters())
    total = [torch.zeros_like(p) for p in params]
    loss_value = 0.0
    for X, y in _batches(problem, fair):
        loss = problem.loss_sum(problem.model(X), y) / problem.n
        for t, g in zip(total, torch.autograd.grad(loss, params)):
            t += g
        loss_value += float(loss.detach())
    return loss_value, total


def gd_with_sharpness(problem, lr, steps, eig_freq=1, fair=True):
    """``steps`` GD steps from the module's parameters, the top eigenvalue every ``eig_freq`` steps (before the
    step, and after the last one). Restores the starting parameters; returns the list of eigenvalues."""
    start = parameters_to_vector(problem.model.parameters()).detach().clone()
    out = []
    for step in range(steps + 1):
        if step % eig_freq == 0 or step == steps:
            out.append(top_eigenvalue(problem, fair=fair))
        if step == steps:
            break
        _, grads = full_gradient(problem, fair)
        with torch.no_grad():
            for p, g in zip(problem.model.parameters(), grads):
                p.sub_(lr * g)
    with torch.no_grad():
        vector_to_parameters(start, problem.model.parameters())
    return np.array(out)
