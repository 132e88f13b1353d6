"""Tests of lib.parts.concept_learning.jacobian_lemmas: settings inside Assumptions D.1-D.5 and the lemma margins."""

import numpy as np
import pytest

from lib.parts.concept_learning import jacobian_lemmas


def test_lemma_setting_satisfies_the_assumptions():
    cfg = jacobian_lemmas.lemma_setting((1.0, 4.0), 3, seed=1)
    assert all(c["all"] for c in cfg["check"])
    W0 = cfg["W0"]
    assert W0.shape == (3, 2, 2)
    assert np.all(np.linalg.eigvalsh(W0) > 0)  # PSD by construction
    absw = np.abs(W0)
    assert absw.min() >= cfg["omega"] * (1 - 1e-12)
    assert absw.max() <= cfg["beta"] * cfg["omega"] * (1 + 1e-12)


def test_lemma_setting_rejects_bad_arguments():
    with pytest.raises(ValueError, match="a"):
        jacobian_lemmas.lemma_setting((4.0, 1.0), 2)  # not ascending
    with pytest.raises(ValueError, match="a"):
        jacobian_lemmas.lemma_setting((1.0, 2.0), 2)  # a_2 < 3 a_1 breaks D.5
    with pytest.raises(ValueError, match="kappa"):
        jacobian_lemmas.lemma_setting((1.0, 4.0), 2, kappa=1.1)
    with pytest.raises(ValueError, match="n_seeds"):
        jacobian_lemmas.lemma_setting((1.0, 4.0), 0)


def test_check_lemmas_bounds_hold_and_printed_cor_d1_fails():
    cfg = jacobian_lemmas.lemma_setting((1.0, 4.0), 2, seed=0)
    r = jacobian_lemmas.check_lemmas(cfg, 200_000, chunk=5000)
    m = r["margins"]
    for key in ("lemma_d1", "lemma_d2", "lemma_d3", "lemma_d4", "lemma_d5", "cor_d2", "lemma_d6", "lemma_d7",
                "lemma_d8", "cor_d1_p2"):
        assert m[key] <= 1e-9, key
    assert m["cor_d1"] > 1.0  # the bound as printed is too small by a factor P
    assert np.all(r["exit_ratio"] >= 1.0)
    assert (r["t_converged"] > 0).all()
    np.testing.assert_allclose(r["final_W"], np.broadcast_to(np.eye(2), (2, 2, 2)), atol=2 / 20)


def test_check_lemmas_detects_a_violated_bound():
    # a huge step breaks D.2; Cor. D.2's bound on the diagonal update then fails
    cfg = dict(jacobian_lemmas.lemma_setting((1.0, 4.0), 1, seed=0))
    cfg["lr"] = cfg["lr"] * 60
    r = jacobian_lemmas.check_lemmas(cfg, 20_000)
    assert r["margins"]["cor_d2"] > 0


def test_check_lemmas_rejects_bad_arguments():
    cfg = jacobian_lemmas.lemma_setting((1.0, 4.0), 1)
    with pytest.raises(ValueError, match="max_steps"):
        jacobian_lemmas.check_lemmas(cfg, 0)
    with pytest.raises(ValueError, match="dynamics"):
        jacobian_lemmas.check_lemmas(cfg, 10, dynamics="flow")
    with pytest.raises(ValueError, match="lam"):
        jacobian_lemmas.check_lemmas(cfg, 10, lam=2.0)
