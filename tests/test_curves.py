"""Unit tests of the generic curve readers and flows: lib.curves, lib.flows."""

import numpy as np
import pytest

from lib.curves import geometric_midpoints, hitting_time, loglog_slope, ratio_spread, speed
from lib.flows import integrate_flow, log_time_grid


def test_integrate_flow_exponential_and_event():
    res = integrate_flow(
        lambda t, y: -y,
        [1.0],
        (0.0, 5.0),
        events={"half": lambda t, y: y[0] - 0.5},
        log_time_grid=50,
        t_min=1e-3,
    )
    assert np.allclose(res.y[0], np.exp(-res.t), rtol=1e-7)
    assert res.events["half"] == pytest.approx(np.log(2), rel=1e-8)
    assert res.t[0] == 0 and res.t.size == 51


def test_integrate_flow_event_never_fires_and_bad_args():
    res = integrate_flow(lambda t, y: -y, [1.0], (0.0, 1.0), events={"neg": lambda t, y: y[0] + 1})
    assert np.isnan(res.events["neg"])
    with pytest.raises(ValueError, match="t_span"):
        integrate_flow(lambda t, y: -y, [1.0], (1.0, 0.0))
    with pytest.raises(ValueError, match="method"):
        integrate_flow(lambda t, y: -y, [1.0], (0.0, 1.0), method="Euler")
    with pytest.raises(ValueError, match="rhs"):
        integrate_flow(None, [1.0], (0.0, 1.0))


def test_hitting_time_interpolates():
    t = np.linspace(0, 10, 11)
    assert hitting_time(t, 10 - t, 2.5) == pytest.approx(7.5)
    assert hitting_time(t, t, 3.5, direction="up") == pytest.approx(3.5)
    assert np.isnan(hitting_time(t, t, 20.0, direction="up"))
    assert hitting_time(t, t, 3.5, direction="up", after=5.0) == 5.0
    with pytest.raises(ValueError, match="direction"):
        hitting_time(t, t, 1.0, direction="sideways")


def test_loglog_slope_exact_power_law():
    x = np.geomspace(1, 100, 7)
    slope, spread = loglog_slope(x, 3 * x**-1.5)
    assert slope == pytest.approx(-1.5) and spread < 1e-12
    with pytest.raises(ValueError, match="> 0"):
        loglog_slope([1, 2], [1, -1])
    mean, rel = ratio_spread([1.0, 2.0])
    assert mean == 1.5 and rel == pytest.approx(1.0)
    with pytest.raises(ValueError, match="t_min"):
        log_time_grid(0.0, 1.0, 10, t_min=2.0)


def test_hitting_time_options_cover_every_former_crossing_function():
    t = np.arange(10.0)
    y = np.array([0, 0.2, 0.95, 0.1, 0.3, 0.92, 0.95, 0.97, 0.99, 1.0])
    # the first sample at the level, no interpolation ("first_crossing" of the deep-model chapter)
    assert hitting_time(t, y, 0.9, direction="up", interpolate=False) == 2.0
    # a running median over 3 samples ignores the one-sample spike at t = 2 (the diffusion chapter's read-out)
    assert hitting_time(t, y, 0.9, direction="up", interpolate=False, window=3) == 5.0
    # never crossing: nan by default, inf on request (so that "crossed before" is False)
    assert np.isnan(hitting_time(t, y, 2.0, direction="up"))
    assert hitting_time(t, y, 2.0, direction="up", never=np.inf) == np.inf
    # either direction: the first sign change of y - level, interpolated (a flip point on a grid)
    z = np.array([0.3, 0.1, -0.1, -0.4])
    assert hitting_time(np.arange(4.0), z, 0.0, direction="either") == pytest.approx(1.5)
    assert hitting_time(np.arange(4.0), -z, 0.0, direction="either") == pytest.approx(1.5)
    # several curves at once: columns of a (n, B) array
    Y = np.stack([t, 10 - t], axis=1)
    np.testing.assert_allclose(hitting_time(t, Y, 4.5, direction="either"), [4.5, 5.5])
    with pytest.raises(ValueError, match="window"):
        hitting_time(t, y, 0.9, window=3)  # interpolation and a median window do not mix
    with pytest.raises(ValueError, match="t must be 1-D"):
        hitting_time(t, y[:-1], 0.5)


def test_speed_and_midpoints():
    t = np.array([1.0, 2.0, 4.0])
    v = np.array([[0.0, 0.0], [3.0, 4.0], [3.0, 4.0]])
    np.testing.assert_allclose(speed(v, t), [5.0, 0.0])
    np.testing.assert_allclose(speed(np.stack([v, 2 * v]), t), [[5.0, 0.0], [10.0, 0.0]])
    np.testing.assert_allclose(geometric_midpoints(t), [np.sqrt(2), np.sqrt(8)])
    with pytest.raises(ValueError, match="increasing"):
        speed(v, [1.0, 1.0, 2.0])


def test_decay_law_tells_exponential_from_power():
    from lib.curves import decay_law

    t = np.linspace(1.0, 50.0, 40)
    e = decay_law(t, 3.0 * np.exp(-0.2 * t))
    assert e["law"] == "exponential" and abs(e["rate"] - 0.2) < 1e-9 and e["rss_exp"] < 1e-20
    p = decay_law(t, 5.0 * t**-1.5)
    assert p["law"] == "power" and abs(p["exponent"] + 1.5) < 1e-9
    for bad in (dict(t=t, y=-t), dict(t=t[:2], y=t[:2]), dict(t=np.ones(5), y=np.ones(5))):
        with pytest.raises(ValueError):
            decay_law(**bad)


def test_path_bend_measures_the_offset_from_the_start_target_line():
    from lib.curves import path_bend

    straight = np.stack([np.linspace(0.0, 1.0, 6)] * 2, axis=-1)  # along the diagonal to (1, 1)
    assert abs(float(path_bend(straight, [1.0, 1.0]))) < 1e-12
    # a detour along the bottom edge: right of the direction of travel, offset 1/sqrt(2) at (1, 0)
    bottom = np.array([[0.0, 0.0], [0.5, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(path_bend(bottom, [1.0, 1.0], window=1), np.sqrt(0.5))
    assert float(path_bend(bottom, [1.0, 1.0], side=-1, window=1)) <= 0.0
    both = path_bend(np.stack([bottom, bottom[:, ::-1]]), [1.0, 1.0], window=1)  # mirror path: the other side
    np.testing.assert_allclose(both, [np.sqrt(0.5), 0.0], atol=1e-12)
    # the running median removes a one-checkpoint spike
    spike = straight.copy()
    spike[3] = [1.0, 0.0]
    assert float(path_bend(spike, [1.0, 1.0], window=3)) < 1e-12
    for kw, name in ((dict(target=[1.0]), "target"), (dict(side=0.5), "side"), (dict(paths=np.zeros((4, 3))), "paths")):
        with pytest.raises(ValueError, match=name):
            path_bend(**(dict(paths=straight, target=[1.0, 1.0]) | kw))
    with pytest.raises(ValueError, match="target"):
        path_bend(straight, [0.0, 0.0])
