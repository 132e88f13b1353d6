"""Equivalence classes that GNNs and GA-MLPs induce on the nodes of a graph and on sets of graphs.

Two objects are equivalent for a model family when no model of the family tells them apart (thesis, appendix A.3).
With exact integer features:

* ``model="gnn"``: depth-:math:`K` message-passing GNNs = :math:`K` rounds of 1-WL (:mod:`lib.graphs.wl`);
* ``model="gamlp"``: GA-MLPs with :math:`\\Omega=\\{I, A, \\dots, A^K\\}` and identity :math:`\\varphi` = the distinct
  rows of :math:`[X, AX, \\dots, A^KX]` (Eq. 2.5), computed in exact integer arithmetic.

A graph's class is the multiset of its nodes' keys (an injective READOUT, Eq. 2.2). Since the colour after
:math:`K` rounds of 1-WL determines :math:`(A^kX)_i` for :math:`k\\le K`, GA-MLP classes never outnumber GNN
classes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import networkx as nx
import numpy as np

from ..config import check_in, check_instance, check_int
from .operators import INT64_SAFE, adjacency, propagate
from .wl import node_features, wl_colours

MODELS = ("gnn", "gamlp")


def _features(G, X) -> np.ndarray:
    return np.asarray(node_features(G, X), dtype=np.int64).reshape(G.number_of_nodes(), -1)


def gamlp_features(G, X=None, K: int = 2) -> np.ndarray:
    """Exact GA-MLP features :math:`[X, AX, \\dots, A^KX]` of every node, shape ``(n, (K+1) f)``: int64 when the
    overflow check of :func:`~lib.graphs.operators.propagate` allows it, else Python integers (object dtype)."""
    check_int("K", K, minimum=0)
    X = _features(G, X)
    A = adjacency(G)
    rowsum = int(A.sum(axis=1).max()) if G.number_of_nodes() else 0
    exact = int(np.abs(X).max(initial=0)) * max(rowsum, 1) ** K >= INT64_SAFE
    stack = propagate(A, X.astype(object) if exact else X, K)  # (K+1, n, f)
    return np.concatenate(list(stack), axis=1)


def node_keys(G, X=None, K: int = 2, model: str = "gnn") -> list:
    """One hashable key per node: equal keys iff no model of the family separates the two nodes."""
    check_in("model", model, MODELS)
    check_int("K", K, minimum=0)
    if model == "gnn":
        return [int(c) for c in wl_colours([G], None if X is None else [X], K)[K][0]]
    return [tuple(int(v) for v in row) for row in gamlp_features(G, X, K)]


def equivalence_classes(G, X=None, K: int = 2, model: str = "gnn") -> int:
    """The number of node classes of ``G`` (nodes ``0..n-1``, integer features ``X`` of shape ``(n, f)``, None =
    identical features) induced by depth-``K`` GNNs (``model="gnn"``) or GA-MLPs on ``{I, A, ..., A^K}``
    (``model="gamlp"``)."""
    return len(set(node_keys(G, X, K, model)))


def graph_keys(graphs: Sequence, K: int = 2, model: str = "gnn", features: Sequence | None = None) -> list:
    """One key per graph (the multiset of its node keys): equal keys iff the family cannot separate the graphs.
    WL colours come from one palette shared by all ``graphs``, so keys are comparable across graphs."""
    check_instance("graphs", graphs, (list, tuple))
    check_in("model", model, MODELS)
    check_int("K", K, minimum=0)
    graphs = list(graphs)
    feats = [None] * len(graphs) if features is None else list(features)
    if len(feats) != len(graphs):
        raise ValueError(f"features must hold one array per graph ({len(graphs)}), got {len(feats)}")
    if model == "gnn":
        cols = wl_colours(graphs, feats, K)[K]
        return [tuple(sorted(Counter(c.tolist()).items())) for c in cols]
    return [tuple(sorted(Counter(node_keys(G, X, K, "gamlp")).items())) for G, X in zip(graphs, feats)]


def graph_classes(graphs: Sequence, K: int = 2, model: str = "gnn", features: Sequence | None = None) -> int:
    """The number of classes that depth-``K`` GNNs or GA-MLPs on ``{I, A, ..., A^K}`` induce on ``graphs``
    (the count of Table A.1 of the thesis)."""
    return len(set(graph_keys(graphs, K, model, features)))


def class_sizes(keys: Sequence) -> np.ndarray:
    """Sizes of the classes of a list of keys, largest first."""
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence | np.ndarray):
        raise ValueError(f"keys must be a sequence of hashable keys, got {keys!r}")
    return np.array(sorted(Counter(keys).values(), reverse=True), dtype=np.int64)


def isomorphism_classes(graphs: Sequence, rounds: int = 4) -> list[int]:
    """The isomorphism class of each graph (labels ``0, 1, ...`` in order of first appearance): graphs are bucketed
    by their 1-WL key after ``rounds`` rounds (a necessary condition for isomorphism) and split inside each bucket
    with ``networkx.is_isomorphic``. The ground truth of Table A.1."""
    check_int("rounds", rounds, minimum=0)
    graphs = list(graphs)
    keys = graph_keys(graphs, rounds, "gnn")
    reps: dict = {}
    label = []
    count = 0
    for G, key in zip(graphs, keys):
        for H, lab in reps.get(key, []):
            if nx.is_isomorphic(G, H):
                label.append(lab)
                break
        else:
            reps.setdefault(key, []).append((G, count))
            label.append(count)
            count += 1
    return label
