"""Unit tests of lib.train: the one-model trainer ``train`` and the K-models-at-once trainer ``train_stacked``."""

import numpy as np
import pytest
import torch

from lib import train

pytestmark = pytest.mark.usefixtures("float64_default")


# ------------------------------------------------------------------------------------------------ train
def test_gd_on_quadratic_matches_closed_form():
    w = torch.tensor([2.0, -1.0])
    res = train.train(w, lambda p: 0.5 * (p**2).sum(), lr=0.1, steps=10, record_every=5)
    assert np.allclose(res.params.detach().numpy(), np.array([2.0, -1.0]) * 0.9**10)
    assert list(res.history["step"]) == [0, 5, 10] and not res.diverged


def test_divergence_is_recorded_not_raised():
    res = train.train(torch.tensor([1.0]), lambda p: (p**2).sum(), lr=1.5, steps=1000, divergence_bound=1e6)
    assert res.diverged and res.diverged_step < 1000


def test_schedule_and_module_and_sgd():
    model = torch.nn.Linear(3, 1)
    X, y = torch.randn(64, 3), torch.randn(64, 1)

    def batch_fn(step, g):
        idx = torch.randint(0, 64, (16,), generator=g)
        return X[idx], y[idx]

    res = train.train(model, lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(), lr=0.05, steps=20, optimizer="sgd",
                      batch_fn=batch_fn, schedule=train.step_decay(10, 0.1))
    assert res.history["lr"][0] == pytest.approx(0.05) and res.history["lr"][-1] == pytest.approx(0.005)
    assert train.piecewise([5], [1.0, 0.5])(7) == 0.5


@pytest.mark.parametrize("kw,name", [({"lr": -1.0}, "lr"), ({"steps": -2}, "steps"),
                                     ({"optimizer": "lbfgs"}, "optimizer"), ({"optimizer": "sgd"}, "batch_fn")])
def test_train_rejects_bad_arguments(kw, name):
    args = {"lr": 0.1, "steps": 1, **kw}
    with pytest.raises(ValueError, match=name):
        train.train(torch.zeros(2), lambda p: (p**2).sum(), **args)




# ------------------------------------------------------------------------------------------------ train: options
def _quad(p):
    return 0.5 * (p**2).sum()


def test_momentum_is_pytorch_heavy_ball():
    w = torch.tensor([2.0, -1.0])
    res = train.train(w, _quad, lr=0.1, steps=5, momentum=0.9)
    p, b = torch.tensor([2.0, -1.0]), torch.zeros(2)
    for _ in range(5):
        b = 0.9 * b + p  # grad of the quadratic is p
        p = p - 0.1 * b
    assert torch.allclose(res.params.detach(), p, rtol=1e-14)
    ref = torch.tensor([2.0, -1.0], requires_grad=True)
    opt = torch.optim.SGD([ref], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.3)
    for _ in range(5):
        opt.zero_grad()
        _quad(ref).backward()
        opt.step()
    w = torch.tensor([2.0, -1.0])
    train.train(w, _quad, lr=0.1, steps=5, momentum=0.9, nesterov=True, weight_decay=0.3)
    assert torch.allclose(w, ref.detach(), rtol=1e-14)


def test_coupled_weight_decay_of_gd_and_decoupled_of_adamw():
    w = torch.tensor([2.0, -1.0])
    train.train(w, _quad, lr=0.1, steps=10, weight_decay=0.5)  # grad + wd*p = 1.5 p
    assert torch.allclose(w, torch.tensor([2.0, -1.0]) * (1 - 0.15) ** 10, rtol=1e-13)
    # zero gradient: Adam's step is 0, AdamW still shrinks theta by (1 - lr wd) per step
    w = torch.tensor([2.0, -1.0])
    train.train(w, lambda p: 0.0 * p.sum(), lr=0.1, steps=10, optimizer="adamw", weight_decay=0.5)
    assert torch.allclose(w, torch.tensor([2.0, -1.0]) * (1 - 0.05) ** 10, rtol=1e-13)
    a, b = torch.tensor([2.0, -1.0]), torch.tensor([2.0, -1.0])
    train.train(a, _quad, lr=0.1, steps=10, optimizer="adam")
    train.train(b, _quad, lr=0.1, steps=10, optimizer="adamw")
    assert torch.equal(a, b)


def test_clipping_follows_clip_grad_norm():
    c = torch.tensor([6.0, 8.0])  # gradient of c.p has norm 10
    w = torch.zeros(2)
    train.train(w, lambda p: c @ p, lr=0.1, steps=3, clip_norm=1.0)
    assert torch.allclose(w, -3 * 0.1 * c / (10 + 1e-6), rtol=1e-14)
    torch.manual_seed(0)
    m1 = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1))
    m2 = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1))
    m2.load_state_dict(m1.state_dict())
    X = torch.randn(20, 3)
    loss = lambda m: (m(X) ** 2).mean() * 100
    train.train(m1, loss, lr=0.1, steps=4, clip_norm=0.5)
    for _ in range(4):
        m2.zero_grad()
        loss(m2).backward()
        torch.nn.utils.clip_grad_norm_(m2.parameters(), 0.5)
        with torch.no_grad():
            for p in m2.parameters():
                p -= 0.1 * p.grad
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert torch.allclose(p, q, rtol=1e-12, atol=1e-14)


def test_frozen_parameters_stay_bit_identical():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    model[2].bias.requires_grad_(False)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    X = torch.randn(16, 3)
    train.train(model, lambda m: ((m(X) - 1) ** 2).mean(), lr=0.1, steps=20, optimizer="adamw", weight_decay=0.1,
                momentum=0.0, frozen=["0.weight"])
    after = model.state_dict()
    assert torch.equal(after["0.weight"], before["0.weight"]) and torch.equal(after["2.bias"], before["2.bias"])
    assert not torch.equal(after["0.bias"], before["0.bias"])
    d = {"w": torch.ones(2), "b": torch.full((2,), 0.1)}
    train.train(d, lambda p: ((p["w"] - 3) ** 2).sum() + (p["b"] ** 2).sum(), lr=0.1, steps=5, frozen="b",
                momentum=0.5, weight_decay=0.1)
    assert torch.equal(d["b"], torch.full((2,), 0.1)) and not torch.equal(d["w"], torch.ones(2))


def test_loss_blow_up_is_divergence():
    # p <- p - 1.5 * 2p = -2p: the loss grows 4x per step, the norm stays far below divergence_bound
    # the per-step test (8 rising steps, x1e4 in all) flags it at step 8; the factor 1e6 alone only at step 10
    res = train.train(torch.tensor([1.0]), lambda p: (p**2).sum(), lr=1.5, steps=50)
    assert res.diverged and res.diverged_step == 8 and res.history["loss"][-1] == 4.0**8
    res = train.train(torch.tensor([1.0]), lambda p: (p**2).sum(), lr=1.5, steps=50, divergence_growth=None)
    assert res.diverged and res.diverged_step == 10 and res.history["loss"][-1] > 1e6
    res = train.train(torch.tensor([1.0]), lambda p: (p**2).sum(), lr=1.5, steps=12, divergence_factor=None,
                      divergence_growth=None)
    assert not res.diverged
    stacked = train.train_stacked({"w": torch.tensor([[1.0], [1.0]])}, lambda p: (p["w"] ** 2).sum(), lr=1.5,
                                  steps=50)
    assert stacked.diverged.tolist() == [True, True] and stacked.diverged_step.tolist() == [8, 8]


def test_growth_test_spares_transient_spikes():
    from lib._optim import GrowthTest

    def first_flag(losses, factor=1e4):
        test = GrowthTest(factor)
        return next((t for t, v in enumerate(losses) if test(float(v), float(losses[0]))), None)

    assert first_flag(4.0 ** np.arange(20)) == 8
    assert first_flag(np.r_[1.0, 1e-6 * 4.0 ** np.arange(20)]) == 11  # from a trained state: once above the start
    spike = np.r_[1.0, 1e-6 * 4.0 ** np.arange(9), 1e-3, 1e-6]  # rises x6e4 but stays below the initial loss
    assert first_flag(spike) is None
    assert first_flag(np.r_[1.0, 3.0 ** np.arange(1, 9), 1.0]) is None  # x6561 in 8 steps: below the factor
    assert first_flag(4.0 ** np.arange(20), factor=None) is None
    losses = torch.tensor([[1.0, 1.0]]) * torch.tensor([4.0, 0.5]) ** torch.arange(12.0)[:, None]
    test = GrowthTest(1e4)
    flags = [test(row, losses[0]).tolist() for row in losses]
    assert flags[8] == [True, False] and flags[7] == [False, False]


def test_record_never_sees_diverged_parameters():
    seen = []

    def record(p, step):
        assert torch.isfinite(p).all() and (p.abs() < 1e3).all(), "record() called on diverged parameters"
        seen.append(step)
        return {"norm": float(p.norm())}

    res = train.train(torch.tensor([1.0]), lambda p: (p**2).sum(), lr=1.5, steps=50, record=record)
    assert res.diverged and seen[-1] == res.diverged_step - 1
    assert len(res.history["norm"]) == len(res.history["step"]) and np.isnan(res.history["norm"][-1])


@pytest.mark.parametrize("kw,name", [({"momentum": 1.0}, "momentum"), ({"optimizer": "adam", "momentum": 0.5},
                                                                         "momentum"),
                                     ({"nesterov": True}, "nesterov"), ({"clip_norm": 0.0}, "clip_norm"),
                                     ({"divergence_factor": 1.0}, "divergence_factor"),
                                     ({"divergence_growth": 0.5}, "divergence_growth"),
                                     ({"progress": "no"}, "progress"),
                                     ({"weight_decay": -1.0}, "weight_decay"), ({"adam_betas": (0.9, 1.0)},
                                                                                "adam_betas"),
                                     ({"frozen": ["w"]}, "frozen"), ({"schedule": lambda s: -1.0}, "schedule")])
def test_train_rejects_bad_options(kw, name):
    with pytest.raises(ValueError, match=name):
        train.train(torch.zeros(2), lambda p: (p**2).sum(), lr=0.1, steps=1, **kw)
    with pytest.raises(ValueError, match="frozen"):
        train.train({"w": torch.zeros(2)}, lambda p: (p["w"] ** 2).sum(), lr=0.1, steps=1, frozen=["v"])


# ------------------------------------------------------------------------------------------------ train_stacked
K, N, B, D, STEPS = 3, 40, 8, 3, 30


def _mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(D, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))


def _data(scale=(1.0, 1.0, 1.0)):
    g = torch.Generator().manual_seed(7)
    X = torch.randn(K, N, D, generator=g) * torch.tensor(scale)[:, None, None]
    Y = torch.randn(K, N, 2, generator=g)
    idx = torch.randint(0, N, (STEPS + 1, K, B), generator=g)
    return X, Y, idx


def _mse(m, batch):
    x, y = batch
    return ((m(x) - y) ** 2).mean()


def _solo_and_stacked(opt_kw, scale=(1.0, 1.0, 1.0), full_batch=False, **extra):
    X, Y, idx = _data(scale)
    pick = (lambda s, k: (X[k], Y[k])) if full_batch else (lambda s, k: (X[k][idx[s, k]], Y[k][idx[s, k]]))
    solos = []
    for k in range(K):
        m = _mlp(k)
        res = train.train(m, _mse, steps=STEPS, batch_fn=lambda s, g, k=k: pick(s, k), record_every=5, **opt_kw,
                          **extra)
        solos.append((m, res))
    models = [_mlp(k) for k in range(K)]
    stacked_batch = lambda s, g: tuple(torch.stack(t) for t in zip(*[pick(s, k) for k in range(K)]))
    res = train.train_stacked(models, _mse, steps=STEPS, batch_fn=stacked_batch, record_every=5, **opt_kw, **extra)
    return solos, models, res


OPTS = {
    "gd": dict(optimizer="gd", lr=0.3),
    "sgd+momentum+wd": dict(optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=1e-2),
    "adam": dict(optimizer="adam", lr=0.01),
    "adamw": dict(optimizer="adamw", lr=0.01, weight_decay=0.1),
    "sgd+clip": dict(optimizer="sgd", lr=0.2, clip_norm=0.3),
}


@pytest.mark.parametrize("name", list(OPTS))
def test_stacked_equals_separate_runs(name):
    solos, models, res = _solo_and_stacked(OPTS[name], full_batch=name == "gd")
    assert not res.diverged.any() and list(res.diverged_step) == [-1] * K
    assert res.history["loss"].shape == (len(res.history["step"]), K)
    for k, (m, solo) in enumerate(solos):
        for n, p in m.named_parameters():
            assert torch.allclose(res.params[n][k], p.detach(), rtol=1e-10, atol=1e-12), (name, k, n)
            assert torch.equal(dict(models[k].named_parameters())[n].detach(), res.params[n][k])  # written back
        assert np.allclose(res.history["loss"][:, k], solo.history["loss"], rtol=1e-10)


def test_stacked_clipping_is_per_model():
    # model 2's data are 20x larger: its gradient is clipped hard, the others' little or not at all
    solos, _, res = _solo_and_stacked(OPTS["sgd+clip"], scale=(0.05, 1.0, 20.0))
    for k, (m, _) in enumerate(solos):
        for n, p in m.named_parameters():
            assert torch.allclose(res.params[n][k], p.detach(), rtol=1e-10, atol=1e-12)


def test_stacked_frozen_parameters_unchanged():
    before = [_mlp(k).state_dict() for k in range(K)]
    solos, _, res = _solo_and_stacked(OPTS["adamw"], frozen=["0.weight", "2.bias"])
    for k, (m, _) in enumerate(solos):
        assert torch.equal(res.params["0.weight"][k], before[k]["0.weight"])
        assert torch.equal(res.params["2.bias"][k], before[k]["2.bias"])
        assert torch.allclose(res.params["0.bias"][k], m[0].bias.detach(), rtol=1e-10, atol=1e-12)


def test_stacked_divergence_is_per_model():
    # the same lr is beyond 2/sharpness for model 1 (inputs scaled 4x: blows up at step 4) and fine for models 0 and 2
    solos, _, res = _solo_and_stacked(dict(optimizer="gd", lr=0.3), scale=(1.0, 4.0, 1.0), full_batch=True)
    assert [s.diverged for _, s in solos] == [False, True, False]
    assert list(res.diverged) == [False, True, False]
    assert res.diverged_step[1] == solos[1][1].diverged_step and res.diverged_step[[0, 2]].tolist() == [-1, -1]
    for k, (m, _) in enumerate(solos):  # model 1 frozen where its solo run stopped; 0 and 2 unaffected
        for n, p in m.named_parameters():
            assert torch.allclose(res.params[n][k], p.detach(), rtol=1e-10, atol=1e-12)
    steps, loss = res.history["step"], res.history["loss"]
    assert np.isnan(loss[steps > res.diverged_step[1], 1]).all() and np.isfinite(loss[:, [0, 2]]).all()


def test_stacked_dict_params_shared_batch_record_and_result():
    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(30, 4, generator=g), torch.randn(30, generator=g)
    w0 = torch.randn(5, 4, generator=g)
    params = {"w": w0.clone()}
    loss = lambda p, b: 0.5 * ((b[0] @ p["w"] - b[1]) ** 2).mean()
    res = train.train_stacked(params, loss, lr=0.1, steps=25, batch_fn=lambda s, gen: (X, y), shared_batch=True,
                              record=lambda p, s: {"norm": p["w"].norm()}, record_every=10)
    assert res.params["w"] is not None and torch.equal(params["w"], res.params["w"])  # updated in place
    assert res.history["norm"].shape == (4, 5) and list(res.history["step"]) == [0, 10, 20, 25]
    for k in range(5):
        solo = {"w": w0[k].clone()}
        train.train(solo, loss, lr=0.1, steps=25, batch_fn=lambda s, gen: (X, y))
        assert torch.allclose(res.state_dict(k)["w"], solo["w"], rtol=1e-12)
    models = [_mlp(k) for k in range(2)]
    r = train.train_stacked(models, lambda m: (m(X[:, :D]) ** 2).mean(), lr=0.1, steps=3)
    fresh = r.load_into(_mlp(9), 1)
    assert torch.equal(fresh(X[:, :D]), models[1](X[:, :D])) and r.final().shape == (2,)


def test_stacked_rejects_bad_input():
    X = torch.randn(8, D)
    loss = lambda m: (m(X) ** 2).mean()
    bad = [
        (lambda: train.train_stacked([], loss, lr=0.1, steps=1), "models_or_params"),
        (lambda: train.train_stacked([_mlp(0), torch.nn.Linear(D, 2)], loss, lr=0.1, steps=1), "models_or_params"),
        (lambda: train.train_stacked({"a": torch.zeros(2, 3), "b": torch.zeros(3)}, loss, lr=0.1, steps=1),
         "models_or_params"),
        (lambda: train.train_stacked([_mlp(0)], lambda m: m(X).sum(0), lr=0.1, steps=1), "loss_fn"),
        (lambda: train.train_stacked([_mlp(0)], loss, lr=0.1, steps=1, frozen=["x"]), "frozen"),
        (lambda: train.train_stacked([_mlp(0)], loss, lr=0.1, steps=1, optimizer="sgd"), "batch_fn"),
        (lambda: train.train_stacked([_mlp(0)], loss, lr=0.0, steps=1), "lr"),
    ]
    for call, name in bad:
        with pytest.raises(ValueError, match=name):
            call()


def test_record_at_given_steps():
    w = torch.tensor([2.0, -1.0])
    res = train.train(w, _quad, lr=0.1, steps=20, record_every=[1, 3, 10], record=lambda p, s: {"n": float(p.norm())})
    assert list(res.history["step"]) == [1, 3, 10, 20] and len(res.history["n"]) == 4
    r = train.train_stacked({"w": torch.ones(2, 3)}, lambda p: _quad(p["w"]), lr=0.1, steps=9, record_every=(0, 4))
    assert list(r.history["step"]) == [0, 4, 9]
    for bad in (0, 1.5, [1.5], [-1], "x"):
        with pytest.raises(ValueError, match="record_every"):
            train.train(torch.zeros(2), _quad, lr=0.1, steps=1, record_every=bad)


# ------------------------------------------------------------------------- every training path flags divergence
def test_every_training_path_reports_divergence():
    """The paths that used to return huge or non-finite numbers with no flag now carry ``diverged`` and
    ``diverged_step`` (lib.train's rule); at a safe rate they are not flagged."""
    from lib.parts.concept_learning import sim_one_layer
    from lib.parts.generalisation import graph_transformers as gtr
    from lib.parts.generalisation import in_context_learning as icl
    from lib.parts.generalisation import settings
    from lib.parts.induction_heads import sample_flows
    from lib.parts.memorisation import mechanism

    kw = dict(alpha_star=1.0, w_star=0.49, L=20, sigma_init=0.01, steps=50, batch=8, separate_qk=False, seeds=[0, 1])
    with np.errstate(all="ignore"):
        out = sample_flows.online_sgd_reparam(lr_4gram=100.0, lr_ih=100.0, **kw)
    assert out["diverged"].all() and (out["diverged_step"] > 0).all()
    assert np.isnan(out["loss_g4"][:, -1]).all()
    out = sample_flows.online_sgd_reparam(lr_4gram=0.1, lr_ih=0.1, **kw)
    assert not out["diverged"].any() and (out["diverged_step"] == -1).all()

    A = np.diag([1.0, 2.0, 3.0])
    with np.errstate(all="ignore"):
        bad = sim_one_layer.one_layer_gd_moments(A, 100.0, 50, z=np.ones(3))
    assert bad.diverged and 0 < bad.diverged_step <= 10 and np.isnan(bad[1][-1]).all()
    ok = sim_one_layer.one_layer_gd_moments(A, 0.1, 50, z=np.ones(3))
    steps, outputs = ok
    assert not ok.diverged and ok.diverged_step is None and np.isfinite(outputs).all() and steps[-1] == 50

    with np.errstate(all="ignore"):
        am = mechanism.associative_memory_run(3, 0.2, 8, seeds=2, steps=20, lr=1e8, every=1)
    assert am["diverged"].all() and (am["diverged_step"] > 0).all()
    assert not mechanism.associative_memory_run(3, 0.2, 8, seeds=2, steps=20, lr=1.0, every=5)["diverged"].any()

    mu, nu = icl.icl_banks()  # float64, as the chapter runs it
    cfg = dict(relevant=mu, irrelevant=nu, tasks=icl.cyclic_tasks(6), length=10, alpha=0.8, kappa=0.5)
    res = icl.train_icl([cfg], m=20, steps=30, batch=8, lr=1e12)
    assert res["diverged"] and res["diverged_step"] == 1
    assert not icl.train_icl([cfg], m=20, steps=3, batch=8, lr=0.1)["diverged"]
    gpt = icl.train_icl_gpt(cfg, [cfg], d_model=16, n_layers=1, steps=5, lr=1e3, batch=8, n_test=20)
    assert gpt["diverged"] and gpt["diverged_step"] >= 1 and np.isnan(gpt["error"]).all()

    torch.set_default_dtype(torch.float32)  # the graph-transformer chapter runs in float32 (restored by the fixture)
    tiny = dict(settings.GT, n=40, degree=6, K=4, m=4, n_test=10, steps=20, batch=4)
    with np.errstate(all="ignore"):
        gt = gtr.train_gt([20], [0], {**tiny, "lr": 1e6}, 0.4, 0.1)
    assert gt["diverged"].all() and (gt["diverged_step"] >= 1).all()
    gt = gtr.train_gt([20], [0], {**tiny, "steps": 2}, 0.4, 0.1)
    assert not gt["diverged"].any() and (gt["diverged_step"] == -1).all()
    torch.set_default_dtype(torch.float64)


def test_truthy_strings_are_not_flags():
    from lib.models.transformer import TransformerConfig
    from lib.parts.generalisation import graph_transformers as gtr
    from lib.parts.generalisation import settings

    torch.set_default_dtype(torch.float32)
    tiny = dict(settings.GT, n=40, degree=6, K=4, m=4, n_test=10, steps=2, batch=4)
    for kw in ({"gcn": "no"}, {"pe": "no"}, {"gcn": None}, {"pe": 2}, {"distances": "abc"}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            gtr.train_gt([20], [0], tiny, 0.4, 0.1, **kw)
    torch.set_default_dtype(torch.float64)
    with pytest.raises(ValueError, match="layer_norm"):
        TransformerConfig(d_in=2, d_model=8, n_layers=1, max_len=8, layer_norm="False")
    with pytest.raises(ValueError, match="shared_batch"):
        train.train_stacked({"w": torch.zeros(2, 1)}, lambda p, b: (p["w"] ** 2).sum(), lr=0.1, steps=1,
                            batch_fn=lambda s, g: torch.zeros(1), optimizer="sgd", shared_batch="no")
    from lib import config

    with pytest.raises(ValueError, match="enabled"):
        config.set_float64("no")


def test_seeds_are_checked_not_truncated():
    from lib.models import hf
    from lib.parts.memorisation import ioi

    torch.set_default_dtype(torch.float32)
    for seed in (2.5, -1, "3"):
        with pytest.raises(ValueError, match="seed"):
            ioi.split_model(6, 8, 10, 4, 8, seed=seed)
        with pytest.raises(ValueError, match="seed"):
            hf.tiny_gpt_neox(16, seed=seed)
    torch.set_default_dtype(torch.float64)


class _Scaled(torch.nn.Module):
    """Not an MLP the stacked trainer recognises: it goes through functional_call."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(D, 2)

    def forward(self, x):
        return 2.0 * self.lin(x)


@pytest.mark.parametrize("kind", ["tanh-sequential", "lib-mlp", "relu-mlp", "other-module"])
def test_stacked_module_kinds_equal_separate_runs(kind):
    # MLPs (nn.Sequential of Linear and elementwise activations, lib.models.mlp.MLP / ReLUMLP) are applied layer by
    # layer under vmap, any other module through functional_call; both must give every model the trajectory of its
    # own train() run: float64, Adam, 30 minibatch steps, parameters equal to rtol 1e-10 (round-off of the batched
    # matrix products)
    from lib.models.mlp import MLP, ReLUMLP

    def make(k):
        torch.manual_seed(k)
        if kind == "tanh-sequential":
            return torch.nn.Sequential(torch.nn.Linear(D, 5), torch.nn.Tanh(), torch.nn.Linear(5, 5), torch.nn.GELU(),
                                       torch.nn.Linear(5, 2)).double()
        if kind == "lib-mlp":
            return MLP(D, 2, depth=3, width=5).double()
        if kind == "relu-mlp":
            return ReLUMLP(D, width=5, depth=3, out_dim=1)
        return _Scaled().double()

    X, Y, idx = _data()
    X, Y = X.double(), Y.double()
    if kind == "relu-mlp":
        Y = Y[..., 0]
    pick = lambda s, k: (X[k][idx[s, k]], Y[k][idx[s, k]])
    solos = []
    for k in range(K):
        m = make(k)
        train.train(m, _mse, steps=STEPS, optimizer="adam", lr=0.01, batch_fn=lambda s, g, k=k: pick(s, k))
        solos.append(m)
    models = [make(k) for k in range(K)]
    assert (train._mlp_plan(models[0]) is None) == (kind == "other-module")
    batch = lambda s, g: tuple(torch.stack(t) for t in zip(*[pick(s, k) for k in range(K)]))
    res = train.train_stacked(models, _mse, steps=STEPS, optimizer="adam", lr=0.01, batch_fn=batch)
    for k, m in enumerate(solos):
        for n, p in m.named_parameters():
            assert torch.allclose(res.params[n][k], p.detach(), rtol=1e-10, atol=1e-12), (kind, k, n)


def test_train_with_tracker_steps_with_its_gradient():
    # GD with a SharpnessTracker: the loss and gradient of the tracker's Hessian graph drive the step; the run and
    # the recorded sharpness equal those of a plain run that calls a tracker from record (float64, to 1e-12)
    from lib import curvature

    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(40, 3, generator=g, dtype=torch.float64), torch.randn(40, generator=g, dtype=torch.float64)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
    theta0, loss = curvature.flatten_module(model, lambda call: ((call(X).squeeze(-1) - y) ** 2).mean())
    plain = curvature.SharpnessTracker()
    a = train.train(theta0.clone(), loss, lr=0.2, steps=30, record=lambda th, s: {"sharpness": plain(loss, th)})
    reuse = curvature.SharpnessTracker()
    b = train.train(theta0.clone(), loss, lr=0.2, steps=30, tracker=reuse, record_every=1)
    assert torch.allclose(a.params, b.params, rtol=1e-12, atol=1e-14)
    assert np.allclose(a.history["loss"], b.history["loss"], rtol=1e-12)
    assert np.allclose(a.history["sharpness"], b.history["sharpness"], rtol=1e-10)
    with pytest.raises(ValueError, match="tracker"):
        train.train(theta0.clone(), loss, lr=0.2, steps=3, tracker=object())
    with pytest.raises(ValueError, match="tracker"):
        train.train(theta0.clone(), lambda th, b: loss(th), lr=0.2, steps=3, tracker=reuse,
                    batch_fn=lambda s, gen: None)
