"""Tests of the synthetic IOI task (App. C.8) and the parameter split of Fig 4.14."""

import itertools

import pytest
import torch

from lib.parts.memorisation import ioi
from lib.parts.memorisation.noisy_recall import FROZEN, recall_model

TINY = {
    "n_tokens": 6,
    "d": 8,
    "T": 10,
    "batch": 8,
    "alpha": 0.5,
    "steps": 3,
    "lr": 0.03,
    "momentum": 0.9,
    "weight_decay": 1e-4,
    "adam_lr": 1e-3,
    "n_test": 16,
    "laser_rank": 2,
}


@pytest.mark.parametrize("q", [0, 3])
def test_sample_ioi_follows_steps_i_to_v(q):
    N, T, B = 7, 20, 1000
    z, y_bar, y_d = ioi.sample_ioi(N, T, B, alpha=0.3, q=q, generator=torch.Generator().manual_seed(1))
    assert z.shape == (B, T + 1) and y_bar.shape == y_d.shape == (B,)
    assert z.min() >= 0 and z.max() <= N  # N is the noise token tau
    # i. output and distractor distinct, never the trigger
    assert (y_bar != y_d).all() and (y_bar != q).all() and (y_d != q).all()
    # iv. z_T = q, z_{T+1} is y_bar or tau
    assert (z[:, T - 1] == q).all()
    last = z[:, T]
    assert ((last == y_bar) | (last == N)).all()
    assert abs(float((last == N).double().mean()) - 0.3) < 0.05
    for b in range(B):
        pos = torch.nonzero(z[b, : T - 1] == q).reshape(-1).tolist()
        # ii./iii. exactly three triggers before T, in the first T - 2 positions, pairwise at least 2 apart;
        # no q anywhere else (v.)
        assert len(pos) == 3 and max(pos) <= T - 3
        assert all(j - i >= 2 for i, j in itertools.pairwise(pos))
        nxt = z[b, [p + 1 for p in pos]]
        assert int((nxt == y_bar[b]).sum()) == 1 and int((nxt == y_d[b]).sum()) == 2
    # v. the fill (q excluded, counted above) covers every other token, tau included
    assert set(z[:, : T - 1].unique().tolist()) == set(range(N + 1))


def test_sample_ioi_triples_are_uniform_and_alpha_extremes():
    # T = 8: trigger positions in [0, 6), pairwise >= 2 apart: the 4 triples (0,2,4), (0,2,5), (0,3,5), (1,3,5)
    z, y_bar, _ = ioi.sample_ioi(5, 8, 4000, alpha=0.0, generator=torch.Generator().manual_seed(2))
    triples = [tuple(torch.nonzero(row[:7] == 0).reshape(-1).tolist()) for row in z]
    counts = {t: triples.count(t) for t in set(triples)}
    assert set(counts) == {(0, 2, 4), (0, 2, 5), (0, 3, 5), (1, 3, 5)}
    assert all(abs(c / 4000 - 0.25) < 0.03 for c in counts.values())
    assert (z[:, 8] == y_bar).all()
    z1, _, _ = ioi.sample_ioi(5, 8, 50, alpha=1.0)
    assert (z1[:, 8] == 5).all()
    # the output is the once-seen token after q in each of the three slots equally often
    which = torch.stack([row[torch.nonzero(row[:7] == 0).reshape(-1) + 1] == yb for row, yb in zip(z, y_bar)])
    assert torch.allclose(which.double().mean(0), torch.full((3,), 1 / 3, dtype=torch.float64), atol=0.03)


def test_sample_ioi_rejects_bad_arguments():
    for kw, name in (
        (dict(n_tokens=2), "n_tokens"),
        (dict(T=6), "T"),
        (dict(batch=0), "batch"),
        (dict(alpha=1.5), "alpha"),
        (dict(q=6), "q"),
    ):
        args = dict(n_tokens=6, T=10, batch=2, alpha=0.5) | kw
        with pytest.raises(ValueError, match=name):
            ioi.sample_ioi(**args)


def test_recall_model_stacks_L_layers():
    m = recall_model(6, 8, 10, ffn=("mlp",) * 3)
    assert m.cfg.n_layers == 3 and all(b.ffn is not None for b in m.blocks)
    assert m(torch.zeros(2, 10, dtype=torch.long)).shape == (2, 10, 7)
    with pytest.raises(ValueError, match="ffn"):
        recall_model(6, 8, 10, ffn="mlp")
    with pytest.raises(ValueError, match="ffn"):
        recall_model(6, 8, 10, ffn=())


def test_ioi_scores_variants_and_restores_the_model():
    m = recall_model(6, 8, 10, ffn=("mlp",) * 3, seed=1)
    test, _, _ = ioi.sample_ioi(6, 10, 32, 0.0)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    s = ioi.ioi_scores(m, test, rank=2)
    assert set(s) == {"full", "drop_last", "laser"}
    assert m.blocks[-1].ffn is not None
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    x, y = test[:, :-1], test[:, -1]
    with torch.no_grad():
        full = torch.log_softmax(m(x)[:, -1], -1)
    assert s["full"]["loss"] == pytest.approx(float(-full.gather(1, y[:, None]).mean()), rel=1e-6)
    assert 0.0 <= s["drop_last"]["acc"] <= 1.0
    # full rank: LASER changes nothing; rank 0: the MLP contributes W_2 ReLU(0) = 0, i.e. it is dropped
    assert ioi.ioi_scores(m, test, rank=8)["laser"]["loss"] == pytest.approx(s["full"]["loss"], rel=1e-5)
    assert ioi.ioi_scores(m, test, rank=0)["laser"]["loss"] == pytest.approx(s["drop_last"]["loss"], rel=1e-6)
    with pytest.raises(ValueError, match="rank"):
        ioi.ioi_scores(m, test, rank=-1)
    with pytest.raises(ValueError, match="MLP"):
        ioi.ioi_scores(recall_model(6, 8, 10, ffn=("mlp", "none")), test)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_train_ioi_runs_and_keeps_frozen_weights(optimizer):
    run = ioi.train_ioi(TINY, 3, optimizer, seed=0, record_every=1)
    m0 = recall_model(6, 8, 10, ffn=("mlp",) * 3, seed=0)
    for name in FROZEN:
        assert torch.equal(run["model"].state_dict()[name], m0.state_dict()[name])
    h = run["history"]
    assert list(h["step"]) == [0, 1, 2, 3] and len(h["full_acc"]) == 4 and len(h["laser_loss"]) == 4
    assert not run["diverged"]
    out = ioi.ioi_experiment(TINY, 2, optimizer, seed=0)
    assert set(out["final"]) == {"full", "drop_last", "laser"}
    with pytest.raises(ValueError, match="optimizer"):
        ioi.train_ioi(TINY, 3, "lbfgs")
    with pytest.raises(ValueError, match="n_layers"):
        ioi.train_ioi(TINY, 0, "sgd")


def test_split_widths_share_one_budget():
    d = 16
    for budget in (4 * d * d, 8 * d * d):
        for share in (0.25, 0.5, 0.75):
            h_a, h_m = ioi.split_widths(d, budget, share)
            assert 4 * d * h_a + 2 * d * h_m == budget
            m = ioi.split_model(6, d, 10, h_a, h_m, n_layers=2)
            trained = sum(p.numel() for n, p in m.named_parameters() if n not in FROZEN)
            assert trained == 2 * budget
    assert ioi.split_widths(d, 4 * d, 0.0) == (1, 0)
    assert ioi.split_model(6, d, 10, 4, 0).blocks[0].ffn is None
    for kw, name in ((dict(mlp_share=1.0), "mlp_share"), (dict(budget=3), "budget"), (dict(d=0), "d")):
        with pytest.raises(ValueError, match=name):
            ioi.split_widths(**(dict(d=d, budget=4 * d * d, mlp_share=0.5) | kw))


def test_bigram_split_loss_is_finite_and_above_the_floor():
    setting = dict(n_chars=8, d=8, T=12, batch=8, alpha=0.5, steps=5, momentum=0.9, weight_decay=1e-4, n_test=32)
    out = ioi.bigram_split_loss(setting, 4, 8, lr=0.1, seed=0)
    assert out["n_params"] == 2 * (4 * 8 * 4 + 2 * 8 * 8)
    assert out["bigram_loss"] > out["entropy"] > 0 and not out["diverged"]
    bad = ioi.bigram_split_loss(setting, 4, 8, lr=1e6, seed=0)
    assert bad["diverged"] and bad["bigram_loss"] != bad["bigram_loss"]  # nan
