"""Unit tests of chapter I.2 (Chen & Bruna: the scalar factorisation and the single ReLU neuron)."""

import math

import numpy as np
import pytest

from lib.data import sphere
from lib.parts.edge_of_stability import balancing, one_dimensional


def test_balancing_identities_random():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.1, 2, 100), rng.uniform(0.1, 2, 100)
    lr, mu = rng.uniform(0.5, 1.5, 100), rng.uniform(0.5, 2, 100)
    x1, y1 = balancing.scalar_fact_step(x, y, lr, mu)
    assert y1 - x1 == pytest.approx(balancing.imbalance_next(x, y, lr, mu))
    assert x1 * y1 == pytest.approx(balancing.product_next(x, y, lr, mu))


def test_balanced_2d_is_1d():
    xs, ys = balancing.run_scalar_fact(0.6, 0.6, 1.1, 50)
    one = 0.6
    for _ in range(50):
        one = one_dimensional.quartic_gd_map(one, 1.1)
    assert xs[-1] == pytest.approx(float(one)) and ys[-1] == pytest.approx(float(one))


def test_run_scalar_fact_records_divergence():
    xs, ys = balancing.run_scalar_fact(0.3, 3.0, 1.4, 200)
    assert np.isinf(xs[-1])


def test_lemma2_certificate_paper_numbers():
    c = balancing.lemma2_certificate(0.8, 1.3, 1.05)
    assert (
        c["certified"]
        and c["lhs"] == pytest.approx(0.5885, abs=1e-4)
        and c["p"] == pytest.approx(0.6096, abs=1e-4)
    )
    assert not balancing.lemma2_certificate(0.8, 1.3, 1.25)["certified"]
    assert not balancing.lemma2_certificate(0.5, 0.5, 1.05)["certified"]  # x0 y0 < mu
    with pytest.raises(ValueError, match="lr"):
        balancing.lemma2_certificate(0.8, 1.3, -1.0)


def test_hessian_and_sharpness_on_minimum_set():
    x = np.linspace(0.3, 3, 20)
    lam = balancing.sharpness_xy(x, 1 / x)
    assert lam == pytest.approx(x**2 + 1 / x**2)
    assert lam == pytest.approx(np.linalg.eigvalsh(balancing.hessian_xy(x, 1 / x))[:, -1])


def test_damian_manifold_interval():
    assert balancing.damian_manifold_interval(1.08) is None
    lo, hi = balancing.damian_manifold_interval(0.95)
    assert lo * hi == pytest.approx(1.0)
    assert lo + 1 / lo == pytest.approx(math.sqrt(2 + 2 / 0.95))
    px, py = balancing.project_onto_manifold(np.array([0.7]), np.array([1.5]), 0.95)
    assert lo - 1e-9 <= px[0] <= hi + 1e-9 and px[0] * py[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="lr"):
        balancing.damian_manifold_interval(0.0)


def test_damian_indicator_diagonal_branch():
    lam, gu = balancing.damian_indicator(np.array([0.5]), np.array([0.5]), 1.08)
    assert gu[0] == pytest.approx(0, abs=1e-12) and lam[0] == pytest.approx(0.75) and lam[0] < 2 / 1.08


def test_candidate_manifold_indicator_def4():
    # on the minima lambda_2 = 0 and the gradient vanishes; off them only the diagonal x = y < sqrt(1/2) is in M_c
    lam2, gu = balancing.candidate_manifold_indicator(np.array([2.0, 0.5, 0.6, 0.9]), np.array([0.5, 0.5, 0.6, 0.9]),
                                                      1.08)
    assert lam2[0] == pytest.approx(0, abs=1e-12) and gu[0] == pytest.approx(0, abs=1e-12)
    assert lam2[1] == pytest.approx(3 * 0.25 - 1) and gu[1] == pytest.approx(0, abs=1e-12)
    assert abs(gu[3]) > 0.1  # x = y = 0.9 > sqrt(1/2): the gradient lies along u_1
    with pytest.raises(ValueError, match="lr"):
        balancing.candidate_manifold_indicator(1.0, 1.0, 0.0)


def test_product_hessian_prop7():
    rng = np.random.default_rng(1)
    for _ in range(20):
        x = rng.lognormal(0, 0.5, 4)
        x /= np.prod(x) ** 0.25
        assert balancing.product_hessian_top(x) == pytest.approx(0.5 * np.sum(1 / x**2) * 1.0)
        assert balancing.product_hessian_top(x) >= balancing.prop7_min_sharpness(4) - 1e-12
    with pytest.raises(ValueError, match="x"):
        balancing.product_hessian_top(np.ones(1))


def test_single_neuron_gradient_matches_autograd_of_loss():
    import torch

    wt = np.array([1.0, 0.0, 0.0])

    def L(th):
        v, w = th[0], th[1:]
        nw = w.norm()
        a = torch.arccos(w[0] / nw)
        return (v * v * nw**2 - 2 / math.pi * v * nw * (torch.sin(a) + (math.pi - a) * torch.cos(a)) + 1) / 6

    th = torch.tensor([0.3, 0.2, 0.5, -0.4], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(L(th), th)
    gv, gw = balancing.single_neuron_population_grad(0.3, np.array([0.2, 0.5, -0.4]), wt)
    assert np.r_[gv, gw] == pytest.approx(g.numpy(), rel=1e-10)
    assert balancing.single_neuron_population_loss(0.3, np.array([0.2, 0.5, -0.4]), wt) == pytest.approx(
        float(L(th).detach())
    )


def test_single_neuron_loss_monte_carlo():
    rng = np.random.default_rng(0)
    X = sphere.sample_sphere(200_000, 3, rng)
    w, wt = np.array([0.2, 0.5, -0.4]), np.array([1.0, 0.0, 0.0])
    mc = np.mean((0.3 * np.maximum(X @ w, 0) - np.maximum(X @ wt, 0)) ** 2)
    assert mc == pytest.approx(balancing.single_neuron_population_loss(0.3, w, wt), abs=3e-3)


def test_reduced_step_equals_vector_gd():
    rng = np.random.default_rng(2)
    for _ in range(10):
        v, wx, wy, K = (
            rng.uniform(0.1, 1.2),
            rng.uniform(0.0, 1.2),
            rng.uniform(0.01, 1.0),
            rng.uniform(1, 1.1),
        )
        gv, gw = balancing.single_neuron_population_grad(v, np.array([wx, wy]), np.array([1.0, 0.0]))
        v1, w1 = v - 2 * K * gv, np.array([wx, wy]) - 2 * K * gw
        r = balancing.single_neuron_reduced_step(v, wx, wy, K)
        assert r == pytest.approx((v1, w1[0], abs(w1[1])), rel=1e-10)


def test_population_run_lands_on_eq6_orbit():
    run = balancing.run_single_neuron_population(1.1, 300)
    d1, d2 = one_dimensional.period2_orbit(1.0, 1.1)
    assert np.sort(run["v"][-2:]) == pytest.approx([d1, d2], abs=1e-8)
    assert run["wy"][-1] < 1e-8


def test_empirical_batch_shapes_and_single():
    rng = np.random.default_rng(0)
    Xb = np.stack([sphere.sample_sphere(50, 2, rng) for _ in range(3)])
    out = balancing.run_single_neuron_empirical(Xb, 2.2, 10)
    assert out["v"].shape == (11, 3) and out["w"].shape == (11, 3, 2) and out["wy"].shape == (11, 3)
    one = balancing.run_single_neuron_empirical(Xb[1], 2.2, 10)
    assert one["v"] == pytest.approx(out["v"][:, 1])
    with pytest.raises(ValueError, match="X"):
        balancing.run_single_neuron_empirical(np.zeros(5), 2.2, 10)
    with pytest.raises(ValueError, match="lr"):
        balancing.run_single_neuron_empirical(Xb, -1.0, 10)


def test_thm4_bound_values_and_arguments():
    b, T1 = balancing.thm4_bound(np.arange(20), 1.1, 0.1)
    assert T1 == 4 and np.isinf(b[:8]).all() and b[8] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="K"):
        balancing.thm4_bound(1, 1.2, 0.1)
    with pytest.raises(ValueError, match="eps"):
        balancing.thm4_bound(1, 1.05, 0.2)


def test_single_neuron_runs_record_divergence_and_keep_the_history():
    pop = balancing.run_single_neuron_population(np.array([1.1, 100.0]), 200)
    assert list(pop["diverged"]) == [False, True] and pop["diverged_step"][0] == -1
    k = pop["diverged_step"][1]
    assert np.isfinite(pop["v"][: k + 1, 1]).all() and np.isnan(pop["v"][k + 1 :, 1]).all()
    assert np.isfinite(pop["v"][:, 0]).all()
    X = sphere.sample_sphere(50, 2, np.random.default_rng(0))
    emp = balancing.run_single_neuron_empirical(X, 1e3, 100)
    assert emp["diverged"] and 0 <= emp["diverged_step"] < 100
    assert np.isnan(emp["loss"][-1]) and np.isfinite(emp["loss"][: emp["diverged_step"] + 1]).all()
