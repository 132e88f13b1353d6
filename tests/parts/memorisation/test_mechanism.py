import numpy as np
import pytest

from lib.parts.memorisation.mechanism import (
    associative_memory_run,
    c38_flow,
    c38_probabilities,
    noise_logit_fixed_point,
    noise_logit_recursion,
)


def test_recursion_fixed_point_and_overshoot_boundary():
    alpha, n = 0.3, 64
    bound = 1 / (alpha * (1 - alpha))
    xi = noise_logit_recursion(alpha, n, np.array([0.99, 1.01]) * bound, 2000)
    xs = noise_logit_fixed_point(alpha, n)
    assert np.allclose(xi[:, -1], xs, atol=1e-8)
    over = (xi - xs).max(axis=1)
    assert over[0] <= 1e-12 < over[1]
    assert noise_logit_recursion(alpha, n, 1.0, 5).shape == (6,)


def test_associative_memory_reproducible_and_gradient_matches_autograd():
    torch = pytest.importorskip("torch")
    a = associative_memory_run(3, 0.05, 6, seeds=3, steps=20, every=10, seed=1)
    b = associative_memory_run(3, 0.05, 6, seeds=3, steps=20, every=10, seed=1)
    assert np.array_equal(a["loss"], b["loss"])
    assert a["loss"].shape == (5, 3, 3)
    # the hand-written population gradient equals autograd's
    rng = np.random.default_rng(0)
    d, n, alpha = 5, 3, 0.2
    e, u, w = rng.standard_normal((d, n)), rng.standard_normal((d, n + 1)), rng.standard_normal((d, d))
    target = np.zeros((n + 1, n))
    target[np.arange(n), np.arange(n)] = 1 - alpha
    target[n] += alpha
    wt = torch.tensor(w, requires_grad=True)
    logits = torch.tensor(u).T @ wt @ torch.tensor(e)
    loss = -(torch.tensor(target) * torch.log_softmax(logits, 0)).sum() / n
    loss.backward()
    p = np.exp(u.T @ w @ e)
    p /= p.sum(0)
    assert np.allclose(u @ (p - target) @ e.T / n, wt.grad.numpy())


def test_c38_limits():
    f = c38_flow(0.25, 1e5, 50)
    p = c38_probabilities(f["a"], f["b"])
    assert abs(p["full"][-1] - 0.25) < 1e-3
    assert abs(f["b"][-1] - np.log(1 / 3)) < 1e-3


@pytest.mark.parametrize(
    "call",
    [
        lambda: noise_logit_fixed_point(1.0, 4),
        lambda: noise_logit_recursion(0.3, 4, -1.0, 5),
        lambda: associative_memory_run(3, 0.03, 3),
        lambda: associative_memory_run(3, 0.03, 8, ranks=(9,)),
        lambda: c38_flow(0.6),
        lambda: c38_probabilities([0.0], [0.0, 1.0]),
    ],
)
def test_invalid_arguments(call):
    with pytest.raises(ValueError):
        call()


def test_one_step_gradients_match_autograd_of_model_42():
    torch = pytest.importorskip("torch")
    from lib.parts.memorisation.mechanism import one_step_gradients, sample_recall_sequences

    n, t = 5, 12
    s = sample_recall_sequences(7, n, t, 0.4, np.random.default_rng(3))
    v = n + 1
    eye = torch.eye(2 * v, dtype=torch.float64)
    z = torch.tensor(s["z"])
    x = eye[z] + torch.cat([torch.zeros(7, 1, 2 * v, dtype=torch.float64), eye[v + z[:, :-1]]], 1)
    w_f = torch.zeros(v, 2 * v, dtype=torch.float64, requires_grad=True)
    w_v = torch.zeros(v, 2 * v, dtype=torch.float64, requires_grad=True)
    w_qk = torch.zeros(2 * v, 2 * v, dtype=torch.float64)
    att = torch.softmax(torch.einsum("bd,de,bte->bt", x[:, -1], w_qk, x) / 1.0, dim=1)
    logits = torch.einsum("bt,od,btd->bo", att, w_v, x) + x[:, -1] @ w_f.T
    torch.nn.functional.cross_entropy(logits, torch.tensor(s["y"])).backward()
    g_f, g_v = one_step_gradients(s["z"], s["y"], n)
    assert np.allclose(g_f, w_f.grad.numpy()) and np.allclose(g_v, w_v.grad.numpy())


def test_sampler_structure():
    from lib.parts.memorisation.mechanism import sample_recall_sequences

    s = sample_recall_sequences(50, 6, 30, 0.5, np.random.default_rng(0), trigger=2)
    z = s["z"]
    assert (z[:, -1] == 2).all()
    after = z[:, 1:][z[:, :-1] == 2]
    assert np.isin(after, [6, *range(6)]).all()
    rows = np.nonzero(z[:, :-2] == 2)
    nxt = z[rows[0], rows[1] + 1]
    assert ((nxt == 6) | (nxt == s["ybar"][rows[0]])).all()
    with pytest.raises(ValueError):
        sample_recall_sequences(5, 6, 30, 0.5, np.random.default_rng(0), trigger=6)


def test_table_c1_cases_and_monte_carlo_signs():
    from lib.parts.memorisation.mechanism import C1_CASES, table_c1, value_gradient_cases

    t = table_c1(20, 0.3)
    assert t.shape == (len(C1_CASES),) and np.isclose(t[0], -0.09 / 20) and np.isclose(t[8], (-0.09 + 0.9 - 1) / 400)
    r = value_gradient_cases(12, 120, 0.3, m=4000, reps=3, seed=1)
    assert np.all(np.sign(r["mean"]) == np.sign(r["table"]))
    with pytest.raises(ValueError, match="alpha"):
        table_c1(10, 1.0)


def test_qk_key_gradient_matches_autograd_of_the_reduced_model():
    """The closed-form projection equals autograd of sum_k (p_k - 1{y=k}) xi_k at W_QK = 0, where xi is the
    attention read-out through the reduced W_V (beta1 on tokens, beta2 on previous tokens, no noise row)."""
    import torch

    from lib.parts.memorisation.mechanism import _qk_key_gradient, sample_recall_sequences

    n, t, a, b1, b2 = 5, 9, 0.3, 1.0, 0.4
    s = sample_recall_sequences(11, n, t, a, np.random.default_rng(2))
    v = n + 1
    eye = torch.eye(2 * v, dtype=torch.float64)
    z = torch.tensor(s["z"])
    x = eye[z] + torch.cat([torch.zeros(11, 1, 2 * v, dtype=torch.float64), eye[v + z[:, :-1]]], 1)
    w_v = torch.zeros(v, 2 * v, dtype=torch.float64)
    w_v[:n, :n] = b1 * torch.eye(n, dtype=torch.float64)
    w_v[:n, v:v + n] = b2 * torch.eye(n, dtype=torch.float64)
    w_qk = torch.zeros(2 * v, 2 * v, dtype=torch.float64, requires_grad=True)
    att = torch.softmax(torch.einsum("bd,de,bte->bt", x[:, -1], w_qk, x), dim=1)
    xi = torch.einsum("bt,od,btd->bo", att, w_v, x)
    p_hat = torch.full((v,), (1 - a) / n, dtype=torch.float64)
    p_hat[n] = a
    coef = p_hat - torch.nn.functional.one_hot(torch.tensor(s["y"]), v).double()
    (coef * xi).sum(1).mean().backward()
    neg = -w_qk.grad.numpy()[0]  # row of the query token q = 0 (x_T = e_q + e~_{z_{T-1}})
    got = _qk_key_gradient(s["z"], s["y"], n, a, b1, b2)
    assert np.allclose(got, neg)


@pytest.mark.parametrize("t_max", [1.5, 2.0, 5.0, 20.0, 300.0, 3e3, 12345.0, 3e4, 3e5, 2e6])
def test_c38_flow_returns_for_any_t_max(t_max):
    f = c38_flow(0.3, t_max, 20)
    assert f["t"][-1] == t_max and np.all(np.diff(f["t"]) > 0)
    assert np.all(np.isfinite(f["a"])) and np.all(np.isfinite(f["b"]))


def test_gradient_descent_on_w_follows_the_matrix_flow_not_c37():
    from lib.parts.memorisation.mechanism import memory_gradient_descent

    g = memory_gradient_descent(0.3, 5.0, 1e-3)
    assert g["off_span"] < 1e-9
    for flow, close in (("matrix", True), ("coefficients", False)):
        f = c38_flow(0.3, 5.0, 10, flow=flow)
        assert np.isclose(g["a"], f["a"][-1], atol=1e-3) == close
        assert np.isclose(g["b"], f["b"][-1], atol=1e-3) == close
    with pytest.raises(ValueError, match="flow"):
        c38_flow(0.3, 5.0, flow="weights")
