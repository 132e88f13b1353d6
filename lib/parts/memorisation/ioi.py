"""Synthetic IOI with counting (Chen's thesis, App. C.8, Figs C.5-C.6) and the MLP/attention parameter split of
Fig 4.14.

* :func:`sample_ioi` - sequences of C.8 steps i-v: three triggers ``q``, one followed by the output ``y_bar`` and
  two by the distractor ``y_D``, a final ``q`` whose next token is ``y_bar`` or, w.p. ``alpha``, the noise ``tau``;
* :func:`train_ioi` - an ``L``-layer model (4.1) (:func:`~lib.parts.memorisation.noisy_recall.recall_model`)
  trained on it with SGD (momentum, weight decay) or Adam through ``lib.train.train``, loss at the final ``q``;
* :func:`ioi_scores` - clean-test loss and accuracy at the final ``q`` of the full model, the model without its
  last MLP, and the model whose last MLP input matrix is truncated by LASER;
* :func:`split_model`, :func:`split_widths`, :func:`bigram_split_loss` - Fig 4.14: one parameter budget shared
  between attention and MLPs, trained on the noisy recall chain, the loss on the bigram positions.

Token ids: ``0 .. N-1`` ordinary tokens, ``N`` the noise token ``tau``; ``q`` is one of the ordinary tokens.

Example::

    z, y_bar, y_d = sample_ioi(16, 32, batch=8, alpha=0.5, generator=torch.Generator().manual_seed(0))
    run = ioi_experiment(IOI_FULL, n_layers=3, optimizer="sgd", seed=0)
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from lib.config import check_array, check_device, check_in, check_instance, check_int, check_range, check_seed
from lib.models.laser import low_rank
from lib.models.transformer import Transformer, TransformerConfig
from lib.parts.memorisation.noisy_recall import FROZEN, init_code_scale, recall_model
from lib.parts.memorisation.recall_data import char_bigram, sample_recall
from lib.train import train

__all__ = [
    "sample_ioi",
    "ioi_scores",
    "train_ioi",
    "ioi_experiment",
    "split_widths",
    "split_model",
    "bigram_split_loss",
]


def sample_ioi(n_tokens: int, T: int, batch: int, alpha: float, q: int = 0, generator: torch.Generator | None = None):
    """Sample synthetic IOI sequences (thesis App. C.8, steps i-v), vectorised over the batch.

    - step i: ``y_bar`` and a different ``y_D``, uniform over ``[N] minus {q}`` (the thesis says ``[N]``; ``q`` is
      left out so that it occurs only where steps iii and iv put it);
    - step ii: three positions ``i_1 < i_2 < i_3`` among the first ``T - 2``, pairwise at least 2 apart, uniform
      over such triples (the gaps of a uniform 3-subset of ``T - 4`` slots, widened by one);
    - step iii: ``z_{i_k} = q``; one ``k`` at random gets ``z_{i_k+1} = y_bar``, the other two ``y_D``;
    - step iv: ``z_T = q`` and ``z_{T+1} = y_bar`` w.p. ``1 - alpha``, ``tau = N`` w.p. ``alpha``;
    - step v: every other position uniform over the ``N`` tokens of ``{0..N} minus {q}`` (``tau`` included).

    Args:
        n_tokens: ``N`` (>= 3), the vocabulary is ``N + 1``; T: inputs per sequence (>= 7); batch: >= 1.
        alpha: noise probability in ``[0, 1]`` (0: the clean test law); q: the trigger in ``[0, N)``.
        generator: torch generator (default: seeded with 0).

    Returns:
        ``z`` ``(batch, T + 1)`` int64 (0-based: ``z[:, T - 1] = q``, ``z[:, T]`` the target), ``y_bar`` and
        ``y_d`` ``(batch,)``.
    """
    check_int("n_tokens", n_tokens, minimum=3)
    check_int("T", T, minimum=7)
    check_int("batch", batch, minimum=1)
    check_range("alpha", alpha, 0.0, 1.0)
    check_int("q", q, minimum=0, maximum=n_tokens - 1)
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    N, B = n_tokens, batch

    def skip(r, *ids):  # map r in [0, N - len(ids)) onto [0, N) minus the sorted ids
        for i in sorted(ids):
            r = r + (r >= i).long()
        return r

    y_bar = skip(torch.randint(0, N - 1, (B,), generator=g), q)
    r = torch.randint(0, N - 2, (B,), generator=g)
    lo, hi = torch.minimum(y_bar, torch.full_like(y_bar, q)), torch.maximum(y_bar, torch.full_like(y_bar, q))
    y_d = r + (r >= lo).long()
    y_d = y_d + (y_d >= hi).long()
    # step v first: every position uniform over the N tokens other than q
    z = skip(torch.randint(0, N, (B, T + 1), generator=g), q)
    # step ii: a uniform 3-subset a < b < c of T - 4 slots gives i = (a, b + 1, c + 2) in [0, T - 2)
    slots = torch.rand(B, T - 4, generator=g).argsort(1)[:, :3].sort(1).values
    idx = slots + torch.arange(3)
    which = torch.randint(0, 3, (B,), generator=g)
    rows = torch.arange(B)[:, None]
    z[rows, idx] = q
    nxt = torch.where(torch.arange(3)[None] == which[:, None], y_bar[:, None], y_d[:, None])
    z[rows, idx + 1] = nxt
    z[:, T - 1] = q
    noisy = torch.rand(B, generator=g, dtype=torch.float64) < alpha
    z[:, T] = torch.where(noisy, torch.full_like(y_bar, N), y_bar)
    return z, y_bar, y_d


def _last_mlp(model: Transformer) -> nn.Module:
    ffn = model.blocks[-1].ffn
    if ffn is None or not hasattr(ffn, "fc1"):
        raise ValueError("the model's last layer must have an MLP feed-forward map")
    return ffn


def ioi_scores(model: Transformer, test: torch.Tensor, rank: int = 2) -> dict:
    """Clean-test scores at the final trigger (Figs C.5, C.6).

    Args:
        model: an ``L``-layer :func:`~lib.parts.memorisation.noisy_recall.recall_model` with an MLP in its last layer.
        test: ``(B, T + 1)`` clean sequences from :func:`sample_ioi` (``alpha = 0``).
        rank: rank kept by LASER of the last MLP's input matrix ``W_1`` (thesis: a fraction 0.01 of ``d = 256``,
            i.e. rank 2).

    Returns:
        ``{"full" | "drop_last" | "laser": {"loss", "acc", "p_correct", "p_noise"}}`` (floats).
    """
    check_instance("model", model, Transformer)
    check_array("test", test)
    check_int("rank", rank, minimum=0)
    test = torch.as_tensor(test).to(next(model.parameters()).device)  # to the model (a no-op on the CPU)
    if test.ndim != 2:
        raise ValueError(f"test must be (B, T + 1), got shape {tuple(test.shape)}")
    x, y = test[:, :-1], test[:, -1]
    tau = model.cfg.vocab_size - 1
    ffn = _last_mlp(model)
    block = model.blocks[-1]

    def score():
        with torch.no_grad():
            logp = torch.log_softmax(model(x)[:, -1], -1)
        return {
            "loss": float(-logp.gather(1, y[:, None]).mean()),
            "acc": float((logp.argmax(-1) == y).double().mean()),
            "p_correct": float(logp.gather(1, y[:, None]).exp().mean()),
            "p_noise": float(logp[:, tau].exp().mean()),
        }

    out = {"full": score()}
    block.ffn = None
    try:
        out["drop_last"] = score()
    finally:
        block.ffn = ffn
    # out of place (a module swap, no weight copy): a training step's graph may hold the weights
    block.ffn = _LowRankMLP(ffn, low_rank(ffn.fc1.weight, rank))
    try:
        out["laser"] = score()
    finally:
        block.ffn = ffn
    return out


class _LowRankMLP(nn.Module):
    """An MLP ``W_2 ReLU(W_1 h + b_1) + b_2`` whose input matrix is replaced by a given (truncated) one."""

    def __init__(self, ffn: nn.Module, W1: torch.Tensor):
        super().__init__()
        self.ffn, self.W1 = ffn, W1

    def forward(self, x):
        return self.ffn.fc2(F.relu(F.linear(x, self.W1, self.ffn.fc1.bias)))


def train_ioi(setting: dict, n_layers: int, optimizer: str, seed: int = 0, record_every: int = 100,
              device="cpu") -> dict:
    """Train an ``L``-layer model (4.1) on the synthetic IOI task (App. C.8) through ``lib.train.train``.

    Cross-entropy at the final trigger only (the one position whose target the data fixes), fresh batches each
    step, ``W_E``, ``p_t``, ``W_U`` frozen. ``optimizer="sgd"`` uses ``setting["lr"]``, ``momentum`` and
    ``weight_decay`` (Sec 4.4's code); ``"adam"`` uses ``setting["adam_lr"]`` and no weight decay.

    Args:
        setting: dict with ``n_tokens``, ``d``, ``T``, ``batch``, ``alpha``, ``steps``, ``lr``, ``momentum``,
            ``weight_decay``, ``adam_lr``, ``n_test``, ``laser_rank`` (see ``settings.IOI_FULL``).
        n_layers: ``L`` (>= 1), every layer with an MLP of width ``4d``.
        optimizer: ``"sgd"`` or ``"adam"``.
        seed: seeds the initialisation, the batches and the test set.
        record_every: period of the recorded :func:`ioi_scores`.
        device: where to train (:func:`lib.config.check_device`); initialisation and batches are drawn on the
            CPU from the same seeds and moved; ``model`` is returned there, ``test`` on the CPU.

    Returns:
        dict with ``model``, ``history`` (step and the scores as ``{variant}_{score}`` lists), ``diverged``, ``test``.
    """
    check_instance("setting", setting, dict)
    check_int("n_layers", n_layers, minimum=1)
    check_in("optimizer", optimizer, ("sgd", "adam"))
    check_seed("seed", seed)
    dev = check_device("device", device)
    N, T, B = setting["n_tokens"], setting["T"], setting["batch"]
    model = recall_model(N, setting["d"], T, ffn=("mlp",) * n_layers, seed=seed)
    test, _, _ = sample_ioi(N, T, setting["n_test"], 0.0, generator=torch.Generator().manual_seed(10_000 + seed))

    def batch_fn(step, g):
        return sample_ioi(N, T, B, setting["alpha"], generator=g)[0].to(dev)

    def loss_fn(m, z):
        return F.cross_entropy(m(z[:, :-1])[:, -1], z[:, -1])

    def record(m, step):
        s = ioi_scores(m, test, setting["laser_rank"])
        return {f"{v}_{k}": s[v][k] for v in ("full", "drop_last", "laser") for k in ("loss", "acc")}

    kw = (
        dict(lr=setting["lr"], momentum=setting["momentum"], weight_decay=setting["weight_decay"])
        if optimizer == "sgd"
        else dict(lr=setting["adam_lr"])
    )
    res = train(
        model,
        loss_fn,
        steps=setting["steps"],
        optimizer=optimizer,
        batch_fn=batch_fn,
        frozen=FROZEN,
        record=record,
        record_every=record_every,
        generator=torch.Generator().manual_seed(seed),
        progress=False,
        device=dev,
        **kw,
    )
    return {"model": model, "history": res.history, "diverged": res.diverged, "test": test}


def ioi_experiment(setting: dict, n_layers: int, optimizer: str, seed: int = 0, device="cpu") -> dict:
    """One cacheable :func:`train_ioi` run (plain data, for :func:`lib.sweep.cached_call`; on ``device``).

    Returns:
        dict with ``history`` (the training history, as NumPy arrays), ``final`` (the final :func:`ioi_scores`)
        and ``diverged``.
    """
    run = train_ioi(setting, n_layers, optimizer, seed, device=device)
    return {
        "history": {k: np.asarray(v) for k, v in run["history"].items()},
        "final": ioi_scores(run["model"], run["test"], setting["laser_rank"]),
        "diverged": bool(run["diverged"]),
    }


def split_widths(d: int, budget: int, mlp_share: float) -> tuple[int, int]:
    """Attention width ``h_a`` and MLP width ``h_m`` of one layer whose ``budget`` weights are split between
    attention (``W_Q, W_K, W_V`` of ``h_a x d``, ``W_O`` of ``d x h_a``: ``4 d h_a``) and the MLP (``2 d h_m``).

    Args:
        d: residual width (>= 1); budget: weights per layer (>= 4 d).
        mlp_share: fraction in ``[0, 1)`` of the budget that goes to the MLP.

    Returns:
        ``(h_a, h_m)``, rounded to the nearest integers (``h_a >= 1``).
    """
    check_int("d", d, minimum=1)
    check_int("budget", budget, minimum=4 * d)
    check_range("mlp_share", mlp_share, 0.0, 1.0)
    if mlp_share >= 1.0:
        raise ValueError(f"mlp_share must be below 1 (attention needs a width), got {mlp_share}")
    h_a = max(1, round((1.0 - mlp_share) * budget / (4 * d)))
    h_m = round(mlp_share * budget / (2 * d))
    return h_a, h_m


def split_model(n_tokens: int, d: int, T: int, h_attn: int, h_mlp: int, n_layers: int = 2, seed: int = 0):
    """Model (4.1) with a learned ``W_Q`` of width ``h_attn`` per layer and an MLP of width ``h_mlp`` (none if 0):
    ``W_E``, positions and ``W_U`` frozen ``N(0, 1)`` / ``U(+-1/sqrt(d))``, other weights PyTorch's default scale.

    Returns:
        a :class:`~lib.models.transformer.Transformer` (train it with ``noisy_recall.FROZEN`` frozen).
    """
    check_int("n_tokens", n_tokens, minimum=2)
    check_int("d", d, minimum=2)
    check_int("T", T, minimum=2)
    check_int("h_attn", h_attn, minimum=1)
    check_int("h_mlp", h_mlp, minimum=0)
    check_int("n_layers", n_layers, minimum=1)
    cfg = TransformerConfig(
        vocab_size=n_tokens + 1,
        d_model=d,
        n_layers=n_layers,
        n_heads=1,
        d_head=h_attn,
        max_len=T,
        ffn="mlp" if h_mlp > 0 else "none",
        ffn_hidden=h_mlp if h_mlp > 0 else None,
        ffn_bias=False,
        random_pos=True,
        rpe="none",
        causal="standard",
    )
    check_seed("seed", seed)  # a fractional seed would give the model of its integer part
    torch.manual_seed(seed)
    return init_code_scale(Transformer(cfg))


def bigram_split_loss(setting: dict, h_attn: int, h_mlp: int, lr: float, seed: int = 0, device="cpu") -> dict:
    """Fig 4.14, one configuration: train :func:`split_model` on the noisy recall chain of Sec 4.4 (next-token
    cross-entropy at every position, SGD with momentum and weight decay, ``setting["steps"]`` steps) and measure
    the loss on the bigram positions (current token neither a trigger nor ``tau``: the next token is drawn from
    ``pi_b``) of a fixed held-out batch.

    Args:
        setting: dict with ``n_chars``, ``d``, ``T``, ``batch``, ``alpha``, ``steps``, ``momentum``,
            ``weight_decay``, ``n_test`` (see ``settings.SPLIT_FULL``).
        h_attn, h_mlp: widths (:func:`split_widths`); lr: SGD learning rate (> 0); seed: initialisation, batches.
        device: where to train (:func:`lib.config.check_device`; draws on the CPU, moved there).

    Returns:
        dict: ``bigram_loss`` (held-out, nan if diverged), ``entropy`` (the bigram's conditional entropy at those
        positions, the floor), ``n_params`` (trained weights), ``diverged``.
    """
    check_instance("setting", setting, dict)
    check_seed("seed", seed)
    dev = check_device("device", device)
    N, T, B = setting["n_chars"], setting["T"], setting["batch"]
    _, pi_u, pi_b = char_bigram(N)
    model = split_model(N, setting["d"], T, h_attn, h_mlp, seed=seed)

    def batch_fn(step, g):
        return sample_recall(pi_u, pi_b, B, T, setting["alpha"], generator=g)[0].to(dev)

    def loss_fn(m, z):
        return F.cross_entropy(m(z[:, :-1]).reshape(-1, N + 1), z[:, 1:].reshape(-1))

    res = train(
        model,
        loss_fn,
        lr=lr,
        steps=setting["steps"],
        optimizer="sgd",
        batch_fn=batch_fn,
        momentum=setting["momentum"],
        weight_decay=setting["weight_decay"],
        frozen=FROZEN,
        record_every=setting["steps"],
        generator=torch.Generator().manual_seed(seed),
        progress=False,
        device=dev,
    )
    z, _ = sample_recall(pi_u, pi_b, setting["n_test"], T, setting["alpha"], generator=torch.Generator().manual_seed(7))
    x, y = z[:, :-1], z[:, 1:]
    pos = (x != 0) & (x != N)  # trigger q = 0 (as in sample_recall's default) and the noise token
    with torch.no_grad():
        loss = float(F.cross_entropy(model(x.to(dev))[pos.to(dev)], y[pos].to(dev)))
    p = pi_b[x[pos]]
    entropy = float(-(p * torch.log(p.clamp_min(1e-300))).sum(1).mean())
    n_params = sum(p.numel() for n, p in model.named_parameters() if n not in FROZEN)
    return {
        "bigram_loss": loss if (not res.diverged and math.isfinite(loss)) else float("nan"),
        "entropy": entropy,
        "n_params": int(n_params),
        "diverged": bool(res.diverged),
    }
