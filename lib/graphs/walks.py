"""Attributed walk counts on graphs with discrete node features, by dynamic programming.

A walk of length :math:`k` from node :math:`i` is a sequence :math:`(i, i_1, \\dots, i_k)` with
:math:`A_{i i_1}A_{i_1 i_2}\\cdots A_{i_{k-1}i_k}>0` (backtracking allowed). Its attribute sequence is
:math:`(X_{i_1}, \\dots, X_{i_k})` (the start excluded, as in :math:`\\mathcal W_k(G^{[i]};(x_1,\\dots,x_k))` of
Chen's thesis, section 2.5), or :math:`(X_i, X_{i_1}, \\dots, X_{i_k})` with the start included (the labels of the
thesis's Table 2.2). With :math:`\\chi_x=\\mathbf 1\\{X=x\\}` the count obeys the recursion
:math:`c_{j+1}=\\chi_{x_{j+1}}\\odot A c_j` read from the end of the walk,
:math:`|\\mathcal W_k(G^{[i]};(x_1,\\dots,x_k))| =`
:math:`(A\\,\\chi_{x_1}\\odot A\\,\\chi_{x_2}\\odot\\cdots A\\,\\chi_{x_k})_i`.
All counts are exact integers (int64 after an overflow check).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np

from ..config import check_instance, check_int
from .operators import INT64_SAFE, adjacency
from .wl import node_features


def _indicator(rows: list[tuple], value) -> np.ndarray:
    value = tuple(value) if isinstance(value, (tuple, list, np.ndarray)) else (value,)
    return np.array([r == tuple(int(v) for v in value) for r in rows], dtype=np.int64)


def attributed_walk_counts(G, X, pattern: Sequence, *, start=None) -> np.ndarray:
    """Number of walks from every node whose node features follow ``pattern``.

    Args:
        G: networkx graph with nodes ``0..n-1``.
        X: integer node features, shape ``(n, f)`` (None: every node has feature ``(1,)``).
        pattern: the features :math:`(x_1, \\dots, x_k)` of the walk's nodes after the start, each a scalar (for
            ``f = 1``) or a length-``f`` tuple; its length is the walk length ``k >= 0``.
        start: the required feature of the start node, or None (any).

    Returns:
        int64 array of shape ``(n,)``: :math:`|\\mathcal W_k(G^{[i]};(x_1,\\dots,x_k))|`, times
        :math:`\\mathbf 1\\{X_i = \\text{start}\\}` when ``start`` is given.
    """
    check_instance("pattern", pattern, (list, tuple))
    rows = node_features(G, X)
    n = len(rows)
    pattern = list(pattern)
    k = len(pattern)
    A = adjacency(G)
    dmax = int(A.sum(axis=1).max()) if n else 0
    if max(dmax, 1) ** k >= INT64_SAFE:
        raise ValueError(f"pattern: walk length {k} may overflow int64 (max degree {dmax})")
    c = np.ones(n, dtype=np.int64)
    for x in reversed(pattern):
        c = A @ (_indicator(rows, x) * c)
    if start is not None:
        c = _indicator(rows, start) * c
    return np.asarray(c, dtype=np.int64)


def brute_force_walk_counts(G, X, pattern: Sequence, *, start=None) -> np.ndarray:
    """The same counts as :func:`attributed_walk_counts` by enumerating every walk (for tests; small graphs)."""
    check_instance("pattern", pattern, (list, tuple))
    rows = node_features(G, X)
    n = len(rows)
    pattern = [tuple(x) if isinstance(x, (tuple, list)) else (x,) for x in pattern]
    want_start = None if start is None else (tuple(start) if isinstance(start, (tuple, list)) else (start,))
    nbrs = [sorted(G.adj[i]) for i in range(n)]
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        if want_start is not None and rows[i] != want_start:
            continue
        walks = [(i,)]
        for _ in pattern:
            walks = [w + (j,) for w in walks for j in nbrs[w[-1]]]
        out[i] = sum(all(rows[w[s + 1]] == pattern[s] for s in range(len(pattern))) for w in walks)
    return out


def walk_type_counts(G, X, k: int, alphabet: Sequence) -> dict[tuple, np.ndarray]:
    """Counts :math:`|\\mathcal W_k(G^{[i]};\\tau)|` of every attribute sequence :math:`\\tau` of length ``k`` over
    ``alphabet`` (``len(alphabet) ** k`` arrays of shape ``(n,)``)."""
    check_instance("alphabet", alphabet, (list, tuple))
    check_int("k", k, minimum=0)
    return {tau: attributed_walk_counts(G, X, tau) for tau in product(list(alphabet), repeat=k)}
