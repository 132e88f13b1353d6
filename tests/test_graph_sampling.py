"""Degree-group graphs, the topology samplers and the three-layer GCN (lib.graphs.sampling, lib.models.gcn)."""

import numpy as np
import pytest
import torch

from lib.graphs import sampling
from lib.models.gcn import GCN3

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def graph():
    edges, groups = sampling.degree_group_graph((20, 180), (10, 2), seed=3)
    return sampling.gcn_adjacency(edges, len(groups)), groups, edges


def test_degree_group_graph_is_simple_and_seeded(graph):
    A, groups, edges = graph
    assert np.all(edges[:, 0] < edges[:, 1])
    assert len(np.unique(edges, axis=0)) == len(edges)
    assert np.bincount(groups).tolist() == [20, 180]
    again, _ = sampling.degree_group_graph((20, 180), (10, 2), seed=3)
    np.testing.assert_array_equal(edges, again)
    deg = np.bincount(edges.ravel(), minlength=200)
    assert deg[:20].mean() > 8 and deg[20:].mean() <= 2


def test_gcn_adjacency_matches_dense(graph):
    A, groups, edges = graph
    n = len(groups)
    adj = np.eye(n)
    adj[edges[:, 0], edges[:, 1]] = adj[edges[:, 1], edges[:, 0]] = 1
    dinv = 1 / np.sqrt(adj.sum(1))
    np.testing.assert_allclose(A.to_dense().numpy(), dinv[:, None] * adj * dinv[None, :], rtol=1e-6)


def test_group_sampler_counts_and_mean(graph):
    A, groups, _ = graph
    s = sampling.GroupSampler(A, groups, (0.7, 0.3), keep=0.9)
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([s.diagonal(g) for _ in range(400)])
    # S_l = 0.9 N_l kept per group, each kept node weighted p_l* N_l / S_l
    assert ((draws[:, :20] > 0).sum(1) == 18).all() and ((draws[:, 20:] > 0).sum(1) == 162).all()
    np.testing.assert_allclose(draws[0, :20][draws[0, :20] > 0].numpy(), 0.7 * 20 / 18, rtol=1e-6)
    # E[P^s] = P^*: group means within 4 standard errors
    for sl, p in ((slice(0, 20), 0.7), (slice(20, None), 0.3)):
        x = draws[:, sl].double().mean(1)
        assert abs(float(x.mean()) - p) < 1e-6  # the group mean of one draw is p_l^* (float32)
        col = draws[:, sl].double().mean(0)
        se = draws[:, sl].double().std(0) / 20
        assert float(((col - p).abs() / se).max()) < 4.5
    # A^s = A P^s has A's pattern; keep = 1 gives A^* exactly
    full = sampling.GroupSampler(A, groups, (0.7, 0.3), keep=1.0)
    np.testing.assert_allclose(full.sample(g).to_dense().numpy(), full.effective.to_dense().numpy(), rtol=1e-6)


def test_fastgcn_is_unbiased(graph):
    A, groups, _ = graph
    s = sampling.FastGCNSampler(A, t=180)
    g = torch.Generator().manual_seed(1)
    mean = torch.stack([s.diagonal(g).double() for _ in range(3000)]).mean(0)
    assert float((mean - 1).abs().mean()) < 0.05
    assert s.effective is s.A


def test_psi_and_norms():
    np.testing.assert_allclose(sampling.group_psi((100, 1900), (10, 1)), [1000 / 2900, np.sqrt(10) * 1900 / 2900])
    A = sampling.gcn_adjacency(np.array([[0, 1]]), 3)
    assert sampling.inf_norm(A) == pytest.approx(1.0)
    assert sampling.inf_norm(sampling.effective_adjacency(A, [0, 0, 1], (0.5, 1.0))) == pytest.approx(1.0)


def test_gcn3_copies_are_independent(graph):
    A, groups, _ = graph
    X = torch.randn(200, 4, generator=torch.Generator().manual_seed(0))
    net = GCN3(4, 6, 5, 2, copies=3, generator=torch.Generator().manual_seed(2))
    out = net(A, X)
    assert out.shape == (3, 200, 2)
    dense = A.to_dense()
    h = torch.relu(dense @ (X @ net.W[1]) + net.b1[1])
    h = torch.relu(dense @ (h @ net.V[1]) + net.b2[1])
    torch.testing.assert_close(out[1], dense @ h @ net.C[1], rtol=1e-4, atol=1e-5)
    out[0].sum().backward()
    assert float(net.W.grad[1:].abs().sum()) == 0.0


def test_argument_checks(graph):
    A, groups, _ = graph
    with pytest.raises(ValueError, match="keep"):
        sampling.GroupSampler(A, groups, (0.7, 0.3), keep=0.0)
    with pytest.raises(ValueError, match="p_star"):
        sampling.GroupSampler(A, groups, (0.7, -0.3))
    with pytest.raises(ValueError, match="t"):
        sampling.FastGCNSampler(A, t=0)
    with pytest.raises(ValueError, match="sizes"):
        sampling.degree_group_graph((10,), (2, 3))
    with pytest.raises(ValueError, match="edges"):
        sampling.gcn_adjacency(np.array([[0, 5]]), 3)
    with pytest.raises(ValueError, match="adjs"):
        GCN3(2, 3, 3, 1)((A, A), torch.zeros(200, 2))
    with pytest.raises(ValueError, match="m1"):
        GCN3(2, 0, 3, 1)
