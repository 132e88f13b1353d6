"""Degree-group random graphs, sparse normalised adjacency and graph topology samplers.

The objects of H. Li's thesis, chapter 5 (Li et al., ICML 2022): a graph with ``L`` degree groups (group ``l`` has
``N_l`` nodes of degree about ``d_l``), its normalised adjacency :math:`A = D^{-1/2}(\\mathrm{adj}+I)D^{-1/2}`,
the group-wise node sampler of Section 5.3.2 (:class:`GroupSampler`: keep ``S_l`` of the ``N_l`` nodes of group
``l`` uniformly, :math:`P^s_{ii} = p^*_l N_l / S_l` on a kept node, :math:`A^s = A P^s`), its effective adjacency
:math:`A^* = A P^*` (5.6)-(5.7) with :math:`\\mathbb E[A^s] = A^*`, the group factor :math:`\\psi_l` of (5.9), and
FastGCN's layer-wise importance sampler (Chen et al., 2018) as :class:`FastGCNSampler`.

Every sparse matrix is a coalesced ``torch.sparse_coo_tensor`` (float32 unless asked), built with
``check_invariants=True``. Samplers keep the sparsity pattern of ``A`` and rescale its values (a dropped column
holds explicit zeros), so a sampled matrix costs one elementwise product.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import torch

from ..config import check_array, check_in, check_int, check_range, check_seed
from .operators import augmented_adjacency

__all__ = [
    "degree_group_graph",
    "gcn_adjacency",
    "column_scale",
    "effective_adjacency",
    "inf_norm",
    "group_psi",
    "GroupSampler",
    "FastGCNSampler",
    "sampler_by_name",
]


def degree_group_graph(sizes, degrees, seed: int = 0):
    """A random simple graph with degree groups, by the configuration model.

    Node ``i`` of group ``l`` gets ``degrees[l]`` half-edges; the half-edges are paired uniformly at random, and
    self-loops and repeated edges are dropped (so degrees are *about* ``d_l``, as in Section 5.4). Groups are laid
    out in order: nodes ``0..N_1-1`` form group 0, and so on.

    Args:
        sizes: group sizes ``(N_1, ..., N_L)``, each >= 1.
        degrees: target degrees ``(d_1, ..., d_L)``, each >= 0, one per group.
        seed: NumPy seed of the pairing.

    Returns:
        ``(edges, groups)``: ``edges`` an int64 array of shape (E, 2) with ``i < j`` per row (each undirected edge
        once), ``groups`` an int64 array of shape (N,) with the group of each node.
    """
    for name, value in (("sizes", sizes), ("degrees", degrees)):
        check_array(name, value)
    sizes, degrees = list(sizes), list(degrees)
    if len(sizes) == 0 or len(sizes) != len(degrees):
        raise ValueError(f"sizes and degrees must be non-empty and of equal length, got {len(sizes)}, {len(degrees)}")
    for s in sizes:
        check_int("sizes", s, minimum=1)
    for d in degrees:
        check_int("degrees", d, minimum=0)
    check_seed("seed", seed)
    groups = np.repeat(np.arange(len(sizes)), sizes).astype(np.int64)
    n = len(groups)
    for d in degrees:
        if d >= n:
            raise ValueError(f"degrees must be < the number of nodes {n}, got {d}")
    stubs = np.repeat(np.arange(n), np.asarray(degrees)[groups])
    rng = np.random.default_rng(seed)
    rng.shuffle(stubs)
    if len(stubs) % 2:
        stubs = stubs[:-1]
    pairs = stubs.reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    pairs = np.sort(pairs, axis=1)
    edges = np.unique(pairs, axis=0) if len(pairs) else np.zeros((0, 2), dtype=np.int64)
    return edges.astype(np.int64), groups


def gcn_adjacency(edges, n: int, *, dtype=torch.float32) -> torch.Tensor:
    """The GCN aggregation :math:`A = D^{-1/2}(\\mathrm{adj}+I)D^{-1/2}` as a sparse torch tensor.

    :math:`D_{ii} = \\sum_j (\\mathrm{adj}+I)_{ij}` counts the self-loop. This is
    :func:`lib.graphs.operators.augmented_adjacency` with :math:`\\epsilon = 1`, converted for torch.

    Args:
        edges: int array (E, 2) of undirected edges (each once, no self-loops).
        n: number of nodes (>= 1).
        dtype: value dtype.

    Returns:
        A coalesced sparse COO tensor of shape (n, n), symmetric, with the self-loops on the diagonal.
    """
    check_array("edges", edges, nonempty=False)
    check_int("n", n, minimum=1)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edges) and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"edges must hold node indices in [0, {n - 1}]")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError("edges must not contain self-loops (the identity is added here)")
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from(edges.tolist())
    M = augmented_adjacency(G, 1.0).tocoo()
    idx = torch.from_numpy(np.stack([M.row, M.col]).astype(np.int64))
    vals = torch.from_numpy(M.data).to(dtype)
    return torch.sparse_coo_tensor(idx, vals, (n, n), check_invariants=True).coalesce()


def _check_sparse(name: str, A) -> None:
    if not (isinstance(A, torch.Tensor) and A.layout == torch.sparse_coo and A.dim() == 2):
        raise ValueError(f"{name} must be a 2-d sparse COO tensor")


def column_scale(A: torch.Tensor, scale) -> torch.Tensor:
    """:math:`A\\,\\mathrm{diag}(s)`: column ``j`` of the sparse ``A`` times ``scale[j]``; same sparsity pattern.

    Args:
        A: sparse COO tensor (n, n).
        scale: array-like of length n.
    """
    check_array("scale", scale)
    _check_sparse("A", A)
    A = A.coalesce()
    scale = torch.as_tensor(np.asarray(scale), dtype=A.dtype)
    if scale.shape != (A.shape[1],):
        raise ValueError(f"scale must have shape ({A.shape[1]},), got {tuple(scale.shape)}")
    idx = A.indices()
    return torch.sparse_coo_tensor(idx, A.values() * scale[idx[1]], A.shape, check_invariants=True).coalesce()


def _group_vector(groups, values, name: str) -> np.ndarray:
    groups = np.asarray(groups, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    if groups.ndim != 1 or len(groups) == 0 or groups.min() < 0 or groups.max() >= len(values):
        raise ValueError(f"groups must be a 1-d array of group indices in [0, {len(values) - 1}]")
    for v in values:
        check_range(name, v, 0.0, None)
    return values[groups]


def effective_adjacency(A: torch.Tensor, groups, p_star) -> torch.Tensor:
    """The effective adjacency :math:`A^* = A P^*`, :math:`P^*_{ii} = p^*_l` for node ``i`` in group ``l`` (5.6).

    Args:
        A: sparse normalised adjacency (N, N).
        groups: int array (N,) of group indices.
        p_star: ``(p^*_1, ..., p^*_L)``, each >= 0.
    """
    check_array("groups", groups)
    check_array("p_star", p_star)
    return column_scale(A, _group_vector(groups, p_star, "p_star"))


def inf_norm(A: torch.Tensor) -> float:
    """:math:`\\|A\\|_\\infty`, the largest absolute row sum of the sparse (or dense) matrix ``A``."""
    if not isinstance(A, torch.Tensor):
        A = torch.as_tensor(check_array("A", A, ndim=2))
    if A.ndim != 2:
        raise ValueError(f"A must be a 2-d matrix (sparse or dense), got shape {tuple(A.shape)}")
    if isinstance(A, torch.Tensor) and A.is_sparse:
        A = A.coalesce()
        if not torch.isfinite(A.values()).all():
            raise ValueError("A must hold finite entries only")
        sums = torch.zeros(A.shape[0], dtype=torch.float64).index_add_(0, A.indices()[0], A.values().abs().double())
        return float(sums.max())
    if not torch.isfinite(A).all():
        raise ValueError("A must hold finite entries only")
    return float(torch.as_tensor(A).abs().sum(dim=-1).max())


def group_psi(sizes, degrees) -> np.ndarray:
    """:math:`\\psi_l = \\sqrt{d_L d_l}\\,N_l / \\sum_i d_i N_i` of (5.9), :math:`d_L = \\max_l d_l`.

    The bound (5.8) reads :math:`p^*_l \\le c_1/(L\\psi_l)`: a group with a large :math:`\\psi_l` (many nodes,
    large degree) must be shrunk more by the sampler.

    Args:
        sizes: group sizes ``N_l`` (>= 1).
        degrees: group degrees ``d_l`` (> 0 for at least one group).
    """
    sizes, degrees = check_array("sizes", sizes, positive=True), check_array("degrees", degrees)
    if sizes.shape != degrees.shape or sizes.ndim != 1 or len(sizes) == 0:
        raise ValueError("sizes and degrees must be 1-d of equal, non-zero length")
    if np.any(sizes < 1) or np.any(degrees < 0) or not np.any(degrees > 0):
        raise ValueError("sizes must be >= 1 and degrees >= 0 with at least one positive")
    return np.sqrt(degrees.max() * degrees) * sizes / float(np.sum(degrees * sizes))


class GroupSampler:
    """The group-wise node sampler of Section 5.3.2: :math:`A^s = A P^s`.

    In each draw, ``S_l = round(keep * N_l)`` nodes of group ``l`` are kept uniformly without replacement;
    :math:`P^s_{ii} = p^*_l N_l / S_l` on a kept node and 0 otherwise, so :math:`\\mathbb E[P^s] = P^*` and
    :math:`\\mathbb E[A^s] = A^* = A P^*`.

    Args:
        A: sparse normalised adjacency (N, N).
        groups: int array (N,) of group indices.
        p_star: ``(p^*_1, ..., p^*_L)``, each >= 0.
        keep: kept fraction ``S_l / N_l`` in (0, 1] (the thesis's experiments use 0.9).
    """

    def __init__(self, A: torch.Tensor, groups, p_star, keep: float = 0.9):
        check_array("groups", groups)
        check_array("p_star", p_star)
        _check_sparse("A", A)
        check_range("keep", keep, 0.0, 1.0, lo_open=True)
        self.A = A.coalesce()
        self.groups = np.asarray(groups, dtype=np.int64)
        if self.groups.shape != (A.shape[0],):
            raise ValueError(f"groups must have shape ({A.shape[0]},), got {self.groups.shape}")
        self.p_star = np.asarray(p_star, dtype=np.float64)
        _group_vector(self.groups, self.p_star, "p_star")
        self.keep = float(keep)
        self.members = [np.flatnonzero(self.groups == g) for g in range(len(self.p_star))]
        self.kept = [max(1, int(round(self.keep * len(m)))) for m in self.members]

    @property
    def effective(self) -> torch.Tensor:
        """:math:`A^* = A P^*`, the mean of a draw."""
        return effective_adjacency(self.A, self.groups, self.p_star)

    def diagonal(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """One draw of the diagonal of :math:`P^s`, shape (N,)."""
        p = torch.zeros(self.A.shape[0], dtype=self.A.dtype)
        for g, (members, s) in enumerate(zip(self.members, self.kept)):
            if len(members) == 0:
                continue
            pick = torch.randperm(len(members), generator=generator)[:s]
            p[torch.from_numpy(members)[pick]] = self.p_star[g] * len(members) / s
        return p

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """One sampled matrix :math:`A^s = A P^s` (sparse, same pattern as ``A``)."""
        return column_scale(self.A, self.diagonal(generator).numpy())


class FastGCNSampler:
    """FastGCN's layer-wise importance sampling (Chen, Ma and Xiao, 2018): an unbiased estimate of ``A``.

    Draw ``t`` nodes i.i.d. from :math:`q(u) \\propto \\|A_{:,u}\\|^2`; column ``u`` of the estimate is
    :math:`A_{:,u}\\,c_u/(t\\,q(u))` with ``c_u`` the number of times ``u`` was drawn, so its mean is ``A`` itself.

    Args:
        A: sparse normalised adjacency (N, N).
        t: nodes drawn per matrix (>= 1).
    """

    def __init__(self, A: torch.Tensor, t: int):
        _check_sparse("A", A)
        check_int("t", t, minimum=1)
        self.A = A.coalesce()
        self.t = int(t)
        col_sq = torch.zeros(A.shape[1], dtype=torch.float64).index_add_(
            0, self.A.indices()[1], self.A.values().double() ** 2
        )
        self.q = col_sq / col_sq.sum()

    @property
    def effective(self) -> torch.Tensor:
        """The mean of a draw, ``A`` itself (the estimator is unbiased)."""
        return self.A

    def diagonal(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """One draw of the column weights :math:`c_u/(t\\,q(u))`, shape (N,)."""
        draws = torch.multinomial(self.q, self.t, replacement=True, generator=generator)
        counts = torch.bincount(draws, minlength=len(self.q)).double()
        return (counts / (self.t * self.q)).to(self.A.dtype)

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """One sampled matrix (sparse, same pattern as ``A``)."""
        return column_scale(self.A, self.diagonal(generator).numpy())


def sampler_by_name(name: str, A: torch.Tensor, groups, p_star, keep: float = 0.9):
    """``"group"`` -> :class:`GroupSampler` (``p_star``, ``keep``); ``"fastgcn"`` -> :class:`FastGCNSampler` with
    ``t = round(keep * N)`` draws."""
    check_array("groups", groups)
    check_array("p_star", p_star)
    check_in("name", name, ("group", "fastgcn"))
    if name == "group":
        return GroupSampler(A, groups, p_star, keep)
    check_range("keep", keep, 0.0, 1.0, lo_open=True)
    return FastGCNSampler(A, max(1, int(round(keep * A.shape[0]))))
