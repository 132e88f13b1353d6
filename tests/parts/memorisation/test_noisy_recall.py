"""Tests of the noisy-recall chapter: the transformer options (defaults unchanged), LASER, the shared probes,
the sampler (moment lemmas C.4-C.10), the loss mask and the training wrapper."""

import subprocess
import sys
import types

import pytest
import torch
import torch.nn as nn

from lib.models.laser import laser, laser_rank, low_rank
from lib.models.probes import induction_key_mask, prev_token_score
from lib.models.transformer import Transformer, TransformerConfig
from lib.parts.memorisation import noisy_recall as nr
from lib.parts.memorisation import settings
from lib.parts.memorisation.recall_data import char_bigram, recall_counts, repeated_trigger_mask, sample_recall

TINY = dict(settings.RECALL_QUICK, n_chars=8, d=16, T=16, batch=8, n_test=16)
BASE_COMMIT = "2dc7318"  # the transformer before the Part V options


def _old_transformer():
    try:
        src = subprocess.run(
            ["git", "show", f"{BASE_COMMIT}:lib/models/transformer.py"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("the git history with the previous transformer is not available")
    mod = types.ModuleType("lib.models._transformer_before")
    mod.__package__ = "lib.models"
    sys.modules[mod.__name__] = mod
    try:
        exec(compile(src, "transformer_before.py", "exec"), mod.__dict__)
    finally:
        del sys.modules[mod.__name__]
    return mod


@pytest.mark.parametrize(
    "kw",
    [
        dict(vocab_size=11, d_model=16, n_layers=2, max_len=12),
        dict(vocab_size=11, d_model=16, n_layers=2, ffn=True, learned_pos=True, causal="strict"),
        dict(vocab_size=None, d_in=3, d_model=8, n_layers=1, n_heads=2, ffn=(True,), layer_norm=True, bias=True),
    ],
)
def test_defaults_reproduce_the_previous_transformer_bit_for_bit(kw):
    old = _old_transformer()
    torch.manual_seed(0)
    a = old.Transformer(old.TransformerConfig(**kw))
    torch.manual_seed(0)
    b = Transformer(TransformerConfig(**kw))
    x = torch.randint(0, 11, (3, 10)) if kw["vocab_size"] else torch.randn(3, 10, 3)
    assert torch.equal(a(x), b(x))
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]


def test_ffn_kinds_bias_query_identity_and_random_positions():
    cfg = TransformerConfig(
        vocab_size=7,
        d_model=8,
        n_layers=3,
        ffn=("mlp", "linear", "none"),
        ffn_bias=False,
        query_identity=True,
        random_pos=True,
        rpe="none",
        max_len=6,
    )
    m = Transformer(cfg)
    names = dict(m.named_parameters())
    assert "blocks.0.ffn.fc1.weight" in names and "blocks.0.ffn.fc1.bias" not in names
    assert "blocks.1.ffn.fc.weight" in names and m.blocks[2].ffn is None
    assert all("W_Q" not in n for n in names) and "fixed_pos" not in names
    x = torch.randint(0, 7, (2, 6))
    m(x)
    h = m.embed(x) + m.fixed_pos[None]
    att = m.blocks[0].attn
    s = torch.einsum("btd,bsd->bts", h, torch.einsum("kd,bsd->bsk", att.W_K[0], h)) / 8**0.5
    s = s.masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf"))
    assert torch.allclose(m.attention_maps[0][:, 0], torch.softmax(s, -1), atol=1e-6)
    with pytest.raises(ValueError, match="ffn"):
        TransformerConfig(vocab_size=7, ffn="conv")
    with pytest.raises(ValueError, match="query_identity"):
        TransformerConfig(vocab_size=7, d_model=8, n_heads=2, query_identity=True)
    with pytest.raises(ValueError, match="W_Q"):
        m.set_head(0, 0, W_Q=torch.zeros(8, 8))


class _Conv1D(nn.Module):
    """GPT-2's transposed linear layer: y = x W + b with W of shape (in, out)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out))

    def forward(self, x):
        return x @ self.weight


@pytest.mark.parametrize("module", [nn.Linear(9, 5, bias=False), _Conv1D(9, 5)])
def test_laser_identity_at_full_rank_spectral_error_and_restore(module):
    W = module.weight.detach().clone()
    s = torch.linalg.svdvals(W.double())
    with laser(module, rank=5) as k:
        assert k == 5 and torch.equal(module.weight.detach(), W)
    for k in range(0, 5):
        with laser(module, rank=k):
            Wk = module.weight.detach().clone()
        assert torch.linalg.matrix_rank(Wk.double(), rtol=1e-5) == k
        assert abs(float(torch.linalg.matrix_norm((W - Wk).double(), ord=2)) - float(s[k])) < 1e-4
    assert torch.equal(module.weight.detach(), W)
    with laser(module, fraction=0.45) as k:
        assert k == 2
    assert laser_rank((64, 256), 0.1) == 6 and laser_rank((64, 256), 1.0) == 64


def test_laser_rejects_bad_arguments():
    lin = nn.Linear(3, 3)
    for kw in (dict(), dict(rank=1, fraction=0.5), dict(rank=-1), dict(fraction=1.5)):
        with pytest.raises(ValueError):
            with laser(lin, **kw):
                pass
    with pytest.raises(ValueError):
        low_rank(torch.zeros(3), 1)
    with pytest.raises(ValueError):
        with laser(nn.ReLU(), rank=1):
            pass


def test_shared_probes_are_the_part_two_ones():
    from lib.parts.induction_heads import trained_transformers as tt

    assert tt.prev_token_score is prev_token_score and tt.induction_key_mask is induction_key_mask


def test_sampler_counts_match_the_moment_lemmas():
    """Uniform π, N = 16, T = 256, α = 0.5: the exact stationary counts are T/(N+1), αT/(N+1), (2-α)T/(N+1) and,
    when ȳ = q, T/(αN+1); Lemmas C.4-C.10 state their large-N forms T/N, αT/N, (2-α)T/N, T/(αN)."""
    N, T, a = 16, 256, 0.5
    _, pu, pb = char_bigram(N, uniform=True)
    z, y = sample_recall(pu, pb, 3000, T, a, generator=torch.Generator().manual_seed(0))
    c = recall_counts(z[:, :-1], y, 0, N)
    other = y[:, 0] != 0
    for key, want in (("q", T / (N + 1)), ("noise", a * T / (N + 1)), ("y_bar", (2 - a) * T / (N + 1))):
        assert abs(float(c[key][other].mean()) / want - 1) < 0.03, key
    assert abs(float(c["q"][~other].mean()) / (T / (a * N + 1)) - 1) < 0.05
    assert set(z.unique().tolist()) <= set(range(N + 1))


def test_clean_sampler_never_emits_noise_and_follows_the_target():
    _, pu, pb = char_bigram(12)
    z, y = sample_recall(pu, pb, 64, 40, 0.0, triggers=(0, 3), generator=torch.Generator().manual_seed(1))
    assert not (z == 12).any()
    for k, q in enumerate((0, 3)):
        after = z[:, 1:][z[:, :-1] == q]
        rows = torch.nonzero(z[:, :-1] == q)[:, 0]
        assert torch.equal(after, y[rows, k])


def test_loss_mask_is_the_repeated_triggers():
    tok = torch.tensor([[0, 5, 0, 0, 2, 0], [1, 1, 2, 1, 0, 0]])
    want = torch.tensor([[0, 0, 1, 1, 0, 1], [0, 1, 0, 1, 0, 1]], dtype=torch.bool)
    assert torch.equal(repeated_trigger_mask(tok, (0, 1)), want)


def test_sampler_and_bigram_reject_bad_arguments():
    _, pu, pb = char_bigram(6)
    for kw in (dict(alpha=1.5), dict(triggers=(6,)), dict(triggers=(1, 1)), dict(T=1), dict(batch=0)):
        args = dict(batch=2, T=5, alpha=0.5) | kw
        with pytest.raises(ValueError):
            sample_recall(pu, pb, **args)
    with pytest.raises(ValueError):
        char_bigram(1)
    with pytest.raises(ValueError):
        char_bigram(5, text="abc")


def test_training_is_repeatable_and_keeps_the_frozen_parts():
    m0 = nr.recall_model(TINY["n_chars"], TINY["d"], TINY["T"], seed=0)
    r1 = nr.train_recall(TINY, 6, seed=0)
    r2 = nr.train_recall(TINY, 6, seed=0)
    for key in ("loss", "p_noise_rho1", "ff2_margin", "attn_correct"):
        assert (r1["history"][key] == r2["history"][key]).all() or key == "attn_correct"
    m = r1["model"]
    assert torch.equal(m.embed.weight, m0.embed.weight) and torch.equal(m.head.weight, m0.head.weight)
    assert torch.equal(m.fixed_pos, m0.fixed_pos)
    assert not torch.equal(m.blocks[1].ffn.fc1.weight, m0.blocks[1].ffn.fc1.weight)


def test_metrics_probes_and_ablation_helpers():
    m = nr.recall_model(TINY["n_chars"], TINY["d"], TINY["T"], seed=1)
    clean, noisy = nr.eval_batches(TINY)
    met = nr.recall_metrics(m, clean, noisy)
    # rho = 0 equals dropping F_2, rho = 1 the full model
    drop = nr.dropped_scores(m, clean)
    assert abs(met["p_correct_rho0"] - drop["drop_F2"]["p_correct"]) < 1e-6
    assert abs(met["p_correct_rho1"] - drop["full"]["p_correct"]) < 1e-6
    P = nr.probe_maps(m)
    assert all(v.shape == (TINY["n_chars"] + 1,) * 2 for v in P.values())
    W = m.blocks[0].attn.W_V.detach().clone()
    full = nr.value_rank_scores(m, clean, (TINY["d"],))[TINY["d"]]
    assert abs(full["p_correct"] - drop["full"]["p_correct"]) < 1e-5
    assert torch.equal(m.blocks[0].attn.W_V.detach(), W)
    assert nr.pre_ff2_states(m, clean).shape[0] == nr.repeated_targets(clean).shape[0]
    assert nr.log_steps(5) == [0, 1, 2, 3, 4, 5] and nr.log_steps(100)[-1] == 100


def test_recall_functions_reject_bad_arguments():
    for call in (
        lambda: nr.recall_model(1, 8, 8),
        lambda: nr.recall_model(4, 8, 8, ffn=()),
        lambda: nr.recall_model(4, 8, 8, ffn="mlp"),
        lambda: nr.train_recall(TINY, -1),
        lambda: nr.train_recall(TINY, 1, alpha=2.0),
        lambda: nr.log_steps(-1),
        lambda: nr.recall_experiment(TINY, 1, pretrain_steps=-1),
    ):
        with pytest.raises(ValueError):
            call()


def test_init_code_scale_draws_the_code_scales_and_rejects_other_models():
    import math

    torch.manual_seed(0)
    m = nr.recall_model(6, 16, 8, seed=3)
    assert m.blocks[0].attn.W_Q is None  # W_Q = I in model (4.1)
    for blk in m.blocks:
        assert float(blk.attn.W_K.abs().max()) <= 1 / math.sqrt(16)
    assert abs(float(m.embed.weight.std()) - 1.0) < 0.3
    with pytest.raises(ValueError, match="model"):
        nr.init_code_scale(torch.nn.Linear(2, 2))
