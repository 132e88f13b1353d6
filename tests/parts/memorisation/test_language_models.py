import numpy as np
import pytest
import torch

from lib.models.hf import load_pretrained, tiny_gpt_neox
from lib.parts.memorisation import language_models as lm


def test_loader_round_trips_a_tiny_gpt_neox(tmp_path):
    model = tiny_gpt_neox(20, d_model=16, n_layers=2, n_heads=2, max_len=8, seed=3)
    model.save_pretrained(tmp_path)
    loaded, _ = load_pretrained(str(tmp_path))
    a, b = model.state_dict(), loaded.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    ids = torch.randint(0, 20, (2, 6))
    model.eval()
    assert torch.equal(model(ids).logits, loaded(ids).logits)


def test_loader_fails_at_once_offline_and_validates():
    with pytest.raises(OSError):
        load_pretrained("EleutherAI/pythia-1b-surely-not-cached", revision="step14000")
    with pytest.raises(ValueError, match="name"):
        load_pretrained("")
    with pytest.raises(ValueError, match="revision"):
        load_pretrained("x", revision="")
    with pytest.raises(ValueError, match="d_model"):
        tiny_gpt_neox(10, d_model=15, n_heads=2)


def test_template_sentences_and_batches():
    rng = np.random.default_rng(0)
    for _ in range(50):
        w = lm.template_sentence("ioi", rng, 0.0)
        assert w[1] != w[3] and w[-1] == w[1] and w[9] == w[3]
        f = lm.template_sentence("fact", rng)
        assert f[-1] == lm.COUNTRY_OF[f[0]]
    ids, mask = lm.corpus_batch(16, rng)
    assert ids.shape == (16, lm.SEQ_LEN) and mask.shape == (16, lm.SEQ_LEN - 1)
    assert torch.equal(mask, ids[:, 1:] != 0)
    with pytest.raises(ValueError, match="kind"):
        lm.template_sentence("poem", rng)
    with pytest.raises(ValueError, match="mix"):
        lm.corpus_batch(4, rng, mix=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="dog_fraction"):
        lm.template_sentence("ioi", rng, 1.5)


def test_training_is_seeded_and_sweep_full_rank_is_identity():
    out1 = lm.run_template_lm(20, 8, 16, 2, 3e-3, 0, [0, 20], [1, 16])
    out2 = lm.run_template_lm(20, 8, 16, 2, 3e-3, 0, [0, 20], [1, 16])
    assert out1["history"] == out2["history"]
    sw = out1["sweep"]
    assert sw["probe"].shape == (2, 2, 5)
    full = np.array([sw["full"][k] for k in sw["keys"]])
    np.testing.assert_allclose(sw["probe"][:, 1], np.tile(full, (2, 1)), atol=1e-5)
    with pytest.raises(ValueError, match="steps"):
        lm.train_template_lm(steps=0)
