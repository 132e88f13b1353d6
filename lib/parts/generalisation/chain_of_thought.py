"""Chain-of-thought with a one-layer attention-only transformer (thesis chapter 7, appendix F).

The model (eq. 7.2) is the attention-only special case of a shallow attention block: ``F(P) = sum_i W_V p_i
softmax(p_i^T W p_query)`` with ``W = W_K^T W_Q`` trained and ``W_V = (0 I 0)`` fixed, the sum running over all
columns but the query. Positional codes ``c_k`` are one-hot in ``K`` extra coordinates. Training is online SGD on
the squared loss (eq. 7.3) through :func:`lib.train.train`; inference is greedy decoding step by step (CoT, eqs
7.5-7.6) or in one step (ICL, eq. 7.8). :func:`transition_stats` computes the quantities of Definition 7.3.1 and
Condition 7.3.2; :func:`oracle_errors` is the majority vote that a perfectly trained model implements.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from lib import curves
from lib.config import (
    check_array,
    check_bool,
    check_device,
    check_in,
    check_instance,
    check_int,
    check_int_array,
    check_positive,
    check_range,
    check_seed,
    renamed_arguments,
)
from lib.data import prompts
from lib.train import train

__all__ = [
    "AttentionOnlyCoT",
    "transition_stats",
    "step_transitions",
    "cot_training_batch",
    "hand_built_weight",
    "train_cot",
    "cot_inference",
    "icl_inference",
    "oracle_errors",
    "sample_test_prompts",
    "error_curves",
    "attention_dynamics",
    "FIG75_HOLD",
    "FIG75_FAIL",
    "fig75_transitions",
]

TYPE_NAMES = ("same pattern, same step", "same pattern, other step", "other pattern, same step",
              "other pattern, other step")


class AttentionOnlyCoT(nn.Module):
    """One-layer single-head attention-only transformer of thesis eq. (7.2).

    This is the attention-only special case of the shallow attention block: no MLP, value matrix fixed to read the
    output half of a column, only ``W = W_K^T W_Q`` is trained.

    Args:
        d: token dimension ``d_X``.
        n_steps: ``K``; a column has ``2 d + K`` entries.
        init_std: standard deviation ``xi`` of the Gaussian initial ``W`` (> 0).
        seed: seed of the initialisation.
    """

    def __init__(self, d: int, n_steps: int, init_std: float = 0.01, seed: int = 0):
        super().__init__()
        check_int("d", d, minimum=1)
        check_int("n_steps", n_steps, minimum=1)
        check_positive("init_std", init_std)
        check_seed("seed", seed)
        self.d, self.n_steps = d, n_steps
        dim = 2 * d + n_steps
        g = torch.Generator().manual_seed(seed)
        self.W = nn.Parameter(init_std * torch.randn(dim, dim, generator=g))

    def forward(self, keys: torch.Tensor, query: torch.Tensor, valid: torch.Tensor | None = None):
        """Output and attention weights.

        Args:
            keys: ``(batch, L, 2 d + K)`` context columns (the query column excluded).
            query: ``(batch, 2 d + K)`` the query column.
            valid: optional ``(batch, L)`` bool mask of the keys that exist.

        Returns:
            ``(output (batch, d), attention (batch, L))``.
        """
        scores = keys @ (self.W @ query.unsqueeze(-1))
        scores = scores.squeeze(-1)
        if valid is not None:
            scores = scores.masked_fill(~valid, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        out = (attn.unsqueeze(-1) * keys[..., self.d:2 * self.d]).sum(1)
        return out, attn


def _check_task(A, steps) -> tuple[list, list]:
    """``A`` and ``steps`` of a task as lists of float and integer arrays, with errors naming them."""
    if not isinstance(A, (list, tuple)) or not A:
        raise ValueError(f"A must be a non-empty list of (M', M') arrays, got {type(A).__name__}")
    if not isinstance(steps, (list, tuple)) or not steps:
        raise ValueError(f"steps must be a non-empty list of integer arrays, got {type(steps).__name__}")
    A = [check_array("A", a, ndim=2) for a in A]
    return A, [check_int_array("steps", s, minimum=0) for s in steps]


def transition_stats(A, steps) -> dict:
    """Step-wise transition statistics of a test task (thesis eqs 7.12, 7.13, 7.17, 7.18, Condition 7.3.2).

    Args:
        A: list of ``K`` row-stochastic ``(M', M')`` arrays, ``A[k][i, j]`` the probability that an example's step
            ``k + 1`` maps pattern ``i`` to pattern ``j``.
        steps: list of ``K`` integer arrays, ``steps[k][i]`` the index of ``f_{k+1}(mu'_i)``.

    Returns:
        dict with ``tau`` (min over inputs of the probability of the correct chain), ``tau_o`` (min over rows of
        the largest entry of ``B``), ``rho`` (primacy of the ``A_k``: the largest rho with ``A_k(i, j*) >=
        A_k(i, j) / (1 - rho)``; negative when a wrong transition is the likeliest), ``rho_o`` (primacy of ``B``
        with ``j*`` the row's argmax), ``B`` (the product of the ``A_k``) and ``condition`` (Condition 7.3.2:
        every row's argmax of ``B`` is the correct final pattern).
    """
    A, steps = _check_task(A, steps)
    if len(A) == 0 or len(A) != len(steps):
        raise ValueError(f"A and steps must be non-empty lists of equal length, got {len(A)} and {len(steps)}")
    m = A[0].shape[0]
    for k, (a, s) in enumerate(zip(A, steps)):
        if a.shape != (m, m) or s.shape != (m,):
            raise ValueError(f"A[{k}] must be ({m}, {m}) and steps[{k}] ({m},), got {a.shape} and {s.shape}")
        if np.any(a < 0) or not np.allclose(a.sum(1), 1.0, atol=1e-8):
            raise ValueError(f"A[{k}] must be row-stochastic")
        if s.min() < 0 or s.max() >= m:
            raise ValueError(f"steps[{k}] must hold indices in [0, {m})")
    rows = np.arange(m)
    cur, prob, ratio = rows.copy(), np.ones(m), 0.0
    for a, s in zip(A, steps):
        nxt = s[cur]
        prob = prob * a[cur, nxt]
        cur = nxt
        correct = a[rows, s]
        others = a.copy()
        others[rows, s] = -np.inf
        ratio = max(ratio, float(np.max(others.max(1) / np.maximum(correct, 1e-300))))
    B = A[0]
    for a in A[1:]:
        B = B @ a
    best = B.argmax(1)
    b_others = B.copy()
    b_others[rows, best] = -np.inf
    rho_o = 1.0 - float(np.max(b_others.max(1) / B[rows, best])) if m > 1 else 1.0
    return {"tau": float(prob.min()), "tau_o": float(B.max(1).min()), "rho": 1.0 - ratio, "rho_o": rho_o,
            "B": B, "condition": bool(np.all(best == cur))}


def step_transitions(step_maps: torch.Tensor, tau: float, rho: float, *, mode: str = "distractor",
                     generator: torch.Generator | None = None) -> torch.Tensor:
    """Row-stochastic step matrices ``A_k`` with the correct transition at probability ``p = tau^(1/K)``.

    ``mode="distractor"``: in every row one random wrong pattern gets ``(1 - rho) p``, the rest share what is left
    evenly, so the correct chain has probability ``tau`` and the primacy is ``rho``. ``mode="condition_fail"``:
    the distractors are chosen so that every chain with exactly one wrong step ends at the same wrong final
    pattern, which breaks Condition 7.3.2 once ``3 (1 - rho) p^K`` outweighs ``p^K`` (for ``K = 3``). Needs
    ``p (2 - rho) <= 1``.

    Args:
        step_maps: ``(batch, K, m)`` correct step maps (see :func:`lib.data.prompts.shift_tasks`).
        tau: in (0, 1].
        rho: in (0, 1].
        mode: ``"distractor"`` or ``"condition_fail"``.
        generator: torch generator for the random distractors.

    Returns:
        ``(batch, K, m, m)`` float tensor.
    """
    check_array("step_maps", step_maps)
    check_instance("generator", generator, (torch.Generator, type(None)))
    check_range("tau", tau, 0.0, 1.0, lo_open=True)
    check_range("rho", rho, 0.0, 1.0, lo_open=True)
    check_in("mode", mode, ("distractor", "condition_fail"))
    batch, n_steps, m = step_maps.shape
    if m < 3:
        raise ValueError(f"step_transitions needs at least 3 patterns, got {m}")
    p = tau ** (1.0 / n_steps)
    if p * (2.0 - rho) > 1.0 + 1e-12:
        raise ValueError(f"tau={tau} and rho={rho} give p (2 - rho) = {p * (2 - rho):.3f} > 1; lower tau or raise rho")
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    if mode == "distractor":
        off = 1 + torch.randint(0, m - 1, (batch, n_steps, m), generator=generator)
        distract = (step_maps + off) % m
    else:
        # a wrong final map w(i) = f(i + 1 mod m); single-error chains all end at w(i)
        rows = torch.arange(m).expand(batch, m)
        inv = [torch.argsort(step_maps[:, k], dim=1) for k in range(n_steps)]
        chain = prompts.follow_steps(step_maps, rows)  # (batch, m, K + 1)
        wrong_final = torch.gather(chain[..., -1], 1, (rows + 1) % m)
        distract = torch.empty_like(step_maps)
        for k in range(n_steps):
            target = wrong_final  # pattern the wrong step must lead to after the correct later steps
            for later in range(n_steps - 1, k, -1):
                target = torch.gather(inv[later], 1, target)
            distract[:, k].scatter_(1, chain[..., k], target)
    A = torch.full((batch, n_steps, m, m), (1.0 - p * (2.0 - rho)) / (m - 2))
    A.scatter_(3, distract.unsqueeze(-1), (1.0 - rho) * p)
    A.scatter_(3, step_maps.unsqueeze(-1), p)
    return A


def cot_training_batch(batch: int, *, n_examples: int, alpha: float, n_patterns: int, d: int, n_steps: int,
                       generator: torch.Generator) -> dict:
    """One batch of CoT training prompts (thesis eq. 7.1) on the TRR patterns ``e_1..e_M``.

    Every prompt has a fresh permutation-shift task, a uniform query pattern, a uniform step ``k`` and
    ``n_examples`` clean, correct examples whose first input is the query's pattern with probability ``alpha``.

    Returns:
        dict with ``keys`` ``(batch, n K + K, 2 d + K)``, ``valid`` (bool mask), ``query`` ``(batch, 2 d + K)`` and
        ``target`` ``(batch, d)``.
    """
    check_int("n_examples", n_examples, minimum=1)
    check_int("n_patterns", n_patterns, minimum=1)
    check_int("d", d, minimum=1)
    check_int("n_steps", n_steps, minimum=1)
    bank = prompts.orthonormal_bank(n_patterns, d)
    maps = prompts.shift_tasks(batch, n_patterns, n_steps, generator=generator)
    q = torch.randint(0, n_patterns, (batch,), generator=generator)
    k = torch.randint(1, n_steps + 1, (batch,), generator=generator)
    starts = prompts.context_starts(q, n_examples, n_patterns, alpha, generator=generator)
    ctx = prompts.cot_columns(bank[prompts.follow_steps(maps, starts)])
    qchain = bank[prompts.follow_steps(maps, q.unsqueeze(1))[:, 0]]  # (batch, K + 1, d)
    qcols, qvalid = prompts.query_columns(qchain, k, n_steps)
    rows = torch.arange(batch)
    keys = torch.cat([ctx, qcols], dim=1)
    valid = torch.cat([torch.ones(batch, ctx.shape[1], dtype=torch.bool), qvalid], dim=1)
    return {"keys": keys, "valid": valid, "query": qcols[rows, k - 1], "target": qchain[rows, k]}


def hand_built_weight(d: int, n_steps: int, pattern_gain: float = 40.0, step_gain: float = 40.0) -> torch.Tensor:
    """A weight that implements the mechanism of Proposition 3 by hand: ``W = a I`` on the input block plus
    ``b I`` on the positional block, so a query attends to the columns of its own step whose input matches its
    input.

    Returns:
        ``(2 d + K, 2 d + K)`` tensor.
    """
    check_int("d", d, minimum=1)
    check_int("n_steps", n_steps, minimum=1)
    check_positive("pattern_gain", pattern_gain)
    check_positive("step_gain", step_gain)
    W = torch.zeros(2 * d + n_steps, 2 * d + n_steps)
    W[:d, :d] = pattern_gain * torch.eye(d)
    W[2 * d:, 2 * d:] = step_gain * torch.eye(n_steps)
    return W


def _loss(model, batch):
    out, _ = model(batch["keys"], batch["query"], batch["valid"])
    return 0.5 * ((out - batch["target"]) ** 2).sum(-1).mean()


def train_cot(*, d: int = 30, n_patterns: int = 20, n_steps: int = 3, n_examples: int = 20, alpha: float = 0.4,
              batch: int = 128, lr: float = 1.0, steps: int = 600, init_std: float = 0.01, seed: int = 0,
              checkpoints=(), device="cpu") -> dict:
    """Train the model of eq. (7.2) by online SGD on the squared loss (eq. 7.3) with :func:`lib.train.train`.

    Args:
        d, n_patterns, n_steps: ``d_X``, ``M``, ``K``.
        n_examples: ``l_tr`` context examples per prompt.
        alpha: fraction of examples sharing the query's TRR pattern.
        batch, lr, steps: SGD batch ``B``, step size ``eta``, iterations ``T``.
        init_std: ``xi`` of ``W^(0)``.
        seed: seeds the initialisation and the prompts.
        checkpoints: iterations at which ``W`` is stored (besides the last).
        device: where to train (:func:`lib.config.check_device`); initialisation and prompts are drawn on the
            CPU from the same seeds and moved there; the returned arrays are CPU NumPy arrays.

    Returns:
        dict with ``W`` (final, numpy), ``checkpoints`` (steps), ``Ws`` ``(n_ckpt, D, D)`` (``W`` at each
        checkpoint), ``step`` and ``loss`` (the training loss, recorded only at the checkpoints and the final
        step: with the default ``checkpoints=()`` they hold one value, the final one) and ``diverged``
        (:func:`lib.train.train`'s flag).
    """
    check_int("steps", steps, minimum=1)
    check_int("batch", batch, minimum=1)
    check_int("n_examples", n_examples, minimum=1)
    check_range("alpha", alpha, 0.0, 1.0, lo_open=True)
    check_positive("lr", lr)
    dev = check_device("device", device)
    model = AttentionOnlyCoT(d, n_steps, init_std, seed)
    ckpts = sorted({int(c) for c in checkpoints if 0 <= int(c) <= steps} | {steps})
    stored = {}

    def batch_fn(step, generator):
        b = cot_training_batch(batch, n_examples=n_examples, alpha=alpha, n_patterns=n_patterns, d=d,
                               n_steps=n_steps, generator=generator)
        return {k: v.to(dev) for k, v in b.items()}  # drawn on the CPU, then moved (no-ops there)

    def record(params, step):
        if step in ckpts:
            stored[step] = params.W.detach().cpu().clone().numpy()
        return {}

    if 0 in ckpts:
        stored[0] = model.W.detach().clone().numpy()
    res = train(model, _loss, lr=lr, steps=steps, optimizer="sgd", batch_fn=batch_fn, record=record,
                record_every=ckpts, generator=torch.Generator().manual_seed(seed + 1), progress=False, device=dev)
    stored[steps] = model.W.detach().cpu().clone().numpy()
    keep = [c for c in ckpts if c in stored]
    return {"W": stored[steps], "checkpoints": np.array(keep), "Ws": np.stack([stored[c] for c in keep]),
            "step": np.asarray(res.history["step"]), "loss": np.asarray(res.history["loss"]),
            "diverged": bool(getattr(res, "diverged", False))}


#: the two kinds of chain of :func:`fig75_transitions`: (tau, rho) of the chains that keep Condition 7.3.2 (correct
#: final pattern 0.4, the converging wrong one 3 (1 - rho) tau = 0.36) and of those that break it (correct 0.36,
#: wrong 3 * 0.37 * 0.36 = 0.40); either way the row's second-largest entry of B is 0.9 of its largest
FIG75_HOLD, FIG75_FAIL = (0.4, 0.7), (0.36, 0.63)


def fig75_transitions(step_maps: torch.Tensor, *, fail_share: float = 0.3,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """Step matrices at the thesis's Fig 7.5 setting, ``tau_o = 0.4`` and ``rho_o = 0.1``, on which Condition 7.3.2
    holds on some rows of ``B`` and fails on others.

    Every chain (starting pattern) gets the distractors of ``mode="condition_fail"`` of :func:`step_transitions`
    (every chain with exactly one wrong step ends at the same wrong final pattern), with ``(tau, rho) =``
    :data:`FIG75_HOLD` or, with probability ``fail_share``, :data:`FIG75_FAIL`. Since the step maps are
    permutations, the rows a chain visits belong to it alone, so the two kinds mix without interfering.

    Args:
        step_maps: ``(batch, K, m)`` correct step maps, ``K = 3``.
        fail_share: probability that a chain breaks the condition, in [0, 1].
        generator: torch generator.

    Returns:
        ``(batch, K, m, m)`` float tensor.
    """
    check_array("step_maps", step_maps)
    check_instance("generator", generator, (torch.Generator, type(None)))
    check_range("fail_share", fail_share, 0.0, 1.0)
    batch, n_steps, m = step_maps.shape
    if n_steps != 3:
        raise ValueError(f"fig75_transitions needs K = 3 steps, got {n_steps}")
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    hold = step_transitions(step_maps, *FIG75_HOLD, mode="condition_fail", generator=generator)
    fail = step_transitions(step_maps, *FIG75_FAIL, mode="condition_fail", generator=generator)
    pick = torch.rand(batch, m, generator=generator) < fail_share  # per starting pattern
    chain = prompts.follow_steps(step_maps, torch.arange(m).expand(batch, m))  # (batch, m, K + 1)
    A = hold.clone()
    for k in range(n_steps):
        rows = torch.zeros(batch, m, dtype=torch.bool).scatter_(1, chain[..., k], pick)
        A[:, k][rows] = fail[:, k][rows]
    return A


@renamed_arguments(n_trr="n_patterns", n_tsr="n_test_patterns")
def sample_test_prompts(n_queries, n_examples, alpha, tau, rho, mode, d, n_patterns, n_test_patterns, n_steps, noise,
                        seed):
    """Test prompts of eqs (7.4), (7.11), (7.12): one task, step matrices and prompt per query.

    ``n_patterns`` is the thesis's ``M`` (TRR patterns, as in :func:`train_cot`) and ``n_test_patterns`` its ``M'``
    (TSR patterns); the old names ``n_trr`` and ``n_tsr`` still work for one release, with a ``DeprecationWarning``.

    Returns:
        ``(tsr, idx, tokens, truth, row_ok)``: the TSR patterns ``(n_test_patterns, d)``, the context chains'
        pattern indices ``(n, l, K + 1)``, their noisy tokens ``(n, l, K + 1, d)``, the query's true chain
        ``(n, K + 1)`` and whether Condition 7.3.2 holds on the query's row of ``B``.
    """
    for name, value in (("n_queries", n_queries), ("n_examples", n_examples), ("d", d), ("n_patterns", n_patterns),
                        ("n_test_patterns", n_test_patterns), ("n_steps", n_steps)):
        check_int(name, value, minimum=1)
    check_positive("noise", noise, allow_zero=True)
    check_seed("seed", seed)
    g = torch.Generator().manual_seed(seed)
    trr = prompts.orthonormal_bank(n_patterns, d)
    tsr = prompts.subframe(trr, n_test_patterns, generator=g)
    maps = prompts.shift_tasks(n_queries, n_test_patterns, n_steps, generator=g)
    if mode == "fig75":  # the thesis's Fig 7.5 setting; tau and rho are not used
        A = fig75_transitions(maps, generator=g)
    else:
        A = step_transitions(maps, tau, rho, mode=mode, generator=g)
    q = torch.randint(0, n_test_patterns, (n_queries,), generator=g)
    starts = prompts.context_starts(q, n_examples, n_test_patterns, alpha, generator=g)
    idx = prompts.sample_chains(A, starts, generator=g)  # (n, l, K + 1)
    tokens = tsr[idx] + prompts.orthogonal_noise(tuple(idx.shape), tsr, noise, generator=g)
    truth = prompts.follow_steps(maps, q.unsqueeze(1))[:, 0]  # (n, K + 1)
    B = A[:, 0]
    for k in range(1, n_steps):
        B = B @ A[:, k]
    row_ok = B[torch.arange(n_queries), q].argmax(-1) == truth[:, -1]  # Condition 7.3.2 on the query's row
    return tsr, idx, tokens, truth, row_ok


def _check_weight(W, d: int, n_steps: int) -> None:
    """``W`` must be ``(2 d + K, 2 d + K)``: a weight trained with other sizes is refused, naming ``d``."""
    size = 2 * d + n_steps
    if np.shape(W) != (size, size):
        raise ValueError(f"W must have shape ({size}, {size}) = (2 d + n_steps,) * 2 for d={d}, n_steps={n_steps}, "
                         f"got {np.shape(W)}: pass the d and n_steps W was trained with")


def _decode(out, tsr):
    return torch.cdist(out, tsr).argmin(-1)


@renamed_arguments(n_trr="n_patterns", n_tsr="n_test_patterns")
def cot_inference(W, *, n_queries: int = 300, n_examples: int = 20, alpha: float = 0.8, tau: float = 0.5,
                  rho: float = 0.8, mode: str = "distractor", d: int = 30, n_patterns: int = 20,
                  n_test_patterns: int = 10, n_steps: int = 3, noise: float = 0.2, seed: int = 0,
                  return_attention: bool = False) -> dict:
    """CoT test error (eq. 7.7) of weight ``W`` by greedy decoding (eqs 7.5-7.6), and the attention masses.

    Every query gets its own test task on ``n_test_patterns`` TSR patterns (the thesis's ``M'``: a random orthonormal
    frame in the span of the ``n_patterns`` TRR patterns, its ``M``), ``n_examples`` noisy context examples whose
    steps follow :func:`step_transitions`, and a noiseless query. ``n_trr`` and ``n_tsr``, the old names of
    ``n_patterns`` and ``n_test_patterns``, still work for one release (``DeprecationWarning``).

    Returns:
        dict with ``error`` (mean over queries and steps of a wrong ``v_k``), ``final_error`` (wrong ``v_K``),
        ``masses`` ``(4,)`` (mean attention on the four key types of Fig 7.6, see ``TYPE_NAMES``),
        ``per_query`` errors, ``row_condition`` (whether Condition 7.3.2 holds on the query's row of ``B``) and, with
        ``return_attention``, ``attention`` (list of ``K`` arrays ``(n, L_k)``), ``decoded`` and ``truth``
        ``(n, K + 1)`` (the decoded and the true chains) and ``context_pattern`` ``(n, l, K + 1)`` (the context
        chains' pattern indices).
    """
    check_array("W", W)
    for name, value in (("d", d), ("n_patterns", n_patterns), ("n_test_patterns", n_test_patterns),
                        ("n_steps", n_steps)):
        check_int(name, value, minimum=1)
    _check_weight(W, d, n_steps)
    check_seed("seed", seed)
    check_bool("return_attention", return_attention)
    check_int("n_queries", n_queries, minimum=1)
    check_int("n_examples", n_examples, minimum=1)
    check_range("noise", noise, 0.0, None)
    tsr, idx, tokens, truth, row_ok = sample_test_prompts(n_queries, n_examples, alpha, tau, rho, mode, d, n_patterns,
                                                    n_test_patterns, n_steps, noise, seed)
    W = torch.as_tensor(np.asarray(W), dtype=torch.float32)
    model = AttentionOnlyCoT(d, n_steps)
    with torch.no_grad():
        model.W.copy_(W)
        ctx = prompts.cot_columns(tokens)
        ctx_in = idx[:, :, :-1].reshape(n_queries, -1)  # input pattern of each context column
        ctx_step = torch.arange(n_steps).repeat(n_examples).expand(n_queries, -1)
        v = [truth[:, 0]]
        q_cols, attn_all, masses = [], [], []
        pe = torch.eye(n_steps)
        for k in range(n_steps):
            query = torch.cat([tsr[v[-1]], torch.zeros(n_queries, d), pe[k].expand(n_queries, -1)], dim=-1)
            keys = torch.cat([ctx] + [c.unsqueeze(1) for c in q_cols], dim=1)
            out, attn = model(keys, query)
            v.append(_decode(out, tsr))
            key_in = torch.cat([ctx_in] + [v[j].unsqueeze(1) for j in range(k)], dim=1)
            key_step = torch.cat([ctx_step, torch.arange(k).expand(n_queries, -1)], dim=1)
            masses.append(curves.attention_mass_by_type(attn.numpy(), (key_in == v[k].unsqueeze(1)).numpy(),
                                                        (key_step == k).numpy()).mean(0))
            attn_all.append(attn.numpy())
            q_cols.append(torch.cat([tsr[v[k]], tsr[v[k + 1]], pe[k].expand(n_queries, -1)], dim=-1))
    decoded = torch.stack(v, dim=1)
    wrong = (decoded[:, 1:] != truth[:, 1:]).float()
    res = {"error": float(wrong.mean()), "final_error": float(wrong[:, -1].mean()),
           "masses": np.mean(masses, axis=0), "per_query": wrong.mean(1).numpy(), "row_condition": row_ok.numpy()}
    if return_attention:
        res.update(attention=attn_all, decoded=decoded.numpy(), truth=truth.numpy(), context_pattern=idx.numpy())
    return res


@renamed_arguments(n_trr="n_patterns", n_tsr="n_test_patterns")
def icl_inference(W, *, n_queries: int = 300, n_examples: int = 20, alpha: float = 0.8, tau: float = 0.5,
                  rho: float = 0.8, mode: str = "distractor", d: int = 30, n_patterns: int = 20,
                  n_test_patterns: int = 10, n_steps: int = 3, noise: float = 0.2, seed: int = 0) -> dict:
    """ICL test error (eq. 7.9): the same test prompts as :func:`cot_inference` with only the first input and the
    final output of each example (eq. 7.8); one decoding of the query, compared with the true ``z_K``.

    Returns:
        dict with ``error``, ``per_query`` errors and ``row_condition`` (as in :func:`cot_inference`).
    """
    check_array("W", W)
    for name, value in (("d", d), ("n_patterns", n_patterns), ("n_test_patterns", n_test_patterns),
                        ("n_steps", n_steps)):
        check_int(name, value, minimum=1)
    _check_weight(W, d, n_steps)
    check_seed("seed", seed)
    check_int("n_queries", n_queries, minimum=1)
    check_int("n_examples", n_examples, minimum=1)
    tsr, idx, tokens, truth, row_ok = sample_test_prompts(n_queries, n_examples, alpha, tau, rho, mode, d, n_patterns,
                                                    n_test_patterns, n_steps, noise, seed)
    model = AttentionOnlyCoT(d, n_steps)
    with torch.no_grad():
        model.W.copy_(torch.as_tensor(np.asarray(W), dtype=torch.float32))
        ctx = prompts.icl_columns(tokens[:, :, 0], tokens[:, :, -1], n_steps)
        query = torch.cat([tsr[truth[:, 0]], torch.zeros(n_queries, d),
                           torch.eye(n_steps)[0].expand(n_queries, -1)], dim=-1)
        out, _ = model(ctx, query)
    wrong = (_decode(out, tsr) != truth[:, -1]).float()
    return {"error": float(wrong.mean()), "per_query": wrong.numpy(), "row_condition": row_ok.numpy()}


def oracle_errors(A, steps, *, alpha: float, lengths, n_queries: int = 2000, seed: int = 0) -> dict:
    """CoT and ICL errors of the majority vote that a perfectly trained model implements (Proposition 3).

    CoT: at step ``k`` the vote is over the step-``k`` outputs of the context examples whose step-``k`` input
    equals the query's current pattern; ICL: over the final outputs of the examples whose first input equals the
    query. Ties and empty votes are broken uniformly at random. Noise is left out (the patterns are exact).

    Args:
        A, steps: as in :func:`transition_stats` (one fixed task).
        alpha: probability that an example starts at the query's pattern.
        lengths: numbers of context examples ``l_ts``.
        n_queries: Monte-Carlo queries per length.
        seed: random seed.

    Returns:
        dict with ``lengths``, ``cot`` and ``icl`` (error arrays; CoT error averaged over the steps).
    """
    check_range("alpha", alpha, 0.0, 1.0)
    check_int("n_queries", n_queries, minimum=1)
    check_seed("seed", seed)
    lengths = check_int_array("lengths", lengths, minimum=1).tolist()
    A, steps = _check_task(A, steps)
    transition_stats(A, steps)  # shapes and row-stochasticity
    m, n_steps = A[0].shape[0], len(A)
    rng = np.random.default_rng(seed)
    cums = [np.cumsum(a, 1) for a in A]
    cot, icl = [], []
    for n in lengths:
        check_int("lengths", int(n), minimum=1)
        q = rng.integers(0, m, n_queries)
        other = (q[:, None] + 1 + rng.integers(0, m - 1, (n_queries, n))) % m
        cur = np.where(rng.random((n_queries, n)) < alpha, q[:, None], other)
        chain = [cur]
        for c in cums:
            u = rng.random(cur.shape)
            cur = np.minimum((c[cur] < u[..., None]).sum(-1), m - 1)
            chain.append(cur)
        chain = np.stack(chain, -1)  # (n_q, n, K + 1)

        def vote(inputs, outputs, target):
            match = inputs == target[:, None]
            counts = np.stack([(match & (outputs == j)).sum(1) for j in range(m)], 1) + rng.random((len(target), m))
            return counts.argmax(1)

        v, truth, wrong = q, q, 0.0
        for k in range(n_steps):
            v = vote(chain[:, :, k], chain[:, :, k + 1], v)
            truth = steps[k][truth]
            wrong = wrong + (v != truth)
        cot.append(float(np.mean(wrong / n_steps)))
        icl.append(float(np.mean(vote(chain[:, :, 0], chain[:, :, -1], q) != truth)))
    return {"lengths": np.asarray(lengths), "cot": np.array(cot), "icl": np.array(icl)}


def error_curves(W, *, lengths, n_queries: int = 300, alpha: float = 0.8, tau: float = 0.5, rho: float = 0.8,
                 mode: str = "distractor", noise: float = 0.2) -> dict:
    """CoT and ICL test errors of ``W`` against the number of context examples (Figs 7.3-7.5).

    The test prompts of length ``lengths[i]`` use seed ``i``, so curves of different settings share their random
    numbers (common random numbers make their ordering less noisy).

    Returns:
        dict with ``lengths``, ``cot``, ``icl`` (mean errors), and per-query arrays ``cot_q``, ``icl_q`` and
        ``row_condition`` of shape ``(len(lengths), n_queries)``.
    """
    lengths = check_array("lengths", lengths, ndim=1)
    if not np.all(lengths == np.round(lengths)) or lengths.min() < 1:
        raise ValueError(f"lengths must hold integers >= 1, got {lengths.tolist()}")
    lengths = [int(n) for n in lengths]
    out = {"lengths": np.array(lengths), "cot": [], "icl": [], "cot_q": [], "icl_q": [], "row_condition": []}
    for i, n in enumerate(lengths):
        kw = dict(n_queries=n_queries, n_examples=n, alpha=alpha, tau=tau, rho=rho, mode=mode, noise=noise, seed=i)
        c, ic = cot_inference(W, **kw), icl_inference(W, **kw)
        out["cot"].append(c["error"])
        out["icl"].append(ic["error"])
        out["cot_q"].append(c["per_query"])
        out["icl_q"].append(ic["per_query"])
        out["row_condition"].append(c["row_condition"])
    return {k: np.asarray(v) for k, v in out.items()}


def attention_dynamics(Ws, *, n_queries: int = 200, n_examples: int = 20, alpha: float = 0.8, tau: float = 0.5,
                       rho: float = 0.8, seed: int = 0) -> np.ndarray:
    """Fig 7.6: the attention masses on the four key types (``TYPE_NAMES``) on CoT test prompts, for each stored
    weight in ``Ws`` (``(n_ckpt, D, D)``).

    Returns:
        ``(n_ckpt, 4)`` array.
    """
    Ws = check_array("Ws", Ws, ndim=3)
    return np.stack([cot_inference(W, n_queries=n_queries, n_examples=n_examples, alpha=alpha, tau=tau, rho=rho,
                                   seed=seed)["masses"] for W in Ws])
