"""Tests of chapter II.3 (the trained stand-in for Fig 1 of Wang et al., 2024)."""

import numpy as np
import pytest
import torch

from lib.data.tokens import repeat_prefix_tokens
from lib.parts.induction_heads.settings import STANDIN_QUICK
from lib.parts.induction_heads.trained_transformers import (
    induction_key_mask,
    induction_score,
    induction_targets,
    plateau_and_drop,
    prev_token_score,
    train_induction,
    uniform_prev_token_score,
)


def test_repeat_prefix_tokens_structure():
    tok, S, mask = repeat_prefix_tokens(64, 20, 12, 3, 9, rng=1)
    assert tok.shape == (64, 20) and S.shape == (64,) and mask.shape == (64, 20)
    assert int(S.min()) >= 3 and int(S.max()) <= 9
    for b in range(64):
        s = int(S[b])
        assert len(set(tok[b, :s].tolist())) == s  # distinct prefix
        assert torch.equal(tok[b, s:], tok[b, :-s][: 20 - s])  # periodic with period S
        assert mask[b].nonzero().flatten().tolist() == list(range(s, 19))
    tok2, _, _ = repeat_prefix_tokens(64, 20, 12, 3, 9, rng=1)
    assert torch.equal(tok, tok2)


def test_scores_of_ideal_heads():
    tok, S, _ = repeat_prefix_tokens(8, 16, 10, 3, 7, rng=0)
    T = 16
    prev = torch.zeros(T, T)
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1.0
    assert torch.allclose(prev_token_score(prev), torch.tensor(1.0))
    tgt = induction_targets(tok)
    for b in range(8):
        s = int(S[b])
        assert tgt[b, :s].tolist() == [-1] * s
        assert tgt[b, s:].tolist() == [i - s + 1 for i in range(s, T)]
    A = torch.zeros(8, 2, T, T)
    for b in range(8):
        for i in range(T):
            if tgt[b, i] >= 0:
                A[b, :, i, tgt[b, i]] = 1.0
    assert torch.allclose(induction_score(A, tok), torch.ones(2))
    # the mask holds the most recent target and every earlier copy's successor, nothing else
    M = induction_key_mask(tok)
    for b in range(8):
        s = int(S[b])
        for i in range(s, T):
            assert M[b, i, int(tgt[b, i])]
            assert M[b, i].nonzero().flatten().tolist() == list(range((i % s) + 1, i + 1, s))
        assert not M[b, :s].any()
    # attention split between two earlier copies still counts fully; attention elsewhere counts zero
    B2 = torch.zeros(8, 1, T, T)
    B2[..., 0] = 1.0
    assert float(induction_score(B2, tok)) == 0.0


def test_uniform_attention_gives_chance_prev_score():
    T = 12
    A = torch.tril(torch.ones(T, T), diagonal=-1)
    A = A / A.sum(-1, keepdim=True).clamp(min=1)
    assert abs(float(prev_token_score(A)) - uniform_prev_token_score(T, "strict")) < 1e-6


def test_plateau_and_drop_on_a_step_curve():
    step = np.arange(0, 101, 1.0)
    loss = np.where(step < 50, 3.0, 0.1)
    out = plateau_and_drop(step, loss, 3.0)
    assert 49 <= out["t_hi"] <= 50 and 49 <= out["t_lo"] <= 50 and out["width"] < 1
    assert out["plateau_max_dev"] == 0.0


@pytest.fixture
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread is much faster on a busy machine
    yield
    torch.set_num_threads(n)


def test_train_induction_short_run_is_deterministic(one_thread):
    s = dict(STANDIN_QUICK, steps=20, record_every=10, eval_batch=16, batch=8)
    a, b = train_induction(s, seed=3), train_induction(s, seed=3)
    assert a["step"].tolist() == [0, 10, 20]
    assert a["maps1"].shape == (3, 1, 32, 32) and a["ind_score"].shape == (3, 1)
    np.testing.assert_array_equal(a["eval_loss"], b["eval_loss"])
    assert abs(a["eval_loss"][0] - np.log(24)) < 0.05


@pytest.mark.parametrize(
    "call",
    [
        lambda: repeat_prefix_tokens(0, 20, 12, 3, 9),
        lambda: repeat_prefix_tokens(4, 20, 12, 9, 3),
        lambda: repeat_prefix_tokens(4, 20, 5, 3, 9),
        lambda: repeat_prefix_tokens(4, 20, 30, 3, 19),
        lambda: prev_token_score(torch.zeros(3, 4)),
        lambda: uniform_prev_token_score(1),
        lambda: uniform_prev_token_score(5, "both"),
        lambda: induction_targets(torch.zeros(3, 4)),
        lambda: induction_key_mask(torch.zeros(3, 4)),
        lambda: induction_score(torch.zeros(2, 1, 5, 5), torch.zeros(3, 5, dtype=torch.int64)),
        lambda: plateau_and_drop([0, 1], [1, 0], 1.0, hi=1.5),
        lambda: plateau_and_drop([0, 1], [1, 0], 0.0),
        lambda: train_induction(STANDIN_QUICK, seed=-1),
        lambda: train_induction(dict(STANDIN_QUICK, lr=0.0)),
        lambda: train_induction(STANDIN_QUICK, show=-1),
    ],
)
def test_bad_arguments_raise(call):
    with pytest.raises(ValueError):
        call()


def test_alibi_prev_token_score_matches_the_attention_it_describes():
    """The closed form equals prev_token_score of the softmax over the strictly causal ALiBi bias."""
    from lib.models.transformer import alibi_bias
    from lib.parts.induction_heads.trained_transformers import alibi_prev_token_score, prev_token_score

    T = 12
    for p in (0.1, 1.0, 3.0):
        bias, allowed = alibi_bias(T, torch.tensor([p], dtype=torch.float64), causal="strict")
        scores = bias[0].masked_fill(~allowed, float("-inf"))
        A = torch.softmax(scores[1:], dim=-1)                       # query 0 has no allowed key
        A = torch.cat([torch.zeros(1, T, dtype=A.dtype), A])
        assert abs(float(prev_token_score(A)) - alibi_prev_token_score(p, T)) < 1e-12
    assert alibi_prev_token_score(50.0, T) > 0.999
    with pytest.raises(ValueError, match="p"):
        alibi_prev_token_score(0.0, T)
