"""The shared graph layer lib.graphs: generators, exact 1-WL, operators, GA-MLP stacks and equivalence classes."""

import itertools

import networkx as nx
import numpy as np
import pytest

from lib.graphs import equivalence, generators, operators, wl


def _relabel(G, seed):
    perm = np.random.default_rng(seed).permutation(G.number_of_nodes())
    return nx.relabel_nodes(G, {i: int(p) for i, p in enumerate(perm)})


# ---------------------------------------------------------------------------------------------- generators


def test_fig21_pair_matches_the_neighbourhood_lists():
    G, H = generators.fig21_pair()
    for g, key in ((G, "G"), (H, "G'")):
        assert g.number_of_nodes() == 14 and g.number_of_edges() == 16
        for i, nbrs in generators.FIG21_NEIGHBOURS[key].items():
            assert sorted(j + 1 for j in g.adj[i - 1]) == sorted(nbrs)
        assert [g.nodes[i]["label"] for i in range(14)] == list(range(1, 15))
    for i in range(10, 14):  # nodes 11-14 have the same neighbourhoods
        assert set(G.adj[i]) == set(H.adj[i])
    assert sorted(dict(G.degree()).values()) == sorted(dict(H.degree()).values())
    assert not nx.is_isomorphic(G, H)


def test_from_neighbourhoods_rejects_inconsistent_lists():
    with pytest.raises(ValueError, match="neighbours"):
        generators.from_neighbourhoods({1: (2,), 2: (3,)}, 3)
    with pytest.raises(ValueError, match="neighbours"):
        generators.from_neighbourhoods({1: (5,)}, 3)
    with pytest.raises(ValueError, match="n must"):
        generators.from_neighbourhoods({}, 0)


def test_named_pairs_and_atlas():
    c6, k33 = generators.regular_pair()
    assert {d for _, d in c6.degree()} == {2} and {d for _, d in k33.degree()} == {3}
    hexagon, triangles = generators.hexagon_and_triangles()
    assert nx.number_connected_components(triangles) == 2 and not nx.is_isomorphic(hexagon, triangles)
    atlas = generators.graph_atlas()
    assert len(atlas) == 1252 and min(G.number_of_nodes() for G in atlas) == 1
    assert len(generators.graph_atlas(4)) == 1 + 2 + 4 + 11
    with pytest.raises(ValueError, match="max_nodes"):
        generators.graph_atlas(8)


def test_seeded_generators_are_reproducible_and_checked():
    a, b = generators.gnp_graphs(9, 0.5, 3, seed=4), generators.gnp_graphs(9, 0.5, 3, seed=4)
    assert [sorted(G.edges) for G in a] == [sorted(G.edges) for G in b]
    assert sorted(a[0].edges) != sorted(a[1].edges)
    R = generators.random_regular(3, 10, seed=1)
    assert {d for _, d in R.degree()} == {3}
    with pytest.raises(ValueError, match="p must"):
        generators.gnp_graphs(5, 1.5, 2)
    with pytest.raises(ValueError, match="even"):
        generators.random_regular(3, 7)


# ---------------------------------------------------------------------------------------------- 1-WL


@pytest.mark.filterwarnings("ignore:The hashes produced")
def test_wl_agrees_with_networkx_hash_on_all_pairs_of_six_node_graphs():
    """networkx (>= 3.5) counts the degree labelling as its first iteration, so its hash after t iterations
    compares like our colour multisets after t rounds (for t >= 2; its t = 1 hash ignores the degrees)."""
    graphs = [G for G in generators.graph_atlas(6, min_nodes=6)]
    for t in (2, 3):
        ours = equivalence.graph_keys(graphs, t, "gnn")
        theirs = [nx.weisfeiler_lehman_graph_hash(G, iterations=t) for G in graphs]
        for i, j in itertools.combinations(range(len(graphs)), 2):
            assert (ours[i] == ours[j]) == (theirs[i] == theirs[j])


def test_wl_palette_is_shared_and_independent_of_graph_order_and_labels():
    G, H = generators.fig21_pair()
    a = wl.wl_colours([G, H], rounds=3)
    b = wl.wl_colours([H, _relabel(G, 0)], rounds=3)
    for t in range(4):
        assert wl.colour_multiset(a[t][0]) == wl.colour_multiset(b[t][1])
        assert np.array_equal(a[t][1], b[t][0])
    assert wl.first_separating_round(G, H) == 2
    c6, tri = generators.hexagon_and_triangles()
    assert wl.first_separating_round(c6, tri, 6) is None
    assert wl.first_separating_round(*generators.regular_pair()) == 1


def test_wl_features_and_argument_checks():
    P = nx.path_graph(4)
    X = np.array([[0], [1], [1], [0]])
    assert len(set(wl.wl_colours([P], [X], 0)[0][0].tolist())) == 2
    with pytest.raises(ValueError, match="X must"):
        wl.wl_colours([P], [np.ones((3, 1), int)], 1)
    with pytest.raises(ValueError, match="integers"):
        wl.wl_colours([P], [np.ones((4, 1))], 1)
    with pytest.raises(ValueError, match="nodes 0..n-1"):
        wl.wl_colours([nx.relabel_nodes(P, {0: 9})], rounds=1)
    with pytest.raises(ValueError, match="rounds"):
        wl.wl_colours([P], rounds=-1)


def test_aggregation_tree_sizes_are_walk_counts():
    G, _ = generators.fig21_pair()
    A = operators.adjacency(G).toarray()
    for root in (0, 4, 8):
        T = wl.aggregation_tree(G, root, 3)
        walks = [int(np.linalg.matrix_power(A, k)[root].sum()) for k in range(4)]
        assert [sum(1 for _, d in T.nodes(data="depth") if d == k) for k in range(4)] == walks
        assert nx.is_tree(T) and T.nodes[0]["node"] == root


# ---------------------------------------------------------------------------------------------- operators


def test_normalised_operators_fix_the_constant_vector_on_regular_graphs():
    for G in generators.regular_pair():
        for alpha in (0.0, 0.3, 0.5, 1.0):
            M = operators.normalised_adjacency(G, alpha)
            stack = operators.propagate(M, np.ones(6), 8)
            assert np.allclose(stack, 1.0, atol=1e-12)


def test_operator_formulas():
    G = nx.path_graph(3)
    A = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    d = A.sum(1)
    assert np.array_equal(operators.adjacency(G).toarray(), A)
    N = operators.normalised_adjacency(G, 0.25, 0.5).toarray()
    assert np.allclose(N, np.diag(d**-0.25) @ A @ np.diag(d**-0.5))
    Aeps = operators.augmented_adjacency(G, 1.0).toarray()
    s = np.diag((d + 1.0) ** -0.5)
    assert np.allclose(Aeps, s @ (A + np.eye(3)) @ s)
    assert np.array_equal(operators.power_graph_adjacency(G).toarray(), np.minimum(A @ A, 1))
    assert operators.power_graph_adjacency(G, add_identity=True).toarray().sum() == 9
    K4 = nx.complete_graph(4)
    assert np.array_equal(operators.triangle_adjacency(K4).toarray(), 2 * (1 - np.eye(4)))
    H = operators.bethe_hessian(G, 2.0).toarray()
    assert np.allclose(H, 3 * np.eye(3) - 2 * A + np.diag(d))
    assert np.allclose(operators.shifted_bethe_hessian(G, 2.0, 8.0).toarray(), 8 * np.eye(3) - H)
    iso = nx.empty_graph(2)
    assert np.array_equal(operators.normalised_adjacency(iso).toarray(), np.zeros((2, 2)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_propagate_equals_dense_powers_up_to_scale(seed):
    G = nx.gnp_random_graph(30, 0.2, seed=seed)
    M = operators.normalised_adjacency(G, 0.5)
    X = np.random.default_rng(seed).normal(size=(30, 2))
    stack = operators.propagate(M, X, 6, renormalise=True)
    dense = M.toarray()
    for k in range(1, 7):
        ref = np.linalg.matrix_power(dense, k) @ X
        ref /= np.linalg.norm(ref, axis=0, keepdims=True)
        assert np.allclose(stack[k], ref, atol=1e-12)
    raw = operators.propagate(M, X, 3)
    assert np.allclose(raw[3], np.linalg.matrix_power(dense, 3) @ X)


def test_propagate_int64_is_exact_and_checks_overflow():
    G = nx.complete_graph(12)
    A = operators.adjacency(G)
    ones = np.ones((12, 1), dtype=np.int64)
    small = operators.propagate(A, ones, 10)
    assert small.dtype == np.int64 and int(small[10, 0, 0]) == 11**10
    with pytest.raises(ValueError, match="overflow"):
        operators.propagate(A, ones, 20)
    big = operators.propagate(A, ones.astype(object), 20)
    assert big[20, 0, 0] == 11**20 and isinstance(big[20, 0, 0], int)
    with pytest.raises(ValueError, match="renormalise"):
        operators.propagate(A, ones, 2, renormalise=True)
    with pytest.raises(ValueError, match="shape"):
        operators.propagate(A, np.ones((5, 1)), 2)
    with pytest.raises(ValueError, match="K must"):
        operators.propagate(A, ones, -1)


# ---------------------------------------------------------------------------------------------- equivalence


def test_equivalence_classes_small_cases():
    assert equivalence.equivalence_classes(nx.cycle_graph(7), None, 3, "gnn") == 1
    assert equivalence.equivalence_classes(nx.cycle_graph(7), None, 3, "gamlp") == 1
    P = nx.path_graph(5)  # classes by distance to the ends: {0,4}, {1,3}, {2}
    assert equivalence.equivalence_classes(P, None, 2, "gnn") == 3
    assert equivalence.equivalence_classes(P, None, 1, "gamlp") == 2
    X = np.array([[0], [1], [0], [0], [0]])
    assert equivalence.equivalence_classes(P, X, 0, "gnn") == 2
    with pytest.raises(ValueError, match="model"):
        equivalence.equivalence_classes(P, None, 1, "mlp")


@pytest.mark.parametrize("seed", range(4))
def test_gamlp_never_separates_more_than_gnn(seed):
    G = nx.barabasi_albert_graph(200, 2, seed=seed)
    X = np.random.default_rng(seed).integers(0, 2, size=(200, 1))
    for K in range(4):
        assert equivalence.equivalence_classes(G, X, K, "gamlp") <= equivalence.equivalence_classes(G, X, K, "gnn")


def test_gamlp_features_switch_to_python_integers_when_int64_could_overflow():
    G = nx.complete_graph(30)
    f = equivalence.gamlp_features(G, None, 14)
    assert f.dtype == object and f[0, 14] == 29**14
    assert equivalence.gamlp_features(G, None, 3).dtype == np.int64


def test_graph_classes_are_invariant_to_relabelling_and_fig21_pair_is_gamlp_hard():
    G, H = generators.fig21_pair()
    assert equivalence.graph_classes([G, _relabel(G, 3)], 4, "gnn") == 1
    assert equivalence.graph_classes([G, _relabel(G, 3)], 4, "gamlp") == 1
    assert equivalence.graph_classes([G, H], 1, "gnn") == 1
    assert equivalence.graph_classes([G, H], 2, "gnn") == 2
    assert equivalence.graph_classes([G, H], 12, "gamlp") == 1
    assert equivalence.class_sizes(["a", "b", "a"]).tolist() == [2, 1]


def test_isomorphism_classes_against_relabelled_copies():
    atlas = generators.graph_atlas(5)
    graphs = atlas + [_relabel(G, i) for i, G in enumerate(atlas[::3])]
    labels = equivalence.isomorphism_classes(graphs)
    assert max(labels) + 1 == len(atlas)
    assert labels[len(atlas):] == labels[: len(atlas)][::3]
