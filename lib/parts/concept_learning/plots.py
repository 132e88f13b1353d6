"""Recurring figures of the SIM chapters: output trajectories in the concept plane, hypercube graphs of corner
losses (App. B, Fig. 7 of Yang et al. 2025) and the major / minor / irrelevant entries of the Jacobian (Fig.
4)."""

from __future__ import annotations

import numpy as np

from lib.config import check_array, check_bool, check_instance, check_int, check_positive


def hypercube_positions(s: int) -> dict:
    """2-D drawing positions of the vertices of the ``s``-cube, keyed by 0/1 tuples (``s`` in 1..6).

    Vertex ``v`` is drawn at ``sum_p v_p e_p`` with ``e_p`` unit vectors at angles spread over a half turn
    (a standard oblique projection: for ``s = 4`` a tesseract drawing).
    """
    check_int("s", s, minimum=1, maximum=6)
    import networkx as nx

    G = nx.hypercube_graph(s)
    ang = np.pi * (np.arange(s) + 0.5) / s if s > 2 else np.array([0.0, np.pi / 2])[:s]
    radii = 1.0 + 0.35 * np.arange(s)[::-1] / max(s - 1, 1)
    dirs = np.stack([np.cos(ang), np.sin(ang)], axis=1) * radii[:, None]
    return {v: np.asarray(v, dtype=float) @ dirs for v in G.nodes}


def plot_hypercube(
    ax,
    V,
    values,
    *,
    vmax: float = 1.0,
    cmap: str = "viridis",
    title: str = "",
    cbar: bool = True,
    cbar_label: str = "loss (truncated)",
    node_size: float = 520,
):
    """Hypercube graph of corner values (Fig. 7): nodes = ``v in {0,1}^s``, edges join Hamming neighbours.

    Args:
        ax: matplotlib axes; V: ``(2^s, s)`` 0/1 codes; values: ``(2^s,)`` (e.g. the loss at each corner),
            drawn truncated at ``vmax`` (the paper truncates at 1).
    Returns:
        the scatter artist (for a shared colour bar).
    """
    from matplotlib.axes import Axes
    check_instance("ax", ax, Axes)
    check_array("V", V)
    check_array("values", values, finite="some")
    check_positive("node_size", node_size)
    check_bool("cbar", cbar)
    import networkx as nx

    V = np.asarray(V).astype(int)
    values = np.asarray(values, dtype=float)
    if V.ndim != 2 or values.shape != (V.shape[0],) or V.shape[0] != 2 ** V.shape[1]:
        raise ValueError(f"V must be (2^s, s) and values (2^s,), got {V.shape} and {values.shape}")
    check_positive("vmax", vmax)
    s = V.shape[1]
    pos = hypercube_positions(s)
    G = nx.hypercube_graph(s)
    for u, w in G.edges:
        p, q = pos[u], pos[w]
        ax.plot([p[0], q[0]], [p[1], q[1]], color="0.6", lw=1.0, zorder=1)
    xy = np.array([pos[tuple(v)] for v in V])
    sc = ax.scatter(
        xy[:, 0],
        xy[:, 1],
        c=np.minimum(values, vmax),
        cmap=cmap,
        vmin=0,
        vmax=vmax,
        s=node_size,
        edgecolors="k",
        linewidths=0.6,
        zorder=2,
    )
    for (x, y), v, val in zip(xy, V, values):
        colour = "white" if min(val, vmax) < 0.55 * vmax else "black"
        ax.text(x, y, "".join(map(str, v)), ha="center", va="center", fontsize=6.5, color=colour, zorder=3)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    for sp in ax.spines.values():
        sp.set_visible(False)
    if title:
        ax.set_title(title)
    if cbar:
        ax.figure.colorbar(sc, ax=ax, shrink=0.8, label=cbar_label)
    return sc


def plot_trajectory_plane(
    ax,
    traj,
    mu,
    *,
    dims=(0, 1),
    label=None,
    color=None,
    n_markers: int = 0,
    normalise: bool = False,
    clusters: bool = True,
    times=None,
    **kw,
):
    """Output trajectory ``f(theta_t; x_hat)`` in the plane of two concept coordinates (Fig. 2, 5, 13).

    Args:
        ax: axes; traj: ``(T, d)`` outputs in concept coordinates; mu: ``(s,)`` signal strengths.
        dims: the two coordinates shown; normalise: divide coordinate ``p`` by ``mu_p`` (targets at (1, 1)).
        n_markers: markers at ``n_markers`` equally spaced times (``times`` ``(T,)`` gives the time axis,
            default the index), as the paper's arrows at equal training-time intervals.
        clusters: draw the training-cluster centres (circles) and ``x_hat`` (red star).
    """
    from matplotlib.axes import Axes
    check_instance("ax", ax, Axes)
    check_array("traj", traj, finite="some")
    check_array("mu", mu)
    check_array("dims", dims)
    check_int("n_markers", n_markers, minimum=0)
    check_bool("normalise", normalise)
    check_bool("clusters", clusters)
    traj = np.asarray(traj, dtype=float)
    mu = np.asarray(mu, dtype=float)
    i, j = dims
    if traj.ndim != 2 or max(i, j) >= traj.shape[1] or max(i, j) >= mu.size:
        raise ValueError(
            f"traj must be (T, d) with d > max(dims) and dims < len(mu); got {traj.shape}, {dims}"
        )
    sx, sy = (mu[i], mu[j]) if normalise else (1.0, 1.0)
    x, y = traj[:, i] / sx, traj[:, j] / sy
    (line,) = ax.plot(x, y, label=label, color=color, **kw)
    if n_markers:
        t = np.arange(len(x)) if times is None else np.asarray(times, dtype=float)
        tm = np.linspace(t[0], t[-1], n_markers)
        ax.plot(np.interp(tm, t, x), np.interp(tm, t, y), "o", ms=3, color=line.get_color())
    if clusters:
        ax.scatter([mu[i] / sx, 0], [0, mu[j] / sy], s=90, facecolors="none", edgecolors="C0", zorder=3)
        ax.scatter([mu[i] / sx], [mu[j] / sy], marker="*", s=140, color="C1", zorder=4)
    ax.set_xlabel(f"output coordinate {i + 1}" + (f" / $\\mu_{i + 1}$" if normalise else ""))
    ax.set_ylabel(f"output coordinate {j + 1}" + (f" / $\\mu_{j + 1}$" if normalise else ""))
    return line


def plot_entry_groups(ax, s: int, d: int, *, title: str = "Jacobian entries (Fig. 4)"):
    """Colour map of the major (dark), minor (by group) and irrelevant (light) entries of a ``d x d``
    Jacobian."""
    from matplotlib.axes import Axes
    check_instance("ax", ax, Axes)
    from matplotlib.colors import ListedColormap

    from lib.parts.concept_learning.deep_models import entry_groups

    g = entry_groups(s, d)
    code = np.zeros((d, d))
    for p, mask in enumerate(g["groups"]):
        code[mask & (code == 0)] = 2 + p
    code[g["major"]] = 1
    colours = ["#eeeeee", "#222222"] + [f"C{p}" for p in range(s)]
    ax.imshow(code, cmap=ListedColormap(colours), vmin=-0.5, vmax=len(colours) - 0.5)
    both = np.zeros((d, d), bool)
    for p in range(s):
        for q in range(p + 1, s):
            both |= g["groups"][p] & g["groups"][q]
    for r, c in zip(*np.nonzero(both)):
        ax.text(c, r, "2", ha="center", va="center", fontsize=7, color="white")
    ax.set_xticks(range(d))
    ax.set_yticks(range(d))
    ax.set_xticklabels([str(k + 1) for k in range(d)])
    ax.set_yticklabels([str(k + 1) for k in range(d)])
    ax.set_xlabel("column j")
    ax.set_ylabel("row i")
    ax.grid(False)
    ax.set_title(title)
    from matplotlib.patches import Patch

    handles = [Patch(color="#222222", label="major"), Patch(color="#eeeeee", label="irrelevant")]
    handles += [Patch(color=f"C{p}", label=f"minor, group {p + 1}") for p in range(s)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7)
