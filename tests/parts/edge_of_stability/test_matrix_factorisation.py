"""Unit tests of chapter I.3 (matrix factorisation) and of the layers chapters I.3-I.4 use: lib.models.mlp,
lib.data.digits, lib.data.sphere."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib import curvature
from lib.data.digits import digits_binary
from lib.data.sphere import sample_sphere
from lib.models.mlp import ReLUMLP
from lib.parts.edge_of_stability import beyond_low_dimension, matrix_factorisation, one_dimensional

pytestmark = pytest.mark.usefixtures("float64_default")


# ------------------------------------------------------------------------------------------------ Eq. (8)
@pytest.mark.parametrize("K", [1.01, 1.05, 1.1, 1.2, 1.3, 1.49])
def test_rho_orbit_is_a_two_cycle_of_the_scalar_map(K):
    lo, hi = matrix_factorisation.rho_orbit(K)
    assert 1 / np.sqrt(3) < lo < 1 < hi < 2 / np.sqrt(3)
    F = lambda x: x + K * (1 - x**2) * x  # GD on (x^2 - 1)^2 / 4 with eta = K
    assert F(lo) == pytest.approx(hi, rel=1e-10)
    assert F(hi) == pytest.approx(lo, rel=1e-10)


def test_rho_orbit_known_values_and_errors():
    assert matrix_factorisation.rho_orbit(1.05) == pytest.approx((0.87287, 1.09109), abs=1e-5)
    for bad in (1.0, 0.9, 1.6, float("nan")):
        with pytest.raises(ValueError, match="K"):
            matrix_factorisation.rho_orbit(bad)


# ------------------------------------------------------------------------------------------------ batched GD
def test_batched_step_equals_unbatched():
    g = torch.Generator().manual_seed(0)
    Y, Z = torch.randn(5, 3, 3, generator=g), torch.randn(5, 3, 3, generator=g)
    C = torch.randn(5, 3, 3, generator=g)
    C = C @ C.transpose(-1, -2)
    lr = torch.tensor([0.01, 0.02, 0.03, 0.04, 0.05])
    Yb, Zb = matrix_factorisation.mf_step(Y, Z, C, lr)
    for b in range(5):
        R = Y[b] @ Z[b].T - C[b]
        assert torch.allclose(Yb[b], Y[b] - lr[b] * R @ Z[b])
        assert torch.allclose(Zb[b], Z[b] - lr[b] * R.T @ Y[b])


def test_step_is_gradient_of_loss():
    g = torch.Generator().manual_seed(1)
    Y, Z, C = (torch.randn(4, 4, generator=g) for _ in range(3))
    Yr, Zr = Y.clone().requires_grad_(True), Z.clone().requires_grad_(True)
    matrix_factorisation.mf_loss(Yr, Zr, C).sum().backward()
    Y1, Z1 = matrix_factorisation.mf_step(Y, Z, C, 0.1)
    assert torch.allclose(Y1[0], Y - 0.1 * Yr.grad)
    assert torch.allclose(Z1[0], Z - 0.1 * Zr.grad)


def test_mf_gd_records_divergence_and_matches_numpy_trajectory():
    C = matrix_factorisation.diag_target([[1.1, 0.2], [1.1, 1.2]])  # second problem: eta(s1^2 + s2^2) = 2.3 > 2
    Y, Z = matrix_factorisation.generic_init(2, 2, 0.1, 0)
    res = matrix_factorisation.mf_gd(Y, Z, C, 1.0, 2000, tail=8)
    assert list(res["diverged"]) == [False, True]
    assert res["diverged_step"][0] == -1 and res["diverged_step"][1] > 0
    tr = matrix_factorisation.mf_trajectory(Y[0], Z[0], C[0], 1.0, 2000)
    np.testing.assert_allclose(tr["Y"], res["Y"][0], rtol=1e-9, atol=1e-12)
    lo, hi = matrix_factorisation.rho_orbit(1.1)
    np.testing.assert_allclose(sorted(res["tail_sy"][0, -2:] / np.sqrt(1.1)), [lo, hi], rtol=1e-8)


def test_mf_gd_bad_arguments():
    Y, Z = matrix_factorisation.generic_init(1, 2)
    with pytest.raises(ValueError, match="steps"):
        matrix_factorisation.mf_gd(Y, Z, torch.eye(2), 0.1, 0)
    with pytest.raises(ValueError, match="lr"):
        matrix_factorisation.mf_gd(Y, Z, torch.eye(2), [0.1, 0.2], 10)
    with pytest.raises(ValueError, match="Y0"):
        matrix_factorisation.mf_gd(torch.zeros(2, 3), Z, torch.eye(2), 0.1, 10)
    with pytest.raises(ValueError, match="init"):
        matrix_factorisation.divergence_grid([1.0], [0.5], init="other")
    with pytest.raises(ValueError, match="alpha"):
        matrix_factorisation.quasi_symmetric_init(torch.eye(2), -1.0)


# ------------------------------------------------------------------------------------------------ Fig 1 helpe
def test_eq9_reduces_to_line_for_alpha_one_and_is_stricter_otherwise():
    k1, k2 = np.meshgrid(np.linspace(0.5, 1.6, 23), np.linspace(0.05, 1.0, 20))
    assert np.array_equal(matrix_factorisation.eq9_holds(k1, k2, 1.0), k1 + k2 <= 2)
    assert not np.any(matrix_factorisation.eq9_holds(k1, k2, 0.8) & ~matrix_factorisation.eq9_holds(k1, k2, 1.0))


def test_divergence_grid_small():
    k1, k2 = np.array([0.8, 1.5]), np.array([0.1, 0.7])
    F = matrix_factorisation.divergence_grid(k1, k2, init="symmetric", steps=500)
    assert F.shape == (2, 2)
    assert F[0, 0] == 1.0 and F[1, 1] == 0.0  # 0.9 < 2 stays finite; 2.2 > 2 diverges
    grid = matrix_factorisation.divergence_grid(k1, np.array([1.0]), steps=10)
    assert np.isnan(grid[0, 0])  # k2 > k1 is not applicable
    np.testing.assert_array_equal(matrix_factorisation.divergence_boundary(k1, k2, F), [np.nan, 0.7])


# ------------------------------------------------------------------------------------------------ Thm 6
@pytest.mark.parametrize("shape", [(3, 3, 3), (4, 3, 5), (2, 4, 3)])
def test_thm6_eigenpair_matches_autograd_hessian(shape):
    m, p, q = shape
    rng = np.random.default_rng(sum(shape))
    X, Y = rng.standard_normal((m, p)), rng.standard_normal((p, q))
    loss = matrix_factorisation.mf_flat_loss(m, p, q, X @ Y)
    theta = torch.as_tensor(np.concatenate([X.ravel(), Y.ravel()]))
    H = curvature.hessian(loss, theta).numpy()
    Delta, lam = matrix_factorisation.thm6_eigenpair(X, Y)
    np.testing.assert_allclose(H @ Delta, lam * Delta, atol=1e-10)
    assert lam == pytest.approx(np.linalg.eigvalsh(H)[-1], rel=1e-12)
    der = curvature.directional_derivatives(loss, theta, torch.as_tensor(Delta), max_order=4).numpy()
    assert der[1] == pytest.approx(0.0, abs=1e-10)  # a minimum
    assert 3 * der[3] ** 2 - der[2] * der[4] == pytest.approx(matrix_factorisation.thm6_condition(X, Y), rel=1e-10)
    assert matrix_factorisation.thm6_condition(X, Y) > 0


def test_thm6_bad_shapes():
    with pytest.raises(ValueError, match="conformable"):
        matrix_factorisation.thm6_eigenpair(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="C"):
        matrix_factorisation.mf_flat_loss(2, 2, 2, torch.ones(3, 3))


def test_orbit_structure_at_exact_orbit():
    K = 1.05
    lo, _ = matrix_factorisation.rho_orbit(K)
    C = np.diag([K, 0.3])
    Y = np.diag([lo * np.sqrt(K), np.sqrt(0.3)])
    st = matrix_factorisation.orbit_structure(Y, Y, C)
    assert st["rank1"] < 1e-12 and st["align"] == pytest.approx(1.0)
    assert st["resid_eig"] == pytest.approx((lo**2 - 1) * K)


# ------------------------------------------------------------------------------------------------ networks
def test_equal_k_sharpness_matches_lanczos_at_a_minimum():
    X, y = beyond_low_dimension.teacher_student_data(400, 16, 3)
    k = 1.2
    theta = torch.cat([(k * torch.eye(16)).reshape(-1), torch.full((16,), 1 / k)])
    loss = beyond_low_dimension.ts_loss(X, y)
    assert float(loss(theta)) < 1e-28
    lam, _ = curvature.hessian_top_eigenpairs(loss, theta, k=1, method="dense")
    assert float(lam[0]) == pytest.approx(beyond_low_dimension.equal_k_sharpness(X, [k])[0], rel=1e-10)
    np.testing.assert_allclose(beyond_low_dimension.ts_ratios(theta), k**2)


def test_ts_init_and_errors():
    theta, k = beyond_low_dimension.ts_init(16, 0)
    assert theta.shape == (272,) and k[0] == 1.0 and k[-1] == pytest.approx(1.9375)
    np.testing.assert_allclose(beyond_low_dimension.ts_ratios(theta), k.numpy() ** 2, rtol=0.05)
    with pytest.raises(ValueError, match="k_values"):
        beyond_low_dimension.equal_k_sharpness(torch.ones(3, 16), [0.0])
    with pytest.raises(ValueError, match="theta"):
        beyond_low_dimension.ts_unpack(torch.zeros(5))


def test_line_search_on_a_quadratic_and_condition_of_quartic():
    lam, lr = 3.0, 0.5  # minimum along the step at c = 1 / (eta lam) = 2/3
    loss = lambda th: 0.5 * lam * (th**2).sum()
    theta = torch.tensor([1.0, -2.0])
    g = torch.func.grad(loss)(theta)
    c, theta_t = beyond_low_dimension.line_search_minimum(loss, theta, g, lr)
    assert c == pytest.approx(2 / 3, abs=1e-6)
    assert float(theta_t.abs().max()) < 1e-5
    # (x^2 - 1)^2 / 4 at x = 1: f'' = 2, f''' = 6, f'''' = 6 -> 3*36 - 12 = 96 (spec T1)
    assert one_dimensional.stable_oscillation_condition(2.0, 6.0, 6.0) == 96.0
    with pytest.raises(ValueError, match="lr"):
        beyond_low_dimension.line_search_minimum(loss, theta, g, 0.0)


def test_eos_mask():
    m = beyond_low_dimension.eos_mask([4.0, 5.0, np.nan, 6.0], 0.4)
    assert list(m) == [False, True, False, True]
    with pytest.raises(ValueError, match="lr"):
        beyond_low_dimension.eos_mask([1.0], -1)


def test_relu_mlp_and_data():
    X, y, kept = digits_binary()
    assert X.shape == (360, kept.size) and set(np.unique(y)) == {0.0, 1.0}
    assert 0 <= X.min() and X.max() <= 1
    torch.manual_seed(0)
    net = ReLUMLP(X.shape[1], 16, 3)
    assert net(torch.as_tensor(X)).shape == (360,)
    assert net.n_params == X.shape[1] * 16 + 16 + 16 * 16 + 16 + 16 + 1
    with pytest.raises(ValueError, match="depth"):
        ReLUMLP(4, 16, 0)
    with pytest.raises(ValueError, match="classes"):
        digits_binary(classes=(1, 1))
    pts = sample_sphere(50, 5, 1)
    np.testing.assert_allclose(np.linalg.norm(pts, axis=1), 1.0)
    with pytest.raises(ValueError, match="m"):
        sample_sphere(0, 3)


def test_fig6_run_reaches_the_rho_orbit_along_the_top_direction():
    """Obs 2 / Fig 6: symmetric and quasi-symmetric starts end on the period-2 orbit rho * sigma_1 along u, with
    balanced Y and Z, while the other singular blocks barely move."""
    for alpha in (1.0, 0.8):
        run = matrix_factorisation.fig6_run(1, alpha, 3000)
        check = matrix_factorisation.fig6_orbit_check(run)
        assert check["err"] < 1e-3 and check["bal"] < 1e-3 and check["smax_ok"]
        assert check["top_move"] > 10 * run["eps"] and check["off_eps"] < 10
    with pytest.raises(ValueError, match="K"):
        matrix_factorisation.fig6_run(1, 1.0, 10, K=2.0)


def test_mf_bifurcation_converges_below_the_line_and_oscillates_above():
    bif = matrix_factorisation.mf_bifurcation(np.array([0.9, 1.3]), steps=3000, keep=8)
    assert bif["sy"].shape == bif["sz"].shape == (2, 8) and not bif["diverged"].any()
    assert np.ptp(bif["sy"][0]) < 1e-6 < np.ptp(bif["sy"][1])  # (1 + 0.2) K < 2 converges, > 2 oscillates
    assert matrix_factorisation.line_holds(0.9, 0.18) and not matrix_factorisation.line_holds(1.3, 0.8)
    with pytest.raises(ValueError, match="ratio|keep|steps"):
        matrix_factorisation.mf_bifurcation(np.array([1.0]), keep=0)


def test_mlp_eos_experiment_on_digits_returns_a_picklable_dict():
    import pickle

    out = beyond_low_dimension.mlp_eos_experiment(depth=2, lr=0.5, steps=3)
    assert "loss_fn" not in out and len(out["loss"]) >= 2 and out["eos_threshold"] == pytest.approx(4.0)
    pickle.dumps(out)


@pytest.mark.parametrize("alpha", [0.8, 1.0, 1.25])
@pytest.mark.parametrize("kp", [0.2, 0.7])
def test_offdiag_block_at_the_minimum_has_the_eq203_spectrum(alpha, kp):
    K = 1.05
    out = matrix_factorisation.offdiag_block(K, kp, alpha)
    assert out["leak"] < 1e-12
    assert np.sort(np.abs(out["eig"])) == pytest.approx(matrix_factorisation.eq203_eigenvalues(K, kp, alpha), abs=1e-10)
    assert out["semi_convergent"] == bool(matrix_factorisation.eq9_holds(K, kp, alpha))


def test_offdiag_block_at_the_orbit_is_invariant_and_keeps_a_unit_eigenvalue():
    out = matrix_factorisation.offdiag_block(1.05, 0.3, 0.8, at="orbit")
    assert out["leak"] < 1e-12
    assert np.min(np.abs(out["eig"] - 1)) < 1e-10  # the rotation symmetry Y -> YQ, Z -> ZQ
    with pytest.raises(ValueError, match="at"):
        matrix_factorisation.offdiag_block(1.05, 0.3, 0.8, at="saddle")
    with pytest.raises(ValueError, match="K"):
        matrix_factorisation.offdiag_block(0.9, 0.3, 0.8, at="orbit")


def test_is_semi_convergent():
    assert matrix_factorisation.is_semi_convergent(np.diag([1.0, 1.0, 0.5]))
    assert not matrix_factorisation.is_semi_convergent(np.diag([1.0, -1.0]))
    assert not matrix_factorisation.is_semi_convergent(np.array([[1.0, 1.0], [0.0, 1.0]]))  # Jordan block
    assert not matrix_factorisation.is_semi_convergent(np.diag([1.01, 0.2]))
    with pytest.raises(ValueError, match="A"):
        matrix_factorisation.is_semi_convergent(np.ones((2, 3)))
