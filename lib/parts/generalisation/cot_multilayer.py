"""Fig 7.7 of the thesis: does a deeper, multi-head transformer trained on CoT prompts attend like Proposition 3?

A three-layer, two-head causal transformer (:mod:`lib.models.transformer`, pre-LayerNorm, FFN, no relative
positions) reads the CoT training prompts of eq. (7.1) as a sequence of columns (the thesis's positional codes
``c_k`` inside each column) and is trained with Adam on the squared loss of the output at the query column. The
thesis gives no architecture details; these are the book's choices. The attention masses on the four key types
of Fig 7.6 are measured, for every layer and head, on CoT test prompts whose query block holds the true earlier
steps (teacher forcing), at stored iterations along training.
"""

from __future__ import annotations

import numpy as np
import torch

from lib import curves
from lib.config import (
    check_device,
    check_in,
    check_int,
    check_positive,
    check_seed,
)
from lib.data import prompts
from lib.models.transformer import Transformer, TransformerConfig
from lib.parts.generalisation.chain_of_thought import cot_training_batch, sample_test_prompts
from lib.train import train

__all__ = ["multilayer_cot_model", "train_multilayer_cot"]


_POSITIONS = ("codes", "sinusoidal")


def multilayer_cot_model(d: int, n_steps: int, *, d_model: int = 64, n_layers: int = 3, n_heads: int = 2,
                         seed: int = 0, positions: str = "codes", max_len: int = 512) -> Transformer:
    """The causal transformer of Fig 7.7: columns of ``2 d + K`` entries in, ``d`` out, strict causality (a
    column never attends to itself, as in eq. 7.2). ``positions="sinusoidal"`` (Fig F.1) adds the fixed sinusoidal
    position of each of the first ``max_len`` places to the embedding.
    """
    check_seed("seed", seed)
    check_int("d", d, minimum=1)
    check_int("n_steps", n_steps, minimum=1)
    check_in("positions", positions, _POSITIONS)
    check_int("max_len", max_len, minimum=1)
    torch.manual_seed(seed)
    sinusoidal = positions == "sinusoidal"
    cfg = TransformerConfig(d_in=2 * d + n_steps, d_model=d_model, n_layers=n_layers, n_heads=n_heads, rpe="none",
                            causal="strict", ffn=True, layer_norm=True, d_out=d, bias=True, max_len=max_len,
                            random_pos=sinusoidal)
    model = Transformer(cfg)
    if sinusoidal:  # the frozen position buffer holds the standard sinusoid instead of random draws
        place = torch.arange(max_len, dtype=torch.float32)[:, None]
        freq = torch.exp(-np.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
        table = torch.zeros(max_len, d_model)
        table[:, 0::2] = torch.sin(place * freq)
        table[:, 1::2] = torch.cos(place * freq)[:, : d_model // 2]
        model.fixed_pos.copy_(table)
    return model


def _strip_codes(x: torch.Tensor, d: int, positions: str) -> torch.Tensor:
    """The columns as the model reads them: with sinusoidal positions the step codes ``c_k`` are zeroed."""
    if positions == "codes":
        return x
    x = x.clone()
    x[..., 2 * d:] = 0.0
    return x


def _query_position(valid: torch.Tensor, n_context: int) -> torch.Tensor:
    return n_context + valid[:, n_context:].sum(1)


def train_multilayer_cot(*, d: int = 30, n_patterns: int = 20, n_steps: int = 2, n_examples: int = 10,
                         alpha: float = 0.4, batch: int = 64, lr: float = 1e-3, steps: int = 1000,
                         checkpoints=(), n_test: int = 100, d_model: int = 64, n_layers: int = 3, n_heads: int = 2,
                         seed: int = 0, device="cpu", positions: str = "codes") -> dict:
    """Train the transformer of Fig 7.7 with Adam on CoT prompts and record the attention masses.

    Args:
        d, n_patterns, n_steps, n_examples, alpha: the prompt settings (``d_X``, ``M``, ``K``, ``l_tr``, ``alpha``).
        batch, lr, steps: Adam batch, step size and iterations.
        checkpoints: iterations at which the masses are measured (step 0 and the last are added).
        n_test: CoT test prompts (10 TSR patterns, ``alpha' = 0.8``, ``tau = 0.5``, ``rho = 0.8``, noise 0.2,
            ``l_ts = n_examples``).
        d_model, n_layers, n_heads: the architecture.
        positions: ``"codes"`` (the thesis's step codes ``c_k`` in each column, Fig 7.7) or ``"sinusoidal"`` (codes
            zeroed, standard sinusoidal positions added to the embeddings, Fig F.1).
        seed: seeds initialisation, training and test prompts.
        device: where to train (:func:`lib.config.check_device`); initialisation and prompts are drawn on the
            CPU from the same seeds and moved there; the masses are CPU NumPy arrays.

    Returns:
        dict with ``checkpoints``, ``masses`` ``(n_ckpt, layers, heads, 4)`` (types as in
        ``chain_of_thought.TYPE_NAMES``), ``step`` and ``loss`` (at the checkpoints) and ``diverged``.
    """
    check_int("d", d, minimum=1)
    check_int("n_steps", n_steps, minimum=1)
    check_int("n_examples", n_examples, minimum=1)
    check_int("n_patterns", n_patterns, minimum=1)
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    check_int("n_test", n_test, minimum=1)
    dev = check_device("device", device)
    model = multilayer_cot_model(d, n_steps, d_model=d_model, n_layers=n_layers, n_heads=n_heads, seed=seed,
                                 positions=positions, max_len=n_examples * n_steps + n_steps + 1)
    n_ctx = n_examples * n_steps
    tsr, idx, tokens, truth, _ = sample_test_prompts(n_test, n_examples, 0.8, 0.5, 0.8, "distractor", d,
                                                     n_patterns, 10, n_steps, 0.2, seed + 7)
    truth_tokens = tsr[truth]  # the query block holds the clean TSR patterns of the true chain
    ckpts = sorted({int(c) for c in checkpoints if 0 <= int(c) <= steps} | {0, steps})
    masses = {}

    def batch_fn(step, generator):
        b = cot_training_batch(batch, n_examples=n_examples, alpha=alpha, n_patterns=n_patterns, d=d,
                               n_steps=n_steps, generator=generator)
        return {k: v.to(dev) for k, v in b.items()}  # drawn on the CPU, then moved (no-ops there)

    def loss_fn(m, b):
        pos = _query_position(b["valid"], n_ctx)
        out = m(_strip_codes(b["keys"], d, positions))[torch.arange(b["keys"].shape[0], device=pos.device), pos]
        return 0.5 * ((out - b["target"]) ** 2).sum(-1).mean()

    def record(m, step):
        if step in ckpts:
            masses[step] = _masses(m, tokens, idx, truth, truth_tokens, n_steps, d, positions)
        return {}

    res = train(model, loss_fn, lr=lr, steps=steps, optimizer="adam", batch_fn=batch_fn, record=record,
                record_every=ckpts, generator=torch.Generator().manual_seed(seed + 1), progress=False, device=dev)
    keep = [c for c in ckpts if c in masses]
    return {"checkpoints": np.array(keep), "masses": np.stack([masses[c] for c in keep]),
            "step": np.asarray(res.history["step"]), "loss": np.asarray(res.history["loss"]),
            "diverged": bool(res.diverged)}


def _masses(model, tokens, idx, truth, truth_tokens, n_steps, d, positions):
    """``(layers, heads, 4)`` mean attention masses of the query columns (steps averaged); the query block is
    built from the clean TSR tokens of the true chain."""
    n, n_ex = idx.shape[:2]
    ctx = prompts.cot_columns(tokens)
    ctx_in = idx[:, :, :-1].reshape(n, -1)
    ctx_step = torch.arange(n_steps).repeat(n_ex).expand(n, -1)
    out = []
    for k in range(1, n_steps + 1):
        qcols, _ = prompts.query_columns(truth_tokens, torch.full((n,), k), n_steps)
        pos = ctx.shape[1] + k - 1
        with torch.no_grad():
            model(_strip_codes(torch.cat([ctx, qcols], dim=1), d, positions).to(next(model.parameters()).device))
        key_in = torch.cat([ctx_in, truth[:, :k - 1]], dim=1)
        key_step = torch.cat([ctx_step, torch.arange(k - 1).expand(n, -1)], dim=1)
        same_p = (key_in == truth[:, k - 1:k]).numpy()[:, None]
        same_s = (key_step == k - 1).numpy()[:, None]
        out.append(np.stack([curves.attention_mass_by_type(a[:, :, pos, :pos].cpu().numpy(), same_p, same_s).mean(0)
                             for a in model.attention_maps]))
    return np.mean(out, axis=0)
