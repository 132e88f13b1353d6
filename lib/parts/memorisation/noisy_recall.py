"""Noisy in-context recall in a two-layer transformer (Chen's thesis, Sec 4.4, model 4.1, Figs 4.3, 4.4, 4.6-4.8).

* :func:`recall_model` - model (4.1): one head per layer with ``W_Q = I``, separate ``W_V`` and ``W_O``, no
  LayerNorm, no biases, feed-forward maps of the chosen kind, frozen ``N(0,1)`` token embeddings and positions,
  frozen unembedding;
* :func:`recall_metrics` - on fixed clean test sequences: ``p(y_bar)``, ``p(tau)`` and the loss at repeated
  triggers, for LASER fractions ``rho`` of ``F_2``'s input matrix; the FF-2 margin; on noisy sequences the
  layer-2 attention on ``[q, y_bar]`` and ``[q, tau]`` keys and the share of argmax predictions that are noise;
* :func:`train_recall` - SGD with momentum (``lib.train.train``) from scratch or from a given model, recording
  :func:`recall_metrics` along training;
* :func:`probe_maps` - the three heatmaps of Fig 4.6 and the matching logits of Fig 4.8.

Example::

    run = train_recall(QUICK, steps=500, seed=0)
    run["history"]["p_correct_rho1"], run["model"]
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from lib.config import check_array, check_device, check_instance, check_int, check_range, check_seed
from lib.models.laser import laser_rank, low_rank
from lib.models.probes import induction_key_mask
from lib.models.transformer import Transformer, TransformerConfig
from lib.parts.memorisation.recall_data import char_bigram, repeated_trigger_mask, sample_recall
from lib.train import train

__all__ = [
    "recall_model",
    "recall_metrics",
    "train_recall",
    "probe_maps",
    "log_steps",
    "RHOS",
    "recall_experiment",
    "restore_model",
    "eval_batches",
    "dropped_scores",
    "FROZEN",
]

RHOS = (0.0, 0.1, 0.2, 1.0)  # LASER fractions of U_in of F_2 evaluated by the authors' code
#: the parameters the recall model keeps frozen in training (the embedding and the read-out)
FROZEN = ("embed.weight", "head.weight")


def recall_model(n_chars: int, d: int, T: int, ffn=("mlp", "mlp"), seed: int = 0) -> Transformer:
    """Model (4.1) with the initialisation of the authors' code.

    ``W_E`` and the positions ``p_t`` are ``N(0, 1)`` (the positions are a buffer, never trained), ``W_U`` and
    every other matrix have PyTorch's ``nn.Linear`` default ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.

    Args:
        n_chars: number of characters ``N`` (the vocabulary is ``N + 1`` with the noise token ``N``).
        d: width (>= 2); T: context length (>= 2).
        ffn: kind of ``F_1``, ``F_2``, ...: ``"mlp"`` (``W_2 ReLU(W_1 h)``, width ``4d``), ``"linear"`` or
            ``"none"``; one entry per layer (model (4.1) has two; the synthetic IOI of App. C.8 stacks ``L``).
        seed: seed of the initialisation.

    Returns:
        a :class:`~lib.models.transformer.Transformer`; train it with :data:`FROZEN` frozen.
    """
    check_seed("seed", seed)
    check_int("n_chars", n_chars, minimum=2)
    check_int("d", d, minimum=2)
    check_int("T", T, minimum=2)
    if isinstance(ffn, str) or not isinstance(ffn, (list, tuple)) or len(ffn) < 1:
        raise ValueError(f"ffn must give one FFN kind per layer (F_1, F_2, ...), got {ffn!r}")
    cfg = TransformerConfig(
        vocab_size=n_chars + 1,
        d_model=d,
        n_layers=len(ffn),
        n_heads=1,
        max_len=T,
        ffn=tuple(ffn),
        ffn_bias=False,
        query_identity=True,
        random_pos=True,
        rpe="none",
        causal="standard",
    )
    torch.manual_seed(seed)
    return init_code_scale(Transformer(cfg))


def init_code_scale(model: Transformer) -> Transformer:
    """The initialisation of the authors' code, in place: ``W_E`` and the positions ``N(0, 1)``; ``W_U`` and every
    attention matrix (``W_Q`` where it is a parameter, ``W_K``, ``W_V``, ``W_O``) ``U(-1/sqrt(fan_in),
    1/sqrt(fan_in))`` with ``fan_in`` its last dimension; FFN layers PyTorch's ``nn.Linear`` default. Draws from
    torch's global generator (seed it first). Returns ``model``."""
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a lib.models.transformer.Transformer, got {type(model).__name__}")
    with torch.no_grad():
        model.embed.weight.normal_(0.0, 1.0)
        model.fixed_pos.normal_(0.0, 1.0)
        model.head.weight.uniform_(-1.0 / math.sqrt(model.head.weight.shape[-1]),
                                   1.0 / math.sqrt(model.head.weight.shape[-1]))
        for blk in model.blocks:
            for name in ("W_Q", "W_K", "W_V", "W_O"):
                W = getattr(blk.attn, name)
                if W is not None:
                    bound = 1.0 / math.sqrt(W.shape[-1])
                    W.uniform_(-bound, bound)
            if blk.ffn is not None:
                for m in blk.ffn.modules():
                    if isinstance(m, nn.Linear):
                        m.reset_parameters()
    return model
    return model


def log_steps(steps: int) -> list[int]:
    """Recording steps: every step up to 10, then about 12 per decade, and the last step."""
    check_int("steps", steps, minimum=0)
    s = set(range(min(steps, 10) + 1)) | {int(round(x)) for x in np.logspace(1, math.log10(max(steps, 10)), 20)}
    return sorted(x for x in s | {steps} if x <= steps)


def _forward_parts(model: Transformer, x: torch.Tensor):
    """Residual stream before F_2 and the layer-2 attention map (one pass through layer 1 and attention 2)."""
    h = model.embed(x) + model.fixed_pos[: x.shape[1]][None]
    h1 = model.blocks[0](h)
    b2 = model.blocks[1]
    u = h1 + b2.attn(h1)
    return u, model.blocks[0].attn.attn[:, 0], b2.attn.attn[:, 0]


def _logits_with(model, u, rho):
    ffn = model.blocks[1].ffn
    if ffn is None or rho == 1.0:
        return model.head(u + (ffn(u) if ffn is not None else 0.0))
    if rho == 0.0:
        return model.head(u)
    # out of place (no weight swap): the trainer's graph of the current step must stay intact
    lin = ffn.fc1 if hasattr(ffn, "fc1") else ffn.fc
    Wk = low_rank(lin.weight, laser_rank(lin.weight.shape, rho))
    a = u @ Wk.T
    f = ffn.fc2(F.relu(a)) if hasattr(ffn, "fc1") else a
    return model.head(u + f)


def recall_metrics(model: Transformer, clean: tuple, noisy: tuple, triggers=(0,), rhos=RHOS) -> dict:
    """Measurements of Figs 4.3, 4.4 and 4.7 on fixed evaluation batches.

    Args:
        model: a :func:`recall_model`.
        clean: ``(z, y_bar)`` from :func:`~lib.parts.memorisation.recall_data.sample_recall` with ``alpha = 0``.
        noisy: ``(z, y_bar)`` with the training ``alpha``.
        triggers: trigger ids; rhos: LASER fractions of ``F_2``'s input matrix (ignored without ``F_2``).

    Returns:
        dict of floats: ``p_correct_rho{r}``, ``p_noise_rho{r}``, ``loss_rho{r}`` (clean; ``r`` as in ``rhos``),
        ``ff2_margin`` (``[W_U F_2(W_E q)]_tau - max_{k<N}``; nan without ``F_2``), ``attn_correct`` and
        ``attn_noise`` (layer-2 attention of repeated-trigger queries per ``[q, y_bar]`` / ``[q, tau]`` key),
        ``frac_noise`` and ``frac_other`` (argmax predictions at repeated triggers of the noisy batch),
        ``prev1`` (layer-1 attention on the previous token, clean batch).
    """
    check_instance("model", model, Transformer)
    check_instance("clean", clean, tuple)
    check_instance("noisy", noisy, tuple)
    check_array("rhos", rhos)
    V = model.cfg.vocab_size
    tau = V - 1
    out = {}
    with torch.no_grad():
        z, _ = clean
        x, y = z[:, :-1], z[:, 1:]
        mask = repeated_trigger_mask(x, triggers)
        u, A1, _ = _forward_parts(model, x)
        um = u[mask]  # F_2 and the read-out are point-wise: evaluate them at the loss positions only
        for r in rhos:
            logp = torch.log_softmax(_logits_with(model, um, r), -1)
            tgt = y[mask]
            out[f"p_correct_rho{r:g}"] = float(logp.gather(1, tgt[:, None]).exp().mean())
            out[f"p_noise_rho{r:g}"] = float(logp[:, tau].exp().mean())
            out[f"loss_rho{r:g}"] = float(-logp.gather(1, tgt[:, None]).mean())
        T = x.shape[1]
        i = torch.arange(1, T, device=x.device)
        out["prev1"] = float(A1[:, i, i - 1].mean())
        ffn = model.blocks[1].ffn
        if ffn is not None:
            lg = model.head(ffn(model.embed.weight[torch.as_tensor(triggers[:1], device=x.device)]))[0]
            out["ff2_margin"] = float(lg[tau] - lg[:tau].max())
        else:
            out["ff2_margin"] = float("nan")
        z, _ = noisy
        x = z[:, :-1]
        mask = repeated_trigger_mask(x, triggers)
        u, _, A2 = _forward_parts(model, x)
        keys = induction_key_mask(x) & mask[:, :, None]
        is_noise = (x == tau)[:, None, :]
        for name, sel in (("attn_correct", keys & ~is_noise), ("attn_noise", keys & is_noise)):
            n = sel.sum()
            out[name] = float((A2 * sel).sum() / n) if n > 0 else float("nan")
        um = u[mask]
        pred = model.head(um + (ffn(um) if ffn is not None else 0.0)).argmax(-1)
        out["frac_noise"] = float((pred == tau).double().mean())
        out["frac_other"] = 1.0 - out["frac_noise"]
    return out


def train_recall(
    setting: dict,
    steps: int,
    seed: int = 0,
    alpha: float | None = None,
    model=None,
    triggers=(0,),
    ffn=("mlp", "mlp"),
    record_steps=None,
    device="cpu",
) -> dict:
    """Train model (4.1) on the noisy recall task with SGD (momentum, weight decay) through ``lib.train.train``.

    Args:
        setting: dict with ``n_chars``, ``d``, ``T``, ``batch``, ``alpha``, ``lr``, ``momentum``,
            ``weight_decay``, ``n_test`` and optionally ``uniform`` (see ``settings.RECALL_QUICK``).
        steps: SGD steps (>= 0).
        seed: seeds the initialisation, the training batches and the evaluation batches.
        alpha: noise level of training (default ``setting["alpha"]``; 0 for clean pre-training).
        model: continue from this model (deep-copied) instead of a fresh :func:`recall_model`.
        triggers: trigger ids; ffn: kinds of ``F_1``, ``F_2``.
        record_steps: steps at which :func:`recall_metrics` is recorded (default :func:`log_steps`).
        device: where to train (:func:`lib.config.check_device`): the model is initialised, and every batch
            drawn, on the CPU from the same seeds and moved there; ``model`` is returned there, the evaluation
            batches on the CPU.

    Returns:
        dict with ``model`` (trained), ``history`` (step -> arrays), ``diverged``, ``diverged_step``, ``alphabet``,
        ``clean`` and ``noisy`` (the evaluation batches).
    """
    check_instance("setting", setting, dict)
    check_int("steps", steps, minimum=0)
    check_seed("seed", seed)
    dev = check_device("device", device)
    alpha = setting["alpha"] if alpha is None else alpha
    check_range("alpha", alpha, 0.0, 1.0)
    N, T, B = setting["n_chars"], setting["T"], setting["batch"]
    alphabet, pi_u, pi_b = char_bigram(N, uniform=setting.get("uniform", False))
    model = copy.deepcopy(model) if model is not None else recall_model(N, setting["d"], T, ffn=ffn, seed=seed)
    g_eval = torch.Generator().manual_seed(10_000 + seed)
    clean = sample_recall(pi_u, pi_b, setting["n_test"], T, 0.0, triggers, g_eval)
    noisy = sample_recall(pi_u, pi_b, setting["n_test"], T, setting["alpha"], triggers, g_eval)
    clean_dev, noisy_dev = (tuple(t.to(dev) for t in b) for b in (clean, noisy))

    def batch_fn(step, g):
        z, _ = sample_recall(pi_u, pi_b, B, T, alpha, triggers, g)
        return z.to(dev)

    def loss_fn(m, z):
        x, y = z[:, :-1], z[:, 1:]
        mask = repeated_trigger_mask(x, triggers)
        return F.cross_entropy(m(x)[mask], y[mask])

    res = train(
        model,
        loss_fn,
        lr=setting["lr"],
        steps=steps,
        optimizer="sgd",
        batch_fn=batch_fn,
        momentum=setting["momentum"],
        weight_decay=setting["weight_decay"],
        frozen=FROZEN,
        record=lambda m, s: recall_metrics(m, clean_dev, noisy_dev, triggers),
        record_every=record_steps if record_steps is not None else log_steps(steps),
        generator=torch.Generator().manual_seed(seed),
        progress=False,
        device=dev,
    )
    return {
        "model": model,
        "history": res.history,
        "diverged": res.diverged,
        "diverged_step": res.diverged_step,
        "alphabet": alphabet,
        "clean": clean,
        "noisy": noisy,
    }


def probe_maps(model: Transformer) -> dict:
    """The probe matrices of Figs 4.6 and 4.8 (``V = N + 1`` tokens, rows ``i``, columns ``j``).

    Returns:
        dict of ``(V, V)`` NumPy arrays: ``ff2`` ``<W_U(j), F_2(W_E(i))>`` (nan without ``F_2``), ``value2``
        ``<W_U(j), W_O^2 W_V^2 W_E(i)>`` and ``match`` ``W_E(j)^T W_K^2 W_O^1 W_V^1 W_E(i)`` (rows ``j``: the
        query token; columns ``i``: the key token).
    """
    check_instance("model", model, Transformer)
    with torch.no_grad():
        E, U = model.embed.weight, model.head.weight
        b1, b2 = model.blocks[0].attn, model.blocks[1].attn
        ffn = model.blocks[1].ffn
        ff2 = (ffn(E) @ U.T).numpy() if ffn is not None else np.full((E.shape[0],) * 2, np.nan)
        value2 = ((E @ b2.W_V[0].T @ b2.W_O.T) @ U.T).numpy()
        ov1 = E @ b1.W_V[0].T @ b1.W_O.T  # (V, d): W_O^1 W_V^1 W_E(i)
        match = (E @ b2.W_K[0] @ ov1.T).numpy()  # score x_q^T W_K x_k (W_Q = I, k = W_K x)
    return {"ff2": ff2, "value2": value2, "match": match}


def recall_experiment(
    setting: dict, steps: int, seed: int = 0, triggers=(0,), ffn=("mlp", "mlp"), pretrain_steps: int = 0,
    device="cpu",
) -> dict:
    """One cacheable run (plain data only, for :func:`lib.sweep.cached_call`): optional clean pre-training
    (``alpha = 0``) for ``pretrain_steps``, then ``steps`` of training at ``setting["alpha"]``; ``device`` as
    for :func:`train_recall` (the states come back on the CPU).

    Returns:
        dict with ``history`` (the noisy phase), ``pre_history`` (start and end of pre-training; empty
        without), ``state`` (the final parameters and buffers as tensors), ``pre_state`` (after pre-training;
        empty without), ``diverged`` and ``alphabet``.
    """
    check_int("pretrain_steps", pretrain_steps, minimum=0)
    pre_hist, pre_state = {}, {}
    model = None
    if pretrain_steps:
        pre = train_recall(  # measured only at its start and end: nothing plots the clean phase
            setting, pretrain_steps, seed=seed, alpha=0.0, triggers=triggers, ffn=ffn, record_steps=[0], device=device
        )
        model, pre_hist = pre["model"], pre["history"]
        pre_state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    run = train_recall(setting, steps, seed=seed, model=model, triggers=triggers, ffn=ffn, device=device)
    state = {k: v.detach().cpu().clone() for k, v in run["model"].state_dict().items()}
    return {
        "history": run["history"],
        "pre_history": pre_hist,
        "state": state,
        "pre_state": pre_state,
        "diverged": bool(run["diverged"]),
        "alphabet": run["alphabet"],
    }


def restore_model(setting: dict, state: dict, ffn=("mlp", "mlp")) -> Transformer:
    """Rebuild a trained :func:`recall_model` from the ``state`` of :func:`recall_experiment`."""
    check_instance("setting", setting, dict)
    check_instance("state", state, dict)
    model = recall_model(setting["n_chars"], setting["d"], setting["T"], ffn=ffn)
    model.load_state_dict({k: torch.as_tensor(v) for k, v in state.items()})
    return model


def eval_batches(setting: dict, seed: int = 0, triggers=(0,)) -> tuple:
    """The fixed clean and noisy evaluation batches that :func:`train_recall` uses for ``seed``."""
    check_instance("setting", setting, dict)
    check_seed("seed", seed)
    _, pi_u, pi_b = char_bigram(setting["n_chars"], uniform=setting.get("uniform", False))
    g = torch.Generator().manual_seed(10_000 + seed)
    clean = sample_recall(pi_u, pi_b, setting["n_test"], setting["T"], 0.0, triggers, g)
    noisy = sample_recall(pi_u, pi_b, setting["n_test"], setting["T"], setting["alpha"], triggers, g)
    return clean, noisy


def dropped_scores(model: Transformer, clean: tuple, triggers=(0,)) -> dict:
    """Clean-test ``p(y_bar)``, ``p(tau)``, loss and accuracy with nothing, ``F_1`` or ``F_2`` removed (the
    ablations of Figs 4.9-4.11).

    Returns:
        ``{"full" | "drop_F1" | "drop_F2": {"p_correct", "p_noise", "loss", "acc"}}`` (floats).
    """
    check_instance("model", model, Transformer)
    check_instance("clean", clean, tuple)
    z, _ = clean
    x, y = z[:, :-1], z[:, 1:]
    mask = repeated_trigger_mask(x, triggers)
    tau = model.cfg.vocab_size - 1
    out = {}
    saved = [b.ffn for b in model.blocks]
    try:
        for name, drop in (("full", None), ("drop_F1", 0), ("drop_F2", 1)):
            for i, b in enumerate(model.blocks):
                b.ffn = None if i == drop else saved[i]
            with torch.no_grad():
                logp = torch.log_softmax(model(x)[mask], -1)
            tgt = y[mask]
            out[name] = {
                "p_correct": float(logp.gather(1, tgt[:, None]).exp().mean()),
                "p_noise": float(logp[:, tau].exp().mean()),
                "loss": float(-logp.gather(1, tgt[:, None]).mean()),
                "acc": float((logp.argmax(-1) == tgt).double().mean()),
            }
    finally:
        for b, f in zip(model.blocks, saved):
            b.ffn = f
    return out


def pre_ff2_states(model: Transformer, clean: tuple, triggers=(0,)) -> torch.Tensor:
    """Residual stream entering ``F_2`` at the repeated triggers of ``clean``: ``(n, d)`` (for LASER sweeps)."""
    check_instance("model", model, Transformer)
    check_instance("clean", clean, tuple)
    z = clean[0][:, :-1]
    with torch.no_grad():
        u, _, _ = _forward_parts(model, z)
    return u[repeated_trigger_mask(z, triggers)]


def repeated_targets(clean: tuple, triggers=(0,)) -> torch.Tensor:
    """Next tokens at the repeated triggers of ``clean`` (the order of :func:`pre_ff2_states`)."""
    check_instance("clean", clean, tuple)
    z = clean[0]
    return z[:, 1:][repeated_trigger_mask(z[:, :-1], triggers)]


def value_rank_scores(model: Transformer, clean: tuple, ranks, triggers=(0,)) -> dict:
    """Clean-test scores of a model whose layer-1 value-output product ``W_O^1 W_V^1`` is truncated to each rank
    (Fig 4.12, for the model without FF layers); the weights are restored afterwards.

    Returns:
        ``{rank: {"p_correct", "p_noise", "loss", "acc"}}``.
    """
    check_instance("model", model, Transformer)
    check_instance("clean", clean, tuple)
    check_array("ranks", ranks)
    attn = model.blocks[0].attn
    if attn.n_heads != 1:
        raise ValueError("value_rank_scores needs a single-head layer 1")
    saved_v, saved_o = attn.W_V.detach().clone(), attn.W_O.detach().clone()
    prod = saved_o @ saved_v[0]
    out = {}
    try:
        for k in ranks:
            check_int("ranks", int(k), minimum=0)
            with torch.no_grad():
                attn.W_V[0].copy_(low_rank(prod, int(k)))
                attn.W_O.copy_(torch.eye(prod.shape[0]))
            out[int(k)] = dropped_scores(model, clean, triggers)["full"]
    finally:
        with torch.no_grad():
            attn.W_V.copy_(saved_v)
            attn.W_O.copy_(saved_o)
    return out
