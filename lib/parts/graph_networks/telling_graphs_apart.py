"""Chapter IV.1, telling graphs apart: GNNs (1-WL) against GA-MLPs as graph isomorphism tests.

Thesis chapter 2.4 and appendices A.2, A.3, A.5 and A.10: the 14-node pair of Fig 2.1 and Lemma A.9, the regular
pair of Prop 2.1, Lemma A.4 and Prop 2.2, the min(A^2, 1) remark, and the Table A.1 stand-in on the graph atlas.
All comparisons that decide a claim are exact (integers); only the normalised operators use float64.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence

import networkx as nx
import numpy as np

from lib.config import check_array, check_bool, check_in, check_instance, check_int, check_positive, check_seed
from lib.graphs import equivalence, operators, wl

#: Operators of the widget and the separation table: name -> function of the graph.
OPERATORS = {
    "A": lambda G: operators.adjacency(G),
    "D^-1/2 A D^-1/2": lambda G: operators.normalised_adjacency(G, 0.5),
    "A D^-1": lambda G: operators.normalised_adjacency(G, 0.0, 1.0),
    "D^-1 A": lambda G: operators.normalised_adjacency(G, 1.0, 0.0),
}


def walk_counts(G, K: int) -> np.ndarray:
    """:math:`w_k(i)=(A^k\\mathbf 1)_i`, the number of walks of length :math:`k` from :math:`i` (Eq. A.28), for
    :math:`k=0..K`: an exact integer array of shape ``(K+1, n)``."""
    check_int("K", K, minimum=0)
    return equivalence.gamlp_features(G, None, K).T


def lemma_a9_identities(w: np.ndarray) -> dict[str, np.ndarray]:
    """The identities (A.30)-(A.32) of Lemma A.9 for walk counts ``w`` of shape ``(K+1, 14)`` of the graph G of
    Fig 2.1 (thesis node i is column i-1).

    Returns:
        dict with one boolean array ``(K+1,)`` (one entry per k) per identity, keyed by the identity:
        ``(A.30) w(1) = w(2)``, ``(A.31) w(3)+w(9) = w(6)+w(8)`` and ``(A.32) w(5)+w(7) = w(4)+w(10)``.
    """
    check_array("w", w)
    if np.ndim(w) != 2 or np.shape(w)[1] != 14:
        raise ValueError(f"w must have shape (K+1, 14), got {np.shape(w)}")
    c = lambda i: w[:, i - 1]  # noqa: E731
    return {"(A.30) w(1) = w(2)": c(1) == c(2),
            "(A.31) w(3)+w(9) = w(6)+w(8)": c(3) + c(9) == c(6) + c(8),
            "(A.32) w(5)+w(7) = w(4)+w(10)": c(5) + c(7) == c(4) + c(10)}


def depth2_tree(G, node: int) -> tuple[int, ...]:
    """The depth-2 aggregation tree of ``node`` (identical features) as the multiset of its children's degrees,
    sorted in decreasing order (the thesis's notation in appendix A.10)."""
    check_instance("G", G, nx.Graph)
    check_int("node", node, minimum=0, maximum=G.number_of_nodes() - 1)
    return tuple(sorted((G.degree(j) for j in G.adj[node]), reverse=True))


def operator_stack(G, operator: str, K: int) -> np.ndarray:
    """:math:`[\\mathbf 1, \\omega\\mathbf 1, \\dots, \\omega^K\\mathbf 1]` for one of :data:`OPERATORS`, float64,
    shape ``(K+1, n)``."""
    check_in("operator", operator, OPERATORS)
    return operators.propagate(OPERATORS[operator](G).astype(np.float64), np.ones(G.number_of_nodes()), K)[:, :, 0]


def multiset_gap(rows1: np.ndarray, rows2: np.ndarray, decimals: int = 9) -> float:
    """Largest entry-wise difference between two multisets of feature rows (each ``(n, f)``), matched by sorting
    the rows after rounding to ``decimals``; ``inf`` when the sizes differ. 0 means no GA-MLP with these features
    separates the graphs."""
    check_int("decimals", decimals, minimum=-300, maximum=300)
    rows1 = np.atleast_2d(check_array("rows1", rows1))
    rows2 = np.atleast_2d(check_array("rows2", rows2))
    if rows1.shape != rows2.shape:
        return math.inf
    s1 = sorted(map(tuple, np.round(rows1, decimals)))
    s2 = sorted(map(tuple, np.round(rows2, decimals)))
    return float(np.max(np.abs(np.array(s1) - np.array(s2)), initial=0.0))


def first_separating_power(G1, G2, operator: str, K: int, tol: float = 1e-9) -> tuple[int | None, float]:
    """The smallest k such that the GA-MLP features :math:`(\\omega^j\\mathbf 1)_{j\\le k}` of the two graphs differ
    as multisets (gap above ``tol``), or None up to ``K``; and the gap at ``K``."""
    check_instance("G1", G1, nx.Graph)
    check_instance("G2", G2, nx.Graph)
    check_positive("tol", tol)
    s1, s2 = operator_stack(G1, operator, K), operator_stack(G2, operator, K)
    first, gap = None, 0.0
    for k in range(K + 1):
        gap = multiset_gap(s1[: k + 1].T, s2[: k + 1].T)
        if first is None and gap > tol:
            first = k
    return first, gap


# ---------------------------------------------------------------------------------------------- Lemma A.4, Prop 2.2


def alpha_bound(n: int) -> float:
    """Lemma A.4's threshold :math:`\\log n/(\\log n-\\log(n-1))` (``n >= 2``)."""
    check_int("n", n, minimum=2)
    return math.log(n) / (math.log(n) - math.log(n - 1))


def lemma_a4_collisions(n: int, alpha: int) -> int:
    """Number of multisets of at most ``n`` integers in ``1..n`` whose value of
    :math:`h_\\alpha(S)=\\sum_{u\\in S}u^{-\\alpha}` is shared with another one (0 = injective), computed exactly:
    ``alpha`` is an integer and every value is scaled by :math:`\\mathrm{lcm}(1..n)^\\alpha`."""
    check_int("n", n, minimum=1, maximum=10)
    check_int("alpha", alpha, minimum=1)
    scale = math.lcm(*range(1, n + 1)) ** alpha
    unit = {u: scale // u**alpha for u in range(1, n + 1)}
    values = Counter(sum(unit[u] for u in S) for size in range(n + 1)
                     for S in itertools.combinations_with_replacement(range(1, n + 1), size))
    return sum(c for c in values.values() if c > 1)


def smallest_injective_alpha(n: int, max_alpha: int = 64) -> int | None:
    """The smallest integer :math:`\\alpha` for which :math:`h_\\alpha` is injective on multisets of at most ``n``
    integers in ``1..n`` (None if above ``max_alpha``)."""
    check_int("max_alpha", max_alpha, minimum=1)
    return next((a for a in range(1, max_alpha + 1) if lemma_a4_collisions(n, a) == 0), None)


def prop22_keys(graphs: Sequence, alpha: int) -> list:
    """Graph keys of the GA-MLP with :math:`\\Omega=\\{D, AD^{-\\alpha}\\}` on constant features: the multiset of
    node rows :math:`(d_i, \\sum_{j\\in\\mathcal N(i)} d_j^{-\\alpha})` (Eqs. A.9-A.10), exact (integer ``alpha``,
    sums scaled by :math:`\\mathrm{lcm}(1..n-1)^\\alpha`). Equal keys iff no such GA-MLP separates the graphs."""
    check_instance("graphs", graphs, (list, tuple))
    if not graphs:
        raise ValueError("graphs must hold at least one graph")
    check_int("alpha", alpha, minimum=0)
    keys = []
    for G in graphs:
        d = operators.degrees(G)
        scale = math.lcm(*range(1, max(int(d.max(initial=1)), 1) + 1)) ** alpha
        rows = [(int(d[i]), sum(scale // int(d[j]) ** alpha for j in G.adj[i])) for i in range(len(d))]
        keys.append((scale, tuple(sorted(rows))) if rows else (1, ()))
    # keys of graphs with different degree maxima use different scales: compare on a common scale
    common = math.lcm(*(k[0] for k in keys)) if keys else 1
    return [tuple(sorted((d, s * (common // sc)) for d, s in rows)) for sc, rows in keys]


def algorithm1_rank(n: int) -> int:
    """The rank :math:`r=\\lfloor 3\\log n/\\log 2\\rfloor` of Algorithm 1 (Lemma A.5); it needs :math:`r\\le n`."""
    check_int("n", n, minimum=2)
    return math.floor(3 * math.log2(n))


def algorithm1_keys(graphs: Sequence) -> list:
    """Algorithm 1 of the thesis (Babai, Erdős and Selkow's identifier, quoted in Lemma A.5): with :math:`\\bar d`
    the :math:`r`-th largest degree (:func:`algorithm1_rank`), each node gets the multiset
    :math:`\\gamma_i=\\{d_j: j\\in\\mathcal N(i), d_j>\\bar d\\}` and the graph the multiset
    :math:`F(G)=\\{\\gamma_i\\}`. Isomorphic graphs get equal keys; Lemma A.5 says that almost all graphs get a key
    no non-isomorphic graph shares. Every graph needs :math:`r\\le n` (``n >= 10``)."""
    check_instance("graphs", graphs, (list, tuple))
    if not graphs:
        raise ValueError("graphs must hold at least one graph")
    keys = []
    for G in graphs:
        n = G.number_of_nodes()
        r = algorithm1_rank(max(n, 2))
        if r > n:
            raise ValueError(f"graphs must have at least r = floor(3 log2 n) nodes (n >= 10), got n = {n}")
        d = operators.degrees(G)
        dbar = int(np.sort(d)[::-1][r - 1])
        gammas = [tuple(sorted(int(d[j]) for j in G.adj[i] if d[j] > dbar)) for i in range(n)]
        keys.append(tuple(sorted(gammas)))
    return keys


def class_counts(graphs: Sequence, Ks: Sequence[int], *, alpha: int | None = None,
                 algorithm1: bool = False) -> dict:
    """Graph classes of ``graphs`` under isomorphism and under each model.

    Returns:
        dict of class counts: ``graphs`` (how many graphs), ``truth`` (isomorphism classes), ``gnn`` and
        ``gamlp`` (dicts ``{K: classes}`` for each K in ``Ks``), ``prop22`` (the GA-MLP on
        :math:`\\{D, AD^{-\\alpha}\\}`) when ``alpha`` is given, ``alg1`` (the keys of :func:`algorithm1_keys`)
        when ``algorithm1``; and ``exact_fraction`` (a dict ``{(model, K): share}``: the share of graphs whose
        class holds only graphs isomorphic to them).
    """
    check_bool("algorithm1", algorithm1)
    graphs = list(graphs)
    if isinstance(Ks, (str, bytes)) or not hasattr(Ks, "__iter__"):
        raise ValueError(f"Ks must be a sequence of integers, got {Ks!r}")
    if len(Ks) == 0:
        raise ValueError("Ks must hold at least one depth")
    for K in Ks:
        check_int("Ks", K, minimum=0)
    truth = equivalence.isomorphism_classes(graphs)
    out = {"graphs": len(graphs), "truth": len(set(truth)), "gnn": {}, "gamlp": {}, "exact_fraction": {}}

    def exact_fraction(keys):
        members: dict = {}
        for k, t in zip(keys, truth):
            members.setdefault(k, set()).add(t)
        return float(np.mean([len(members[k]) == 1 for k in keys])) if keys else 1.0

    for K in Ks:
        for model in ("gnn", "gamlp"):
            keys = equivalence.graph_keys(graphs, K, model)
            out[model][K] = len(set(keys))
            out["exact_fraction"][(model, K)] = exact_fraction(keys)
    if alpha is not None:
        keys = prop22_keys(graphs, alpha)
        out["prop22"] = len(set(keys))
        out["exact_fraction"][("prop22", alpha)] = exact_fraction(keys)
    if algorithm1:
        keys = algorithm1_keys(graphs)
        out["alg1"] = len(set(keys))
        out["exact_fraction"][("alg1", 0)] = exact_fraction(keys)
    return out


def shared_classes(graphs: Sequence, K: int, model: str = "gnn") -> list[list[int]]:
    """Indices of the graphs that share a class with another graph after depth ``K`` (the WL-hard groups)."""
    check_instance("graphs", graphs, (list, tuple))
    keys = equivalence.graph_keys(list(graphs), K, model)
    groups: dict = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


# ---------------------------------------------------------------------------------------------- the min(A^2,1) remark


def word_features(G, ops: dict, max_len: int) -> dict[tuple, tuple]:
    """For every word :math:`w=(o_1,\\dots,o_l)`, ``l <= max_len``, over the integer operators ``ops`` (name ->
    sparse matrix of ``G``), the exact vector :math:`o_1\\cdots o_l\\mathbf 1` as a tuple: the features of a GA-MLP
    whose :math:`\\Omega` holds all these products."""
    check_instance("G", G, nx.Graph)
    check_instance("ops", ops, dict)
    check_int("max_len", max_len, minimum=0)
    n = G.number_of_nodes()
    out = {(): tuple([1] * n)}
    frontier = {(): np.ones(n, dtype=np.int64)}
    for _ in range(max_len):
        nxt = {}
        for word, vec in frontier.items():
            for name, M in ops.items():
                nxt[(name, *word)] = np.asarray(M @ vec, dtype=np.int64)
        out.update({w: tuple(int(x) for x in v) for w, v in nxt.items()})
        frontier = nxt
    return out


def power_graph_check(G1, G2, operator_sets: dict, max_len: int = 3) -> dict[str, bool]:
    """For each named operator set (name -> function ``G -> {op name: sparse int matrix}``): do the GA-MLP
    features of all words up to ``max_len`` separate ``G1`` and ``G2`` (multisets of node rows differ)?"""
    check_instance("G1", G1, nx.Graph)
    check_instance("G2", G2, nx.Graph)
    check_instance("operator_sets", operator_sets, dict)
    out = {}
    for name, build in operator_sets.items():
        rows = []
        for G in (G1, G2):
            feats = word_features(G, build(G), max_len)
            words = sorted(feats)
            rows.append(sorted(tuple(feats[w][i] for w in words) for i in range(G.number_of_nodes())))
        out[name] = rows[0] != rows[1]
    return out


# ---------------------------------------------------------------------------------------------- drawing


def layout(G, seed: int = 0) -> dict:
    """A fixed drawing position per node (Kamada-Kawai from a seeded spring start)."""
    check_seed("seed", seed)
    if not isinstance(G, nx.Graph):
        raise ValueError(f"G must be a networkx graph, got {type(G).__name__}")
    return nx.kamada_kawai_layout(G, pos=nx.spring_layout(G, seed=seed))


def draw_values(ax, G, pos, values, *, cmap="viridis", vmin=None, vmax=None, labels=None, categorical=False,
                node_size=260, font_size=7):
    """Draw ``G`` at ``pos`` with node colours from ``values`` (a colour map, or ``tab20`` categories when
    ``categorical``) and node ``labels`` (default: thesis numbering 1..n). Returns the node collection."""
    from matplotlib.axes import Axes
    check_instance("ax", ax, Axes)
    check_instance("G", G, nx.Graph)
    check_array("values", values, finite="some")
    check_positive("node_size", node_size)
    check_positive("font_size", font_size)
    check_bool("categorical", categorical)
    import matplotlib.pyplot as plt

    values = np.asarray(values)
    if categorical:
        cm = plt.get_cmap("tab20")
        colours = [cm(int(v) % 20) for v in values]
        kw = {}
    else:
        colours, kw = values.astype(float), dict(cmap=cmap, vmin=vmin, vmax=vmax)
    nx.draw_networkx_edges(G, pos, ax=ax, width=1.0, edge_color="0.55")
    coll = nx.draw_networkx_nodes(G, pos, ax=ax, node_color=colours, node_size=node_size, edgecolors="0.2",
                                  linewidths=0.6, **kw)
    labels = {i: str(i + 1) for i in G.nodes} if labels is None else labels
    nx.draw_networkx_labels(G, pos, labels=labels, ax=ax, font_size=font_size)
    ax.set_axis_off()
    return coll


def wl_palette_colours(graphs: Sequence, rounds: int) -> list[np.ndarray]:
    """WL colours of ``graphs`` after ``rounds`` rounds, one shared palette (for drawing)."""
    check_instance("graphs", graphs, (list, tuple))
    if not graphs:
        raise ValueError("graphs must hold at least one graph")
    check_int("rounds", rounds, minimum=0)
    return wl.wl_colours(list(graphs), None, rounds)[rounds]
