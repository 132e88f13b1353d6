"""Prompts built from orthonormal pattern banks: multi-step reasoning chains for chain-of-thought (CoT) and
one-step input-label prompts for in-context learning (ICL).

A *pattern bank* is an ``(n, d)`` tensor of orthonormal rows. Tokens are bank rows plus optional noise orthogonal
to the bank's span. A *prompt* is a tensor of columns (stored as rows, shape ``(batch, length, 2 d + K)``): the
column of reasoning step ``k`` of an example is ``(input; output; c_k)`` with ``c_k`` the one-hot positional code
of step ``k`` in ``K`` extra coordinates. The construction follows Li et al.'s CoT prompts (thesis eqs 7.1, 7.4,
7.8); ICL prompts are the special case of one-step examples (first column ``(x; y; c_1)``, the other ``K - 1``
columns zero apart from their positional code).

All functions are seeded through an explicit ``torch.Generator`` so that fixed seeds give identical prompts.
"""

from __future__ import annotations

import torch

from lib.config import check_array, check_instance, check_int, check_positive, check_range

__all__ = [
    "orthonormal_bank",
    "subframe",
    "shift_tasks",
    "follow_steps",
    "sample_chains",
    "context_starts",
    "orthogonal_noise",
    "cot_columns",
    "icl_columns",
    "query_columns",
]


def orthonormal_bank(n: int, dim: int, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """``n`` orthonormal patterns in ``R^dim``: the first ``n`` standard basis vectors, or, with a ``generator``,
    a random orthonormal frame (QR of a Gaussian matrix).

    Returns:
        Tensor of shape ``(n, dim)`` with orthonormal rows.
    """
    check_int("n", n, minimum=1)
    check_int("dim", dim, minimum=n)
    if generator is None:
        return torch.eye(dim)[:n].clone()
    q, _ = torch.linalg.qr(torch.randn(dim, n, generator=generator))
    return q.T.contiguous()


def subframe(bank: torch.Tensor, n: int, *, generator: torch.Generator) -> torch.Tensor:
    """A random orthonormal ``n``-frame inside the span of ``bank``'s rows (the thesis's TSR patterns in the span
    of the TRR patterns, eq. 7.19).

    Args:
        bank: ``(m, d)`` orthonormal rows.
        n: frame size, ``1 <= n <= m``.
        generator: torch generator.

    Returns:
        ``(n, d)`` orthonormal rows, each a linear combination of ``bank``'s rows.
    """
    check_array("bank", bank)
    check_instance("generator", generator, torch.Generator)
    check_int("n", n, minimum=1, maximum=bank.shape[0])
    q, _ = torch.linalg.qr(torch.randn(bank.shape[0], n, generator=generator, dtype=bank.dtype))
    return (q.T @ bank).contiguous()


def shift_tasks(batch: int, m: int, steps: int, *, generator: torch.Generator) -> torch.Tensor:
    """Random permutation-shift tasks: draw a permutation ``p`` of ``[m]`` and set ``f_k(mu_{p_i}) =
    mu_{p_{(i + k) mod m}}`` (the thesis's task generator, section 7.5).

    Returns:
        Long tensor ``(batch, steps, m)``: entry ``[b, k, a]`` is the index of ``f_{k+1}`` applied to pattern
        ``a`` in task ``b``.
    """
    check_instance("generator", generator, torch.Generator)
    check_int("batch", batch, minimum=1)
    check_int("m", m, minimum=2)
    check_int("steps", steps, minimum=1)
    perm = torch.argsort(torch.rand(batch, m, generator=generator), dim=1)  # perm[b, i] = p_i
    pos = torch.argsort(perm, dim=1)  # pos[b, a] = i with p_i = a
    shifts = torch.arange(1, steps + 1).view(1, steps, 1)
    target_pos = (pos.unsqueeze(1) + shifts) % m
    return torch.gather(perm.unsqueeze(1).expand(batch, steps, m), 2, target_pos)


def follow_steps(step_maps: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """Deterministic chains ``z_0 = start``, ``z_k = f_k(z_{k-1})``.

    Args:
        step_maps: ``(batch, K, m)`` long tensor as returned by :func:`shift_tasks`.
        start: ``(batch, n)`` long tensor of start indices.

    Returns:
        ``(batch, n, K + 1)`` long tensor of pattern indices.
    """
    check_array("step_maps", step_maps)
    check_array("start", start)
    chain = [start]
    for k in range(step_maps.shape[1]):
        chain.append(torch.gather(step_maps[:, k], 1, chain[-1]))
    return torch.stack(chain, dim=-1)


def sample_chains(transitions: torch.Tensor, start: torch.Tensor, *, generator: torch.Generator) -> torch.Tensor:
    """Random chains whose step ``k`` follows the row-stochastic matrix ``A_k`` (thesis eq. 7.12).

    Args:
        transitions: ``(batch, K, m, m)`` row-stochastic matrices.
        start: ``(batch, n)`` long tensor of start indices.
        generator: torch generator.

    Returns:
        ``(batch, n, K + 1)`` long tensor of pattern indices.
    """
    check_array("transitions", transitions)
    check_array("start", start)
    check_instance("generator", generator, torch.Generator)
    batch, n_steps, m, _ = transitions.shape
    chain = [start]
    for k in range(n_steps):
        rows = torch.gather(transitions[:, k], 1, chain[-1].unsqueeze(-1).expand(-1, -1, m))  # (batch, n, m)
        u = torch.rand(rows.shape[:2] + (1,), generator=generator, dtype=rows.dtype)
        nxt = (rows.cumsum(-1) < u).sum(-1).clamp(max=m - 1)
        chain.append(nxt)
    return torch.stack(chain, dim=-1)


def context_starts(query: torch.Tensor, n: int, m: int, alpha: float, *, generator: torch.Generator) -> torch.Tensor:
    """First-step inputs of ``n`` context examples: each equals the query's pattern with probability ``alpha``,
    otherwise a uniformly drawn other pattern.

    Args:
        query: ``(batch,)`` long tensor of query patterns.
        n: number of context examples (>= 1).
        m: number of patterns (>= 2).
        alpha: probability in [0, 1].
        generator: torch generator.

    Returns:
        ``(batch, n)`` long tensor.
    """
    check_array("query", query)
    check_instance("generator", generator, torch.Generator)
    check_int("n", n, minimum=1)
    check_int("m", m, minimum=2)
    check_range("alpha", alpha, 0.0, 1.0)
    batch = query.shape[0]
    same = torch.rand(batch, n, generator=generator) < alpha
    other = (query.unsqueeze(1) + 1 + torch.randint(0, m - 1, (batch, n), generator=generator)) % m
    return torch.where(same, query.unsqueeze(1).expand(batch, n), other)


def orthogonal_noise(shape: tuple, frame: torch.Tensor, norm: float, *, generator: torch.Generator) -> torch.Tensor:
    """Noise vectors of fixed Euclidean ``norm``, orthogonal to the span of ``frame``'s orthonormal rows (the
    thesis's ``delta`` of eq. 7.11).

    Returns:
        Tensor of shape ``shape + (d,)``.
    """
    check_array("shape", shape)
    check_array("frame", frame)
    check_instance("generator", generator, torch.Generator)
    check_positive("norm", norm, allow_zero=True)
    d = frame.shape[1]
    g = torch.randn(tuple(shape) + (d,), generator=generator, dtype=frame.dtype)
    g = g - (g @ frame.T) @ frame
    return norm * g / g.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _pe(n_steps: int, k: torch.Tensor, dtype) -> torch.Tensor:
    return torch.nn.functional.one_hot(k, n_steps).to(dtype)


def cot_columns(tokens: torch.Tensor) -> torch.Tensor:
    """CoT context columns (thesis eq. 7.1 / 7.4): example ``i``'s step ``k`` column is ``(y_{i,k-1}; y_{i,k};
    c_k)`` with ``y_{i,0} = x_i`` and one-hot ``c_k``.

    Args:
        tokens: ``(batch, n, K + 1, d)`` token vectors of ``n`` chains.

    Returns:
        ``(batch, n K, 2 d + K)``, examples in order, steps in order within an example.
    """
    check_array("tokens", tokens)
    batch, n, kp1, d = tokens.shape
    n_steps = kp1 - 1
    pe = _pe(n_steps, torch.arange(n_steps), tokens.dtype).expand(batch, n, n_steps, n_steps)
    cols = torch.cat([tokens[:, :, :-1], tokens[:, :, 1:], pe], dim=-1)
    return cols.reshape(batch, n * n_steps, 2 * d + n_steps)


def icl_columns(inputs: torch.Tensor, labels: torch.Tensor, n_steps: int) -> torch.Tensor:
    """ICL context columns (thesis eq. 7.8): each example is ``(x; y; c_1)`` followed by ``K - 1`` columns that
    are zero apart from their positional codes ``c_2, ..., c_K``.

    Args:
        inputs, labels: ``(batch, n, d)`` token vectors.
        n_steps: ``K`` (>= 1).

    Returns:
        ``(batch, n K, 2 d + K)``.
    """
    check_array("inputs", inputs)
    check_array("labels", labels)
    check_int("n_steps", n_steps, minimum=1)
    batch, n, d = inputs.shape
    cols = torch.zeros(batch, n, n_steps, 2 * d + n_steps, dtype=inputs.dtype)
    cols[:, :, 0, :d] = inputs
    cols[:, :, 0, d:2 * d] = labels
    cols[:, :, :, 2 * d:] = _pe(n_steps, torch.arange(n_steps), inputs.dtype)
    return cols.reshape(batch, n * n_steps, 2 * d + n_steps)


def query_columns(tokens: torch.Tensor, k: torch.Tensor, n_steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The query block ``Q_k`` of a CoT prompt (thesis eq. 7.1), padded to ``K`` columns.

    Columns ``j < k`` are ``(z_{j-1}; z_j; c_j)``, column ``k`` is ``(z_{k-1}; 0; c_k)`` (the query column), later
    columns are padding.

    Args:
        tokens: ``(batch, K + 1, d)`` the query chain ``z_0, ..., z_K`` (only ``z_0..z_{k-1}`` are read).
        k: ``(batch,)`` long tensor of current steps in ``1..K``.
        n_steps: ``K``.

    Returns:
        ``(columns, valid)``: columns ``(batch, K, 2 d + K)``; ``valid`` ``(batch, K)`` bool, True for the known
        columns ``j < k`` (keys); the query column is ``columns[b, k[b] - 1]``.
    """
    check_int("n_steps", n_steps, minimum=1)
    check_array("tokens", tokens)
    check_array("k", k)
    batch, _, d = tokens.shape
    j = torch.arange(1, n_steps + 1).view(1, -1)
    outputs = tokens[:, 1:n_steps + 1] * (j < k.view(-1, 1)).unsqueeze(-1).to(tokens.dtype)
    pe = _pe(n_steps, torch.arange(n_steps), tokens.dtype).expand(batch, n_steps, n_steps)
    cols = torch.cat([tokens[:, :n_steps], outputs, pe], dim=-1)
    return cols, j < k.view(-1, 1)
