"""Unit tests of chapter VI.5 (Li's thesis, chapter 6: in-context learning with a nonlinear transformer)."""

import math

import numpy as np
import pytest
import torch

from lib.parts.generalisation import in_context_learning as icl


@pytest.mark.parametrize("m1,u", [(4, 1), (6, 1), (6, 4), (8, 3)])
def test_cyclic_tasks_meet_condition_632(m1, u):
    tasks = icl.cyclic_tasks(m1, u)
    assert tasks.shape == (m1 * u, 2)
    assert icl.condition_632(tasks, m1)
    assert len(icl.unseen_tasks(tasks, m1)) == m1 * (m1 - 1) - m1 * u
    assert not icl.condition_632(tasks[:-1], m1)


def test_all_tasks_and_bad_tasks():
    assert len(icl.all_tasks(6)) == 30
    with pytest.raises(ValueError, match="tasks"):
        icl.condition_632(np.array([[0, 0]]), 3)


def test_ood_patterns_orthogonal_with_norm_beta():
    mu, nu = icl.icl_banks(6, 24, 30, 3.0)
    a = 0.7
    b = math.sqrt(0.82 - a * a)
    mp = icl.ood_patterns(mu, a, b)
    assert torch.allclose(mp @ mp.T, 9.0 * torch.eye(3), atol=1e-5)
    assert torch.allclose(mp @ nu.T, torch.zeros(3, 24), atol=1e-6)
    coef = mp @ mu.T / 9.0  # coefficients k_{j,i}
    assert torch.allclose(coef.sum(1), torch.tensor([a + b, math.sqrt(2), math.sqrt(2)]), atol=1e-5)


def test_prompt_shapes_and_labels():
    mu, nu = icl.icl_banks()
    tasks = icl.cyclic_tasks(6)
    p = icl.sample_icl_prompts(500, mu, nu, tasks, length=10, alpha=0.8, kappa=0.5,
                               generator=torch.Generator().manual_seed(0))
    X, z, pat = p["X"], p["z"], p["pattern"]
    assert X.shape == (500, 11, 60) and z.shape == (500,) and pat.shape == (500, 11)
    assert torch.all(X[:, 0, 30:] == 0)  # the query carries no label
    assert torch.all(X[:, 1:, 30].abs() == 1) and torch.all(X[:, 1:, 31:] == 0)
    # the relevant part of every token is its pattern; the irrelevant part is a multiple of one nu, |kappa| <= 0.5
    rel = X[..., :6] / 3.0
    assert torch.allclose(rel, torch.nn.functional.one_hot(pat, 6).float())
    assert X[..., 6:30].abs().max() <= 1.5 + 1e-6
    # query label: +1 exactly for the task's first pattern; decisive contexts carry the task's labels
    same = p["same"]
    assert torch.all(X[:, 1:, 30][same] == z.view(-1, 1).expand(-1, 10)[same])
    assert 0.3 < same.float().mean() < 0.5  # alpha / 2 = 0.4
    assert set(z.tolist()) == {-1.0, 1.0}


def test_model_init_and_forward():
    model = icl.icl_model(2, m=20, delta=0.2, seed=0)
    assert torch.allclose(model.a.abs(), torch.full((20,), 1 / 20))
    assert torch.allclose(model.W_Q[0].diag()[:30], torch.full((30,), 0.2))
    assert torch.all(model.W_Q[0].diag()[30:] == 0)
    X = torch.randn(2, 5, 4, 60)
    valid = torch.tensor([True, True, False]).expand(2, 5, 3)
    out, att = icl.icl_forward(model, X, valid)
    assert out.shape == (2, 5) and att.shape == (2, 5, 3)
    assert torch.allclose(att.sum(-1), torch.ones(2, 5)) and torch.all(att[..., 2] == 0)
    keep = torch.ones(2, 20, dtype=torch.bool)
    assert torch.allclose(icl.icl_forward(model, X, valid, keep)[0], out, atol=1e-6)
    assert torch.all(icl.icl_forward(model, X, valid, ~keep)[0] == 0)


def test_tiny_run_learns_unseen_tasks():
    mu, nu = icl.icl_banks()
    tasks = icl.cyclic_tasks(6)
    cfg = dict(relevant=mu, irrelevant=nu, tasks=tasks, length=10, alpha=0.8, kappa=0.5)
    test = dict(cfg, tasks=icl.unseen_tasks(tasks, 6))
    before = icl.icl_metrics(icl.icl_model(1, m=40), [test], n=300)
    res = icl.train_icl([cfg], m=40, steps=150, batch=32, checkpoints=[0, 150])
    after = icl.icl_metrics(res["model"], [test], n=300)
    assert after["hinge"][0] < 0.5 * before["hinge"][0]
    assert after["error"][0] < 0.2
    assert len(res["states"]) == 2


def test_pruning_curve_and_baselines():
    mu, nu = icl.icl_banks()
    cfg = dict(relevant=mu, irrelevant=nu, tasks=icl.cyclic_tasks(6), length=6, alpha=0.8, kappa=0.5)
    model = icl.icl_model(1, m=20)
    c = icl.pruning_curve(model, cfg, [0.0, 1.0], "magnitude", n=50)
    assert c["hinge"][1] == pytest.approx(1.0)  # everything pruned: F = 0
    p = icl.sample_icl_prompts(10, mu, nu, cfg["tasks"], length=6, alpha=0.8, kappa=0.5,
                               generator=torch.Generator().manual_seed(0))
    errs = icl.baseline_errors(p["X"], p["z"], 6)
    assert set(errs) == set(icl.BASELINES) and all(0 <= e <= 1 for e in errs.values())


def test_baseline_nearest_neighbours_match_scikit_learn_fitted_per_prompt():
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(3)
    for L in (1, 3, 8):
        X = torch.tensor(rng.standard_normal((60, L + 1, 32)))
        X[:, :, 30] = torch.tensor(np.sign(rng.standard_normal((60, L + 1))))
        z = torch.tensor(np.sign(rng.standard_normal(60))).long()
        fast = icl.baseline_errors(X, z, L, methods=("1-NN", "3-NN"))
        xs, ys = X[:, 1:, :30].numpy(), np.sign(X[:, 1:, 30].numpy()).astype(int)
        for name, k in (("1-NN", 1), ("3-NN", min(3, L))):
            pred = [ys[i, 0] if len(set(ys[i])) == 1
                    else KNeighborsClassifier(k).fit(xs[i], ys[i]).predict(X[i:i + 1, 0, :30].numpy())[0]
                    for i in range(60)]
            assert fast[name] == np.mean(np.array(pred) != z.numpy())


def test_lucky_neurons_at_initialisation():
    model = icl.icl_model(2, m=400, delta=0.2, seed=0)
    mu, nu = icl.icl_banks(6, 24, 30, 3.0)
    cfg = dict(relevant=mu, irrelevant=nu, tasks=icl.cyclic_tasks(6), length=20, alpha=0.8, kappa=0.5)
    batch = icl._run_batch([cfg, cfg], 50, torch.Generator().manual_seed(0), 30)
    out = icl.lucky_neurons(model, batch["X"], batch["z"], 30, batch["valid"])
    assert out["lucky"].shape == out["active"].shape == (2, 50, 400)
    # three independent sign conditions at random initialisation: about 1/8 of the neurons (E.36)
    assert 0.08 < out["lucky"].double().mean().item() < 0.17
    # a lucky neuron's two parts are both positive, so it is active
    assert torch.all(out["active"][out["lucky"]])
    # a lucky neuron's output sign a_i matches the prompt's label
    sign = torch.sign(model.a).view(1, 1, -1).expand_as(out["lucky"])
    assert torch.all(sign[out["lucky"]] == torch.sign(batch["z"]).unsqueeze(-1).expand_as(sign)[out["lucky"]])
    with pytest.raises(ValueError, match="X must be"):
        icl.lucky_neurons(model, batch["X"][0], batch["z"], 30)
