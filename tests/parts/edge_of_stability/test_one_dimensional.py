"""Unit tests of chapter I.1 (Chen & Bruna: one-dimensional functions and the two-step map)."""

import math

import numpy as np
import pytest

from lib.parts.edge_of_stability import one_dimensional


@pytest.mark.parametrize("K", [1.001, 1.01, 1.05, 1.1, 1.2, 1.3, 1.5])
@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_period2_orbit_is_a_two_cycle(K, mu):
    d1, d2 = one_dimensional.period2_orbit(mu, K / mu)
    assert d1 < math.sqrt(mu) < d2
    F = lambda x: one_dimensional.quartic_gd_map(x, K, mu)
    assert F(d1) == pytest.approx(d2, rel=1e-12)
    assert F(d2) == pytest.approx(d1, rel=1e-12)
    # Eq. (4) itself
    for d in (d1, d2):
        assert K / mu == pytest.approx(1 / (d * d * (math.sqrt(mu / d**2 - 0.75) + 0.5)), rel=1e-10)


def test_period2_orbit_paper_values_and_arrays():
    assert one_dimensional.period2_orbit(1.0, 1.05) == pytest.approx((0.87287, 1.09109), abs=1e-5)
    lo, hi = one_dimensional.period2_orbit(1.0, np.array([1.01, 1.5]))
    assert lo == pytest.approx([0.94653, 1 / math.sqrt(3)], abs=1e-5)
    assert hi == pytest.approx([1.04603, math.sqrt(4 / 3)], abs=1e-5)


@pytest.mark.parametrize("lr", [0.5, 1.0, 1.51, -1.0, float("nan")])
def test_period2_orbit_rejects_eta_outside_range(lr):
    with pytest.raises(ValueError, match="lr"):
        one_dimensional.period2_orbit(1.0, lr)


def test_period2_orbit_rejects_bad_mu():
    with pytest.raises(ValueError, match="mu"):
        one_dimensional.period2_orbit(-1.0, 1.1)


def test_multiplier_formula_matches_numeric_and_threshold():
    for K in np.linspace(1.001, 1.5, 30):
        numeric = one_dimensional.quartic_multiplier_numeric(K)
        assert one_dimensional.two_cycle_multiplier(K) == pytest.approx(numeric, abs=1e-10)
    assert one_dimensional.two_cycle_multiplier(1.0) == pytest.approx(1.0)
    assert one_dimensional.two_cycle_multiplier(one_dimensional.SQRT5_MINUS_1) == pytest.approx(-1.0)


def test_stable_oscillation_condition_floats_and_arrays():
    assert one_dimensional.stable_oscillation_condition(2.0, 6.0, 6.0) == pytest.approx(96.0)  # quartic, mu=1
    f2, f3, f4 = np.array([2.0, 1.0]), np.array([6.0, 0.0]), np.array([6.0, -1.0])
    out = one_dimensional.stable_oscillation_condition(f2, f3, f4)
    assert out == pytest.approx([96.0, 1.0])


@pytest.mark.parametrize("mu", [0.5, 2.0])
def test_quartic_derivatives_closed_form(mu):
    f = one_dimensional.quartic(mu)
    d = f.at_min(4)
    assert d[1] == pytest.approx(0, abs=1e-12)
    assert d[2:] == pytest.approx([2 * mu, 6 * math.sqrt(mu), 6.0])
    assert one_dimensional.oscillation_test(f)["condition"] == pytest.approx(96 * mu)


def test_least_squares_derivative_identities():
    """Prop 1: f'' = 2g'^2, f''' = 6g'g'', f'''' = 6g''^2 + 8g'g''' at the minimum (here g = tanh)."""
    y = 0.5
    xb = math.atanh(y)
    f = [fn for fn in one_dimensional.example_functions() if fn.name == "tanh"][0]
    s = 1 / math.cosh(xb) ** 2
    g1, g2, g3 = s, -2 * s * y, -2 * s**2 + 4 * s * y**2
    d = f.at_min(4)
    assert d[2:] == pytest.approx([2 * g1**2, 6 * g1 * g2, 6 * g2**2 + 8 * g1 * g3], rel=1e-10)
    assert g1 * g3 - 6 * g2**2 == pytest.approx(-2 * s**3 - 20 * s**2 * y**2)  # Cor 4's formula


def test_higher_order_test_cases():
    assert one_dimensional.higher_order_test([2.0, 6.0, 6.0]) == dict(k=3, case="thm1", holds=True)
    assert one_dimensional.higher_order_test([2.0, 1.0, 10.0])["holds"] is False  # 3 - 20 < 0
    assert one_dimensional.higher_order_test([2.0, 0.0, -2.0]) == dict(k=4, case="even", holds=True)  # 2 sin x
    assert one_dimensional.higher_order_test([2.0, 0.0, 2.0])["holds"] is False
    assert one_dimensional.higher_order_test([1.0, 0.0, 0.0, 3.0, -1.0]) == dict(k=5, case="odd", holds=True)
    assert one_dimensional.higher_order_test([1.0, 0.0, 0.0, 3.0, 1.0])["holds"] is False
    assert one_dimensional.higher_order_test([1.0, 0.0, 0.0])["case"] == "flat"
    with pytest.raises(ValueError, match="derivs"):
        one_dimensional.higher_order_test([1.0])
    with pytest.raises(ValueError, match="derivs"):
        one_dimensional.higher_order_test([-1.0, 1.0, 1.0])


def test_example_functions_signs():
    for f in one_dimensional.example_functions():
        assert f.at_min(1)[1] == pytest.approx(0, abs=1e-10), f.name
        assert one_dimensional.oscillation_test(f)["holds"] == f.expect_oscillation, f.name


def test_composition_counterexample_is_quadratic():
    f = [fn for fn in one_dimensional.example_functions() if fn.name == "log(exp)"][0]
    d = f.at_min(4)
    assert d[2:] == pytest.approx([2.0, 0.0, 0.0], abs=1e-10)


def test_two_cycle_learning_rate_side_and_stability():
    q = one_dimensional.quartic(1.0)
    c = one_dimensional.two_cycle_learning_rate(q, 0.02)
    assert 1 < c["ratio"] < 1 / (1 - 0.02 * 3)  # Thm 1's interval (2/f'', 2/(f'' - eps f'''))
    assert c["stable"]
    assert one_dimensional.two_step_gap(q, c["x0"], c["lr"]) == pytest.approx(0, abs=1e-12)
    bad = [fn for fn in one_dimensional.example_functions() if fn.name == "x^0.9"][0]
    cb = one_dimensional.two_cycle_learning_rate(bad, -0.02)
    assert cb["ratio"] < 1 and not cb["stable"]
    with pytest.raises(ValueError, match="eps"):
        one_dimensional.two_cycle_learning_rate(q, 0.0)


def test_gd_iterate_many_matches_gd_map():
    funcs = [one_dimensional.quartic(1.0), one_dimensional.two_sin()]
    lrs = np.array([1.05, 1.01])
    x0 = np.array([0.7, -1.3])
    tr = one_dimensional.gd_iterate_many(funcs, x0, lrs, 5)
    for i, f in enumerate(funcs):
        x = np.array(x0[i])
        for _ in range(5):
            x = one_dimensional.gd_map(f, lrs[i])(x)
        assert tr[-1, i] == pytest.approx(float(x), rel=1e-12)
    with pytest.raises(ValueError, match="x0"):
        one_dimensional.gd_iterate_many(funcs, np.zeros(3), lrs, 5)


@pytest.mark.parametrize("K", [1.01, 1.1, 1.3, 1.5])
def test_orbit_eos_ratios_straddle_one_on_the_eq4_orbit(K):
    q = one_dimensional.quartic(1.0)
    d1, d2 = one_dimensional.period2_orbit(1.0, K)
    lo, hi = one_dimensional.orbit_eos_ratios(q, K, [d1, d2])
    # f''(x) = 3x^2 - 1, so eta f''/2 = K (3 delta^2 - 1) / 2 in closed form
    assert lo == pytest.approx(K * (3 * d1**2 - 1) / 2, rel=1e-12)
    assert lo < 1 < hi


def test_orbit_eos_ratios_bad_arguments():
    q = one_dimensional.quartic(1.0)
    with pytest.raises(ValueError, match="lr"):
        one_dimensional.orbit_eos_ratios(q, -1.0, [1.0])
    with pytest.raises(ValueError, match="points"):
        one_dimensional.orbit_eos_ratios(q, 1.0, [float("nan")])
    with pytest.raises(ValueError, match="func"):
        one_dimensional.orbit_eos_ratios(lambda x: x, 1.0, [1.0])


def test_prop1_quantity_closed_forms_of_softplus_and_gaussian():
    import torch

    x = np.linspace(-3, 3, 13)
    s = 1 / (1 + np.exp(-x))
    sp = one_dimensional.prop1_quantity(torch.nn.functional.softplus, x)
    assert sp == pytest.approx(s**2 * (1 - s) * (4 * s - 5), rel=1e-10)
    ga = one_dimensional.prop1_quantity(lambda z: torch.exp(-z * z), x)
    assert ga == pytest.approx((-80 * x**4 + 72 * x**2 - 24) * np.exp(-2 * x**2), rel=1e-10, abs=1e-14)
    with pytest.raises(ValueError, match="g"):
        one_dimensional.prop1_quantity("abc", x)


def test_softplus_gaussian_functions_have_their_minimum_and_the_condition():
    fs = one_dimensional.softplus_gaussian_functions()
    assert len(fs) == 5
    for f in fs:
        d = f.at_min(2)
        assert abs(d[0]) < 1e-20 and abs(d[1]) < 1e-12 and d[2] > 0
        assert one_dimensional.oscillation_test(f)["holds"]
    assert one_dimensional.oscillation_test(fs[3])["case"] == "even"  # the Gaussian's inflection point
