"""Graph transformers (chapter 3 of Li's thesis): core-neighbourhood graphs, relative PE, GT vs GCN.

The graph of Sec. 3.5.1 has ``N`` nodes; a ``gamma_d/2`` fraction carries the discriminative pattern ``mu_1``
(label +1), as many ``mu_2`` (label -1), the rest one of the ``M-2`` other patterns with a random label. A
non-discriminative node of label +1 links to ``degree (1-eps_S)`` random ``mu_1`` nodes and ``degree eps_S``
random ``mu_2`` nodes (reversed for -1); ``mu_1`` nodes link among themselves (as do ``mu_2`` nodes) until every
node has degree ``>= degree``; there is no ``mu_1``-``mu_2`` edge. So the core distance is ``z_m = 1``. The
option ``core_distance`` of :func:`core_graph` moves the relevant nodes to distance 2 or 3 through relay nodes,
and :func:`sbm_graph` puts the same patterns on a homophilous or heterophilous two-block SBM (stand-ins for the
real graphs of Figs 3.8-3.9 and B.5).

The model (3.1) is :class:`lib.models.shallow_attention.ShallowAttention` read out at the query node (position 0
of each token set: the node itself, then ``K`` neighbours drawn uniformly with replacement from its distance-1
and distance-2 nodes by default, or from any set of distances, redrawn every step) plus a trainable relative PE
``b[u(s, n)]`` added to the scores, with ``u`` the shortest-path distance truncated at ``Z-1``. The GCN of
Thm 3.4.6 is the same network with ``W_K = W_Q = 0`` and ``b = 0`` frozen (uniform averaging). Runs of one call
share a leading axis and train together with :func:`lib.train.train` (plain SGD on the runs' summed hinge losses;
its batch function draws each run's nodes from its own graph and labelled set). :func:`graph_experiment` builds
one graph family (core distances or SBMs) over parameters and seeds and runs the chapter's trainings on it (PE,
``b = 0``, GCN, core neighbourhood only, one distance only).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.sparse import csr_array
from scipy.sparse.csgraph import shortest_path

from lib.config import (
    check_array,
    check_bool,
    check_device,
    check_in,
    check_int,
    check_positive,
    check_range,
    check_seed,
    renamed_key,
)
from lib.data.tokens import pattern_bank
from lib.graphs.generators import binary_sbm_edges
from lib.models.shallow_attention import ShallowAttention, attention_mass
from lib.success import check_members
from lib.train import train


def core_graph(
    n: int, gamma_d: float, eps_S: float, degree: int, *, M: int = 10, d: int = 20, c0: float = 0.01,
    eps0: float = 0.0, seed: int = 0, core_distance: int = 1, hubs: int = 3,
) -> dict:
    """The synthetic graph of Sec. 3.5.1, with core distance ``z_m = core_distance`` (Def 3.4.1, Eq. 3.6).

    ``core_distance = 1`` is the thesis's construction (see the module docstring). For ``core_distance = k >= 2``
    the non-discriminative nodes reach their class-relevant nodes through ``k - 1`` levels of relay nodes
    (*hubs*, non-discriminative nodes carrying the label of their class): each level holds ``hubs`` hubs per
    label; every discriminative node links to all level-1 hubs of its own class (with probability ``1 - eps_S``)
    or of the other class (a confusion node for that side); every hub of level ``j >= 2`` and every remaining
    (*outer*) non-discriminative node links to all hubs of its own label one level down, and to ``degree // 4``
    random outer nodes of either label. An outer node thus sees the discriminative nodes hanging on its side at
    distance ``k`` and none closer (those of the other side at ``k + 1``), so the average winning margin peaks at
    ``k`` as long as outer nodes outnumber discriminative ones.

    Returns:
        dict with ``A`` (n, n) boolean adjacency, ``pattern`` (n,) in ``0..M-1`` (0 is ``mu_1``, 1 is ``mu_2``),
        ``y`` (n,) labels in ``{-1, +1}`` (after flipping an ``eps0`` fraction), ``clean_y``, ``X`` (n, d)
        features ``mu_pattern + c0 z`` and ``spd`` (n, n) shortest-path distances (-1 if unreachable).
    """
    check_int("n", n, minimum=10)
    check_range("gamma_d", gamma_d, 0.0, 1.0, lo_open=True, hi_open=True)
    check_range("eps_S", eps_S, 0.0, 0.5, hi_open=True)
    check_int("degree", degree, minimum=1)
    check_int("M", M, minimum=3)
    check_int("d", d, minimum=M)
    check_positive("c0", c0, allow_zero=True)
    check_range("eps0", eps0, 0.0, 0.5, hi_open=True)
    check_seed("seed", seed)
    check_int("core_distance", core_distance, minimum=1)
    check_int("hubs", hubs, minimum=1)
    g = np.random.default_rng([3000, int(seed)])
    k = max(1, int(round(gamma_d * n / 2)))
    if 2 * k >= n:
        raise ValueError(f"gamma_d={gamma_d} leaves no non-discriminative node for n={n}")
    pattern = np.concatenate([np.zeros(k, int), np.ones(k, int), 2 + np.arange(n - 2 * k) % (M - 2)])
    y = np.where(pattern == 0, 1.0, -1.0)
    nd = np.arange(2 * k, n)
    y[nd] = np.where(g.random(nd.size) < 0.5, 1.0, -1.0)
    if core_distance > 1:
        A, y = _relay_edges(g, n, k, y, eps_S, core_distance, hubs, max(1, degree // 4))
    else:
        A = _direct_edges(g, n, k, y, eps_S, degree)
    clean = y.copy()
    flip = g.random(n) < eps0
    y[flip] *= -1
    P = pattern_bank(M, d, rng=0)
    X = P[pattern] + c0 * torch.randn(n, d, generator=torch.Generator().manual_seed(int(seed) + 17))
    spd = shortest_path(csr_array(A.astype(np.int8)), unweighted=True, directed=False)
    spd = np.where(np.isfinite(spd), spd, -1).astype(np.int64)
    return {"A": A, "pattern": pattern, "y": y, "clean_y": clean, "X": X.float(), "spd": spd}


def _direct_edges(g, n, k, y, eps_S, degree):
    """Core distance 1 (Sec. 3.5.1): non-discriminative nodes link to discriminative ones directly."""
    nd = np.arange(2 * k, n)
    A = np.zeros((n, n), bool)
    pos, neg = np.arange(k), np.arange(k, 2 * k)
    n_conf = int(round(degree * eps_S))
    n_rel = degree - n_conf
    for v in nd:
        rel, conf = (pos, neg) if y[v] > 0 else (neg, pos)
        A[v, g.choice(rel, min(n_rel, k), replace=False)] = True
        if n_conf:
            A[v, g.choice(conf, min(n_conf, k), replace=False)] = True
    A |= A.T
    for grp in (pos, neg):  # same-pattern edges until the degree is reached
        for v in grp:
            need = degree - int(A[v].sum())
            if need > 0:
                cand = grp[(grp != v) & ~A[v, grp]]
                w = g.choice(cand, min(need, cand.size), replace=False)
                A[v, w] = A[w, v] = True
    return A


def _relay_edges(g, n, k, y, eps_S, levels, hubs, outer_links):
    """Core distance ``levels >= 2``: discriminative nodes on level-1 hubs, hub levels, outer nodes on top."""
    nd = np.arange(2 * k, n)
    n_hub = 2 * hubs * (levels - 1)
    if nd.size <= n_hub:
        raise ValueError(f"n={n} leaves too few non-discriminative nodes for {levels - 1} levels of 2x{hubs} hubs")
    y = y.copy()
    # hub i of level j and side s (s = 0: label +1) is node nd[(j - 1) * 2 * hubs + s * hubs + i]
    hub = nd[:n_hub].reshape(levels - 1, 2, hubs)
    y[hub[:, 0]] = 1.0
    y[hub[:, 1]] = -1.0
    A = np.zeros((n, n), bool)
    for u in range(2 * k):
        own = 0 if u < k else 1
        A[u, hub[0, own if g.random() >= eps_S else 1 - own]] = True
    for j in range(1, levels - 1):
        for s in (0, 1):
            A[np.ix_(hub[j, s], hub[j - 1, s])] = True
    outer = nd[n_hub:]
    for s, lab in ((0, 1.0), (1, -1.0)):
        A[np.ix_(outer[y[outer] == lab], hub[-1, s])] = True
    for v in outer:  # label-blind edges among outer nodes, so that every distance up to k + 1 is populated
        A[v, g.choice(outer[outer != v], min(outer_links, outer.size - 1), replace=False)] = True
    return A | A.T, y


def winning_margin(spd, pattern, y, z: int) -> np.ndarray:
    """``Delta_n(z)`` of Def 3.4.1: class-relevant minus confusion nodes at distance ``z`` from each node.

    Class-relevant nodes of a node of label +1 are the ``mu_1`` nodes (pattern 0), its confusion nodes the
    ``mu_2`` nodes (pattern 1), and the reverse for label -1.
    """
    check_array("pattern", pattern)
    check_array("y", y)
    spd = check_array("spd", spd, ndim=2)
    check_int("z", z, minimum=0)
    pattern = np.asarray(pattern)
    y = np.asarray(y)
    if spd.shape[0] != spd.shape[1] or pattern.shape != (spd.shape[0],) or y.shape != pattern.shape:
        raise ValueError("spd must be (n, n) and pattern, y must be (n,)")
    at = spd == z
    n1 = (at & (pattern == 0)[None]).sum(1)
    n2 = (at & (pattern == 1)[None]).sum(1)
    return np.where(y > 0, n1 - n2, n2 - n1)


def normalised_margin(spd, pattern, y, zs) -> np.ndarray:
    """Fig B.5's normalised average winning margin: the mean over nodes of ``Delta_n(z) / |N_z^n|`` for each
    ``z`` in ``zs`` (nodes with an empty distance-``z`` set are left out; nan if every node is)."""
    check_array("pattern", pattern)
    check_array("y", y)
    check_array("zs", zs)
    spd = check_array("spd", spd, ndim=2)
    zs = [int(z) for z in zs]
    for z in zs:
        check_int("zs", z, minimum=1)
    out = []
    for z in zs:
        size = (spd == z).sum(1)
        ok = size > 0
        out.append((winning_margin(spd, pattern, y, z)[ok] / size[ok]).mean() if ok.any() else np.nan)
    return np.array(out, dtype=float)


def sbm_graph(
    n: int, a: float, b: float, gamma_d: float, *, M: int = 10, d: int = 20, c0: float = 0.01, seed: int = 0,
) -> dict:
    """A two-block Bernoulli SBM (:func:`lib.graphs.generators.binary_sbm_edges`, edge probability ``a/n`` inside
    a block, ``b/n`` across) carrying the chapter's patterns: the label of a node is its block (+1 for block 0);
    a ``gamma_d`` fraction of each block, chosen at random, holds the block's discriminative pattern (``mu_1`` for
    +1, ``mu_2`` for -1), the rest one of ``mu_3 .. mu_M`` at random. ``a > b`` is homophilous (core distance 1),
    ``a < b`` heterophilous (most neighbours hold the other class, the relevant nodes sit at distance 2).

    Returns:
        the dict of :func:`core_graph` (``A``, ``pattern``, ``y``, ``clean_y``, ``X``, ``spd``).
    """
    check_range("gamma_d", gamma_d, 0.0, 1.0, lo_open=True, hi_open=True)
    check_int("M", M, minimum=3)
    check_int("d", d, minimum=M)
    check_positive("c0", c0, allow_zero=True)
    check_seed("seed", seed)
    edges, blocks = binary_sbm_edges(n, a, b, 1, seed=int(seed))
    g = np.random.default_rng([3100, int(seed)])
    block = blocks[0]
    disc = g.random(n) < gamma_d
    pattern = np.where(disc, block, 2 + g.integers(M - 2, size=n))
    y = np.where(block == 0, 1.0, -1.0)
    A = np.zeros((n, n), bool)
    A[edges[0][0], edges[0][1]] = True
    A |= A.T
    X = pattern_bank(M, d, rng=0)[pattern] + c0 * torch.randn(n, d, generator=torch.Generator().manual_seed(
        int(seed) + 17))
    spd = shortest_path(csr_array(A.astype(np.int8)), unweighted=True, directed=False)
    spd = np.where(np.isfinite(spd), spd, -1).astype(np.int64)
    return {"A": A, "pattern": pattern, "y": y, "clean_y": y.copy(), "X": X.float(), "spd": spd}


def karate_graph() -> dict:
    """Zachary's karate club (networkx's copy, 34 nodes) with the two factions as classes: label +1 and pattern
    index 0 for Mr. Hi's faction, -1 and 1 for the officer's; every node counts as discriminative (the graph has
    no features).

    Returns:
        dict with ``A`` (34, 34) boolean adjacency, ``pattern`` (34,), ``y`` (34,) and ``spd`` (34, 34).
    """
    import networkx as nx

    G = nx.karate_club_graph()
    hi = np.array([G.nodes[v]["club"] == "Mr. Hi" for v in G])
    A = nx.to_numpy_array(G) > 0
    spd = shortest_path(csr_array(A.astype(np.int8)), unweighted=True, directed=False).astype(np.int64)
    return {"A": A, "pattern": np.where(hi, 0, 1), "y": np.where(hi, 1.0, -1.0), "spd": spd}


def pe_index(spd, Z: int) -> np.ndarray:
    """Index of the one-hot PE ``u_(s,n)`` (3.2): the distance, truncated at ``Z - 1``."""
    spd = check_array("spd", spd)
    check_int("Z", Z, minimum=1)
    if (spd < 0).any():
        raise ValueError("spd must hold non-negative distances")
    return np.minimum(spd, Z - 1).astype(np.int64)


def toy_graph() -> dict:
    """A small graph in the spirit of Fig 3.2: node 0 (pattern ``mu_3``, label +1) has ``Delta_0(1) = -2``
    and ``Delta_0(2) = 3``.

    Returns:
        dict with ``A`` (n, n) boolean adjacency, ``pattern`` (n,), ``y`` (n,) labels (+-1), ``spd`` (n, n) distances.
    """
    # node 0: mu3, neighbours 1..3 (two mu2, one mu3), distance 2: 4..7 (three mu1, one mu4)
    pattern = np.array([2, 1, 1, 2, 0, 0, 0, 3])
    edges = [(0, 1), (0, 2), (0, 3), (1, 4), (2, 5), (3, 6), (3, 7)]
    n = pattern.size
    A = np.zeros((n, n), bool)
    for a, b in edges:
        A[a, b] = A[b, a] = True
    y = np.where(pattern == 0, 1.0, -1.0)
    y[0] = 1.0
    y[3] = 1.0
    spd = shortest_path(csr_array(A.astype(np.int8)), unweighted=True, directed=False).astype(np.int64)
    return {"A": A, "pattern": pattern, "y": y, "spd": spd}


def pe_attention_toy(b, sizes, relevant) -> tuple[np.ndarray, float]:
    """Closed-form softmax over distance groups with equal content scores: the attention share of each
    distance and the total share on class-relevant nodes.

    Args:
        b: PE entries per distance group.
        sizes: number of nodes per distance group.
        relevant: fraction of class-relevant nodes in each group.
    """
    b = check_array("b", b, ndim=1)
    sizes = check_array("sizes", sizes, ndim=1)
    relevant = check_array("relevant", relevant, ndim=1)
    if sizes.shape != b.shape or relevant.shape != b.shape:
        raise ValueError("sizes and relevant must have the shape of b")
    if (sizes < 0).any() or sizes.sum() <= 0 or (relevant < 0).any() or (relevant > 1).any():
        raise ValueError("sizes must be >= 0 with a positive sum and relevant in [0, 1]")
    w = sizes * np.exp(b - b.max())
    share = w / w.sum()
    return share, float((share * relevant).sum())


def _neighbour_lists(spd, distances):
    """Nodes at the allowed distances from every node, left-aligned in ascending order, and their counts."""
    mask = np.isin(spd, np.asarray(distances))
    order = np.argsort(~mask, axis=1, kind="stable")
    cnt = mask.sum(1)
    nbr = np.where(np.arange(spd.shape[1])[None] < cnt[:, None], order, 0)
    return nbr, np.maximum(cnt, 1)


def _check_distances(distances) -> None:
    """``distances``: a tuple of integer distances >= 1, or one such tuple per member."""
    if isinstance(distances, (str, bytes)) or not hasattr(distances, "__len__") or len(distances) == 0:
        raise ValueError(f"distances must be a tuple of distances >= 1 or one tuple per member, got {distances!r}")
    flat = [distances] if np.ndim(distances[0]) == 0 else list(distances)
    for t in flat:
        if isinstance(t, (str, bytes)) or not hasattr(t, "__len__") or len(t) == 0:
            raise ValueError(f"distances must be a tuple of distances >= 1 or one tuple per member, got {distances!r}")
        for z in t:
            check_int("distances", z, minimum=1)


def train_gt(
    Ls, seeds, cfg: dict, gamma_d: float, eps_S: float, *, gcn: bool = False, eps0: float = 0.0,
    steps=None, record_every: int = 10, core_distance: int = 1, distances=(1, 2), pe: bool = True,
    device="cpu",
) -> dict:
    """Train one graph transformer (or GCN) per member ``(Ls[r], seeds[r])`` on :func:`core_graph` ``seeds[r]``.

    Neighbours are drawn from the nodes at ``distances`` (one tuple for all members, or one per member); see
    :func:`train_gt_graphs` for the training, ``device`` and the returned arrays.
    """
    Ls, seeds = check_members(Ls, seeds, "Ls")
    check_bool("gcn", gcn)
    check_bool("pe", pe)
    _check_distances(distances)
    useeds = np.unique(seeds)
    graphs = [core_graph(cfg["n"], gamma_d, eps_S, cfg["degree"], M=cfg["M"], d=cfg["d"], c0=cfg["c0"],
                         eps0=eps0, seed=int(s), core_distance=core_distance) for s in useeds]
    return train_gt_graphs(graphs, np.searchsorted(useeds, seeds), Ls, cfg, distances=distances, gcn=gcn, pe=pe,
                           steps=steps, record_every=record_every, perm_keys=useeds,
                           seed=int(seeds.sum()) * 7919 + len(Ls) + 31 * int(bool(gcn)), device=device)


def train_gt_graphs(
    graphs, rows, Ls, cfg: dict, *, distances=(1, 2), gcn: bool = False, pe: bool = True, steps=None,
    record_every: int = 10, perm_keys=None, seed: int = 0, device="cpu",
) -> dict:
    """Train one graph transformer (3.1) per member ``r`` on ``graphs[rows[r]]`` by node-sampling SGD on the hinge
    loss, with :func:`lib.train.train` (plain SGD, ``p <- p - eta grad``). The loss is the sum of the members'
    hinge losses, so each member's parameters get their own member's gradient; the batch function draws every
    member's query nodes and neighbours from its own graph, labelled set and distances, from one seeded generator
    (the same draws, in the same order, as the hand-written loop this replaced: results are bit for bit the
    same). As in :func:`lib.train.train`, a non-finite summed loss stops every member at that step.

    Member ``r`` uses the first ``Ls[r]`` nodes of a seeded permutation of its graph's nodes as labelled set
    (permutation key ``perm_keys[rows[r]]``, default the graph's index) and the last ``cfg["n_test"]`` as test
    nodes, each with one fixed neighbour draw. Token sets are the node plus ``cfg["K"]`` nodes drawn with
    replacement from its nodes at the member's ``distances``. ``pe=False`` keeps ``b = 0``; ``gcn=True`` also
    freezes ``W_K = W_Q = 0``.

    Args:
        graphs: dicts with ``X`` (n, d), ``y`` (n,), ``pattern`` (n,), ``spd`` (n, n) and optionally
            ``clean_y`` (labels used to mark class-relevant keys), all graphs of the same ``n``.
        rows: graph index of every member.
        Ls: labelled-set size of every member.
        cfg: sizes and optimiser (``d, K, Z, n_test, m, lr, batch, steps, kappa, delta, sigma, xi``).
        device: where to train (``"cpu"``, ``"cuda"``, ...; :func:`lib.config.check_device`). The graphs, the
            initial weights and every random draw are made on the CPU from the same seeded generators and moved
            there, so a seed gives the same run on every device up to round-off; the arrays come back on the CPU.

    Returns:
        dict of numpy arrays: ``test_hinge``, ``test_err`` (R,), ``curve_t`` (K,), ``test_curve`` (R, K),
        ``mass`` (R, K) (attention mass of test queries on class-relevant keys), ``b`` (R, Z) final PE,
        ``b_curve`` (R, K, Z), and ``diverged``, ``diverged_step`` (R,) from :func:`lib.train.train` (the members
        train as one summed loss, so they stop together; the curves end at that step; -1: no divergence).
    """
    check_array("rows", rows)
    Ls, rows = check_members(Ls, rows, "Ls")
    check_bool("gcn", gcn)
    check_bool("pe", pe)
    check_seed("seed", seed)
    dev = check_device("device", device)
    _check_distances(distances)
    if not graphs or rows.min() < 0 or rows.max() >= len(graphs):
        raise ValueError(f"rows must index graphs (0..{len(graphs) - 1})")
    cfg = renamed_key(cfg, "eta", "lr", name="cfg")
    steps = cfg["steps"] if steps is None else steps
    check_int("steps", steps, minimum=1)
    check_int("record_every", record_every, minimum=1)
    n = graphs[0]["spd"].shape[0]
    d, K, Z, nt = cfg["d"], cfg["K"], cfg["Z"], cfg["n_test"]
    if any(G["spd"].shape != (n, n) for G in graphs):
        raise ValueError("graphs must all have the same number of nodes")
    if Ls.max() > n - nt:
        raise ValueError(f"Ls must leave {nt} test nodes out of n={n}")
    R = len(Ls)
    dist = [tuple(distances)] * R if np.ndim(distances[0]) == 0 else [tuple(t) for t in distances]
    if len(dist) != R:
        raise ValueError(f"distances must be one tuple or one per member ({R})")
    keys = np.arange(len(graphs)) if perm_keys is None else np.asarray(perm_keys)
    lists = {}
    for r in range(R):
        lists.setdefault((int(rows[r]), dist[r]), _neighbour_lists(graphs[rows[r]]["spd"], dist[r]))
    width = max(int(c.max()) for _, c in lists.values())
    nbr = torch.as_tensor(np.stack([lists[(int(rows[r]), dist[r])][0][:, :width] for r in range(R)]))
    cnt = torch.as_tensor(np.stack([lists[(int(rows[r]), dist[r])][1] for r in range(R)]))
    row = torch.as_tensor(rows)
    X = torch.stack([torch.as_tensor(G["X"], dtype=torch.float32) for G in graphs])
    Y = torch.as_tensor(np.stack([G["y"] for G in graphs]), dtype=torch.float32)
    PE = torch.as_tensor(np.stack([pe_index(np.maximum(G["spd"], 0), Z) for G in graphs]))
    # class-relevant key: pattern mu_1 for label +1, mu_2 for -1 (clean labels)
    pat = np.stack([G["pattern"] for G in graphs])
    cy = np.stack([G.get("clean_y", G["y"]) for G in graphs])
    REL = torch.as_tensor(np.where(cy[:, :, None] > 0, pat[:, None, :] == 0, pat[:, None, :] == 1))
    perm = torch.as_tensor(np.stack([np.random.default_rng([4000, int(s)]).permutation(n) for s in keys]))
    nbr, cnt, row, X, Y, PE, REL, perm = (t.to(dev) for t in (nbr, cnt, row, X, Y, PE, REL, perm))
    gen = torch.Generator().manual_seed(int(seed))
    member = torch.arange(R, device=dev)

    def tokens(nodes, u):
        """Token sets (R, B, 1+K, d), PE indices and relevance for query nodes (R, B), uniforms (R, B, K)."""
        c = cnt[member[:, None], nodes]
        j = (u * c[..., None]).long()
        nb = nbr[member[:, None, None], nodes[..., None], j]
        idx = torch.cat([nodes[..., None], nb], -1)
        gr = row[:, None, None]
        return X[gr, idx], PE[gr, nodes[..., None], idx], REL[gr, nodes[..., None], idx]

    eye = torch.eye(d)  # the initial weights are drawn on the CPU (below), then the model is moved
    if gcn:
        init_qk = (torch.zeros(R, d, d), torch.zeros(R, d, d))
    else:
        init_qk = tuple(cfg["kappa"] * (eye + cfg["delta"] * torch.randn(R, d, d, generator=gen) / math.sqrt(d))
                        for _ in range(2))
    init_v = eye + cfg["sigma"] * torch.randn(R, d, d, generator=gen) / math.sqrt(d)
    model = ShallowAttention(R, d, cfg["m"], readout="first", freeze_qk=gcn, init_qk=init_qk, init_v=init_v,
                             init_o_std=cfg["xi"], generator=gen).to(dev)
    train_b = pe and not gcn
    b = torch.zeros(R, Z, device=dev).requires_grad_(train_b)
    test_nodes = perm[row][:, n - nt:]
    tg = torch.Generator().manual_seed(99)
    Xt, Pt, Rt = tokens(test_nodes, torch.rand(R, nt, K, generator=tg).to(dev))
    yt = Y[row[:, None], test_nodes]
    Lt = torch.as_tensor(Ls).to(dev)
    rr = torch.arange(R, device=dev)[:, None, None, None]

    def forward(Xb, Pb):
        bias = b[rr, Pb[:, :, None, :]]  # (R, B, 1, L)
        return model(Xb, bias=bias), bias

    def evaluate():
        with torch.no_grad():
            out, bias = forward(Xt, Pt)
            A = model.attention(Xt, bias=bias)[:, :, :1]
            return torch.relu(1 - yt * out).mean(1), (yt * out <= 0).float().mean(1), attention_mass(A, Rt).mean(1)

    B = cfg["batch"]

    def batch_fn(step, generator):
        """Each run's ``B`` query nodes from its labelled set, with fresh neighbour draws."""
        pick = (torch.rand(R, B, generator=generator).to(dev) * Lt[:, None]).long()
        nodes = perm[row[:, None], pick]
        Xb, Pb, _ = tokens(nodes, torch.rand(R, B, K, generator=generator).to(dev))
        return Xb, Pb, Y[row[:, None], nodes]

    def loss_fn(_, batch):
        """Hinge loss summed over the runs (each run's parameters get their own run's gradient)."""
        Xb, Pb, yb = batch
        out, _ = forward(Xb, Pb)
        return torch.relu(1 - yb * out).mean(1).sum()

    def record(_, step):
        lt, _, mt = evaluate()
        return {"test_hinge": lt.cpu().numpy(), "mass": mt.cpu().numpy(), "b": b.detach().cpu().numpy().copy()}

    leaves = dict(p for p in model.named_parameters() if p[1].requires_grad) | ({"b": b} if train_b else {})
    res = train(leaves, loss_fn, lr=cfg["lr"], steps=steps, optimizer="sgd", batch_fn=batch_fn, record=record,
                record_every=record_every, generator=gen, divergence_factor=None, device=dev)
    hist = res.history
    lt, et, _ = evaluate()
    return {
        "test_hinge": lt.cpu().numpy(), "test_err": et.cpu().numpy(), "curve_t": hist["step"],
        "test_curve": np.stack(hist["test_hinge"], 1), "mass": np.stack(hist["mass"], 1),
        "b": b.detach().cpu().numpy(),
        "b_curve": np.stack(hist["b"], 1), "diverged": np.full(R, res.diverged),
        "diverged_step": np.full(R, -1 if res.diverged_step is None else res.diverged_step),
    }


#: The trainings :func:`graph_experiment` can run on each graph (see there).
GT_TRAININGS = ("pe", "nope", "gcn", "core", "zonly")


def graph_experiment(
    family: str, params, seeds, Ls, cfg: dict, *, runs: dict, gamma_d: float = 0.4, eps_S: float = 0.05,
) -> dict:
    """The chapter's graph-family experiments: one graph per ``(params[i], seeds[j])``, its winning margins at
    distances ``z = 1 .. Z-1`` (``Z = cfg["Z"]``), and the trainings named in ``runs``, each one call of
    :func:`train_gt_graphs` batched over every graph.

    Graph families: ``"core"`` is :func:`core_graph` with ``cfg["n"]`` nodes, ``gamma_d``, ``eps_S`` and degree
    ``cfg["degree"]``, one core distance ``z_m`` per entry of ``params``; ``"sbm"`` is :func:`sbm_graph` with
    ``cfg["n"]`` nodes and ``gamma_d``, one ``(a, b)`` pair per entry of ``params`` (``eps_S`` unused).

    Trainings (``runs`` maps each to the seed of its SGD draws and initialisation):

    * ``"pe"``: trainable PE, neighbours drawn from distances ``1 .. Z-1``, one member per ``|L|`` in ``Ls``;
    * ``"nope"``: the same with ``b = 0`` frozen;
    * ``"gcn"``: the GCN (``W_K = W_Q = 0``, ``b = 0``) on the same draws;
    * ``"core"`` (family ``"core"`` only): ``b = 0``, neighbours drawn from the graph's core distance ``z_m``;
    * ``"zonly"``: trainable PE, neighbours drawn from one distance ``z`` only, one member per ``z = 1 .. Z-1``,
      all at ``|L| = Ls[-1]`` (Fig 3.8's distance-``z``-only networks).

    Args:
        family: ``"core"`` or ``"sbm"``.
        params: core distances (integers >= 1) or ``(a, b)`` pairs of positive edge rates.
        seeds: graph seeds (the graph of ``(params[i], seeds[j])`` uses seed ``seeds[j]``).
        Ls: labelled-set sizes.
        cfg: sizes and optimiser of :func:`train_gt_graphs`, with ``n``, ``degree``, ``M``, ``d`` and ``c0``.
        runs: training name (one of :data:`GT_TRAININGS`) -> seed.
        gamma_d, eps_S: fraction of discriminative nodes and confusion fraction of the graphs.

    Returns:
        dict of numpy arrays, ``P = len(params)``, ``S = len(seeds)``: ``margins`` and ``norm`` (P, S, Z-1), the
        average winning margin of Eq. 3.6 and Fig B.5's normalised one; for each training ``v`` in ``runs``,
        ``v_hinge`` and ``v_err`` (final test hinge loss and test error) and ``v_b`` (final PE, last axis Z) of
        shape (P, S, len(Ls)) (``zonly``: (P, S, Z-1)).
    """
    check_in("family", family, ("core", "sbm"))
    params = list(params) if isinstance(params, (list, tuple, np.ndarray)) else None
    if not params:
        raise ValueError("params must be a non-empty list of core distances or (a, b) pairs")
    if family == "core":
        for z in params:
            check_int("params", z, minimum=1)
    else:
        for ab in params:
            if np.ndim(ab) != 1 or len(ab) != 2:
                raise ValueError(f"params must hold (a, b) pairs for family 'sbm', got {ab!r}")
            for v in ab:
                check_positive("params", v)
    seeds = [seeds] if isinstance(seeds, (int, np.integer)) else list(seeds)
    if not seeds:
        raise ValueError("seeds must be a non-empty list of integer seeds")
    for s in seeds:
        check_seed("seeds", s)
    Ls = list(Ls) if isinstance(Ls, (list, tuple, np.ndarray)) else None
    if not Ls:
        raise ValueError("Ls must be a non-empty list of labelled-set sizes")
    for L in Ls:
        check_int("Ls", L, minimum=1)
    if not isinstance(cfg, dict):
        raise ValueError(f"cfg must be a dict, got {type(cfg).__name__}")
    check_int("Z", cfg.get("Z"), minimum=2)
    if not isinstance(runs, dict) or not runs:
        raise ValueError(f"runs must be a non-empty dict of training name -> seed, got {runs!r}")
    for v, sd in runs.items():
        check_in("runs", v, GT_TRAININGS)
        check_seed("runs", sd)
    if "core" in runs and family != "core":
        raise ValueError("runs: the 'core' training needs family 'core' (an SBM has no core distance)")
    check_range("gamma_d", gamma_d, 0.0, 1.0, lo_open=True, hi_open=True)
    check_range("eps_S", eps_S, 0.0, 0.5, hi_open=True)
    if family == "core":
        graphs = [core_graph(cfg["n"], gamma_d, eps_S, cfg["degree"], M=cfg["M"], d=cfg["d"], c0=cfg["c0"],
                             seed=int(s), core_distance=int(z)) for z in params for s in seeds]
    else:
        graphs = [sbm_graph(cfg["n"], float(a), float(b), gamma_d, M=cfg["M"], d=cfg["d"], c0=cfg["c0"],
                            seed=int(s)) for a, b in params for s in seeds]
    near = tuple(range(1, cfg["Z"]))
    shape = (len(params), len(seeds))
    out = {
        "margins": np.array([[winning_margin(G["spd"], G["pattern"], G["y"], z).mean() for z in near]
                             for G in graphs]).reshape(*shape, len(near)),
        "norm": np.reshape([normalised_margin(G["spd"], G["pattern"], G["y"], near) for G in graphs],
                           (*shape, len(near))),
    }
    rows = np.repeat(np.arange(len(graphs)), len(Ls))
    sizes = np.tile(Ls, len(graphs))
    for v, sd in runs.items():
        if v == "zonly":
            rz = np.repeat(np.arange(len(graphs)), len(near))
            r = train_gt_graphs(graphs, rz, [Ls[-1]] * rz.size, cfg, distances=[(z,) for _ in graphs for z in near],
                                seed=sd)
            per = len(near)
        else:
            dist = near
            if v == "core":
                dist = [(int(z),) for z in np.repeat(np.repeat(params, len(seeds)), len(Ls))]
            r = train_gt_graphs(graphs, rows, sizes, cfg, distances=dist, pe=v == "pe", gcn=v == "gcn", seed=sd)
            per = len(Ls)
        out[f"{v}_hinge"] = r["test_hinge"].reshape(*shape, per)
        out[f"{v}_err"] = r["test_err"].reshape(*shape, per)
        out[f"{v}_b"] = r["b"].reshape(*shape, per, -1)
    return out


def loglog_exponent(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x`` over the finite positive pairs (nan if < 2)."""
    check_array("y", y, finite=False)  # NaN/inf mark failed runs: left out below
    x = check_array("x", x, ndim=1)
    y = np.asarray(y, dtype=float)
    if y.shape != x.shape:
        raise ValueError(f"y must have shape {x.shape}, got {y.shape}")
    ok = np.isfinite(y) & (y > 0) & (x > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])
