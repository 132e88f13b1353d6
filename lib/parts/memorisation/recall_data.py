"""Data of the noisy in-context recall task (Chen's thesis, Sec 4.4): a character bigram chain, a trigger whose
next token is a sequence-specific target or, with probability ``alpha``, a generic noise token.

* :func:`char_bigram` - unigram and bigram of the ``n_chars`` most frequent characters of a text (by default
  the help topics bundled with CPython, ``pydoc_data.topics``: no download);
* :func:`sample_recall` - a batch of sequences, vectorised over the batch, with the targets ``y_bar``;
* :func:`repeated_trigger_mask` - the positions that carry the loss: a trigger seen earlier in the sequence;
* :func:`recall_counts` - per-sequence counts of triggers, noise tokens and targets (for the moment lemmas).

Token ids: ``0 .. N-1`` are the characters (0 the most frequent), ``N`` is the noise token ``tau``.

Example::

    alphabet, pi_u, pi_b = char_bigram(24)
    z, y_bar = sample_recall(pi_u, pi_b, batch=32, T=64, alpha=0.5, generator=torch.Generator().manual_seed(0))
    mask = repeated_trigger_mask(z[:, :-1], torch.tensor([0]))
"""

from __future__ import annotations

import functools
from collections import Counter

import torch

from lib.config import check_array, check_bool, check_int, check_range

__all__ = ["char_bigram", "sample_recall", "repeated_trigger_mask", "recall_counts"]


@functools.lru_cache(maxsize=4)
def _topics_text() -> str:
    from pydoc_data import topics

    return "".join(topics.topics[k] for k in sorted(topics.topics))


def char_bigram(n_chars: int, text: str | None = None, uniform: bool = False):
    """Character statistics on the ``n_chars`` most frequent characters of a text.

    Characters outside the alphabet are dropped before the bigram is counted. Rows of the bigram that were
    never observed are uniform.

    Args:
        n_chars: alphabet size ``N`` (2..256).
        text: the corpus (default: CPython's ``pydoc_data.topics``, about 465k characters).
        uniform: return uniform ``pi_u`` and ``pi_b`` instead (the theory's setting), same alphabet.

    Returns:
        ``(alphabet, pi_u, pi_b)``: a string of ``N`` characters by decreasing frequency, the ``(N,)`` unigram
        and the ``(N, N)`` row-stochastic bigram ``pi_b[i, j] = P(next = j | current = i)`` (float64).
    """
    check_int("n_chars", n_chars, minimum=2, maximum=256)
    check_bool("uniform", uniform)
    text = _topics_text() if text is None else text
    counts = Counter(text)
    if len(counts) < n_chars:
        raise ValueError(f"n_chars must be at most the number of distinct characters ({len(counts)}), got {n_chars}")
    alphabet = "".join(c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n_chars])
    if uniform:
        return (
            alphabet,
            torch.full((n_chars,), 1.0 / n_chars, dtype=torch.float64),
            torch.full((n_chars, n_chars), 1.0 / n_chars, dtype=torch.float64),
        )
    index = {c: i for i, c in enumerate(alphabet)}
    ids = torch.tensor([index[c] for c in text if c in index], dtype=torch.int64)
    pi_u = torch.bincount(ids, minlength=n_chars).to(torch.float64)
    pi_u /= pi_u.sum()
    pairs = torch.bincount(ids[:-1] * n_chars + ids[1:], minlength=n_chars * n_chars).to(torch.float64)
    pi_b = pairs.reshape(n_chars, n_chars)
    rows = pi_b.sum(1, keepdim=True)
    pi_b = torch.where(rows > 0, pi_b / rows.clamp_min(1.0), torch.full_like(pi_b, 1.0 / n_chars))
    return alphabet, pi_u, pi_b


def sample_recall(
    pi_u: torch.Tensor,
    pi_b: torch.Tensor,
    batch: int,
    T: int,
    alpha: float,
    triggers=(0,),
    generator: torch.Generator | None = None,
):
    """Sample the noisy in-context recall chain (thesis Sec 4.4, with the code's multi-trigger option).

    Each sequence draws one target ``y_bar[k] ~ Unif[N]`` per trigger ``q_k`` and ``z_1 ~ pi_u``. After a trigger
    ``q_k`` the next token is ``y_bar[k]`` w.p. ``1 - alpha`` and the noise token ``tau = N`` w.p. ``alpha``;
    after ``tau`` it is drawn from ``pi_u``; after any other token ``i`` from ``pi_b[i]``. The last position is
    not forced to be a trigger (the loss uses every repeated trigger, see :func:`repeated_trigger_mask`).

    Args:
        pi_u: ``(N,)`` initial and after-noise distribution; pi_b: ``(N, N)`` bigram.
        batch: number of sequences (>= 1); T: inputs per sequence (>= 2): ``T + 1`` tokens are drawn.
        alpha: noise probability in ``[0, 1]`` (0: the clean test law).
        triggers: trigger ids (distinct, in ``[0, N)``).
        generator: torch generator (default: seeded with 0).

    Returns:
        ``z`` ``(batch, T + 1)`` int64 tokens in ``[0, N]`` and ``y_bar`` ``(batch, len(triggers))``.
    """
    check_array("pi_u", pi_u)
    check_array("pi_b", pi_b)
    check_array("triggers", triggers)
    pi_u, pi_b = torch.as_tensor(pi_u, dtype=torch.float64), torch.as_tensor(pi_b, dtype=torch.float64)
    N = pi_u.shape[0]
    if pi_u.ndim != 1 or pi_b.shape != (N, N):
        raise ValueError(f"pi_u must be (N,) and pi_b (N, N), got {tuple(pi_u.shape)} and {tuple(pi_b.shape)}")
    check_int("batch", batch, minimum=1)
    check_int("T", T, minimum=2)
    check_range("alpha", alpha, 0.0, 1.0)
    trig = torch.as_tensor(triggers, dtype=torch.int64).reshape(-1)
    if len(trig) == 0 or int(trig.min()) < 0 or int(trig.max()) >= N or len(set(trig.tolist())) != len(trig):
        raise ValueError(f"triggers must be distinct ids in [0, {N}), got {trig.tolist()}")
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    k = len(trig)
    y_bar = torch.randint(0, N, (batch, k), generator=g)
    # the transition table with the noise row appended: row N (after tau) is pi_u
    table = torch.cat([pi_b, pi_u[None]], 0)
    z = torch.empty(batch, T + 1, dtype=torch.int64)
    z[:, 0] = torch.multinomial(pi_u.expand(batch, N), 1, generator=g)[:, 0]
    is_trig = torch.zeros(N + 1, dtype=torch.bool)
    is_trig[trig] = True
    slot = torch.full((N + 1,), -1, dtype=torch.int64)
    slot[trig] = torch.arange(k)
    for t in range(T):
        cur = z[:, t]
        nxt = torch.multinomial(table[cur], 1, generator=g)[:, 0]
        noisy = torch.rand(batch, generator=g, dtype=torch.float64) < alpha
        hit = is_trig[cur]
        target = y_bar.gather(1, slot[cur].clamp_min(0)[:, None])[:, 0]
        recall = torch.where(noisy, torch.full_like(target, N), target)
        z[:, t + 1] = torch.where(hit, recall, nxt)
    return z, y_bar


def repeated_trigger_mask(tokens: torch.Tensor, triggers) -> torch.Tensor:
    """Positions whose token is a trigger that already occurred earlier in the same sequence (2nd and later
    occurrences): where the authors' code applies the loss.

    Args:
        tokens: ``(B, T)`` int ids; triggers: trigger ids.

    Returns:
        ``(B, T)`` bool.
    """
    check_array("tokens", tokens)
    check_array("triggers", triggers)
    tokens = torch.as_tensor(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape (B, T), got {tuple(tokens.shape)}")
    trig = torch.as_tensor(triggers, dtype=torch.int64).reshape(-1)
    out = torch.zeros(tokens.shape, dtype=torch.bool, device=tokens.device)
    for q in trig.tolist():
        hit = tokens == q
        out |= hit & (hit.cumsum(1) >= 2)
    return out


def recall_counts(z: torch.Tensor, y_bar: torch.Tensor, q: int, noise: int) -> dict:
    """Per-sequence counts in a one-trigger sample ``z`` ``(B, T)``.

    Returns:
        dict of float tensors ``(B,)``: ``q`` (occurrences of the trigger ``q``), ``noise`` (of the noise token)
        and ``y_bar`` (of each sequence's target ``y_bar``).
    """
    check_array("z", z)
    check_array("y_bar", y_bar)
    check_int("q", q, minimum=0)
    check_int("noise", noise, minimum=0)
    z = torch.as_tensor(z)
    y = torch.as_tensor(y_bar).reshape(-1)
    if z.ndim != 2 or y.shape[0] != z.shape[0]:
        raise ValueError("z must be (B, T) and y_bar (B,) or (B, 1)")
    return {
        "q": (z == q).sum(1).double(),
        "noise": (z == noise).sum(1).double(),
        "y_bar": (z == y[:, None]).sum(1).double(),
    }
