"""Tests of chapter III.2 (symmetric and deep linear models on SIM), the curve readers it uses and its plots."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from lib import curves, stats
from lib.parts.concept_learning import deep_models, linear_gd, sim_data

# ------------------------------------------------------------------------------------------------------------
# lib.curves and lib.stats
# ------------------------------------------------------------------------------------------------------------


def test_count_peaks_simple_curves():
    t = np.linspace(0, 10, 1001)
    assert curves.count_peaks(np.exp(-t), 1e-3) == 0
    double = np.exp(-t) + 0.3 * np.exp(-((t - 5) ** 2))
    assert curves.count_peaks(double, 1e-2) == 1
    assert curves.n_descents(double, 1e-2) == 2
    batch = np.stack([np.exp(-t), double])
    np.testing.assert_array_equal(curves.count_peaks(batch, 1e-2), [0, 1])
    # a bump smaller than the prominence is ignored
    assert curves.count_peaks(np.exp(-t) + 1e-4 * np.exp(-((t - 5) ** 2)), 1e-2) == 0


def test_count_peaks_nonfinite_tail_is_cut():
    c = np.array([3.0, 2.0, 2.5, 1.0, np.nan, 5.0, 0.0])
    assert curves.count_peaks(c, 0.1) == 1


def test_detour_and_rebound():
    target = np.array([1.0, 1.0])
    straight = np.linspace(0, 1, 50)[:, None] * target
    assert curves.detour(straight, target) == 0.0
    bent = np.array([[0, 0], [0.5, 0.5], [0.0, 1.0], [1.0, 1.0]])
    assert curves.detour(bent, target) == pytest.approx(1.0 - np.sqrt(0.5))
    np.testing.assert_allclose(curves.distance_rebound([[3, 1, 2, 0], [3, 2, 1, 0]]), [1, 0])


def test_wilson_interval_properties():
    lo, hi = stats.wilson_interval(5, 20)
    assert lo < 0.25 < hi
    assert stats.wilson_interval(0, 10)[0] == 0.0
    assert stats.wilson_interval(10, 10)[1] == pytest.approx(1.0)
    # the interval narrows with n at a fixed proportion
    w1 = np.diff(stats.wilson_interval(10, 40))[0]
    w2 = np.diff(stats.wilson_interval(100, 400))[0]
    assert w2 < w1
    f = stats.frequency(np.array([True, False, True, True]))
    assert (f.k, f.n) == (3, 4) and f.p == 0.75 and "3/4" in str(f)


def test_order_violations():
    V = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    good = np.array([0.0, 1.0, 2.0, 3.0])
    assert stats.order_violations(V, good) == (0, 5)
    bad = np.array([0.0, 4.0, 2.0, 3.0])  # (0,1) > (1,1)
    assert stats.order_violations(V, bad) == (1, 5)
    v, n = stats.order_violations(V, np.stack([good, bad]), exclude=[0])
    np.testing.assert_array_equal(v, [0, 1])
    assert n == 2


@pytest.mark.parametrize(
    "call",
    [
        lambda: curves.count_peaks(np.ones(5), 0.0),
        lambda: curves.count_peaks(np.ones((2, 2, 2)), 0.1),
        lambda: stats.wilson_interval(5, 3),
        lambda: stats.wilson_interval(1, 0),
        lambda: stats.frequency(np.zeros((2, 2), bool)),
        lambda: curves.detour(np.zeros((5, 2)), np.zeros(3)),
        lambda: stats.order_violations(np.array([[0, 2]]), np.zeros(1)),
    ],
)
def test_analysis_bad_arguments(call):
    with pytest.raises(ValueError):
        call()


# ------------------------------------------------------------------------------------------------------------
# deep_models
# ------------------------------------------------------------------------------------------------------------


def test_second_moment_and_groups():
    np.testing.assert_allclose(sim_data.second_moment((1, 2), (0.05, 0.05), 3), [0.5025, 2.0025, 0.0])
    for s, d in [(2, 2), (2, 5), (3, 4)]:
        g = deep_models.entry_groups(s, d)
        assert g["major"].sum() == s
        assert g["minor"].sum() == 2 * s * d - s * s - s
        assert (g["major"] | g["minor"] | g["irrelevant"]).all()
        assert not (g["major"] & g["minor"]).any()
        union = np.zeros((d, d), bool)
        for m in g["groups"]:
            union |= m
        np.testing.assert_array_equal(union, g["minor"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gsn_decomposition_equals_d2(seed):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((4, 5, 7))
    W = U @ U.transpose(0, 2, 1)
    a = rng.random(5)
    G, S, N = deep_models.growth_suppression_noise(W, a)
    np.testing.assert_allclose(G - S - N, deep_models.w_update_d2(W, a), atol=1e-10)
    # d = 2 has no third index: the noise term of the off-diagonal entry vanishes
    _, _, N2 = deep_models.growth_suppression_noise(W[:, :2, :2], a[:2])
    assert np.abs(N2[:, 0, 1]).max() < 1e-10  # round-off of the full-sum-minus-two-terms evaluation


def test_gd_step_on_U_is_first_order_d2():
    rng = np.random.default_rng(0)
    U = rng.standard_normal((3, 3, 3)) * 0.3
    a = np.array([0.3, 0.8, 1.5])
    W0 = U @ U.transpose(0, 2, 1)
    errs = []
    for lr in (1e-2, 1e-3):
        run = deep_models.run_symmetric(a, (1, 1.5, 2), U, lr, 1, record_steps=[0, 1])
        errs.append(np.abs((run.W[1] - run.W[0]) / lr - deep_models.w_update_d2(W0, a)).max())
    assert errs[0] / errs[1] == pytest.approx(10, rel=0.05)


def test_identity_is_a_fixed_point_and_runs_converge():
    a = sim_data.second_moment((1, 2), (0.05, 0.05), 2)
    np.testing.assert_allclose(deep_models.w_update_d2(np.eye(2), a), 0, atol=1e-14)
    U0 = deep_models.init_symmetric(2, 2, 0.05, 20, seed=0)
    run = deep_models.run_symmetric(a, (1, 2), U0, 0.01, 6000)
    assert not run.diverged.any()
    np.testing.assert_allclose(run.W[-1], np.broadcast_to(np.eye(2), run.W[-1].shape), atol=1e-4)
    assert run.ood_loss().shape == (run.steps.size, 20)
    assert run.ood_loss()[-1].max() < 1e-6


def test_init_is_batch_independent_and_positive():
    U1 = deep_models.init_symmetric(3, 4, 0.1, 5, seed=7)
    U2 = deep_models.init_symmetric(3, 4, 0.1, 2, seed=7)
    np.testing.assert_array_equal(U1[:2], U2)
    assert (deep_models.init_symmetric(3, 4, 0.1, 5, positive=True) >= 0).all()


def test_mechanisms_fig5_sign_and_width():
    """Sec. 4.2.2 and App. E.2: a negative initial minor prevents the bump; a wide model has fewer bumps."""
    a = sim_data.second_moment((1, 2), (0.05, 0.05), 2)
    U0 = deep_models.init_symmetric(2, 2, 0.05, 200, seed=0)
    run = deep_models.run_symmetric(a, (1, 2), U0, 0.01, 4000)
    L = run.ood_loss().T
    bump = curves.count_peaks(L, 0.01 * L[:, 0].mean()) >= 1
    w12 = run.W[0, :, 0, 1]
    assert bump[w12 > 0].mean() > bump[w12 < 0].mean() + 0.2
    seq = deep_models.stage_sequence(run, prominence=0.01 * L[:, 0].mean())
    assert seq["in_order"][bump].all()
    U0w = deep_models.init_symmetric(2, 32, 0.05, 200, seed=0)
    runw = deep_models.run_symmetric(a, (1, 2), U0w, 0.01, 4000)
    Lw = runw.ood_loss().T
    assert (curves.count_peaks(Lw, 0.01 * Lw[:, 0].mean()) >= 1).mean() < bump.mean()


def test_plateau_stats_and_slope():
    assert deep_models.plateau_slope_theory([0.25, 1.0], 0) == pytest.approx(2.0)
    a = sim_data.second_moment((0.7, 1.7, 3.0), (0.05,) * 3, 3)
    U0 = deep_models.init_symmetric(3, 3, 0.05, 50, seed=0)
    run = deep_models.run_symmetric(a, (0.7, 1.7, 3.0), U0, 0.01, 8000)
    st = deep_models.plateau_stats(run)
    assert st["w_min"].shape == (50,)
    assert np.all(st["t_escape"] >= st["t_min"])
    assert np.isfinite(st["length"]).all()


def test_assumptions_checker():
    a = sim_data.second_moment((1.0, 1.5, 2.2), (0.05,) * 3, 3)
    W0 = np.full((3, 3), 0.01)
    res = deep_models.assumptions_satisfiable(a, W0, 0.01)
    assert res["D.1"] and not res["all"]
    # a hand-made case that satisfies all five with explicit constants
    # (omega at the D.4 bound forces log P of order 10 kappa^2 log(1/(P beta omega)) for D.5)
    a_ok = np.array([1.0, 1e4])
    W_ok = np.full((2, 2), 1e-107)
    r = deep_models.check_assumptions(a_ok, W_ok, 1e-7, P=1e100, K=20, kappa=1.15, C=1.01)
    assert r["all"], r
    # W0 with a zero entry violates D.1 (omega > 0)
    assert not deep_models.check_assumptions(a_ok, np.zeros((2, 2)), 1e-7)["D.1"]


def _sim_population_gd(mu, sig, d, depth, width, *, K, lr, steps, record_every=1, seed=0, **kw):
    ws, _ = linear_gd.init_deep_linear(d, d, depth, width, K=K, seed=seed)
    _, A = sim_data.population_moments(mu, sig, d)
    return ws, linear_gd.population_gd_deep_linear(ws, A, lr=lr, steps=steps, record_every=record_every, **kw)


def test_deep_linear_depth_one_matches_closed_form():
    """Depth 1: W_{k+1} = W_k - lr (W_k - I) A, so column p relaxes like (1 - lr a_p)^k (a_3 = 0: frozen)."""
    mu, sig = (1.0, 2.0), (0.05, 0.05)
    a = sim_data.second_moment(mu, sig, 3)
    _, r = _sim_population_gd(mu, sig, 3, 1, None, K=2, lr=0.1, steps=30, record_every=[0, 30])
    W0, W30 = r["W"][:, 0], r["W"][:, 1]
    expected = np.eye(3) + (W0 - np.eye(3)) * (1 - 0.1 * a) ** 30
    np.testing.assert_allclose(W30, expected, atol=1e-12)
    assert list(r["step"]) == [0, 30]


def test_deep_linear_gradient_matches_autograd():
    """One GD step on the full loss (every column of W_1, although A has rank 2) equals the thin computation."""
    import torch

    mu, sig = (1.0, 2.0), (0.05, 0.05)
    ws, r = _sim_population_gd(mu, sig, 3, 3, [4, 5], K=1, lr=1e-3, steps=1, x_eval=sim_data.ood_point(mu, 3))
    params = [w[0].clone().requires_grad_(True) for w in ws]
    A = torch.tensor(sim_data.population_moments(mu, sig, 3)[1])
    W = params[2] @ params[1] @ params[0]
    loss = 0.5 * torch.trace((W - torch.eye(3)) @ A @ (W - torch.eye(3)).T)
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        new = [p - 1e-3 * g for p, g in zip(params, grads)]
    assert abs(loss.item() - r["loss"][0, 0]) < 1e-14
    np.testing.assert_allclose(r["W"][0, 1], (new[2] @ new[1] @ new[0]).numpy(), atol=1e-13)
    for w, n in zip(r["weights"], new):
        np.testing.assert_allclose(w[0].numpy(), n.numpy(), atol=1e-14)
    assert torch.equal(r["weights"][0][0, :, 2], ws[0][0, :, 2])  # the third input column gets no gradient
    np.testing.assert_allclose(r["outputs"][0, :, 0], r["W"][0] @ sim_data.ood_point(mu, 3), atol=1e-14)


def test_init_model_k_is_independent_of_K():
    import torch

    ws, bs = linear_gd.init_deep_linear(3, 2, 3, [4, 5], K=3, bias=True, seed=7, init_scale=0.5)
    for k in range(3):
        w1, b1 = linear_gd.init_deep_linear(3, 2, 3, [4, 5], K=1, bias=True, seed=7 + k, init_scale=0.5)
        assert all(torch.equal(a[k], b[0]) for a, b in zip(ws + bs, w1 + b1))
    w_nob, none = linear_gd.init_deep_linear(3, 2, 3, [4, 5], K=3, seed=7, init_scale=0.5)
    assert none is None and all(torch.equal(a, b) for a, b in zip(ws, w_nob))
    assert [tuple(w.shape) for w in ws] == [(3, 4, 3), (3, 5, 4), (3, 2, 5)]
    assert all(w.abs().max() <= 0.5 / np.sqrt(w.shape[2]) for w in ws)


def test_population_gd_freezes_diverged_models_at_a_finite_state():
    import torch

    mu, sig = (1.0, 2.0), (0.05, 0.05)
    _, A = sim_data.population_moments(mu, sig, 2)
    ws, _ = linear_gd.init_deep_linear(2, 2, 3, 4, K=1, seed=0)
    big = [torch.cat([w, 4 * w]) for w in ws]  # model 1: the same net, scaled up so that it blows up
    r = linear_gd.population_gd_deep_linear(big, A, lr=0.05, steps=60, x_eval=sim_data.ood_point(mu, 2))
    assert list(r["diverged"]) == [False, True] and r["diverged_step"][1] > 0
    assert all(np.isfinite(w.numpy()).all() for w in r["weights"]) and np.isfinite(r["outputs"]).all()
    k = r["diverged_step"][1]
    assert np.all(r["outputs"][1, k:] == r["outputs"][1, -1])  # frozen from the detection on
    solo = linear_gd.population_gd_deep_linear(ws, A, lr=0.05, steps=60)
    np.testing.assert_array_equal(r["loss"][0], solo["loss"][0])  # the diverging model does not disturb model 0


def test_sgd_mlp_batched_learns_identity_and_model_k_is_independent_of_K():
    X, Q = sim_data.sim_samples((1.0, 2.0), (0.1, 0.1), 4, 300, seed=0)
    np.testing.assert_allclose(Q @ Q.T, np.eye(4), atol=1e-12)
    ws, bs = linear_gd.init_deep_linear(4, 4, 2, 16, K=2, bias=True, seed=0)
    r = linear_gd.sgd_mlp_batched(
        X, weights=ws, biases=bs, lr=0.05, steps=200, batch_size=32, x_eval=X[:3], record_every=[0, 200]
    )
    err0 = np.abs(r["outputs"][:, 0] - X[:3]).mean()
    err1 = np.abs(r["outputs"][:, 1] - X[:3]).mean()
    assert err1 < 0.3 * err0 and not r["diverged"].any() and list(r["step"]) == [0, 200]
    w1, b1 = linear_gd.init_deep_linear(4, 4, 2, 16, K=1, bias=True, seed=1)
    r1 = linear_gd.sgd_mlp_batched(
        X, weights=w1, biases=b1, lr=0.05, steps=200, batch_size=32, x_eval=X[:3], record_every=[0, 200], seed=1
    )
    np.testing.assert_allclose(r1["outputs"][0], r["outputs"][1], atol=1e-12)
    V, C = sim_data.hypercube_corners((1.0, 2.0, 3.0))
    assert V.shape == (8, 3) and np.allclose(C[-1], [1, 2, 3])


def test_sgd_mlp_batched_freezes_diverged_models():
    X, _ = sim_data.sim_samples((1.0, 2.0), (0.1, 0.1), 4, 100, seed=0)
    ws, _ = linear_gd.init_deep_linear(4, 4, 3, 8, K=2, seed=0)
    r = linear_gd.sgd_mlp_batched(X, weights=ws, lr=2.0, steps=100, batch_size=20, x_eval=X[:2])
    assert r["diverged"].all() and all(np.isfinite(w.numpy()).all() for w in r["weights"])
    k = r["diverged_step"][0]
    assert np.isnan(r["outputs"][0, list(r["step"]).index(k) + 1 :]).all()


@pytest.mark.parametrize(
    "call",
    [
        lambda: sim_data.second_moment((1, 2), (0.1,), 2),
        lambda: sim_data.second_moment((1, 2), (0.1, 0.1), 1),
        lambda: deep_models.entry_groups(3, 2),
        lambda: deep_models.init_symmetric(2, 2, -0.1, 3),
        lambda: deep_models.run_symmetric([1.0, 2.0], (1, 2), np.zeros((1, 3, 3)), 0.01, 10),
        lambda: deep_models.run_symmetric([1.0, 2.0], (1, 2), np.zeros((1, 2, 2)), 0.0, 10),
        lambda: deep_models.run_symmetric([1.0, 2.0], (1, 2), np.zeros((1, 2, 2)), 0.01, 10, record_steps=[5, 3]),
        lambda: deep_models.growth_suppression_noise(np.eye(3), [1.0, 2.0]),
        lambda: deep_models.check_assumptions([1.0, 2.0], np.eye(3), 0.01),
        lambda: linear_gd.init_deep_linear(2, 2, 3, [3, 0]),
        lambda: linear_gd.init_deep_linear(2, 2, 3, [3]),
        lambda: linear_gd.population_gd_deep_linear(
            linear_gd.init_deep_linear(2, 2, 1)[0], np.eye(2), lr=0.1, steps=5, record_every=[3, 9]
        ),
        lambda: linear_gd.sgd_mlp_batched(
            np.zeros((10, 2)), weights=linear_gd.init_deep_linear(2, 2, 1)[0], lr=0.1, steps=1, batch_size=2,
            activation="tanh",
        ),
        lambda: linear_gd.sgd_mlp_batched(
            np.zeros((10, 3)), weights=linear_gd.init_deep_linear(2, 2, 1)[0], lr=0.1, steps=1, batch_size=2
        ),
        lambda: deep_models.plateau_slope_theory([0.0, 1.0], 0),
    ],
)
def test_sim_deep_bad_arguments(call):
    with pytest.raises(ValueError):
        call()


# ------------------------------------------------------------------------------------------------------------
# concept_learning.plots
# ------------------------------------------------------------------------------------------------------------


def test_plots_sim_draw():
    import matplotlib.pyplot as plt

    from lib.parts.concept_learning.plots import (
        hypercube_positions,
        plot_entry_groups,
        plot_hypercube,
        plot_trajectory_plane,
    )

    pos = hypercube_positions(4)
    assert len(pos) == 16 and len({tuple(np.round(p, 9)) for p in pos.values()}) == 16
    V, _ = sim_data.hypercube_corners((1, 2, 3, 4))
    fig, axes = plt.subplots(1, 3)
    plot_hypercube(axes[0], V, np.linspace(0, 2, 16))
    plot_trajectory_plane(axes[1], np.random.default_rng(0).random((20, 3)), (1.0, 2.0), n_markers=5)
    plot_entry_groups(axes[2], 2, 4)
    plt.close(fig)
    with pytest.raises(ValueError):
        plot_hypercube(axes[0], V, np.zeros(15))
    with pytest.raises(ValueError):
        hypercube_positions(0)


def test_running_median_removes_spikes_and_checks_arguments():
    from lib.curves import distance_rebound, running_median

    x = np.array([3.0, 2.5, 2.0, 9.0, 1.0, 0.5])
    m = running_median(x, window=3)
    assert m.shape == x.shape and np.allclose(m, [3.0, 2.75, 2.5, 2.5, 2.0, 1.0])
    assert distance_rebound(m) == 0.0 < distance_rebound(x)   # the one-point spike is gone
    assert np.allclose(running_median(np.stack([x, 2 * x]), 3)[1], 2 * m)
    with pytest.raises(ValueError, match="window"):
        running_median(x, window=0)


def test_illusion_and_major_after_minor_on_fig5_runs():
    """Sec. 4.2.2: the first loss minimum of a bump run is carried by the growing minor entry; App. E.1: the minor
    peaks before the weak major rises."""
    a = sim_data.second_moment((1, 2), (0.05, 0.05), 2)
    U0 = deep_models.init_symmetric(2, 2, 0.05, 40, seed=0, positive=True)
    run = deep_models.run_symmetric(a, (1, 2), U0, 0.01, 4000)
    L = run.ood_loss().T
    prom = 0.01 * L[:, 0].mean()
    bump = curves.count_peaks(L, prom) >= 1
    assert bump.sum() >= 5
    freq = deep_models.illusion_fraction(run, L, bump, prom)
    assert freq.n == bump.sum() and freq.k / freq.n > 0.5
    assert all(deep_models.major_after_minor(run, int(b)) for b in np.nonzero(bump)[0])
    with pytest.raises(ValueError, match="bump"):
        deep_models.illusion_fraction(run, L, bump[:-1], prom)
    with pytest.raises(ValueError, match="b"):
        deep_models.major_after_minor(run, 40)


def test_deep_linear_population_run_records_every_seed():
    r = deep_models.deep_linear_population_run([1.0, 2.0], [0.1, 0.1], 3, 3, 4, n_seeds=2, lr=0.05, steps=50)
    R = len(r["steps"])
    assert r["output"].shape == (R, 2, 3) and r["ood_loss"].shape == r["train_loss"].shape == (R, 2)
    assert not r["diverged"].any() and (r["train_loss"][-1] < r["train_loss"][0]).all()


def test_deep_linear_sgd_run_sample_losses_are_exact():
    r = deep_models.deep_linear_sgd_run([1.0, 2.0], [0.1, 0.1], 2, 3, 4, n_seeds=2, lr=0.1, steps=30, batch_size=16,
                                        n_per_cluster=20, seed=3)
    R = len(r["steps"])
    assert r["output"].shape == (R, 2, 2)
    assert r["ood_loss"].shape == r["train_loss"].shape == r["heldout_loss"].shape == (R, 2)
    assert not r["diverged"].any() and (r["train_loss"][-1] < r["train_loss"][0]).all()
    # the losses at step 0 are those of the initial end-to-end map on the two samples of run 1 (seed 4)
    ws, _ = linear_gd.init_deep_linear(2, 2, 3, 4, K=2, seed=3)
    W = linear_gd.end_to_end([w[1:2] for w in ws])[0][0].numpy()
    for key, data_seed in (("train_loss", 4), ("heldout_loss", 4 + deep_models.HELDOUT_SEED_OFFSET)):
        X = sim_data.sim_gaussian_mixture([1.0, 2.0], [0.1, 0.1], 2, 20, seed=data_seed).X
        expect = 0.5 * np.mean(np.sum((X @ W.T - X) ** 2, axis=1))
        assert r[key][0, 1] == pytest.approx(expect, rel=1e-10)
    xh = sim_data.ood_point([1.0, 2.0], 2)
    assert r["ood_loss"][0, 1] == pytest.approx(0.5 * np.sum((W @ xh - xh) ** 2), rel=1e-10)
    # the held-out sample is a different draw
    assert not np.allclose(r["train_loss"], r["heldout_loss"])


def test_deep_linear_sgd_run_rejects_bad_arguments():
    with pytest.raises(ValueError, match="n_seeds"):
        deep_models.deep_linear_sgd_run([1.0, 2.0], [0.1, 0.1], 2, 2, 2, n_seeds=0, lr=0.1, steps=1)
    with pytest.raises(ValueError, match="batch_size"):
        deep_models.deep_linear_sgd_run([1.0, 2.0], [0.1, 0.1], 2, 2, 2, n_seeds=1, lr=0.1, steps=1, batch_size=99,
                                        n_per_cluster=10)


def test_bump_windows_trough_to_peak():
    t = np.linspace(0, 10, 1001)
    double = np.exp(-t) + 0.3 * np.exp(-((t - 5) ** 2))
    (wins,) = deep_models.bump_windows(double, 1e-2)
    assert len(wins) == 1
    trough, peak = wins[0]
    assert trough == int(np.argmin(double[: peak + 1])) and 3 < t[trough] < 5 and abs(t[peak] - 5) < 0.1
    # two bumps: the second window starts after the first peak; a monotone curve has none
    triple = double + 0.2 * np.exp(-((t - 8) ** 2))
    w2 = deep_models.bump_windows(np.stack([np.exp(-t), triple]), 1e-2)
    assert w2[0] == [] and len(w2[1]) == 2 and w2[1][1][0] > w2[1][0][1]
    with pytest.raises(ValueError, match="prominence"):
        deep_models.bump_windows(double, 0.0)
