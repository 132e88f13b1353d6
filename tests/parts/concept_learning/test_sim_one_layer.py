"""Unit tests of the SIM data generator, the one-layer theory and the linear models (chapter
sim-one-layer)."""

import numpy as np
import pytest
import torch

from lib.models.mlp import MLP, DeepLinear
from lib.parts.concept_learning import sim_data, sim_one_layer
from lib.parts.concept_learning.linear_gd import (
    end_to_end,
    init_deep_linear,
    population_gd_deep_linear,
    sgd_mlp_batched,
)

MU, SIG = [1.0, 2.0], [0.05, 0.05]


# ---------------------------------------------------------------------------------------------------- data
def test_generator_shapes_and_support():
    data = sim_data.sim_gaussian_mixture(MU, SIG, d=6, n=50, seed=1)
    assert data.X.shape == (100, 6) and data.labels.shape == (100,)
    assert np.all(data.X[:, 2:] == 0)  # noise only in the first s coordinates
    np.testing.assert_allclose(data.x_hat, [1, 2, 0, 0, 0, 0])
    assert data.corners.shape == (4, 6) and data.corners_v.shape == (4, 2)
    np.testing.assert_allclose(data.corners[-1], data.x_hat)


def test_rotation_is_orthogonal_and_undone():
    data = sim_data.sim_gaussian_mixture(MU, SIG, d=8, n=20, rotate=True, seed=3)
    np.testing.assert_allclose(data.Q @ data.Q.T, np.eye(8), atol=1e-12)
    plain = sim_data.sim_gaussian_mixture(MU, SIG, d=8, n=20, rotate=False, seed=3)
    np.testing.assert_allclose(data.unrotate(data.X), plain.X, atol=1e-12)
    np.testing.assert_allclose(data.unrotate(data.x_hat), plain.x_hat, atol=1e-12)


def test_batch_matches_single_seeds():
    batch = sim_data.sim_gaussian_mixture_batch(MU, SIG, d=4, n=30, seeds=[0, 5], rotate=True)
    assert batch["X"].shape == (2, 60, 4)
    single = sim_data.sim_gaussian_mixture(MU, SIG, d=4, n=30, seed=5, rotate=True)
    np.testing.assert_allclose(batch["X"][1], single.X)


@pytest.mark.parametrize("origin", [False, True])
def test_population_moments_match_large_sample(origin):
    mu, sig = [1.0, 2.0, 0.5], [0.3, 0.1, 0.7]
    data = sim_data.sim_gaussian_mixture(mu, sig, d=5, n=40000, seed=0, origin_cluster=origin)
    m, A = sim_data.population_moments(mu, sig, d=5, origin_cluster=origin)
    me, Ae = data.moments(empirical=True)
    assert np.abs(A - Ae).max() < 0.03 and np.abs(m - me).max() < 0.01
    np.testing.assert_allclose(np.diag(A)[:3], sim_data.concept_rates(mu, sig, origin_cluster=origin))


def test_data_rejects_bad_arguments():
    with pytest.raises(ValueError, match="mu"):
        sim_data.sim_gaussian_mixture([-1.0, 2.0], SIG)
    with pytest.raises(ValueError, match="sigma"):
        sim_data.sim_gaussian_mixture(MU, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="d"):
        sim_data.sim_gaussian_mixture(MU, SIG, d=1)
    with pytest.raises(ValueError, match="n"):
        sim_data.sim_gaussian_mixture(MU, SIG, n=0)
    with pytest.raises(ValueError, match="Q"):
        sim_data.ood_point(MU, 3, Q=np.ones((3, 3)))


# ---------------------------------------------------------------------------------------------------- theory
def test_theorem41_is_the_exact_flow():
    """W(t) from Thm 4.1 solves dW/dt = -(W - I) A: check the ODE by a central difference."""
    rng = np.random.default_rng(0)
    d = 5
    W0 = rng.normal(0, 0.1, (d, d))
    t = np.array([0.3, 0.3 + 1e-5, 0.3 - 1e-5])
    W = sim_one_layer.one_layer_weights(MU, SIG, t, W0, d=d)
    _, A = sim_data.population_moments(MU, SIG, d)
    dW = (W[1] - W[2]) / 2e-5
    np.testing.assert_allclose(dW, -(W[0] - np.eye(d)) @ A, atol=1e-6)
    np.testing.assert_allclose(
        sim_one_layer.one_layer_flow(MU, SIG, t, W0, d=d), W @ sim_data.ood_point(MU, d), atol=1e-12
    )
    G, N = sim_one_layer.theorem41_terms(MU, SIG, t, W0, d=d)
    np.testing.assert_allclose(G + N, sim_one_layer.one_layer_flow(MU, SIG, t, W0, d=d))


def test_gd_converges_to_flow_first_order():
    errs = []
    for lr in (0.04, 0.02, 0.01):
        steps = int(round(4 / lr))
        gd = sim_one_layer.one_layer_gd(MU, SIG, lr, steps, d=2)["outputs"]
        flow = sim_one_layer.one_layer_flow(MU, SIG, lr * np.arange(steps + 1), d=2)
        errs.append(np.abs(gd - flow).max())
    ratios = np.array(errs[:-1]) / np.array(errs[1:])
    assert np.all(np.abs(ratios - 2) < 0.2)


def test_gd_moments_matches_population_gd_and_batched_gd():
    d = 4
    _, A = sim_data.population_moments(MU, [0.3, 0.2], d)
    rng = np.random.default_rng(1)
    W0 = rng.normal(0, 0.05, (d, d))
    z = sim_data.ood_point(MU, d)
    steps, out = sim_one_layer.one_layer_gd_moments(A, 0.1, 30, W0=W0, z=z)
    res = population_gd_deep_linear([torch.tensor(W0)[None]], A, lr=0.1, steps=30, x_eval=z)
    np.testing.assert_allclose(out, res["outputs"][0, :, 0, :], atol=1e-12)


def test_learning_times_exact_for_gd_and_order():
    _, A = sim_data.population_moments(MU, SIG, 2)
    steps, out = sim_one_layer.one_layer_gd_moments(A, 0.1, 4000, z=sim_data.ood_point(MU))
    tau = sim_one_layer.learning_times(out, MU, 0.1 * steps)
    np.testing.assert_allclose(tau, sim_one_layer.predicted_learning_times(MU, SIG, 400.0, lr=0.1), rtol=1e-10)
    assert list(sim_one_layer.learning_order(MU, SIG)) == [1, 0]
    assert list(sim_one_layer.learning_order(MU, [2.0, 0.05])) == [0, 1]


def test_flip_points_equalise_rates():
    s1 = sim_one_layer.flip_sigma(MU, [0.05, 0.05], 0, 1)
    a = sim_data.concept_rates(MU, [s1, 0.05])
    assert abs(a[0] - a[1]) < 1e-12 and abs(s1 - np.sqrt(1.5025)) < 1e-12
    m1 = sim_one_layer.flip_mu(MU, [0.3, 0.3], 0, 1)
    assert abs(m1 - 2.0) < 1e-12
    assert np.isnan(sim_one_layer.flip_sigma([3.0, 1.0], [0.05, 0.05], 0, 1))


def test_affine_flow_reduces_and_stalls():
    t = np.array([0.0, 5.0, 316.0])
    # a zero-mean-free check: the affine flow solves the ODE of the augmented system
    out = sim_one_layer.affine_flow(MU, SIG, t, d=2)
    np.testing.assert_allclose(out[0], [0, 0], atol=1e-12)
    lam = sim_one_layer.affine_rates(MU, SIG)
    assert lam[0] < 2e-3 < 0.5 < lam[1]  # O(sigma^2) slowest rate
    assert np.linalg.norm(out[-1] - MU) > 0.2  # still far at t = 316 (the Sec. 3.2 stall)
    fast = sim_one_layer.affine_flow(MU, [2.0, 0.05], t, d=2)
    assert np.linalg.norm(fast[-1] - MU) < 1e-6
    assert sim_one_layer.affine_rates(MU, SIG, origin_cluster=True)[0] > 0.1


def test_affine_flow_matches_affine_population_gd():
    d = 3
    m, A = sim_data.population_moments(MU, [0.5, 0.3], d)
    ws, bs = init_deep_linear(d, d, 1, K=1, init_scale=0.5, bias=True, seed=2)
    lr, steps = 1e-3, 3000
    res = population_gd_deep_linear(
        ws, A, lr=lr, steps=steps, biases=bs, m=m, x_eval=sim_data.ood_point(MU, d), record_every=steps
    )
    flow = sim_one_layer.affine_flow(MU, [0.5, 0.3], [lr * steps], W0=ws[0][0].numpy(), b0=bs[0][0].numpy(), d=d)
    assert np.abs(res["outputs"][0, -1, 0] - flow[0]).max() < 5e-3


def test_fit_exponential_rate_recovers_rate():
    t = np.linspace(0, 10, 200)
    r, used = sim_one_layer.fit_exponential_rate(t, 3 * np.exp(-0.7 * t), 1e-3, 1.0)
    assert abs(r - 0.7) < 1e-10 and used > 3


def test_theory_rejects_bad_arguments():
    with pytest.raises(ValueError, match="times"):
        sim_one_layer.one_layer_flow(MU, SIG, [-1.0])
    with pytest.raises(ValueError, match="W0"):
        sim_one_layer.one_layer_flow(MU, SIG, [1.0], W0=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="lr"):
        sim_one_layer.one_layer_gd(MU, SIG, 0.0, 10)
    with pytest.raises(ValueError, match="lo"):
        sim_one_layer.fit_exponential_rate([0, 1, 2], [1, 1, 1], 0.5, 0.1)
    with pytest.raises(ValueError, match="k"):
        sim_one_layer.flip_sigma(MU, SIG, 5, 0)


# ---------------------------------------------------------------------------------------------------- models
def test_deep_linear_jacobian_and_population_gd_gradient():
    torch.manual_seed(0)
    net = DeepLinear(4, 4, depth=3, width=5, bias=True, init_scale=0.7).double()
    x = torch.randn(4, dtype=torch.float64)
    np.testing.assert_allclose((net(x) - net.offset()).detach(), (net.jacobian() @ x).detach(), atol=1e-12)
    # population GD gradient equals autograd of 1/2 E||f(x) - x||^2 written with the moments
    m, A = sim_data.population_moments(MU, [0.3, 0.2], 4)
    ws, bs = init_deep_linear(4, 4, 3, 5, K=1, bias=True, seed=4)
    res = population_gd_deep_linear(ws, A, lr=0.1, steps=1, biases=bs, m=m)
    params = [w[0].clone().requires_grad_() for w in ws] + [b[0].clone().requires_grad_() for b in bs]
    W, c = end_to_end([p[None] for p in params[:3]], [p[None] for p in params[3:]])
    R = W[0] - torch.eye(4, dtype=torch.float64)
    At, mt = torch.tensor(A), torch.tensor(m)
    loss = 0.5 * torch.trace(R @ At @ R.T) + c[0] @ R @ mt + 0.5 * c[0] @ c[0]
    loss.backward()
    assert abs(loss.item() - res["loss"][0, 0]) < 1e-12
    for p, new in zip(params[:3], res["weights"]):
        np.testing.assert_allclose((p - 0.1 * p.grad).detach(), new[0], atol=1e-12)


def test_mlp_jacobian_shapes():
    mlp = MLP(3, 3, depth=2, width=8, activation="relu").double()
    assert mlp.jacobian_at(torch.zeros(3, dtype=torch.float64)).shape == (3, 3)
    assert mlp.jacobian_at(torch.randn(5, 3, dtype=torch.float64)).shape == (5, 3, 3)
    lin = MLP(3, 3, depth=2, width=8, activation="linear", bias=False).double()
    J = lin.jacobian_at(torch.randn(3, dtype=torch.float64))
    np.testing.assert_allclose(J.detach(), (lin.layers[1].weight @ lin.layers[0].weight).detach(), atol=1e-12)


def test_sgd_full_batch_equals_gd():
    data = sim_data.sim_gaussian_mixture(MU, [0.3, 0.2], d=3, n=20, seed=0)
    X = torch.tensor(data.X)[None]
    W0 = torch.zeros(1, 3, 3, dtype=torch.float64)
    res = sgd_mlp_batched(X, weights=[W0], lr=0.1, steps=5, batch_size=40, x_eval=torch.tensor(data.x_hat))
    steps, out = sim_one_layer.one_layer_gd_moments(sim_data.empirical_second_moment(data.X), 0.1, 5, z=data.x_hat)
    np.testing.assert_allclose(res["outputs"][0, :, 0, :], out, atol=1e-12)
    assert list(res["step"]) == list(steps) and not res["diverged"].any()


def test_models_reject_bad_arguments():
    with pytest.raises(ValueError, match="width"):
        DeepLinear(3, 3, depth=2)
    with pytest.raises(ValueError, match="activation"):
        MLP(3, 3, activation="tanh")
    with pytest.raises(ValueError, match="lr"):
        population_gd_deep_linear(init_deep_linear(2, 2, 1)[0], np.eye(2), lr=-1.0, steps=3)
    with pytest.raises(ValueError, match="A"):
        population_gd_deep_linear(init_deep_linear(2, 2, 1)[0], np.eye(3), lr=0.1, steps=3)
    with pytest.raises(ValueError, match="x_eval"):
        ws2 = init_deep_linear(2, 2, 1, K=2)[0]
        population_gd_deep_linear(ws2, np.eye(2), lr=0.1, steps=1, x_eval=np.ones((3, 1, 2)))
    with pytest.raises(ValueError, match="batch_size"):
        sgd_mlp_batched(torch.zeros(1, 4, 2), weights=[torch.zeros(1, 2, 2)], lr=0.1, steps=1, batch_size=0)


def test_one_layer_gd_records_divergence_and_keeps_the_history():
    fine = sim_one_layer.one_layer_gd(MU, SIG, 0.1, 50, d=2)
    assert not fine["diverged"] and fine["diverged_step"] == -1 and np.isfinite(fine["outputs"]).all()
    rate = sim_data.concept_rates(MU, SIG).max()
    run = sim_one_layer.one_layer_gd(MU, SIG, 3.0 / rate, 2000, d=2)  # |1 - lr a| = 2: geometric blow-up
    k = run["diverged_step"]
    assert run["diverged"] and 0 < k < 2000
    assert np.isfinite(run["outputs"][: k + 1]).all() and np.isnan(run["outputs"][k + 1 :]).all()


def test_rate_sampling_std_matches_monte_carlo():
    mu, sig, n = np.array([1.0, 2.0]), np.array([0.3, 0.5]), 50
    s = mu.size
    rng = np.random.default_rng(0)
    # each cluster k: n points with x_k = mu_k + sig_k z, the other coordinate pure noise sig_j z
    x = rng.standard_normal((4000, s, n, s)) * sig[None, None, None, :] + np.eye(s)[None, :, None, :] * mu
    a_hat = (x**2).sum(axis=(1, 2)) / (s * n)  # (runs, s)
    np.testing.assert_allclose(a_hat.std(axis=0), sim_one_layer.rate_sampling_std(mu, sig, n), rtol=0.08)
