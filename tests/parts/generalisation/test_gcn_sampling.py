"""Chapter 5 of Li's thesis: the teacher (5.20), labelled sets, sampled training and the sampling check."""

import numpy as np
import pytest
import torch

from lib.graphs import sampling
from lib.parts.generalisation import gcn_sampling as gs

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def problem():
    return gs.two_group_problem((10, 110), (8, 2), seed=0)


def test_teacher_and_relative_mse(problem):
    A = problem["A"]
    Y = gs.sin_tanh_labels(A, problem["X"], problem["W_star"], problem["C_star"])
    h = A.to_dense() @ problem["X"] @ problem["W_star"]
    torch.testing.assert_close(Y, (torch.sin(h) * torch.tanh(h)) @ problem["C_star"], rtol=1e-4, atol=1e-5)
    mask = torch.ones(1, 120, dtype=torch.bool)
    assert float(gs.relative_mse(Y[None], Y[None], mask)) == 0.0
    mean = Y.mean(0, keepdim=True).expand_as(Y)
    assert float(gs.relative_mse(mean[None], Y[None], mask)) == pytest.approx(1.0)


def test_label_masks():
    m = gs.label_masks(50, (5, 20), (0, 1))
    assert m.shape == (4, 50) and m.sum(1).tolist() == [5, 5, 20, 20]
    assert torch.equal(m, gs.label_masks(50, (5, 20), (0, 1)))


def test_training_learns_and_is_repeatable(problem):
    A_star = sampling.effective_adjacency(problem["A"], problem["groups"], (0.7, 0.3))
    Y = gs.sin_tanh_labels(A_star, problem["X"], problem["W_star"], problem["C_star"])
    masks = gs.label_masks(120, (80,), (0, 1))
    kw = dict(sampler="group", p_star=(0.7, 0.3), m=8, steps=60, lr=1e-2, seed=0)
    r1 = gs.train_sampled_gcn(problem, Y, masks, **kw)
    r2 = gs.train_sampled_gcn(problem, Y, masks, **kw)
    np.testing.assert_array_equal(r1["test_error"], r2["test_error"])
    assert r1["loss"][-1] < r1["loss"][0] and not r1["diverged"]
    assert np.all(r1["train_error"] < 1.0)
    r3 = gs.train_sampled_gcn(problem, Y, masks, **{**kw, "sampler": "fastgcn"})
    assert r3["test_error"].shape == (2,)


def test_sampling_spread_mean_and_shrinking(problem):
    out = gs.sampling_spread(problem, (0.7, 0.3), (0.5, 0.9, 1.0), draws=400)
    assert np.all(out["within_3se"] >= 0.97)
    assert out["spread"][0] > out["spread"][1] > out["spread"][2] and out["spread"][2] < 1e-6


def test_argument_checks(problem):
    Y = torch.zeros(120, 2)
    with pytest.raises(ValueError, match="sampler"):
        gs.train_sampled_gcn(problem, Y, gs.label_masks(120, (10,), (0,)), sampler="bogus")
    with pytest.raises(ValueError, match="masks"):
        gs.train_sampled_gcn(problem, Y, torch.ones(1, 7, dtype=torch.bool))
    with pytest.raises(ValueError, match="sizes"):
        gs.label_masks(10, (10,), (0,))
    with pytest.raises(ValueError, match="draws"):
        gs.sampling_spread(problem, (0.7, 0.3), (0.9,), draws=1)


def test_sampling_spread_row_distance_matches_d12(problem):
    out = gs.sampling_spread(problem, (0.7, 0.3), (0.5, 0.9), draws=300)
    # in expectation the row distance equals the first step of (D.12), linear in the dropped fraction
    np.testing.assert_allclose(out["row_dev"], out["row_bound"], rtol=0.05)
    assert out["row_bound"][0] / out["row_bound"][1] == pytest.approx(5.0, rel=0.05)
    assert np.all(out["eps_510"] > 0) and out["eps_510"][0] > out["eps_510"][1]


def test_symmetric_spread_zeroes_dropped_rows(problem):
    out = gs.symmetric_spread(problem, (0.7, 0.3), (0.5, 0.9, 1.0), draws=50)
    assert out["spread"][-1] < 1e-6 and out["dropped_row"][-1] == 0.0
    # a dropped node's row of P^s A P^s is zero: the distance is at least its row sum in A*
    assert np.all(out["spread"][:2] >= out["dropped_row"][:2] - 1e-9)
    assert out["dropped_row"][1] > 0.5 * out["inf_star"]
    with pytest.raises(ValueError, match="draws"):
        gs.symmetric_spread(problem, (0.7, 0.3), (0.9,), draws=1)


def _alg2_problem(problem):
    A_star = sampling.effective_adjacency(problem["A"], problem["groups"], (0.7, 0.3))
    Y = gs.sin_tanh_labels(A_star, problem["X"], problem["W_star"], problem["C_star"])
    return Y, gs.label_masks(120, (40,), (0, 1))


def test_algorithm2_weights_apply_the_sign_mask_as_written():
    g = torch.Generator().manual_seed(0)
    W0, V0, W, V, w_rho, v_rho = (torch.randn(2, *s, generator=g) for s in ((3, 4), (4, 5)) * 3)
    signs = torch.randint(0, 2, (2, 4), generator=g).float() * 2 - 1
    out = gs._alg2_weights(W0, V0, {"W": W, "V": V}, 0.25, w_rho, v_rho, signs)
    for k in range(2):
        S = torch.diag(signs[k])
        torch.testing.assert_close(out["W"][k], 0.5 * (W0[k] + w_rho[k] + W[k] @ S))
        torch.testing.assert_close(out["V"][k], 0.5 * (V0[k] + v_rho[k] + S @ V[k]))
    # Sigma^2 = I: with no initial part and no smoothing, the masks cancel in the product W V
    zero = {"W": torch.zeros_like(W0), "V": torch.zeros_like(V0)}
    bare = gs._alg2_weights(zero["W"], zero["V"], {"W": W, "V": V}, 1.0, zero["W"], zero["V"], signs)
    torch.testing.assert_close(bare["W"] @ bare["V"], W @ V)


def test_algorithm2_is_seeded_and_decays(problem):
    Y, masks = _alg2_problem(problem)
    kw = dict(sampler="group", p_star=(0.7, 0.3), m=8, steps=20, lr=1e-3, seed=0, method="algorithm2", batch=5)
    r1 = gs.train_sampled_gcn(problem, Y, masks, **kw)
    r2 = gs.train_sampled_gcn(problem, Y, masks, **kw)
    np.testing.assert_array_equal(r1["test_error"], r2["test_error"])
    np.testing.assert_array_equal(r1["loss"], r2["loss"])
    r3 = gs.train_sampled_gcn(problem, Y, masks, **{**kw, "seed": 1})
    assert not np.array_equal(r1["test_error"], r3["test_error"])
    assert r1["test_error"].shape == (2,) and np.all(np.isfinite(r1["test_error"])) and not r1["diverged"]
    # a strong weight decay (lambda_{T-1} = 0.5^9) shrinks the returned network towards a constant prediction
    strong = gs.train_sampled_gcn(problem, Y, masks, **{**kw, "lr": 0.5, "steps": 10})
    assert np.all(np.abs(strong["test_error"] - 1.0) < np.abs(r1["test_error"] - 1.0) + 0.05)


def test_algorithm2_argument_checks(problem):
    Y, masks = _alg2_problem(problem)
    kw = dict(m=4, steps=6, method="algorithm2")
    with pytest.raises(ValueError, match="inner"):
        gs.train_sampled_gcn(problem, Y, masks, inner=4, **kw)
    with pytest.raises(ValueError, match="batch"):
        gs.train_sampled_gcn(problem, Y, masks, batch=41, **kw)
    with pytest.raises(ValueError, match="eps0"):
        gs.train_sampled_gcn(problem, Y, masks, eps0=0.5, **kw)
    with pytest.raises(ValueError, match="method"):
        gs.train_sampled_gcn(problem, Y, masks, method="sgd")
