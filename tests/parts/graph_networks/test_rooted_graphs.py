"""Tests of chapter 2 of Part IV (rooted graphs) and of the shared pieces it adds: attributed walk counts, batched
WL, tree generators, GIN / GIN-JK and the hand-set counting GIN."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from lib.graphs import generators, walks, wl
from lib.models.gnn import GIN, edge_index_of, neighbour_sum
from lib.parts.graph_networks import rooted_graphs as rg
from lib.parts.graph_networks import walk_counting as wc


def _random_graph(seed: int, n: int = 9, p: float = 0.35):
    return nx.gnp_random_graph(n, p, seed=seed)


@pytest.mark.parametrize("seed", range(6))
def test_walk_counts_equal_brute_force(seed):
    G = _random_graph(seed)
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(G.number_of_nodes(), 1))
    for k in range(4):
        pattern = tuple(int(v) for v in rng.integers(0, 2, size=k))
        for start in (None, 0, 1):
            a = walks.attributed_walk_counts(G, X, pattern, start=start)
            b = walks.brute_force_walk_counts(G, X, pattern, start=start)
            assert np.array_equal(a, b), (k, pattern, start)


def test_walk_counts_one_hot_and_type_sum():
    G = _random_graph(11, 10, 0.4)
    X = wc.parity_features(10)
    types = walks.walk_type_counts(G, X, 2, [(1, 0), (0, 1)])
    total = sum(types.values())
    A = nx.to_numpy_array(G, nodelist=range(10), dtype=np.int64)
    assert np.array_equal(total, (A @ A).sum(axis=1))  # all walks of length 2


def test_walk_counts_reject_overflow():
    G = nx.complete_graph(40)
    with pytest.raises(ValueError, match="pattern"):
        walks.attributed_walk_counts(G, None, [1] * 15)


def _partition(keys):
    first = {}
    return [first.setdefault(k, len(first)) for k in keys]


@pytest.mark.parametrize("seed", range(3))
def test_batched_wl_matches_wl_colours(seed):
    G = _random_graph(seed, 8, 0.4)
    L = np.random.default_rng(seed).integers(0, 3, size=(5, 8))
    batch = wl.wl_colours_batch(G, L, 3)
    ref = wl.wl_colours([G] * 5, [row[:, None] for row in L], 3)
    for t in range(4):
        a = _partition(batch[t].reshape(-1).tolist())
        b = _partition(np.concatenate(ref[t]).tolist())
        assert a == b


def test_batched_wl_rejects_bad_labels():
    G = nx.path_graph(3)
    with pytest.raises(ValueError, match="labels"):
        wl.wl_colours_batch(G, np.zeros((2, 4), dtype=int))
    with pytest.raises(ValueError, match="labels"):
        wl.wl_colours_batch(G, np.zeros((2, 3)))


@pytest.mark.parametrize("m,K", [(1, 3), (2, 1), (2, 2), (3, 1), (3, 2), (4, 1)])
def test_tree_classes_equal_closed_forms(m, K):
    e = rg.enumerate_trees(m, K)
    assert e["n_gnn"] == rg.gnn_tree_classes(m, K)
    assert e["n_gamlp"] == rg.gamlp_tree_classes(m, K)


def test_closed_forms_values():
    assert [rg.gnn_tree_classes(2, K) for K in range(5)] == [2, 6, 42, 1806, 3263442]
    assert [rg.gamlp_tree_classes(2, K) for K in range(5)] == [2, 6, 30, 270, 4590]
    with pytest.raises(ValueError, match="m"):
        rg.gnn_tree_classes(0, 2)
    with pytest.raises(ValueError, match="K"):
        rg.gamlp_tree_classes(2, -1)


def _brute_aggregation_trees(m, K):
    """Canonical forms of the aggregation trees of Lemma A.6, built independently of the recursion."""

    def subtrees(height, parent):
        if height == 0:
            return [(x,) for x in (0, 1)]
        out = []
        for x in (0, 1):
            kids = subtrees(height - 1, x)
            from itertools import combinations_with_replacement

            for combo in combinations_with_replacement(range(len(kids)), m):
                ch = [kids[i] for i in combo]
                if parent is None or any(c[0] == parent for c in ch):
                    out.append((x, tuple(sorted(ch))))
        return out

    # the children of the root see the root's feature as their parent's
    roots = set()
    for x in (0, 1):
        kids = [t for t in subtrees(K - 1, x) if t[0] in (0, 1)] if K >= 1 else []
        from itertools import combinations_with_replacement

        for combo in combinations_with_replacement(range(len(kids)), m):
            roots.add((x, tuple(sorted(kids[i] for i in combo))))
    return len(roots)


@pytest.mark.parametrize("m,K", [(2, 1), (2, 2), (2, 3), (3, 1), (3, 2)])
def test_aggregation_tree_count_matches_brute_force_and_bound(m, K):
    assert rg.aggregation_tree_count(m, K) == _brute_aggregation_trees(m, K)
    assert rg.aggregation_tree_count(m, K) >= rg.lemma_a6_bound(max(m, 2), K)


def test_fig23_pair():
    T, X, Xp = generators.fig23_pair()
    level = np.array([T.nodes[i]["level"] for i in range(7)])
    for x in (X, Xp):
        assert [int((x[level == k, 0] == 0).sum()) for k in range(3)] == [1, 1, 3]
    assert walks.attributed_walk_counts(T, X, (1, 1))[0] == 1
    assert walks.attributed_walk_counts(T, Xp, (1, 1))[0] == 0


def test_generators_validate_and_are_seeded():
    assert nx.utils.graphs_equal(generators.barabasi_albert(50, 2, 3), generators.barabasi_albert(50, 2, 3))
    G = generators.erdos_renyi_mean_degree(500, 4.0, 0)
    assert 3.0 < 2 * G.number_of_edges() / 500 < 5.0
    assert generators.full_mary_tree(3, 2).number_of_nodes() == 13
    assert generators.tree_labellings(2, 1).shape == (8, 3)
    assert generators.tree_labellings(2, 3, count=4, seed=1).shape == (4, 15)
    with pytest.raises(ValueError, match="m"):
        generators.full_mary_tree(0, 2)
    with pytest.raises(ValueError, match="n <= 22"):
        generators.tree_labellings(2, 5)
    with pytest.raises(ValueError, match="p"):
        generators.powerlaw_cluster(100, 2, 1.5)
    with pytest.raises(ValueError, match="mean_degree"):
        generators.erdos_renyi_mean_degree(10, 20.0)


def test_gin_shapes_and_aggregation():
    G = nx.cycle_graph(5)
    ei = edge_index_of(G)
    assert ei.shape == (2, 10)
    h = torch.arange(5, dtype=torch.float32)[:, None]
    assert torch.equal(neighbour_sum(h, ei)[:, 0], torch.tensor([5.0, 2, 4, 6, 3]))
    torch.manual_seed(0)
    for jk in (True, False):
        out = GIN(3, 8, 2, 4, jk=jk)(torch.randn(5, 3), ei)
        assert out.shape == (5, 4)
    with pytest.raises(ValueError, match="depth"):
        GIN(3, 8, 0)
    with pytest.raises(ValueError, match="G"):
        edge_index_of(nx.DiGraph([(0, 1)]))


@pytest.mark.parametrize("seed,length", [(0, 1), (1, 2), (2, 3)])
def test_handset_gin_counts_exactly(seed, length):
    for G in (generators.barabasi_albert(120, 2, seed), generators.random_regular(4, 60, seed)):
        counts, _ = wc.handset_counts(G, length)
        assert np.array_equal(counts, wc.blue_walk_labels(G, length))


def test_counting_labels_splits_and_training():
    G = generators.random_regular(4, 40, 0)
    y = wc.blue_walk_labels(G, 2)
    assert np.all(y[1::2] == 0)  # odd nodes are red
    mask = wc.split_nodes(40, "parity", 10, seed=0)
    assert mask.sum() == 10 and mask[::2].sum() == 5
    assert wc.split_nodes(40, "first", 12)[:12].all()
    r1 = wc.fit_counting_model(G, 2, "gin", mask=mask, width=8, lr=0.01, steps=20)
    r2 = wc.fit_counting_model(G, 2, "gin", mask=mask, width=8, lr=0.01, steps=20)
    assert r1["train"] == r2["train"] and np.isfinite(r1["test"])
    r3 = wc.fit_counting_model(G, 2, "gamlp-A1", mask=mask, width=8, lr=0.01, steps=20, K=4)
    assert np.isfinite(r3["train"])
    with pytest.raises(ValueError, match="model"):
        wc.fit_counting_model(G, 2, "gcn", mask=mask, width=8, lr=0.01, steps=5)
    with pytest.raises(ValueError, match="mask"):
        wc.fit_counting_model(G, 2, "gin", mask=np.ones(40, bool), width=8, lr=0.01, steps=5)
    with pytest.raises(ValueError, match="rule"):
        wc.split_nodes(40, "random", 10)


def test_table21_counts_on_a_regular_graph():
    G = generators.random_regular(3, 20, 0)
    assert rg.rooted_class_counts(G, (1, 2, 3)) == [(1, 1), (1, 1), (1, 1)]


def test_per_class_spread_and_walks_constant_on_gnn_classes():
    e = rg.enumerate_trees(2, 2, pattern=(1, 1))
    assert rg.per_class_spread(e["gnn"], e["walks"]).max() == 1
    assert rg.per_class_spread(e["gamlp"], e["walks"]).max() > 1


@pytest.mark.parametrize("seed", range(4))
def test_batched_wl_agrees_with_networkx_hash(seed):
    rng = np.random.default_rng(seed)
    G = _random_graph(seed, 9, 0.35)
    L = rng.integers(0, 2, size=(2, 9))
    cols = wl.wl_colours_batch(G, L, 3)
    for t in (1, 2, 3):
        same = sorted(cols[t][0].tolist()) == sorted(cols[t][1].tolist())
        hashes = []
        for row in L:
            H = G.copy()
            nx.set_node_attributes(H, {i: str(int(row[i])) for i in range(9)}, "x")
            hashes.append(nx.weisfeiler_lehman_graph_hash(H, node_attr="x", iterations=t))
        assert same == (hashes[0] == hashes[1])


def test_product_operator_is_equivariant_and_counts_green_walks():
    from lib.graphs import operators

    G = generators.gnp_graphs(9, 0.4, 1, seed=3)[0]
    A = operators.adjacency(G, np.float64).toarray()
    x = np.random.default_rng(0).integers(0, 2, 9).astype(float)
    P = np.eye(9)[np.random.default_rng(1).permutation(9)]
    assert np.allclose(rg.product_operator(P @ A @ P.T, P @ x), P @ rg.product_operator(A, x))
    assert np.allclose(rg.product_operator(A, x), walks.attributed_walk_counts(G, x[:, None].astype(int), (1, 1)))
    T, X, Xp = generators.fig23_pair()
    AT = operators.adjacency(T, np.float64)
    assert rg.product_operator(AT, X[:, 0])[0] == 1 and rg.product_operator(AT, Xp[:, 0])[0] == 0
    with pytest.raises(ValueError, match="X must"):
        rg.product_operator(A, np.ones(4))


def test_prop24_bound_off_by_one_at_small_degree():
    # degree <= 1: the only rooted graphs with an edge are a root and one neighbour, 2 x 2 classes for every K,
    # against the printed bound |X| * prod_k C(1 + 2 - 1, 2) = 2 and the corrected 2 * 3^K
    for K in (1, 2, 3):
        assert rg.rooted_gamlp_classes(1, K, 4) == 4
        assert rg.prop24_class_bound(1, K) == 2
        assert rg.prop24_class_bound(1, K, corrected=True) == 2 * 3**K
    # degree <= 2, K = 1: root feature x multisets of 1 or 2 neighbours over 4 (degree, feature) types
    assert rg.rooted_gamlp_classes(2, 1, 5) == 2 * (4 + 10)
    assert rg.prop24_class_bound(2, 1) == 2 * 5
    assert rg.prop24_class_bound(2, 1, corrected=True) == 2 * 15
    # the operator A~ alone against the proof's per-operator binomials C(m + M_1 - 1, M_1): 1 and 5
    assert rg.rooted_gamlp_classes(1, 1, 4, single=True) == 2
    assert rg.rooted_gamlp_classes(2, 1, 5, single=True) == 14


def test_rooted_gamlp_classes_plain_adjacency_sees_only_feature_counts():
    # alpha = beta = 0 (the operator A): degree <= 2, K = 1 leaves the root feature and the neighbours' feature counts
    assert rg.rooted_gamlp_classes(2, 1, 5, alpha=0.0, beta=0.0) == 2 * 5
