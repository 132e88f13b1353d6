"""Tests of the SBM generator, the sGNN and the community-detection module (Part IV chapter 3)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from lib.graphs import generators
from lib.models.sgnn import SGNN, apply_adjacency, instance_norm
from lib.parts.graph_networks import communities as cm


def test_sbm_edge_rates_match_a_over_n_and_b_over_n():
    n, a, b, count = 100, 6.0, 2.0, 60
    edges, labels = generators.binary_sbm_edges(n, a, b, count, seed=3)
    same = cross = 0
    for e, y in zip(edges, labels):
        assert (e[0] < e[1]).all()
        s = int((y[e[0]] == y[e[1]]).sum())
        same, cross = same + s, cross + e.shape[1] - s
    pairs_same = count * 2 * (n // 2) * (n // 2 - 1) / 2
    pairs_cross = count * (n // 2) ** 2
    p_same, p_cross = same / pairs_same, cross / pairs_cross
    # binomial standard errors: 4 sigma
    assert abs(p_same - a / n) < 4 * np.sqrt(a / n / pairs_same)
    assert abs(p_cross - b / n) < 4 * np.sqrt(b / n / pairs_cross)
    assert (labels.sum(axis=1) == n // 2).all()


def test_sbm_is_seeded_and_networkx_view_agrees():
    e1, y1 = generators.binary_sbm_edges(30, 5, 1, 3, seed=1)
    e2, y2 = generators.binary_sbm_edges(30, 5, 1, 3, seed=1)
    assert all((a == b).all() for a, b in zip(e1, e2)) and (y1 == y2).all()
    G, y = generators.binary_sbm(30, 5, 1, seed=1)
    assert G.number_of_edges() == e1[0].shape[1] and (y == y1[0]).all()
    assert G.nodes[0]["block"] == y[0]


@pytest.mark.parametrize("kwargs", [dict(n=1), dict(a=-1.0), dict(b=500.0), dict(count=-1), dict(seed=-1)])
def test_sbm_rejects_bad_arguments(kwargs):
    args = dict(n=20, a=3.0, b=1.0, count=2, seed=0) | kwargs
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=name):
        generators.binary_sbm_edges(**args)


def test_overlap_invariant_to_label_swaps():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (5, 40))
    p = rng.integers(0, 2, (5, 40))
    o = cm.overlap(p, y)
    assert np.allclose(o, cm.overlap(1 - p, y))
    assert np.allclose(o, cm.overlap(p, 1 - y))
    assert np.allclose(cm.overlap(y, y), 1.0) and np.allclose(cm.overlap(1 - y, y), 1.0)
    assert ((o >= 0) & (o <= 1)).all()
    with pytest.raises(ValueError, match="pred"):
        cm.overlap(p[:, :3], y)
    with pytest.raises(ValueError, match="labels"):
        cm.overlap(p, y + 2)


def test_block_operators_match_per_graph_formulas():
    edges, _ = generators.binary_sbm_edges(20, 5, 1, 2, seed=0)
    A = cm.block_operator(edges, 20, "A").toarray()
    A0 = A[:20, :20]
    d = A0.sum(1)
    c = d.mean()
    H = cm.block_operator(edges, 20, "H", kappa=8.0).toarray()[:20, :20]
    Hb = (c - 1) * np.eye(20) - np.sqrt(c) * A0 + np.diag(d)
    assert np.allclose(H, 8.0 * np.eye(20) - Hb)
    A1 = cm.block_operator(edges, 20, "A1").toarray()[:20, :20]
    s = np.diag((d + 1) ** -0.5)
    assert np.allclose(A1, s @ (A0 + np.eye(20)) @ s)
    assert np.allclose(A[:20, 20:], 0)
    with pytest.raises(ValueError, match="operator"):
        cm.block_operator(edges, 20, "B")


def test_gamlp_features_normalise_inside_the_power_loop_as_a_batch_norm():
    """The authors' recursion: x_k = BatchNorm(M x_{k-1}) on one graph, without running statistics."""
    edges, _ = generators.binary_sbm_edges(30, 5, 1, 3, seed=2)
    K = 6
    for op in ("A", "H"):
        F = cm.power_features(edges, 30, op, K)
        assert F.shape == (3, 30, K + 1) and F.dtype == np.float32
        assert np.allclose(F[:, :, 0], 1.0)  # the raw ones, as in the code
        M = torch.as_tensor(cm.block_operator(edges[2:3], 30, op).toarray())
        bn = torch.nn.BatchNorm1d(1, track_running_stats=False, dtype=torch.float64).eval()
        x = torch.ones(30, 1, dtype=torch.float64)
        with torch.no_grad():
            for k in range(1, K + 1):
                x = bn(M @ x)
                assert np.allclose(F[2, :, k], x[:, 0].numpy(), atol=1e-4)
    with pytest.raises(ValueError, match="norm"):
        cm.power_features(edges, 30, "A", K, norm="instance")


def test_gamlp_features_after_norm_equal_standardised_dense_powers():
    edges, _ = generators.binary_sbm_edges(30, 5, 1, 3, seed=2)
    K = 6
    F = cm.power_features(edges, 30, "A", K, norm="after")
    assert F.shape == (3, 30, K + 1) and F.dtype == np.float32
    A = cm.block_operator(edges[1:2], 30, "A").toarray()
    for k in range(1, K + 1):
        v = np.linalg.matrix_power(A, k) @ np.ones(30)
        v = (v - v.mean()) / v.std()
        assert np.allclose(F[1, :, k], v, atol=1e-4)
    assert np.allclose(F[:, :, 0], 0)  # the constant column is standardised to 0


def test_spectral_and_readout_recover_easy_communities():
    edges, labels = generators.binary_sbm_edges(200, 12, 0.5, 3, seed=4)
    for m in cm.SPECTRAL_METHODS:
        assert cm.spectral_overlaps(edges, labels, 200, m).mean() > 0.8
    F = cm.power_features(edges[:1], 200, "H", 20)[0]
    assert cm.linear_readout_overlap(F, labels[0], 20) > 0.6
    with pytest.raises(ValueError, match="method"):
        cm.spectral_partition(edges[0], 200, "laplacian")


def test_permutation_ce_is_swap_invariant():
    torch.manual_seed(0)
    logits, y = torch.randn(3, 10, 2), torch.randint(0, 2, (3, 10))
    assert torch.allclose(cm.permutation_ce(logits, y), cm.permutation_ce(logits, 1 - y))
    assert torch.allclose(cm.permutation_ce(logits, y), cm.permutation_ce(logits.flip(-1), y))


def test_sgnn_adjacency_norm_and_equivariance():
    edges, _ = generators.binary_sbm_edges(12, 5, 1, 2, seed=0)
    ei = torch.cat([torch.as_tensor(np.concatenate([e, e[::-1]], 1)) + g * 12 for g, e in enumerate(edges)], 1)
    h = torch.randn(24, 3, dtype=torch.float64)
    A = sp.csr_array(cm.block_operator(edges, 12, "A")).toarray()
    assert torch.allclose(apply_adjacency(h, ei), torch.as_tensor(A) @ h)
    z = instance_norm(h, 12).reshape(2, 12, 3)
    assert torch.allclose(z.mean(1), torch.zeros(2, 3, dtype=torch.float64), atol=1e-10)
    torch.manual_seed(0)
    net = SGNN(1, 6, 3, 2)
    out = net(torch.ones(24, 1), ei, 12)
    assert out.shape == (24, 2)
    perm = torch.randperm(12)
    inv = torch.argsort(perm)
    ei1 = torch.as_tensor(np.concatenate([edges[0], edges[0][::-1]], 1))
    out_p = net(torch.ones(12, 1), inv[ei1], 12)  # relabel node i as inv[i]
    assert torch.allclose(out_p[inv], net(torch.ones(12, 1), ei1, 12), atol=1e-5)
    with pytest.raises(ValueError, match="width"):
        SGNN(1, 1, 2)


def test_run_sbm_small_is_reproducible_and_validated():
    kw = dict(n=40, K=4, n_train=6, n_test=3, sgnn_depth=2, chunk=4)
    r1 = cm.run_sbm(5.0, 1.0, **kw)
    r2 = cm.run_sbm(5.0, 1.0, **kw)
    assert set(r1["overlap"]) == {"GA-MLP-A", "GA-MLP-H", "GA-MLP-A1", "sGNN", "spectral-adjacency", "spectral-bethe"}
    for k in r1["overlap"]:
        assert r1["overlap"][k].shape == (3,)
        assert np.array_equal(r1["overlap"][k], r2["overlap"][k])
    assert not any(r1["diverged"].values())
    with pytest.raises(ValueError, match="n_train"):
        cm.run_sbm(5.0, 1.0, n=40, n_train=0)
    with pytest.raises(ValueError, match="operators"):
        cm.run_sbm(5.0, 1.0, n=40, operators=("X",))
    assert cm.sbm_snr(5.0, 1.0) == pytest.approx(16 / 12)
