"""Plotting attention maps (rows = queries, columns = keys)."""

from __future__ import annotations

import numpy as np

from lib.config import check_array, check_bool, check_instance, check_int, check_positive, check_range, check_shape


def attention_heatmap(ax, A, *, title: str = "", xlabel: str = "key position $j$",
                      ylabel: str = "query position $i$", cmap: str = "magma", colorbar: bool = True,
                      vmax: float | None = None):
    """Draw one attention map ``A`` (``(T, T)`` array or tensor, rows = queries, each row summing to 1 or 0).

    Positions are labelled from 1 as in the paper. Returns the image.
    """
    check_instance("ax", ax, _Axes())
    check_array("A", A, finite="some")
    check_bool("colorbar", colorbar)
    A = np.asarray(A.detach().cpu() if hasattr(A, "detach") else A, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"A must be a 2-D (T, T) array, got shape {A.shape}")
    T0, T1 = A.shape
    return matrix_heatmap(ax, A, xlabel=xlabel, ylabel=ylabel, title=title, cmap=cmap, colorbar=colorbar,
                          colorbar_label="attention weight", vmin=0.0,
                          vmax=vmax if vmax is not None else max(float(A.max()), 1e-12),
                          extent=(0.5, T1 + 0.5, T0 + 0.5, 0.5))


PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f"]


STYLE = {
    "figure.figsize": (6.4, 3.8),
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "figure.constrained_layout.use": True,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
    "font.size": 10,
    "image.cmap": "viridis",
}


#: Width of the HTML book's text column in inches at ``figure.dpi`` (688 px at 100 dpi): a figure this wide or
#: narrower is shown at full size, so its 10 pt labels stay 10 pt; a wider one is scaled down with its text.
COLUMN_WIDTH = 6.8


def panels(n: int, *, cols: int = 2, height: float = 2.8, width: float = COLUMN_WIDTH, **subplot_kw):
    """A figure of ``n`` panels in rows of ``cols`` that fits the book's column at full size.

    Multi-panel figures grow downwards, not sideways: four panels are a 2 x 2 grid of the column's width, not a
    row twice as wide as the page. Unused slots of the last row are removed.

    Args:
        n: number of panels.
        cols: panels per row (2 for most plots, 3 for small heat maps or images).
        height: height of one row in inches.
        width: figure width in inches (at most :data:`COLUMN_WIDTH`).
        **subplot_kw: passed to ``plt.subplots`` (``sharex``, ``sharey``, ``gridspec_kw``, ``subplot_kw``...).

    Returns:
        ``(fig, axes)``, ``axes`` a 1-D array of the ``n`` axes in reading order.
    """
    import matplotlib.pyplot as plt

    from lib.config import check_range

    check_int("n", n, minimum=1)
    check_int("cols", cols, minimum=1)
    check_range("height", height, 0.5, 12.0)
    check_range("width", width, 1.0, COLUMN_WIDTH)
    cols = min(cols, n)
    rows = -(-n // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(width, height * rows), squeeze=False, **subplot_kw)
    flat = grid.ravel()
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]


def use_style() -> None:
    """Apply the book's matplotlib style (call once at the top of a chapter).

    Inside a Jupyter kernel it also selects the inline backend, so that figures appear even when the kernel
    inherited a non-interactive ``MPLBACKEND`` (with ``Agg`` every ``plt.show()`` would be dropped silently).
    """
    import matplotlib as mpl
    from cycler import cycler

    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and getattr(shell, "kernel", None) is not None:
        shell.run_line_magic("matplotlib", "inline")
        _describe_inline_figures(shell)
    mpl.rcParams.update(STYLE)
    mpl.rcParams["axes.prop_cycle"] = cycler(color=PALETTE)


def _plain(text: str) -> str:
    """Text of a matplotlib label for a reader who cannot see it: TeX commands as words, dollars and braces
    dropped."""
    import re

    words = {"times": " × ", "cdot": " · ", "sqrt": " sqrt ", "approx": " ≈ ", "le": " ≤ ", "ge": " ≥ ",
             "to": " → ", "infty": "∞"}
    quiet = {"mathcal", "mathrm", "mathbf", "mathit", "operatorname", "left", "right", "big", "Big", "bar", "hat",
             "tilde", "text", "mathbb", "boldsymbol", ",", ";", "!"}

    def word(m):
        return " " if m.group(1) in quiet else words.get(m.group(1), f" {m.group(1)} ")

    text = re.sub(r"\\([A-Za-z]+|[,;!])", word, text)
    return " ".join(re.sub(r"[${}^_\\|]", " ", text).split())


def figure_description(fig) -> str:
    """A text description of a figure built from what it shows: its title, and each panel's title and axis
    labels (colour bars skipped). The book uses it as the alt text of every figure."""
    from matplotlib.figure import Figure
    check_instance("fig", fig, Figure)
    parts = []
    title = fig.get_suptitle()
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>" and ax.get_visible()]
    for ax in panels:
        bits = [_plain(ax.get_title() or ax.get_title("left") or "")]
        x, y = _plain(ax.get_xlabel()), _plain(ax.get_ylabel())
        if x or y:
            bits.append(f"{y or 'value'} against {x or 'index'}")
        bits = [b for b in bits if b]
        if bits:
            parts.append(": ".join(bits))
    head = _plain(title) or (f"A figure of {len(panels)} panels" if len(panels) > 1 else "A figure")
    return head + (". " + "; ".join(parts) if parts else "") + "."


def _describe_inline_figures(shell) -> None:
    """Make the inline backend write :func:`figure_description` into each figure's PNG (the ``Description``
    text chunk), from which the book's build takes the image's alt text."""
    from matplotlib.figure import Figure

    png = shell.display_formatter.formatters["image/png"]
    try:
        inner = png.lookup_by_type(Figure)
    except KeyError:
        return
    if getattr(inner, "eld_described", False):
        return

    def show(fig, **kwargs):
        return inner(fig, metadata={"Description": figure_description(fig)}, **kwargs)

    show.eld_described = True
    png.for_type(Figure, show)


def phase_heatmap(ax, x, y, values, *, xlabel: str, ylabel: str, cbar_label: str = "", cmap="RdBu_r", **kw):
    """Heat map of ``values`` (shape (len(y), len(x))) on a regular grid, e.g. finite / divergent regions."""
    check_instance("ax", ax, _Axes())
    check_array("x", x)
    check_array("y", y)
    check_array("values", values, finite="some")
    x, y, values = np.asarray(x), np.asarray(y), np.asarray(values)
    check_shape("values", values, (len(y), len(x)))
    mesh = ax.pcolormesh(x, y, values, shading="nearest", cmap=cmap, **kw)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if cbar_label:
        ax.figure.colorbar(mesh, ax=ax, label=cbar_label)
    return mesh


def bifurcation_scatter(ax, params, points, *, xlabel: str, ylabel: str, s: float = 0.3, **kw):
    """Scatter of attractor points against a parameter (the bifurcation diagram)."""
    check_instance("ax", ax, _Axes())
    check_array("params", params)
    check_array("points", points, finite="some")
    check_positive("s", s)
    ax.scatter(np.asarray(params).ravel(), np.asarray(points).ravel(), s=s, c="k", alpha=0.6, lw=0, **kw)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def shade_phases(ax, boundaries, labels=None, *, colors=None, alpha: float = 0.12):
    """Shade consecutive intervals ``[b_i, b_{i+1}]`` of the x-axis and label them at the top."""
    check_instance("ax", ax, _Axes())
    check_array("boundaries", boundaries)
    check_range("alpha", alpha, 0, 1)
    boundaries = list(boundaries)
    colors = colors or PALETTE
    for i in range(len(boundaries) - 1):
        ax.axvspan(boundaries[i], boundaries[i + 1], color=colors[i % len(colors)], alpha=alpha, lw=0)
        if labels is not None and i < len(labels):
            lo, hi = boundaries[i], boundaries[i + 1]
            mid = np.sqrt(lo * hi) if ax.get_xscale() == "log" and lo > 0 else 0.5 * (lo + hi)
            ax.text(mid, 0.97, labels[i], transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=8)


def matrix_heatmap(ax, matrix, *, xlabel: str, ylabel: str, title: str = "", cmap="viridis", colorbar=True,
                   colorbar_label: str = "", **kw):
    """Heat map of a matrix (e.g. an attention map, rows = queries, columns = keys); ``kw`` go to ``imshow``."""
    check_instance("ax", ax, _Axes())
    check_array("matrix", matrix, finite="some")
    check_bool("colorbar", colorbar)
    m = np.asarray(matrix)
    if m.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {m.shape}")
    im = ax.imshow(m, cmap=cmap, aspect="auto", interpolation="nearest", **kw)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, label=colorbar_label)
    return im


def _Axes():
    from matplotlib.axes import Axes

    return Axes
