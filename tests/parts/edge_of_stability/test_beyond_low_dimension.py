"""Unit tests of chapter I.4 (Chen & Bruna, Sec. 7 and App. B.3: teacher-student and ReLU MLPs at the EoS)."""

import numpy as np
import pytest
import torch

from lib.parts.edge_of_stability import beyond_low_dimension as bld
from lib.parts.edge_of_stability.one_dimensional import stable_oscillation_condition

DT = torch.float64


def test_teacher_student_data_and_init_shapes():
    X, y = bld.teacher_student_data(50, 16, seed=0)
    assert X.shape == (50, 16) and y.shape == (50,)
    np.testing.assert_allclose(X.norm(dim=1).numpy(), 1.0, atol=1e-12)
    theta, k = bld.ts_init(16, 0)
    assert theta.shape == (16 * 16 + 16,) and k.shape == (16,)
    np.testing.assert_allclose(bld.ts_ratios(theta), k**2, rtol=0.05)  # ||w_i|| / v_i = k_i^2 up to the noise


def test_teacher_is_a_minimum_and_flattest_k_is_interior():
    X, y = bld.teacher_student_data(400, 16, seed=1)
    loss = bld.ts_loss(X, y)
    theta_star = torch.cat([torch.eye(16, dtype=DT).reshape(-1), torch.ones(16, dtype=DT)])
    assert float(loss(theta_star)) < 1e-20
    ks = np.linspace(0.6, 1.8, 13)
    sharp = bld.equal_k_sharpness(X, ks)
    assert sharp.shape == (13,) and 0 < int(np.argmin(sharp)) < 12  # a flattest rescaling inside the range


def test_teacher_student_run_records_and_stays_finite():
    X, y = bld.teacher_student_data(64, 16, seed=0)
    theta0, _ = bld.ts_init(16, 0)
    out = bld.run_teacher_student(X, y, theta0, lr=0.5, steps=5, sharp_every=5)
    assert out["ratios"].shape[1] == 16 and np.all(np.isfinite(out["loss"]))
    assert out["loss"][-1] <= out["loss"][0]


def test_mlp_eos_run_reports_cross_sections():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(30, 5, generator=g, dtype=DT)
    y = (X[:, 0] > 0).to(DT)
    out = bld.run_mlp_eos(X, y, depth=3, lr=0.1, steps=4, width=6, cond_frac=0.0)
    for key in ("sharpness", "cos", "f2", "f3", "f4", "cond"):
        assert key in out
    ok = np.isfinite(out["cond"])
    expected = stable_oscillation_condition(out["f2"][ok], out["f3"][ok], out["f4"][ok])
    np.testing.assert_allclose(out["cond"][ok], expected, rtol=1e-10)
    assert np.all(np.abs(out["cos"][np.isfinite(out["cos"])]) <= 1 + 1e-12)


def test_eos_mask_and_bad_arguments():
    np.testing.assert_array_equal(bld.eos_mask([1.0, 4.5, np.nan, 5.0], lr=0.4), [False, False, False, True])
    with pytest.raises(ValueError, match="lr"):
        bld.eos_mask([1.0], lr=0)
    X, y = bld.teacher_student_data(8, 16)
    with pytest.raises(ValueError, match="steps"):
        bld.run_teacher_student(X, y, bld.ts_init(16)[0], lr=0.1, steps=0)
