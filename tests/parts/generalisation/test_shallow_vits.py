"""Tests of the shallow-ViT chapter's code: model, data, success maps, training."""

import numpy as np
import pytest
import torch

from lib.data.tokens import pattern_bank, pattern_sequences
from lib.models.shallow_attention import ShallowAttention, attention_mass
from lib.parts.generalisation import settings
from lib.parts.generalisation import shallow_vits as sv
from lib.success import fit_boundary, success_map

CFG = dict(settings.VIT, L=10, m=8, steps=5, n_test=20)


def test_attention_rows_sum_to_one():
    model = ShallowAttention(3, 4, 6, generator=torch.Generator().manual_seed(0))
    X = torch.randn(3, 2, 5, 4)
    A = model.attention(X)
    assert A.shape == (3, 2, 5, 5)
    assert torch.allclose(A.sum(-1), torch.ones(3, 2, 5))
    assert model(X).shape == (3, 2)
    keys = torch.zeros(3, 2, 5, dtype=torch.bool)
    keys[..., :2] = True
    mass = attention_mass(A, keys)
    assert mass.shape == (3, 2) and (mass >= 0).all() and (mass <= 1 + 1e-6).all()


def test_forward_returns_the_attention_it_used():
    model = ShallowAttention(2, 4, 6, generator=torch.Generator().manual_seed(3))
    X = torch.randn(2, 3, 5, 4)
    out, A = model(X, return_attention=True)
    assert torch.equal(out, model(X)) and torch.equal(A, model.attention(X))
    first = ShallowAttention(2, 4, 6, readout="first", generator=torch.Generator().manual_seed(3))
    out, A = first(X, return_attention=True)
    assert A.shape == (2, 3, 5, 5) and torch.equal(out, first(X))


def test_curve_members_and_chunked_evaluation(monkeypatch):
    Ns, seeds = np.array([4, 8, 8]), np.array([0, 0, 1])
    full = sv.train_vit(Ns, seeds, CFG, 0.4, 0.1, record_every=2)
    monkeypatch.setattr(sv, "EVAL_ELEMENTS", 1)  # one test sample per chunk: the same values as one pass
    part = sv.train_vit(Ns, seeds, CFG, 0.4, 0.1, record_every=2, curve_members=[2])
    for key in ("test_hinge", "train_hinge", "train_curve", "A"):
        assert np.array_equal(part[key], full[key]), key
    for key in ("test_curve", "mass"):
        assert np.array_equal(part[key][2], full[key][2]) and np.array_equal(part[key][:, -1], full[key][:, -1])
        assert np.isnan(part[key][:2, :-1]).all()
    none = sv.train_vit(Ns, seeds, CFG, 0.4, 0.1, record_every=2, curve_members=[])
    assert np.array_equal(none["test_hinge"], full["test_hinge"]) and np.isnan(none["test_curve"][:, :-1]).all()
    with pytest.raises(ValueError, match="curve_members"):
        sv.train_vit(Ns, seeds, CFG, 0.4, 0.1, curve_members=[3])


def test_runs_are_independent():
    g = torch.Generator().manual_seed(1)
    model = ShallowAttention(2, 4, 6, generator=g)
    X = torch.randn(2, 3, 5, 4)
    out = model(X)
    X2 = X.clone()
    X2[1] += 1.0
    assert torch.allclose(model(X2)[0], out[0])


def test_freeze_flags_and_bad_args():
    model = ShallowAttention(1, 4, 6, freeze_qk=True)
    assert not model.W_K.requires_grad and model.W_V.requires_grad
    with pytest.raises(ValueError, match="readout"):
        ShallowAttention(1, 4, 6, readout="max")
    with pytest.raises(ValueError, match="m"):
        ShallowAttention(1, 4, 1)
    with pytest.raises(ValueError, match="X"):
        model(torch.randn(2, 1, 3, 4))


def test_pattern_data_counts():
    P = pattern_bank(5, 10, rng=0)
    assert torch.allclose(P @ P.T, torch.eye(5, dtype=P.dtype), atol=1e-6)
    y = np.array([1.0, -1.0])
    X, idx = pattern_sequences(y, 20, 0.4, 0.1, P, 0.0, rng=0)
    assert X.shape == (2, 20, 10)
    assert (idx[0] == 0).sum() == 8 and (idx[0] == 1).sum() == 2
    assert (idx[1] == 1).sum() == 8 and (idx[1] == 0).sum() == 2
    with pytest.raises(ValueError, match="alpha_hash"):
        pattern_sequences(y, 20, 0.3, 0.4, P, 0.0)
    with pytest.raises(ValueError, match="noise"):
        pattern_sequences(y, 20, 0.3, 0.1, P, -1.0)


def test_success_map_and_boundary():
    def run_fn(x, Ns, seeds):
        return Ns >= x

    s = success_map(run_fn, [4, 16], [2, 4, 8, 16, 32], [0, 1])
    assert s.shape == (2, 5, 2)
    nstar = fit_boundary(s, [2, 4, 8, 16, 32])
    assert np.allclose(nstar, [np.sqrt(2 * 4), np.sqrt(8 * 16)])  # log-linear midpoints
    assert np.isnan(fit_boundary(np.zeros((1, 3)), [1, 2, 3]))[0]
    with pytest.raises(ValueError, match="level"):
        fit_boundary(s, [2, 4, 8, 16, 32], level=0)
    with pytest.raises(ValueError, match="Ns"):
        success_map(run_fn, [1], [0], [0])


def test_training_is_reproducible_and_members_share_data():
    a = sv.train_vit([4, 8], [0, 0], CFG, 0.5, 0.0)
    b = sv.train_vit([4, 8], [0, 0], CFG, 0.5, 0.0)
    assert np.array_equal(a["test_hinge"], b["test_hinge"])
    d1 = sv.make_data([0], 4, 5, CFG, 0.5, 0.0)
    d2 = sv.make_data([0], 8, 5, CFG, 0.5, 0.0)
    assert torch.equal(d1["X"][0, :4], d2["X"][0, :4])
    assert a["mass"].shape[0] == 2 and not a["diverged"].any()
    with pytest.raises(ValueError, match="Ns"):
        sv.train_vit([0], [0], CFG, 0.5, 0.0)


def test_bounds():
    assert sv.prop1_bound(0.5, 0.0) > sv.thm1_bound(0.5, 0.0)
    assert np.isinf(sv.thm1_bound(0.1, 0.2))
    assert sv.r_squared([1, 2, 3, 4], [2, 4, 6, 8]) == pytest.approx(1.0)


def test_assumption_2_3_1_at_init():
    """Our initialisation meets (2.6) up to a factor 2: ||W mu_j - mu_j|| is about sigma (values), delta (keys)."""
    gen = torch.Generator().manual_seed(0)
    (wk, wq), wv = sv.vit_init(200, 10, 1.0, 0.2, 0.1, gen)
    P = pattern_bank(5, 10, rng=0).to(wk.dtype)
    err_v = (torch.einsum("rij,mj->rmi", wv, P) - P).norm(dim=-1)
    err_k = (torch.einsum("rij,mj->rmi", wk, P) - P).norm(dim=-1)
    assert 0.05 < err_v.mean() < 0.2 and 0.1 < err_k.mean() < 0.4
    assert err_k.max() < 0.5  # delta < 1/2 as the assumption asks


def test_key_and_query_masks_remove_tokens():
    """Masking tokens as keys and as queries gives the output of the shorter sequence without them."""
    model = ShallowAttention(2, 4, 6, generator=torch.Generator().manual_seed(2))
    X = torch.randn(2, 3, 5, 4)
    keep = torch.ones(2, 3, 5, dtype=torch.bool)
    keep[..., 1] = False
    keep[..., 3] = False
    out = model(X, allowed=keep[:, :, None, :], queries=keep)
    assert torch.allclose(out, model(X[:, :, [0, 2, 4]]), atol=1e-6)
    assert torch.allclose(model(X, queries=torch.ones(5, dtype=torch.bool)), model(X))
    with pytest.raises(ValueError, match="queries"):
        ShallowAttention(2, 4, 6, readout="first")(X, queries=keep)


def test_keep_mask_and_noisy_tokens():
    d = sv.make_data([0], 6, 4, CFG, 0.6, 0.1, noisy=(3, 2.0))
    clean = sv.make_data([0], 6, 4, CFG, 0.6, 0.1)
    noise, idx = d["noise"][0], d["idx"][0]
    assert (noise.sum(1) == 3).all() and (d["noiset"][0].sum(1) == 3).all()
    assert torch.equal(d["X"][0][~noise], clean["X"][0][~noise]) and torch.equal(idx, clean["idx"][0])
    assert not clean["noise"].any()
    for kind, cand in (("random", torch.ones_like(noise)), ("irrelevant", idx >= 2), ("noisy", noise)):
        keep = sv.keep_mask(idx, noise, kind, 2, rng=0)
        assert (keep.sum(1) == CFG["L"] - 2).all() and not (~keep & ~cand).any()
    assert sv.keep_mask(idx, noise, "none", 2).all()
    with pytest.raises(ValueError, match="kind"):
        sv.keep_mask(idx, noise, "largest", 2)
    with pytest.raises(ValueError, match="count"):
        sv.keep_mask(idx, noise, "noisy", 4)
    with pytest.raises(ValueError, match="noisy"):
        sv.make_data([0], 2, 2, CFG, 0.6, 0.1, noisy=(3, -1.0))


def test_sparsification_and_sigma_map_shapes():
    cfg = dict(CFG, steps=4)
    sp = sv.sparsification_runs(cfg, [0, 1], 6, 0.6, 0.1, 2, (2, 1.0), record_every=2)
    assert sp["test_curve"].shape == (len(sv.REMOVALS), 2, 3) and sp["test_hinge"].shape == (4, 2)
    assert np.allclose(sp["test_curve"][..., -1], sp["test_hinge"], atol=1e-6)
    m = sv.sigma_map(cfg, [0.0, 0.5], [2, 4], [0, 1, 2], 0.5, 0.0)
    assert m["test_hinge"].shape == (2, 2, 3) and int(m["diverged"]) == 0
    with pytest.raises(ValueError, match="sigmas"):
        sv.sigma_map(cfg, [-0.1], [2], [0], 0.5, 0.0)
    with pytest.raises(ValueError, match="remove"):
        sv.train_vit([2], [0], cfg, 0.5, 0.0, remove=["none", "random"])


def test_boundary_exponent_passes_the_predicted_law_and_fails_twice_it():
    from lib.parts.generalisation import scaling

    xs = np.array([0.3, 0.4, 0.5, 0.6])
    Ns = 2.0 ** np.arange(2, 12)
    rng = np.random.default_rng(0)

    def map_for(p):
        true = 4.0 * xs[:, None] ** p * np.exp(0.1 * rng.standard_normal((xs.size, 8)))
        return Ns[None, :, None] >= true[:, None, :] * 16

    ok = scaling.boundary_exponent(xs, map_for(-2.0), Ns, -2.0)
    assert ok["fit"] is not None and ok["status"] in ("reproduced", "inconclusive")
    assert scaling.boundary_exponent(xs, map_for(-4.0), Ns, -2.0)["status"] != "reproduced"
    never = np.zeros((xs.size, Ns.size, 5), bool)
    out = scaling.boundary_exponent(xs, never, Ns, -2.0)
    assert out["fit"] is None and not all(out["preconditions"].values())
    with pytest.raises(ValueError, match="success"):
        scaling.boundary_exponent(xs, never[:, :3], Ns, -2.0)


def test_token_noise_and_thm1_hypotheses():
    from lib.parts.generalisation import settings

    cfg = dict(settings.VIT, L=10)
    loud = sv.token_noise(cfg, 0.3, 0.2, n=200)
    quiet = sv.token_noise(dict(cfg, c0=0.01), 0.3, 0.2, n=200)
    # a token's distance to its pattern is about c0 sqrt(d); orthonormal patterns lie sqrt(2) apart
    assert loud["mean"] == pytest.approx(0.3 * np.sqrt(10), rel=0.1)
    assert quiet["max"] < 0.1 and loud["kappa"] == pytest.approx(np.sqrt(2), rel=1e-5)
    assert not any(sv.thm1_hypotheses(cfg, 0.3, 0.2, loud["max"]).values())
    held = sv.thm1_hypotheses(cfg, 0.5, 0.0, quiet["max"])
    assert all(held.values()) and len(held) == 3
    with pytest.raises(ValueError, match="tau"):
        sv.thm1_hypotheses(cfg, 0.5, 0.0, -1.0)
    with pytest.raises(ValueError, match="n"):
        sv.token_noise(cfg, 0.3, 0.2, n=0)


def test_record_hook_keeps_weights_without_changing_training():
    kw = dict(steps=4, record_every=2, curve_members=[])
    plain = sv.train_vit([8], [0], CFG, 0.5, 0.0, **kw)
    rec = sv.train_vit([8], [0], CFG, 0.5, 0.0, record=lambda model, t: {"W_O": model.W_O.clone(), "t": t}, **kw)
    assert np.array_equal(plain["test_hinge"], rec["test_hinge"])
    assert rec["history"]["W_O"].shape == (3, 1, CFG["m"], CFG["d"])  # steps 0, 2, 4
    assert rec["history"]["t"].tolist() == [0, 2, 4]
    assert not np.allclose(rec["history"]["W_O"][0], rec["history"]["W_O"][-1])
    assert "history" not in plain
    with pytest.raises(ValueError, match="record"):
        sv.train_vit([8], [0], CFG, 0.5, 0.0, record="W_O", **kw)


def test_lucky_dynamics_on_a_hand_made_history():
    P = np.eye(3)
    wo0 = np.array([[0.1, -0.1, 0.0], [-0.1, 0.1, 0.0], [0.1, 0.0, 0.0], [0.0, -0.1, 0.0]])  # (m=4, d=3)
    a = [1.0, -1.0, -1.0, 1.0]  # neuron 0 lucky for p_1, neuron 1 for p_2; 2 and 3 are not
    grow = np.array([[1.0, 0.0, 0.1], [0.0, 2.0, 0.4], [0, 0, 0], [0, 0, 0]])
    wo = np.stack([wo0, wo0 + grow])[:, None]  # (K=2, R=1, m, d)
    wv = np.stack([np.eye(3), np.eye(3) + np.diag([0.5, 0.3, 0.0])])[:, None]
    d = sv.lucky_dynamics({"W_O": wo, "W_V": wv, "W_K": wv}, a, P)
    assert d["lucky"].tolist() == [[1, 2, 0, 0]]
    assert np.allclose(d["along"][:, 0], [0.0, 1.5])  # mean of 1.0 and 2.0
    assert np.isclose(d["ratio"][1, 0, 0], 0.1 / 1.1) and np.isclose(d["ratio"][1, 0, 1], 0.4 / 2.1)
    assert np.isnan(d["ratio"][1, 0, 2:]).all()
    assert np.allclose(d["value"][1, 0], [0.5, 0.3, 0.0]) and np.allclose(d["key"][1, 0], [0.5, 0.3, 0.0])
    assert "query" not in d
    with pytest.raises(ValueError, match="patterns"):
        sv.lucky_dynamics({"W_O": wo}, a, np.eye(4))
    with pytest.raises(ValueError, match="W_V"):
        sv.lucky_dynamics({"W_O": wo, "W_V": wv[:, :, :2]}, a, P)
