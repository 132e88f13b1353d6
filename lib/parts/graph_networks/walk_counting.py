"""Table 2.2 of Chen's thesis: learning to count attributed walks with GIN-JK and with GA-MLPs, and a hand-set
GIN that counts them exactly.

Task (section 2.6.2): node ``i`` is blue when ``i`` is even and red when odd (features one-hot, blue first); its
label is the number of walks of a given length starting at ``i`` whose nodes, the start included, are all blue
(:func:`lib.graphs.walks.attributed_walk_counts`). Models:

* GIN-JK (:class:`lib.models.gnn.GIN`) of depth = walk length, 2-layer ReLU MLPs, sum aggregation, learnable
  :math:`\\epsilon` from 0, layers concatenated, 2-layer readout;
* GA-MLP-:math:`\\omega`: a 1-hidden-layer ReLU :class:`lib.models.mlp.MLP` on the standardised features
  :math:`[X, \\omega X, \\dots, \\omega^K X]`, with :math:`\\omega = A` or :math:`\\tilde A_{(1)}` and :math:`K` = the
  walk length (twice that for "+").

Training (ours, see the chapter): full-batch Adam with cosine decay on the training nodes, standardised labels,
MSE loss, the last step reported; the metric is the MSE divided by the variance of the labels of the same split.
"""

from __future__ import annotations

import math
from math import comb

import networkx as nx
import numpy as np
import torch

from lib.config import (
    check_device,
    check_in,
    check_instance,
    check_int,
    check_positive,
    check_seed,
)
from lib.graphs.operators import adjacency, augmented_adjacency, propagate
from lib.graphs.walks import attributed_walk_counts
from lib.models.gnn import GIN, edge_index_of
from lib.models.mlp import MLP
from lib.train import train

#: The operators of the GA-MLPs of Table 2.2.
GAMLP_OPERATORS = ("A", "A1")


def parity_features(n: int) -> np.ndarray:
    """One-hot features ``(n, 2)`` (int64): ``(1, 0)`` (blue) for even nodes, ``(0, 1)`` (red) for odd ones."""
    check_int("n", n, minimum=1)
    blue = (np.arange(n) % 2 == 0).astype(np.int64)
    return np.stack([blue, 1 - blue], axis=1)


def blue_walk_labels(G, length: int) -> np.ndarray:
    """Number of walks of ``length`` steps from every node whose nodes, the start included, are all blue under
    :func:`parity_features` (int64, shape ``(n,)``)."""
    check_instance("G", G, nx.Graph)
    check_int("length", length, minimum=0)
    X = parity_features(G.number_of_nodes())
    return attributed_walk_counts(G, X, [(1, 0)] * length, start=(1, 0))


def split_nodes(n: int, rule: str, n_train: int, seed: int = 0) -> np.ndarray:
    """Boolean training mask: ``rule="first"`` takes nodes ``0..n_train-1`` (the RRG split), ``rule="parity"``
    takes ``n_train/2`` random even and ``n_train/2`` random odd nodes (the Cora split of the authors' code)."""
    check_int("n", n, minimum=3)
    check_in("rule", rule, ("first", "parity"))
    check_int("n_train", n_train, minimum=2, maximum=n - 1)
    check_seed("seed", seed)
    mask = np.zeros(n, dtype=bool)
    if rule == "first":
        mask[:n_train] = True
        return mask
    rng = np.random.default_rng(seed)
    for parity in (0, 1):
        idx = np.arange(parity, n, 2)
        mask[rng.choice(idx, size=n_train // 2, replace=False)] = True
    return mask


def gamlp_design(G, operator: str, K: int) -> np.ndarray:
    """GA-MLP input :math:`[X, \\omega X, \\dots, \\omega^K X]` of the parity features, shape ``(n, 2(K+1))``
    (float64, not yet standardised); ``operator`` is ``"A"`` or ``"A1"`` (:math:`\\tilde A_{(1)}`)."""
    check_instance("G", G, nx.Graph)
    check_in("operator", operator, GAMLP_OPERATORS)
    check_int("K", K, minimum=0)
    X = parity_features(G.number_of_nodes()).astype(np.float64)
    M = adjacency(G, np.float64) if operator == "A" else augmented_adjacency(G, 1.0)
    return np.concatenate(list(propagate(M, X, K)), axis=1)


def cosine_schedule(steps: int):
    """Cosine decay of the learning rate from 1 to 0 over ``steps`` steps: ``step -> multiplier``."""
    check_int("steps", steps, minimum=1)
    return lambda s: 0.5 * (1.0 + math.cos(math.pi * min(s, steps) / steps))


def _relative_mse(pred: np.ndarray, y: np.ndarray, mask: np.ndarray) -> float:
    var = float(np.var(y[mask]))
    return float(np.mean((pred[mask] - y[mask]) ** 2) / var) if var > 0 else float("nan")


def fit_counting_model(G, length: int, model: str, *, mask: np.ndarray, width: int, lr: float, steps: int,
                       K: int | None = None, seed: int = 0, device="cpu") -> dict:
    """Train one model of Table 2.2 on the blue-walk labels of ``G`` and report its relative MSE.

    Args:
        G: networkx graph (nodes ``0..n-1``).
        length: walk length (also the GIN depth and the GA-MLP's ``K`` unless ``K`` is given).
        model: ``"gin"`` (GIN-JK) or ``"gamlp-A"`` / ``"gamlp-A1"``.
        mask: boolean training mask of shape ``(n,)``; the rest is the test set.
        width: hidden width; lr: Adam learning rate (> 0); steps: full-batch steps (>= 1).
        K: number of operator powers of a GA-MLP (default ``length``).
        seed: torch seed of the initialisation.
        device: where to train (:func:`lib.config.check_device`); the model is initialised on the CPU and
            moved there with the graph's tensors; the predictions come back on the CPU.

    Returns:
        dict with ``train`` and ``test`` relative MSE (MSE / label variance of the split), ``pred`` (n,),
        ``loss`` (the training-loss history, standardised units), ``diverged`` and ``diverged_step``.
    """
    check_instance("G", G, nx.Graph)
    check_in("model", model, ("gin", "gamlp-A", "gamlp-A1"))
    check_int("length", length, minimum=1)
    check_int("width", width, minimum=1)
    check_positive("lr", lr)
    check_int("steps", steps, minimum=1)
    check_seed("seed", seed)
    dev = check_device("device", device)
    try:
        mask = np.asarray(mask)
    except (TypeError, ValueError):  # a ragged nested list
        raise ValueError(f"mask must be a boolean array, got {type(mask).__name__}") from None
    if mask.dtype != bool and not (mask.dtype.kind in "iuf" and np.isin(mask, (0, 1)).all()):
        raise ValueError(f"mask must be a boolean array (or 0/1), got dtype {mask.dtype}")
    mask = mask.astype(bool)
    n = G.number_of_nodes()
    if mask.shape != (n,) or mask.all() or not mask.any():
        raise ValueError(f"mask must be a boolean array of shape ({n},) with both splits non-empty")
    y = blue_walk_labels(G, length).astype(np.float64)
    mu, sd = y[mask].mean(), y[mask].std() or 1.0
    yt = torch.as_tensor((y - mu) / sd, dtype=torch.float32).to(dev)
    m_t = torch.as_tensor(mask).to(dev)
    torch.manual_seed(seed)
    if model == "gin":
        x = torch.as_tensor(parity_features(n), dtype=torch.float32).to(dev)
        ei = edge_index_of(G).to(dev)
        net = GIN(2, width, length, 1, jk=True)

        def forward(net):
            return net(x, ei)[:, 0]
    else:
        K = length if K is None else K
        check_int("K", K, minimum=1)
        F = gamlp_design(G, model.split("-")[1], K)
        fm, fs = F[mask].mean(0), F[mask].std(0)
        F = (F - fm) / np.where(fs > 0, fs, 1.0)
        f_t = torch.as_tensor(F, dtype=torch.float32).to(dev)
        net = MLP(F.shape[1], 1, depth=2, width=width)

        def forward(net):
            return net(f_t)[:, 0]

    def loss_fn(net):
        return ((forward(net) - yt)[m_t] ** 2).mean()

    res = train(net, loss_fn, lr=lr, steps=steps, optimizer="adam", schedule=cosine_schedule(steps),
                record_every=max(1, steps // 100), progress=False, device=dev)
    with torch.no_grad():
        pred = forward(net).double().cpu().numpy() * sd + mu
    return dict(
        train=_relative_mse(pred, y, mask),
        test=_relative_mse(pred, y, ~mask),
        pred=pred,
        loss=np.asarray(res.history["loss"], dtype=np.float64),
        diverged=bool(res.diverged),
        diverged_step=res.diverged_step,
    )


def handset_gin(G, length: int) -> GIN:
    """A GIN-JK with hand-set weights (float64) that outputs the blue-walk counts of :func:`blue_walk_labels`
    exactly on ``G``.

    Construction (ours). State after layer :math:`t`: :math:`(r_i, c^{(t)}_i)` with :math:`r` the red indicator
    and :math:`c^{(0)} = b` the blue one. Every layer has :math:`1+\\epsilon = M = d_{\\max}+1`, so the aggregated red
    channel :math:`R = M r_i + \\#\\text{red neighbours}` is at least :math:`M` exactly at red nodes, and a 3-layer
    ReLU MLP outputs :math:`r_i = [R-d_{\\max}]_+ - [R-d_{\\max}-1]_+` and
    :math:`c^{(t+1)}_i = [C - \\Gamma [R - d_{\\max}]_+]_+` with :math:`C = ((A+MI)c^{(t)})_i` and :math:`\\Gamma` a
    bound on :math:`C`. On blue-supported vectors :math:`b\\odot (A+MI)` acts as :math:`BA+MI` (:math:`B` the
    diagonal of :math:`b`), so :math:`c^{(t)}=(BA+MI)^tb` and the linear JK readout
    :math:`\\sum_t\\binom{L}{t}(-M)^{L-t}c^{(t)}=(BA)^Lb` is the count. Exact while the values stay below
    :math:`2^{53}`."""
    check_instance("G", G, nx.Graph)
    check_int("length", length, minimum=1)
    n = G.number_of_nodes()
    dmax = max((d for _, d in G.degree()), default=0)
    M = dmax + 1
    gin = GIN(2, 2, length, 1, jk=True, mlp_depth=3, readout_depth=2, train_eps=False, mlp_width=3).double()
    if 2.0**length * float(M + dmax) ** (length + 2) >= 2.0**53:  # largest |pre-activation|, generously
        raise ValueError(f"length={length}: values may exceed 2^53 on this graph (max degree {dmax})")
    with torch.no_grad():
        for p in gin.parameters():
            p.zero_()
        for t, layer in enumerate(gin.layers):
            layer.eps.fill_(M - 1.0)
            gamma = float(M + dmax) ** (t + 1)
            l1, l2, l3 = layer.mlp.layers
            # input channels: layer 0 gets x = (blue, red), later layers (red, c)
            red_in, c_in = (1, 0) if t == 0 else (0, 1)
            l1.weight[0, red_in], l1.bias[0] = 1.0, -dmax  # [R - dmax]_+
            l1.weight[1, red_in], l1.bias[1] = 1.0, -dmax - 1.0  # [R - dmax - 1]_+
            l1.weight[2, c_in] = 1.0  # [C]_+ = C
            l2.weight[0, 0], l2.weight[0, 1] = 1.0, -1.0  # r
            l2.weight[1, 2], l2.weight[1, 0] = 1.0, -gamma  # c'
            l3.weight[0, 0] = 1.0
            l3.weight[1, 1] = 1.0
        # readout on [x, h1, ..., hL]; c^(0) = blue = x[:, 0], c^(t) = h_t[:, 1]
        r1, r2 = gin.readout.layers
        cols = [0] + [2 + 2 * (t - 1) + 1 for t in range(1, length + 1)]
        for t, col in enumerate(cols):
            r1.weight[0, col] = comb(length, t) * float(-M) ** (length - t)
        r2.weight[0, 0] = 1.0
    gin.n_nodes = n
    return gin


def handset_counts(G, length: int) -> np.ndarray:
    """Outputs of :func:`handset_gin` on ``G`` with the parity features, rounded to int64 (shape ``(n,)``)."""
    check_instance("G", G, nx.Graph)
    gin = handset_gin(G, length)
    x = torch.as_tensor(parity_features(G.number_of_nodes()), dtype=torch.float64)
    with torch.no_grad():
        out = gin(x, edge_index_of(G))[:, 0].numpy()
    return np.rint(out).astype(np.int64), out


def counting_table(graph: dict, length: int, split: str, n_train: int, models, seed: int = 0, device="cpu") -> dict:
    """Train every model of ``models`` (rows ``(name, power multiple or None, width, lr, steps)``, see
    ``settings.COUNTING_MODELS``) on one graph and return ``name -> result`` of :func:`fit_counting_model`
    (without the predictions of the GA-MLPs), plus ``"labels"``.

    Args:
        graph: ``dict(kind=..., ...)`` with ``kind`` ``"random_regular"`` (``n``, ``degree``, ``seed``) or
            ``"barabasi_albert"`` (``n``, ``m``, ``seed``).
        length: walk length; split, n_train: see :func:`split_nodes`; seed: initialisation and split seed.
        device: where the models train (:func:`fit_counting_model`).
    """
    from lib.graphs import generators

    if not isinstance(graph, dict):
        raise ValueError(f"graph must be a dict(kind=..., ...), got {graph!r}")
    check_in("split", split, ("first", "parity"))
    if isinstance(models, (str, bytes)) or not hasattr(models, "__iter__") or not all(
            isinstance(row, (list, tuple)) and len(row) == 5 for row in models):
        raise ValueError(f"models must be rows (name, multiple, width, lr, steps), got {models!r}")
    kind = graph.get("kind")
    check_in("graph['kind']", kind, ("random_regular", "barabasi_albert"))
    if kind == "random_regular":
        G = generators.random_regular(graph["degree"], graph["n"], graph["seed"])
    else:
        G = generators.barabasi_albert(graph["n"], graph["m"], graph["seed"])
    mask = split_nodes(G.number_of_nodes(), split, n_train, seed)
    out: dict = {"labels": blue_walk_labels(G, length), "mask": mask}
    for name, mult, width, lr, steps in models:
        if name == "GIN":
            res = fit_counting_model(G, length, "gin", mask=mask, width=width, lr=lr, steps=steps, seed=seed,
                                     device=device)
        else:
            op = "A1" if name.startswith("GA-MLP-A1") else "A"
            res = fit_counting_model(G, length, f"gamlp-{op}", mask=mask, width=width, lr=lr, steps=steps,
                                     K=mult * length, seed=seed, device=device)
        out[name] = res
    return out
