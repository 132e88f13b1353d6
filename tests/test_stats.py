"""Unit tests of lib.stats: the paired bootstrap and the standard error (frequencies and order violations are tested
with their users)."""

import numpy as np
import pytest

from lib.stats import bootstrap_paired_mean, chain_violations, mean_se


def test_bootstrap_paired_mean_keeps_the_pairing():
    rng = np.random.default_rng(0)
    offsets = rng.normal(size=40)  # sample i carries the same offset at every point: paired
    samples = np.arange(5.0)[:, None] + offsets[None, :]  # (P=5, n=40)

    def rise(path):  # last minus first point of the mean path: the offsets cancel in every resampling
        return path[..., -1] - path[..., 0]

    value, se = bootstrap_paired_mean(samples, rise, n_boot=200, seed=1)
    assert value == pytest.approx(4.0) and se < 1e-12
    value, se = bootstrap_paired_mean(samples, lambda p: p[..., 0], n_boot=2000, seed=1)  # the mean of 40 offsets
    assert value == pytest.approx(offsets.mean()) and se == pytest.approx(offsets.std(ddof=1) / np.sqrt(40), rel=0.1)
    again = bootstrap_paired_mean(samples, lambda p: p[..., 0], n_boot=2000, seed=1)
    assert again == (value, se)  # seeded


def test_bootstrap_paired_mean_rejects_bad_arguments():
    good = dict(samples=np.zeros((3, 4, 2)), statistic=lambda p: p[..., 0, 0], n_boot=10, seed=0)
    for kw, name in ((dict(samples=np.zeros((3, 1, 2))), "samples"), (dict(statistic=3), "statistic"),
                     (dict(n_boot=1), "n_boot"), (dict(seed=-1), "seed")):
        with pytest.raises(ValueError, match=name):
            bootstrap_paired_mean(**(good | kw))


def test_mean_se_over_all_entries_and_along_an_axis():
    x = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 9.0]])
    m, s = mean_se(x)
    assert isinstance(m, float) and m == pytest.approx(3.5) and s == pytest.approx(x.std(ddof=1) / np.sqrt(6))
    m, s = mean_se(x, axis=1)
    assert np.allclose(m, [2.0, 5.0]) and np.allclose(s, [1 / np.sqrt(3), np.sqrt(13) / np.sqrt(3)])
    with pytest.raises(ValueError, match="values"):
        mean_se(np.ones((3, 1)), axis=1)
    with pytest.raises(ValueError, match="values"):
        mean_se([np.nan, 1.0])


def test_chain_violations_counts_pairs_out_of_order_along_an_axis():
    v = np.array([[0.5, 0.4, 0.9], [0.1, 0.2, 0.3]])  # row 0: (0, 1) out of order by 0.1
    assert chain_violations(v) == 1 and chain_violations(v, tol=0.1) == 0
    assert chain_violations(v, axis=0) == 3  # every column falls from row 0 to row 1
    assert chain_violations(np.arange(5.0)[::-1]) == 10  # every pair of a falling chain
    for bad in (dict(values=np.float64(1.0)), dict(values=v, axis=2), dict(values=v, tol=-1.0)):
        with pytest.raises(ValueError, match="values|axis|tol"):
            chain_violations(**bad)


@pytest.mark.parametrize("shape", [(5,), (4, 6), (4, 3)], ids=["points", "seeds", "three seeds"])
def test_power_law_exponent_interval_covers_the_truth_and_excludes_twice_it(shape):
    """Over repeats of a noisy power law, the 90 % interval covers the true exponent in about 90 % of repeats
    (bootstrap-t over 5 points' residuals, Student's t over 6 or 3 seeds) and excludes twice the exponent almost
    always."""
    from lib.stats import power_law_exponent

    rng = np.random.default_rng(7)
    x = np.geomspace(1.0, 20.0, shape[0])
    xs = x if len(shape) == 1 else x[:, None]
    covered = excluded = 0
    repeats = 120
    for r in range(repeats):
        y = 3.0 * xs**-1.5 * np.exp(0.15 * rng.standard_normal(shape))
        fit = power_law_exponent(x, y, n_boot=400, seed=r, level=0.9)
        covered += fit.covers(-1.5)
        excluded += not fit.covers(-3.0)
        assert fit.lo <= fit.exponent <= fit.hi
    assert 0.8 <= covered / repeats <= 0.97
    assert excluded / repeats >= 0.97
    assert fit.resampled == ("residuals" if len(shape) == 1 else "seeds") and "interval" in str(fit)


def test_power_law_exponent_rejects_bad_arguments():
    from lib.stats import power_law_exponent

    x = np.array([1.0, 2.0, 4.0, 8.0])
    for kw, name in ((dict(x=-x), "x"), (dict(y=[1.0, 0.0, 1.0, 1.0]), "y"), (dict(y=np.ones((4, 2))), "y"),
                     (dict(y=np.ones(3)), "y"), (dict(x=[1.0, 1.0, 2.0, 2.0]), "x"), (dict(level=1.0), "level"),
                     (dict(n_boot=10), "n_boot"), (dict(seed=-1), "seed")):
        args = dict(x=x, y=x**-1.0) | kw
        with pytest.raises(ValueError, match=name):
            power_law_exponent(**args)
    exact = power_law_exponent(x, 2 * x**-1.0)
    assert exact.lo == exact.hi == pytest.approx(-1.0)
