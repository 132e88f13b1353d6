"""GCNs trained with graph topology sampling (H. Li's thesis, chapter 5 and appendix D).

A three-layer GCN (5.4) (:class:`lib.models.gcn.GCN3`) is trained by full-batch Adam on the labelled nodes
:math:`\\Omega` of a two-degree-group graph, with a freshly sampled aggregation matrix :math:`A^s` in each layer at
each step (the group sampler of Section 5.3.2 or FastGCN, :mod:`lib.graphs.sampling`), and tested on the other
nodes with the effective adjacency :math:`A^*` (Section 5.3.3). Labels come from the teacher (5.20)
:math:`y = (\\sin(\\hat AXW^*)\\odot\\tanh(\\hat AXW^*))C^*`.

``method="algorithm2"`` trains instead by Algorithm 2 of the thesis as written (noisy mini-batch SGD on (5.11) with
sign masks, smoothing noise, Table 5.1's regularisers and weight-decay rounds), through
:func:`lib.train.train` as well.

Runs that share a graph and a sampler (several label sets :math:`\\Omega`, several teachers, several seeds) are
trained together as the copies of one :class:`~lib.models.gcn.GCN3`: one sparse product per layer for all of
them, and one sampled matrix per layer and step shared by all copies.
"""

from __future__ import annotations

import numpy as np
import torch

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
from lib.graphs import sampling
from lib.models.gcn import GCN3
from lib.train import train


def sin_tanh_labels(A_hat: torch.Tensor, X: torch.Tensor, W_star: torch.Tensor, C_star: torch.Tensor) -> torch.Tensor:
    """The teacher (5.20): :math:`Y = (\\sin(\\hat A X W^*) \\odot \\tanh(\\hat A X W^*))\\,C^*`.

    Args:
        A_hat: sparse (N, N) aggregation matrix of the teacher.
        X: features (N, d).
        W_star: (d, p).
        C_star: (p, K).

    Returns:
        Labels (N, K).
    """
    check_array("A_hat", A_hat.coalesce().values() if getattr(A_hat, "is_sparse", False) else A_hat)
    check_array("X", X)
    check_array("W_star", W_star)
    check_array("C_star", C_star)
    if X.dim() != 2 or W_star.dim() != 2 or C_star.dim() != 2:
        raise ValueError("X, W_star and C_star must be 2-d")
    if X.shape[1] != W_star.shape[0] or W_star.shape[1] != C_star.shape[0] or A_hat.shape[1] != X.shape[0]:
        raise ValueError(
            f"shapes do not chain: A_hat {tuple(A_hat.shape)}, X {tuple(X.shape)}, "
            f"W_star {tuple(W_star.shape)}, C_star {tuple(C_star.shape)}"
        )
    h = torch.sparse.mm(A_hat, X @ W_star)
    return (torch.sin(h) * torch.tanh(h)) @ C_star


def relative_mse(pred: torch.Tensor, Y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Relative test MSE :math:`\\|\\hat Y - Y\\|^2 / \\|Y - \\bar Y\\|^2` over the nodes of ``mask``, per copy.

    Args:
        pred, Y: (copies, N, K).
        mask: bool (copies, N).

    Returns:
        (copies,) tensor; 1 is the error of predicting the mean label.
    """
    m = mask.to(pred.dtype)[..., None]
    mean = (Y * m).sum(1, keepdim=True) / m.sum(1, keepdim=True)
    return ((pred - Y) ** 2 * m).sum((1, 2)) / ((Y - mean) ** 2 * m).sum((1, 2))


def label_masks(n: int, sizes, seeds, *, generator_seed: int = 0) -> torch.Tensor:
    """Random labelled sets :math:`\\Omega`: one bool row per (size, seed) pair, sizes outer, seeds inner.

    Args:
        n: number of nodes.
        sizes: the sizes :math:`|\\Omega|` (each in [1, n-1]).
        seeds: one integer seed per repeat.
        generator_seed: offset added to every seed.

    Returns:
        bool tensor (len(sizes) * len(seeds), n).
    """
    check_int("n", n, minimum=2)
    check_seed("generator_seed", generator_seed)
    sizes = check_int_array("sizes", sizes, minimum=1, maximum=n - 1).tolist()
    seeds = check_int_array("seeds", seeds, minimum=0).tolist()
    rows = []
    for s in sizes:
        for seed in seeds:
            g = torch.Generator().manual_seed(int(seed) + generator_seed)
            row = torch.zeros(n, dtype=torch.bool)
            row[torch.randperm(n, generator=g)[:s]] = True
            rows.append(row)
    return torch.stack(rows)


def two_group_problem(sizes, degrees, *, d: int = 10, p: int = 10, k_out: int = 2, seed: int = 0) -> dict:
    """A two-degree-group graph (:func:`lib.graphs.sampling.degree_group_graph`), its normalised adjacency and the
    features and teacher weights of Section 5.4 (all entries :math:`\\mathcal N(0,1)`).

    Returns:
        dict with ``A`` (sparse), ``groups``, ``X`` (N, d), ``W_star`` (d, p), ``C_star`` (p, k_out),
        ``sizes``, ``degrees`` and the realised mean degree per group ``mean_degree``.
    """
    for name, v in (("d", d), ("p", p), ("k_out", k_out)):
        check_int(name, v, minimum=1)
    edges, groups = sampling.degree_group_graph(sizes, degrees, seed=seed)
    n = len(groups)
    A = sampling.gcn_adjacency(edges, n)
    deg = np.bincount(edges.ravel(), minlength=n)
    g = torch.Generator().manual_seed(seed + 1)
    return {
        "A": A,
        "groups": groups,
        "sizes": tuple(sizes),
        "degrees": tuple(degrees),
        "mean_degree": np.array([deg[groups == i].mean() for i in range(len(sizes))]),
        "X": torch.randn(n, d, generator=g),
        "W_star": torch.randn(d, p, generator=g),
        "C_star": torch.randn(p, k_out, generator=g),
    }


def train_sampled_gcn(
    problem: dict,
    Y: torch.Tensor,
    masks: torch.Tensor,
    *,
    sampler: str = "group",
    p_star=(1.0, 1.0),
    keep: float = 0.9,
    m: int = 32,
    steps: int = 300,
    lr: float = 1e-3,
    seed: int = 0,
    device="cpu",
    method: str = "adam",
    batch: int = 5,
    inner: int = 1,
    eps0: float = 0.01,
    c0: float = 4000.0,
) -> dict:
    """Train ``copies`` GCNs (5.4) by full-batch Adam with topology sampling; test on the unlabelled nodes.

    Each step draws three independent sampled matrices (one per layer, the general setting of Section 5.3.2)
    from ``sampler`` and hands them to :func:`lib.train.train` as the step's batch. The loss is the mean squared
    error over each copy's labelled nodes, summed over copies. Prediction uses the sampler's mean matrix
    (:math:`A^*` for the group sampler, ``A`` for FastGCN).

    Args:
        problem: from :func:`two_group_problem`.
        Y: labels (copies, N, K) (or (N, K), shared by all copies).
        masks: bool (copies, N): the labelled set :math:`\\Omega` of each copy.
        sampler: ``"group"`` (:class:`~lib.graphs.sampling.GroupSampler` with ``p_star``, ``keep``), ``"fastgcn"``
            (:class:`~lib.graphs.sampling.FastGCNSampler` with ``t = keep * N``) or ``"none"`` (train with ``A P^*``).
        p_star: the group sampler's :math:`(p^*_1, p^*_2)`.
        keep: the kept fraction :math:`S_l/N_l` in (0, 1].
        m: hidden width :math:`m_1 = m_2` (>= 1).
        steps: Adam steps (>= 1).
        lr: learning rate (> 0).
        seed: seed of the initialisation and of the sampling.
        device: where to train (:func:`lib.config.check_device`); the weights are initialised and every sampled
            matrix drawn on the CPU from the same seeds and moved there; the errors are CPU arrays.
        method: ``"adam"`` (the book's loop above) or ``"algorithm2"``: Algorithm 2 of the thesis as written
            (``_algorithm2``), with ``lr`` its step size :math:`\\eta` and ``steps`` its :math:`TT_w` SGD
            iterations; the arguments below are used only by it.
        batch: Algorithm 2's mini-batch :math:`|\\Omega^s|` of labelled nodes per step (1 to :math:`|\\Omega|`).
        inner: Algorithm 2's inner iterations :math:`T_w` per weight-decay round (divides ``steps``).
        eps0: :math:`\\epsilon_0` of Table 5.1, in (0, 1/100].
        c0: :math:`C_0` of Table 5.1 (> 0), which sets :math:`\\lambda_w = 2\\epsilon_0 m^{3-0.002}/C_0^4`.

    Returns:
        dict with ``test_error`` and ``train_error`` (copies,) relative MSEs, ``loss`` (the recorded loss curve),
        ``diverged`` and ``diverged_step`` (-1 if it did not diverge).
    """
    check_in("sampler", sampler, ("group", "fastgcn", "none"))
    check_in("method", method, ("adam", "algorithm2"))
    check_int("batch", batch, minimum=1)
    check_int("inner", inner, minimum=1)
    check_range("eps0", eps0, 0.0, 0.01, lo_open=True)
    check_positive("c0", c0)
    check_int("m", m, minimum=1)
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    check_range("keep", keep, 0.0, 1.0, lo_open=True)
    check_seed("seed", seed)
    dev = check_device("device", device)
    if not isinstance(problem, dict) or any(k not in problem for k in ("A", "X", "groups")):
        raise ValueError(f"problem must be a result of two_group_problem, got {type(problem).__name__}")
    check_array("Y", Y, ndim=(2, 3))
    if not torch.is_tensor(masks) or masks.dtype != torch.bool:
        raise ValueError(f"masks must be a boolean tensor (copies, N), got {type(masks).__name__}")
    Y = Y if torch.is_tensor(Y) else torch.as_tensor(Y, dtype=problem["X"].dtype)
    A, X = problem["A"], problem["X"]
    if masks.dim() != 2 or masks.shape[1] != A.shape[0]:
        raise ValueError(f"masks must have shape (copies, {A.shape[0]}), got {tuple(masks.shape)}")
    copies = masks.shape[0]
    Y = Y.expand(copies, *Y.shape[-2:]) if Y.dim() == 2 else Y
    if Y.shape[:2] != masks.shape:
        raise ValueError(f"Y must have shape (copies, N, K) matching masks {tuple(masks.shape)}, got {tuple(Y.shape)}")
    if sampler == "none":
        A_star = sampling.effective_adjacency(A, problem["groups"], p_star)
        draw, A_pred = (lambda g: (A_star, A_star, A_star)), A_star
    else:
        s = sampling.sampler_by_name(sampler, A, problem["groups"], p_star, keep)
        draw, A_pred = (lambda g: tuple(s.sample(g) for _ in range(3))), s.effective
    model = GCN3(X.shape[1], m, m, Y.shape[-1], copies=copies, generator=torch.Generator().manual_seed(seed))
    if method == "algorithm2":
        if steps % inner:
            raise ValueError(f"inner must divide steps ({steps}), got {inner}")
        if batch > int(masks.sum(1).min()):
            raise ValueError(f"batch must be at most the smallest |Omega| ({int(masks.sum(1).min())}), got {batch}")
        return _algorithm2(model, draw, A_pred, X, Y, masks, lr=lr, steps=steps, batch=batch, inner=inner,
                           eps0=eps0, c0=c0, seed=seed, dev=dev)
    w = masks.to(X.dtype)[..., None] / masks.sum(1).to(X.dtype)[:, None, None]
    X, Y, w, masks, A_pred = (t.to(dev) for t in (X, Y, w, masks, A_pred))  # no-ops on the CPU

    def loss_fn(net, adjs):
        return (((net(adjs, X) - Y) ** 2) * w).sum() / Y.shape[-1]

    res = train(
        model,
        loss_fn,
        lr=lr,
        steps=steps,
        optimizer="adam",
        batch_fn=lambda step, g: tuple(a.to(dev) for a in draw(g)),  # drawn on the CPU, then moved
        generator=torch.Generator().manual_seed(seed + 12345),
        record_every=max(1, steps // 50),
        progress=False,
        device=dev,
    )
    with torch.no_grad():
        return _gcn_result(model(A_pred, X), Y, masks, res)


def _gcn_result(pred, Y, masks, res) -> dict:
    """The result dict of :func:`train_sampled_gcn` from the prediction on every node and the training run."""
    return {
        "test_error": relative_mse(pred, Y, ~masks).cpu().numpy(),
        "train_error": relative_mse(pred, Y, masks).cpu().numpy(),
        "loss": np.asarray(res.history["loss"]),
        "diverged": bool(res.diverged),
        "diverged_step": -1 if res.diverged_step is None else int(res.diverged_step),
    }


def _alg2_weights(W0, V0, p: dict, lam: float, w_rho, v_rho, signs) -> dict:
    """The weights of (5.11), :math:`\\sqrt\\lambda(W^{(0)}+W^\\rho+W\\Sigma)` and
    :math:`\\sqrt\\lambda(V^{(0)}+V^\\rho+\\Sigma V)`, per copy: ``signs`` (copies, m1) is the diagonal of
    :math:`\\Sigma`, which scales the columns of ``p["W"]`` (copies, d, m1) and the rows of ``p["V"]`` (copies, m1, m2).
    """
    root = lam**0.5
    return {"W": root * (W0 + w_rho + p["W"] * signs[:, None, :]),
            "V": root * (V0 + v_rho + signs[:, :, None] * p["V"])}


def _algorithm2(model, draw, A_pred, X, Y, masks, *, lr, steps, batch, inner, eps0, c0, seed, dev) -> dict:
    """Algorithm 2 of the thesis (Section 5.3.3, (5.11), Table 5.1) on the copies of ``model``, through
    :func:`lib.train.train`.

    The trained variables are the updates :math:`W, V`, started at 0 (line 3); the initial weights
    :math:`W^{(0)}, V^{(0)}` and :math:`B_1, B_2, C` of ``model`` stay fixed. Step :math:`s` lies in the outer round
    :math:`t = \\lfloor s/T_w \\rfloor` with :math:`\\lambda_t = (1-\\eta)^t` (line 6), and descends the stochastic
    objective (5.11): :math:`L_{\\Omega^s}` of the GCN with weights :math:`\\sqrt{\\lambda_t}(W^{(0)}+W^\\rho+W\\Sigma)`
    and :math:`\\sqrt{\\lambda_t}(V^{(0)}+V^\\rho+\\Sigma V)` and the sampled matrices :math:`A^s` (one per layer),
    plus :math:`\\lambda_w\\|\\sqrt{\\lambda_t}W\\|_{2,4}^4+\\lambda_v\\|\\sqrt{\\lambda_t}V\\|_F^2` (the (2,4)-norm
    over the columns of :math:`W`, one per neuron). Each step draws a batch of ``batch`` labelled nodes per copy,
    the perturbations :math:`W^\\rho_{ij}\\sim\\mathcal N(0,\\sigma_w^2)`, :math:`V^\\rho_{ij}\\sim\\mathcal N(0,
    \\sigma_v^2)` and the sign mask :math:`\\Sigma=\\mathrm{diag}(\\pm1)` (:math:`m_1` fair signs), all per copy.
    Table 5.1 sets :math:`\\lambda_v=2\\epsilon_0m/m^{0.99}`, :math:`\\lambda_w=2\\epsilon_0m^{2.998}/C_0^4`,
    :math:`\\sigma_v=m^{-0.51}`, :math:`\\sigma_w=m^{-0.99}`. "Noisy SGD" (footnote 25) is plain SGD plus a
    Gaussian perturbation whose size the thesis does not give: after each step a callback subtracts
    :math:`\\eta\\xi` with :math:`\\xi` Gaussian of expected squared norm 1 per copy (the unit noise of the
    reference it cites), so the step is exactly :math:`\\theta\\leftarrow\\theta-\\eta(\\nabla+\\xi)`.

    The output (line 8) is :math:`\\sqrt{\\lambda_{T-1}}(W^{(0)}+W^\\rho+W_T\\Sigma)` and
    :math:`\\sqrt{\\lambda_{T-1}}(V^{(0)}+V^\\rho+\\Sigma V_T)` with one fresh draw of :math:`W^\\rho, V^\\rho,
    \\Sigma`; it predicts with ``A_pred`` (:math:`A^*`). Returns the keys of :func:`train_sampled_gcn`.
    """
    model.to(dev)
    copies, d, m1 = model.W.shape
    m2 = model.V.shape[2]
    lam_v, lam_w = 2 * eps0 * m2 / m1**0.99, 2 * eps0 * m1**2.998 / c0**4
    sig_w, sig_v = 1 / m1**0.99, 1 / m2**0.51
    n_entries = d * m1 + m1 * m2
    X, Y, masks, A_pred = (t.to(dev) for t in (X, Y, masks, A_pred))
    W0, V0 = model.W.detach(), model.V.detach()
    params = {"W": torch.zeros_like(W0), "V": torch.zeros_like(V0)}

    def perturb(g):
        """W^rho, V^rho and the signs of Sigma, drawn on the CPU and moved to the device."""
        w_rho = torch.randn(copies, d, m1, generator=g, dtype=W0.dtype) * sig_w
        v_rho = torch.randn(copies, m1, m2, generator=g, dtype=W0.dtype) * sig_v
        signs = torch.randint(0, 2, (copies, m1), generator=g).to(W0.dtype) * 2 - 1
        return w_rho.to(dev), v_rho.to(dev), signs.to(dev)

    def batch_fn(step, g):
        adjs = tuple(a.to(dev) for a in draw(g))
        nodes = torch.multinomial(masks.cpu().to(W0.dtype), batch, replacement=False, generator=g).to(dev)
        return adjs, nodes, (1 - lr) ** (step // inner), perturb(g)

    def loss_fn(p, b):
        adjs, nodes, lam, noise = b
        pred = torch.func.functional_call(model, _alg2_weights(W0, V0, p, lam, *noise), (adjs, X))
        rows = torch.arange(copies, device=nodes.device)[:, None]
        fit = ((pred[rows, nodes] - Y[rows, nodes]) ** 2).mean((1, 2)).sum()
        reg = lam_w * lam**2 * (p["W"].norm(dim=1) ** 4).sum() + lam_v * lam * (p["V"] ** 2).sum()
        return fit + reg

    g_noise = torch.Generator().manual_seed(seed + 54321)

    def noisy(p, step, loss):
        with torch.no_grad():
            for k in ("W", "V"):
                xi = torch.randn(p[k].shape, generator=g_noise, dtype=p[k].dtype) / n_entries**0.5
                p[k].sub_(lr * xi.to(dev))

    res = train(params, loss_fn, lr=lr, steps=steps, optimizer="sgd", batch_fn=batch_fn, callbacks=(noisy,),
                generator=torch.Generator().manual_seed(seed + 12345), record_every=max(1, steps // 50),
                progress=False, device=dev)
    last = (1 - lr) ** max(steps // inner - 1, 0)  # lambda_{T-1}
    out = _alg2_weights(W0, V0, params, last, *perturb(torch.Generator().manual_seed(seed + 999)))
    with torch.no_grad():
        return _gcn_result(torch.func.functional_call(model, out, (A_pred, X)), Y, masks, res)


def sampling_spread(problem: dict, p_star, keeps, *, draws: int = 200, seed: int = 0) -> dict:
    """Monte-Carlo check of :math:`\\mathbb E[A^s] = A^*` and of the spread :math:`\\|A^s - A^*\\|_\\infty` (5.10).

    Args:
        problem: from :func:`two_group_problem`.
        p_star: :math:`(p^*_1, p^*_2)`.
        keeps: kept fractions :math:`S_l/N_l` to try, each in (0, 1].
        draws: sampled matrices per kept fraction (>= 2).
        seed: seed of the sampling.

    Returns:
        dict of arrays over ``keeps``: ``spread`` (mean of :math:`\\|A^s-A^*\\|_\\infty`), ``within_3se`` (the
        fraction of nodes whose Monte-Carlo mean of :math:`P^s_{ii}` is within 3 standard errors of :math:`p^*_l`; since
        :math:`A^s = AP^s` this checks :math:`\\mathbb E[A^s] = A^*`), ``row_dev`` (the Monte-Carlo mean, over draws
        and rows, of the row distance :math:`\\|a^s_n-a^*_n\\|_1`), ``row_bound`` (its value by the first step of
        (D.12), :math:`2\\sum_k p^*_k(1-S_k/N_k)\\sum_{j\\in\\mathcal N_k}A_{nj}`, averaged over the rows; in
        expectation the two are equal), ``row_bound_max`` (the largest row's (D.12) value), ``eps_510`` (the
        largest :math:`(N_l/S_l-1)\\,Lp^*_l\\psi_l`, the :math:`c_1\\mathrm{poly}(\\epsilon)` that (5.10) asks to
        be small) and ``inf_star`` (:math:`\\|A^*\\|_\\infty`).
    """
    check_instance("problem", problem, dict)
    check_array("p_star", p_star)
    check_array("keeps", keeps)
    check_seed("seed", seed)
    check_int("draws", draws, minimum=2)
    A, groups = problem["A"], problem["groups"]
    g = torch.Generator().manual_seed(seed)
    spread, within, row_dev, row_bound, row_bound_max, eps = [], [], [], [], [], []
    n_groups = int(np.max(groups)) + 1
    cols_all = A.indices()
    g_col = torch.as_tensor(np.asarray(groups))[cols_all[1]]
    # group_mass[n, k] = sum of A_nj over the columns j of group k
    group_mass = torch.zeros(A.shape[0], n_groups, dtype=torch.float64)
    group_mass.index_put_((cols_all[0], g_col), A.values().double(), accumulate=True)
    psi = sampling.group_psi(problem["sizes"], problem["mean_degree"])
    for keep in keeps:
        s = sampling.GroupSampler(A, groups, p_star, keep)
        star = s.effective.values().double()
        cols = A.indices()
        diag = torch.stack([s.diagonal(g).double() for _ in range(draws)])  # (draws, N)
        vals = diag[:, cols[1]] * A.values().double()  # the values of A^s = A P^s, draw by draw
        rows = torch.zeros(draws, A.shape[0], dtype=torch.float64).index_add_(1, cols[0], (vals - star).abs())
        spread.append(float(rows.max(1).values.mean()))
        row_dev.append(float(rows.mean()))
        frac = np.array([k / len(m) for k, m in zip(s.kept, s.members)])  # S_l / N_l as sampled
        b = group_mass @ torch.as_tensor(2 * np.asarray(p_star, dtype=float) * (1 - frac))
        row_bound.append(float(b.mean()))
        row_bound_max.append(float(b.max()))
        eps.append(float(np.max((1 / frac - 1) * n_groups * np.asarray(p_star, dtype=float) * psi)))
        # E[A^s] = A E[P^s], so the check is on the diagonal of P^s, node by node
        target = torch.as_tensor(np.asarray(p_star, dtype=float)[groups])
        se = diag.std(0) / draws**0.5
        dev = (diag.mean(0) - target).abs()
        within.append(float(torch.where(se > 0, dev <= 3 * se, dev <= 1e-6).double().mean()))
    inf_star = sampling.inf_norm(sampling.effective_adjacency(A, groups, p_star))
    return {
        "keeps": np.asarray(keeps, dtype=float),
        "spread": np.array(spread),
        "within_3se": np.array(within),
        "row_dev": np.array(row_dev),
        "row_bound": np.array(row_bound),
        "row_bound_max": np.array(row_bound_max),
        "eps_510": np.array(eps),
        "inf_star": inf_star,
    }


def symmetric_spread(problem: dict, p_star, keeps, *, draws: int = 200, seed: int = 0) -> dict:
    """The symmetric sampler of Section D.1.1, :math:`A^s = P^sAP^s` with :math:`P^s_{ii}=\\sqrt{p^*_lN_l/S_l}` on a
    kept node (0 otherwise), against :math:`A^* = P^*AP^*`, :math:`P^*_{ii}=\\sqrt{p^*_l}` (D.14)-(D.15).

    Args:
        problem: from :func:`two_group_problem`.
        p_star: :math:`(p^*_1, p^*_2)`.
        keeps: kept fractions :math:`S_l/N_l`, each in (0, 1].
        draws: sampled matrices per kept fraction (>= 2).
        seed: seed of the sampling.

    Returns:
        dict of arrays over ``keeps``: ``spread`` (mean of :math:`\\|A^s-A^*\\|_\\infty`), ``dropped_row`` (mean over
        draws of the largest row sum of :math:`A^*` among the nodes the draw drops: a dropped node's row of
        :math:`A^s` is zero, so the distance is at least this), and ``inf_star`` (:math:`\\|A^*\\|_\\infty`).
    """
    check_instance("problem", problem, dict)
    check_array("p_star", p_star)
    check_array("keeps", keeps)
    check_seed("seed", seed)
    check_int("draws", draws, minimum=2)
    A, groups = problem["A"], problem["groups"]
    g = torch.Generator().manual_seed(seed)
    rows, cols = A.indices()
    vals = A.values().double()
    root = torch.as_tensor(np.sqrt(np.asarray(p_star, dtype=float))[groups])
    star = root[rows] * root[cols] * vals
    star_rows = torch.zeros(A.shape[0], dtype=torch.float64).index_add_(0, rows, star.abs())
    spread, dropped = [], []
    for keep in keeps:
        s = sampling.GroupSampler(A, groups, p_star, keep)
        dist, drop = [], []
        for _ in range(draws):
            ps = s.diagonal(g).double().sqrt()  # sqrt(p*_l N_l / S_l) on the kept nodes, 0 elsewhere
            dev = (ps[rows] * ps[cols] * vals - star).abs()
            dist.append(float(torch.zeros(A.shape[0], dtype=torch.float64).index_add_(0, rows, dev).max()))
            off = ps == 0
            drop.append(float(star_rows[off].max()) if off.any() else 0.0)
        spread.append(np.mean(dist))
        dropped.append(np.mean(drop))
    return {"keeps": np.asarray(keeps, dtype=float), "spread": np.array(spread), "dropped_row": np.array(dropped),
            "inf_star": float(star_rows.max())}


def _check_sweep(sizes, p_star, seeds, m, steps, lr, keep, graph_seed) -> None:
    """The arguments the two sweeps share, checked before any training."""
    check_int_array("sizes", sizes, minimum=1)
    check_array("p_star", p_star, ndim=1)
    check_int_array("seeds", seeds, minimum=0)
    check_int("m", m, minimum=1)
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    check_range("keep", keep, 0.0, 1.0, lo_open=True)
    check_seed("graph_seed", graph_seed)


def omega_width_sweep(
    *,
    sizes,
    degree_pairs,
    p_star,
    omegas,
    widths,
    omega_fixed: int,
    m: int,
    steps: int,
    lr: float,
    seeds,
    keep: float = 0.9,
    graph_seed: int = 0,
) -> dict:
    """Figs 5.1 and 5.2: test error against :math:`|\\Omega|` (width ``m``) and against the width (fixed
    :math:`|\\Omega|`), one graph per degree pair, teacher (5.20) on :math:`\\hat A = A^* = AP^*`.

    All :math:`|\\Omega|` and seeds of one graph train together (one batched run); each width is one run with
    the seeds batched.

    Returns:
        dict with ``inf_star`` (G,) :math:`\\|A^*\\|_\\infty`, ``h_std`` (G,) the spread of the teacher's
        pre-activation :math:`A^*XW^*`, ``err_omega`` (G, len(omegas), len(seeds)), ``err_width``
        (G, len(widths), len(seeds)) relative test MSEs, and ``diverged`` (number of diverged runs).
    """
    if isinstance(degree_pairs, (str, bytes)) or not hasattr(degree_pairs, "__len__") or not len(degree_pairs):
        raise ValueError(f"degree_pairs must be a non-empty list of (d_1, d_2) pairs, got {degree_pairs!r}")
    for degrees in degree_pairs:
        check_int_array("degree_pairs", degrees, minimum=1)
    check_int_array("omegas", omegas, minimum=1)
    check_int_array("widths", widths, minimum=1)
    check_int("omega_fixed", omega_fixed, minimum=1)
    _check_sweep(sizes, p_star, seeds, m, steps, lr, keep, graph_seed)
    inf_star, h_std, err_omega, err_width, diverged = [], [], [], [], 0
    for degrees in degree_pairs:
        pr = two_group_problem(sizes, degrees, seed=graph_seed)
        n = pr["A"].shape[0]
        A_star = sampling.effective_adjacency(pr["A"], pr["groups"], p_star)
        Y = sin_tanh_labels(A_star, pr["X"], pr["W_star"], pr["C_star"])
        inf_star.append(sampling.inf_norm(A_star))
        h_std.append(float(torch.sparse.mm(A_star, pr["X"] @ pr["W_star"]).std()))
        r = train_sampled_gcn(
            pr,
            Y,
            label_masks(n, omegas, seeds),
            sampler="group",
            p_star=p_star,
            keep=keep,
            m=m,
            steps=steps,
            lr=lr,
            seed=graph_seed,
        )
        err_omega.append(r["test_error"].reshape(len(omegas), len(seeds)))
        diverged += int(r["diverged"])
        row = []
        for width in widths:
            r = train_sampled_gcn(
                pr,
                Y,
                label_masks(n, (omega_fixed,), seeds),
                sampler="group",
                p_star=p_star,
                keep=keep,
                m=width,
                steps=steps,
                lr=lr,
                seed=graph_seed,
            )
            row.append(r["test_error"])
            diverged += int(r["diverged"])
        err_width.append(np.stack(row))
    return {
        "inf_star": np.array(inf_star),
        "h_std": np.array(h_std),
        "err_omega": np.stack(err_omega),
        "err_width": np.stack(err_width),
        "diverged": diverged,
    }


def which_target_sweep(
    *,
    sizes,
    degrees,
    p_star,
    datasets,
    samplers,
    omega: int,
    m: int,
    steps: int,
    lr: float,
    seeds,
    keep: float = 0.9,
    graph_seed: int = 0,
) -> dict:
    """Figs 5.3 and 5.4: the test error of GCNs trained with each sampler on teachers (5.20) built on
    :math:`\\hat A = A\\hat P` for each dataset :math:`(\\hat p_1, \\hat p_2)` in ``datasets``.

    The datasets and seeds of one sampler train together (one batched run, one sampled matrix per layer and step
    shared by all copies).

    Returns:
        dict with ``err`` (len(samplers), len(datasets), len(seeds)) relative test MSEs, ``psi`` (5.9) of the
        graph and ``diverged`` (number of diverged runs).
    """
    check_int_array("degrees", degrees, minimum=1)
    if isinstance(datasets, (str, bytes)) or not hasattr(datasets, "__len__") or not len(datasets):
        raise ValueError(f"datasets must be a non-empty list of (p_1, p_2) pairs, got {datasets!r}")
    for ph in datasets:
        check_array("datasets", ph, ndim=1)
    if isinstance(samplers, (str, bytes)) or not hasattr(samplers, "__len__") or not len(samplers):
        raise ValueError(f"samplers must be a non-empty list of sampler names, got {samplers!r}")
    for name in samplers:
        check_in("samplers", name, ("group", "fastgcn", "none"))
    check_int("omega", omega, minimum=1)
    _check_sweep(sizes, p_star, seeds, m, steps, lr, keep, graph_seed)
    pr = two_group_problem(sizes, degrees, seed=graph_seed)
    n = pr["A"].shape[0]
    Ys = [
        sin_tanh_labels(sampling.effective_adjacency(pr["A"], pr["groups"], ph), pr["X"], pr["W_star"], pr["C_star"])
        for ph in datasets
    ]
    Y = torch.stack(Ys).repeat_interleave(len(seeds), 0)
    masks = label_masks(n, (omega,), seeds).repeat(len(datasets), 1)
    err, diverged = [], 0
    for name in samplers:
        r = train_sampled_gcn(
            pr, Y, masks, sampler=name, p_star=p_star, keep=keep, m=m, steps=steps, lr=lr, seed=graph_seed
        )
        err.append(r["test_error"].reshape(len(datasets), len(seeds)))
        diverged += int(r["diverged"])
    return {"err": np.stack(err), "psi": sampling.group_psi(sizes, degrees), "diverged": diverged}
