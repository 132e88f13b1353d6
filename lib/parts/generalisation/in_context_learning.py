"""In-context learning of binary tasks with a one-layer nonlinear transformer, and pruning (thesis chapter 6,
appendix E).

Data (eqs 6.6-6.8): inputs ``x = mu_j + kappa nu_k`` with ``M1`` relevant patterns ``mu`` and ``M2`` irrelevant
patterns ``nu``, pairwise orthogonal with norm ``beta``, and ``kappa ~ U(-K, K)``. A task ``(a, b)`` labels inputs
with relevant pattern ``mu_a`` by ``+1``, ``mu_b`` by ``-1`` and all others at random. A prompt (eq. 6.1) holds
``l`` context columns ``(x_i; y_i q)`` and the query column ``(x_query; 0)``; the query always carries one of the
two decisive patterns, and each context does with probability ``alpha`` (half each).

Model (eq. 6.2): the book's :class:`~lib.models.shallow_attention.ShallowAttention` with token dimension
``d_X + d_Y``, the query stored in column 0, read out at the query only (``readout="first"``), the query column
masked out of the keys (the contexts alone enter the softmax), the fixed output layer rescaled to ``a_i = ±1/m``
and the initialisation of Section 6.2.3 (``delta`` on the diagonal of ``W_V`` and on the first ``d_X`` diagonal
entries of ``W_Q, W_K``; ``W_O ~ N(0, 1/m)``). Training is online SGD on the hinge loss (eq. 6.3) through
:func:`lib.train.train`; every run of the model's leading axis gets its own prompt distribution, so seeds,
``alpha``, ``l_tr``, ``M1`` and training-task sets are trained side by side (shorter prompts are padded and their
padding masked out of the attention).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from lib.config import (
    check_array,
    check_device,
    check_in,
    check_instance,
    check_int,
    check_positive,
    check_range,
    check_seed,
)
from lib.data import prompts
from lib.models.prune import neuron_mask
from lib.models.shallow_attention import ShallowAttention
from lib.models.transformer import Transformer, TransformerConfig
from lib.train import train

__all__ = [
    "icl_banks", "cyclic_tasks", "all_tasks", "unseen_tasks", "condition_632", "ood_patterns", "sample_icl_prompts",
    "icl_model", "icl_forward", "icl_metrics", "train_icl", "neuron_rows", "projection_norms", "pruning_curve",
    "one_run", "BASELINES", "baseline_errors", "train_icl_gpt",
]


def icl_banks(m1: int = 6, m2: int = 24, d_x: int = 30, beta: float = 3.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Relevant and irrelevant patterns ``mu_j = beta e_j``, ``nu_k = beta e_{M1 + k}`` (eq. 6.6).

    Returns: ``(mu (M1, d_X), nu (M2, d_X))``.
    """
    check_int("m1", m1, minimum=2)
    check_int("m2", m2, minimum=1)
    check_int("d_x", d_x, minimum=m1 + m2)
    check_positive("beta", beta)
    bank = beta * prompts.orthonormal_bank(m1 + m2, d_x)
    return bank[:m1].contiguous(), bank[m1:].contiguous()


def cyclic_tasks(m1: int, u: int = 1) -> np.ndarray:
    """The training tasks of Section 6.5: task ``(k - 1) M1 + j`` maps ``mu_j`` to ``+1`` and ``mu_{j+k mod M1}``
    to ``-1`` (``j`` in ``[M1]``, ``k`` in ``[U]``); they meet Condition 6.3.2.

    Returns: ``(M1 U, 2)`` int array of ``(a, b)`` pattern indices (0-based).
    """
    check_int("m1", m1, minimum=2)
    check_int("u", u, minimum=1, maximum=m1 - 1)
    j = np.arange(m1)
    return np.concatenate([np.stack([j, (j + k) % m1], 1) for k in range(1, u + 1)])


def all_tasks(m1: int) -> np.ndarray:
    """All ``M1 (M1 - 1)`` ordered pairs ``(a, b)``, ``a != b`` (Definition 6.3.1)."""
    check_int("m1", m1, minimum=2)
    return np.array([(a, b) for a in range(m1) for b in range(m1) if a != b])


def unseen_tasks(tasks, m1: int) -> np.ndarray:
    """The tasks of :func:`all_tasks` that are not in ``tasks`` (``(n, 2)`` ints)."""
    tasks = _check_tasks(tasks, m1)
    seen = {tuple(t) for t in tasks.tolist()}
    return np.array([t for t in all_tasks(m1).tolist() if tuple(t) not in seen]).reshape(-1, 2)


def condition_632(tasks, m1: int) -> bool:
    """Condition 6.3.2: every pattern is mapped to ``+1`` by exactly ``|T|/M1 >= 1`` tasks, and to ``-1`` by as
    many."""
    tasks = _check_tasks(tasks, m1)
    n = len(tasks)
    if n % m1:
        return False
    pos = np.bincount(tasks[:, 0], minlength=m1)
    neg = np.bincount(tasks[:, 1], minlength=m1)
    return bool(np.all(pos == n // m1) and np.all(neg == n // m1))


def _check_tasks(tasks, m1) -> np.ndarray:
    check_int("m1", m1, minimum=2)
    try:
        t = np.asarray(tasks)
    except (TypeError, ValueError):  # a ragged nested list
        raise ValueError(f"tasks must be a non-empty (n, 2) integer array, got {type(tasks).__name__}") from None
    if t.ndim != 2 or t.shape[1] != 2 or len(t) == 0 or not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"tasks must be a non-empty (n, 2) integer array, got shape {t.shape}")
    if t.min() < 0 or t.max() >= m1 or np.any(t[:, 0] == t[:, 1]):
        raise ValueError(f"tasks must hold pairs of distinct indices in [0, {m1})")
    return t


def ood_patterns(mu: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """The three out-of-domain relevant patterns of Section 6.5: ``mu'_1 = 0.3 (mu_1 - mu_2) + a mu_5 + b mu_6``,
    ``mu'_2 = (mu_1 + mu_2)/sqrt 2``, ``mu'_3 = (mu_3 + mu_4)/sqrt 2``; orthogonal with norm ``beta`` when
    ``a^2 + b^2 = 0.82``. Coefficient sums ``S_1 = a + b``, ``S_2 = S_3 = sqrt 2``.

    Returns: ``(3, d_X)``.
    """
    check_array("mu", mu)
    if not isinstance(mu, torch.Tensor) or mu.ndim != 2 or mu.shape[0] < 6:
        raise ValueError(f"mu must be a (M1 >= 6, d) tensor, got {getattr(mu, 'shape', mu)}")
    check_range("a", a, -1.0, 1.0)
    check_range("b", b, -1.0, 1.0)
    r = math.sqrt(0.5)
    return torch.stack([0.3 * (mu[0] - mu[1]) + a * mu[4] + b * mu[5], r * (mu[0] + mu[1]), r * (mu[2] + mu[3])])


def sample_icl_prompts(n: int, relevant: torch.Tensor, irrelevant: torch.Tensor, tasks, *, length: int,
                       alpha: float, kappa: float, generator: torch.Generator, d_y: int = 30) -> dict:
    """``n`` prompts of eq. (6.1), the query in column 0.

    Each prompt draws a task ``(a, b)`` from ``tasks``, a query pattern ``a`` or ``b`` (label ``+1``/``-1``), and
    ``length`` contexts whose pattern is decisive with probability ``alpha`` (``a`` or ``b``, half each) and
    otherwise uniform over the other patterns (random label). The label embedding is ``q = e_1`` in ``R^{d_Y}``.

    Args:
        n: number of prompts.
        relevant: ``(M, d_X)`` relevant patterns; irrelevant: ``(M2, d_X)``.
        tasks: ``(T, 2)`` integer pairs indexing ``relevant``.
        length: context length ``l``.
        alpha: fraction of decisive contexts, in [0, 1].
        kappa: half-width ``K`` of the irrelevant coefficient's uniform law.
        generator: torch generator.
        d_y: label dimension.

    Returns:
        dict with ``X`` ``(n, l + 1, d_X + d_Y)``, ``z`` ``(n,)`` query labels ±1, ``pattern`` ``(n, l + 1)``
        relevant-pattern indices (query first) and ``same`` ``(n, l)`` (context shares the query's pattern).
    """
    check_array("relevant", relevant)
    check_array("irrelevant", irrelevant)
    check_int("n", n, minimum=1)
    check_int("length", length, minimum=1)
    check_range("alpha", alpha, 0.0, 1.0)
    check_positive("kappa", kappa, allow_zero=True)
    check_int("d_y", d_y, minimum=1)
    if not isinstance(generator, torch.Generator):  # None would draw from torch's global generator
        raise ValueError(f"generator must be a torch.Generator, got {generator!r}")
    m = relevant.shape[0]
    tasks = torch.as_tensor(_check_tasks(tasks, m))
    g = generator
    t = tasks[torch.randint(0, len(tasks), (n,), generator=g)]  # (n, 2)
    side = torch.randint(0, 2, (n,), generator=g)
    q_pat = torch.gather(t, 1, side.view(-1, 1))[:, 0]
    decisive = torch.rand(n, length, generator=g) < alpha
    pick = torch.gather(t, 1, torch.randint(0, 2, (n, length), generator=g))
    if m > 2:  # uniform over the patterns other than a and b
        r = torch.randint(0, m - 2, (n, length), generator=g)
        lo, hi = t.min(1, keepdim=True).values, t.max(1, keepdim=True).values
        other = r + (r >= lo).long()
        other = other + (other >= hi).long()
        pats = torch.where(decisive, pick, other)
    else:
        pats = pick
    rand_lab = 2 * torch.randint(0, 2, (n, length), generator=g) - 1
    lab = torch.where(pats == t[:, :1], 1, torch.where(pats == t[:, 1:], -1, rand_lab))
    pattern = torch.cat([q_pat.view(-1, 1), pats], 1)  # (n, l + 1)
    k = torch.randint(0, irrelevant.shape[0], (n, length + 1), generator=g)
    coef = (2 * torch.rand(n, length + 1, 1, generator=g) - 1) * kappa
    x = relevant[pattern] + coef * irrelevant[k]
    y = torch.zeros(n, length + 1, d_y)
    y[:, 1:, 0] = lab.to(y.dtype)
    z = (1 - 2 * side).to(x.dtype)
    return {"X": torch.cat([x, y], -1), "z": z, "pattern": pattern, "same": pats == q_pat.view(-1, 1)}


def icl_model(runs: int = 1, *, m: int = 200, d_x: int = 30, d_y: int = 30, delta: float = 0.2,
              seed: int = 0) -> ShallowAttention:
    """The model (6.2) with the initialisation of Section 6.2.3, ``runs`` copies side by side.

    ``W_Q^(0) = W_K^(0) = delta diag(1_{d_X}, 0)``, ``W_V^(0) = delta I``, ``W_O^(0) ~ N(0, 1/m)``, fixed
    ``a_i = ±1/m`` (half each).
    """
    check_int("runs", runs, minimum=1)
    check_int("m", m, minimum=2)
    check_int("d_x", d_x, minimum=1)
    check_int("d_y", d_y, minimum=1)
    check_range("delta", delta, 0.0, 1.0, lo_open=True)
    check_seed("seed", seed)
    d = d_x + d_y
    diag = torch.cat([torch.ones(d_x), torch.zeros(d_y)])
    qk = (delta * torch.diag(diag)).expand(runs, d, d).clone()
    g = torch.Generator().manual_seed(seed)
    model = ShallowAttention(runs, d, m, readout="first", init_qk=(qk, qk.clone()),
                             init_v=(delta * torch.eye(d)).expand(runs, d, d).clone(),
                             init_o_std=1.0 / math.sqrt(m), generator=g)
    model.a.mul_(1.0 / math.sqrt(m))  # ShallowAttention's ±1/sqrt(m) -> the thesis's ±1/m
    return model


def icl_forward(model: ShallowAttention, X: torch.Tensor, valid: torch.Tensor | None = None,
                keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs ``F`` ``(R, B)`` and the query's attention over the contexts ``(R, B, l)``.

    Args:
        model: from :func:`icl_model`.
        X: ``(R, B, l + 1, d)`` prompts, query in column 0.
        valid: ``(R, B, l)`` bool, False for padding (default all True).
        keep: ``(R, m)`` bool neuron mask (pruning; default all kept).
    """
    if X.dim() != 4:
        raise ValueError(f"X must be (R, B, l + 1, d), got {tuple(X.shape)}")
    if valid is None:
        valid = torch.ones(X.shape[:2] + (X.shape[2] - 1,), dtype=torch.bool, device=X.device)
    k = torch.einsum("rij,rblj->rbli", model.W_K, X[:, :, 1:])
    q = torch.einsum("rij,rbj->rbi", model.W_Q, X[:, :, 0])
    scores = (k @ q.unsqueeze(-1)).squeeze(-1).masked_fill(~valid, float("-inf"))
    att = torch.softmax(scores, -1)  # (R, B, l): only the query's row of the attention is needed
    z = torch.einsum("rij,rbj->rbi", model.W_V, (att.unsqueeze(-1) * X[:, :, 1:]).sum(2))
    h = torch.relu(torch.einsum("rmi,rbi->rbm", model.W_O, z))  # (R, B, m)
    if keep is None:
        return h @ model.a, att
    out = (h * (model.a * keep.to(model.a.dtype)).unsqueeze(1)).sum(-1)
    return out, att


def lucky_neurons(model: ShallowAttention, X: torch.Tensor, z: torch.Tensor, d_x: int,
                  valid: torch.Tensor | None = None) -> dict:
    """The lucky neurons of (E.31)-(E.32) on prompts ``X`` with query labels ``z``, and which neurons are active.

    With ``V^n`` the attention output (E.30) of prompt ``n`` and ``W_O``'s row ``i`` split as ``(O_{i,1}, O_{i,2})``
    (first ``d_x`` entries, the rest), neuron ``i`` is lucky for prompt ``n`` when ``O_{i,1} V_{n,1} > 0``,
    ``O_{i,2} V_{n,2} > 0`` and ``sign(a_i) = z_n`` (``W_n`` for ``z_n = +1``, ``U_n`` for ``-1``).

    Args:
        model: from :func:`icl_model`.
        X: ``(R, B, l + 1, d)`` prompts, query in column 0.
        z: ``(R, B)`` query labels ``±1``.
        d_x: size of the feature part.
        valid: ``(R, B, l)`` bool, False for padding.

    Returns:
        dict of ``(R, B, m)`` bool tensors: ``lucky`` and ``active`` (``W_O V^n > 0``).
    """
    check_instance("model", model, ShallowAttention)
    check_array("X", X)
    check_array("z", z)
    check_instance("valid", valid, (torch.Tensor, type(None)))
    if X.dim() != 4 or z.shape != X.shape[:2]:
        raise ValueError(f"X must be (R, B, l + 1, d) and z (R, B), got {tuple(X.shape)} and {tuple(z.shape)}")
    check_int("d_x", d_x, minimum=1, maximum=X.shape[-1] - 1)
    if valid is None:
        valid = torch.ones(X.shape[:2] + (X.shape[2] - 1,), dtype=torch.bool, device=X.device)
    with torch.no_grad():
        k = torch.einsum("rij,rblj->rbli", model.W_K, X[:, :, 1:])
        q = torch.einsum("rij,rbj->rbi", model.W_Q, X[:, :, 0])
        att = torch.softmax((k @ q.unsqueeze(-1)).squeeze(-1).masked_fill(~valid, float("-inf")), -1)
        v = torch.einsum("rij,rbj->rbi", model.W_V, (att.unsqueeze(-1) * X[:, :, 1:]).sum(2))  # V^n, (R, B, d)
        o = model.W_O  # (R, m, d)
        part1 = torch.einsum("rmi,rbi->rbm", o[..., :d_x], v[..., :d_x])
        part2 = torch.einsum("rmi,rbi->rbm", o[..., d_x:], v[..., d_x:])
        same_sign = torch.sign(model.a).view(1, 1, -1) == torch.sign(z).unsqueeze(-1)
    return {"lucky": (part1 > 0) & (part2 > 0) & same_sign, "active": part1 + part2 > 0}


def _stack(batches: list[dict]) -> dict:
    """Stack per-run prompt batches, padding shorter contexts (masked out)."""
    lmax = max(b["X"].shape[1] for b in batches) - 1
    X, valid, same = [], [], []
    for b in batches:
        n, lp1, d = b["X"].shape
        pad = lmax + 1 - lp1
        X.append(torch.cat([b["X"], torch.zeros(n, pad, d)], 1))
        valid.append(torch.cat([torch.ones(n, lp1 - 1, dtype=torch.bool), torch.zeros(n, pad, dtype=torch.bool)], 1))
        same.append(torch.cat([b["same"], torch.zeros(n, pad, dtype=torch.bool)], 1))
    return {"X": torch.stack(X), "valid": torch.stack(valid), "same": torch.stack(same),
            "z": torch.stack([b["z"] for b in batches])}


def _on(batch: dict, dev) -> dict:
    """A prompt batch with its tensors on ``dev`` (drawn on the CPU; a no-op there)."""
    return {k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _run_batch(configs: list[dict], n: int, generator: torch.Generator, d_y: int) -> dict:
    return _stack([sample_icl_prompts(n, c["relevant"], c["irrelevant"], c["tasks"], length=c["length"],
                                      alpha=c["alpha"], kappa=c["kappa"], generator=generator, d_y=d_y)
                   for c in configs])


def icl_metrics(model: ShallowAttention, configs: list[dict], *, n: int = 1000, seed: int = 0,
                keep: torch.Tensor | None = None, d_y: int = 30) -> dict:
    """Hinge loss, 0-1 error and same-pattern attention mass of every run on fresh prompts.

    Args:
        model: from :func:`icl_model` with ``R = len(configs)`` runs.
        configs: per run, a dict with ``relevant``, ``irrelevant``, ``tasks``, ``length``, ``alpha``, ``kappa``
            (the test distribution of that run).
        n: prompts per run.
        seed: seed of the prompts.
        keep: optional ``(R, m)`` neuron mask.

    Returns:
        dict of ``(R,)`` numpy arrays ``hinge``, ``error``, ``mass``.
    """
    check_instance("model", model, ShallowAttention)
    check_int("n", n, minimum=1)
    check_seed("seed", seed)
    if len(configs) != model.W_K.shape[0]:
        raise ValueError(f"configs must have one entry per run ({model.W_K.shape[0]}), got {len(configs)}")
    b = _run_batch(configs, n, torch.Generator().manual_seed(seed), d_y)
    with torch.no_grad():
        out, att = icl_forward(model, b["X"], b["valid"], keep)
    margin = b["z"] * out
    return {"hinge": torch.relu(1 - margin).mean(1).numpy(), "error": (margin <= 0).double().mean(1).numpy(),
            "mass": (att * b["same"]).sum(-1).mean(1).numpy()}


def _hinge(model, batch):
    out, _ = icl_forward(model, batch["X"], batch["valid"])
    return torch.relu(1 - batch["z"] * out).mean(1).sum()


def train_icl(configs: list[dict], *, m: int = 200, delta: float = 0.2, lr: float = 1.0, batch: int = 64,
              steps: int = 1500, seed: int = 0, checkpoints=(), monitor: list[dict] | None = None,
              monitor_every: int = 10, monitor_n: int = 256, d_y: int = 30, device="cpu") -> dict:
    """Train ``len(configs)`` models (6.2) side by side by online SGD on the hinge loss (eq. 6.3), each on fresh
    prompts of its own training distribution, with :func:`lib.train.train`.

    Args:
        configs: per run, the training distribution (see :func:`icl_metrics`).
        m, delta: width and initial scale.
        lr, batch, steps: SGD step ``eta``, batch ``B``, iterations ``T``.
        seed: seeds the initialisation and the prompts.
        checkpoints: iterations at which the weights are stored.
        monitor: optional per-run test distributions whose hinge loss is recorded every ``monitor_every`` steps
            (on ``monitor_n`` fixed prompts per run).
        device: where to train (:func:`lib.config.check_device`); initialisation and prompts are drawn on the
            CPU from the same seeds and moved there; ``model`` (moved back) and ``states`` come back on the CPU.

    Returns:
        dict with ``model``, ``checkpoints`` (steps), ``states`` (list of state dicts), ``loss_steps`` and
        ``loss`` (the total training loss, recorded at the checkpoints and the final step), ``monitor_steps`` and
        ``monitor_hinge`` ``(n_records, R)``, and :func:`lib.train.train`'s ``diverged`` and ``diverged_step`` (the
        histories stop there).
    """
    check_instance("configs", configs, (list, tuple))
    check_int("steps", steps, minimum=1)
    check_int("batch", batch, minimum=1)
    check_positive("lr", lr)
    check_int("monitor_every", monitor_every, minimum=1)
    check_int("monitor_n", monitor_n, minimum=1)
    dev = check_device("device", device)
    if not configs:
        raise ValueError("configs must be a non-empty list of per-run prompt distributions")
    model = icl_model(len(configs), m=m, d_y=d_y, d_x=configs[0]["relevant"].shape[1], delta=delta, seed=seed)
    ckpts = sorted({int(c) for c in checkpoints if 0 <= int(c) <= steps})
    states, mon_steps, mon = {}, [], []
    fixed = None
    if monitor is not None:
        fixed = _on(_run_batch(monitor, monitor_n, torch.Generator().manual_seed(seed + 7), d_y), dev)

    def snapshot(params, step):
        if step in ckpts:
            states[step] = {k: v.detach().cpu().clone() for k, v in params.state_dict().items()}
        if fixed is not None and step % monitor_every == 0:
            with torch.no_grad():
                out, _ = icl_forward(params, fixed["X"], fixed["valid"])
            mon_steps.append(step)
            mon.append(torch.relu(1 - fixed["z"] * out).mean(1).cpu().numpy())
        return {}

    every = sorted(set(ckpts) | {steps} | (set(range(0, steps + 1, monitor_every)) if fixed is not None else set()))
    res = train(model, _hinge, lr=lr, steps=steps, optimizer="sgd",
                batch_fn=lambda step, g: _on(_run_batch(configs, batch, g, d_y), dev), record=snapshot,
                record_every=every, generator=torch.Generator().manual_seed(seed + 1), progress=False, device=dev)
    model.to("cpu")  # back where the analysis functions expect it (a no-op on the CPU)
    keep = [c for c in ckpts if c in states]
    return {"model": model, "checkpoints": np.array(keep), "states": [states[c] for c in keep],
            "loss_steps": np.asarray(res.history["step"]), "loss": np.asarray(res.history["loss"]),
            "monitor_steps": np.array(mon_steps),
            "monitor_hinge": np.array(mon).reshape(len(mon_steps), len(configs)),
            "diverged": res.diverged, "diverged_step": res.diverged_step}


def neuron_rows(model: ShallowAttention) -> torch.Tensor:
    """The rows ``r_i`` of ``W_O W_V`` (Theorem 6.3.7): ``(R, m, d_X + d_Y)``."""
    check_instance("model", model, ShallowAttention)
    return (model.W_O @ model.W_V).detach()


def projection_norms(model: ShallowAttention, X: torch.Tensor, pattern: torch.Tensor, relevant: torch.Tensor):
    """Norms of ``W_Q p_query``, ``W_K p_i`` and of their components along ``(XDR(p)/beta; 0)`` (eq. 6.17).

    Args:
        X: ``(R, B, l + 1, d)`` prompts, query first; pattern: ``(B, l + 1)`` relevant-pattern indices.
        relevant: ``(M, d_X)`` the relevant patterns of the prompts.

    Returns:
        ``(R, 4)`` numpy: mean norm of ``W_Q p_query``, its projection, mean norm of ``W_K p_i``, its projection.
    """
    check_instance("model", model, ShallowAttention)
    for name, value, ndim in (("X", X, 4), ("relevant", relevant, 2)):
        if not torch.is_tensor(value):
            raise ValueError(f"{name} must be a tensor, got {type(value).__name__}")
        check_array(name, value, ndim=ndim)
    if not torch.is_tensor(pattern) or pattern.is_floating_point() or pattern.dim() != 2 \
            or pattern.shape != X.shape[1:3] or pattern.min() < 0 or pattern.max() >= relevant.shape[0]:
        raise ValueError(f"pattern must be an integer tensor (B, l + 1) = {tuple(X.shape[1:3])} of indices into "
                         f"relevant, got {pattern!r}")
    with torch.no_grad():
        u = relevant[pattern] / relevant.norm(dim=-1).mean()  # (B, l + 1, d_X)
        u = torch.cat([u, torch.zeros(u.shape[:-1] + (X.shape[-1] - u.shape[-1],))], -1)
        wq = torch.einsum("rij,rbj->rbi", model.W_Q, X[:, :, 0])
        wk = torch.einsum("rij,rblj->rbli", model.W_K, X[:, :, 1:])
        pq = (wq * u[:, 0]).sum(-1).abs()
        pk = (wk * u[:, 1:]).sum(-1).abs()
        return torch.stack([wq.norm(dim=-1).mean(1), pq.mean(1), wk.norm(dim=-1).mean((1, 2)),
                            pk.mean((1, 2))], -1).numpy()


def pruning_curve(model: ShallowAttention, config: dict, rates, method: str = "magnitude", *, run: int = 0,
                  n: int = 2000, draws: int = 5, seed: int = 0) -> dict:
    """Hinge loss and 0-1 error of run ``run`` after pruning a fraction of the ``W_O`` neurons (Theorem 6.3.7).

    The neurons are scored by the norms of the rows ``r_i`` of ``W_O W_V``; pruning masks them at evaluation
    (:func:`lib.models.prune.neuron_mask`); ``"random"`` averages ``draws`` random masks. One batch of ``n``
    prompts of ``config`` serves every rate.

    Returns:
        dict with ``rates``, ``hinge`` and ``error`` (numpy, one entry per rate).
    """
    check_instance("model", model, ShallowAttention)
    rates = check_array("rates", rates, ndim=1)
    if rates.ndim != 1 or len(rates) == 0 or np.any(rates < 0) or np.any(rates > 1):
        raise ValueError(f"rates must be a non-empty 1-d array in [0, 1], got {rates}")
    check_in("method", method, ("magnitude", "largest", "random"))
    check_int("n", n, minimum=1)
    check_int("draws", draws, minimum=1)
    check_seed("seed", seed)
    check_int("run", run, minimum=0, maximum=model.W_K.shape[0] - 1)
    b = _run_batch([config], n, torch.Generator().manual_seed(seed), config.get("d_y", 30))
    X, valid, z = b["X"], b["valid"], b["z"]
    single = one_run(model, run)
    scores = neuron_rows(single).norm(dim=-1)  # (1, m)
    g = torch.Generator().manual_seed(seed + 1)
    hinge, error = [], []
    with torch.no_grad():
        for rate in rates:
            h, e = [], []
            for _ in range(draws if method == "random" else 1):
                out, _ = icl_forward(single, X, valid, neuron_mask(scores, float(rate), method, generator=g))
                h.append(float(torch.relu(1 - z * out).mean()))
                e.append(float((z * out <= 0).double().mean()))
            hinge.append(np.mean(h))
            error.append(np.mean(e))
    return {"rates": rates, "hinge": np.array(hinge), "error": np.array(error)}


def one_run(model: ShallowAttention, run: int = 0) -> ShallowAttention:
    """A one-run copy of run ``run`` of ``model`` (a model of :func:`icl_model`)."""
    check_instance("model", model, ShallowAttention)
    check_int("run", run, minimum=0, maximum=model.W_K.shape[0] - 1)
    m, d = model.W_O.shape[1], model.W_K.shape[1]
    one = ShallowAttention(1, d, m, d_v=model.W_V.shape[1], readout="first")
    with torch.no_grad():
        for name in ("W_K", "W_Q", "W_V", "W_O"):
            getattr(one, name).copy_(getattr(model, name)[run:run + 1])
        one.a.copy_(model.a)
    return one


#: the per-prompt scikit-learn classifiers :func:`baseline_errors` compares the transformer with
BASELINES = ("logistic regression", "SVM (linear)", "SVM (rbf)", "1-NN", "3-NN")


def baseline_errors(X: torch.Tensor, z: torch.Tensor, length: int, methods=BASELINES, d_x: int = 30) -> dict:
    """0-1 errors of classical classifiers fitted, prompt by prompt, on the first ``length`` contexts and
    evaluated on the query (Fig 6.4). A prompt whose contexts hold one label predicts that label.

    Args:
        X: ``(B, l + 1, d)`` prompts of :func:`sample_icl_prompts` (one run), query first.
        z: ``(B,)`` query labels.
        length: number of contexts used (``1 <= length <= l``).
        methods: names from :data:`BASELINES`.

    Returns:
        dict method -> error (float).
    """
    check_array("X", X)
    check_array("z", z)
    check_int("d_x", d_x, minimum=1)
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    check_int("length", length, minimum=1, maximum=X.shape[1] - 1)
    for name in methods:
        check_in("methods", name, BASELINES)
    make = {"logistic regression": lambda: LogisticRegression(),
            "SVM (linear)": lambda: SVC(kernel="linear"), "SVM (rbf)": lambda: SVC(kernel="rbf"),
            "1-NN": lambda: KNeighborsClassifier(1), "3-NN": lambda: KNeighborsClassifier(3)}
    xs = X[:, 1:length + 1, :d_x].numpy().astype(float)
    ys = np.sign(X[:, 1:length + 1, d_x].numpy()).astype(int)
    xq = X[:, 0, :d_x].numpy().astype(float)
    zq = z.numpy()
    out = {}
    one_label = np.array([len(np.unique(y)) == 1 for y in ys])
    # k-nearest neighbours for all prompts at once (Euclidean distances, majority vote; with continuous inputs
    # and an odd k <= length this is what KNeighborsClassifier predicts, without one fit per prompt)
    order = np.argsort(((xs - xq[:, None, :]) ** 2).sum(-1), axis=1, kind="stable")
    for name in methods:
        k = {"1-NN": 1, "3-NN": 3}.get(name)
        if k is not None and min(k, length) % 2 == 1:
            votes = np.take_along_axis(ys, order[:, : min(k, length)], axis=1).sum(1)
            pred = np.where(one_label, ys[:, 0], np.sign(votes))
            out[name] = float(np.mean(pred != zq))
            continue
        wrong = 0
        for i in range(len(zq)):
            labels = np.unique(ys[i])
            if len(labels) == 1:
                pred = labels[0]
            else:
                clf = make[name]()
                if name == "3-NN" and length < 3:
                    clf = KNeighborsClassifier(length)
                pred = clf.fit(xs[i], ys[i]).predict(xq[i:i + 1])[0]
            wrong += int(pred != zq[i])
        out[name] = wrong / len(zq)
    return out


def train_icl_gpt(train_config: dict, tests: list[dict], *, d_model: int = 64, n_layers: int = 3, n_heads: int = 2,
                  lr: float = 1e-3, batch: int = 64, steps: int = 1000, n_test: int = 1000, seed: int = 0,
                  device="cpu") -> dict:
    """The GPT-2 stand-in of Fig 6.3: a causal pre-LayerNorm transformer (:mod:`lib.models.transformer`, FFN,
    learned positions, ``n_layers`` layers of ``n_heads`` heads) reads a prompt as its sequence of columns, the
    contexts first and the query last, and is trained with Adam on the logistic loss of its output at the query.

    Args:
        train_config: the training distribution (see :func:`icl_metrics`).
        tests: test distributions; the 0-1 error on ``n_test`` prompts of each is returned.
        d_model, n_layers, n_heads: the architecture.
        lr, batch, steps: Adam step, batch and iterations.
        seed: seeds the initialisation, training and test prompts.
        device: where to train and test (:func:`lib.config.check_device`; prompts drawn on the CPU, moved).

    Returns:
        dict with ``error`` (numpy, one per test; NaN if the training diverged), ``loss`` (training loss at the
        recorded steps), and :func:`lib.train.train`'s ``diverged`` and ``diverged_step``.
    """
    check_instance("train_config", train_config, dict)
    check_instance("tests", tests, (list, tuple))
    check_int("batch", batch, minimum=1)
    check_int("d_model", d_model, minimum=2)
    check_int("steps", steps, minimum=1)
    check_int("n_test", n_test, minimum=1)
    check_positive("lr", lr)
    check_seed("seed", seed)
    dev = check_device("device", device)
    d = train_config["relevant"].shape[1] + train_config.get("d_y", 30)
    length = max([train_config["length"]] + [t["length"] for t in tests])
    torch.manual_seed(seed)
    cfg = TransformerConfig(d_in=d, d_model=d_model, n_layers=n_layers, n_heads=n_heads, rpe="none",
                            learned_pos=True, max_len=length + 1, causal="standard", ffn=True, layer_norm=True,
                            d_out=1, bias=True)
    model = Transformer(cfg)

    def as_sequence(X):  # query last
        return torch.cat([X[:, 1:], X[:, :1]], 1)

    def loss_fn(m, b):
        out = m(as_sequence(b["X"][0]))[:, -1, 0]
        return torch.nn.functional.softplus(-b["z"][0] * out).mean()

    res = train(model, loss_fn, lr=lr, steps=steps, optimizer="adam", record_every=max(1, steps // 20),
                batch_fn=lambda step, g: _on(_run_batch([train_config], batch, g, train_config.get("d_y", 30)), dev),
                generator=torch.Generator().manual_seed(seed + 1), progress=False, device=dev)
    errors = []
    with torch.no_grad():
        for i, t in enumerate(tests):
            b = _on(_run_batch([t], n_test, torch.Generator().manual_seed(seed + 100 + i), t.get("d_y", 30)), dev)
            out = model(as_sequence(b["X"][0]))[:, -1, 0]
            errors.append(float((b["z"][0] * out <= 0).double().mean()))
    if res.diverged:  # a diverged model's test error says nothing about in-context learning
        errors = [float("nan")] * len(errors)
    return {"error": np.array(errors), "loss": np.asarray(res.history["loss"]), "diverged": res.diverged,
            "diverged_step": res.diverged_step}
