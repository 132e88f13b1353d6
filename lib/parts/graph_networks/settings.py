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


# ----------------------------------------------------------------------------------------------- ch. 3: SBM
#: Fig 2.4 and appendix A.11 (Table A.2): community detection on a two-block sparse SBM. Values marked in the
#: comments come from the authors' code (README / config), not the text; None where both are silent.
PAPER_FIG24 = dict(
    n=250,  # code
    blocks=2,
    ab=((4.5, 1.5), (4.73, 1.27), (5.0, 1.0), (5.5, 0.5), (6.0, 0.0)),  # code; hardness ranks 1..5
    edges="fixed count per block (code)",
    input="all-ones",
    K=120,  # searched in {30, 60, 120}
    hidden=10,  # searched in {10, 20}
    kappa=8.0,
    r="sqrt(c), c the mean degree",
    norm="batch norm after each operator, inside the power loop: x_k = BN(M x_{k-1}), one graph per batch (code)",
    lr=1e-3,  # code; text: searched in {0.1, ..., 0.0001}
    clip=40.0,  # code
    n_train=6000,  # code: fresh graphs, one per step, one epoch
    n_test=200,  # code
    sgnn_ops="{I, A, A^2}",
    sgnn_depth=60,
    sgnn_width=None,
    sgnn_norm=None,
    sgnn_lr=(1e-3, 2e-3, 4e-3),
)

#: Table A.2: overlap of GA-MLP-Ã_(1) at hardness ranks 1..5 (the text gives no numbers for Fig 2.4 itself).
PAPER_TABLE_A2 = dict(overlap=(0.128, 0.164, 0.262, 0.707, 0.563))

#: CPU settings of the book (ours): quick mode two SBM settings (SNR 1.33 and 2.08), K = 60, 1000 graphs and an
#: 8-layer sGNN on 800 graphs; full mode the five settings at K = 120 with 6000 graphs and a 20-layer sGNN on
#: 3000 graphs.
SBM_QUICK = dict(ab=((5.0, 1.0), (5.5, 0.5)), K=60, n_train=1000, n_test=100, sgnn_depth=8, sgnn_train=800)
SBM_FULL = dict(ab=PAPER_FIG24["ab"], K=120, n_train=6000, n_test=200, sgnn_depth=20, sgnn_train=3000)


# ------------------------------------------------------------------ chapter 2: rooted graphs (Props 2.3-2.7,
# Fig 2.3, Tables 2.1 and 2.2)

#: Fig 2.3: two full binary depth-2 trees with binary features and per-level blue counts (1, 1, 3); walks with
#: features (1, 1) from the root: 1 and 0.
PAPER_FIG23 = dict(m=2, depth=2, levels=(1, 1, 3), pattern=(1, 1), walks=(1, 0))

#: Lemma A.6 (bound on the number of rooted aggregation trees): (m - 1)^(2^K - 1); the proof's last line prints
#: 2^(K-1). Props 2.3, 2.6 assume at least 2 feature values and m >= 3. Lemma A.7: 2^k - 2^(k-2) <= q_k <= m^k / 2
#: for 2 <= k <= K
#: gives at least 2^(2^(K-1) - 1) trees per GA-MLP class. Prop 2.7's proof: (m - 2) m^(k-1) choices of q_k, each
#: with m^(k-1) + 1 walk counts.
PAPER_TREES = dict(min_features=2, min_m=3, lemma_a6_exponent="2^K - 1", lemma_a7_bound="2^(2^(K-1) - 1)",
                   prop27_classes="(m - 2) m^(k-1)", prop27_values="m^(k-1) + 1")

#: Exact tree enumerations (ours): (m, K) pairs small enough to enumerate all 2^n labellings.
TREE_CASES = ((2, 2), (3, 2), (2, 3))

#: Table 2.1: rooted-graph classes (GNN, GA-MLP) for K = 1..5 on the citation graphs, node features removed.
PAPER_TABLE21 = {
    "Cora": dict(nodes=2708, gnn=(37, 1589, 2301, 2363, 2365), gamlp=(37, 756, 2158, 2359, 2365)),
    "Citeseer": dict(nodes=None, gnn=(31, 984, 1855, 2074, 2122), gamlp=(31, 506, 1550, 2019, 2115)),
    "Pubmed": dict(nodes=None, gnn=(82, 8059, 12814, 12990, 12998), gamlp=(82, 3762, 12014, 12979, 12998)),
}

#: Stand-ins for the citation graphs (not downloadable at run time): same size, similar sparsity.
TABLE21_STANDINS = dict(
    ba=dict(kind="barabasi_albert", n=2708, m=2, seed=0),
    powerlaw_cluster=dict(kind="powerlaw_cluster", n=2708, m=2, p=0.3, seed=0),
    er=dict(kind="erdos_renyi", n=2708, mean_degree=3.9, seed=0),
)

#: Table 2.2: relative MSE (MSE / label variance) for counting all-blue walks (blue = even index).
PAPER_TABLE22 = {
    "GIN": dict(cora=(3.98e-6, 9.72e-7), rrg=(3.39e-5, 2.61e-4)),
    "GA-MLP-A": dict(cora=(1.23e-1, 1.56e-1), rrg=(1.75e-2, 2.13e-2)),
    "GA-MLP-A+": dict(cora=(1.87e-2, 6.44e-2), rrg=(1.69e-2, 2.13e-2)),
    "GA-MLP-A1": dict(cora=(4.22e-1, 5.79e-1), rrg=(1.02e-1, 1.58e-1)),
    "GA-MLP-A1+": dict(cora=(4.00e-1, 5.79e-1), rrg=(1.12e-1, 1.52e-1)),
}

#: The counting task: walk length (steps) and split per graph (authors' code: length 2 on Cora, 3 on the RRG;
#: Cora 500 random even + 500 random odd training nodes, RRG the first 300). Training in the code: 20 000 epochs
#: of 32-node mini-batches, best epoch reported; hidden widths and learning rates below are the README's.
PAPER_COUNTING = dict(
    rrg=dict(n=1000, degree=6, seed=0, length=3, split="first", n_train=300),
    cora=dict(n=2708, length=2, split="parity", n_train=1000),
    code_hparams=dict(rrg=dict(gin=(16, 0.005), gamlp_A=(32, 0.01), gamlp_A_plus=(256, 0.001)),
                      cora=dict(gin=(32, 0.01), gamlp_A=(256, 0.01), gamlp_A_plus=(32, 0.01))),
    epochs=20000, batch=32, reported="best epoch",
)

#: Our CPU training (full-batch Adam with cosine decay, standardised labels and GA-MLP features, last step):
#: (model, operator powers as a multiple of the walk length, hidden width, lr, steps).
COUNTING_MODELS = (
    ("GIN", None, 32, 0.01, 3000),
    ("GA-MLP-A", 1, 32, 0.01, 1000),
    ("GA-MLP-A+", 2, 256, 0.01, 1000),
    ("GA-MLP-A1", 1, 32, 0.01, 1000),
    ("GA-MLP-A1+", 2, 256, 0.01, 1000),
)
#: The Cora stand-in for Table 2.2.
COUNTING_CORA_STANDIN = dict(kind="barabasi_albert", n=2708, m=2, seed=0)
