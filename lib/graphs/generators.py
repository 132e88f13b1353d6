"""Seeded networkx wrappers and named graphs; every graph returned has nodes ``0..n-1``.

The named graphs are those of L. Chen's thesis, chapter 2 and appendix A: the 14-node pair of Fig 2.1 / A.1
(rebuilt from the neighbourhood lists in the proof of Lemma A.9), the regular pair :math:`C_6`, :math:`K_{3,3}`
(Prop 2.1's normalised-operator case) and the hexagon against two triangles (the :math:`\\min(A^2,1)` remark).
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from ..config import check_bool, check_instance, check_int, check_range, check_seed

#: Neighbourhoods of nodes 1-10 in the two graphs of Fig 2.1 / A.1, as listed in the proof of Lemma A.9 (thesis
#: numbering 1..14). Nodes 11-14 have the same neighbourhoods in both graphs, which these lists imply. The proof's
#: Eq. (A.39) writes N(7) = {1, 13}; Eq. (A.46) only holds with N(7) = {1, 14}, which is used here.
FIG21_NEIGHBOURS = {
    "G": {1: (3, 5, 7, 9), 2: (4, 6, 8, 10), 3: (1, 11, 12), 4: (2, 13, 14), 5: (1, 13), 6: (2, 11), 7: (1, 14),
          8: (2, 12), 9: (1,), 10: (2,)},
    "G'": {1: (5, 6, 7, 8), 2: (3, 4, 9, 10), 3: (2, 11, 12), 4: (2, 13, 14), 5: (1, 13), 6: (1, 11), 7: (1, 14),
           8: (1, 12), 9: (2,), 10: (2,)},
}


def from_neighbourhoods(neighbours: dict[int, tuple], n: int, *, first_label: int = 1) -> nx.Graph:
    """The undirected graph on ``n`` nodes with the given neighbourhood lists (labels ``first_label..``), relabelled
    to ``0..n-1``; each node keeps its original label in the attribute ``"label"``. Raises ``ValueError`` when a
    label is out of range or the lists disagree with each other (``j in N(i)`` but ``i`` not in a listed ``N(j)``)."""
    check_instance("neighbours", neighbours, dict)
    check_int("first_label", first_label, minimum=0)
    check_int("n", n, minimum=1)
    G = nx.Graph()
    G.add_nodes_from(range(n))
    for i in range(n):
        G.nodes[i]["label"] = i + first_label
    for i, nbrs in neighbours.items():
        for j in (i, *nbrs):
            if not first_label <= j < first_label + n:
                raise ValueError(f"neighbours: label {j} outside [{first_label}, {first_label + n - 1}]")
        for j in nbrs:
            if j in neighbours and i not in neighbours[j]:
                raise ValueError(f"neighbours: {j} is listed in N({i}) but {i} is not in N({j})")
            G.add_edge(i - first_label, j - first_label)
    return G


def fig21_pair(*, typo: bool = False) -> tuple[nx.Graph, nx.Graph]:
    """The two 14-node graphs ``(G, G')`` of Fig 2.1 / A.1 (thesis node ``i`` is node ``i - 1`` here).

    With ``typo=True`` node 7 is joined to 13 instead of 14 in both graphs, as Eq. (A.39) of the proof reads."""
    check_bool("typo", typo)
    pair = []
    for key in ("G", "G'"):
        nbrs = dict(FIG21_NEIGHBOURS[key])
        if typo:
            nbrs[7] = (1, 13)
        pair.append(from_neighbourhoods(nbrs, 14))
    return pair[0], pair[1]


def regular_pair() -> tuple[nx.Graph, nx.Graph]:
    """:math:`C_6` (2-regular) and :math:`K_{3,3}` (3-regular): six nodes each, different degrees."""
    return nx.cycle_graph(6), nx.complete_bipartite_graph(3, 3)


def hexagon_and_triangles() -> tuple[nx.Graph, nx.Graph]:
    """The hexagon :math:`C_6` and two disjoint triangles :math:`2C_3`: both 2-regular on six nodes."""
    return nx.cycle_graph(6), nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3))


def graph_atlas(max_nodes: int = 7, *, min_nodes: int = 1) -> list[nx.Graph]:
    """All graphs of networkx's atlas with ``min_nodes..max_nodes`` nodes (1252 graphs for 1..7), pairwise
    non-isomorphic, in the atlas order (by nodes, then edges, then degree sequence)."""
    check_int("max_nodes", max_nodes, minimum=1, maximum=7)
    check_int("min_nodes", min_nodes, minimum=0, maximum=max_nodes)
    return [G for G in nx.graph_atlas_g() if min_nodes <= G.number_of_nodes() <= max_nodes]


def gnp_graphs(n: int, p: float, count: int, seed: int = 0) -> list[nx.Graph]:
    """``count`` independent Erdos-Renyi graphs :math:`G(n, p)`, reproducible from ``seed``."""
    check_int("n", n, minimum=1)
    check_range("p", p, 0.0, 1.0)
    check_int("count", count, minimum=0)
    check_seed("seed", seed)
    seeds = np.random.SeedSequence(seed).generate_state(count) if count else []
    return [nx.gnp_random_graph(n, p, seed=int(s)) for s in seeds]


def random_regular(d: int, n: int, seed: int = 0) -> nx.Graph:
    """A random ``d``-regular graph on ``n`` nodes (``n * d`` even), reproducible from ``seed``."""
    check_int("d", d, minimum=0)
    check_int("n", n, minimum=d + 1)
    check_seed("seed", seed)
    if (n * d) % 2:
        raise ValueError(f"n * d must be even, got n={n}, d={d}")
    return nx.random_regular_graph(d, n, seed=seed)


def barabasi_albert(n: int, m: int, seed: int = 0) -> nx.Graph:
    """Barabasi-Albert preferential attachment graph on ``n`` nodes, ``m`` edges per new node, reproducible from
    ``seed`` (``networkx.barabasi_albert_graph``)."""
    check_int("m", m, minimum=1)
    check_int("n", n, minimum=m + 1)
    check_seed("seed", seed)
    return nx.barabasi_albert_graph(n, m, seed=seed)


def powerlaw_cluster(n: int, m: int, p: float, seed: int = 0) -> nx.Graph:
    """Holme-Kim powerlaw-cluster graph (preferential attachment plus a triangle step with probability ``p``),
    reproducible from ``seed`` (``networkx.powerlaw_cluster_graph``)."""
    check_int("m", m, minimum=1)
    check_int("n", n, minimum=m + 1)
    check_range("p", p, 0.0, 1.0)
    check_seed("seed", seed)
    return nx.powerlaw_cluster_graph(n, m, p, seed=seed)


def erdos_renyi_mean_degree(n: int, mean_degree: float, seed: int = 0) -> nx.Graph:
    """Erdos-Renyi graph :math:`G(n, p)` with :math:`p = c/(n-1)` for mean degree ``c``, reproducible from
    ``seed``."""
    check_int("n", n, minimum=2)
    check_range("mean_degree", mean_degree, 0.0, n - 1)
    check_seed("seed", seed)
    return nx.gnp_random_graph(n, mean_degree / (n - 1), seed=seed)


def full_mary_tree(m: int, depth: int) -> nx.Graph:
    """The full ``m``-ary rooted tree of the given ``depth`` (every non-leaf node has ``m`` children), nodes
    numbered breadth-first: the root is 0 and level ``k`` holds nodes :math:`(m^k-1)/(m-1)` onwards (for
    ``m = 1``, a path). Each node carries its ``"level"``."""
    check_int("m", m, minimum=1)
    check_int("depth", depth, minimum=0)
    G = nx.Graph()
    G.add_node(0, level=0)
    frontier, nxt_id = [0], 1
    for level in range(1, depth + 1):
        nxt = []
        for parent in frontier:
            for _ in range(m):
                G.add_node(nxt_id, level=level)
                G.add_edge(parent, nxt_id)
                nxt.append(nxt_id)
                nxt_id += 1
        frontier = nxt
    return G


def tree_labellings(m: int, depth: int, *, count: int | None = None, seed: int = 0) -> np.ndarray:
    """Binary feature labellings of :func:`full_mary_tree` ``(m, depth)``, shape ``(N, n)`` (int64, 0 or 1).

    ``count=None`` returns all :math:`2^n` labellings (row ``r`` is the binary expansion of ``r``; at most
    :math:`2^{22}`); otherwise ``count`` independent uniform labellings reproducible from ``seed``."""
    check_int("m", m, minimum=1)
    check_int("depth", depth, minimum=0)
    n = full_mary_tree(m, depth).number_of_nodes()
    if count is None:
        if n > 22:
            raise ValueError(f"(m, depth) = ({m}, {depth}) has {n} nodes; all 2^n labellings need n <= 22")
        r = np.arange(2**n, dtype=np.int64)
        return (r[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1
    check_int("count", count, minimum=0)
    check_seed("seed", seed)
    return np.random.default_rng(seed).integers(0, 2, size=(count, n), dtype=np.int64)


def fig23_pair() -> tuple[nx.Graph, np.ndarray, np.ndarray]:
    """The two rooted trees of Fig 2.3 of Chen's thesis: one full binary tree of depth 2 (root 0, children 1, 2,
    leaves 3, 4 under 1 and 5, 6 under 2) with two feature labellings ``X``, ``X'`` of shape ``(7, 1)``
    (0 = blue, 1 = green). Both have the root and one child blue, the other child green and one green leaf
    (per-level counts of blue nodes :math:`(1, 1, 3)`); the green leaf hangs under the green child in ``X`` and
    under the blue child in ``X'``."""
    T = full_mary_tree(2, 2)
    X = np.array([0, 0, 1, 0, 0, 1, 0], dtype=np.int64)[:, None]
    Xp = np.array([0, 0, 1, 1, 0, 0, 0], dtype=np.int64)[:, None]
    return T, X, Xp


# ----------------------------------------------------------------------------------------------- binary SBM
def _sbm_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    iu, ju = np.triu_indices(n, k=1)
    return iu.astype(np.int64), ju.astype(np.int64)


def binary_sbm_edges(n: int, a: float, b: float, count: int, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """``count`` independent two-block sparse SBM graphs on ``n`` nodes, as edge lists with block labels.

    Each graph gets a uniformly random balanced labelling (``n // 2`` nodes in block 0, the rest in block 1);
    every pair ``i < j`` is then an edge independently with probability ``a / n`` inside a block and ``b / n``
    across (plain Bernoulli edges, no self-loops, no multi-edges). The mean degree is about ``(a + b) / 2``.

    Args:
        n: number of nodes (>= 2).
        a, b: within- and across-block connectivities, in ``[0, n]``.
        count: number of graphs (>= 0).
        seed: seed of the NumPy generator (>= 0); equal seeds give identical graphs.

    Returns:
        ``(edges, labels)``: a list of ``count`` int64 arrays of shape ``(2, m_g)`` (each undirected edge once,
        ``i < j``) and an int64 array of shape ``(count, n)`` of block labels in ``{0, 1}``.
    """
    check_int("n", n, minimum=2)
    check_range("a", a, 0.0, float(n))
    check_range("b", b, 0.0, float(n))
    check_int("count", count, minimum=0)
    check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    iu, ju = _sbm_pairs(n)
    base = np.repeat([0, 1], [n // 2, n - n // 2]).astype(np.int64)
    labels = np.empty((count, n), dtype=np.int64)
    edges = []
    for g in range(count):
        lab = rng.permutation(base)
        p = np.where(lab[iu] == lab[ju], a / n, b / n)
        keep = rng.random(iu.size) < p
        labels[g] = lab
        edges.append(np.stack([iu[keep], ju[keep]]))
    return edges, labels


def binary_sbm(n: int, a: float, b: float, seed: int = 0) -> tuple[nx.Graph, np.ndarray]:
    """One two-block sparse SBM graph (see :func:`binary_sbm_edges`) as a networkx graph with nodes ``0..n-1``
    and node attribute ``"block"``, and its int64 label array of shape ``(n,)``."""
    edges, labels = binary_sbm_edges(n, a, b, 1, seed)
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from(map(tuple, edges[0].T.tolist()))
    nx.set_node_attributes(G, {i: int(labels[0, i]) for i in range(n)}, "block")
    return G, labels[0]
