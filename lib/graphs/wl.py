"""Exact 1-WL colour refinement (Weisfeiler-Lehman) with one palette shared across graphs, and rooted aggregation
trees.

A round maps the colour :math:`c_i` of every node to the rank of its signature
:math:`(c_i, \\{c_j: j\\in\\mathcal N(i)\\}_m)` (the multiset written as a sorted tuple) among all signatures of
all graphs of the call. No hashing: two nodes of any two graphs get the same colour after :math:`t` rounds iff
their depth-:math:`t` aggregation trees agree, which is the expressive power of a depth-:math:`t` message-passing
GNN (Xu et al. 2019; Eqs 2.1-2.2 of Chen's thesis). The ranks of sorted signatures do not depend on the order of
the graphs in the call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import networkx as nx
import numpy as np

from ..config import check_int


def _check_graph(name: str, G) -> int:
    if not isinstance(G, nx.Graph) or G.is_directed():
        raise ValueError(f"{name} must be an undirected networkx graph, got {type(G).__name__}")
    n = G.number_of_nodes()
    if set(G.nodes) != set(range(n)):
        raise ValueError(f"{name} must have nodes 0..n-1 (use nx.convert_node_labels_to_integers)")
    return n


def node_features(G, X=None) -> list[tuple]:
    """Rows of the integer feature matrix ``X`` (shape ``(n, f)``) as tuples; all ``(1,)`` when ``X`` is None."""
    n = _check_graph("G", G)
    if X is None:
        return [(1,)] * n
    try:
        X = np.asarray(X)
    except (TypeError, ValueError):  # a ragged nested list
        raise ValueError(f"X must be an array of integers, got {type(X).__name__}") from None
    if X.ndim != 2 or X.shape[0] != n:
        raise ValueError(f"X must have shape (n, f) = ({n}, f), got {X.shape}")
    if not (np.issubdtype(X.dtype, np.integer) or X.dtype == object):
        raise ValueError(f"X must hold integers (exact comparisons), got dtype {X.dtype}")
    return [tuple(int(v) for v in row) for row in X]


def _ranks(keys: list) -> dict:
    return {k: r for r, k in enumerate(sorted(set(keys)))}


def wl_colours(graphs: Sequence, features: Sequence | None = None, rounds: int = 3) -> list[list[np.ndarray]]:
    """Colours of every node of every graph after ``0..rounds`` rounds of 1-WL, one palette for all graphs.

    Args:
        graphs: networkx graphs with nodes ``0..n-1``.
        features: one integer array ``(n_g, f)`` per graph (or None: all nodes start with one colour).
        rounds: number of refinement rounds (>= 0).

    Returns:
        ``out[t][g]``: int64 array of shape ``(n_g,)`` with the colours of graph ``g`` after ``t`` rounds.
    """
    check_int("rounds", rounds, minimum=0)
    graphs = list(graphs)
    if features is None:
        features = [None] * len(graphs)
    if len(features) != len(graphs):
        raise ValueError(f"features must hold one array per graph ({len(graphs)}), got {len(features)}")
    rows = [node_features(G, X) for G, X in zip(graphs, features)]
    nbrs = [[list(G.adj[i]) for i in range(G.number_of_nodes())] for G in graphs]
    palette = _ranks([r for rs in rows for r in rs])
    colours = [[palette[r] for r in rs] for rs in rows]
    out = [[np.asarray(c, dtype=np.int64) for c in colours]]
    for _ in range(rounds):
        sigs = [[(c[i], tuple(sorted(c[j] for j in nb[i]))) for i in range(len(c))] for c, nb in zip(colours, nbrs)]
        palette = _ranks([s for ss in sigs for s in ss])
        colours = [[palette[s] for s in ss] for ss in sigs]
        out.append([np.asarray(c, dtype=np.int64) for c in colours])
    return out


def colour_multiset(colours) -> tuple:
    """The multiset of a graph's colours as a sorted tuple of ``(colour, count)``: the graph-level output of a
    GNN with an injective READOUT (Eq. 2.2)."""
    return tuple(sorted(Counter(int(c) for c in np.asarray(colours).ravel()).items()))


def first_separating_round(G1, G2, max_rounds: int = 10, features: Sequence | None = None) -> int | None:
    """The first number of 1-WL rounds after which the colour multisets of ``G1`` and ``G2`` differ, or None if
    they agree for every round up to ``max_rounds``."""
    check_int("max_rounds", max_rounds, minimum=0)
    for name, G in (("G1", G1), ("G2", G2)):
        if not isinstance(G, nx.Graph):
            raise ValueError(f"{name} must be a networkx graph, got {type(G).__name__}")
    hist = wl_colours([G1, G2], features, max_rounds)
    for t, (c1, c2) in enumerate(hist):
        if colour_multiset(c1) != colour_multiset(c2):
            return t
    return None


def aggregation_tree(G, root: int, depth: int, X=None) -> nx.DiGraph:
    """The rooted aggregation (computation) tree of ``root`` unrolled to ``depth`` (Fig 2.2 of Chen's thesis).

    Tree node ``0`` is the root; every tree node ``t`` carries ``node`` (the graph node it maps to), ``depth`` and
    ``x`` (that node's feature tuple), and has one child per neighbour of its graph node (backtracking allowed).
    The tree has :math:`\\sum_k |\\mathcal W_k|` nodes, so keep ``depth`` small on dense graphs.
    """
    n = _check_graph("G", G)
    check_int("root", root, minimum=0, maximum=n - 1)
    check_int("depth", depth, minimum=0)
    feats = node_features(G, X)
    T = nx.DiGraph()
    T.add_node(0, node=root, depth=0, x=feats[root])
    frontier = [0]
    for d in range(1, depth + 1):
        nxt = []
        for t in frontier:
            for j in sorted(G.adj[T.nodes[t]["node"]]):
                k = T.number_of_nodes()
                T.add_node(k, node=j, depth=d, x=feats[j])
                T.add_edge(t, k)
                nxt.append(k)
        frontier = nxt
    return T


def wl_colours_batch(G, labels, rounds: int = 3) -> list[np.ndarray]:
    """1-WL colours of many scalar feature labellings of one graph at once, one palette for the whole batch.

    The vectorised counterpart of :func:`~lib.graphs.wl.wl_colours` for a family of rooted graphs that share
    their topology (e.g.
    all binary labellings of a full :math:`m`-ary tree): nodes are grouped by degree and each round ranks the
    signatures ``(own colour, sorted neighbour colours)`` of a group with ``numpy.unique``. Two (labelling, node)
    pairs get equal colours after ``t`` rounds iff :func:`~lib.graphs.wl.wl_colours` on the corresponding graphs
    gives them equal
    colours (the colour values themselves differ).

    Args:
        G: networkx graph with nodes ``0..n-1``.
        labels: integer array ``(N, n)``: ``N`` labellings of the nodes.
        rounds: number of refinement rounds (>= 0).

    Returns:
        ``out[t]``: int64 array ``(N, n)`` of colours after ``t`` rounds.
    """
    n = _check_graph("G", G)
    check_int("rounds", rounds, minimum=0)
    try:
        labels = np.asarray(labels)
    except (TypeError, ValueError):  # a ragged nested list
        raise ValueError(f"labels must be an array of integers, got {type(labels).__name__}") from None
    if labels.ndim != 2 or labels.shape[1] != n or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be an integer array of shape (N, {n}), got {labels.dtype} {labels.shape}")
    N = labels.shape[0]
    _, inv = np.unique(labels.reshape(-1), return_inverse=True)
    colours = inv.reshape(N, n).astype(np.int64)
    out = [colours]
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(G.degree(i), []).append(i)
    nbrs = {d: np.array([sorted(G.adj[i]) for i in nodes], dtype=np.int64).reshape(len(nodes), d)
            for d, nodes in groups.items()}
    for _ in range(rounds):
        new = np.empty_like(colours)
        offset = 0
        for d in sorted(groups):
            nodes = np.array(groups[d], dtype=np.int64)
            sig = np.concatenate([colours[:, nodes][..., None], np.sort(colours[:, nbrs[d]], axis=-1)], axis=-1)
            uniq, inv = np.unique(sig.reshape(-1, d + 1), axis=0, return_inverse=True)
            new[:, nodes] = inv.reshape(N, len(nodes)) + offset
            offset += len(uniq)
        colours = new
        out.append(colours)
    return out
