"""Seeded networkx wrappers and named graphs; every graph returned has nodes ``0..n-1``.

The named graphs are those of L. Chen's thesis, chapter 2 and appendix A: the 14-node pair of Fig 2.1 / A.1
(rebuilt from the neighbourhood lists in the proof of Lemma A.9), the regular pair :math:`C_6`, :math:`K_{3,3}`
(Prop 2.1's normalised-operator case) and the hexagon against two triangles (the :math:`\\min(A^2,1)` remark).
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from ..config import check_bool, check_int, check_range, check_seed

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
    check_int("seed", seed, minimum=0)
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
