"""Rooted graphs (section 2.5 and appendices A.6-A.9 of Chen's thesis): how many classes of rooted graphs
depth-:math:`K` GNNs and GA-MLPs tell apart, on full :math:`m`-ary trees (exactly) and on whole graphs (Table 2.1).

* Closed forms (ours, checked against enumeration): on full :math:`m`-ary depth-:math:`K` trees with binary
  features, the root's 1-WL colour takes :math:`c_K` values with :math:`c_0=2`,
  :math:`c_K=2\\binom{c_{K-1}+m-1}{m}` (:func:`gnn_tree_classes`), while the GA-MLP-:math:`A` features
  :math:`((A^kx)_{\\rm root})_{k\\le K}` take :math:`\\prod_{k\\le K}(m^k+1)` values (:func:`gamlp_tree_classes`):
  they only see the number of blue nodes per level.
* :func:`aggregation_tree_count`: the exact size of the set of Lemma A.6, against its bound
  :math:`(m-1)^{2^K-1}`.
* :func:`prop24_class_bound` and :func:`rooted_gamlp_classes`: the class bound of the proof of Prop 2.4 (as printed,
  one short, and corrected) against the GA-MLP classes of every small connected rooted graph.
* :func:`enumerate_trees`: every binary labelling of a full :math:`m`-ary tree with its GNN class (root WL colour),
  GA-MLP class and attributed walk counts, for Props 2.6 and 2.7.
* :func:`product_operator`: the nonlinear equivariant graph operator :math:`\\omega[A](X)=A(X\\odot AX)`, a
  counterexample to Props A.2 and A.3 (it sees which node a green leaf hangs under).
"""

from __future__ import annotations

from itertools import product
from math import comb

import networkx as nx
import numpy as np

from lib.config import check_array, check_bool, check_instance, check_int, check_int_array, check_range
from lib.graphs.equivalence import equivalence_classes
from lib.graphs.generators import full_mary_tree, graph_atlas, tree_labellings
from lib.graphs.operators import adjacency, normalised_adjacency, propagate
from lib.graphs.wl import wl_colours_batch


def gnn_tree_classes(m: int, K: int) -> int:
    """:math:`c_K` with :math:`c_0=2`, :math:`c_K=2\\binom{c_{K-1}+m-1}{m}`: the number of binary-labelled full
    ``m``-ary depth-``K`` rooted trees up to isomorphism (a root feature times a multiset of ``m`` subtrees)."""
    check_int("m", m, minimum=1)
    check_int("K", K, minimum=0)
    c = 2
    for _ in range(K):
        c = 2 * comb(c + m - 1, m)
    return c


def gamlp_tree_classes(m: int, K: int) -> int:
    """:math:`\\prod_{k=0}^K(m^k+1)`: the number of per-level counts of blue nodes of a full ``m``-ary depth-``K``
    tree with binary features."""
    check_int("m", m, minimum=1)
    check_int("K", K, minimum=0)
    out = 1
    for k in range(K + 1):
        out *= m**k + 1
    return out


def aggregation_tree_count(m: int, K: int) -> int:
    """The number of depth-``K`` rooted aggregation trees with binary features in which every non-leaf node has
    exactly ``m`` children (the set :math:`\\mathcal T^A_{m,K,\\{0,1\\}}` of Lemma A.6), counted exactly.

    A non-root, non-leaf node must have a child with its parent's feature (the parent reappears among the
    children when the GNN unrolls a graph). With :math:`N_k(x, p)` the number of valid subtrees of height
    :math:`k` whose root has feature :math:`x` and parent feature :math:`p`, and :math:`U=N_{k-1}(0,x)+N_{k-1}(1,x)`,
    :math:`N_k(x,p)=\\binom{U+m-1}{m}-\\binom{N_{k-1}(1-p,x)+m-1}{m}`; the root has no constraint."""
    check_int("m", m, minimum=1)
    check_int("K", K, minimum=0)
    if K == 0:
        return 2
    N = {(x, p): 1 for x in (0, 1) for p in (0, 1)}  # height 0: leaves
    for _ in range(K - 1):
        N = {(x, p): comb(N[0, x] + N[1, x] + m - 1, m) - comb(N[1 - p, x] + m - 1, m)
             for x in (0, 1) for p in (0, 1)}
    return sum(comb(N[0, x] + N[1, x] + m - 1, m) for x in (0, 1))


def lemma_a6_bound(m: int, K: int) -> int:
    """The lower bound :math:`(m-1)^{2^K-1}` of Lemma A.6 (the last line of its proof prints :math:`2^{K-1}`)."""
    check_int("m", m, minimum=2)
    check_int("K", K, minimum=0)
    return (m - 1) ** (2**K - 1)


def prop24_class_bound(m: int, K: int, n_features: int = 2, *, corrected: bool = False) -> int:
    """The upper bound of the proof of Prop 2.4 (thesis appendix A.7) on the number of classes of rooted graphs
    (degrees at most ``m``, ``n_features`` feature values) induced by GA-MLPs with
    :math:`\\Omega=\\{I,\\tilde A,\\dots,\\tilde A^K\\}`: a product over the operators.

    For :math:`\\tilde A^k`, :math:`k\\ge1`, the proof counts :math:`M_k=|\\mathcal X|\\,m\\,(k+m-2)^{m-1}` walk types
    whose counts add up to at most :math:`m^k` and prints :math:`\\binom{m^k+M_k-1}{M_k}`; ``corrected=True`` gives
    :math:`\\binom{m^k+M_k}{M_k}`, the number of vectors of :math:`M_k` non-negative integers with sum at most
    :math:`m^k`. The identity contributes :math:`|\\mathcal X|` (the root's feature) in both."""
    check_int("m", m, minimum=1)
    check_int("K", K, minimum=0)
    check_int("n_features", n_features, minimum=1)
    check_bool("corrected", corrected)
    out = n_features
    for k in range(1, K + 1):
        M = n_features * m * (k + m - 2) ** (m - 1)
        out *= comb(m**k + M - (0 if corrected else 1), M)
    return out


def rooted_gamlp_classes(m: int, K: int, max_nodes: int, *, alpha: float = 2**-0.5, beta: float = 1 / np.pi,
                         single: bool = False) -> int:
    """The number of classes that GA-MLPs with :math:`\\Omega=\\{I,\\tilde A,\\dots,\\tilde A^K\\}`,
    :math:`\\tilde A=D^{-\\alpha}AD^{-\\beta}`, induce on every rooted graph with binary features whose graph is
    connected, has 2 to ``max_nodes`` nodes (all of networkx's atlas) and degrees at most ``m``: every graph, every
    labelling, every root.

    Two rooted graphs are in one class when :math:`(\\tilde A^k\\varphi(X))_{\\rm root}` agree for every :math:`k\\le K`
    and every :math:`\\varphi`; as these are linear in :math:`\\varphi`, the one-hot :math:`\\varphi` decides. The
    defaults of ``alpha`` and ``beta`` are irrational so that walk types of different degrees weigh differently;
    values are compared after rounding to 9 decimals (a collision there can only merge classes). ``single=True``
    counts the classes of the one operator :math:`\\tilde A^K` instead (the per-operator count of the proof)."""
    check_int("m", m, minimum=1)
    check_int("K", K, minimum=0)
    check_int("max_nodes", max_nodes, minimum=2, maximum=7)
    check_range("alpha", alpha, -10, 10)
    check_range("beta", beta, -10, 10)
    check_bool("single", single)
    keys = set()
    for G in graph_atlas(max_nodes, min_nodes=2):
        if not nx.is_connected(G) or max(d for _, d in G.degree) > m:
            continue
        n = G.number_of_nodes()
        L = np.array(list(product((0, 1), repeat=n)), dtype=np.float64)  # (2^n, n)
        X = np.concatenate([1.0 - L.T, L.T], axis=1)  # (n, 2 * 2^n): one-hot of feature 0, then of 1
        S = propagate(normalised_adjacency(G, alpha, beta), X, K)  # (K+1, n, 2 * 2^n)
        S = np.round(S.reshape(K + 1, n, 2, -1)[K if single else 0:], 9)
        for root in range(n):
            keys.update(map(bytes, np.ascontiguousarray(S[:, root].transpose(2, 0, 1))))
    return len(keys)


def tree_walk_counts(m: int, K: int, labels: np.ndarray, pattern) -> np.ndarray:
    """:math:`|\\mathcal W_k(T^{[\\rm root]};(x_1,\\dots,x_k))|` for every labelling (rows of ``labels``, shape
    ``(N, n)``) of the full ``m``-ary depth-``K`` tree, walks in the tree as a graph (backtracking allowed)."""
    check_array("labels", labels)
    check_array("pattern", pattern)
    check_int("m", m, minimum=1)
    check_int("K", K, minimum=0)  # named here, not as the helper's depth
    T = full_mary_tree(m, K)
    A = adjacency(T)
    labels = np.asarray(labels, dtype=np.int64)
    c = np.ones(labels.shape[::-1], dtype=np.int64)  # (n, N)
    for x in reversed(list(pattern)):
        c = A @ ((labels.T == int(x)) * c)
    return c[0]


def enumerate_trees(m: int, K: int, *, pattern=None) -> dict:
    """Every binary labelling of the full ``m``-ary depth-``K`` tree with its classes at the root.

    Returns:
        dict with ``labels`` (N, n); ``gnn`` (N,) the root's 1-WL colour after ``K`` rounds; ``gamlp`` (N,) the
        index of the distinct root GA-MLP-:math:`A` feature :math:`((A^kx)_{\\rm root})_{k\\le K}`; ``levels``
        (N, K+1) the number of blue (feature 0) nodes per level; ``walks`` (N,) the attributed walk counts of
        ``pattern`` from the root (when given); ``n_gnn``, ``n_gamlp`` the class counts.
    """
    check_int("m", m, minimum=1)
    check_int("K", K, minimum=0)
    T = full_mary_tree(m, K)
    L = tree_labellings(m, K)
    gnn = wl_colours_batch(T, L, K)[K][:, 0]
    stack = propagate(adjacency(T), L.T, K)[:, 0, :].T  # (N, K+1)
    _, gamlp = np.unique(stack, axis=0, return_inverse=True)
    level = np.array([T.nodes[i]["level"] for i in range(T.number_of_nodes())])
    levels = np.stack([(L[:, level == k] == 0).sum(1) for k in range(K + 1)], axis=1)
    out = dict(labels=L, gnn=gnn, gamlp=gamlp.reshape(-1), levels=levels,
               n_gnn=len(np.unique(gnn)), n_gamlp=int(gamlp.max()) + 1)
    if pattern is not None:
        out["walks"] = tree_walk_counts(m, K, L, pattern)
    return out


def product_operator(A, X) -> np.ndarray:
    """:math:`\\omega[A](X)=A(X\\odot AX)`: an equivariant graph operator in the sense of the thesis's appendix A.1
    (:math:`\\omega[PAP^\\top](PX)=P\\,\\omega[A](X)` for every permutation matrix :math:`P`), not of the form
    :math:`m(A)X` of Prop A.1. For a 0/1 feature column it gives at every node the number of walks of length 2
    through two nodes of feature 1: the attributed walk count :math:`|\\mathcal W_2(\\cdot;(1,1))|`.

    Args:
        A: ``(n, n)`` adjacency (dense or scipy sparse); X: ``(n,)`` or ``(n, c)`` node features, or ``(n, N)``
            for ``N`` feature columns at once (the operator acts column by column).

    Returns:
        float64 array of the shape of ``X``.
    """
    check_array("A", A.data if hasattr(A, "tocsr") else A, nonempty=not hasattr(A, "tocsr"))  # sparse too
    check_array("X", X)
    if not hasattr(A, "shape") or len(A.shape) != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square (n, n) matrix, got shape {getattr(A, 'shape', None)}")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim not in (1, 2) or X.shape[0] != A.shape[0]:
        raise ValueError(f"X must have shape (n,) or (n, c) with n = {A.shape[0]}, got {X.shape}")
    return np.asarray(A @ (X * np.asarray(A @ X)))


def per_class_spread(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """For every class of ``outer`` (integer keys, shape (N,)), the number of distinct ``inner`` values in it."""
    check_array("outer", outer)
    check_array("inner", inner)
    pairs = np.unique(np.stack([np.asarray(outer), np.asarray(inner)], axis=1), axis=0)
    _, counts = np.unique(pairs[:, 0], return_counts=True)
    return counts


def rooted_class_counts(G, Ks) -> list[tuple[int, int]]:
    """``[(GNN classes, GA-MLP-A classes)]`` of the nodes of ``G`` (features removed) for every depth in ``Ks``
    (the rows of Table 2.1)."""
    Ks = check_int_array("Ks", Ks, minimum=0)
    return [(equivalence_classes(G, None, int(K), "gnn"), equivalence_classes(G, None, int(K), "gamlp")) for K in Ks]


def tree_layout(T) -> dict:
    """Positions for drawing a rooted tree (root 0 on top, levels from the ``"level"`` attribute or BFS)."""
    check_instance("T", T, nx.Graph)
    depth = nx.single_source_shortest_path_length(T, 0)
    by_level: dict[int, list] = {}
    for v in sorted(T.nodes, key=lambda v: (depth[v], v)):
        by_level.setdefault(depth[v], []).append(v)
    pos = {}
    for d, nodes in by_level.items():
        for j, v in enumerate(nodes):
            pos[v] = ((j + 0.5) / len(nodes), -d)
    return pos


def draw_labelled_tree(ax, T, x, *, colours=("tab:blue", "tab:green"), title: str = "", pos=None) -> None:
    """Draw a rooted tree with nodes coloured by binary features ``x`` (shape (n,) or (n, 1))."""
    from matplotlib.axes import Axes
    check_instance("ax", ax, Axes)
    check_instance("T", T, nx.Graph)
    check_array("x", x)
    x = np.asarray(x).reshape(-1)
    pos = tree_layout(T) if pos is None else pos
    nx.draw_networkx_edges(T, pos, ax=ax, edge_color="0.5")
    nx.draw_networkx_nodes(T, pos, ax=ax, node_color=[colours[int(v)] for v in x], node_size=260,
                           edgecolors="k", linewidths=0.6)
    ax.set_title(title, fontsize=9)
    ax.axis("off")


def draw_graph_rooted(ax, G, root: int, *, title: str = "", pos=None) -> None:
    """Draw a graph with its root node highlighted."""
    from matplotlib.axes import Axes
    check_instance("ax", ax, Axes)
    check_instance("G", G, nx.Graph)
    check_int("root", root, minimum=0)
    pos = nx.circular_layout(G) if pos is None else pos
    nx.draw_networkx_edges(G, pos, ax=ax, edge_color="0.5")
    cols = ["tab:red" if v == root else "0.85" for v in G.nodes]
    nx.draw_networkx_nodes(G, pos, ax=ax, node_color=cols, node_size=200, edgecolors="k", linewidths=0.6)
    nx.draw_networkx_labels(G, pos, ax=ax, labels={v: str(v + 1) for v in G.nodes}, font_size=7)
    ax.set_title(title, fontsize=9)
    ax.axis("off")


def draw_aggregation_tree(ax, T, *, title: str = "") -> None:
    """Draw a rooted aggregation tree from :func:`lib.graphs.wl.aggregation_tree` (labels: the graph nodes)."""
    from matplotlib.axes import Axes
    check_instance("ax", ax, Axes)
    check_instance("T", T, nx.Graph)
    U = T.to_undirected()
    pos = tree_layout(U)
    nx.draw_networkx_edges(U, pos, ax=ax, edge_color="0.5")
    cols = ["tab:red" if t == 0 else "0.85" for t in U.nodes]
    nx.draw_networkx_nodes(U, pos, ax=ax, node_color=cols, node_size=150, edgecolors="k", linewidths=0.6)
    nx.draw_networkx_labels(U, pos, ax=ax, labels={t: str(T.nodes[t]["node"] + 1) for t in U.nodes},
                            font_size=6)
    ax.set_title(title, fontsize=9)
    ax.axis("off")


__all__ = [name for name in dir() if not name.startswith("_") and name not in ("plt", "nx", "np", "comb", "product")]
