"""Unit tests of lib.theory.eos.scalar (Chen & Bruna, 1-D / 2-D / single-neuron theory)."""

import math

import numpy as np
import pytest

from lib.theory import eos as eos_pkg
from lib.theory.eos import scalar as eos


def test_public_api_reexported():
    assert eos_pkg.period2_orbit is eos.period2_orbit
    assert eos_pkg.stable_oscillation_condition is eos.stable_oscillation_condition
    assert set(eos.__all__) <= set(dir(eos))


@pytest.mark.parametrize("K", [1.001, 1.01, 1.05, 1.1, 1.2, 1.3, 1.5])
@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_period2_orbit_is_a_two_cycle(K, mu):
    d1, d2 = eos.period2_orbit(mu, K / mu)
    assert d1 < math.sqrt(mu) < d2
    F = lambda x: eos.quartic_gd_map(x, K, mu)
    assert F(d1) == pytest.approx(d2, rel=1e-12)
    assert F(d2) == pytest.approx(d1, rel=1e-12)
    # Eq. (4) itself
    for d in (d1, d2):
        assert K / mu == pytest.approx(1 / (d * d * (math.sqrt(mu / d**2 - 0.75) + 0.5)), rel=1e-10)


def test_period2_orbit_paper_values_and_arrays():
    assert eos.period2_orbit(1.0, 1.05) == pytest.approx((0.87287, 1.09109), abs=1e-5)
    lo, hi = eos.period2_orbit(1.0, np.array([1.01, 1.5]))
    assert lo == pytest.approx([0.94653, 1 / math.sqrt(3)], abs=1e-5)
    assert hi == pytest.approx([1.04603, math.sqrt(4 / 3)], abs=1e-5)


@pytest.mark.parametrize("eta", [0.5, 1.0, 1.51, -1.0, float("nan")])
def test_period2_orbit_rejects_eta_outside_range(eta):
    with pytest.raises(ValueError, match="eta"):
        eos.period2_orbit(1.0, eta)


def test_period2_orbit_rejects_bad_mu():
    with pytest.raises(ValueError, match="mu"):
        eos.period2_orbit(-1.0, 1.1)


def test_multiplier_formula_matches_numeric_and_threshold():
    for K in np.linspace(1.001, 1.5, 30):
        assert eos.two_cycle_multiplier(K) == pytest.approx(eos.quartic_multiplier_numeric(K), abs=1e-10)
    assert eos.two_cycle_multiplier(1.0) == pytest.approx(1.0)
    assert eos.two_cycle_multiplier(eos.SQRT5_MINUS_1) == pytest.approx(-1.0)


def test_stable_oscillation_condition_floats_and_arrays():
    assert eos.stable_oscillation_condition(2.0, 6.0, 6.0) == pytest.approx(96.0)  # quartic, mu=1
    out = eos.stable_oscillation_condition(np.array([2.0, 1.0]), np.array([6.0, 0.0]), np.array([6.0, -1.0]))
    assert out == pytest.approx([96.0, 1.0])


@pytest.mark.parametrize("mu", [0.5, 2.0])
def test_quartic_derivatives_closed_form(mu):
    f = eos.quartic(mu)
    d = f.at_min(4)
    assert d[1] == pytest.approx(0, abs=1e-12)
    assert d[2:] == pytest.approx([2 * mu, 6 * math.sqrt(mu), 6.0])
    assert eos.oscillation_test(f)["condition"] == pytest.approx(96 * mu)


def test_least_squares_derivative_identities():
    """Prop 1: f'' = 2g'^2, f''' = 6g'g'', f'''' = 6g''^2 + 8g'g''' at the minimum (here g = tanh)."""
    y = 0.5
    xb = math.atanh(y)
    f = [fn for fn in eos.example_functions() if fn.name == "tanh"][0]
    s = 1 / math.cosh(xb) ** 2
    g1, g2, g3 = s, -2 * s * y, -2 * s**2 + 4 * s * y**2
    d = f.at_min(4)
    assert d[2:] == pytest.approx([2 * g1**2, 6 * g1 * g2, 6 * g2**2 + 8 * g1 * g3], rel=1e-10)
    assert g1 * g3 - 6 * g2**2 == pytest.approx(-2 * s**3 - 20 * s**2 * y**2)  # Cor 4's formula


def test_higher_order_test_cases():
    assert eos.higher_order_test([2.0, 6.0, 6.0]) == dict(k=3, case="thm1", holds=True)
    assert eos.higher_order_test([2.0, 1.0, 10.0])["holds"] is False  # 3 - 20 < 0
    assert eos.higher_order_test([2.0, 0.0, -2.0]) == dict(k=4, case="even", holds=True)  # 2 sin x
    assert eos.higher_order_test([2.0, 0.0, 2.0])["holds"] is False
    assert eos.higher_order_test([1.0, 0.0, 0.0, 3.0, -1.0]) == dict(k=5, case="odd", holds=True)
    assert eos.higher_order_test([1.0, 0.0, 0.0, 3.0, 1.0])["holds"] is False
    assert eos.higher_order_test([1.0, 0.0, 0.0])["case"] == "flat"
    with pytest.raises(ValueError, match="derivs"):
        eos.higher_order_test([1.0])
    with pytest.raises(ValueError, match="derivs"):
        eos.higher_order_test([-1.0, 1.0, 1.0])


def test_example_functions_signs():
    for f in eos.example_functions():
        assert f.at_min(1)[1] == pytest.approx(0, abs=1e-10), f.name
        assert eos.oscillation_test(f)["holds"] == f.expect_oscillation, f.name


def test_composition_counterexample_is_quadratic():
    f = [fn for fn in eos.example_functions() if fn.name == "log(exp)"][0]
    d = f.at_min(4)
    assert d[2:] == pytest.approx([2.0, 0.0, 0.0], abs=1e-10)


def test_two_cycle_learning_rate_side_and_stability():
    q = eos.quartic(1.0)
    c = eos.two_cycle_learning_rate(q, 0.02)
    assert 1 < c["ratio"] < 1 / (1 - 0.02 * 3)  # Thm 1's interval (2/f'', 2/(f'' - eps f'''))
    assert c["stable"]
    assert eos.two_step_gap(q, c["x0"], c["eta"]) == pytest.approx(0, abs=1e-12)
    bad = [fn for fn in eos.example_functions() if fn.name == "x^0.9"][0]
    cb = eos.two_cycle_learning_rate(bad, -0.02)
    assert cb["ratio"] < 1 and not cb["stable"]
    with pytest.raises(ValueError, match="eps"):
        eos.two_cycle_learning_rate(q, 0.0)


def test_gd_iterate_many_matches_gd_map():
    funcs = [eos.quartic(1.0), eos.two_sin()]
    etas = np.array([1.05, 1.01])
    x0 = np.array([0.7, -1.3])
    tr = eos.gd_iterate_many(funcs, x0, etas, 5)
    for i, f in enumerate(funcs):
        x = np.array(x0[i])
        for _ in range(5):
            x = eos.gd_map(f, etas[i])(x)
        assert tr[-1, i] == pytest.approx(float(x), rel=1e-12)
    with pytest.raises(ValueError, match="x0"):
        eos.gd_iterate_many(funcs, np.zeros(3), etas, 5)


def test_balancing_identities_random():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.1, 2, 100), rng.uniform(0.1, 2, 100)
    eta, mu = rng.uniform(0.5, 1.5, 100), rng.uniform(0.5, 2, 100)
    x1, y1 = eos.scalar_fact_step(x, y, eta, mu)
    assert y1 - x1 == pytest.approx(eos.imbalance_next(x, y, eta, mu))
    assert x1 * y1 == pytest.approx(eos.product_next(x, y, eta, mu))


def test_balanced_2d_is_1d():
    xs, ys = eos.run_scalar_fact(0.6, 0.6, 1.1, 50)
    one = 0.6
    for _ in range(50):
        one = eos.quartic_gd_map(one, 1.1)
    assert xs[-1] == pytest.approx(float(one)) and ys[-1] == pytest.approx(float(one))


def test_run_scalar_fact_records_divergence():
    xs, ys = eos.run_scalar_fact(0.3, 3.0, 1.4, 200)
    assert np.isinf(xs[-1])


def test_lemma2_certificate_paper_numbers():
    c = eos.lemma2_certificate(0.8, 1.3, 1.05)
    assert (
        c["certified"]
        and c["lhs"] == pytest.approx(0.5885, abs=1e-4)
        and c["p"] == pytest.approx(0.6096, abs=1e-4)
    )
    assert not eos.lemma2_certificate(0.8, 1.3, 1.25)["certified"]
    assert not eos.lemma2_certificate(0.5, 0.5, 1.05)["certified"]  # x0 y0 < mu
    with pytest.raises(ValueError, match="eta"):
        eos.lemma2_certificate(0.8, 1.3, -1.0)


def test_hessian_and_sharpness_on_minimum_set():
    x = np.linspace(0.3, 3, 20)
    lam = eos.sharpness_xy(x, 1 / x)
    assert lam == pytest.approx(x**2 + 1 / x**2)
    assert lam == pytest.approx(np.linalg.eigvalsh(eos.hessian_xy(x, 1 / x))[:, -1])


def test_damian_manifold_interval():
    assert eos.damian_manifold_interval(1.08) is None
    lo, hi = eos.damian_manifold_interval(0.95)
    assert lo * hi == pytest.approx(1.0)
    assert lo + 1 / lo == pytest.approx(math.sqrt(2 + 2 / 0.95))
    px, py = eos.project_onto_manifold(np.array([0.7]), np.array([1.5]), 0.95)
    assert lo - 1e-9 <= px[0] <= hi + 1e-9 and px[0] * py[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="eta"):
        eos.damian_manifold_interval(0.0)


def test_damian_indicator_diagonal_branch():
    lam, gu = eos.damian_indicator(np.array([0.5]), np.array([0.5]), 1.08)
    assert gu[0] == pytest.approx(0, abs=1e-12) and lam[0] == pytest.approx(0.75) and lam[0] < 2 / 1.08


def test_product_hessian_prop7():
    rng = np.random.default_rng(1)
    for _ in range(20):
        x = rng.lognormal(0, 0.5, 4)
        x /= np.prod(x) ** 0.25
        assert eos.product_hessian_top(x) == pytest.approx(0.5 * np.sum(1 / x**2) * 1.0)
        assert eos.product_hessian_top(x) >= eos.prop7_min_sharpness(4) - 1e-12
    with pytest.raises(ValueError, match="x"):
        eos.product_hessian_top(np.ones(1))


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
    gv, gw = eos.single_neuron_population_grad(0.3, np.array([0.2, 0.5, -0.4]), wt)
    assert np.r_[gv, gw] == pytest.approx(g.numpy(), rel=1e-10)
    assert eos.single_neuron_population_loss(0.3, np.array([0.2, 0.5, -0.4]), wt) == pytest.approx(
        float(L(th).detach())
    )


def test_single_neuron_loss_monte_carlo():
    rng = np.random.default_rng(0)
    X = eos.sample_sphere(200_000, 3, rng)
    w, wt = np.array([0.2, 0.5, -0.4]), np.array([1.0, 0.0, 0.0])
    mc = np.mean((0.3 * np.maximum(X @ w, 0) - np.maximum(X @ wt, 0)) ** 2)
    assert mc == pytest.approx(eos.single_neuron_population_loss(0.3, w, wt), abs=3e-3)


def test_reduced_step_equals_vector_gd():
    rng = np.random.default_rng(2)
    for _ in range(10):
        v, wx, wy, K = (
            rng.uniform(0.1, 1.2),
            rng.uniform(0.0, 1.2),
            rng.uniform(0.01, 1.0),
            rng.uniform(1, 1.1),
        )
        gv, gw = eos.single_neuron_population_grad(v, np.array([wx, wy]), np.array([1.0, 0.0]))
        v1, w1 = v - 2 * K * gv, np.array([wx, wy]) - 2 * K * gw
        r = eos.single_neuron_reduced_step(v, wx, wy, K)
        assert r == pytest.approx((v1, w1[0], abs(w1[1])), rel=1e-10)


def test_population_run_lands_on_eq6_orbit():
    run = eos.run_single_neuron_population(1.1, 300)
    d1, d2 = eos.period2_orbit(1.0, 1.1)
    assert np.sort(run["v"][-2:]) == pytest.approx([d1, d2], abs=1e-8)
    assert run["wy"][-1] < 1e-8


def test_empirical_batch_shapes_and_single():
    rng = np.random.default_rng(0)
    Xb = np.stack([eos.sample_sphere(50, 2, rng) for _ in range(3)])
    out = eos.run_single_neuron_empirical(Xb, 2.2, 10)
    assert out["v"].shape == (11, 3) and out["w"].shape == (11, 3, 2) and out["wy"].shape == (11, 3)
    one = eos.run_single_neuron_empirical(Xb[1], 2.2, 10)
    assert one["v"] == pytest.approx(out["v"][:, 1])
    with pytest.raises(ValueError, match="X"):
        eos.run_single_neuron_empirical(np.zeros(5), 2.2, 10)
    with pytest.raises(ValueError, match="eta"):
        eos.run_single_neuron_empirical(Xb, -1.0, 10)


def test_thm4_bound_values_and_arguments():
    b, T1 = eos.thm4_bound(np.arange(20), 1.1, 0.1)
    assert T1 == 4 and np.isinf(b[:8]).all() and b[8] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="K"):
        eos.thm4_bound(1, 1.2, 0.1)
    with pytest.raises(ValueError, match="eps"):
        eos.thm4_bound(1, 1.05, 0.2)
