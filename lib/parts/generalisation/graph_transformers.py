"""Graph transformers (chapter 3 of Li's thesis): core-neighbourhood graphs, relative PE, GT vs GCN.

The graph of Sec. 3.5.1 has ``N`` nodes; a ``gamma_d/2`` fraction carries the discriminative pattern ``mu_1``
(label +1), as many ``mu_2`` (label -1), the rest one of the ``M-2`` other patterns with a random label. A
non-discriminative node of label +1 links to ``degree (1-eps_S)`` random ``mu_1`` nodes and ``degree eps_S``
random ``mu_2`` nodes (reversed for -1); ``mu_1`` nodes link among themselves (as do ``mu_2`` nodes) until every
node has degree ``>= degree``; there is no ``mu_1``-``mu_2`` edge. So the core distance is ``z_m = 1``.

The model (3.1) is :class:`lib.models.shallow_attention.ShallowAttention` read out at the query node (position 0
of each token set: the node itself, then ``K`` neighbours drawn uniformly with replacement from its distance-1
and distance-2 nodes, redrawn every step) plus a trainable relative PE ``b[u(s, n)]`` added to the scores, with
``u`` the shortest-path distance truncated at ``Z-1``. The GCN of Thm 3.4.6 is the same network with
``W_K = W_Q = 0`` and ``b = 0`` frozen (uniform averaging). Runs of one call share a leading axis; a
hand-written SGD loop (as in :mod:`~lib.parts.generalisation.shallow_vits`) keeps each run's own graph, labelled
set and neighbour draws.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.sparse import csr_array
from scipy.sparse.csgraph import shortest_path

from lib.config import check_array, check_int, check_positive, check_range, check_seed
from lib.data.tokens import pattern_bank
from lib.models.shallow_attention import ShallowAttention, attention_mass
from lib.success import check_members


def core_graph(
    n: int, gamma_d: float, eps_S: float, degree: int, *, M: int = 10, d: int = 20, c0: float = 0.01,
    eps0: float = 0.0, seed: int = 0,
) -> dict:
    """The synthetic graph of Sec. 3.5.1 (core distance 1).

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
    g = np.random.default_rng([3000, int(seed)])
    k = max(1, int(round(gamma_d * n / 2)))
    if 2 * k >= n:
        raise ValueError(f"gamma_d={gamma_d} leaves no non-discriminative node for n={n}")
    pattern = np.concatenate([np.zeros(k, int), np.ones(k, int), 2 + np.arange(n - 2 * k) % (M - 2)])
    y = np.where(pattern == 0, 1.0, -1.0)
    nd = np.arange(2 * k, n)
    y[nd] = np.where(g.random(nd.size) < 0.5, 1.0, -1.0)
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
    clean = y.copy()
    flip = g.random(n) < eps0
    y[flip] *= -1
    P = pattern_bank(M, d, rng=0)
    X = P[pattern] + c0 * torch.randn(n, d, generator=torch.Generator().manual_seed(int(seed) + 17))
    spd = shortest_path(csr_array(A.astype(np.int8)), unweighted=True, directed=False)
    spd = np.where(np.isfinite(spd), spd, -1).astype(np.int64)
    return {"A": A, "pattern": pattern, "y": y, "clean_y": clean, "X": X.float(), "spd": spd}


def winning_margin(spd, pattern, y, z: int) -> np.ndarray:
    """``Delta_n(z)`` of Def 3.4.1: class-relevant minus confusion nodes at distance ``z`` from each node.

    Class-relevant nodes of a node of label +1 are the ``mu_1`` nodes (pattern 0), its confusion nodes the
    ``mu_2`` nodes (pattern 1), and the reverse for label -1.
    """
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


def pe_index(spd, Z: int) -> np.ndarray:
    """Index of the one-hot PE ``u_(s,n)`` (3.2): the distance, truncated at ``Z - 1``."""
    spd = check_array("spd", spd)
    check_int("Z", Z, minimum=1)
    if (spd < 0).any():
        raise ValueError("spd must hold non-negative distances")
    return np.minimum(spd, Z - 1).astype(np.int64)


def toy_graph() -> dict:
    """A small graph in the spirit of Fig 3.2: node 0 (pattern ``mu_3``, label +1) has ``Delta_0(1) = -2``
    and ``Delta_0(2) = 3``."""
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


def _stack_graphs(seeds, cfg, gamma_d, eps_S, eps0):
    graphs = [core_graph(cfg["n"], gamma_d, eps_S, cfg["degree"], M=cfg["M"], d=cfg["d"], c0=cfg["c0"],
                         eps0=eps0, seed=int(s)) for s in seeds]
    n = cfg["n"]
    nbr = np.zeros((len(graphs), n, n), np.int64)
    cnt = np.zeros((len(graphs), n), np.int64)
    for i, G in enumerate(graphs):
        for v in range(n):
            w = np.flatnonzero((G["spd"][v] == 1) | (G["spd"][v] == 2))
            nbr[i, v, : w.size] = w
            cnt[i, v] = max(w.size, 1)
    width = int(cnt.max())
    return graphs, torch.as_tensor(nbr[:, :, :width]), torch.as_tensor(cnt)


def train_gt(
    Ls, seeds, cfg: dict, gamma_d: float, eps_S: float, *, gcn: bool = False, eps0: float = 0.0,
    steps=None, record_every: int = 10,
) -> dict:
    """Train one graph transformer (or GCN) per member ``(Ls[r], seeds[r])`` by node-sampling SGD on the hinge loss.

    Member ``r`` uses graph ``seeds[r]`` and its first ``Ls[r]`` labelled nodes (a seeded permutation of the
    nodes), so members of one seed share their smaller labelled sets. The test set is the last ``n_test`` nodes
    of the permutation, each with one fixed neighbour draw.

    Returns:
        dict of numpy arrays: ``test_hinge``, ``test_err`` (R,), ``curve_t`` (K,), ``test_curve`` (R, K),
        ``mass`` (R, K) (attention mass of test queries on class-relevant keys), ``b`` (R, Z) final PE,
        ``b_curve`` (R, K, Z).
    """
    Ls, seeds = check_members(Ls, seeds, "Ls")
    steps = cfg["steps"] if steps is None else steps
    check_int("steps", steps, minimum=1)
    check_int("record_every", record_every, minimum=1)
    n, d, K, Z, nt = cfg["n"], cfg["d"], cfg["K"], cfg["Z"], cfg["n_test"]
    if Ls.max() > n - nt:
        raise ValueError(f"Ls must leave {nt} test nodes out of n={n}")
    R = len(Ls)
    useeds = np.unique(seeds)
    graphs, nbr, cnt = _stack_graphs(useeds, cfg, gamma_d, eps_S, eps0)
    row = torch.as_tensor(np.searchsorted(useeds, seeds))
    X = torch.stack([G["X"] for G in graphs])
    Y = torch.as_tensor(np.stack([G["y"] for G in graphs]), dtype=torch.float32)
    PE = torch.as_tensor(np.stack([pe_index(np.maximum(G["spd"], 0), Z) for G in graphs]))
    # class-relevant key: pattern mu_1 for label +1, mu_2 for -1 (clean labels)
    pat = np.stack([G["pattern"] for G in graphs])
    cy = np.stack([G["clean_y"] for G in graphs])
    REL = torch.as_tensor(np.where(cy[:, :, None] > 0, pat[:, None, :] == 0, pat[:, None, :] == 1))
    perm = torch.as_tensor(np.stack([np.random.default_rng([4000, int(s)]).permutation(n) for s in useeds]))
    gen = torch.Generator().manual_seed(int(seeds.sum()) * 7919 + R + 31 * int(bool(gcn)))

    def tokens(g_row, nodes, u):
        """Token sets (R, B, 1+K, d), PE indices and relevance for query nodes (R, B), uniforms (R, B, K)."""
        c = cnt[g_row[:, None], nodes]
        j = (u * c[..., None]).long()
        nb = nbr[g_row[:, None, None], nodes[..., None], j]
        idx = torch.cat([nodes[..., None], nb], -1)
        gr = g_row[:, None, None]
        return X[gr, idx], PE[gr, nodes[..., None], idx], REL[gr, nodes[..., None], idx]

    eye = torch.eye(d)
    if gcn:
        init_qk = (torch.zeros(R, d, d), torch.zeros(R, d, d))
    else:
        init_qk = tuple(cfg["kappa"] * (eye + cfg["delta"] * torch.randn(R, d, d, generator=gen) / math.sqrt(d))
                        for _ in range(2))
    init_v = eye + cfg["sigma"] * torch.randn(R, d, d, generator=gen) / math.sqrt(d)
    model = ShallowAttention(R, d, cfg["m"], readout="first", freeze_qk=gcn, init_qk=init_qk, init_v=init_v,
                             init_o_std=cfg["xi"], generator=gen)
    b = torch.zeros(R, Z, requires_grad=not gcn)
    params = [p for p in model.parameters() if p.requires_grad] + ([b] if not gcn else [])
    test_nodes = perm[row][:, n - nt:]
    tg = torch.Generator().manual_seed(99)
    Xt, Pt, Rt = tokens(row, test_nodes, torch.rand(R, nt, K, generator=tg))
    yt = Y[row[:, None], test_nodes]
    Lt = torch.as_tensor(Ls)
    rr = torch.arange(R)[:, None, None, None]

    def forward(Xb, Pb):
        bias = b[rr, Pb[:, :, None, :]]  # (R, B, 1, L)
        return model(Xb, bias=bias), bias

    rec_t, te, ms, bs = [], [], [], []

    def evaluate():
        with torch.no_grad():
            out, bias = forward(Xt, Pt)
            A = model.attention(Xt, bias=bias)[:, :, :1]
            return torch.relu(1 - yt * out).mean(1), (yt * out <= 0).float().mean(1), attention_mass(A, Rt).mean(1)

    B = cfg["batch"]
    for t in range(steps + 1):
        if t % record_every == 0 or t == steps:
            lt, _, mt = evaluate()
            rec_t.append(t)
            te.append(lt.numpy())
            ms.append(mt.numpy())
            bs.append(b.detach().numpy().copy())
        if t == steps:
            break
        pick = (torch.rand(R, B, generator=gen) * Lt[:, None]).long()
        nodes = perm[row[:, None], pick]
        Xb, Pb, _ = tokens(row, nodes, torch.rand(R, B, K, generator=gen))
        yb = Y[row[:, None], nodes]
        out, _ = forward(Xb, Pb)
        loss_r = torch.relu(1 - yb * out).mean(1)
        grads = torch.autograd.grad(loss_r.sum(), params)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                p -= cfg["eta"] * gr
    lt, et, _ = evaluate()
    return {
        "test_hinge": lt.numpy(), "test_err": et.numpy(), "curve_t": np.array(rec_t),
        "test_curve": np.stack(te, 1), "mass": np.stack(ms, 1), "b": b.detach().numpy(),
        "b_curve": np.stack(bs, 1),
    }


def loglog_exponent(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x`` over the finite positive pairs (nan if < 2)."""
    x = check_array("x", x, ndim=1)
    y = np.asarray(y, dtype=float)
    if y.shape != x.shape:
        raise ValueError(f"y must have shape {x.shape}, got {y.shape}")
    ok = np.isfinite(y) & (y > 0) & (x > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])
