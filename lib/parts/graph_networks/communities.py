"""Chapter IV.3, learning the operator: community detection in sparse two-block SBMs.

Thesis section 2.6.3 and appendix A.11 (Fig 2.4, Table A.2): GA-MLPs on the powers of a fixed operator
(:math:`A`, the shifted Bethe Hessian :math:`\\tilde H=\\kappa I-H(\\sqrt c)`, or :math:`\\tilde A_{(1)}`)
against an sGNN on :math:`\\{I, A, A^2\\}` (:class:`lib.models.sgnn.SGNN`), with the spectral baselines (second
eigenvector of :math:`A`, of :math:`H(\\sqrt c)`). The graphs come from
:func:`lib.graphs.generators.binary_sbm_edges`; every model trains with :func:`lib.train.train` (Adam, gradient
clipping), one fresh graph per step served by its ``batch_fn`` callback, and all models see the same stream of
graphs. (:func:`lib.train.train_stacked` over the three GA-MLPs was measured 3x slower per step than three
separate runs for this small MLP, so it is not used.)

GA-MLP features are computed for many graphs at once on the block-diagonal sparse operator, as the authors' code
(``SWL_GNN`` with ``stack_op``) computes them: after every application of the operator the vector is standardised
over the nodes of its graph (a batch norm of one graph, which the code also applies at test time since it keeps no
running statistics), and the *next* power is taken of the standardised vector. Standardising before the next power
is power iteration on the centred operator; standardising raw powers afterwards (``norm="after"``, kept as a
diagnostic) leaves every power dominated by the operator's uninformative leading eigenvector.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
import torch

from lib import train as trainer
from lib.config import (
    check_array,
    check_device,
    check_in,
    check_instance,
    check_int,
    check_int_array,
    check_positive,
    check_range,
    check_seed,
)
from lib.graphs import generators
from lib.models.mlp import MLP
from lib.models.sgnn import SGNN

#: GA-MLP operator families of Fig 2.4 / Table A.2, by name.
SBM_OPERATORS = ("A", "H", "A1")
#: Spectral baselines: second eigenvector of A, or the eigenvector of the second smallest eigenvalue of H(sqrt c).
SPECTRAL_METHODS = ("adjacency", "bethe")


def sbm_snr(a: float, b: float) -> float:
    """The signal-to-noise ratio :math:`(a-b)^2/(2(a+b))` of the two-block SBM; detection is possible above 1
    (the Kesten-Stigum threshold)."""
    check_positive("a", a)
    check_positive("b", b, allow_zero=True)
    return (a - b) ** 2 / (2 * (a + b))


def overlap(pred, labels) -> np.ndarray:
    """Overlap :math:`2(\\max_\\pi \\mathrm{acc}_\\pi - \\frac12)` of a two-class prediction, maximised over the
    two label permutations (so it does not change when the predicted or true labels are swapped).

    Args:
        pred, labels: integer arrays in ``{0, 1}`` of the same shape ``(n,)`` or ``(G, n)``.

    Returns:
        The overlap per graph: a float (shape ``()``) or an array of shape ``(G,)``, in ``[0, 1]``.
    """
    try:
        pred = np.asarray(pred)
    except (TypeError, ValueError):  # a ragged nested list
        raise ValueError(f"pred must be an array of labels, got {type(pred).__name__}") from None
    try:
        labels = np.asarray(labels)
    except (TypeError, ValueError):  # a ragged nested list
        raise ValueError(f"labels must be an array of labels, got {type(labels).__name__}") from None
    if pred.shape != labels.shape or pred.ndim not in (1, 2) or pred.shape[-1] == 0:
        raise ValueError(f"pred and labels must have the same shape (n,) or (G, n), got {pred.shape}, {labels.shape}")
    for name, v in (("pred", pred), ("labels", labels)):
        if not np.isin(v, (0, 1)).all():
            raise ValueError(f"{name} must hold labels in {{0, 1}}")
    acc = (pred == labels).mean(axis=-1)
    return 2.0 * (np.maximum(acc, 1.0 - acc) - 0.5)


def _block_adjacency(edges, n: int) -> sp.csr_array:
    """Block-diagonal symmetric adjacency of the graphs ``edges`` (each ``(2, m)``, ``i < j``), float64."""
    G = len(edges)
    rows = np.concatenate([e[0] + g * n for g, e in enumerate(edges)]) if G else np.zeros(0, np.int64)
    cols = np.concatenate([e[1] + g * n for g, e in enumerate(edges)]) if G else np.zeros(0, np.int64)
    A = sp.coo_array((np.ones(rows.size), (rows, cols)), shape=(G * n, G * n))
    return sp.csr_array(A + A.T)


def block_operator(edges, n: int, operator: str, *, kappa: float = 8.0, eps: float = 1.0) -> sp.csr_array:
    """The block-diagonal operator of a list of graphs: ``"A"`` (adjacency), ``"H"`` (:math:`\\tilde H=\\kappa I -
    H(\\sqrt c)` with :math:`H(r)=(r^2-1)I-rA+D` and :math:`c` the mean degree of each graph, as in the authors'
    code) or ``"A1"`` (:math:`\\tilde A_{(\\epsilon)}`, SGC's operator for ``eps=1``). Float64, shape
    ``(G n, G n)``."""
    check_int("n", n, minimum=1)
    check_in("operator", operator, SBM_OPERATORS)
    check_positive("kappa", kappa)
    check_positive("eps", eps)
    A = _block_adjacency(edges, n)
    d = np.asarray(A.sum(axis=1)).ravel()
    if operator == "A":
        return A
    if operator == "A1":
        s = sp.diags_array((d + eps) ** -0.5)
        return sp.csr_array(s @ (A + eps * sp.eye_array(A.shape[0])) @ s)
    c = np.repeat(d.reshape(-1, n).mean(axis=1), n)
    r = np.sqrt(c)
    # kappa I - H(r) = (kappa - r^2 + 1) I + r A - D, with r = sqrt(c) per graph
    return sp.csr_array(sp.diags_array(kappa - r * r + 1.0 - d) + sp.diags_array(r) @ A)


#: Ways of normalising the GA-MLP powers: ``"in_loop"`` (the authors' code) or ``"after"`` (raw powers, each
#: rescaled to unit norm and standardised afterwards; the book's earlier pipeline, kept as a diagnostic).
POWER_NORMS = ("in_loop", "after")
#: the epsilon of torch's BatchNorm1d, used by the in-loop standardisation
BN_EPS = 1e-5


def power_features(edges, n: int, operator: str, K: int, *, kappa: float = 8.0, norm: str = "in_loop") -> np.ndarray:
    """GA-MLP features of each graph: :math:`K+1` columns, the all-ones input and :math:`K` normalised powers of the
    operator applied to it.

    With ``norm="in_loop"`` (the authors' code): :math:`x_0=\\mathbf 1`, and for :math:`k\\ge1`
    :math:`x_k=\\mathrm{BN}(Mx_{k-1})`, where BN subtracts the mean over the graph's nodes and divides by
    :math:`\\sqrt{\\mathrm{var}+10^{-5}}` (torch's ``BatchNorm1d`` on one graph, its affine part at its initial
    value); column :math:`k` is :math:`x_k`, column 0 the raw ones. With ``norm="after"``: column :math:`k` is
    :math:`M^k\\mathbf 1` (rescaled to unit norm, which does not change its direction) standardised over the nodes,
    the recursion continuing from the unstandardised vector (column 0 is then 0).

    Args:
        edges: list of ``G`` edge arrays of shape ``(2, m)`` (from :func:`~lib.graphs.generators.binary_sbm_edges`).
        n: nodes per graph; operator: one of :data:`SBM_OPERATORS`; K: highest power (>= 0); kappa: the shift
            of :math:`\\tilde H`; norm: one of :data:`POWER_NORMS`.

    Returns:
        float32 array of shape ``(G, n, K + 1)``.
    """
    check_int("K", K, minimum=0)
    check_in("norm", norm, POWER_NORMS)
    M = block_operator(edges, n, operator, kappa=kappa)
    G = len(edges)
    x = np.ones((G, n))
    out = np.empty((G, n, K + 1), dtype=np.float32)
    out[:, :, 0] = 1.0 if norm == "in_loop" else 0.0
    for k in range(1, K + 1):
        x = (M @ x.ravel()).reshape(G, n)
        if norm == "in_loop":
            x = (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + BN_EPS)
            out[:, :, k] = x
        else:
            norm_k = np.linalg.norm(x, axis=1, keepdims=True)
            x = x / np.where(norm_k > 0, norm_k, 1.0)
            sd = x.std(axis=1, keepdims=True)
            out[:, :, k] = (x - x.mean(axis=1, keepdims=True)) / np.where(sd > 1e-12, sd, np.inf)
    return out


def spectral_partition(edge, n: int, method: str) -> np.ndarray:
    """Two-way spectral partition of one graph by the sign of an eigenvector: ``"adjacency"`` takes the
    eigenvector of the second largest eigenvalue of :math:`A`, ``"bethe"`` that of the second smallest eigenvalue
    of the Bethe Hessian :math:`H(\\sqrt c)` (Saade et al.), with :math:`c` the graph's mean degree. Returns an int64
    array of shape ``(n,)`` in ``{0, 1}``."""
    check_array("edge", edge)
    check_int("n", n, minimum=2)
    check_in("method", method, SPECTRAL_METHODS)
    A = _block_adjacency([edge], n)
    d = np.asarray(A.sum(axis=1)).ravel()
    v0 = np.random.default_rng(0).random(n)  # fixed Lanczos start: identical runs
    if method == "adjacency":
        vals, vecs = sla.eigsh(A, k=2, which="LA", v0=v0)
        vec = vecs[:, np.argsort(vals)[0]]
    else:
        r = np.sqrt(d.mean())
        H = sp.csr_array((r * r - 1) * sp.eye_array(n) - r * A + sp.diags_array(d))
        vals, vecs = sla.eigsh(H, k=2, which="SA", v0=v0)
        vec = vecs[:, np.argsort(vals)[1]]
    return (vec > 0).astype(np.int64)


def spectral_overlaps(edges, labels, n: int, method: str) -> np.ndarray:
    """Overlap of :func:`spectral_partition` on each graph: float array of shape ``(G,)``."""
    check_instance("edges", edges, (list, tuple, np.ndarray))
    check_int("n", n, minimum=1)
    labels = np.asarray(labels)
    if labels.shape != (len(edges), n):
        raise ValueError(f"labels must have shape ({len(edges)}, {n}), got {labels.shape}")
    if not len(edges):
        return np.zeros(0)
    pred = np.stack([spectral_partition(e, n, method) for e in edges])
    return overlap(pred, labels)


def permutation_ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy minimised over the two label permutations, per graph, then averaged over graphs.

    Args:
        logits: ``(..., n, 2)``; labels: ``(..., n)`` integer labels in ``{0, 1}``.
    """
    if logits.shape[-1] != 2 or logits.shape[:-1] != labels.shape:
        raise ValueError(f"logits must have shape labels.shape + (2,), got {tuple(logits.shape)}")
    logp = torch.log_softmax(logits, dim=-1)
    ce = -torch.gather(logp, -1, labels.unsqueeze(-1)).squeeze(-1).mean(-1)
    ce_swap = -torch.gather(logp, -1, (1 - labels).unsqueeze(-1)).squeeze(-1).mean(-1)
    return torch.minimum(ce, ce_swap).mean()


class _GraphStream:
    """Fresh SBM graphs in chunks: graph ``i`` is number ``i % chunk`` of chunk ``i // chunk`` (seeded by
    ``(seed, chunk index)``), with the GA-MLP features of the chunk computed once when asked for."""

    def __init__(self, n, a, b, seed, chunk, K=None, operators=(), kappa=8.0):
        self.n, self.a, self.b, self.seed, self.chunk = n, a, b, seed, chunk
        self.K, self.operators, self.kappa = K, tuple(operators), kappa
        self._index, self._data = None, None

    def get(self, i):
        c, j = divmod(i, self.chunk)
        if self._index != c:
            seed = int(np.random.SeedSequence([self.seed, c]).generate_state(1)[0])
            edges, labels = generators.binary_sbm_edges(self.n, self.a, self.b, self.chunk, seed)
            feats = [power_features(edges, self.n, op, self.K, kappa=self.kappa) for op in self.operators]
            self._index, self._data = c, (edges, labels, feats)
        edges, labels, feats = self._data
        return edges[j], labels[j], [f[j] for f in feats]


def _both_ways(edge: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.concatenate([edge, edge[::-1]], axis=1))


def run_sbm(
    a: float,
    b: float,
    *,
    n: int = 250,
    K: int = 120,
    n_train: int = 6000,
    n_test: int = 200,
    hidden: int = 10,
    operators=SBM_OPERATORS,
    sgnn_depth: int = 30,
    sgnn_width: int = 10,
    sgnn_train: int | None = None,
    lr: float = 1e-3,
    clip: float = 40.0,
    kappa: float = 8.0,
    seed: int = 0,
    chunk: int = 200,
    device="cpu",
) -> dict:
    """Train and test every model of Fig 2.4 at one SBM setting ``(a, b)``; one fresh graph per training step.

    The GA-MLPs (``rho`` = ``(K+1) -> hidden -> 2`` ReLU MLP on :func:`power_features`, one per operator) and the sGNN
    (:class:`~lib.models.sgnn.SGNN`, ``sgnn_depth`` layers on :math:`\\{I,A,A^2\\}`; ``sgnn_depth=0`` skips it)
    each train with :func:`lib.train.train` on the same stream of graphs (the sGNN on its first ``sgnn_train``,
    default ``n_train``). Adam with
    learning rate ``lr``, gradient norm clipped at ``clip``, loss :func:`permutation_ce`. The test graphs (a
    separate seed) also give the spectral baselines. ``device``: where the models train and are tested
    (:func:`lib.config.check_device`); the graphs, features and initial weights are made on the CPU as before and
    moved, and the overlaps come back as CPU arrays.

    Returns:
        dict with ``overlap`` (method -> float array of shape ``(n_test,)``; methods ``"GA-MLP-<op>"``,
        ``"sGNN"``, ``"spectral-adjacency"``, ``"spectral-bethe"``), ``loss`` (method -> training-loss history),
        ``diverged`` (method -> bool) and ``settings``.
    """
    check_int("n", n, minimum=4)
    check_range("a", a, 0.0, float(n))
    check_range("b", b, 0.0, float(n))
    check_int("K", K, minimum=1)
    check_int("n_train", n_train, minimum=1)
    check_int("n_test", n_test, minimum=1)
    check_int("hidden", hidden, minimum=1)
    for op in operators:
        check_in("operators", op, SBM_OPERATORS)
    check_int("sgnn_depth", sgnn_depth, minimum=0)
    check_int("sgnn_width", sgnn_width, minimum=2)
    sgnn_train = n_train if sgnn_train is None else sgnn_train
    check_int("sgnn_train", sgnn_train, minimum=1)
    check_positive("lr", lr)
    check_positive("clip", clip)
    check_seed("seed", seed)
    check_int("chunk", chunk, minimum=1)
    dev = check_device("device", device)
    operators = tuple(operators)
    out = {
        "overlap": {},
        "loss": {},
        "diverged": {},
        "settings": dict(a=a, b=b, n=n, K=K, n_train=n_train, n_test=n_test, sgnn_depth=sgnn_depth),
    }
    test_seed = int(np.random.SeedSequence([2 * seed + 1, 0]).generate_state(1)[0])
    test_edges, test_labels = generators.binary_sbm_edges(n, a, b, n_test, test_seed)
    ytest = torch.as_tensor(test_labels)

    for op in operators:
        torch.manual_seed(seed)
        model = MLP(K + 1, 2, depth=2, width=hidden)
        op_stream = _GraphStream(n, a, b, 2 * seed, chunk, K, (op,), kappa)

        def gamlp_batch(step, generator, op_stream=op_stream):
            _, y, feats = op_stream.get(step)
            return torch.as_tensor(feats[0]).to(dev), torch.as_tensor(y).to(dev)

        def gamlp_loss(model, batch):
            x, y = batch
            return permutation_ce(model(x), y)

        res = trainer.train(
            model,
            gamlp_loss,
            lr=lr,
            steps=n_train - 1,
            optimizer="adam",
            batch_fn=gamlp_batch,
            clip_norm=clip,
            record_every=max(1, n_train // 50),
            progress=False,
            device=dev,
        )
        x = torch.as_tensor(power_features(test_edges, n, op, K, kappa=kappa)).to(dev)
        with torch.no_grad():
            pred = model(x).argmax(-1).cpu().numpy()
        out["overlap"][f"GA-MLP-{op}"] = overlap(pred, test_labels)
        out["loss"][f"GA-MLP-{op}"] = res.history["loss"]
        out["diverged"][f"GA-MLP-{op}"] = bool(res.diverged)

    if sgnn_depth:
        torch.manual_seed(seed)
        net = SGNN(1, sgnn_width, sgnn_depth, 2)
        sg_stream = _GraphStream(n, a, b, 2 * seed, chunk)  # the GA-MLPs' graphs, without features

        def sgnn_batch(step, generator):
            e, y, _ = sg_stream.get(step)
            return _both_ways(e).to(dev), torch.as_tensor(y).to(dev)

        ones = torch.ones(n, 1, device=dev)

        def sgnn_loss(model, batch):
            ei, y = batch
            return permutation_ce(model(ones, ei, n), y)

        res = trainer.train(
            net,
            sgnn_loss,
            lr=lr,
            steps=sgnn_train - 1,
            optimizer="adam",
            batch_fn=sgnn_batch,
            clip_norm=clip,
            record_every=max(1, sgnn_train // 50),
            progress=False,
            device=dev,
        )
        ei = torch.cat([_both_ways(e) + g * n for g, e in enumerate(test_edges)], dim=1).to(dev)
        with torch.no_grad():
            pred = net(torch.ones(n_test * n, 1, device=dev), ei, n).argmax(-1).reshape(n_test, n).cpu().numpy()
        out["overlap"]["sGNN"] = overlap(pred, ytest.numpy())
        out["loss"]["sGNN"] = res.history["loss"]
        out["diverged"]["sGNN"] = bool(res.diverged)

    for method in SPECTRAL_METHODS:
        out["overlap"][f"spectral-{method}"] = spectral_overlaps(test_edges, test_labels, n, method)
    return out


def paired_difference(first, second) -> tuple[float, float]:
    """Mean and standard error of ``first - second`` over the same test graphs (the chapter's paired
    comparison of two methods' overlaps, Fig 2.4)."""
    a = check_array("first", first, ndim=1)
    b = check_array("second", second, ndim=1)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"first and second must hold one overlap per test graph (>= 2), got {a.shape}, {b.shape}")
    d = a - b
    return float(np.mean(d)), float(np.std(d) / np.sqrt(len(d)))


def beats(first, second) -> bool:
    """The chapter's rule for "method 1 beats method 2" at one setting: the paired mean difference of the overlaps
    over the test graphs exceeds two standard errors (:func:`paired_difference`)."""
    mean, se = paired_difference(first, second)
    return mean > 2 * se


#: "Comparable" in Fig 2.4 (the thesis gives no number): the paired mean difference is at most this, in overlap.
COMPARABLE_BOUND = 0.1


def comparable(first, second) -> bool:
    """The chapter's rule for "method 1 is comparable to method 2" at one setting: the paired mean difference of
    the overlaps is at most :data:`COMPARABLE_BOUND` in absolute value."""
    return abs(paired_difference(first, second)[0]) <= COMPARABLE_BOUND


def linear_readout_overlap(features: np.ndarray, labels: np.ndarray, k: int, seed: int = 0) -> float:
    """Overlap of the best linear read-out of the first ``k + 1`` feature columns of one graph: least squares of
    the :math:`\\pm1` labels on ``[features[:, :k+1], 1]`` fitted on a random half of the nodes and scored (by the
    sign of the fit) on the other half. A diagnostic of how much a GA-MLP's features hold, not a trained model.

    Args:
        features: ``(n, K + 1)`` (one graph of :func:`power_features`); labels: ``(n,)`` in ``{0, 1}``;
        k: highest power used (``0 <= k <= K``); seed: seed of the node split.
    """
    features = check_array("features", features, ndim=2)  # an inf would make lstsq spin forever in LAPACK
    check_seed("seed", seed)
    labels = np.asarray(labels)
    if labels.ndim == 1 and labels.size:
        check_int_array("labels", labels, minimum=0, maximum=1)
    if features.ndim != 2 or labels.shape != (features.shape[0],):
        raise ValueError(f"features must be (n, K+1) and labels (n,), got {features.shape} and {labels.shape}")
    check_int("k", k, minimum=0, maximum=features.shape[1] - 1)
    n = features.shape[0]
    perm = np.random.default_rng(seed).permutation(n)
    fit, score = perm[: n // 2], perm[n // 2 :]
    X = np.hstack([features[:, : k + 1], np.ones((n, 1))])
    coef = np.linalg.lstsq(X[fit], 2.0 * labels[fit] - 1.0, rcond=None)[0]
    pred = (X[score] @ coef > 0).astype(np.int64)
    return float(overlap(pred, labels[score]))


def bethe_spectra(edge, n: int) -> dict:
    """Eigen-decompositions of one graph's :math:`A` and :math:`H(\\sqrt c)` (dense, for the chapter's widget).

    Returns:
        dict with ``A`` and ``H``, each (eigenvalues ascending ``(n,)``, eigenvectors ``(n, n)``), and ``c`` (the
        graph's mean degree).
    """
    check_array("edge", edge)
    check_int("n", n, minimum=1)
    check_int("n", n, minimum=2)
    A = _block_adjacency([edge], n).toarray()
    d = A.sum(axis=1)
    r = np.sqrt(d.mean())
    return {"A": np.linalg.eigh(A), "H": np.linalg.eigh((r * r - 1) * np.eye(n) - r * A + np.diag(d)), "c": d.mean()}
