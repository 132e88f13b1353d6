"""Unit tests of chapter VI.3 (Li's thesis, ch. 4 and app. C: group imbalance), with lib.data.gmm and
lib.models.one_hidden."""

import numpy as np
import pytest
import torch

from lib.data import gmm as gm
from lib.models import one_hidden as oh
from lib.parts.generalisation import group_imbalance as gi


def _problem(n=400, seed=0, K=3):
    rng = np.random.default_rng(seed)
    g = gm.gaussian_mixture([0.5, 0.5], [np.ones(5), -np.ones(5)], [1.0, 1.0])
    W = rng.standard_normal((5, K))
    X, _ = gm.sample_mixture(g, n, rng)
    y = gm.teacher_labels(W, X, rng)
    return g, torch.tensor(W), torch.tensor(X), torch.tensor(y)


def test_mixture_sampling_moments_and_validation():
    rng = np.random.default_rng(1)
    g = gm.gaussian_mixture([0.3, 0.7], [np.ones(2), -np.ones(2)], [0.25, 4.0])
    X, grp = gm.sample_mixture(g, 40_000, rng)
    assert abs(grp.mean() - 0.7) < 0.01
    assert np.allclose(X[grp == 0].mean(0), 1, atol=0.02)
    assert np.allclose(np.cov(X[grp == 1].T), 4 * np.eye(2), atol=0.15)
    Xb, gb = gm.sample_mixture(g, 10, rng, batch=3)
    assert Xb.shape == (3, 10, 2) and gb.shape == (3, 10)
    with pytest.raises(ValueError, match="lambdas"):
        gm.gaussian_mixture([0.3, 0.3], [np.ones(2), np.ones(2)], [1.0, 1.0])
    with pytest.raises(ValueError, match="covs"):
        gm.gaussian_mixture([0.5, 0.5], [np.ones(2), np.ones(2)], [1.0, -1.0])
    with pytest.raises(ValueError, match="n"):
        gm.sample_mixture(g, 0, rng)
    cov = gm.rotated_covariance([1, 1.1, 1.2, 1.3, 1.4], rng)
    assert np.allclose(np.linalg.eigvalsh(cov), [1, 1.1, 1.2, 1.3, 1.4])


def test_gradient_and_hessian_match_autograd():
    _, W, X, y = _problem()
    f = lambda w: oh.cross_entropy_risk(w, X, y)  # noqa: E731
    assert torch.allclose(torch.func.grad(f)(W), oh.cross_entropy_gradient(W, X, y), atol=1e-12)
    Hf = torch.func.hessian(lambda v: f(v.reshape(3, 5).T))(W.T.reshape(-1))
    assert torch.allclose(Hf, oh.cross_entropy_hessian(W, X, y), atol=1e-12)


def test_gradient_and_hessian_broadcast_shared_data_over_members():
    # several starts sharing one data set through a size-1 axis, as newton_critical_point calls them
    g = torch.Generator().manual_seed(5)
    f64 = dict(generator=g, dtype=torch.float64)
    X, y, W = torch.randn(2, 1, 40, 4, **f64), torch.rand(2, 1, 40, **f64), torch.randn(2, 3, 4, 2, **f64)
    H, G = oh.cross_entropy_hessian(W, X, y), oh.cross_entropy_gradient(W, X, y)
    assert H.shape == (2, 3, 8, 8) and G.shape == (2, 3, 4, 2)
    for i in range(2):
        for j in range(3):
            assert torch.allclose(H[i, j], oh.cross_entropy_hessian(W[i, j], X[i, 0], y[i, 0]), atol=1e-14)
            assert torch.allclose(G[i, j], oh.cross_entropy_gradient(W[i, j], X[i, 0], y[i, 0]), atol=1e-14)


def test_teacher_hessian_with_soft_labels_is_psd_and_matches_autograd():
    _, W, X, _ = _problem(n=300)
    p = oh.one_hidden_probability(W, X)
    Hs = oh.cross_entropy_hessian(W, X, p)
    Hf = torch.func.hessian(lambda v: oh.cross_entropy_risk(v.reshape(3, 5).T, X, p))(W.T.reshape(-1))
    assert torch.allclose(Hs, Hf, atol=1e-12)
    assert torch.linalg.eigvalsh(Hs)[0] > -1e-12


def test_gd_batched_equals_single_runs_and_is_deterministic():
    _, W, X, y = _problem(n=300)
    W0 = gi.local_initialization(W, 3, torch.Generator().manual_seed(0))
    r = oh.gd_one_hidden(W0, X, y, 0.5, 20, record_every=5)
    for m in range(3):
        one = oh.gd_one_hidden(W0[m : m + 1], X, y, 0.5, 20)
        assert torch.allclose(r["W"][m], one["W"][0], atol=1e-13)
    assert r["trajectory"].shape == (5, 3, 5, 3) and r["steps"].tolist() == [0, 5, 10, 15, 20]
    r2 = oh.gd_one_hidden(W0, X, y, 0.5, 20, record_every=5)
    assert torch.equal(r["W"], r2["W"])
    assert not r["diverged"].any()
    big = oh.gd_one_hidden(W0, X, y, 1e9, 3)
    assert big["diverged"].all() and (big["diverged_step"] >= 1).all()
    with pytest.raises(ValueError, match="lr"):
        oh.gd_one_hidden(W0, X, y, -1.0, 3)
    with pytest.raises(ValueError, match="steps"):
        oh.gd_one_hidden(W0, X, y, 0.1, 0)


def test_newton_reaches_the_gd_limit():
    _, W, X, y = _problem(n=3000, seed=2)
    crit = oh.newton_critical_point(W, X, y)
    assert crit["grad_norm"] < 1e-9 and crit["min_eig"] > 0
    start = crit["W"][None] + 1e-3
    gd = oh.gd_one_hidden(start, X, y, 1.0, 50)
    assert (gd["W"][0] - crit["W"]).norm() < (start[0] - crit["W"]).norm()


def test_rho_scales_like_sigma_to_the_fourth_and_is_positive():
    s = np.array([0.01, 0.02, 0.04])
    r = gi.rho(np.zeros(3), s)
    slopes = np.diff(np.log(r)) / np.diff(np.log(s))
    assert np.allclose(slopes, 4, atol=0.05)
    assert gi.rho(np.array([1.0, -2.0]), 1.0) > 0
    assert gi.rho(np.zeros(2), 100.0) < gi.rho(np.zeros(2), 1.0)
    with pytest.raises(ValueError, match="sigma"):
        gi.rho(np.zeros(2), 0.0)
    with pytest.raises(ValueError, match="u"):
        gi.rho(np.zeros(1), 1.0)


def test_rho_keeps_its_digits_at_small_sigma():
    # (u_j^2 + 1)(beta0 - alpha0^2) at u = 0.25, sigma = 0.004: the variance 2.2499e-12 (40-digit quadrature)
    # times 1.0625; without normalised weights and centred moments the cancellation cost 3.4 %
    assert gi.rho(np.array([0.25, 0.25]), 0.004) == pytest.approx(2.2499e-12 * 1.0625, rel=1e-3)


def test_spread_rate_of_an_exact_geometric_curve():
    t = np.arange(0, 101, 10)
    sp = np.stack([0.9**t, 0.99**t], 1)
    v, r2 = gi.spread_rate(t, sp)
    assert np.allclose(v, [0.9, 0.99]) and np.allclose(r2, 1)
    W = torch.zeros(4, 2, 1)
    W[0, 0, 0] = 2.0
    assert torch.isclose(gi.weight_spread(W), torch.tensor(np.sqrt(3.0) / 2, dtype=W.dtype))


def test_score_moments_match_steins_identity():
    # Stein: E[f S_1] = E[∇f], E[f S_2] = E[∇²f], E[f S_3](I, I, α) = E[∇³f](I, I, α), for polynomial f on a
    # non-symmetric mixture: f = aᵀx (S_1), (aᵀx)² (S_2: 2 a aᵀ) and (aᵀx)³ (S_3: 6 (aᵀx)... contracted).
    rng = np.random.default_rng(3)
    g = gm.gaussian_mixture([0.4, 0.6], [np.array([1.0, 0.5, 0.0]), np.zeros(3)], [1.0, 0.5])
    a = np.array([0.6, -0.8, 0.0])
    X, _ = gm.sample_mixture(g, 200_000, rng)
    u = X @ a
    assert np.allclose(gi.score_moments(X, u, g)["Q1"], a, atol=0.03)
    assert np.allclose(gi.score_moments(X, u**2, g)["Q2"], 2 * np.outer(a, a), atol=0.08)
    alpha = np.array([0.0, 0.0, 1.0])
    q3 = gi.score_moments(X, u**3, g, alpha=a, U=np.eye(3))
    assert np.allclose(q3["Q3_IIa"], 6 * np.outer(a, a), atol=0.4)
    assert np.allclose(q3["Q3_UUU"] @ alpha, 0, atol=0.4)  # ∇³f(·, ·, α) = 6 (aᵀα) a aᵀ = 0


def test_tensor_initialization_recovers_w_star_in_the_working_setting():
    rng = np.random.default_rng(21)
    g = gm.gaussian_mixture([0.5, 0.5], [np.ones(5), np.zeros(5)], [1.0, 1.0])
    W = rng.standard_normal((5, 2))
    X, _ = gm.sample_mixture(g, 300_000, rng)
    y = gm.teacher_labels(W, X, rng)
    W0 = gi.tensor_initialization(X, y, 2, g, rng)
    assert gi.permutation_error(W0, W) / np.linalg.norm(W) < 0.5
    with pytest.raises(ValueError, match="K"):
        gi.tensor_initialization(X, y, 6, g, rng)


def test_curvature_and_risks():
    rng = np.random.default_rng(4)
    g = gm.gaussian_mixture([0.5, 0.5], [np.ones(5), -np.ones(5)], [1.0, 1.0])
    W = rng.standard_normal((5, 3))
    ev = gi.teacher_curvature(W, g, 5000, rng)
    assert ev.shape == (15,) and ev[0] > 0
    Wt = torch.tensor(W)
    avg, grp = gi.excess_risks(Wt, Wt, g, 100, rng)
    assert abs(float(avg)) < 1e-14 and grp.shape == (2,)
    pred = gi.asymptotic_excess(Wt[None], g, 1000, 5000, rng)
    assert np.isclose(pred[0] @ g.lambdas, 15 / 2000, rtol=1e-8)
    assert gi.permutation_error(W[:, ::-1], W) < 1e-12
    assert 0 < gi.gmm_step_size(g, 4.0) < 10
    with pytest.raises(ValueError, match="c"):
        gi.gmm_step_size(g, 0.0)


def test_draw_problems_shares_randomness_across_mixtures():
    g1 = gm.gaussian_mixture([0.5, 0.5], [np.ones(2), -np.ones(2)], [1.0, 1.0])
    g2 = gm.gaussian_mixture([0.5, 0.5], [np.ones(2), -np.ones(2)], [4.0, 4.0])
    W, X, y = gi.draw_problems([g1, g2], 2, 50, 3, np.random.default_rng(5))
    assert W.shape == (3, 2, 2) and X.shape == (2, 3, 50, 2) and y.shape == (2, 3, 50)
    # same groups and noise: x - mu doubles when the standard deviation doubles
    res = torch.stack([(X[1] - 2 * X[0] + m).abs().sum(-1) for m in (1.0, -1.0)]).min(0).values
    assert res.max() < 1e-12


def test_local_uniqueness_is_a_rate_and_checks_arguments():
    g = gm.gaussian_mixture([0.5, 0.5], [np.ones(3), np.zeros(3)], [1.0, 1.0])
    rate = gi.local_uniqueness(g, 2, 800, 2, 2, seed=1)
    assert rate in (0.0, 0.5, 1.0)
    assert gi.local_uniqueness(g, 2, 800, 2, 2, seed=1) == rate
    with pytest.raises(ValueError, match="inits"):
        gi.local_uniqueness(g, 2, 100, 2, 1, seed=1)


def test_uniqueness_map_matches_its_cells():
    means = [[np.ones(3), np.zeros(3)], [2 * np.ones(3), np.zeros(3)]]
    rates = gi.uniqueness_map([0.5, 0.5], means, [[1.0, 1.0], [1.0, 4.0]], 2, [300, 600], 2, 2, seed=5)
    assert rates.shape == (2, 2)
    g = gm.gaussian_mixture([0.5, 0.5], means[1], [1.0, 4.0])
    assert rates[1, 1] == gi.local_uniqueness(g, 2, 600, 2, 2, seed=5 + 600)
    with pytest.raises(ValueError, match="covs"):
        gi.uniqueness_map([0.5, 0.5], means, [[1.0, 1.0]], 2, [300], 2, 2, seed=5)
    with pytest.raises(ValueError, match="ns"):
        gi.uniqueness_map([0.5, 0.5], means, [[1.0, 1.0], [1.0, 1.0]], 2, [0], 2, 2, seed=5)


def test_gamma_function_reduces_to_rho_for_one_standard_group():
    """Def C.2.3 with one group N(0, I) and W* = I: tau = kappa = eta = 1, so Gamma = rho(0, 1); two equal
    groups give the same value; the covariance enters through rho's second argument and the ratio of norms."""
    one = gm.gaussian_mixture([1.0], np.zeros((1, 3)), [1.0])
    two = gm.gaussian_mixture([0.5, 0.5], np.zeros((2, 3)), [1.0, 1.0])
    assert gi.gamma_function(np.eye(3), one) == pytest.approx(gi.rho(np.zeros(3), 1.0), rel=1e-12)
    assert gi.gamma_function(np.eye(3), two) == pytest.approx(gi.gamma_function(np.eye(3), one), rel=1e-12)
    small = gm.gaussian_mixture([1.0], np.zeros((1, 3)), [0.04])
    assert gi.gamma_function(np.eye(3), small) == pytest.approx(gi.rho(np.zeros(3), 0.2), rel=1e-12)
    with pytest.raises(ValueError, match="W_star"):
        gi.gamma_function(np.eye(2), one)
