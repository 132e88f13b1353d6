"""Unit tests of the prompt-length search of chapter VI.6 (Theorem 3's l_tr >~ 1/alpha)."""

import numpy as np
import pytest

from lib.parts.generalisation import chain_of_thought as cot
from lib.parts.generalisation import cot_prompt_length as cpl

GRID = [2, 3, 4, 5, 6, 8, 10, 12, 15, 18, 22, 27, 33, 40]


def test_search_finds_the_floor_threshold_with_few_probes():
    calls = []

    def floor(n, a=0.2):  # the loss of a perfect model at budget T/2 (twice the floor) and T
        calls.append(n)
        return [(1 - a) ** n, 0.5 * (1 - a) ** n]

    out = cpl.prompt_length_search(GRID, floor, 0.05)
    exact = np.log(0.1) / np.log(0.8)  # 10.3
    assert out["first"] == 12 and out["bracketed"]
    assert len(calls) <= 4 and sorted(calls) == out["probed"].tolist()
    assert out["threshold"][1] == pytest.approx(exact, rel=1e-9)  # log-linear loss: interpolation is exact
    assert out["threshold"][0] == pytest.approx(np.log(0.05) / np.log(0.8), rel=1e-9)
    assert out["loss"].shape == (len(calls), 2)


def test_search_reports_unbracketed_ends():
    low = cpl.prompt_length_search(GRID, lambda n: 0.01, 0.05)
    assert low["first"] == 2 and not low["bracketed"] and np.isnan(low["threshold"][0])
    high = cpl.prompt_length_search(GRID, lambda n: 1.0, 0.05)
    assert high["first"] is None and not high["bracketed"] and np.isnan(high["threshold"][0])
    assert high["probed"][-1] == 40


def test_search_validates():
    with pytest.raises(ValueError, match="lengths"):
        cpl.prompt_length_search([3, 2], lambda n: 0.1, 0.05)
    with pytest.raises(ValueError, match="lengths"):
        cpl.prompt_length_search([2.5, 3], lambda n: 0.1, 0.05)
    with pytest.raises(ValueError, match="loss_of"):
        cpl.prompt_length_search(GRID, lambda n: float("nan"), 0.05)
    with pytest.raises(ValueError, match="loss_of"):
        cpl.prompt_length_search(GRID, lambda n: [0.1] * (n % 2 + 1), 0.05)
    with pytest.raises(ValueError, match="level"):
        cpl.prompt_length_search(GRID, lambda n: 0.1, 0.0)


def test_expected_loss_of_the_hand_built_weight_is_the_missing_pattern_share():
    W = cot.hand_built_weight(30, 3)
    for n, a in [(2, 0.4), (6, 0.2)]:
        loss = cpl.expected_cot_loss(W, n_examples=n, alpha=a, n_prompts=4000, seed=3)
        # it fails only without an example at the query's pattern; then it outputs the mean of the n examples'
        # outputs, none of them the target, each another of the M - 1 = 19 patterns drawn uniformly
        sq = 1 + 1 / n + (1 - 1 / n) / 19
        assert loss == pytest.approx(0.5 * sq * (1 - a) ** n, rel=0.1)
    with pytest.raises(ValueError, match="d"):
        cpl.expected_cot_loss(np.zeros((5, 5)), n_examples=2, alpha=0.4)
