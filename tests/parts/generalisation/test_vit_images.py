"""Tests of the Fig 2.6 stand-in: composites, tokens, removal masks, the tiny ViT and the stacked runs."""

import numpy as np
import pytest
import torch

from lib.parts.generalisation import vit_images as vi

ARCH = dict(width=8, heads=2, blocks=1)


def test_photos_ship_with_scikit_learn():
    a, b = vi.photos()
    assert a.shape == b.shape == (427, 640)
    assert 0 <= a.min() and a.max() <= 1


def test_compose_places_the_digit_on_its_tokens():
    digits, _ = vi.digits_by_class([0, 1])
    rng = np.random.default_rng(0)
    images, relevant = vi.compose_images(digits[:6], np.array([True, False] * 3), rng)
    assert images.shape == (6, 20, 20) and relevant.shape == (6, vi.N_TOKENS)
    assert (relevant.sum(1) == vi.N_DIGIT_TOKENS).all()
    tokens = vi.patchify(images)
    assert tokens.shape == (6, 25, 16)
    for i in range(6):  # the digit tokens hold the upsampled digit, in order
        block = tokens[i, relevant[i]].reshape(4, 4, 4, 4).transpose(0, 2, 1, 3).reshape(16, 16)
        assert np.allclose(block, np.kron(digits[i] / 16, np.ones((2, 2))))
    assert np.all(tokens[1, ~relevant[1]] == 0)  # clean background
    assert tokens[0, ~relevant[0]].std() > 0  # photo background


def test_removal_mask_removes_background_only():
    digits, _ = vi.digits_by_class([0])
    _, relevant = vi.compose_images(digits[:5], np.ones(5, bool), np.random.default_rng(1))
    for r in (0, 4, 9):
        keep = vi.removal_mask(relevant, r, np.random.default_rng(2))
        assert (keep.sum(1) == 25 - r).all() and keep[relevant].all()
    assert np.isclose(vi.alpha_star(0), 0.64) and np.isclose(vi.alpha_star(9), 1.0)
    with pytest.raises(ValueError, match="n_removed"):
        vi.removal_mask(relevant, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_removed"):
        vi.alpha_star(-1)


def test_digits_by_class_labels_follow_the_given_order():
    x, y = vi.digits_by_class([8, 3])
    from sklearn.datasets import load_digits

    t = load_digits().target
    assert x.shape == (np.isin(t, [3, 8]).sum(), 8, 8)
    assert (y == np.where(t[np.isin(t, [3, 8])] == 8, 0, 1)).all()
    with pytest.raises(ValueError, match="classes"):
        vi.digits_by_class([3, 3])


def test_vit_ignores_removed_tokens():
    torch.manual_seed(0)
    model = vi.TinyViT(**ARCH, n_classes=3)
    x = torch.randn(4, 25, 16)
    keep = torch.ones(4, 25, dtype=torch.bool)
    keep[:, 20:] = False
    out = model(x, keep)
    x2 = x.clone()
    x2[:, 20:] = 100.0
    assert out.shape == (4, 3)
    assert torch.allclose(out, model(x2, keep), atol=1e-5)
    with pytest.raises(ValueError, match="width"):
        vi.TinyViT(width=9, heads=2)


def test_stacked_training_matches_one_model_alone():
    torch.manual_seed(0)
    X = torch.randn(2, 12, 25, 16)
    y = torch.randint(0, 3, (2, 12))
    keep = torch.ones(2, 12, 25, dtype=torch.bool)
    models = [vi.TinyViT(**ARCH, n_classes=3) for _ in range(2)]
    alone = vi.TinyViT(**ARCH, n_classes=3)
    alone.load_state_dict(models[1].state_dict())
    vi.train_vits(models, X, y, keep, [[0, 12], [1, 6]], steps=3, lr=1e-2, batch=4)
    # model 1 alone, fed the same minibatches (the generator draws both models' indices)
    vi.train_vits([vi.TinyViT(**ARCH, n_classes=3), alone], X, y, keep, [[0, 12], [1, 6]], steps=3,
                     lr=1e-2, batch=4)
    for a, b in zip(models[1].parameters(), alone.parameters()):
        assert torch.allclose(a, b, atol=1e-5)
    with pytest.raises(ValueError, match="members"):
        vi.train_vits(models, X, y, keep, [[0, 13], [1, 6]], steps=1, lr=1e-2, batch=4)


def test_accuracy_map_and_spurious_runs_shapes():
    out = vi.accuracy_map([0, 9], [20, 40], [0, 1], arch=ARCH, steps=2, lr=1e-2, batch=8, n_test=30)
    assert out["acc"].shape == (2, 2, 2) and np.allclose(out["alpha"], [0.64, 1.0])
    assert ((out["acc"] >= 0) & (out["acc"] <= 1)).all()
    sp = vi.spurious_runs([0, 9], [0, 1], n_test_per_class=10, pre_sizes=(40, 8), arch=ARCH, pre_steps=2,
                          steps=2, lr=1e-2, batch=8)
    assert sp["acc"].shape == (3, 2, 2) and sp["diverged"] == 0
    with pytest.raises(ValueError, match="Ns"):
        vi.accuracy_map([0], [40, 20], [0], arch=ARCH, steps=1, lr=1e-2, batch=4, n_test=10)
