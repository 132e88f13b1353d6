"""Gaussian mixtures with labels from a one-hidden-layer sigmoid teacher (Li's thesis, ch. 4).

Inputs follow :math:`x\\sim\\sum_l\\lambda_l\\mathcal N(\\mu_l,\\Sigma_l)` and labels are Bernoulli with
:math:`P(y=1|x)=\\frac1K\\sum_j\\phi(w_j^{*\\top}x)`, :math:`\\phi` the logistic sigmoid. Everything is NumPy
float64; a leading batch axis gives several independent draws at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import check_array, check_instance, check_int

__all__ = [
    "GaussianMixture",
    "gaussian_mixture",
    "sample_mixture",
    "rotated_covariance",
    "teacher_probability",
    "teacher_labels",
]


@dataclass(frozen=True)
class GaussianMixture:
    """Parameters Ψ of a Gaussian mixture: weights (L,), means (L, d), covariances (L, d, d)."""

    lambdas: np.ndarray
    means: np.ndarray
    covs: np.ndarray

    @property
    def groups(self) -> int:
        """Number of components L."""
        return len(self.lambdas)

    @property
    def dim(self) -> int:
        """Input dimension d."""
        return self.means.shape[1]


def gaussian_mixture(lambdas, means, covs) -> GaussianMixture:
    """Build and validate a :class:`GaussianMixture`.

    Args:
        lambdas: L positive weights summing to 1.
        means: (L, d) array of group means.
        covs: (L, d, d) symmetric positive definite covariances, or (L,) positive scalars s_l meaning s_l I.

    Returns:
        The mixture, with float64 arrays.
    """
    check_array("lambdas", lambdas)
    check_array("means", means)
    check_array("covs", covs)
    lam = np.asarray(lambdas, dtype=np.float64).ravel()
    mu = np.atleast_2d(np.asarray(means, dtype=np.float64))
    if lam.size < 1 or np.any(lam < 0) or abs(lam.sum() - 1) > 1e-9:
        raise ValueError(f"lambdas must be non-negative and sum to 1, got {lam.tolist()}")
    if mu.shape[0] != lam.size:
        raise ValueError(f"means must have shape (L={lam.size}, d), got {mu.shape}")
    d = mu.shape[1]
    cov = np.asarray(covs, dtype=np.float64)
    if cov.ndim == 1:
        if cov.size != lam.size or np.any(cov <= 0):
            raise ValueError("scalar covs must be L positive numbers")
        cov = cov[:, None, None] * np.eye(d)
    if cov.shape != (lam.size, d, d):
        raise ValueError(f"covs must have shape (L, d, d) = {(lam.size, d, d)}, got {cov.shape}")
    if not np.allclose(cov, np.swapaxes(cov, 1, 2)) or np.any(np.linalg.eigvalsh(cov) <= 0):
        raise ValueError("covs must be symmetric positive definite")
    return GaussianMixture(lam, mu, cov)


def sample_mixture(gmm: GaussianMixture, n: int, rng: np.random.Generator, batch: int | None = None):
    """Draw inputs and their group labels.

    Args:
        gmm: the mixture.
        n: samples per draw, >= 1.
        rng: NumPy generator.
        batch: number of independent draws (a leading axis), or None for one draw.

    Returns:
        ``(X, g)``: X of shape (n, d) (or (batch, n, d)) and integer groups of shape (n,) (or (batch, n)).
    """
    check_instance("gmm", gmm, GaussianMixture)
    check_instance("rng", rng, np.random.Generator)
    check_int("n", n, minimum=1)
    if batch is not None:
        check_int("batch", batch, minimum=1)
    shape = (n,) if batch is None else (batch, n)
    g = rng.choice(gmm.groups, size=shape, p=gmm.lambdas)
    chol = np.linalg.cholesky(gmm.covs)
    z = rng.standard_normal(shape + (gmm.dim,))
    X = gmm.means[g]
    for l in range(gmm.groups):  # group by group: chol[g] would hold a d x d matrix per sample (GBs at n = 2e5)
        mask = g == l
        X[mask] += z[mask] @ chol[l].T
    return X, g


def rotated_covariance(diag, rng: np.random.Generator) -> np.ndarray:
    """Λᵀ diag(D) Λ with Λ the left singular vectors of a d x d standard Gaussian matrix (thesis Fig 4.4).

    Args:
        diag: the d positive eigenvalues.
        rng: NumPy generator.
    """
    check_array("diag", diag, positive=True)
    check_instance("rng", rng, np.random.Generator)
    D = np.asarray(diag, dtype=np.float64)
    if D.ndim != 1 or np.any(D <= 0):
        raise ValueError("diag must be a 1-D array of positive numbers")
    lam, _, _ = np.linalg.svd(rng.standard_normal((D.size, D.size)))
    return lam.T @ np.diag(D) @ lam


def teacher_probability(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """H(W, x) = (1/K) Σ_j φ(w_jᵀx) for W of shape (..., d, K) and X of shape (..., n, d)."""
    check_array("W", W)
    check_array("X", X)
    W, X = np.asarray(W, dtype=np.float64), np.asarray(X, dtype=np.float64)
    if W.shape[-2] != X.shape[-1]:
        raise ValueError(f"W has d = {W.shape[-2]} rows but X has {X.shape[-1]} columns")
    return (1.0 / (1.0 + np.exp(-(X @ W)))).mean(-1)


def teacher_labels(W: np.ndarray, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli labels y ∈ {0, 1} with P(y = 1 | x) = H(W, x), as float64."""
    check_array("W", W)
    check_array("X", X)
    check_instance("rng", rng, np.random.Generator)
    p = teacher_probability(W, X)
    return (rng.random(p.shape) < p).astype(np.float64)
