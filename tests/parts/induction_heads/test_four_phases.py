"""Tests of chapter II.2 (Wang et al. 2024, Sec. 5): the reparametrised model, its closed-form losses and flows."""

import numpy as np
import pytest
import torch

from lib.parts.induction_heads import convergence, four_phases, sample_flows


# ----------------------------------------------------------------------------------------------- closed forms
def test_ngram_sums_match_closed_form_and_derivative():
    L, p = 40, 0.3
    M, m = four_phases.ngram_sums(p, L)
    assert M == pytest.approx((1 - np.exp(-p * (L - 2))) / (1 - np.exp(-p)))
    num = np.exp(-p) - (L - 2) * np.exp(-p * (L - 2)) + (L - 3) * np.exp(-p * (L - 1))
    assert m == pytest.approx(num / (1 - np.exp(-p)) ** 2)
    eps = 1e-6
    slope = -(four_phases.ngram_sums(p + eps, L)[0] - four_phases.ngram_sums(p - eps, L)[0]) / (2 * eps)
    assert slope == pytest.approx(
        m, rel=1e-6
    )


@pytest.mark.parametrize("p,g", [(0.2, 0.1), (1.5, 0.7)])
def test_rhs_g4_is_minus_gradient(p, g):
    eps = 1e-6
    dp, dg = four_phases.rhs_g4(p, g, 1.5, 60)
    gp = (four_phases.loss_g4(p + eps, g, 1.5, 60) - four_phases.loss_g4(p - eps, g, 1.5, 60)) / (2 * eps)
    gg = (four_phases.loss_g4(p, g + eps, 1.5, 60) - four_phases.loss_g4(p, g - eps, 1.5, 60)) / (2 * eps)
    assert dp == pytest.approx(-gp, rel=1e-5) and dg == pytest.approx(-gg, rel=1e-5)


@pytest.mark.parametrize("w,h", [(0.05, 0.3), (0.4, 0.6)])
def test_rhs_ih_is_minus_gradient_and_factor_two(w, h):
    eps = 1e-7
    dw, dh = four_phases.rhs_ih(w, h, 1.0, 0.49, 50)
    gw = (four_phases.loss_ih(w + eps, h, 1.0, 0.49, 50) - four_phases.loss_ih(w - eps, h, 1.0, 0.49, 50)) / (2 * eps)
    gh = (four_phases.loss_ih(w, h + eps, 1.0, 0.49, 50) - four_phases.loss_ih(w, h - eps, 1.0, 0.49, 50)) / (2 * eps)
    assert dw == pytest.approx(-gw, rel=1e-5) and dh == pytest.approx(-gh, rel=1e-5)
    assert four_phases.rhs_ih(w, h, 1.0, 0.49, 50, separate_qk=True)[0] == pytest.approx(dw / 2)


def test_loss_ih_zero_at_optimum_and_psi_domain():
    assert four_phases.loss_ih(0.49, 0.5, 1.0, 0.49, 100) == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(ValueError, match="psi"):
        four_phases.loss_ih(0.8, 0.5, 1.0, 0.49, 100)


def test_model_equals_target_at_optimum():
    X = torch.randn(32, 20, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    T = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    out = four_phases.reparam_forward(X, dict(g=T(0.5), p=T(200.0), h=T(0.5), w=T(0.49)))
    assert torch.allclose(out, four_phases.mixed_target(X, 1.0, 0.49), atol=1e-12)
    batched = four_phases.reparam_forward(
        X, dict(g=T([0.5, 0.5]), p=T([200.0, 200.0]), h=T([0.5, 0.5]), wq=T([0.49] * 2), wk=T([0.49] * 2))
    )
    assert torch.allclose(batched[1], out, atol=1e-12)
    with pytest.raises(ValueError, match="params"):
        four_phases.reparam_forward(X, dict(g=T(0.5), p=T(1.0), h=T(0.5)))


def test_prev_token_weights_rows_and_limit():
    K = four_phases.prev_token_weights(6, 0.7)
    assert np.allclose(K[1:].sum(1), 1) and np.all(K[0] == 0) and np.all(np.triu(K) == 0)
    assert np.allclose(four_phases.prev_token_weights(6, np.inf), np.eye(6, k=-1))
    with pytest.raises(ValueError, match="p1"):
        four_phases.prev_token_weights(6, -1.0)


def test_stage1_gradient_matches_finite_difference():
    loss, grad = four_phases.stage1_loss(0.8, 30, 0.01, 1.0, grad=True)
    eps = 1e-6
    up, down = four_phases.stage1_loss(0.8 + eps, 30, 0.01, 1.0), four_phases.stage1_loss(0.8 - eps, 30, 0.01, 1.0)
    fd = (up - down) / (2 * eps)
    assert grad == pytest.approx(fd, rel=1e-5) and grad < 0


def test_balance_gd_identity_and_symmetry():
    q, k, h, G = convergence.balance_gd(0.02, 0.005, 0.01, 1.0, 0.49, 50, lr=3.0, steps=200)
    c = q**2 - k**2
    assert np.allclose(c[1:], c[:-1] * (1 - 9.0 * G[:-1] ** 2), rtol=1e-10)
    q, k, _, _ = convergence.balance_gd(0.02, 0.02, 0.01, 1.0, 0.49, 50, lr=3.0, steps=200)
    assert np.array_equal(q, k)


def test_balance_gd_records_divergence_instead_of_raising():
    run = convergence.balance_gd(0.02, 0.005, 0.01, 1.0, 0.49, 50, lr=1e4, steps=50)
    assert run.diverged and 1 <= run.diverged_step <= 50
    assert np.isfinite(run.wq[: run.diverged_step]).all() and np.isnan(run.wq[run.diverged_step:]).all()
    ok = convergence.balance_gd(0.02, 0.005, 0.01, 1.0, 0.49, 50, lr=3.0, steps=20)
    assert not ok.diverged and ok.diverged_step is None


def test_four_phase_reference_values():
    res = four_phases.four_phase_dynamics(1.0, 0.49, 1000, 0.01, 6e4, n_points=600)
    assert res["t"] is res.t and res.loss_g4[0] == pytest.approx(0.125, rel=1e-3)
    assert res.loss_ih[0] == pytest.approx(1.377e-4, rel=1e-3)
    pt = four_phases.phase_times(res)
    assert pt["T_I"] == pytest.approx(206, rel=0.01)
    assert pt["T_o"] == pytest.approx(3.5e3, rel=0.02)
    assert pt["T_III"] == pytest.approx(3.45e4, rel=0.01)
    assert four_phases.plateau_loss(1.0, 0.49, 1000) == pytest.approx(9.88e-6, rel=1e-3)
    assert 1 / four_phases.plateau_rate(1.0, 0.49, 1000) == pytest.approx(7.38e3, rel=1e-3)


def test_four_phase_bad_arguments():
    with pytest.raises(ValueError, match="w_star"):
        four_phases.four_phase_dynamics(1.0, 0.8, 100, 0.01, 10.0)
    with pytest.raises(ValueError, match="sigma_init"):
        four_phases.four_phase_dynamics(1.0, 0.49, 100, 0.6, 10.0)
    with pytest.raises(ValueError, match="alpha_star"):
        four_phases.four_phase_dynamics(-1.0, 0.49, 100, 0.01, 10.0)
    with pytest.raises(ValueError, match="L"):
        four_phases.four_phase_dynamics(1.0, 0.49, 3, 0.01, 10.0)


def test_ih_moments_exp_matches_closed_form_roughly():
    X = np.random.default_rng(0).standard_normal((4000, 40))
    EA2, EAT, ET2 = sample_flows.ih_moments([0.3], X, 0.49, softmax="exp")
    mc = sample_flows.ih_loss_from_moments(0.4, 1.0, EA2, EAT, ET2)[0]
    assert mc == pytest.approx(float(four_phases.loss_ih(0.3, 0.4, 1.0, 0.49, 40)), rel=0.15)


# ------------------------------------------------------------------ the flows and rates the chapters call directly
def test_stage1_flow_follows_its_right_hand_side():
    t, pt = four_phases.stage1_flow(50, 0.01, 1.0, 1e4, n_points=40)
    assert t.shape == pt.shape == (41,) and np.isfinite(pt).all() and pt[0] == pytest.approx(0.01)
    rhs = four_phases.stage1_rhs(50, 0.01, 1.0)
    mid = len(t) // 2
    slope = (pt[mid + 1] - pt[mid - 1]) / (t[mid + 1] - t[mid - 1])
    assert slope == pytest.approx(float(np.ravel(rhs(t[mid], [pt[mid]]))[0]), rel=0.1, abs=1e-9)


def test_plateau_scale_half_w_time_and_lyapunov_functions():
    a, ws, L, s = 1.0, 0.49, 20, 0.01
    assert four_phases.plateau_time_scale(a, ws, L, s) == pytest.approx((1 + a) ** 2 * L * np.log(1 / s) / ws**2)
    res = four_phases.four_phase_dynamics(a, ws, L, s, 3000.0, n_points=300)
    t_half = four_phases.predicted_half_w_time(res)
    assert np.isfinite(t_half) and t_half > res.events["T_o"]
    ly = convergence.lyapunov_rates(res)
    assert set(ly) == {"G4", "dG4", "Gih", "dGih"} and (ly["dG4"] <= 1e-12).all()
    g_star, h_star = four_phases.targets_star(a)
    assert convergence.lyapunov_ih(ws, h_star, a, ws) == pytest.approx(0.0, abs=1e-12)
    assert convergence.lyapunov_g4(50.0, g_star, a) == pytest.approx(0.0, abs=1e-12)
    assert convergence.lyapunov_ih(0.1, 0.1, a, ws) > 0 and convergence.lyapunov_g4(0.0, 0.0, a) > 0


def test_ih_linear_rate_is_positive_and_falls_like_one_over_L():
    r1, r2 = convergence.ih_linear_rate(1.0, 0.49, 500), convergence.ih_linear_rate(1.0, 0.49, 1000)
    assert r1 > 0 and r2 > 0 and r1 / r2 == pytest.approx(2.0, rel=0.1)
    assert convergence.ih_linear_rate(1.0, 0.49, 1000, separate_qk=True) < r2


def test_balance_flow_conserves_wq2_minus_wk2():
    t, wq, wk, h = convergence.balance_flow(0.02, 0.005, 0.01, 1.0, 0.49, 20, 2000.0, n_points=50)
    assert t.shape == (51,) and np.isfinite(h).all()
    np.testing.assert_allclose(wq**2 - wk**2, 0.02**2 - 0.005**2, rtol=1e-5, atol=1e-10)


def test_sample_flow_and_online_sgd_run_and_learn():
    X = np.random.default_rng(0).standard_normal((200, 20))
    t, w, h, loss = sample_flows.ih_sample_flow(X, 1.0, 0.49, 0.01, 3e3, n_points=30, n_grid=16)
    assert t.shape == w.shape == h.shape == loss.shape == (31,) and loss[-1] < loss[0]
    with pytest.raises(ValueError, match="softmax"):
        sample_flows.ih_sample_flow(X, 1.0, 0.49, 0.01, 3e3, softmax="bogus")
    out = sample_flows.online_sgd_reparam(alpha_star=1.0, w_star=0.49, L=20, sigma_init=0.01, steps=20, batch=16,
                                          lr_4gram=1.0, lr_ih=1.0, separate_qk=True, seeds=[0, 1], eval_size=64,
                                          record_every=10)
    assert out["loss_ih"].shape == (2, len(out["step"])) and np.isfinite(out["loss_ih"]).all()
    assert {"wq", "wk"} <= set(out)
    with pytest.raises(ValueError, match="seeds"):
        sample_flows.online_sgd_reparam(alpha_star=1.0, w_star=0.49, L=20, sigma_init=0.01, steps=2, batch=4,
                                        lr_4gram=1.0, lr_ih=1.0, separate_qk=False, seeds=[])


def test_online_sgd_unbalanced_start_keeps_the_product_and_nearly_the_balance():
    out = sample_flows.online_sgd_reparam(alpha_star=1.0, w_star=0.49, L=20, sigma_init=0.01, steps=30, batch=16,
                                          lr_4gram=1.0, lr_ih=1.0, separate_qk=True, seeds=[0], eval_size=64,
                                          record_every=10, qk_ratio=2.0)
    assert out["wq"][0, 0] == pytest.approx(0.02) and out["wk"][0, 0] == pytest.approx(0.005)
    bal = out["wq"] ** 2 - out["wk"] ** 2
    assert np.abs(bal / bal[:, :1] - 1).max() < 1e-3  # second order in the step on the plateau
    with pytest.raises(ValueError, match="qk_ratio"):
        sample_flows.online_sgd_reparam(alpha_star=1.0, w_star=0.49, L=20, sigma_init=0.01, steps=2, batch=4,
                                        lr_4gram=1.0, lr_ih=1.0, separate_qk=True, seeds=[0], qk_ratio=0.0)
