"""Chapter V.1's Fig 4.3 and Fig 4.6 rules as functions (lib.parts.memorisation.recall_rules)."""

import numpy as np
import pytest

from lib.parts.memorisation import recall_rules as rr


def _history(p_noise_late=0.5, pc0=0.99, pn0=0.02, steps=2000):
    step = np.array([0, 1, 2, 3, 4, 5, 10, 100] + [s for s in (300, 1000) if s < steps] + [steps], float)
    p_noise = np.where(step < 5, 0.3, 0.6)
    p_noise[step >= 300] = p_noise_late
    return {"step": step, "p_noise_rho1": p_noise, "ff2_margin": np.where(step >= 5, 1.0, -1.0),
            "p_noise_rho0": np.full(step.size, pn0), "p_correct_rho0": np.full(step.size, pc0),
            "p_correct_rho0.1": np.full(step.size, pc0 - 0.05), "p_correct_rho1": np.full(step.size, 0.45)}


def test_fig43_verdicts_pass_a_run_like_the_thesis_and_grade_the_level():
    v = rr.fig43_verdicts([_history() for _ in range(3)], 0.5)
    assert {k: x["status"] for k, x in v.items()} == dict.fromkeys(v, "reproduced")
    v = rr.fig43_verdicts([_history(pc0=0.9)] * 3, 0.5)
    assert v["level"]["status"] == "partly reproduced" and v["gain"]["status"] == "reproduced"
    v = rr.fig43_verdicts([_history(), _history(p_noise_late=0.7)], 0.5)
    assert v["near_alpha"]["status"] == "not reproduced" and v["every_seed"]["status"] == "not reproduced"
    assert rr.fig43_verdicts([_history()] * 2, 0.5)["every_seed"]["status"] == "not reproduced"  # < 3 seeds
    assert rr.fig43_verdicts([_history(steps=200)] * 3, 0.5, late_step=300)["near_alpha"]["status"] == \
        "not reproduced"  # nothing recorded from step 300: the rule fails, never passes vacuously


def test_layer1_offsets_and_fig46_verdicts():
    T = 6
    A = np.zeros((2, T, T))
    A[:, 0, 0] = 1.0
    A[:, np.arange(1, T), np.arange(T - 1)] = 1.0  # a perfect previous-token head
    off = rr.layer1_offsets(A)
    assert off["prev_hit"] == 1.0 and off["by_offset"][1] == 1.0 and off["by_offset"][2] == 0.0
    n = 4
    ff2 = np.zeros((n + 1, n + 1))
    ff2[0, n] = 1.0
    v = rr.fig46_verdicts(off["prev_hit"], off["by_offset"], ff2, np.eye(n + 1), n, 0)
    assert {k: x["status"] for k, x in v.items()} == dict.fromkeys(v, "reproduced")
    v = rr.fig46_verdicts(0.5, [0.3, 0.4, 0.3], np.eye(n + 1), np.ones((n + 1, n + 1)), n, 0)
    assert {k: x["status"] for k, x in v.items()} == dict.fromkeys(v, "not reproduced")
    with pytest.raises(ValueError, match="ff2"):
        rr.fig46_verdicts(0.5, [0.3, 0.4, 0.3], np.eye(3), np.eye(3), n, 0)
