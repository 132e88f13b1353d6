"""The structured identity mapping (SIM) task of Yang et al. (2025), Sec. 2.1 and App. B / F.1.

Concept ``p`` (``p = 1..s``) is a Gaussian cluster in ``R^d`` centred at ``mu_p e_p`` with diagonal covariance
``diag(sigma)^2``, where ``sigma`` is non-zero only in the first ``s`` coordinates (coordinates ``> s`` are
exactly
zero). The model learns the identity map on the training clusters and is evaluated out of distribution at the
corner ``x_hat = sum_p mu_p e_p`` that combines all concepts; App. B uses every corner
``x_hat^(v) = sum_p v_p mu_p e_p``, ``v in {0,1}^s``. App. F.1 optionally applies one random rotation ``Q`` to
all training and test points (``x -> Q x``); outputs are rotated back with ``Q^T`` before plotting.

Conventions: arrays are NumPy ``float64``; points are rows (``X`` has shape ``(N, d)``), so a rotation acts as
``X @ Q.T``. ``mu`` and ``sigma`` are length-``s`` sequences (``sigma`` may also be a scalar, broadcast to all
concepts).

Main entry points
-----------------
* :func:`sim_gaussian_mixture` -> :class:`SIMData` (one sampled training set, ``x_hat``, corners, rotation);
* :func:`sim_gaussian_mixture_batch` (``K`` training sets at once, one per seed, shape ``(K, N, d)``);
* :func:`population_moments` (mean ``m`` and second moment ``A`` of the training distribution, the ``n ->
  inf`` limit used by the theory, Eq. (C.13)), :func:`augmented_moment` (for affine models ``W x + b``),
  :func:`concept_rates` (``a_p = sigma_p^2 + mu_p^2 / s``);
* :func:`hypercube_corners`, :func:`ood_point`, :func:`random_rotation`, :func:`empirical_second_moment`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.config import check_array, check_bool, check_int, check_seed


def as_concepts(mu, sigma, d: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate the concept parameters; return ``(mu, sigma, d)`` as arrays of shape ``(s,)`` and an int.

    ``mu``: signals ``mu_p >= 0`` (at least one concept); ``sigma``: diversities ``sigma_p >= 0``, a scalar or
    ``s`` values; ``d``: input dimension ``>= s`` (``None`` means ``d = s``).
    """
    mu_arr = np.atleast_1d(check_array("mu", mu, finite=False, nonempty=False))
    if mu_arr.ndim != 1 or mu_arr.size < 1:
        raise ValueError(f"mu must be a non-empty 1-D sequence of signals, got shape {mu_arr.shape}")
    if not np.all(np.isfinite(mu_arr)) or np.any(mu_arr < 0):
        raise ValueError(f"mu must contain finite values >= 0, got {mu_arr}")
    s = mu_arr.size
    sig = check_array("sigma", sigma, finite=False, nonempty=False)
    if sig.ndim == 0:
        sig = np.full(s, float(sig))
    if sig.shape != (s,):
        raise ValueError(f"sigma must be a scalar or have shape ({s},) like mu, got shape {sig.shape}")
    if not np.all(np.isfinite(sig)) or np.any(sig < 0):
        raise ValueError(f"sigma must contain finite values >= 0, got {sig}")
    if d is None:
        d = s
    check_int("d", d, minimum=s)
    return mu_arr, sig, int(d)


def random_rotation(d: int, seed: int = 0) -> np.ndarray:
    """A Haar-random orthogonal matrix ``Q`` of shape ``(d, d)`` (QR of a Gaussian matrix, signs fixed).

    Used as the optional rotation of App. F.1: every point ``x`` becomes ``Q x``.
    """
    check_int("d", d, minimum=1)
    check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((d, d))
    Q, R = np.linalg.qr(G)
    Q = Q * np.sign(np.diag(R))[None, :]
    return Q


def ood_point(mu, d: int | None = None, Q: np.ndarray | None = None) -> np.ndarray:
    """The OOD test point ``x_hat = sum_p mu_p e_p`` (Sec. 2.1), shape ``(d,)``; rotated to ``Q x_hat`` if
    given."""
    mu_arr, _, d = as_concepts(mu, 0.0, d)
    x = np.zeros(d)
    x[: mu_arr.size] = mu_arr
    if Q is not None:
        _check_rotation(Q, d)
        x = Q @ x
    return x


def hypercube_corners(mu, d: int | None = None, Q: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """All ``2^s`` corners ``x_hat^(v) = sum_p v_p mu_p e_p`` (App. B, Eq. B.1).

    Returns ``(V, X)``: ``V`` of shape ``(2^s, s)`` with the 0/1 codes ``v`` (in lexicographic order, so
    row 0 is
    the origin and the last row is ``x_hat``) and ``X`` of shape ``(2^s, d)`` with the corners (rotated by
    ``Q`` when given).
    """
    mu_arr, _, d = as_concepts(mu, 0.0, d)
    s = mu_arr.size
    if s > 16:
        raise ValueError(f"hypercube_corners needs s <= 16 concepts (2^s corners), got s = {s}")
    V = np.array(list(itertools.product((0, 1), repeat=s)), dtype=np.int64)
    X = np.zeros((V.shape[0], d))
    X[:, :s] = V * mu_arr[None, :]
    if Q is not None:
        _check_rotation(Q, d)
        X = X @ Q.T
    return V, X


def concept_rates(mu, sigma, origin_cluster: bool = False) -> np.ndarray:
    """The rates ``a_p = sigma_p^2 + mu_p^2 / s`` of Eq. (4.1)/(C.13), shape ``(s,)``.

    With the optional cluster at the origin the mixture has ``s + 1`` equally likely clusters, so
    ``a_p = sigma_p^2 + mu_p^2 / (s + 1)`` (the origin cluster is given the same ``diag(sigma)^2`` noise).
    """
    check_bool("origin_cluster", origin_cluster)
    mu_arr, sig, _ = as_concepts(mu, sigma)
    n_clusters = mu_arr.size + (1 if origin_cluster else 0)
    return sig**2 + mu_arr**2 / n_clusters


def population_moments(
    mu, sigma, d: int | None = None, Q: np.ndarray | None = None, origin_cluster: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``m = E[x]`` (shape ``(d,)``) and second moment ``A = E[x x^T]`` (shape ``(d, d)``) of the SIM
    training distribution (Eq. C.8-C.13: ``A = diag(mu)^2 / s + diag(sigma)^2``, padded with zeros to ``d``).

    With a rotation ``Q`` these become ``Q m`` and ``Q A Q^T``. These are the ``n -> inf`` limits used for
    exact population-loss gradient descent: for a linear model ``f = W x`` the loss (2.1) is
    ``1/2 tr[(W - I) A (W - I)^T]``.
    """
    mu_arr, sig, d = as_concepts(mu, sigma, d)
    s = mu_arr.size
    check_bool("origin_cluster", origin_cluster)
    n_clusters = s + (1 if origin_cluster else 0)
    m = np.zeros(d)
    m[:s] = mu_arr / n_clusters
    A = np.zeros((d, d))
    A[np.arange(s), np.arange(s)] = sig**2 + mu_arr**2 / n_clusters
    if Q is not None:
        _check_rotation(Q, d)
        m = Q @ m
        A = Q @ A @ Q.T
    return m, A


def augmented_moment(A: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Second moment of the augmented input ``(x, 1)``: ``[[A, m], [m^T, 1]]``, shape ``(d + 1, d + 1)``.

    For an affine model ``f = W x + b = [W b] (x, 1)`` the population loss is
    ``1/2 tr[([W b] - [I 0]) A_aug ([W b] - [I 0])^T]``.
    """
    check_array("A", A)
    check_array("m", m)
    A = np.asarray(A, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix, got shape {A.shape}")
    if m.shape != (A.shape[0],):
        raise ValueError(f"m must have shape ({A.shape[0]},), got {m.shape}")
    d = A.shape[0]
    out = np.empty((d + 1, d + 1))
    out[:d, :d] = A
    out[:d, d] = m
    out[d, :d] = m
    out[d, d] = 1.0
    return out


def empirical_second_moment(X) -> np.ndarray:
    """``A_hat = X^T X / N`` for points ``X`` of shape ``(N, d)`` (or ``(K, N, d)`` -> ``(K, d, d)``), Eq.
    (4.1)."""
    check_array("X", X)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim not in (2, 3) or X.shape[-2] < 1:
        raise ValueError(f"X must have shape (N, d) or (K, N, d) with N >= 1, got {X.shape}")
    return np.swapaxes(X, -1, -2) @ X / X.shape[-2]


def empirical_mean(X) -> np.ndarray:
    """Mean of the points ``X`` (shape ``(N, d)`` -> ``(d,)``, or ``(K, N, d)`` -> ``(K, d)``)."""
    check_array("X", X)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim not in (2, 3) or X.shape[-2] < 1:
        raise ValueError(f"X must have shape (N, d) or (K, N, d) with N >= 1, got {X.shape}")
    return X.mean(axis=-2)


@dataclass
class SIMData:
    """One sampled SIM data set.

    Attributes:
        X: training points, shape ``(N, d)`` with ``N = n * n_clusters`` (rotated by ``Q`` if any).
        labels: cluster of each point, shape ``(N,)``; ``0..s-1`` for the concepts, ``s`` for the
        origin cluster.
        mu, sigma: concept signals and diversities, shape ``(s,)``.
        x_hat: OOD test point ``Q sum_p mu_p e_p``, shape ``(d,)``.
        corners_v, corners: 0/1 codes ``(2^s, s)`` and points ``(2^s, d)`` of all hypercube corners (rotated).
        Q: the rotation, shape ``(d, d)`` (the identity when ``rotate=False``).
        rotated: whether a random rotation was applied.
    """

    X: np.ndarray
    labels: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    x_hat: np.ndarray
    corners_v: np.ndarray
    corners: np.ndarray
    Q: np.ndarray
    rotated: bool
    origin_cluster: bool = False

    @property
    def d(self) -> int:
        return self.X.shape[1]

    @property
    def s(self) -> int:
        return self.mu.size

    def unrotate(self, Y) -> np.ndarray:
        """Map points (or model outputs) ``Y`` of shape ``(..., d)`` back to concept coordinates: ``Y Q``."""
        return np.asarray(Y) @ self.Q

    def moments(self, empirical: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(m, A)``: population moments (default) or the empirical ones of ``X``."""
        if empirical:
            return empirical_mean(self.X), empirical_second_moment(self.X)
        return population_moments(self.mu, self.sigma, self.d, self.Q, self.origin_cluster)

    def torch(self, dtype=None):
        """``(X, x_hat)`` as torch tensors (default dtype: torch's default)."""
        import torch

        dtype = dtype or torch.get_default_dtype()
        return torch.as_tensor(self.X, dtype=dtype), torch.as_tensor(self.x_hat, dtype=dtype)


def _sample_unrotated(mu_arr, sig, d, n, origin_cluster, rng) -> tuple[np.ndarray, np.ndarray]:
    s = mu_arr.size
    n_clusters = s + (1 if origin_cluster else 0)
    labels = np.repeat(np.arange(n_clusters), n)
    X = np.zeros((n_clusters * n, d))
    X[:, :s] = rng.standard_normal((n_clusters * n, s)) * sig[None, :]
    rows = np.arange(s * n)
    X[rows, labels[: s * n]] += mu_arr[labels[: s * n]]
    return X, labels


def sim_gaussian_mixture(
    mu,
    sigma,
    d: int | None = None,
    n: int = 5000,
    *,
    rotate: bool = False,
    origin_cluster: bool = False,
    seed: int = 0,
    rotation_seed: int | None = None,
) -> SIMData:
    """Sample a SIM training set (Sec. 2.1): ``n`` points from each cluster ``N(mu_p e_p, diag(sigma)^2)``.

    Args:
        mu: signals, shape ``(s,)``; sigma: diversities, scalar or shape ``(s,)``.
        d: input dimension ``>= s`` (default ``s``); n: samples per cluster (paper: 5000).
        rotate: apply one Haar-random rotation ``Q`` to all points (App. F.1).
        origin_cluster: add the optional cluster centred at ``0`` (label ``s``).
        seed: seed of the samples; rotation_seed: seed of ``Q`` (default: ``seed``).

    Returns:
        :class:`SIMData` (``X`` of shape ``(n * (s + origin_cluster), d)``).
    """
    check_bool("rotate", rotate)
    check_bool("origin_cluster", origin_cluster)
    mu_arr, sig, d = as_concepts(mu, sigma, d)
    check_int("n", n, minimum=1)
    check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    X, labels = _sample_unrotated(mu_arr, sig, d, n, origin_cluster, rng)
    Q = random_rotation(d, seed if rotation_seed is None else rotation_seed) if rotate else np.eye(d)
    if rotate:
        X = X @ Q.T
    V, C = hypercube_corners(mu_arr, d, Q if rotate else None)
    return SIMData(
        X=X,
        labels=labels,
        mu=mu_arr,
        sigma=sig,
        x_hat=ood_point(mu_arr, d, Q if rotate else None),
        corners_v=V,
        corners=C,
        Q=Q,
        rotated=bool(rotate),
        origin_cluster=bool(origin_cluster),
    )


def sim_gaussian_mixture_batch(
    mu,
    sigma,
    d: int | None = None,
    n: int = 5000,
    *,
    seeds: Sequence[int] = (0,),
    rotate: bool = False,
    origin_cluster: bool = False,
) -> dict:
    """``K = len(seeds)`` independent SIM training sets at once (one per seed, same ``mu``, ``sigma``).

    Set ``k`` equals ``sim_gaussian_mixture(mu, sigma, d, n, seed=seeds[k], rotate=rotate, ...).X``.

    Returns:
        dict with ``X`` of shape ``(K, N, d)``, ``labels`` ``(N,)`` (the same for every seed), ``Q`` ``(K, d, d)``
        (identities when ``rotate=False``; seed ``k`` uses ``random_rotation(d, seeds[k])``), ``x_hat`` ``(K,
        d)`` (rotated OOD point), ``x_hat0`` ``(d,)`` (concept coordinates), and the ``mu`` and ``sigma`` used.
    """
    check_array("seeds", seeds)
    mu_arr, sig, d = as_concepts(mu, sigma, d)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must contain at least one seed")
    sets = [
        sim_gaussian_mixture(mu_arr, sig, d, n, rotate=rotate, origin_cluster=origin_cluster, seed=sd)
        for sd in seeds
    ]
    return dict(
        X=np.stack([s.X for s in sets]),
        labels=sets[0].labels,
        Q=np.stack([s.Q for s in sets]),
        x_hat=np.stack([s.x_hat for s in sets]),
        x_hat0=ood_point(mu_arr, d),
        mu=mu_arr,
        sigma=sig,
    )


def _check_rotation(Q, d: int) -> None:
    Q = np.asarray(Q)
    if Q.shape != (d, d):
        raise ValueError(f"Q must have shape ({d}, {d}), got {Q.shape}")
    if not np.allclose(Q @ Q.T, np.eye(d), atol=1e-8):
        raise ValueError("Q must be orthogonal (Q Q^T = I)")


def _vec(name, value, length=None) -> np.ndarray:
    arr = check_array(name, value, finite=False, nonempty=False)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a non-empty 1-D finite vector, got {value!r}")
    if length is not None and arr.size != length:
        raise ValueError(f"{name} must have length {length}, got {arr.size}")
    return arr


def second_moment(mu, sigma, d: int) -> np.ndarray:
    """Diagonal ``a`` of the population second moment ``A`` of the SIM data (Eq. 4.1 / C.13).

    ``a_p = sigma_p^2 + mu_p^2 / s`` for ``p <= s = len(mu)`` and ``a_p = 0`` for ``p > s``. Shape ``(d,)``.
    """
    mu = _vec("mu", mu)
    sigma = _vec("sigma", sigma, len(mu))
    s = len(mu)
    check_int("d", d, minimum=s)
    if np.any(mu <= 0) or np.any(sigma < 0):
        raise ValueError(f"mu must be > 0 and sigma >= 0, got mu={mu}, sigma={sigma}")
    a = np.zeros(d)
    a[:s] = sigma**2 + mu**2 / s
    return a


def sim_samples(
    mu, sigma, d: int, n_per_cluster: int, *, rotate: bool = True, seed: int = 0, origin_cluster: bool = False
):
    """SIM training data (Sec. 2.1, App. F.1): clusters ``N(mu_p e_p, diag(sigma)^2)`` (noise in the first
    ``s``
    coordinates only), optionally a cluster at 0, then an optional random rotation ``Q``.

    Returns ``X`` ``(n_clusters * n_per_cluster, d)`` and ``Q`` ``(d, d)`` (``x_rotated = Q x``).
    """
    check_bool("rotate", rotate)
    check_bool("origin_cluster", origin_cluster)
    check_seed("seed", seed)
    mu = _vec("mu", mu)
    sigma = _vec("sigma", sigma, mu.size)
    s = mu.size
    check_int("d", d, minimum=s)
    check_int("n_per_cluster", n_per_cluster, minimum=1)
    rng = np.random.default_rng(seed)
    centres = [mu[p] * np.eye(d)[p] for p in range(s)] + ([np.zeros(d)] if origin_cluster else [])
    X = []
    for c in centres:
        z = np.zeros((n_per_cluster, d))
        z[:, :s] = rng.standard_normal((n_per_cluster, s)) * sigma
        X.append(c + z)
    X = np.concatenate(X)
    if rotate:
        Q, R = np.linalg.qr(rng.standard_normal((d, d)))
        Q = Q * np.sign(np.diag(R))
    else:
        Q = np.eye(d)
    return X @ Q.T, Q
