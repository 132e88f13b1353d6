"""Chapter 4 of Li's thesis on images: a digits stand-in for the CelebA experiments of Figs 4.1 and 4.8.

CelebA cannot be downloaded when the book is built, so two groups are made from scikit-learn's 8x8 digits
(pixels scaled to [0, 1]): group 0 keeps the images as they are, group 1 is a transformed domain, the images
turned by 90 degrees and inverted at a reduced contrast, ``x -> 1 - c R x`` with ``R`` the rotation (a permutation
of the pixels, so the spectral norm of its pixel covariance is ``c^2`` times that of group 0). The label
is "digit >= 5". A small ReLU MLP is trained with :func:`lib.train.train_stacked`, all settings and seeds of a sweep
at once (member k has its own training set, same size for all).

* :func:`augmentation_sweep` (Fig 4.1(b)): a majority of group-0 images and a minority of group-1 images, plus
  noisy copies of a fraction of the minority, ``x + delta N(0, I)``, for a list of ``delta^2``.
* :func:`fraction_sweep` (Fig 4.8): a fixed training size, the minority fraction varied, either group the minority.
* :func:`interior_peak` and :func:`slope_interval`: the decision rules of the chapter's claims.

Test sets are balanced: the same held-out images in both domains.
"""

from __future__ import annotations

import numpy as np
import torch

from lib.config import (
    check_array,
    check_device,
    check_in,
    check_int,
    check_int_array,
    check_positive,
    check_range,
    check_seed,
)
from lib.models.mlp import MLP
from lib.stats import mean_se
from lib.train import train_stacked

__all__ = [
    "digit_groups",
    "to_group",
    "covariance_norm",
    "train_group_mlps",
    "augmentation_sweep",
    "fraction_sweep",
    "interior_peak",
    "slope_interval",
]


def _seed_list(seeds) -> list[int]:
    """One seed or a sequence of them as a list of ints in [0, 2^32)."""
    return [int(s) for s in check_int_array("seeds", np.atleast_1d(seeds), minimum=0, maximum=2**32 - 1)]


def digit_groups(n_test: int = 500, split_seed: int = 0) -> dict:
    """The digits split into a training pool and a test pool, label "digit >= 5".

    Args:
        n_test: images held out for testing (each is tested in both domains, so the test set has ``2 n_test``).
        split_seed: seed of the random split.

    Returns:
        dict with ``X_train`` (n_pool, 64) and ``X_test`` (n_test, 64) in [0, 1] (float32), ``y_train``,
        ``y_test`` (float32 in {0, 1}).
    """
    from sklearn.datasets import load_digits

    check_int("n_test", n_test, minimum=2, maximum=1000)
    check_seed("split_seed", split_seed)
    data = load_digits()
    X = (data.data / 16.0).astype(np.float32)
    y = (data.target >= 5).astype(np.float32)
    perm = np.random.default_rng(split_seed).permutation(len(y))
    test, pool = perm[:n_test], perm[n_test:]
    return {"X_train": X[pool], "y_train": y[pool], "X_test": X[test], "y_test": y[test]}


def to_group(X, group: int, contrast: float = 0.6) -> np.ndarray:
    """Images of ``X`` (n, p), p = side^2, in group ``group``: 0 as they are, 1 turned by 90 degrees and inverted
    at contrast ``c``: ``1 - c R x`` (R the rotation, a permutation of the pixels)."""
    check_in("group", group, (0, 1))
    check_range("contrast", contrast, 0.0, 1.0, lo_open=True)
    X = check_array("X", X, ndim=2).astype(np.float32)
    if group == 0:
        return X.copy()
    side = int(round(np.sqrt(X.shape[1])))
    if side * side != X.shape[1]:
        raise ValueError(f"X must hold square images (p = side^2), got p = {X.shape[1]}")
    turned = np.rot90(X.reshape(-1, side, side), k=1, axes=(1, 2)).reshape(X.shape)
    return (1.0 - contrast * turned).astype(np.float32)


def covariance_norm(X) -> float:
    """Spectral norm of the sample covariance of the rows of ``X`` (n, p): the group's ``||Sigma_l||``."""
    X = check_array("X", X, ndim=2)
    if X.shape[0] < 2:
        raise ValueError(f"X must have at least two rows, got shape {X.shape}")
    return float(np.linalg.eigvalsh(np.cov(X, rowvar=False))[-1])


def train_group_mlps(X, y, X_test, y_test, seeds, *, width: int = 32, steps: int = 200, lr: float = 0.01,
                     device="cpu") -> np.ndarray:
    """Train one MLP per member on its own training set (all at once) and return its test accuracies.

    A two-layer ReLU MLP ``p -> width -> 1`` (:class:`lib.models.mlp.MLP`) on the logistic loss, full-batch Adam
    for ``steps`` steps.

    Args:
        X: (K, n, p) training inputs of the K members; y: (K, n) labels in {0, 1}.
        X_test: (G, m, p) test inputs of G groups; y_test: (m,) labels shared by the groups.
        seeds: (K,) initialisation seed of each member.
        width, steps, lr: hidden width, Adam steps and learning rate.
        device: where to train (:func:`lib.config.check_device`); the MLPs are initialised on the CPU from the
            seeds, trained there and copied back; they are tested on the CPU.

    Returns:
        (K, G) test accuracies.
    """
    X = torch.as_tensor(check_array("X", X, ndim=3), dtype=torch.float32)
    y = torch.as_tensor(check_array("y", y, ndim=2), dtype=torch.float32)
    Xt = torch.as_tensor(check_array("X_test", X_test, ndim=3), dtype=torch.float32)
    yt = torch.as_tensor(check_array("y_test", y_test, ndim=1), dtype=torch.float32)
    if y.shape != X.shape[:2] or X.shape[1] == 0:
        raise ValueError(f"X must be (K, n, p) and y (K, n), got {tuple(X.shape)} and {tuple(y.shape)}")
    if Xt.shape[2] != X.shape[2] or yt.shape != Xt.shape[1:2]:
        raise ValueError(f"X_test must be (G, m, {X.shape[2]}) and y_test (m,), got {tuple(Xt.shape)}, "
                         f"{tuple(yt.shape)}")
    seeds = _seed_list(seeds)
    if len(seeds) != X.shape[0]:
        raise ValueError(f"seeds must have one entry per member ({X.shape[0]}), got {len(seeds)}")
    check_int("width", width, minimum=1)
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    dev = check_device("device", device)
    Xd, yd = X.to(dev), y.to(dev)
    models = []
    for s in seeds:
        torch.manual_seed(s)
        models.append(MLP(X.shape[2], 1, depth=2, width=width))

    def loss_fn(model, batch):
        xb, yb = batch
        return torch.nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(-1), yb)

    res = train_stacked(models, loss_fn, lr=lr, steps=steps, optimizer="adam", batch_fn=lambda step, g: (Xd, yd),
                        record_every=steps, divergence_factor=None, device=dev)
    acc = np.zeros((X.shape[0], Xt.shape[0]))
    with torch.no_grad():
        for k, m in enumerate(models):
            pred = (m(Xt).squeeze(-1) > 0).float()
            acc[k] = (pred == yt).float().mean(dim=1).numpy()
    if res.diverged.any():
        acc[res.diverged] = np.nan
    return acc


def _test_set(data: dict, contrast: float):
    return np.stack([to_group(data["X_test"], g, contrast) for g in (0, 1)]), data["y_test"]


def augmentation_sweep(deltas2, seeds, *, n_major: int = 800, n_minor: int = 200, n_aug: int = 60,
                       contrast: float = 0.6, width: int = 32, steps: int = 200, lr: float = 0.01) -> dict:
    """Fig 4.1(b) stand-in: test accuracy against the noise level of Gaussian augmentation of the minority.

    For seed s, ``n_major`` group-0 and ``n_minor`` group-1 images are drawn without overlap from the training
    pool, and ``n_aug`` of the minority images are copied with i.i.d. ``N(0, delta^2)`` pixel noise. Every
    ``delta^2`` of a seed shares the images, the standard normal noise and the initialisation (common random
    numbers); ``delta^2 = 0`` adds exact duplicates.

    Args:
        deltas2: the noise variances ``delta^2`` (>= 0). seeds: the seeds (>= 1 of them).
        n_major, n_minor, n_aug: group sizes and number of noisy copies (``n_aug <= n_minor``).
        contrast: contrast ``c`` of group 1. width, steps, lr: as :func:`train_group_mlps`.

    Returns:
        dict with ``acc`` (len(deltas2), len(seeds), 2): test accuracy on group 0 (majority) and group 1
        (minority); ``cov_norm`` (len(deltas2), 2): ``||Sigma||`` of the majority and of the augmented minority
        (seed 0's training set).
    """
    deltas2 = check_array("deltas2", deltas2, ndim=1)
    if (deltas2 < 0).any():
        raise ValueError(f"deltas2 must be >= 0, got {deltas2}")
    seeds = _seed_list(seeds)
    for name, v in (("n_major", n_major), ("n_minor", n_minor)):
        check_int(name, v, minimum=1)
    check_int("n_aug", n_aug, minimum=0, maximum=n_minor)
    data = digit_groups()
    if n_major + n_minor > len(data["y_train"]):
        raise ValueError(f"n_major + n_minor must be at most {len(data['y_train'])}, got {n_major + n_minor}")
    Xs, ys, inits, cov = [], [], [], []
    for s in seeds:
        rng = np.random.default_rng(s)
        perm = rng.permutation(len(data["y_train"]))
        maj, mino = perm[:n_major], perm[n_major:n_major + n_minor]
        X0 = to_group(data["X_train"][maj], 0, contrast)
        X1 = to_group(data["X_train"][mino], 1, contrast)
        z = rng.standard_normal((n_aug, X0.shape[1])).astype(np.float32)
        y_base = np.concatenate([data["y_train"][maj], data["y_train"][mino], data["y_train"][mino[:n_aug]]])
        for d2 in deltas2:
            aug = X1[:n_aug] + np.float32(np.sqrt(d2)) * z
            Xs.append(np.concatenate([X0, X1, aug]))
            ys.append(y_base)
            inits.append(s)
            if s == seeds[0]:
                cov.append([covariance_norm(X0), covariance_norm(np.concatenate([X1, aug]))])
    Xt, yt = _test_set(data, contrast)
    acc = train_group_mlps(np.stack(Xs), np.stack(ys), Xt, yt, inits, width=width, steps=steps, lr=lr)
    acc = acc.reshape(len(seeds), len(deltas2), 2).transpose(1, 0, 2)
    return {"acc": acc, "cov_norm": np.array(cov)}


def fraction_sweep(fractions, seeds, *, minority: int, n_total: int = 600, contrast: float = 0.6, width: int = 32,
                   steps: int = 200, lr: float = 0.01) -> dict:
    """Fig 4.8 stand-in: test accuracy against the minority fraction at a fixed training size.

    For seed s the training pool is permuted once; the minority group takes ``round(f n_total)`` images from the
    front and the majority the next ``n_total - round(f n_total)``, so the sets of a seed are nested and the
    groups never share an image.

    Args:
        fractions: minority fractions in (0, 1). seeds: the seeds. minority: which group (0 or 1) is the minority.
        n_total: training size. contrast, width, steps, lr: as :func:`augmentation_sweep`.

    Returns:
        dict with ``acc`` (len(fractions), len(seeds), 2): test accuracy on group 0 and group 1; ``cov_norm``
        (2,): ``||Sigma||`` of each group over the whole training pool.
    """
    fractions = check_array("fractions", fractions, ndim=1)
    if (fractions <= 0).any() or (fractions >= 1).any():
        raise ValueError(f"fractions must lie in (0, 1), got {fractions}")
    check_in("minority", minority, (0, 1))
    seeds = _seed_list(seeds)
    data = digit_groups()
    check_int("n_total", n_total, minimum=2, maximum=len(data["y_train"]))
    Xs, ys, inits = [], [], []
    for s in seeds:
        perm = np.random.default_rng(s).permutation(len(data["y_train"]))
        for f in fractions:
            n_min = int(round(f * n_total))
            idx_min, idx_maj = perm[:n_min], perm[n_min:n_total]
            Xs.append(np.concatenate([to_group(data["X_train"][idx_min], minority, contrast),
                                      to_group(data["X_train"][idx_maj], 1 - minority, contrast)]))
            ys.append(np.concatenate([data["y_train"][idx_min], data["y_train"][idx_maj]]))
            inits.append(s)
    Xt, yt = _test_set(data, contrast)
    acc = train_group_mlps(np.stack(Xs), np.stack(ys), Xt, yt, inits, width=width, steps=steps, lr=lr)
    acc = acc.reshape(len(seeds), len(fractions), 2).transpose(1, 0, 2)
    cov = np.array([covariance_norm(to_group(data["X_train"], g, contrast)) for g in (0, 1)])
    return {"acc": acc, "cov_norm": cov}


def interior_peak(acc, z: float = 2.0) -> dict:
    """Decision rule of a rise-then-fall curve over a grid, from seed-paired runs.

    The seed-mean curve of ``acc`` (n_points, n_seeds) has its maximum at an interior point, and that point beats
    each end by more than ``z`` standard errors of the seed mean of the paired difference (runs of one seed share
    their images, noise and initialisation).

    Returns:
        dict with ``peak`` (index of the maximum of the mean curve), ``gain`` (2,) (mean gain over the first and
        the last point), ``se`` (2,) (their standard errors), ``ok`` (bool).
    """
    acc = check_array("acc", acc, ndim=2)
    if acc.shape[0] < 3 or acc.shape[1] < 2:
        raise ValueError(f"acc must be (n_points >= 3, n_seeds >= 2), got shape {acc.shape}")
    check_positive("z", z)
    i = int(np.argmax(acc.mean(axis=1)))
    gain, se = mean_se(np.stack([acc[i] - acc[0], acc[i] - acc[-1]]), axis=1)
    ok = bool(0 < i < acc.shape[0] - 1 and np.all(gain > z * se))
    return {"peak": i, "gain": gain, "se": se, "ok": ok}


def slope_interval(x, acc, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> dict:
    """Least-squares slope of the seed-mean curve of ``acc`` (n_points, n_seeds) against ``x``, with a bootstrap
    interval over seeds (the seeds are resampled with replacement, the mean curve refitted).

    Returns:
        dict with ``slope``, ``lo``, ``hi`` (the percentile interval at ``level``) and ``sign``: +1 or -1 when the
        interval excludes 0 on that side, 0 otherwise.
    """
    x = check_array("x", x, ndim=1)
    acc = check_array("acc", acc, ndim=2)
    if x.size < 2 or np.ptp(x) == 0:
        raise ValueError(f"x must have at least two distinct values, got {x}")
    if acc.shape[0] != x.size or acc.shape[1] < 2:
        raise ValueError(f"acc must be ({x.size}, n_seeds >= 2), got shape {acc.shape}")
    check_int("n_boot", n_boot, minimum=10)
    check_range("level", level, 0.0, 1.0, lo_open=True, hi_open=True)
    check_seed("seed", seed)
    xc = x - x.mean()
    slope = lambda curve: float(xc @ (curve - curve.mean()) / (xc @ xc))
    idx = np.random.default_rng(seed).integers(0, acc.shape[1], size=(n_boot, acc.shape[1]))
    boots = np.array([slope(acc[:, i].mean(axis=1)) for i in idx])
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    sign = 1 if lo > 0 else -1 if hi < 0 else 0
    return {"slope": slope(acc.mean(axis=1)), "lo": float(lo), "hi": float(hi), "sign": sign}
