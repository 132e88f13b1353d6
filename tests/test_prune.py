"""Unit tests of lib.models.prune (neuron pruning masks)."""

import pytest
import torch

from lib.models.prune import neuron_mask


def test_magnitude_and_largest_drop_the_right_neurons():
    s = torch.tensor([[3.0, 1.0, 2.0, 0.5], [0.1, 0.2, 0.3, 0.4]])
    keep = neuron_mask(s, 0.5, "magnitude")
    assert keep.tolist() == [[True, False, True, False], [False, False, True, True]]
    keep = neuron_mask(s, 0.25, "largest")
    assert keep.tolist() == [[False, True, True, True], [True, True, True, False]]


def test_random_mask_prunes_the_fraction_and_is_seeded():
    s = torch.ones(3, 100)
    a = neuron_mask(s, 0.3, "random", generator=torch.Generator().manual_seed(1))
    b = neuron_mask(s, 0.3, "random", generator=torch.Generator().manual_seed(1))
    assert torch.equal(a, b)
    assert (~a).sum(-1).tolist() == [30, 30, 30]
    assert not torch.equal(a[0], a[1])


def test_rates_zero_and_one():
    s = torch.rand(7)
    assert neuron_mask(s, 0.0).all()
    assert not neuron_mask(s, 1.0).any()


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="rate"):
        neuron_mask(torch.ones(4), 1.5)
    with pytest.raises(ValueError, match="method"):
        neuron_mask(torch.ones(4), 0.5, "smallest")
    with pytest.raises(ValueError, match="scores"):
        neuron_mask(torch.tensor([1.0, float("nan")]), 0.5)
