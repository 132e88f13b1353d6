"""Loading pretrained causal language models with Hugging Face ``transformers``, offline only.

The thesis studies Pythia checkpoints along training (``revision="stepN"``), GPT-2, Phi-3 and Llama. Their weights
are out of reach of the book's build, so :func:`load_pretrained` is never called there; it is kept as the real loading
code and tested on a tiny GPT-NeoX written by ``save_pretrained`` into a folder. ``HF_HUB_OFFLINE=1`` is set before
``transformers`` is imported, so a hub name that is not in the local cache fails at once instead of downloading.
Warnings and progress bars (which go to stderr) are silenced.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import transformers  # noqa: E402
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM  # noqa: E402

from ..config import check_seed  # noqa: E402

transformers.logging.set_verbosity_error()
transformers.logging.disable_progress_bar()


def tiny_gpt_neox(
    vocab_size: int, d_model: int = 64, n_layers: int = 2, n_heads: int = 2, max_len: int = 32, seed: int = 0
):
    """A small randomly initialised GPT-NeoX causal language model (Pythia's architecture).

    Args:
        vocab_size: number of token ids (>= 2).
        d_model: residual width (>= 2, divisible by ``n_heads``); the MLP is ``4 * d_model`` wide.
        n_layers: number of blocks (>= 1).
        n_heads: attention heads per block (>= 1).
        max_len: longest sequence (>= 1).
        seed: seed of the initialisation.

    Returns:
        A ``GPTNeoXForCausalLM`` in training mode (dropout is zero in GPT-NeoX's default config).
    """
    import torch

    for name, value, low in (
        ("vocab_size", vocab_size, 2),
        ("d_model", d_model, 2),
        ("n_layers", n_layers, 1),
        ("n_heads", n_heads, 1),
        ("max_len", max_len, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if d_model % n_heads:
        raise ValueError(f"d_model must be divisible by n_heads, got {d_model} and {n_heads}")
    check_seed("seed", seed)
    config = GPTNeoXConfig(
        vocab_size=vocab_size,
        hidden_size=d_model,
        num_hidden_layers=n_layers,
        num_attention_heads=n_heads,
        intermediate_size=4 * d_model,
        max_position_embeddings=max_len,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    return GPTNeoXForCausalLM(config)


def load_pretrained(name: str, revision: str | None = None):
    """Load a causal language model and its tokenizer (if any) from a local folder or the local hub cache.

    Args:
        name: a folder written by ``save_pretrained`` or a hub name such as ``"EleutherAI/pythia-1b"`` (offline:
            it must already be cached).
        revision: a hub revision, e.g. Pythia's training checkpoints ``"step14000"``; ``None`` for the default.

    Returns:
        ``(model, tokenizer)``; ``tokenizer`` is ``None`` when none can be built. The model is in eval mode.

    Raises:
        ValueError: for an empty ``name`` or a ``revision`` that is not a non-empty string.
        OSError: when the weights are not available offline.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if revision is not None and (not isinstance(revision, str) or not revision):
        raise ValueError(f"revision must be None or a non-empty string, got {revision!r}")
    kwargs = {} if revision is None else {"revision": revision}
    model = transformers.AutoModelForCausalLM.from_pretrained(name, **kwargs)
    model.eval()
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(name, **kwargs)
    except (OSError, ValueError, KeyError):
        tokenizer = None
    return model, tokenizer
