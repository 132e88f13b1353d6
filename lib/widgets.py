"""Slider-driven figures with a live form (ipywidgets, in Jupyter) and a static form (in the HTML book).

Python callbacks cannot run in a static web page. :func:`slider_figure` therefore returns one object whose
MIME bundle carries both

* ``application/vnd.jupyter.widget-view+json``: live ipywidgets controls that call ``plot_fn`` on every change;
* ``text/html``: the figure precomputed on a grid of slider values, as PNG frames swapped by a small
  JavaScript slider (marked ``data-eld-static``). The frames are every combination of a coarse grid
  (:func:`static_grid`, at most ``max_frames``) and, for each numeric slider, a finer line of values with the
  other sliders at their starting values (:func:`static_lines`): a continuous parameter gets more than the two
  end positions a many-slider grid leaves it, at the cost of a few frames. Choosing a value of one line moves
  the other sliders back to their nearest grid value, or to their starting value, so that a frame exists.

Jupyter renders the widget view; the book's ``_config.yml`` ranks ``text/html`` first for the HTML builder,
so the page shows the static form. ``tests`` fail any widget output without the static form.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
import time
from collections.abc import Callable, Sequence

import numpy as np

from . import chapter
from .config import check_callable, check_instance, check_int, pick

STATIC_MARKER = "data-eld-static"


_WIDGET_NUMBER = itertools.count()  # numbers the static widgets of a process, so equal ones get distinct ids

def _fmt(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "on" if value else "off"
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    return str(value)


def _native(value):
    return value.item() if isinstance(value, np.generic) else value


def _thin(values: list, k: int) -> list:
    """Keep ``k`` evenly spaced entries of ``values`` (always the first and the last)."""
    if len(values) <= k:
        return values
    idx = np.unique(np.round(np.linspace(0, len(values) - 1, k)).astype(int))
    return [values[i] for i in idx]


def render_png(fig, dpi: int = 72) -> bytes:
    """Render a matplotlib figure to PNG bytes and close it.

    No ``bbox_inches="tight"``: the book style's constrained layout already fits the figure, and the second layout
    pass of a tight bounding box made each static frame about 1.2x slower."""
    from matplotlib.figure import Figure
    check_instance("fig", fig, Figure)
    import matplotlib.pyplot as plt

    check_int("dpi", dpi, minimum=1)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def static_grid(sliders: dict[str, list], static: dict[str, Sequence] | None, max_frames: int) -> dict[str, list]:
    """Values of each slider in the static form: ``static`` if given, else ``sliders``, thinned so that the
    number of combinations stays at most ``max_frames``."""
    check_int("max_frames", max_frames, minimum=1)
    grid = {k: list(static[k]) if static and k in static else list(v) for k, v in sliders.items()}
    while int(np.prod([len(v) for v in grid.values()])) > max_frames:
        longest = max(grid, key=lambda k: len(grid[k]))
        if len(grid[longest]) <= 2:
            break
        grid[longest] = _thin(grid[longest], len(grid[longest]) - 1)
    return grid


def static_lines(sliders: dict[str, list], grid: dict[str, list], points: int) -> dict[str, list]:
    """The positions of each slider in the static form. A numeric slider whose live form offers at least three
    values gets up to ``points`` evenly spaced values of ``sliders`` together with its values on ``grid``, in
    increasing order; a menu, a fixed parameter (one value on the grid) or a two-valued slider keeps its ``grid``
    values."""
    check_int("points", points, minimum=2)
    if not isinstance(grid, dict) or set(grid) != set(sliders):
        raise ValueError(f"grid must have the names of sliders {sorted(sliders)}")
    lines = {}
    for name, values in grid.items():
        source = list(sliders[name])
        if len(values) < 2 or len(source) < 3 or not all(_is_number(v) for v in [*source, *values]):
            lines[name] = list(values)
            continue
        idx = np.unique(np.round(np.linspace(0, len(source) - 1, min(points, len(source)))).astype(int))
        chosen = [source[i] for i in idx]
        chosen += [g for g in values if not any(g == c for c in chosen)]
        lines[name] = sorted(chosen, key=float)
    return lines


def _position(options: list, want) -> int:
    """Index of the option nearest to ``want`` (numbers by distance, others by equality)."""
    dist = [abs(float(o) - float(want)) if _is_number(o) and _is_number(want) else (0 if o == want else 1)
            for o in options]
    return int(np.argmin(dist))


def static_html(plot_fn: Callable, grid: dict[str, list], initial: dict, *, dpi: int = 72, caption: str = "",
                labels: dict[str, str] | None = None, lines: dict[str, list] | None = None) -> str:
    """The static form: every combination of ``grid`` rendered once, each value of ``lines`` (the finer
    positions of a slider, :func:`static_lines`; default ``grid``) with the other sliders at their starting
    values, and one JavaScript control per slider (named by ``labels[name]`` where given)."""
    check_callable("plot_fn", plot_fn)
    names = list(grid)
    lines = {n: list(grid[n]) for n in names} if lines is None else lines
    if not isinstance(lines, dict) or set(lines) != set(names):
        raise ValueError(f"lines must have the names of grid {names}")
    for n in names:
        if not all(any(g == v for v in lines[n]) for g in grid[n]):
            raise ValueError(f"lines[{n!r}] must hold every value of grid[{n!r}]")
    shown = {n: (labels or {}).get(n, n) for n in names}
    # slider positions: the values of `lines`; the coarse grid is a subset of them, the start is on the grid
    on_grid = {n: [lines[n].index(next(v for v in lines[n] if v == g)) for g in grid[n]] for n in names}
    start = [on_grid[n][_position(grid[n], initial.get(n, grid[n][len(grid[n]) // 2]))] for n in names]
    combos = list(itertools.product(*[on_grid[n] for n in names]))
    for j, n in enumerate(names):  # each finer value of one slider, the others at their start
        combos += [tuple(i if k == j else start[k] for k in range(len(names)))
                   for i in range(len(lines[n])) if i not in on_grid[n]]
    frames, seconds = {}, []
    for combo in combos:
        values = {n: _native(lines[n][i]) for n, i in zip(names, combo)}
        t0 = time.perf_counter()
        png = render_png(plot_fn(**values), dpi=dpi)
        seconds.append(time.perf_counter() - t0)
        frames["_".join(map(str, combo))] = "data:image/png;base64," + base64.b64encode(png).decode()
    # each frame is one call of the live widget's callback: the build reports its time per chapter
    chapter.note_widget_frames(seconds)
    grid = lines  # the controls offer every position
    # the element id is a digest of the frames and the widget's number in this process (a chapter's kernel), not
    # random, so that rebuilding a chapter gives the same HTML byte for byte
    digest = hashlib.sha256(json.dumps([names, start, sorted(frames.items())]).encode()).hexdigest()[:8]
    uid = f"eld-{next(_WIDGET_NUMBER)}-{digest}"
    controls = []
    for j, n in enumerate(names):
        values = json.dumps([_fmt(v) for v in grid[n]])
        if len(grid[n]) == 1:  # a fixed parameter is text, not a slider that cannot move
            controls.append(
                f'<div style="display:flex;align-items:center;gap:0.6em;margin:2px 0">'
                f'<span class="eld-widget-label" style="min-width:9em">{html.escape(shown[n])}</span>'
                f'<input type="hidden" value="0" data-labels=\'{html.escape(values)}\'>'
                f'<output style="font-family:monospace">{html.escape(_fmt(grid[n][0]))}</output>'
                f'<span style="font-size:85%;color:#777">(fixed here; a slider in Jupyter)</span></div>'
            )
            continue
        controls.append(
            f'<label style="display:flex;align-items:center;gap:0.6em;margin:2px 0">'
            f'<span class="eld-widget-label" style="min-width:9em">{html.escape(shown[n])}</span>'
            f'<input type="range" min="0" max="{len(grid[n]) - 1}" step="1" value="{start[j]}" '
            f'data-labels=\'{html.escape(values)}\' data-grid="{",".join(map(str, on_grid[n]))}" '
            f'data-start="{start[j]}" style="flex:1;max-width:24em" aria-label="{html.escape(shown[n])}">'
            f'<output style="min-width:5em;font-family:monospace">{html.escape(_fmt(grid[n][start[j]]))}</output>'
            f"</label>"
        )
    first = frames["_".join(map(str, start))]
    alt = (caption or "figure") + " (for the values chosen with the controls above)"
    cap = (f'<div class="eld-widget-caption" style="font-size:90%;color:#555">{html.escape(caption)}</div>'
           if caption else "")
    finer = any(len(lines[n]) > len(on_grid[n]) for n in names) and len(names) > 1
    note = (
        '<div style="font-size:80%;color:#777">Static form: frames precomputed when the book was built'
        + ("; a slider's in-between values are drawn with the other sliders at their starting values, and"
           " choosing one moves the others back" if finer else "")
        + ". Run the notebook in Jupyter for the live widget with finer sliders.</div>"
    )
    script = f"""
<script type="text/javascript">
(function() {{
  var root = document.getElementById("{uid}");
  var frames = JSON.parse(root.querySelector("script[type='application/json']").textContent);
  var inputs = root.querySelectorAll("input[data-labels]");
  var img = root.querySelector("img");
  function key() {{
    return Array.prototype.map.call(inputs, function(inp) {{ return inp.value; }}).join("_");
  }}
  function update(evt) {{
    var moved = evt && evt.target;
    if (!frames[key()]) {{
      // no frame: the other sliders go to their nearest grid value, and if that is not enough to their start
      inputs.forEach(function(inp) {{
        if (inp === moved || !inp.hasAttribute("data-grid")) return;
        var grid = inp.getAttribute("data-grid").split(",").map(Number), v = parseInt(inp.value);
        inp.value = String(grid.reduce(function(a, b) {{ return Math.abs(b - v) < Math.abs(a - v) ? b : a; }}));
      }});
    }}
    if (!frames[key()]) {{
      inputs.forEach(function(inp) {{
        if (inp !== moved && inp.hasAttribute("data-start")) inp.value = inp.getAttribute("data-start");
      }});
    }}
    inputs.forEach(function(inp) {{
      var labels = JSON.parse(inp.getAttribute("data-labels"));
      inp.parentNode.querySelector("output").textContent = labels[parseInt(inp.value)];
    }});
    var src = frames[key()];
    if (src) {{ img.src = src; }}
  }}
  inputs.forEach(function(inp) {{ inp.addEventListener("input", update); }});
}})();
</script>"""
    return (
        f'<div id="{uid}" class="eld-static-widget" {STATIC_MARKER}="1" style="border:1px solid #ddd;'
        f'border-radius:6px;padding:8px;margin:6px 0">{cap}{"".join(controls)}'
        f'<img src="{first}" style="max-width:100%" alt="{html.escape(alt)}">'
        f'<script type="application/json">{json.dumps(frames)}</script>{note}</div>{script}'
    )


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


class SliderFigure:
    """A figure driven by sliders; display it as the last expression of a cell (see :func:`slider_figure`)."""

    def __init__(self, plot_fn, sliders, static, initial, dpi, caption, max_frames, labels=None, line_points=5):
        if not callable(plot_fn):
            raise ValueError("plot_fn must be callable")
        if not isinstance(sliders, dict) or not sliders:
            raise ValueError("sliders must be a non-empty dict name -> sequence of values")
        clean = {}
        for name, values in sliders.items():
            values = list(values)
            if not values:
                raise ValueError(f"sliders[{name!r}] must hold at least one value")
            clean[name] = values
        if static is not None:
            unknown = set(static) - set(clean)
            if unknown:
                raise ValueError(f"static names {sorted(unknown)} are not among sliders {sorted(clean)}")
        check_int("max_frames", max_frames, minimum=1, maximum=400)
        check_int("dpi", dpi, minimum=20, maximum=300)
        check_int("line_points", line_points, minimum=2, maximum=50)
        if not isinstance(caption, str):
            raise ValueError(f"caption must be a string, got {caption!r}")
        if labels is not None:
            if not isinstance(labels, dict) or not all(isinstance(v, str) and v.strip() for v in labels.values()):
                raise ValueError("labels must be a dict name -> non-empty string")
            unknown = set(labels) - set(clean)
            if unknown:
                raise ValueError(f"labels names {sorted(unknown)} are not among sliders {sorted(clean)}")
        if not isinstance(initial, dict):
            raise ValueError(f"initial must be a dict name -> value, got {initial!r}")
        self.plot_fn = plot_fn
        self.sliders = sliders = clean
        self.initial = initial
        self.dpi = dpi
        self.caption = caption
        self.labels = {n: (labels or {}).get(n, n) for n in sliders}
        self.grid = static_grid(sliders, static, max_frames)
        self.lines = static_lines(sliders, self.grid, line_points)
        self.html = static_html(plot_fn, self.grid, initial, dpi=dpi, caption=caption, labels=self.labels,
                                lines=self.lines)
        self._widget = None

    @property
    def widget(self):
        """The live ipywidgets form (built on first use)."""
        if self._widget is None:
            import ipywidgets as w

            controls = {}
            for name, values in self.sliders.items():
                opts = [(_fmt(v), _native(v)) for v in values]
                value = _native(self.initial.get(name, values[len(values) // 2]))
                if not any(o[1] == value for o in opts):
                    value = opts[len(opts) // 2][1]
                if all(_is_number(v) for v in values):
                    controls[name] = w.SelectionSlider(options=opts, value=value, description=self.labels[name],
                                                       continuous_update=False,
                                                       style={"description_width": "initial"})
                else:
                    controls[name] = w.Dropdown(options=opts, value=value, description=self.labels[name],
                                                style={"description_width": "initial"})
            image = w.Image(format="png")

            def redraw(_=None):
                image.value = render_png(self.plot_fn(**{k: c.value for k, c in controls.items()}), dpi=self.dpi)

            for c in controls.values():
                c.observe(redraw, names="value")
            redraw()
            parts = [w.HTML(f"<i>{html.escape(self.caption)}</i>")] if self.caption else []
            self._widget = w.VBox([*parts, *controls.values(), image])
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.widget._repr_mimebundle_())
        bundle["text/html"] = self.html
        bundle["text/plain"] = f"<slider figure: {', '.join(self.sliders)}>"
        return bundle


def slider_figure(
    plot_fn: Callable,
    sliders: dict[str, Sequence],
    *,
    static: dict[str, Sequence] | None = None,
    initial: dict | None = None,
    dpi: int = 72,
    caption: str = "",
    max_frames: int | None = None,
    labels: dict[str, str] | None = None,
    line_points: int | None = None,
) -> SliderFigure:
    """A slider-driven figure with a live form in Jupyter and a static form in the HTML book.

    Args:
        plot_fn: ``plot_fn(**values) -> matplotlib.figure.Figure``; must be fast (well under a second).
        sliders: parameter name -> the values its live slider offers (numbers give a slider, strings a menu).
        static: parameter name -> the values precomputed for the static form (default: ``sliders``); the
            static form holds every combination, thinned to at most ``max_frames`` frames, and each numeric
            slider's finer values along its own line (``line_points`` of the live values, :func:`static_lines`).
        initial: parameter name -> starting value (default: the middle of each list).
        dpi: resolution of the rendered frames.
        caption: one line above the controls (live and static): what to look for.
        max_frames: cap on the static frames of the coarse grid (default 16 in quick mode, 60 in full mode).
        labels: parameter name -> the words its control shows (default: the name).
        line_points: most positions of a numeric slider in the static form, its grid values included
            (default 5 in quick mode, 9 in full mode): the values off the grid are drawn with the other
            sliders at their starting values, one frame each.
    """
    if max_frames is None:
        max_frames = pick(quick=16, full=60)
    if line_points is None:
        line_points = pick(quick=5, full=9)
    return SliderFigure(plot_fn, sliders, static, dict(initial or {}), dpi, caption, max_frames, labels,
                        line_points)
