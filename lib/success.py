"""Success maps: how often training succeeds over a grid of a setting and the sample size ``N``.

:func:`success_map` runs one batched experiment per setting value, with one member per ``(N, seed)`` pair
(member ``(N, s)`` must train on the first ``N`` examples of seed ``s``'s training set, so that larger ``N``
extend smaller ones); :func:`fit_boundary` reads off the smallest ``N`` with success rate at least a level.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from lib.config import check_array, check_callable, check_range


def check_members(sizes, seeds, name: str = "Ns") -> tuple[np.ndarray, np.ndarray]:
    """Validate the members of a batched success-map run: ``sizes`` (the sample size ``N`` of each member) and
    ``seeds``, equal-length 1-D integer arrays with every size at least 1.

    Returns:
        ``(sizes, seeds)`` as integer arrays.
    """
    check_array(name, sizes, nonempty=False)
    check_array("seeds", seeds, nonempty=False)
    sizes, seeds = np.asarray(sizes), np.asarray(seeds)
    ok = (sizes.shape == seeds.shape and sizes.ndim == 1 and sizes.size > 0
          and np.issubdtype(sizes.dtype, np.integer) and np.issubdtype(seeds.dtype, np.integer))
    if not ok or (sizes < 1).any():
        raise ValueError(f"{name} and seeds must be equal-length 1-D integer arrays with {name} >= 1")
    return sizes.astype(int), seeds.astype(int)


def success_map(run_fn: Callable, xs: Sequence, Ns: Sequence[int], seeds: Sequence[int]) -> np.ndarray:
    """Success indicators over a ``(setting, N, seed)`` grid, batched over ``N`` and seeds.

    Args:
        run_fn: ``run_fn(x, N, seeds) -> bool array`` where ``N`` and ``seeds`` are flat integer arrays of
            the same length (one member per ``(N, seed)`` pair); member ``(N, s)`` must use seed ``s``'s first
            ``N`` training examples.
        xs: setting values (one batched call each).
        Ns: sample sizes (positive integers).
        seeds: integer seeds.

    Returns:
        bool array ``(len(xs), len(Ns), len(seeds))``.
    """
    check_callable("run_fn", run_fn)
    check_array("xs", xs, finite="some")
    check_array("Ns", Ns)
    check_array("seeds", seeds)
    Ns = np.asarray(Ns, dtype=int)
    seeds = np.asarray(seeds, dtype=int)
    if len(xs) == 0 or Ns.size == 0 or seeds.size == 0:
        raise ValueError("xs, Ns and seeds must be non-empty")
    if (Ns < 1).any():
        raise ValueError(f"Ns must be positive integers, got {Ns.tolist()}")
    NN, SS = np.meshgrid(Ns, seeds, indexing="ij")
    out = np.zeros((len(xs), len(Ns), len(seeds)), dtype=bool)
    for i, x in enumerate(xs):
        ok = np.asarray(run_fn(x, NN.ravel(), SS.ravel()), dtype=bool)
        if ok.shape != (NN.size,):
            raise ValueError(f"run_fn must return {NN.size} indicators, got shape {ok.shape}")
        out[i] = ok.reshape(NN.shape)
    return out


def fit_boundary(success: np.ndarray, Ns: Sequence[int], level: float = 0.5) -> np.ndarray:
    """The smallest ``N`` whose success rate reaches ``level``, per setting (log-linear interpolation).

    Args:
        success: ``(n_x, n_N, n_seeds)`` indicators or ``(n_x, n_N)`` rates.
        Ns: the increasing sample sizes of the second axis.
        level: success level in ``(0, 1]``.

    Returns:
        ``(n_x,)`` float array of ``N*``; NaN where no ``N`` reaches ``level``; ``Ns[0]`` where the first does.
    """
    check_array("success", success)
    check_array("Ns", Ns, positive=True)
    check_range("level", level, 0, 1, lo_open=True)
    rate = np.asarray(success, dtype=float)
    if rate.ndim == 3:
        rate = rate.mean(-1)
    Ns = np.asarray(Ns, dtype=float)
    if rate.ndim != 2 or rate.shape[1] != Ns.size:
        raise ValueError(f"success must be (n_x, {Ns.size}[, seeds]), got {np.shape(success)}")
    out = np.full(rate.shape[0], np.nan)
    for i, r in enumerate(rate):
        hit = np.nonzero(r >= level)[0]
        if hit.size == 0:
            continue
        j = hit[0]
        if j == 0:
            out[i] = Ns[0]
            continue
        f = (level - r[j - 1]) / max(r[j] - r[j - 1], 1e-12)
        out[i] = np.exp(np.log(Ns[j - 1]) + f * (np.log(Ns[j]) - np.log(Ns[j - 1])))
    return out
