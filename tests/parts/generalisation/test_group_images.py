import numpy as np
import pytest

from lib.parts.generalisation import group_images as gim


def test_digit_groups_split_and_labels():
    d = gim.digit_groups(n_test=100, split_seed=3)
    assert d["X_test"].shape == (100, 64) and d["X_train"].shape == (1797 - 100, 64)
    assert d["X_train"].min() >= 0 and d["X_train"].max() <= 1
    assert set(np.unique(d["y_train"])) == {0.0, 1.0}
    assert np.array_equal(gim.digit_groups(n_test=100, split_seed=3)["X_test"], d["X_test"])


def test_to_group_rotates_inverts_and_scales_the_covariance():
    X = np.random.default_rng(0).random((50, 64)).astype(np.float32)
    assert np.array_equal(gim.to_group(X, 0), X)
    Y = gim.to_group(X, 1, contrast=0.5)
    img = X[0].reshape(8, 8)
    assert np.allclose(Y[0].reshape(8, 8), 1 - 0.5 * np.rot90(img))
    ratio = gim.covariance_norm(Y) / gim.covariance_norm(X)
    assert ratio == pytest.approx(0.25, rel=1e-4)  # a pixel permutation keeps the spectrum


def test_covariance_norm_of_a_diagonal_gaussian():
    X = np.random.default_rng(1).standard_normal((20000, 3)) * np.array([1.0, 2.0, 0.5])
    assert gim.covariance_norm(X) == pytest.approx(4.0, rel=0.05)


def test_interior_peak_rule():
    rng = np.random.default_rng(0)
    bump = np.array([0.8, 0.9, 0.85])[:, None] + 0.001 * rng.standard_normal((3, 6))
    out = gim.interior_peak(bump)
    assert out["peak"] == 1 and out["ok"] and out["gain"].shape == (2,)
    rising = np.array([0.8, 0.85, 0.9])[:, None] + 0.001 * rng.standard_normal((3, 6))
    assert not gim.interior_peak(rising)["ok"]
    noisy = np.array([0.8, 0.801, 0.8])[:, None] + 0.05 * rng.standard_normal((3, 6))
    assert not gim.interior_peak(noisy)["ok"]


def test_slope_interval_signs():
    x = np.array([0.1, 0.2, 0.3, 0.5])
    rng = np.random.default_rng(0)
    up = x[:, None] + 0.01 * rng.standard_normal((4, 5))
    assert gim.slope_interval(x, up)["sign"] == 1
    assert gim.slope_interval(x, -up)["sign"] == -1
    out = gim.slope_interval(x, rng.standard_normal((4, 5)))
    assert out["lo"] <= out["slope"] <= out["hi"] or out["sign"] == 0


def test_sweeps_shapes_and_sanity():
    a = gim.augmentation_sweep([0.0, 1.0], [0, 1], n_major=60, n_minor=20, n_aug=6, width=8, steps=30)
    assert a["acc"].shape == (2, 2, 2) and a["cov_norm"].shape == (2, 2)
    assert np.all((a["acc"] > 0.4) & (a["acc"] <= 1))
    assert a["cov_norm"][1, 1] > a["cov_norm"][0, 1]  # noisy copies widen the minority
    f = gim.fraction_sweep([0.1, 0.5], [0, 1, 2], minority=1, n_total=80, width=8, steps=30)
    assert f["acc"].shape == (2, 3, 2) and f["cov_norm"][0] > f["cov_norm"][1]


def test_bad_arguments():
    with pytest.raises(ValueError, match="group"):
        gim.to_group(np.ones((2, 64)), 2)
    with pytest.raises(ValueError, match="contrast"):
        gim.to_group(np.ones((2, 64)), 1, contrast=0.0)
    with pytest.raises(ValueError, match="deltas2"):
        gim.augmentation_sweep([-1.0], [0])
    with pytest.raises(ValueError, match="n_aug"):
        gim.augmentation_sweep([0.0], [0], n_minor=10, n_aug=11)
    with pytest.raises(ValueError, match="fractions"):
        gim.fraction_sweep([0.0, 0.5], [0], minority=0)
    with pytest.raises(ValueError, match="minority"):
        gim.fraction_sweep([0.5], [0], minority=2)
    with pytest.raises(ValueError, match="acc"):
        gim.interior_peak(np.ones((2, 3)))
    with pytest.raises(ValueError, match="x"):
        gim.slope_interval([1.0, 1.0], np.ones((2, 3)))
    with pytest.raises(ValueError, match="seeds"):
        gim.train_group_mlps(np.zeros((2, 4, 3)), np.zeros((2, 4)), np.zeros((1, 5, 3)), np.zeros(5), [0])
