"""Language models in miniature: a template corpus, a 2-layer GPT-NeoX trained on it, LASER sweeps.

Stand-in for Sec 4.5 and App. C.1 of Chen's thesis (Pythia along training, LASER on MLP input weights). The corpus
mixes three kinds of sentence built from a small word vocabulary:

* IOI: ``when A and B went to the store , B gave a drink to A`` (a fraction ends ``... to the dog`` instead);
* prepositional filler: ``A sat in the house``, ``B went to the park`` (so ``"the"`` follows prepositions);
* facts: ``C is located in K`` mixed with ``C is located in the north of K``.

Training uses ``lib.train.train`` (AdamW, fresh sentences each step). Measurements read next-token probabilities at
the IOI prompt (``... gave a drink to``) and the fact prompt (``C is located in``).
"""

from __future__ import annotations

import numpy as np
import torch

from lib.config import (
    check_array,
    check_device,
    check_instance,
    check_int,
    check_int_array,
    check_positive,
    check_range,
    check_seed,
)
from lib.models.hf import tiny_gpt_neox
from lib.models.laser import laser
from lib.train import train

NAMES = ("mary", "john", "anna", "paul", "lisa", "mark", "emma", "tom")
CITIES = ("madrid", "paris", "rome", "berlin", "lisbon", "vienna", "oslo", "dublin", "lyon", "milan")
COUNTRY_OF = {
    "madrid": "spain",
    "paris": "france",
    "rome": "italy",
    "berlin": "germany",
    "lisbon": "portugal",
    "vienna": "austria",
    "oslo": "norway",
    "dublin": "ireland",
    "lyon": "france",
    "milan": "italy",
}
PLACES = ("store", "park", "house", "garden", "school")
OBJECTS = ("drink", "book", "ball", "gift")
PREPS = ("in", "to", "at", "near")
VERBS = ("sat", "went", "stood", "waited")
_FIXED = "<pad> when and went the , gave a to is located of north south dog".split()
VOCAB = tuple(
    dict.fromkeys(
        _FIXED
        + list(NAMES)
        + list(CITIES)
        + sorted(set(COUNTRY_OF.values()))
        + list(PLACES)
        + list(OBJECTS)
        + list(PREPS)
        + list(VERBS)
    )
)
TOKEN = {w: i for i, w in enumerate(VOCAB)}
SEQ_LEN = 16


def template_sentence(kind: str, rng: np.random.Generator, dog_fraction: float = 0.2) -> list[str]:
    """One sentence of the template corpus as a list of words.

    Args:
        kind: ``"ioi"``, ``"prep"`` or ``"fact"``.
        rng: numpy generator.
        dog_fraction: probability in ``[0, 1]`` that an IOI sentence ends ``to the dog`` instead of the name.

    Returns:
        The words; an IOI sentence's last word is the indirect object ``A`` (or ``dog``), a fact's the country.
    """
    check_instance("rng", rng, np.random.Generator)
    check_range("dog_fraction", dog_fraction, 0, 1)
    if kind == "ioi":
        a, b = rng.choice(NAMES, 2, replace=False)
        place, obj = rng.choice(PLACES), rng.choice(OBJECTS)
        end = ["the", "dog"] if rng.random() < dog_fraction else [a]
        return ["when", a, "and", b, "went", "to", "the", place, ",", b, "gave", "a", obj, "to", *end]
    if kind == "prep":
        return [rng.choice(NAMES), rng.choice(VERBS), rng.choice(PREPS), "the", rng.choice(PLACES)]
    if kind == "fact":
        city = rng.choice(CITIES)
        mid = ["the", rng.choice(("north", "south")), "of"] if rng.random() < 0.5 else []
        return [city, "is", "located", "in", *mid, COUNTRY_OF[city]]
    raise ValueError(f"kind must be 'ioi', 'prep' or 'fact', got {kind!r}")


def encode(words) -> torch.Tensor:
    """Token ids of a list of words, right-padded with ``<pad>`` (id 0) to ``SEQ_LEN``."""
    check_instance("words", words, (list, tuple))
    if not words or any(w not in TOKEN for w in words):
        raise ValueError(f"words must be a non-empty list of words of the vocabulary, got {words!r}")
    ids = [TOKEN[w] for w in words]
    if len(ids) > SEQ_LEN:
        raise ValueError(f"words must have at most {SEQ_LEN} entries, got {len(ids)}")
    return torch.tensor(ids + [0] * (SEQ_LEN - len(ids)))


def corpus_batch(batch: int, rng: np.random.Generator, mix=(0.4, 0.3, 0.3), dog_fraction: float = 0.2):
    """A batch of padded sentences, ``(ids, mask)``: ``mask[b, t]`` marks positions whose next token is a word.

    Args:
        batch: number of sentences (>= 1).
        rng: numpy generator.
        mix: probabilities of IOI, preposition and fact sentences (non-negative, summing to 1).
        dog_fraction: see :func:`template_sentence`.
    """
    check_instance("rng", rng, np.random.Generator)
    check_array("mix", mix)
    check_int("batch", batch, minimum=1)
    mix = np.asarray(mix, dtype=float)
    if mix.shape != (3,) or (mix < 0).any() or abs(mix.sum() - 1) > 1e-9:
        raise ValueError(f"mix must be 3 non-negative probabilities summing to 1, got {mix.tolist()}")
    kinds = rng.choice(["ioi", "prep", "fact"], batch, p=mix)
    ids = torch.stack([encode(template_sentence(k, rng, dog_fraction)) for k in kinds])
    mask = ids[:, 1:] != 0
    return ids, mask


def lm_loss(model, ids, mask) -> torch.Tensor:
    """Mean next-token cross-entropy over the masked positions."""
    logits = model(ids[:, :-1]).logits
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
    return (losses * mask).sum() / mask.sum()


def probe_prompts(seed: int = 1234, n: int = 40):
    """Fixed evaluation prompts: IOI prompts with their ``(IO, S)`` ids and fact prompts with the country id.

    Returns:
        ``{"ioi": (ids, io, s), "fact": (ids, k)}``; prompts are padded, their last word at ``lengths - 1``.
    """
    check_seed("seed", seed)
    check_int("n", n, minimum=1)
    rng = np.random.default_rng(seed)
    ioi, io, s, facts, k = [], [], [], [], []
    for _ in range(n):
        w = template_sentence("ioi", rng, 0.0)
        ioi.append(w[:-1])
        io.append(TOKEN[w[1]])
        s.append(TOKEN[w[3]])
    for city in CITIES:
        facts.append([city, "is", "located", "in"])
        k.append(TOKEN[COUNTRY_OF[city]])
    return {
        "ioi": (torch.stack([encode(w) for w in ioi]), len(ioi[0]), torch.tensor(io), torch.tensor(s)),
        "fact": (torch.stack([encode(w) for w in facts]), 4, torch.tensor(k)),
    }


def _checked_probe_args(model, prompts) -> dict:
    """``prompts`` (default :func:`probe_prompts`) after checking ``model`` (a torch module) and ``prompts`` (None
    or a dict like :func:`probe_prompts`' result)."""
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a causal language model (a torch module), got {type(model).__name__}")
    if prompts is None:
        return probe_prompts()
    if not isinstance(prompts, dict) or set(prompts) != {"ioi", "fact"}:
        raise ValueError(f"prompts must be None or a result of probe_prompts, got {type(prompts).__name__}")
    return prompts


@torch.no_grad()
def probe(model, prompts=None) -> dict[str, float]:
    """Mean next-token probabilities at the probe prompts.

    Returns:
        ``p_io``, ``p_s``, ``p_the_ioi`` (IOI prompt) and ``p_k``, ``p_the_fact`` (fact prompt).
    """
    prompts = _checked_probe_args(model, prompts)
    dev = next(model.parameters()).device  # the prompts are moved to the model (no-ops on the CPU)
    ids, L, io, s = (t.to(dev) if isinstance(t, torch.Tensor) else t for t in prompts["ioi"])
    p = torch.softmax(model(ids[:, :L]).logits[:, -1], -1)
    r = torch.arange(len(io), device=dev)
    out = {"p_io": p[r, io].mean().item(), "p_s": p[r, s].mean().item(), "p_the_ioi": p[:, TOKEN["the"]].mean().item()}
    ids, L, k = (t.to(dev) if isinstance(t, torch.Tensor) else t for t in prompts["fact"])
    p = torch.softmax(model(ids[:, :L]).logits[:, -1], -1)
    out["p_k"] = p[torch.arange(len(k), device=dev), k].mean().item()
    out["p_the_fact"] = p[:, TOKEN["the"]].mean().item()
    return out


def train_template_lm(
    steps: int = 600,
    batch: int = 32,
    d_model: int = 64,
    n_layers: int = 2,
    lr: float = 3e-3,
    seed: int = 0,
    record_steps=(),
    dog_fraction: float = 0.2,
    device="cpu",
):
    """Train a tiny GPT-NeoX on the template corpus with AdamW, probing along training.

    Args:
        steps: training steps (>= 1).
        batch: sentences per step (>= 1).
        d_model: residual width (>= 4, even; two heads).
        n_layers: blocks (>= 1).
        lr: AdamW learning rate (> 0).
        seed: seed of the initialisation and the data.
        record_steps: steps at which to probe (``probe``'s five probabilities).
        dog_fraction: see :func:`template_sentence`.
        device: where to train (:func:`lib.config.check_device`); the model is initialised and the batches
            drawn on the CPU as before and moved there; ``model`` is returned there.

    Returns:
        ``(model, history)`` with ``history`` a dict of lists keyed ``step`` and :func:`probe`'s names, plus
        ``diverged`` (bool) and ``diverged_step``.
    """
    check_positive("lr", lr)
    check_int("steps", steps, minimum=1)
    check_int("d_model", d_model, minimum=4)
    if isinstance(record_steps, (str, bytes)) or not hasattr(record_steps, "__len__"):
        raise ValueError(f"record_steps must be a list of steps, got {record_steps!r}")
    if len(record_steps):
        check_int_array("record_steps", record_steps, minimum=0)
    dev = check_device("device", device)
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    model = tiny_gpt_neox(len(VOCAB), d_model=d_model, n_layers=n_layers, n_heads=2, max_len=SEQ_LEN, seed=seed)
    data_rng = np.random.default_rng(seed)
    prompts = probe_prompts()

    def batch_fn(step, generator):
        ids, mask = corpus_batch(batch, data_rng, dog_fraction=dog_fraction)
        return ids.to(dev), mask.to(dev)

    def record(m, step):
        m.eval()
        out = probe(m, prompts)
        m.train()
        return out

    res = train(
        model,
        lambda m, b: lm_loss(m, *b),
        lr=lr,
        steps=steps,
        optimizer="adamw",
        batch_fn=batch_fn,
        record=record,
        record_every=sorted(set(record_steps)) or steps,
        progress=False,
        weight_decay=0.0,
        device=dev,
    )
    model.eval()
    hist = {k: [float(v) for v in vals] for k, vals in res.history.items() if k in ("step", *probe(model, prompts))}
    hist["diverged"] = bool(res.diverged)
    hist["diverged_step"] = res.diverged_step
    return model, hist


def laser_sweep(model, ranks, prompts=None) -> dict:
    """LASER on the MLP input matrix (``dense_h_to_4h``) of every layer at every rank.

    Args:
        model: a GPT-NeoX causal LM.
        ranks: kept ranks (each >= 0).

    Returns:
        ``{"ranks": [...], "layers": L, "probe": array (L, len(ranks), 5)}`` in :func:`probe`'s key order, plus
        ``"full"`` (the untruncated probe) and ``"keys"``.
    """
    prompts = _checked_probe_args(model, prompts)
    if not hasattr(model, "gpt_neox"):
        raise ValueError(f"model must be a GPT-NeoX causal LM, got {type(model).__name__}")
    ranks = [int(r) for r in check_int_array("ranks", ranks, minimum=0)]
    full = probe(model, prompts)
    keys = list(full)
    layers = model.gpt_neox.layers
    out = np.zeros((len(layers), len(ranks), len(keys)))
    for i, layer in enumerate(layers):
        for j, r in enumerate(ranks):
            with laser(layer.mlp.dense_h_to_4h, rank=r):
                p = probe(model, prompts)
            out[i, j] = [p[k] for k in keys]
    return {"ranks": ranks, "layers": len(layers), "probe": out, "full": full, "keys": keys}


def run_template_lm(steps: int, batch: int, d_model: int, n_layers: int, lr: float, seed: int, record_steps, ranks,
                    device="cpu"):
    """Train (:func:`train_template_lm`, on ``device``) and sweep LASER (:func:`laser_sweep`); plain data only,
    for caching.

    Returns:
        ``{"history": ..., "sweep": ...}`` with the sweep's ``probe`` as a NumPy array.
    """
    check_int_array("ranks", ranks, minimum=0)
    model, hist = train_template_lm(
        steps=steps, batch=batch, d_model=d_model, n_layers=n_layers, lr=lr, seed=seed, record_steps=record_steps,
        device=device,
    )
    return {"history": hist, "sweep": laser_sweep(model, ranks)}
