"""Synthetic sequence generators for the induction-head chapters.

Token sequences (integer ids, ``torch.int64`` of shape ``(B, T)``):

* :func:`random_tokens` - i.i.d. uniform tokens;
* :func:`repeat_prefix_tokens` - a random prefix of distinct tokens followed by copies of itself (the classic
  induction-head probe of Olsson et al., 2022): from the second copy on, the next token is predictable by an
  induction head;
* :func:`in_context_bigram_tokens` - random "trigger -> output" pairs planted in random text, the output of each
  trigger drawn afresh per sequence (Bietti et al., 2023);
* :func:`markov_tokens` - in-context Markov chains: each sequence has its own random transition matrix
  (Edelman et al., 2024; Nichani et al., 2024).

Continuous sequences (``torch`` floating tensors of shape ``(B, L, d)``, batch first; the paper writes the
transpose ``X in R^{d x L}``):

* :func:`gaussian_sequences` - i.i.d. ``N(0, I_d)`` tokens (the setting of Sec. 5 of Wang et al., 2024);
* :func:`uniform_sequences` - i.i.d. uniform tokens in a box (the bounded tokens of the proofs of Sec. 4).

Every generator takes ``rng``: a ``numpy.random.Generator``, an integer seed, or None (seed 0), so that a call
is reproducible; the samples are drawn with NumPy and returned as torch tensors.
"""

from __future__ import annotations

import numpy as np
import torch

from lib.config import check_array, check_instance, check_int, check_positive, check_range


def as_generator(rng=None) -> np.random.Generator:
    """A NumPy ``Generator`` from a Generator, an integer seed or None (seed 0)."""
    if rng is None:
        return np.random.default_rng(0)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise ValueError(f"rng must be a numpy Generator, a non-negative integer seed or None, got {rng!r}")


def _dtype(dtype):
    return torch.get_default_dtype() if dtype is None else dtype


def random_tokens(B: int, T: int, V: int, rng=None) -> torch.Tensor:
    """I.i.d. uniform tokens in ``{0..V-1}``: ``(B, T)`` int64."""
    check_int("B", B, minimum=1)
    check_int("T", T, minimum=1)
    check_int("V", V, minimum=1)
    return torch.from_numpy(as_generator(rng).integers(0, V, size=(B, T)).astype(np.int64))


def repeat_prefix_tokens(B: int, T: int, V: int, seg_min: int, seg_max: int, rng=None):
    """Sequences made of a random prefix of ``S`` distinct tokens repeated until length ``T``.

    ``S`` is drawn uniformly in ``[seg_min, seg_max]`` for each sequence, so the position of the first repeat
    varies and no fixed positional rule predicts the copies.

    Args:
        B, T, V: batch size, sequence length, vocabulary size (``seg_max <= V`` so the prefix tokens are distinct).
        seg_min, seg_max: range of the prefix length ``S`` (``2 <= seg_min <= seg_max <= T - 2``).
        rng: NumPy Generator, integer seed or None.

    Returns:
        ``tokens`` ``(B, T)`` int64 (``tokens[b, t] = prefix_b[t mod S_b]``), ``S`` ``(B,)`` int64 and ``mask``
        ``(B, T)`` bool: True at positions ``t`` with ``S <= t <= T - 2``, where the current token has an earlier
        occurrence at ``t - S`` and the next token is the one that followed it (the induction rule).
    """
    check_int("B", B, minimum=1)
    check_int("T", T, minimum=4)
    check_int("seg_min", seg_min, minimum=2, maximum=T - 2)
    check_int("seg_max", seg_max, minimum=seg_min, maximum=T - 2)
    check_int("V", V, minimum=seg_max)
    g = as_generator(rng)
    S = g.integers(seg_min, seg_max + 1, size=B)
    prefix = np.argsort(g.random((B, V)), axis=1)  # a random permutation per row: distinct tokens
    t = np.arange(T)
    tokens = prefix[np.arange(B)[:, None], t[None, :] % S[:, None]]
    mask = (t[None, :] >= S[:, None]) & (t[None, :] <= T - 2)
    return torch.from_numpy(tokens.astype(np.int64)), torch.from_numpy(S.astype(np.int64)), torch.from_numpy(mask)


def in_context_bigram_tokens(B: int, T: int, V: int, n_triggers: int = 1, rng=None):
    """Random text with planted ``trigger -> output`` bigrams whose outputs change from sequence to sequence.

    Tokens ``0..n_triggers-1`` are triggers; every occurrence of trigger ``q`` in a sequence is followed
    by the
    same output token ``o_q`` (drawn uniformly from the non-trigger tokens, once per sequence). Other
    positions
    are uniform over the non-trigger tokens, and each position is a trigger with probability
    ``n_triggers / V``. The last token is always a trigger, so the final prediction needs the in-context
    bigram.

    Returns:
        ``tokens`` ``(B, T)`` int64, ``targets`` ``(B, T)`` int64 (the next token; ``-1`` where it is not
        determined by an earlier planted bigram) and ``outputs`` ``(B, n_triggers)`` int64 (the ``o_q``).
    """
    check_int("B", B, minimum=1)
    check_int("T", T, minimum=3)
    check_int("n_triggers", n_triggers, minimum=1)
    check_int("V", V, minimum=n_triggers + 2)
    g = as_generator(rng)
    n_other = V - n_triggers
    outputs = n_triggers + g.integers(0, n_other, size=(B, n_triggers))
    tokens = n_triggers + g.integers(0, n_other, size=(B, T))
    is_trig = g.random((B, T)) < n_triggers / V
    is_trig[:, -1] = True
    is_trig[:, 1:] &= ~is_trig[:, :-1]  # no two triggers in a row
    is_trig[:, -2] = False
    is_trig[:, -1] = True
    trig = g.integers(0, n_triggers, size=(B, T))
    tokens = np.where(is_trig, trig, tokens)
    rows = np.arange(B)[:, None]
    follow = np.zeros((B, T), dtype=bool)
    follow[:, 1:] = is_trig[:, :-1]
    tokens = np.where(follow, outputs[rows, np.where(follow, np.roll(tokens, 1, axis=1), 0)], tokens)
    targets = np.full((B, T), -1, dtype=np.int64)
    # the next token is determined by the context when the current token is a trigger seen before
    seen = np.zeros((B, n_triggers), dtype=bool)
    for t in range(T):
        cur = tokens[:, t]
        trig_now = cur < n_triggers
        idx = np.where(trig_now, cur, 0)
        known = trig_now & seen[np.arange(B), idx]
        targets[:, t] = np.where(known, outputs[np.arange(B), idx], -1)
        if t + 1 < T:
            seen[np.arange(B), idx] |= trig_now
    return torch.from_numpy(tokens.astype(np.int64)), torch.from_numpy(targets), torch.from_numpy(outputs)


def markov_tokens(B: int, T: int, V: int, concentration: float = 1.0, rng=None):
    """In-context Markov chains: each sequence draws its own transition matrix with Dirichlet rows.

    Args:
        concentration: Dirichlet parameter of each row (small = nearly deterministic transitions).

    Returns:
        ``tokens`` ``(B, T)`` int64 and ``P`` ``(B, V, V)`` float64 transition matrices
        (``P[b, i, j] = Prob(next = j | current = i)``); the first token is uniform.
    """
    check_int("B", B, minimum=1)
    check_int("T", T, minimum=1)
    check_int("V", V, minimum=1)
    check_positive("concentration", concentration)
    g = as_generator(rng)
    P = g.dirichlet(np.full(V, float(concentration)), size=(B, V))
    cdf = np.cumsum(P, axis=-1)
    tokens = np.empty((B, T), dtype=np.int64)
    tokens[:, 0] = g.integers(0, V, size=B)
    u = g.random((B, T))
    rows = np.arange(B)
    for t in range(1, T):
        c = cdf[rows, tokens[:, t - 1]]
        tokens[:, t] = np.minimum((c < u[:, t, None]).sum(axis=-1), V - 1)
    return torch.from_numpy(tokens), torch.from_numpy(P)


def gaussian_sequences(B: int, L: int, d: int = 1, rng=None, dtype=None) -> torch.Tensor:
    """I.i.d. standard Gaussian tokens ``x_s ~ N(0, I_d)``: ``(B, L, d)`` (Sec. 5 of Wang et al., 2024)."""
    check_int("B", B, minimum=1)
    check_int("L", L, minimum=1)
    check_int("d", d, minimum=1)
    x = as_generator(rng).standard_normal((B, L, d))
    return torch.from_numpy(x).to(_dtype(dtype))


def uniform_sequences(B: int, L: int, d: int = 1, low: float = -1.0, high: float = 1.0, rng=None, dtype=None):
    """I.i.d. uniform tokens in ``[low, high]^d``: ``(B, L, d)`` (the bounded tokens of the Sec. 4 proofs)."""
    check_int("B", B, minimum=1)
    check_int("L", L, minimum=1)
    check_int("d", d, minimum=1)
    check_range("low", low)
    check_range("high", high, lo=low, lo_open=True)
    x = as_generator(rng).uniform(low, high, size=(B, L, d))
    return torch.from_numpy(x).to(_dtype(dtype))


def one_hot(tokens: torch.Tensor, V: int, dtype=None) -> torch.Tensor:
    """One-hot vectors of token ids: ``(..., V)`` floating tensor."""
    check_instance("tokens", tokens, torch.Tensor)
    check_int("V", V, minimum=1)
    if tokens.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"tokens must be an integer tensor, got {tokens.dtype}")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= V):
        raise ValueError(f"tokens must lie in [0, {V - 1}]")
    return torch.nn.functional.one_hot(tokens.long(), V).to(_dtype(dtype))


def pattern_bank(M: int, d: int, rng=None, dtype=None) -> torch.Tensor:
    """``M`` orthonormal patterns in ``R^d`` (rows of the returned ``(M, d)`` tensor), a random rotation of
    the first ``M`` unit vectors (the patterns ``mu_1, ..., mu_M`` of Sec. 2.5 of Li's thesis)."""
    check_int("M", M, minimum=1)
    check_int("d", d, minimum=M)
    g = as_generator(rng)
    q, _ = np.linalg.qr(g.standard_normal((d, d)))
    return torch.as_tensor(q[:, :M].T.copy(), dtype=_dtype(dtype))


def pattern_sequences(
    labels, L: int, alpha_star: float, alpha_hash: float, patterns: torch.Tensor, noise: float, rng=None, dtype=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token sequences made of noisy patterns, labelled by which of ``mu_1``, ``mu_2`` dominates.

    A sequence of label ``+1`` holds ``round(alpha_star L)`` copies of ``mu_1`` (its label-relevant tokens),
    ``round(alpha_hash L)`` copies of ``mu_2`` (confusion tokens), and the rest spread evenly over
    ``mu_3, ..., mu_M`` (label-irrelevant); label ``-1`` swaps ``mu_1`` and ``mu_2``. Each token gets
    ``noise * N(0, I)`` added and the positions are shuffled.

    Args:
        labels: array of ``±1`` labels ``(B,)``.
        L: tokens per sequence.
        alpha_star, alpha_hash: fractions of relevant and confusion tokens (``alpha_star > alpha_hash``,
            ``alpha_star + alpha_hash <= 1``).
        patterns: ``(M, d)`` pattern bank with ``M >= 3``.
        noise: noise level ``c_0 >= 0``.
        rng: generator or seed.

    Returns:
        tokens ``(B, L, d)`` and the pattern index of every token ``(B, L)`` (int64).
    """
    check_array("labels", labels)
    check_array("patterns", patterns)
    check_int("L", L, minimum=1)
    check_range("alpha_star", alpha_star, 0, 1, lo_open=True)
    check_range("alpha_hash", alpha_hash, 0, alpha_star, hi_open=True)
    if alpha_star + alpha_hash > 1:
        raise ValueError(f"alpha_star + alpha_hash must be <= 1, got {alpha_star + alpha_hash}")
    check_positive("noise", noise, allow_zero=True)
    M = patterns.shape[0]
    if M < 3:
        raise ValueError(f"patterns must hold M >= 3 rows, got {M}")
    g = as_generator(rng)
    y = np.asarray(labels)
    B = len(y)
    n_star, n_hash = int(round(alpha_star * L)), int(round(alpha_hash * L))
    rest = np.arange(L - n_star - n_hash) % (M - 2) + 2
    base = np.concatenate([np.zeros(n_star, int), np.ones(n_hash, int), rest])
    idx = np.tile(base, (B, 1))
    flip = y < 0
    idx[flip] = np.where(idx[flip] < 2, 1 - idx[flip], idx[flip])
    idx = np.take_along_axis(idx, np.argsort(g.random((B, L)), axis=1), axis=1)
    X = patterns.numpy()[idx] + noise * g.standard_normal((B, L, patterns.shape[1]))
    return torch.as_tensor(X, dtype=_dtype(dtype)), torch.as_tensor(idx)
