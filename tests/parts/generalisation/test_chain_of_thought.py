"""Unit tests of chapter VI.6 (Li's thesis, chapter 7: chain-of-thought with an attention-only transformer)."""

import numpy as np
import pytest
import torch

from lib import curves
from lib.data import prompts
from lib.parts.generalisation import chain_of_thought as cot
from lib.parts.generalisation import settings


def test_example_1_exactly():
    ex = settings.EXAMPLE_1
    s = cot.transition_stats(ex["A"], ex["steps"])
    assert np.allclose(s["B"], ex["B"], atol=1e-12)
    assert s["tau"] == pytest.approx(0.36, abs=1e-12)
    assert s["tau_o"] == pytest.approx(0.56, abs=1e-12)
    assert s["rho"] == pytest.approx(1 / 3, abs=1e-12)
    assert s["rho_o"] == pytest.approx(3 / 14, abs=1e-12)
    assert s["condition"] is False


def test_transition_stats_validates():
    with pytest.raises(ValueError, match="row-stochastic"):
        cot.transition_stats([[[0.5, 0.6], [0.5, 0.5]]], [[0, 1]])
    with pytest.raises(ValueError, match="non-empty"):
        cot.transition_stats([], [])
    with pytest.raises(ValueError, match="steps"):
        cot.transition_stats([np.eye(2)], [[0, 2]])


def test_step_transitions_have_prescribed_tau_rho_and_break_the_condition():
    g = torch.Generator().manual_seed(0)
    maps = prompts.shift_tasks(4, 10, 3, generator=g)
    A = cot.step_transitions(maps, 0.5, 0.8, generator=g)
    assert torch.allclose(A.sum(-1), torch.ones(4, 3, 10))
    for b in range(4):
        s = cot.transition_stats(list(A[b].numpy()), list(maps[b].numpy()))
        assert s["tau"] == pytest.approx(0.5, rel=1e-5)
        assert s["rho"] == pytest.approx(0.8, rel=1e-5)
    A = cot.step_transitions(maps, 0.216, 0.4, mode="condition_fail", generator=g)
    for b in range(4):
        assert not cot.transition_stats(list(A[b].numpy()), list(maps[b].numpy()))["condition"]
    with pytest.raises(ValueError, match="p \\(2 - rho\\)"):
        cot.step_transitions(maps, 0.9, 0.2)
    with pytest.raises(ValueError, match="mode"):
        cot.step_transitions(maps, 0.5, 0.8, mode="random")


def test_shift_tasks_are_permutations_with_the_thesis_shift():
    g = torch.Generator().manual_seed(1)
    maps = prompts.shift_tasks(5, 7, 3, generator=g)
    for b in range(5):
        for k in range(3):
            assert sorted(maps[b, k].tolist()) == list(range(7))
    # f_2 = f_1 applied twice for a shift-by-k task
    assert torch.equal(maps[:, 1], torch.gather(maps[:, 0], 1, maps[:, 0]))


def test_subframe_and_noise_geometry():
    g = torch.Generator().manual_seed(2)
    bank = prompts.orthonormal_bank(20, 30)
    tsr = prompts.subframe(bank, 10, generator=g)
    assert torch.allclose(tsr @ tsr.T, torch.eye(10), atol=1e-5)
    assert torch.allclose(tsr[:, 20:], torch.zeros(10, 10), atol=1e-6)
    noise = prompts.orthogonal_noise((4, 3), tsr, 0.2, generator=g)
    assert torch.allclose(noise.norm(dim=-1), torch.full((4, 3), 0.2), atol=1e-5)
    assert torch.allclose(noise @ tsr.T, torch.zeros(4, 3, 10), atol=1e-5)


def test_training_batch_shapes_and_labels():
    g = torch.Generator().manual_seed(3)
    b = cot.cot_training_batch(6, n_examples=4, alpha=0.5, n_patterns=20, d=30, n_steps=3, generator=g)
    assert b["keys"].shape == (6, 4 * 3 + 3, 63)
    assert b["query"].shape == (6, 63) and b["target"].shape == (6, 30)
    assert b["valid"][:, :12].all() and not b["valid"][:, -1].any()
    assert torch.allclose(b["query"][:, 30:60], torch.zeros(6, 30))


def test_hand_built_weight_gives_zero_cot_error_on_clean_prompts():
    W = cot.hand_built_weight(30, 3)
    res = cot.cot_inference(W, n_queries=100, n_examples=10, alpha=0.8, tau=1.0, rho=1.0, noise=0.0, seed=4)
    assert res["error"] == 0.0
    assert res["masses"][0] > 0.99


def test_training_is_deterministic_and_learns():
    a = cot.train_cot(steps=20, batch=16, n_examples=5, checkpoints=(0, 10))
    b = cot.train_cot(steps=20, batch=16, n_examples=5, checkpoints=(0, 10))
    assert np.array_equal(a["W"], b["W"])
    assert list(a["checkpoints"]) == [0, 10, 20]
    assert a["loss"][-1] < a["loss"][0]
    with pytest.raises(ValueError, match="alpha"):
        cot.train_cot(alpha=0.0)


def test_oracle_cot_beats_icl_when_the_condition_fails():
    ex = settings.EXAMPLE_1
    r = cot.oracle_errors(ex["A"], ex["steps"], alpha=0.8, lengths=[64], n_queries=500)
    assert r["cot"][0] < 0.15 and r["icl"][0] > 0.3 and r["cot"][0] < r["icl"][0]


def test_attention_mass_by_type_sums_to_one():
    w = np.array([[0.1, 0.2, 0.3, 0.4]])
    m = curves.attention_mass_by_type(w, [True, True, False, False], [True, False, True, False])
    assert np.allclose(m, [[0.1, 0.2, 0.3, 0.4]])


def test_inference_validates():
    with pytest.raises(ValueError, match="n_examples"):
        cot.cot_inference(np.zeros((63, 63)), n_examples=0)


def test_multilayer_model_trains_and_records_masses():
    from lib.parts.generalisation import cot_multilayer

    r = cot_multilayer.train_multilayer_cot(steps=3, batch=8, n_examples=3, n_test=5, d_model=16, checkpoints=(1,))
    assert list(r["checkpoints"]) == [0, 1, 3]
    assert r["masses"].shape == (3, 3, 2, 4)
    assert np.allclose(r["masses"].sum(-1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="lr"):
        cot_multilayer.train_multilayer_cot(lr=0.0)


def test_fig75_transitions_are_at_the_thesis_setting():
    g = torch.Generator().manual_seed(0)
    maps = prompts.shift_tasks(40, 10, 3, generator=g)
    A = cot.fig75_transitions(maps, generator=g)
    assert torch.allclose(A.sum(-1), torch.ones(()), atol=1e-5)
    st = [cot.transition_stats(list(A[b].double().numpy()), list(maps[b].numpy())) for b in range(40)]
    assert np.mean([s["tau_o"] for s in st]) == pytest.approx(0.4, abs=0.02)
    assert np.mean([s["rho_o"] for s in st]) == pytest.approx(0.1, abs=0.02)
    # the condition fails on some rows (about 30%) and holds on the others
    B = A[:, 0] @ A[:, 1] @ A[:, 2]
    truth = prompts.follow_steps(maps, torch.arange(10).expand(40, 10))[..., -1]
    holds = (B.argmax(-1) == truth).double().mean().item()
    assert 0.55 < holds < 0.85
    with pytest.raises(ValueError, match="fail_share"):
        cot.fig75_transitions(maps, fail_share=1.5)


def test_inference_refuses_a_weight_trained_with_other_sizes():
    W = cot.hand_built_weight(20, 3)  # (43, 43): d = 20, against the default d = 30
    for fn in (cot.cot_inference, cot.icl_inference):
        with pytest.raises(ValueError, match=r"W must have shape \(63, 63\).*d=30"):
            fn(W, n_queries=2)
        assert fn(W, n_queries=2, d=20)["error"] >= 0


def test_multilayer_sinusoidal_positions_replace_the_step_codes():
    """Fig F.1's model: the frozen position buffer holds the standard sinusoid, and the step codes c_k of the
    columns are zeroed before the model reads them (so only the sinusoid tells the steps apart)."""
    import math

    from lib.parts.generalisation import cot_multilayer

    model = cot_multilayer.multilayer_cot_model(4, 2, d_model=8, n_layers=1, n_heads=1, positions="sinusoidal",
                                                max_len=6)
    pos = model.fixed_pos
    assert torch.allclose(pos[3, 0], torch.tensor(math.sin(3.0)))
    assert torch.allclose(pos[3, 1], torch.tensor(math.cos(3.0)))
    assert torch.allclose(pos[5, 2], torch.tensor(math.sin(5.0 / 10000 ** (2 / 8))))
    x = torch.randn(2, 6, 2 * 4 + 2)
    stripped = cot_multilayer._strip_codes(x, 4, "sinusoidal")
    assert torch.all(stripped[..., 8:] == 0) and torch.equal(stripped[..., :8], x[..., :8])
    assert cot_multilayer._strip_codes(x, 4, "codes") is x
    assert cot_multilayer.multilayer_cot_model(4, 2, d_model=8, n_layers=1, n_heads=1).fixed_pos is None
