"""Unit tests of the generic lib modules: config, curvature, maps, widgets (train and sweep have their own)."""

import os

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lib import config, curvature, maps, widgets

pytestmark = pytest.mark.usefixtures("float64_default")


# ------------------------------------------------------------------------------------------------ config
def test_mode_and_pick(monkeypatch):
    monkeypatch.setenv("BOOK_MODE", "quick")
    assert config.is_quick() and config.pick(1, 2) == 1
    monkeypatch.setenv("BOOK_MODE", "full")
    assert config.pick(1, 2) == 2
    monkeypatch.setenv("BOOK_MODE", "fast")
    with pytest.raises(ValueError, match="BOOK_MODE"):
        config.mode()


def test_seed_everything_repeats():
    config.seed_everything(3)
    a = torch.randn(4)
    config.seed_everything(3)
    assert torch.equal(a, torch.randn(4))
    with pytest.raises(ValueError, match="seed"):
        config.seed_everything(-1)


@pytest.mark.parametrize(
    "fn,args,name",
    [
        (config.check_positive, ("lr", 0), "lr"),
        (config.check_positive, ("lr", float("nan")), "lr"),
        (config.check_int, ("steps", 1.5), "steps"),
        (lambda *a: config.check_int(*a, minimum=0), ("steps", -1), "steps"),
        (config.check_range, ("eta", 2.0, 0, 1), "eta"),
        (config.check_in, ("method", "qr", ("lanczos",)), "method"),
        (config.check_shape, ("x", np.zeros((2, 3)), (2, 2)), "x"),
    ],
)
def test_checks_name_the_argument(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)


# ------------------------------------------------------------------------------------------------ curvature
def _quartic_loss(A):
    return lambda th: 0.5 * th @ A @ th + 0.25 * (th**4).sum()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 7))
def test_hvp_equals_dense_hessian_product(seed, n):
    g = torch.Generator().manual_seed(seed)
    B = torch.randn(n, n, generator=g)
    loss = _quartic_loss(B @ B.T)
    th, v = torch.randn(n, generator=g), torch.randn(n, generator=g)
    assert torch.allclose(curvature.hvp(loss, th, v), curvature.hessian(loss, th) @ v, atol=1e-9)


@pytest.mark.parametrize("method", ["lanczos", "power", "dense"])
def test_top_eigenpairs_agree_with_eigh(method):
    g = torch.Generator().manual_seed(1)
    B = torch.randn(8, 8, generator=g)
    loss = _quartic_loss(B @ B.T)
    th = torch.randn(8, generator=g)
    H = curvature.hessian(loss, th)
    ev, U = torch.linalg.eigh(H)
    vals, vecs = curvature.hessian_top_eigenpairs(loss, th, k=2, method=method, tol=1e-12, maxiter=5000)
    assert torch.allclose(vals, ev.flip(0)[:2], rtol=1e-6)
    assert abs(float(vecs[:, 0] @ U[:, -1])) == pytest.approx(1.0, abs=1e-5)


def test_directional_derivatives_of_polynomial():
    # f(c) = loss(theta + c u) for loss = sum(th^4)/4 with theta=0: f = c^4 sum(u^4)/4
    u = torch.tensor([1.0, 2.0])
    d = curvature.directional_derivatives(lambda th: 0.25 * (th**4).sum(), torch.zeros(2), u)
    assert torch.allclose(d, torch.tensor([0.0, 0.0, 0.0, 0.0, 6.0 * 17.0]))


def test_curvature_rejects_bad_arguments():
    loss = lambda th: (th**2).sum()
    with pytest.raises(ValueError, match="theta"):
        curvature.hessian_top_eigenpairs(loss, torch.zeros(2, 2))
    with pytest.raises(ValueError, match="method"):
        curvature.hessian_top_eigenpairs(loss, torch.zeros(3), method="qr")
    with pytest.raises(ValueError, match="k"):
        curvature.hessian_top_eigenpairs(loss, torch.zeros(3), k=4)
    with pytest.raises(ValueError, match="v"):
        curvature.hvp(loss, torch.zeros(3), torch.zeros(2))


def test_flatten_module_hessian_matches_manual():
    model = torch.nn.Linear(2, 1, bias=False)
    X = torch.randn(10, 2)
    theta, loss = curvature.flatten_module(model, lambda call: (call(X) ** 2).mean())
    H = curvature.hessian(loss, theta)
    assert torch.allclose(H, 2 * X.T @ X / 10, atol=1e-10)


# ------------------------------------------------------------------------------------------------ maps
def test_period_detection_on_logistic_quartic_map():
    eta = np.array([0.5, 1.05, 1.25, 3.0])
    F = lambda x: x + eta * (1 - x**2) * x  # GD on (x^2-1)^2/4
    traj = maps.iterate_map(F, np.full(4, 0.3), 4000, keep=300)
    assert list(maps.detect_period(traj)) == [1, 2, 4, -1]


def test_lyapunov_exponent_known_values():
    """ln 2 for the fully chaotic logistic map, ln|multiplier|/2 on the period-2 orbit of r = 3.2 (multiplier
    4 + 2r - r^2), the top rate of a linear map whatever the start direction, NaN for a diverging orbit."""
    lam = maps.lyapunov_exponent(lambda x: 4 * x * (1 - x), np.array([0.3, 0.2]), 4000, transient=100)
    assert np.allclose(lam, np.log(2), atol=0.01)
    lam = maps.lyapunov_exponent(lambda x: 3.2 * x * (1 - x), np.array([0.3]), 1000, transient=500)
    assert np.isclose(lam[0], 0.5 * np.log(4 + 6.4 - 3.2**2), atol=1e-6)
    scale = torch.tensor([2.0, 0.5], dtype=torch.float64)
    lam = maps.lyapunov_exponent(lambda x: x * scale, np.ones((3, 2)), 50, transient=50, seed=1)
    assert np.allclose(lam, np.log(2), atol=1e-9)
    assert np.isnan(maps.lyapunov_exponent(lambda x: x**2, np.array([2.0]), 2000)[0])
    with pytest.raises(ValueError, match="x0"):
        maps.lyapunov_exponent(lambda x: x, np.array([np.nan]), 5)


@settings(max_examples=10, deadline=None)
@given(K=st.floats(1.01, 1.2))
def test_two_step_fixed_points_satisfy_fixed_point_equation(K):
    F = lambda x: x + K * (1 - x**2) * x
    roots = maps.two_step_fixed_points(F, 0.05, 1.5, exclude=[1.0])
    assert len(roots) == 2 and roots[0] < 1 < roots[1]
    assert np.allclose(F(F(roots)), roots, atol=1e-9)
    assert np.allclose(F(roots[0]), roots[1], atol=1e-8)


def test_bifurcation_diagram_shapes_and_errors():
    p, x = maps.bifurcation_diagram(lambda x, k: x + k * (1 - x**2) * x, np.linspace(0.5, 1.2, 5), 0.3,
                                        transient=100, keep=8)
    assert p.shape == x.shape == (40,)
    with pytest.raises(ValueError, match="steps"):
        maps.iterate_map(lambda x: x, 0.0, -1)
    with pytest.raises(ValueError, match="traj"):
        maps.detect_period(np.zeros((10, 2)), max_period=8)


# ------------------------------------------------------------------------------------------------ widgets
def test_slider_figure_has_live_and_static_forms():
    import matplotlib.pyplot as plt

    def draw(a, label):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, a])
        ax.set_title(label)
        return fig

    open_before = plt.get_fignums()  # figures other tests left open are not this test's business
    sf = widgets.slider_figure(draw, {"a": np.linspace(0, 1, 30), "label": ["x", "y"]}, max_frames=12)
    bundle = sf._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert widgets.STATIC_MARKER in bundle["text/html"]
    n_frames = np.prod([len(v) for v in sf.grid.values()])
    assert n_frames <= 12 and bundle["text/html"].count("data:image/png;base64") >= n_frames
    with pytest.raises(ValueError, match="sliders"):
        widgets.slider_figure(draw, {})
    with pytest.raises(ValueError, match="static"):
        widgets.slider_figure(draw, {"a": [1]}, static={"b": [1]})
    assert plt.get_fignums() == open_before  # frames are closed after rendering
    fixed = widgets.slider_figure(draw, {"a": [0.0, 0.5, 1.0], "label": ["x", "y"]}, static={"label": ["x"]})
    page = fixed._repr_mimebundle_()["text/html"]
    assert page.count('type="range"') == 1 and 'type="hidden"' in page  # a fixed parameter is text
    named = widgets.slider_figure(draw, {"a": [0.0, 1.0], "label": ["x"]}, labels={"a": "slope of the line"},
                                  caption="the line tilts as the slope grows")
    page = named._repr_mimebundle_()["text/html"]
    assert ">slope of the line</span>" in page and ">label</span>" in page
    assert 'class="eld-widget-caption"' in page and 'alt="the line tilts' in page
    assert named.widget.children[1].description == "slope of the line"
    with pytest.raises(ValueError, match="labels"):
        widgets.slider_figure(draw, {"a": [1]}, labels={"b": "bee"})


def test_static_widget_offers_finer_lines_for_numeric_sliders():
    """A numeric slider keeps more than the two end positions a many-slider grid leaves it: its in-between values
    are drawn with the other sliders at their starting values (one frame each); menus keep their grid."""
    import re

    import matplotlib.pyplot as plt

    def draw(a, b, label):
        fig = plt.figure(figsize=(1, 1))
        fig.gca().plot([0, a, b])
        fig.gca().set_title(label)
        return fig

    sliders = {"a": list(np.linspace(0, 1, 11)), "b": [1.0, 2.0, 3.0, 4.0], "label": ["x", "y", "z"]}
    sf = widgets.slider_figure(draw, sliders, max_frames=8, line_points=5,
                               initial={"a": 0.5, "b": 1.0, "label": "x"})
    assert [len(v) for v in sf.grid.values()] == [2, 2, 2]
    assert len(sf.lines["a"]) == 5 and len(sf.lines["b"]) == 4 and sf.lines["label"] == sf.grid["label"]
    page = sf.html
    # 8 grid frames, then a's 3 and b's 2 values off the grid, each once
    assert len(_json_frames(page)) == 8 + 3 + 2
    assert re.findall(r'max="(\d+)"', page) == ["4", "3", "1"]
    assert 'data-grid="0,4"' in page and "in-between values" in page
    # every position of every slider has a frame with the others at their start
    starts = [int(s) for s in re.findall(r'data-start="(\d+)"', page)]
    frames = _json_frames(page)
    for j, n in enumerate(["a", "b", "label"]):
        for i in range(len(sf.lines[n])):
            assert "_".join(str(i if k == j else s) for k, s in enumerate(starts)) in frames
    with pytest.raises(ValueError, match="lines"):
        widgets.static_html(draw, {"a": [0.0, 1.0], "b": [1.0], "label": ["x"]}, {},
                            lines={"a": [0.0], "b": [1.0], "label": ["x"]})
    with pytest.raises(ValueError, match="line_points"):
        widgets.slider_figure(draw, sliders, line_points=1)


def _json_frames(page: str) -> dict:
    import json
    import re

    return json.loads(re.search(r'<script type="application/json">(.*?)</script>', page, re.S).group(1))


def test_static_widget_html_is_reproducible(monkeypatch):
    """The static widget's element id is not random: the same widget, numbered the same, gives the same HTML (a
    rebuilt chapter is byte-identical), and two equal widgets in one chapter still get distinct ids."""
    import itertools
    import re

    import matplotlib.pyplot as plt

    from lib import widgets

    def draw(a):
        fig = plt.figure(figsize=(1, 1))
        fig.gca().plot([0, a])
        return fig

    monkeypatch.setattr(widgets, "_WIDGET_NUMBER", itertools.count())
    first = widgets.static_html(draw, {"a": [0.0, 1.0]}, {"a": 0.0}, dpi=20)
    second = widgets.static_html(draw, {"a": [0.0, 1.0]}, {"a": 0.0}, dpi=20)
    monkeypatch.setattr(widgets, "_WIDGET_NUMBER", itertools.count())
    assert widgets.static_html(draw, {"a": [0.0, 1.0]}, {"a": 0.0}, dpi=20) == first
    ids = [re.search(r'id="(eld-[^"]+)"', page).group(1) for page in (first, second)]
    assert ids[0] != ids[1]


def test_environment_not_polluted():
    assert os.environ.get("BOOK_MODE") in ("quick", "full")


def test_stop_at_divergence_masks_after_the_first_bad_step():
    from lib.maps import stop_at_divergence

    hist = {"x": np.array([[1.0, 1.0], [2.0, np.inf], [1e7, 5.0], [3.0, 1.0]]), "y": np.zeros((4, 2, 3))}
    assert stop_at_divergence(hist, ["x"], batch_ndim=1)["diverged_step"].tolist() == [-1, 1]  # 1e7 < bound
    out = stop_at_divergence(hist, ["x"], loss_keys=["x"], batch_ndim=1)
    assert out["diverged"].tolist() == [True, True] and out["diverged_step"].tolist() == [2, 1]
    assert np.isnan(out["x"][3, 0]) and out["x"][2, 0] == 1e7 and np.isnan(out["y"][2:, 1]).all()
    single = stop_at_divergence({"x": np.array([1.0, 0.5, 0.2])})
    assert single["diverged"] is False and single["diverged_step"] == -1
    for bad in (dict(bound=0), dict(factor=1.0), dict(batch_ndim=-1), dict(loss_keys=["z"])):
        with pytest.raises(ValueError, match=next(iter(bad))):
            stop_at_divergence(hist, **bad)


def test_cobweb_and_plot_helpers_draw_what_they_say():
    import matplotlib.pyplot as plt

    from lib import plots
    from lib.models.unet import CondUNet, UNetConfig, num_params

    fig, axes = plt.subplots(1, 4)
    maps.cobweb(axes[0], lambda x: 3.2 * x * (1 - x), 0.2, 10, (0, 1))
    assert len(axes[0].lines) >= 3  # the map, the diagonal, the path
    with pytest.raises(ValueError, match="steps"):
        maps.cobweb(axes[0], lambda x: x, 0.2, -1, (0, 1))
    plots.phase_heatmap(axes[1], np.arange(3), np.arange(2), np.zeros((2, 3)), xlabel="a", ylabel="b")
    assert axes[1].get_xlabel() == "a" and (axes[1].images or axes[1].collections)
    plots.bifurcation_scatter(axes[2], np.repeat([1.0, 2.0], 4), np.arange(8.0), xlabel="K", ylabel="x")
    assert axes[2].collections and axes[2].get_xlabel() == "K"
    plots.shade_phases(axes[3], [0, 1, 2], ["I", "II"])
    assert len(axes[3].patches) == 2 and {t.get_text() for t in axes[3].texts} == {"I", "II"}
    plt.close(fig)
    net = CondUNet(UNetConfig(channels=(8, 8)))
    assert num_params(net) == sum(p.numel() for p in net.parameters() if p.requires_grad)


def test_panels_fit_the_column():
    import matplotlib.pyplot as plt

    from lib import plots

    fig, axes = plots.panels(3, cols=2, height=2.5, sharey=True)
    assert axes.shape == (3,) and len(fig.axes) == 3
    assert tuple(fig.get_size_inches()) == (plots.COLUMN_WIDTH, 5.0)
    plt.close(fig)
    fig, axes = plots.panels(1, cols=3)
    assert axes.shape == (1,) and fig.get_size_inches()[1] == 2.8
    plt.close(fig)
    with pytest.raises(ValueError, match="width"):
        plots.panels(2, width=12)
    with pytest.raises(ValueError, match="n"):
        plots.panels(0)


def test_chapter_resources_record_widget_times_and_memory(tmp_path, monkeypatch):
    """In a build, each static widget's frame times and the kernel's peak memory reach the chapter's record."""
    import json

    import matplotlib.pyplot as plt

    from lib import chapter

    monkeypatch.setenv("ELD_RESOURCES_DIR", str(tmp_path))
    monkeypatch.setenv("ELD_DOCNAME", "notebooks/part/01_x")
    monkeypatch.setitem(chapter._resources, "widgets", [])

    def draw(a):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, a])
        return fig

    widgets.slider_figure(draw, {"a": [0.0, 0.5, 1.0]})
    record = json.loads((tmp_path / "notebooks__part__01_x.json").read_text())
    assert record["peak_rss_mb"] > 10
    assert len(record["widgets"]) == 1 and record["widgets"][0]["frames"] == 3
    assert 0 <= record["widgets"][0]["median_s"] <= record["widgets"][0]["max_s"]
    assert not list(tmp_path.glob(".tmp-*"))  # written atomically
    for bad in ([], [float("nan")], [-1.0]):
        with pytest.raises(ValueError, match="seconds"):
            chapter.note_widget_frames(bad)
    monkeypatch.delenv("ELD_RESOURCES_DIR")
    chapter.write_resources()  # outside a build: nothing to write, no error


def test_figure_description_reads_titles_and_labels():
    import matplotlib.pyplot as plt

    from lib.plots import figure_description

    fig, axes = plt.subplots(1, 2)
    fig.suptitle("Fig 2: the four phases")
    axes[0].set_title(r"(a) loss $\mathcal{L}_{G_4}$")
    axes[0].set_xlabel("step")
    axes[0].set_ylabel(r"$\eta\sigma_1^2$")
    fig.colorbar(axes[1].imshow([[1, 2], [3, 4]]), ax=axes[1])
    text = figure_description(fig)
    plt.close(fig)
    assert text.startswith("Fig 2: the four phases.") and "(a) loss L G 4: eta sigma 1 2 against step" in text
    assert "$" not in text and "\\" not in text
