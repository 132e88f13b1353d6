"""Training a small attention-only transformer until an induction head appears (the stand-in for Fig 1 of
Wang, Yu, E & Wu, 2024, which shows the induction head of Elhage et al.'s pretrained two-layer model).

* :func:`~lib.data.tokens.repeat_prefix_tokens` - a random prefix of random length followed by copies of it, with
  the mask of the
  positions whose next token an induction head can predict;
* :func:`~lib.models.probes.prev_token_score` (in :mod:`lib.models.probes`), :func:`induction_targets`,
  :func:`induction_score` - how much an attention map looks
  like a previous-token head (Elhage et al., 2021) or an induction head (Olsson et al., 2022);
* :func:`train_induction` - Adam on the next-token loss of the repeated part, recording losses, scores and the
  attention maps of one held-out sequence along training;
* :func:`plateau_and_drop` - the end of the loss plateau and the width of the drop.

Example::

    run = train_induction(STANDIN_QUICK, seed=0)
    run["eval_loss"], run["prev_score"], run["ind_score"], run["maps1"]   # one row per recorded step
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from lib.config import check_array, check_bool, check_device, check_int, check_positive, check_range, check_seed
from lib.curves import hitting_time
from lib.data.tokens import repeat_prefix_tokens
from lib.models.probes import induction_key_mask, prev_token_score
from lib.models.transformer import Transformer, TransformerConfig
from lib.parts.induction_heads.settings import EVAL_SEED, STANDIN_QUICK
from lib.train import train


def uniform_prev_token_score(T: int, causal: str = "strict") -> float:
    """Chance level of :func:`~lib.models.probes.prev_token_score`: uniform attention over the allowed keys
    (``1/i`` for query ``i``
    under strict causality, ``1/(i+1)`` under the standard mask), averaged over ``i = 1..T-1``."""
    check_int("T", T, minimum=2)
    if causal not in ("strict", "standard"):
        raise ValueError(f"causal must be one of ('strict', 'standard'), got {causal!r}")
    i = np.arange(1, T)
    n_keys = i if causal == "strict" else i + 1
    return float(np.mean(1.0 / n_keys))


def alibi_prev_token_score(p: float, T: int) -> float:
    """Previous-token score of a strictly causal ALiBi head with slope ``p`` and no query-key term (Eq. 3).

    Query ``i`` puts weight ``(1 - e^{-p}) / (1 - e^{-p i})`` on key ``i - 1``; averaged over ``i = 1..T-1``. It
    is the layer-1 attention of Thm 4.1's construction, and tends to 1 as ``p -> infinity``.
    """
    check_positive("p", p)
    check_int("T", T, minimum=2)
    i = np.arange(1, T)
    return float(np.mean(np.expm1(-p) / np.expm1(-p * i)))


def induction_targets(tokens: torch.Tensor) -> torch.Tensor:
    """For each query ``i``, the key ``j + 1`` right after the most recent earlier occurrence ``j < i`` of the
    token ``x_i`` (where an induction head should look), or ``-1`` when ``x_i`` has not occurred before.

    Args:
        tokens: ``(B, T)`` integer ids.

    Returns:
        ``(B, T)`` int64 key indices.
    """
    check_array("tokens", tokens)
    tokens = torch.as_tensor(tokens)
    if tokens.ndim != 2 or tokens.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"tokens must be integer ids of shape (B, T), got {tuple(tokens.shape)} {tokens.dtype}")
    T = tokens.shape[1]
    same = tokens[:, :, None] == tokens[:, None, :]  # (B, i, j)
    earlier = torch.arange(T)[None, :] < torch.arange(T)[:, None]  # j < i
    cand = same & earlier[None]
    idx = torch.where(cand, torch.arange(T)[None, None, :], torch.full_like(tokens[:, :1, None], -1))
    last = idx.max(dim=-1).values  # most recent earlier occurrence, -1 if none
    return torch.where(last >= 0, last + 1, last).to(torch.int64)


def induction_score(A: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean attention mass of query ``i`` on the keys that follow an earlier occurrence of ``x_i`` (the induction
    score; with one earlier copy, the weight on the token after it), over the queries whose token occurred before.

    Args:
        A: attention weights ``(B, H, T, T)`` (rows = queries).
        tokens: ``(B, T)`` integer ids of the same sequences.

    Returns:
        ``(H,)`` scores in ``[0, 1]`` (``nan`` if no query has an earlier occurrence).
    """
    check_array("A", A)
    A = torch.as_tensor(A)
    if A.ndim != 4 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must have shape (B, H, T, T), got {tuple(A.shape)}")
    M = induction_key_mask(tokens)
    if M.shape[:2] != (A.shape[0], A.shape[2]):
        raise ValueError(f"tokens must have shape {(A.shape[0], A.shape[2])}, got {tuple(M.shape[:2])}")
    valid = M.any(-1)  # (B, T)
    mass = (A * M[:, None].to(A.dtype)).sum(-1)  # (B, H, T)
    w = valid[:, None, :].to(A.dtype)
    return (mass * w).sum((0, 2)) / w.sum((0, 2))


def _masked_loss_acc(logits, tokens, mask):
    m = mask[:, :-1]
    lg, y = logits[:, :-1][m], tokens[:, 1:][m]
    return F.cross_entropy(lg, y), (lg.argmax(-1) == y).double().mean()


def train_induction(setting: dict, *, seed: int = 0, steps: int | None = None, show: int | None = None,
                    progress: bool = False, device="cpu") -> dict:
    """Train a two-layer attention-only transformer with Adam on :func:`~lib.data.tokens.repeat_prefix_tokens`
    sequences.

    The loss is the next-token cross-entropy on the masked (repeated) positions; a fresh batch is drawn each
    step. Every ``record_every`` steps the loss and accuracy on a fixed held-out batch, the previous-token score
    of each layer-1 head, the induction score of each layer-2 head, the ALiBi slopes and both layers' attention
    maps on one held-out sequence (``show``) are recorded.

    Args:
        setting: a dict like :data:`~lib.parts.induction_heads.settings.STANDIN_QUICK` (keys ``T, V, seg_min,
            seg_max, d_model, n_heads, init_std, lr, batch, steps, record_every, eval_batch``).
        seed: seeds the initialisation (torch) and the training batches (NumPy); the held-out batch is fixed.
        steps: overrides ``setting["steps"]``.
        show: index of the held-out sequence whose attention maps are kept (default: the first one with the
            longest prefix, which shows one clean copy).
        device: where to train (:func:`lib.config.check_device`); the model is initialised and every batch drawn
            on the CPU as before and moved there; the recorded arrays come back to the CPU (``model`` stays on
            ``device``).

    Returns:
        dict of NumPy arrays, one row per recorded step: ``step``, ``loss`` (training batch), ``eval_loss``,
        ``eval_acc``, ``prev_score`` ``(n, H)``, ``ind_score`` ``(n, H)``, ``slopes1``/``slopes2`` ``(n, H)``,
        ``maps1``/``maps2`` ``(n, H, T, T)``; plus ``tokens`` ``(T,)`` of the held-out sequence shown, its prefix
        length ``S``, ``chance_loss = log V``, ``diverged`` and the trained ``model``.
    """
    if not isinstance(setting, dict):
        raise ValueError(f"setting must be a dict like STANDIN_QUICK, got {setting!r}")
    check_bool("progress", progress)
    s = dict(STANDIN_QUICK, **setting)
    check_seed("seed", seed)
    dev = check_device("device", device)
    steps = s["steps"] if steps is None else steps
    check_int("steps", steps, minimum=1)
    check_positive("lr", s["lr"])
    check_range("init_std", s["init_std"], lo=0.0, lo_open=True)
    T, V = s["T"], s["V"]
    torch.manual_seed(seed)
    cfg = TransformerConfig(vocab_size=V, d_model=s["d_model"], n_layers=2, n_heads=s["n_heads"], max_len=T,
                            rpe="alibi", rpe_learnable=True, causal="strict", init_std=s["init_std"])
    model = Transformer(cfg)
    ev_tok, ev_S, ev_mask = repeat_prefix_tokens(s["eval_batch"], T, V, s["seg_min"], s["seg_max"],
                                                 rng=EVAL_SEED)
    show = int(torch.argmax(ev_S)) if show is None else show
    check_int("show", show, minimum=0, maximum=s["eval_batch"] - 1)
    ev_tok_dev, ev_mask_dev = ev_tok.to(dev), ev_mask.to(dev)
    g = np.random.default_rng(seed)

    def batch_fn(step, generator):
        tok, _, mask = repeat_prefix_tokens(s["batch"], T, V, s["seg_min"], s["seg_max"], rng=g)
        return tok.to(dev), mask.to(dev)

    def loss_fn(m, batch):
        tok, mask = batch
        return _masked_loss_acc(m(tok), tok, mask)[0]

    def record(m, step):
        loss, acc = _masked_loss_acc(m(ev_tok_dev), ev_tok_dev, ev_mask_dev)
        A1, A2 = (a.cpu() for a in m.attention_maps)
        return {
            "eval_loss": float(loss),
            "eval_acc": float(acc),
            "prev_score": prev_token_score(A1).mean(0).numpy().copy(),
            "ind_score": induction_score(A2, ev_tok).numpy().copy(),
            "slopes1": m.blocks[0].attn.slopes.detach().cpu().numpy().copy(),
            "slopes2": m.blocks[1].attn.slopes.detach().cpu().numpy().copy(),
            "maps1": A1[show].numpy().copy(),
            "maps2": A2[show].numpy().copy(),
        }

    res = train(model, loss_fn, lr=s["lr"], steps=steps, optimizer="adam", batch_fn=batch_fn, record=record,
                record_every=s["record_every"], progress=progress, device=dev)
    out = dict(res.history)
    out.update(tokens=ev_tok[show].numpy(), S=int(ev_S[show]), chance_loss=float(np.log(V)), diverged=res.diverged,
               model=model)
    return out


def plateau_and_drop(step, loss, level0: float, hi: float = 0.9, lo: float = 0.1) -> dict:
    """End of the plateau and width of the drop of a loss curve that starts near ``level0``.

    ``t_hi`` is the first time the loss falls to ``hi * level0`` (the end of the plateau) and ``t_lo`` the first
    time it falls to ``lo * level0`` (linear interpolation between recorded steps, :func:`lib.curves.hitting_time`).

    Returns:
        dict with ``t_hi``, ``t_lo`` (``nan`` when not reached), ``width = t_lo - t_hi`` and ``plateau_max_dev``,
        the largest relative deviation of the loss from ``level0`` before ``t_hi``.
    """
    step = check_array("step", step)
    loss = check_array("loss", loss, finite="some")
    check_positive("level0", level0)
    check_range("hi", hi, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    check_range("lo", lo, lo=0.0, hi=hi, lo_open=True, hi_open=True)
    t_hi = hitting_time(step, loss, hi * level0, direction="down")
    t_lo = hitting_time(step, loss, lo * level0, direction="down")
    before = step < t_hi if np.isfinite(t_hi) else np.ones_like(step, dtype=bool)
    dev = float(np.max(np.abs(loss[before] / level0 - 1))) if before.any() else float("nan")
    return dict(t_hi=float(t_hi), t_lo=float(t_lo), width=float(t_lo - t_hi), plateau_max_dev=dev)
