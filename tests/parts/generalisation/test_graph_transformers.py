"""Tests of the graph-transformer chapter's code: generator, margins, PE indexing, a tiny run."""

import numpy as np
import pytest
import torch

from lib.models.shallow_attention import ShallowAttention
from lib.parts.generalisation import graph_transformers as gt
from lib.parts.generalisation import settings

TINY = dict(settings.GT, n=80, degree=10, K=8, m=20, n_test=20, steps=5, batch=8)


def test_generator_invariants():
    G = gt.core_graph(120, 0.4, 0.1, 12, seed=3)
    A, pat, y = G["A"], G["pattern"], G["y"]
    assert (A == A.T).all() and not A.diagonal().any()
    assert not A[np.ix_(pat == 0, pat == 1)].any()  # no mu1-mu2 edge
    assert (A.sum(1) >= 12).all()
    nd = pat >= 2
    assert (y[pat == 0] == 1).all() and (y[pat == 1] == -1).all()
    # a non-discriminative node's label is the majority vote of its core (distance-1) neighbourhood
    margin = gt.winning_margin(G["spd"], pat, y, 1)
    assert (margin[nd] > 0).all()
    assert np.isclose((pat == 0).mean(), 0.2, atol=0.01)


def test_label_noise_flips_a_fraction():
    G = gt.core_graph(400, 0.4, 0.0, 10, eps0=0.2, seed=1)
    frac = (G["y"] != G["clean_y"]).mean()
    assert 0.1 < frac < 0.3


def test_toy_margins_and_spd():
    toy = gt.toy_graph()
    assert toy["spd"][0, 4] == 2 and toy["spd"][0, 1] == 1 and toy["spd"][0, 0] == 0
    assert gt.winning_margin(toy["spd"], toy["pattern"], toy["y"], 1)[0] == -2
    assert gt.winning_margin(toy["spd"], toy["pattern"], toy["y"], 2)[0] == 3


def test_pe_index_truncates():
    spd = np.array([[0, 1, 2, 5]])
    assert gt.pe_index(spd, 3).tolist() == [[0, 1, 2, 2]]
    with pytest.raises(ValueError, match="spd"):
        gt.pe_index(np.array([[-1, 0]]), 3)


def test_pe_toy_shares_sum_to_one():
    share, mass = gt.pe_attention_toy([0.0, 2.0], [10, 10], [0.0, 1.0])
    assert np.isclose(share.sum(), 1) and np.isclose(mass, np.e**2 / (np.e**2 + 1))


def test_attention_with_pe_bias_rows_sum_to_one():
    model = ShallowAttention(2, 4, 6, readout="first")
    X = torch.randn(2, 3, 5, 4)
    bias = torch.randn(2, 3, 1, 5)
    A = model.attention(X, bias=bias)
    assert torch.allclose(A.sum(-1), torch.ones(2, 3, 5))
    assert model(X, bias=bias).shape == (2, 3)


def test_tiny_run_learns_and_gcn_keeps_b_zero():
    torch.set_num_threads(1)
    cfg = dict(TINY, steps=60)
    r = gt.train_gt([40, 40], [0, 1], cfg, 0.4, 0.0)
    assert (r["test_curve"][:, -1] < r["test_curve"][:, 0]).all()
    assert r["b"].shape == (2, 3) and (r["b"][:, 1] > r["b"][:, 2]).all()
    rg = gt.train_gt([40], [0], TINY, 0.4, 0.0, gcn=True)
    assert (rg["b"] == 0).all()


def test_bad_arguments():
    with pytest.raises(ValueError, match="gamma_d"):
        gt.core_graph(50, 1.5, 0.1, 5)
    with pytest.raises(ValueError, match="Ls"):
        gt.train_gt([0], [0], TINY, 0.4, 0.1)
    assert np.isclose(gt.loglog_exponent([1, 2, 4], [1, 4, 16]), 2)


@pytest.mark.parametrize("zm", [1, 2, 3])
def test_core_distance_maximises_the_average_margin(zm):
    for seed in range(3):
        G = gt.core_graph(300, 0.4, 0.05, 40, seed=seed, core_distance=zm)
        pat, y, spd = G["pattern"], G["y"], G["spd"]
        margins = [gt.winning_margin(spd, pat, y, z).mean() for z in range(1, 6)]
        assert np.argmax(margins) + 1 == zm
        assert (G["A"] == G["A"].T).all() and not G["A"].diagonal().any()
        if zm > 1:  # outer nodes see no discriminative node closer than z_m, and a positive margin at z_m
            outer = np.arange(120 + 2 * 3 * (zm - 1), 300)
            assert not (spd[np.ix_(outer, np.flatnonzero(pat < 2))] < zm).any()
            assert (gt.winning_margin(spd, pat, y, zm)[outer] > 0).all()


def test_relay_graph_needs_room_for_hubs():
    with pytest.raises(ValueError, match="hubs"):
        gt.core_graph(20, 0.8, 0.0, 4, core_distance=3, hubs=3)


def test_sbm_graph_blocks_patterns_and_margins():
    G = gt.sbm_graph(300, 30.0, 3.0, 0.4, seed=1)
    pat, y = G["pattern"], G["y"]
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert (y[pat == 0] == 1).all() and (y[pat == 1] == -1).all()
    assert 0.3 < (pat < 2).mean() < 0.5
    homo = gt.normalised_margin(G["spd"], pat, y, [1, 2, 3])
    assert np.argmax(homo) == 0
    H = gt.sbm_graph(300, 3.0, 30.0, 0.4, seed=1)
    hetero = gt.normalised_margin(H["spd"], H["pattern"], H["y"], [1, 2, 3])
    assert hetero[0] < 0 < hetero[1] and np.argmax(hetero) == 1


def test_normalised_margin_on_the_toy_graph():
    toy = gt.toy_graph()
    nm = gt.normalised_margin(toy["spd"], toy["pattern"], toy["y"], [1, 2])
    own = [gt.winning_margin(toy["spd"], toy["pattern"], toy["y"], z) / (toy["spd"] == z).sum(1) for z in (1, 2)]
    assert np.allclose(nm, [o.mean() for o in own])
    with pytest.raises(ValueError, match="zs"):
        gt.normalised_margin(toy["spd"], toy["pattern"], toy["y"], [0])


def test_train_on_graphs_restricts_distances_and_freezes_b():
    torch.set_num_threads(1)
    graphs = [gt.core_graph(80, 0.4, 0.0, 10, seed=s, core_distance=2) for s in (0, 1)]
    cfg = dict(TINY, Z=4, steps=20)
    r = gt.train_gt_graphs(graphs, [0, 1, 0], [40, 40, 40], cfg, distances=[(2,), (2,), (1, 2, 3)], pe=False)
    assert (r["b"] == 0).all() and r["test_hinge"].shape == (3,)
    r = gt.train_gt_graphs(graphs, [0], [40], cfg, distances=(2,))
    assert r["b"][0, 1] == 0 and r["b"][0, 3] == 0  # distances never drawn keep their initial PE
    with pytest.raises(ValueError, match="distances"):
        gt.train_gt_graphs(graphs, [0, 1], [40, 40], cfg, distances=[(1,), (2,), (3,)])
    with pytest.raises(ValueError, match="rows"):
        gt.train_gt_graphs(graphs, [2], [40], cfg)


def test_karate_factions_are_homophilous():
    K = gt.karate_graph()
    assert K["A"].shape == (34, 34) and (K["y"] > 0).sum() == 17
    nm = gt.normalised_margin(K["spd"], K["pattern"], K["y"], [1, 2, 3])
    assert (np.diff(nm) < 0).all() and nm[0] > 0


def test_graph_experiment_on_core_graphs_matches_its_parts():
    torch.set_num_threads(1)
    cfg = dict(TINY, Z=4, steps=3)
    r = gt.graph_experiment("core", (1, 2), (0, 1), (20, 40), cfg, runs={"pe": 11, "core": 12})
    assert r["margins"].shape == r["norm"].shape == (2, 2, 3)
    assert r["pe_hinge"].shape == r["core_err"].shape == (2, 2, 2) and r["pe_b"].shape == (2, 2, 2, 4)
    assert (r["core_b"] == 0).all()
    graphs = [gt.core_graph(80, 0.4, 0.05, 10, seed=s, core_distance=z) for z in (1, 2) for s in (0, 1)]
    G = graphs[3]  # z_m = 2, seed 1
    assert np.allclose(r["margins"][1, 1], [gt.winning_margin(G["spd"], G["pattern"], G["y"], z).mean()
                                            for z in (1, 2, 3)])
    assert np.allclose(r["norm"][1, 1], gt.normalised_margin(G["spd"], G["pattern"], G["y"], (1, 2, 3)))
    rows, sizes = np.repeat(np.arange(4), 2), np.tile([20, 40], 4)
    direct = gt.train_gt_graphs(graphs, rows, sizes, cfg, distances=(1, 2, 3), seed=11)
    assert np.array_equal(r["pe_hinge"].ravel(), direct["test_hinge"])
    core = gt.train_gt_graphs(graphs, rows, sizes, cfg, distances=[(1,)] * 4 + [(2,)] * 4, pe=False, seed=12)
    assert np.array_equal(r["core_err"].ravel(), core["test_err"])


def test_graph_experiment_on_sbms_trains_every_variant():
    torch.set_num_threads(1)
    cfg = dict(TINY, Z=3, steps=3)
    r = gt.graph_experiment("sbm", [(12.0, 2.0)], [0], (20, 40), cfg, runs={"nope": 1, "gcn": 2, "zonly": 3})
    assert r["nope_err"].shape == r["gcn_hinge"].shape == (1, 1, 2)
    assert r["zonly_err"].shape == (1, 1, 2) and r["zonly_b"].shape == (1, 1, 2, 3)
    assert (r["nope_b"] == 0).all() and (r["gcn_b"] == 0).all() and "pe_err" not in r
    assert ((0 <= r["gcn_err"]) & (r["gcn_err"] <= 1)).all()


def test_graph_experiment_rejects_bad_arguments():
    cfg = dict(TINY, Z=3, steps=2)
    with pytest.raises(ValueError, match="family"):
        gt.graph_experiment("tree", (1,), (0,), (20,), cfg, runs={"pe": 1})
    with pytest.raises(ValueError, match="runs"):
        gt.graph_experiment("sbm", [(12.0, 2.0)], (0,), (20,), cfg, runs={"core": 1})
    with pytest.raises(ValueError, match="runs"):
        gt.graph_experiment("core", (1,), (0,), (20,), cfg, runs={"attention": 1})
    with pytest.raises(ValueError, match="runs"):
        gt.graph_experiment("core", (1,), (0,), (20,), cfg, runs={})
    with pytest.raises(ValueError, match="params"):
        gt.graph_experiment("sbm", [12.0], (0,), (20,), cfg, runs={"pe": 1})
    with pytest.raises(ValueError, match="params"):
        gt.graph_experiment("core", (0,), (0,), (20,), cfg, runs={"pe": 1})
    with pytest.raises(ValueError, match="seeds"):
        gt.graph_experiment("core", (1,), (-1,), (20,), cfg, runs={"pe": 1})
    with pytest.raises(ValueError, match="Ls"):
        gt.graph_experiment("core", (1,), (0,), (), cfg, runs={"pe": 1})
    with pytest.raises(ValueError, match="Z"):
        gt.graph_experiment("core", (1,), (0,), (20,), dict(cfg, Z=1), runs={"pe": 1})
