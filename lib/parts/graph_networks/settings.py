"""Part IV settings: what the thesis states (``PAPER_*``; ``None`` where it is silent) and the CPU stand-ins.

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``.
"""

from __future__ import annotations

#: Fig 2.1 / A.1 and the proof of Prop 2.1 (appendix A.10). The thesis lists the neighbourhoods of nodes 1-10 in
#: the proof of Lemma A.9 (see ``lib.graphs.generators.FIG21_NEIGHBOURS``) and states the depth-2 aggregation
#: trees of nodes 1 and 2 as multisets of their children's degrees. It states no edge count.
PAPER_FIG21 = dict(
    n_nodes=14,
    n_edges=None,
    operators="Omega within {A^k : k in N}",
    wl_rounds_to_separate=2,
    depth2_trees={"G": {1: (3, 2, 2, 1), 2: (3, 2, 2, 1)}, "G'": {1: (2, 2, 2, 2), 2: (3, 3, 1, 1)}},
    typo="Eq. (A.39) writes N(7) = {1, 13}; Eq. (A.46) needs N(7) = {1, 14}",
)

#: Prop 2.1, normalised case: powers of D^-alpha A D^-(1-alpha), alpha in [0, 1], cannot separate regular graphs of
#: equal size and different degree. The thesis names no example pair; C6 / K33 is ours.
PAPER_PROP21 = dict(alpha_range=(0.0, 1.0), example_pair=None)

#: Prop 2.2 and Lemma A.4 (appendix A.5): {D, A D^-alpha_n} in Omega; h_alpha(S) = sum_{u in S} u^-alpha is
#: injective on multisets of at most n integers in [0, n] when alpha > log n / (log n - log(n - 1)); Babai, Erdos
#: and Selkow's algorithm uses r = ceil(3 log n / log 2). No numerical experiment is given for Prop 2.2 beyond
#: Table A.1.
PAPER_PROP22 = dict(alpha_bound="log n / (log n - log(n-1))", babai_r="ceil(3 log n / log 2)", experiment=None)

#: The remark closing section 2.4: with min(A^2, 1) in Omega a GA-MLP separates a hexagon from two triangles,
#: which 1-WL cannot.
PAPER_POWER_GRAPH_REMARK = dict(operator="min(A^2, 1)", pair=("hexagon", "two triangles"))

#: Table A.1: number of graph classes of depth-K GNNs and of GA-MLPs with Omega = {I, A, ..., A^K} on TU data sets
#: with node features removed (K = 1, 2, 3), and the number of isomorphism classes ("ground truth"). The
#: comparison is hash-based in the authors' code.
PAPER_TABLE_A1 = {
    "IMDB-BINARY": dict(graphs=1000, gnn=(51, 537, 537), gamlp=(51, 537, 537), truth=537),
    "IMDB-MULTI": dict(graphs=1500, gnn=(49, 387, 387), gamlp=(49, 387, 387), truth=387),
    "REDDIT-BINARY": dict(graphs=2000, gnn=(781, 1998, 1998), gamlp=(781, 1998, 1998), truth=1998),
    "REDDIT-MULTI-5K": dict(graphs=5000, gnn=(1365, 4999, 4999), gamlp=(1365, 4999, 4999), truth=4999),
    "COLLAB": dict(graphs=5000, gnn=(294, 4080, 4080), gamlp=(294, 4080, 4080), truth=4080),
}
PAPER_TABLE_A1_KS = (1, 2, 3)

#: Stand-in for the TU data sets (not downloadable at run time): all 1252 graphs of networkx's atlas (1-7 nodes,
#: pairwise non-isomorphic, so the ground truth is 1252), and samples of G(n, 1/2) (ours).
ATLAS = dict(max_nodes=7, n_graphs=1252, Ks=(1, 2, 3, 4))
GNP = dict(p=0.5, seed=0)
