"""Unit tests of chapter IV.1 (Chen's thesis, section 2.4 and appendix A: telling graphs apart)."""

import math

import networkx as nx
import numpy as np
import pytest

from lib.graphs import generators, operators
from lib.parts.graph_networks import settings
from lib.parts.graph_networks import telling_graphs_apart as tga


def test_lemma_a9_walk_counts_and_identities():
    G, H = generators.fig21_pair()
    w, w2 = tga.walk_counts(G, 29), tga.walk_counts(H, 29)
    assert np.array_equal(w, w2)
    assert all(v.all() for v in tga.lemma_a9_identities(w).values())
    A = operators.adjacency(G).toarray()
    assert np.array_equal(w[5], np.linalg.matrix_power(A, 5).sum(1))
    with pytest.raises(ValueError, match="w must"):
        tga.lemma_a9_identities(np.zeros((3, 5)))


def test_the_typo_of_eq_a39_breaks_the_lemma():
    G, H = generators.fig21_pair(typo=True)
    assert not np.array_equal(tga.walk_counts(G, 6), tga.walk_counts(H, 6))


def test_depth2_trees_are_the_thesis_multisets():
    G, H = generators.fig21_pair()
    for g, key in ((G, "G"), (H, "G'")):
        for node, tree in settings.PAPER_FIG21["depth2_trees"][key].items():
            assert tga.depth2_tree(g, node - 1) == tree


def test_operator_separation():
    G, H = generators.fig21_pair()
    assert tga.first_separating_power(G, H, "A", 10)[0] is None
    assert tga.first_separating_power(G, H, "D^-1 A", 10)[0] is None  # row-stochastic: all ones
    assert tga.first_separating_power(G, H, "D^-1/2 A D^-1/2", 4)[0] == 1
    c6, k33 = generators.regular_pair()
    assert tga.first_separating_power(c6, k33, "A", 3)[0] == 1
    assert tga.first_separating_power(c6, k33, "D^-1/2 A D^-1/2", 6)[0] is None
    with pytest.raises(ValueError, match="operator"):
        tga.operator_stack(G, "L", 2)
    assert tga.multiset_gap(np.ones((3, 2)), np.ones((4, 2))) == math.inf


def test_lemma_a4():
    assert tga.alpha_bound(2) == pytest.approx(1.0)
    assert tga.lemma_a4_collisions(4, 1) > 0  # {2, 2} and {1}
    for n in range(2, 7):
        assert tga.lemma_a4_collisions(n, math.floor(tga.alpha_bound(n)) + 1) == 0
    assert tga.smallest_injective_alpha(4) == 3
    with pytest.raises(ValueError, match="alpha"):
        tga.lemma_a4_collisions(4, 0)


def test_prop22_keys_are_invariant_and_separate_degree_neighbourhoods():
    P, S = nx.path_graph(4), nx.star_graph(3)
    perm = nx.relabel_nodes(P, {0: 2, 1: 0, 2: 3, 3: 1})
    keys = tga.prop22_keys([P, perm, S], 3)
    assert keys[0] == keys[1] != keys[2]
    # same degree sequence, different neighbour-degree multisets: P6 against a triangle beside a path P3
    a, b = nx.path_graph(6), nx.disjoint_union(nx.cycle_graph(3), nx.path_graph(3))
    ka, kb = tga.prop22_keys([a, b], 4)
    assert ka != kb
    k = tga.prop22_keys([nx.cycle_graph(6), nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3))], 5)
    assert k[0] == k[1]  # both 2-regular: no GA-MLP on {D, A D^-alpha} separates them


def test_class_counts_on_small_atlas():
    atlas = generators.graph_atlas(6)
    out = tga.class_counts(atlas, (1, 2), alpha=10)
    assert out["truth"] == len(atlas) == 156 + 52
    assert out["gnn"] == out["gamlp"]
    assert out["gnn"][2] < out["truth"]
    groups = tga.shared_classes(atlas, 4)
    assert groups and all(len(g) >= 2 for g in groups)


def test_power_graph_remark():
    hexagon, triangles = generators.hexagon_and_triangles()
    sets = {"literal": lambda G: {"A": operators.adjacency(G), "P": operators.power_graph_adjacency(G)},
            "two hops": lambda G: {"P": operators.power_graph_adjacency(G, add_identity=True)},
            "triangles": lambda G: {"T": operators.triangle_adjacency(G)}}
    assert tga.power_graph_check(hexagon, triangles, sets, 3) == {"literal": False, "two hops": True,
                                                                  "triangles": True}
    feats = tga.word_features(hexagon, {"A": operators.adjacency(hexagon)}, 2)
    assert feats[("A", "A")] == (4,) * 6


def test_drawing_helpers_run():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    G, H = generators.fig21_pair()
    pos = tga.layout(G)
    assert set(pos) == set(G.nodes)
    fig, ax = plt.subplots()
    tga.draw_values(ax, G, pos, tga.walk_counts(G, 2)[2], vmin=0, vmax=20)
    tga.draw_values(ax, H, tga.layout(H), tga.wl_palette_colours([G, H], 2)[1], categorical=True)
    plt.close(fig)


def test_algorithm1_keys_are_isomorphism_invariant_and_need_r_nodes():
    t = tga
    assert t.algorithm1_rank(10) == 9 and t.algorithm1_rank(16) == 12
    G = generators.gnp_graphs(12, 0.5, 1, seed=1)[0]
    perm = dict(zip(range(12), np.random.default_rng(0).permutation(12).tolist()))
    H = nx.relabel_nodes(G, perm)
    H = nx.convert_node_labels_to_integers(H, ordering="sorted")
    assert t.algorithm1_keys([G]) == t.algorithm1_keys([H])
    out = t.class_counts(generators.gnp_graphs(10, 0.5, 20, seed=2), (1,), algorithm1=True)
    assert 0.0 <= out["exact_fraction"][("alg1", 0)] <= 1.0
    with pytest.raises(ValueError, match="at least r"):
        t.algorithm1_keys([nx.path_graph(6)])
