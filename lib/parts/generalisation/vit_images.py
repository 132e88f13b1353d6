"""Fig 2.6 of Li's thesis, chapter 2, on a CPU stand-in: digits pasted on photo crops, a tiny ViT, token removal.

The thesis pastes a resized CIFAR-10 image into a 32x32 crop of an ImageNet "Plants" image (26x26 of 32x32, so
``alpha_* ~ 0.66`` of the area carries the label) and trains a 5-block ViT from a pre-trained model. Here
scikit-learn's 8x8 digits are upsampled (nearest neighbour, x2) to 16x16 and pasted at a random patch-aligned
position of a 20x20 grayscale crop of ``sklearn.datasets.load_sample_images()`` (both photos ship with
scikit-learn). With 4x4 patches there are 25 tokens, 16 of them digit tokens: ``alpha_* = 16/25 = 0.64``.
"Token sparsification" removes a number of the 9 background-only tokens before the model sees them (a key mask
and a read-out mask), so ``alpha_* = 16 / (25 - removed)`` grows to 1 when all are removed.

The model, :class:`TinyViT`, is a small pre-LayerNorm ViT: patch embedding plus a learned position embedding,
blocks of multi-head self-attention and a one-hidden-layer perceptron with skip connections, mean pooling over
the kept tokens and a linear head. ``lib.models.transformer.Transformer`` is causal and its masked attention
branches on values, which ``torch.func.vmap`` refuses, so the model is written here. Runs (seeds, sample sizes,
removal counts, initial models) are trained together with :func:`lib.train.train_stacked`.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn

from lib.config import check_array, check_device, check_instance, check_int, check_int_array, check_positive, check_seed
from lib.train import train_stacked

CANVAS = 20  # side of the composite image
PATCH = 4  # side of a patch: (20 / 4)^2 = 25 tokens of 16 pixels
SCALE = 2  # nearest-neighbour upsampling of the 8x8 digits to 16x16
N_TOKENS = (CANVAS // PATCH) ** 2
N_DIGIT_TOKENS = (8 * SCALE // PATCH) ** 2
N_BACKGROUND = N_TOKENS - N_DIGIT_TOKENS


def alpha_star(n_removed):
    """Fraction of label-relevant tokens left after removing ``n_removed`` background tokens: ``16/(25-r)``."""
    check_array("n_removed", n_removed)
    r = np.asarray(n_removed, dtype=float)
    if np.any(r < 0) or np.any(r > N_BACKGROUND) or np.any(r != np.round(r)):
        raise ValueError(f"n_removed must be integers in 0..{N_BACKGROUND}, got {n_removed!r}")
    return N_DIGIT_TOKENS / (N_TOKENS - r)


@functools.lru_cache(maxsize=1)
def photos() -> tuple[np.ndarray, ...]:
    """The two sample photos of scikit-learn (china, flower) in grayscale, values in [0, 1], shape (427, 640)."""
    from sklearn.datasets import load_sample_images

    return tuple(img.astype(np.float64).mean(-1) / 255.0 for img in load_sample_images().images)


def compose_images(digits, photo, rng) -> tuple[np.ndarray, np.ndarray]:
    """Paste digits on backgrounds: a random 20x20 photo crop where ``photo`` is True, zeros elsewhere.

    Args:
        digits: ``(n, 8, 8)`` raw scikit-learn digits (values 0-16), mapped to [0, 1] and upsampled to 16x16.
        photo: ``(n,)`` booleans: photo background (True) or clean zero background (False).
        rng: a ``numpy.random.Generator`` (crop, photo and position).

    Returns:
        ``images`` ``(n, 20, 20)`` and ``relevant`` ``(n, 25)``: True for the 16 tokens covered by the digit.
    """
    check_instance("rng", rng, np.random.Generator)
    digits = check_array("digits", digits)
    photo = np.asarray(photo, dtype=bool)
    if digits.ndim != 3 or digits.shape[1:] != (8, 8):
        raise ValueError(f"digits must have shape (n, 8, 8), got {digits.shape}")
    if photo.shape != digits.shape[:1]:
        raise ValueError(f"photo must have shape ({digits.shape[0]},), got {photo.shape}")
    n = digits.shape[0]
    bank = photos()
    images = np.zeros((n, CANVAS, CANVAS))
    which = rng.integers(0, len(bank), n)
    for i in np.flatnonzero(photo):
        img = bank[which[i]]
        r, c = rng.integers(0, img.shape[0] - CANVAS + 1), rng.integers(0, img.shape[1] - CANVAS + 1)
        images[i] = img[r:r + CANVAS, c:c + CANVAS]
    side = CANVAS // PATCH
    span = 8 * SCALE // PATCH
    pos = rng.integers(0, side - span + 1, (n, 2))
    big = np.kron(digits / 16.0, np.ones((SCALE, SCALE)))
    relevant = np.zeros((n, side, side), dtype=bool)
    for i, (a, b) in enumerate(pos):
        images[i, a * PATCH:(a + span) * PATCH, b * PATCH:(b + span) * PATCH] = big[i]
        relevant[i, a:a + span, b:b + span] = True
    return images, relevant.reshape(n, -1)


def patchify(images) -> np.ndarray:
    """``(n, 20, 20)`` images -> ``(n, 25, 16)`` tokens: the 4x4 patches in row-major order, flattened."""
    images = check_array("images", images)
    if images.ndim != 3 or images.shape[1:] != (CANVAS, CANVAS):
        raise ValueError(f"images must have shape (n, {CANVAS}, {CANVAS}), got {images.shape}")
    n, side = images.shape[0], CANVAS // PATCH
    x = images.reshape(n, side, PATCH, side, PATCH).transpose(0, 1, 3, 2, 4)
    return x.reshape(n, side * side, PATCH * PATCH)


def removal_mask(relevant, n_removed: int, rng) -> np.ndarray:
    """Kept tokens ``(n, 25)`` after removing ``n_removed`` of each sample's background tokens at random."""
    check_instance("rng", rng, np.random.Generator)
    relevant = np.asarray(relevant, dtype=bool)
    if relevant.ndim != 2:
        raise ValueError(f"relevant must have shape (n, T), got {relevant.shape}")
    check_int("n_removed", n_removed, minimum=0, maximum=int((~relevant).sum(1).min()))
    score = np.where(relevant, np.inf, rng.random(relevant.shape))
    order = np.argsort(score, axis=1)[:, :n_removed]
    keep = np.ones_like(relevant)
    np.put_along_axis(keep, order, False, axis=1)
    return keep


def digits_by_class(classes) -> tuple[np.ndarray, np.ndarray]:
    """The scikit-learn digits of the given classes: ``(n, 8, 8)`` raw images and labels ``0..len(classes)-1``
    (in the order of ``classes``)."""
    check_array("classes", classes)
    from sklearn.datasets import load_digits

    classes = [int(c) for c in classes]
    if len(set(classes)) != len(classes) or any(c not in range(10) for c in classes) or not classes:
        raise ValueError(f"classes must be different digits in 0..9, got {classes!r}")
    data = load_digits()
    mask = np.isin(data.target, classes)
    lut = np.full(10, -1)
    lut[classes] = np.arange(len(classes))
    return data.images[mask], lut[data.target[mask]]


class TinyViT(nn.Module):
    """A small pre-LayerNorm ViT on patch tokens with a keep mask (the deep ViT of Sec. 2.4.2, scaled down).

    ``h_0 = E x + p``; per block ``h += MHSA(LN h)`` (keys limited to kept tokens) and
    ``h += W_2 relu(W_1 LN h)``; the output is ``W_out LN(mean of h over kept tokens)``.
    """

    def __init__(self, d_patch: int = PATCH * PATCH, n_tokens: int = N_TOKENS, width: int = 16, heads: int = 2,
                 blocks: int = 1, n_classes: int = 10, hidden: int | None = None):
        super().__init__()
        for name, v in (("d_patch", d_patch), ("n_tokens", n_tokens), ("width", width), ("heads", heads),
                        ("blocks", blocks), ("n_classes", n_classes)):
            check_int(name, v, minimum=1)
        if width % heads:
            raise ValueError(f"width ({width}) must be divisible by heads ({heads})")
        hidden = 2 * width if hidden is None else hidden
        check_int("hidden", hidden, minimum=1)
        self.heads = heads
        self.embed = nn.Linear(d_patch, width)
        self.pos = nn.Parameter(0.02 * torch.randn(n_tokens, width))
        self.ln1 = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))
        self.qkv = nn.ModuleList(nn.Linear(width, 3 * width) for _ in range(blocks))
        self.proj = nn.ModuleList(nn.Linear(width, width) for _ in range(blocks))
        self.ln2 = nn.ModuleList(nn.LayerNorm(width) for _ in range(blocks))
        self.mlp = nn.ModuleList(nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, width))
                                 for _ in range(blocks))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """``x`` ``(B, T, d_patch)`` tokens, ``keep`` ``(B, T)`` booleans (at least one True per row) ->
        logits ``(B, n_classes)``."""
        B, T, _ = x.shape
        H = self.heads
        h = self.embed(x) + self.pos[:T]
        blocked = ~keep[:, None, None, :]
        for ln1, qkv, proj, ln2, mlp in zip(self.ln1, self.qkv, self.proj, self.ln2, self.mlp):
            q, k, v = qkv(ln1(h)).view(B, T, 3, H, -1).permute(2, 0, 3, 1, 4)
            scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
            att = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
            h = h + proj((att @ v).transpose(1, 2).reshape(B, T, -1))
            h = h + mlp(ln2(h))
        w = keep.to(h.dtype)[..., None]
        pooled = (h * w).sum(1) / w.sum(1)
        return self.head(self.ln_f(pooled))


def _models(K: int, arch: dict, seed: int) -> list[TinyViT]:
    torch.manual_seed(seed)
    return [TinyViT(**arch) for _ in range(K)]


def train_vits(models, X, y, keep, members, *, steps: int, lr: float, batch: int, seed: int = 0, device="cpu"):
    """Train ``K`` models at once with Adam on minibatches of their own data (``lib.train.train_stacked``).

    Args:
        models: ``K`` :class:`TinyViT` copies (trained in place).
        X, y, keep: per data set ``(S, n, T, d)`` tokens, ``(S, n)`` labels, ``(S, n, T)`` kept tokens.
        members: ``(K, 2)`` integers ``(data set s, N)``: model k draws its minibatches (with replacement) from the
            first ``N`` examples of data set ``s``.
        steps, lr, batch: Adam steps, learning rate and minibatch size.
        device: where to train (:func:`lib.config.check_device`): the data go there, the minibatch draws are
            made on the CPU and moved, and the trained weights are copied back into ``models`` (on the CPU).

    Returns:
        the ``lib.train.StackedResult``.
    """
    check_int("steps", steps, minimum=1)
    check_int("batch", batch, minimum=1)
    check_positive("lr", lr)
    check_seed("seed", seed)
    if not isinstance(models, (list, tuple)) or not models or not all(isinstance(m, TinyViT) for m in models):
        raise ValueError("models must be a non-empty list of TinyViT")
    X, y, keep = _checked_tokens(X, y, keep, 4)
    members = check_array("members", members, ndim=2)
    if not np.all(members == np.round(members)):
        raise ValueError(f"members must hold integers, got {members.tolist()}")
    members = members.astype(np.int64)
    if members.shape != (len(models), 2):
        raise ValueError(f"members must have shape ({len(models)}, 2), got {members.shape}")
    if members[:, 0].min() < 0 or members[:, 0].max() >= X.shape[0] or members[:, 1].min() < 1 \
            or members[:, 1].max() > X.shape[1]:
        raise ValueError("members must name existing data sets and 1 <= N <= n")
    dev = check_device("device", device)
    src, size = torch.as_tensor(members[:, 0]).to(dev), torch.as_tensor(members[:, 1], dtype=torch.float64).to(dev)
    X, y, keep = X.to(dev), y.to(dev), keep.to(dev)

    def batch_fn(step, gen):
        u = torch.rand(len(models), batch, generator=gen, dtype=torch.float64).to(dev)
        idx = (u * size[:, None]).long()
        return X[src[:, None], idx], y[src[:, None], idx], keep[src[:, None], idx]

    def loss_fn(model, b):
        xb, yb, kb = b
        return nn.functional.cross_entropy(model(xb, kb), yb)

    return train_stacked(models, loss_fn, lr=lr, steps=steps, optimizer="adam", batch_fn=batch_fn,
                         record_every=steps, generator=torch.Generator().manual_seed(seed), device=dev)


@torch.no_grad()
def accuracy(model: TinyViT, X, y, keep) -> float:
    """Test accuracy of one model on tokens ``(n, T, d)``, labels ``(n,)`` and kept tokens ``(n, T)``."""
    check_instance("model", model, TinyViT)
    X, y, keep = _checked_tokens(X, y, keep, 3)
    return float((model(X, keep).argmax(-1) == y).double().mean())


def _checked_tokens(X, y, keep, ndim: int):
    """Tokens ``X`` (float, ``ndim`` dimensions), integer labels ``y`` and boolean masks ``keep`` as tensors of
    matching leading shapes; a ``ValueError`` names the argument that is not."""
    check_array("X", X, ndim=ndim)
    labels = check_array("y", y, ndim=ndim - 2)
    if not np.all(labels == np.round(labels)) or labels.min() < 0:
        raise ValueError("y must hold class indices (integers >= 0)")
    if not torch.is_tensor(keep) or keep.dtype != torch.bool:
        raise ValueError(f"keep must be a boolean tensor, got {type(keep).__name__}")
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    if y.shape != X.shape[: ndim - 2] or keep.shape != X.shape[: ndim - 1]:
        raise ValueError(f"y and keep must have shapes {tuple(X.shape[: ndim - 2])} and {tuple(X.shape[: ndim - 1])}, "
                         f"got {tuple(y.shape)} and {tuple(keep.shape)}")
    return X, y.long() if y.is_floating_point() else y, keep


def _check_grid(Ns, seeds) -> None:
    """Increasing positive sample sizes and distinct non-negative seeds (at least one of each)."""
    Ns, seeds = list(Ns), list(seeds)
    for n in Ns:
        check_int("Ns", n, minimum=1)
    for s in seeds:
        check_int("seeds", s, minimum=0)
    if not Ns or not seeds or sorted(set(Ns)) != Ns or len(set(seeds)) != len(seeds):
        raise ValueError(f"Ns must be increasing and seeds distinct, got {Ns!r}, {seeds!r}")


def _render(digits, photo, seed: int):
    """Tokens ``(n, 25, 16)`` and relevant-token masks ``(n, 25)`` of digits composed with stream ``seed``."""
    images, relevant = compose_images(digits, photo, np.random.default_rng(seed))
    return patchify(images), relevant


def _masks(relevant, removals, seed: int) -> np.ndarray:
    """Kept tokens ``(n_removals, n, 25)``: one random removal of each count, drawn from stream ``seed``."""
    return np.stack([removal_mask(relevant, int(r), np.random.default_rng([seed, int(r)])) for r in removals])


def _per_removal(X, Y, keep):
    """One data set per (seed, removal count), index ``seed * n_removals + removal``: each seed's images ``X``
    (S, n, T, p) and labels ``Y`` (S, n) repeated for its masks ``keep`` (S, n_removals, n, T)."""
    S, n_r = keep.shape[:2]
    return (X[:, None].expand(-1, n_r, *X.shape[1:]).reshape(S * n_r, *X.shape[1:]),
            Y[:, None].expand(-1, n_r, *Y.shape[1:]).reshape(S * n_r, *Y.shape[1:]),
            keep.reshape(S * n_r, *keep.shape[2:]))


def accuracy_map(removals, Ns, seeds, *, arch: dict, steps: int, lr: float, batch: int, n_test: int,
                 classes=tuple(range(10)), device="cpu") -> dict:
    """Fig 2.6(a, b): test accuracy of the tiny ViT on digit ``classes`` over removal counts, N and seeds.

    Every image has a photo background. Seed ``s`` shuffles the digits, keeps the last ``n_test`` as its test
    set and draws its own crops, positions and removals; member ``(r, N, s)`` trains from scratch on the first
    ``N`` training images of seed ``s`` with ``r`` background tokens removed (training and test alike).
    ``device``: where the models train (:func:`train_vits`); they are tested on the CPU.

    Returns:
        dict with ``acc`` ``(n_removals, n_N, n_seeds)``, ``alpha`` ``(n_removals,)`` and ``diverged``.
    """
    check_array("removals", removals)
    check_array("classes", classes)
    removals = [int(r) for r in removals]
    alpha = alpha_star(removals)
    _check_grid(Ns, seeds)
    check_int("n_test", n_test, minimum=1)
    digits, labels = digits_by_class(classes)
    if max(Ns) + n_test > len(labels):
        raise ValueError(f"max(Ns) + n_test must be at most {len(labels)}, got {max(Ns) + n_test}")
    X, Y, KEEP = [], [], []
    for s in seeds:
        order = np.random.default_rng([2600, int(s)]).permutation(len(labels))
        tokens, relevant = _render(digits[order], np.ones(len(order), bool), 2601 + int(s))
        X.append(tokens)
        Y.append(labels[order])
        KEEP.append(_masks(relevant, removals, 2602 + int(s)))
    X = torch.tensor(np.stack(X), dtype=torch.float32)
    Y = torch.tensor(np.stack(Y))
    KEEP = torch.tensor(np.stack(KEEP))  # (S, R, n, T)
    n_seeds, n_r = len(seeds), len(removals)
    grid = [(i, j, k) for i in range(n_r) for j in range(len(Ns)) for k in range(n_seeds)]
    # data set index = seed * R + removal, so each member reads its own seed's images with its own mask
    Xs, Ys, Ks = _per_removal(X, Y, KEEP)
    members = np.array([(k * n_r + i, Ns[j]) for i, j, k in grid])
    models = _models(len(grid), dict(arch, n_classes=len(classes)), seed=int(seeds[0]))
    res = train_vits(models, Xs, Ys, Ks, members, steps=steps, lr=lr, batch=batch, seed=int(seeds[0]),
                     device=device)
    acc = np.zeros((n_r, len(Ns), n_seeds))
    test = slice(len(labels) - n_test, None)
    for m, (i, j, k) in zip(models, grid):
        acc[i, j, k] = accuracy(m, X[k, test], Y[k, test], KEEP[k, i, test])
    return {"acc": acc, "alpha": alpha, "diverged": int(res.diverged.sum())}


def spurious_runs(removals, seeds, *, classes=(3, 8), n_test_per_class: int, photo_share=(0.9, 0.1),
                  pre_sizes=(1000, 80), arch: dict, pre_steps: int, steps: int, lr: float, batch: int,
                  device="cpu") -> dict:
    """Fig 2.6(c): two digit classes with a spurious photo background, fine-tuned from pre-trained tiny ViTs.

    Pre-training: the other eight digits, half on photo and half on clean backgrounds, with ``pre_sizes[m]``
    images for initial model ``m`` (many, then few), all tokens kept, ``pre_steps`` Adam steps. Fine-tuning:
    class ``classes[c]`` is on a photo background with probability ``photo_share[c]`` (clean otherwise); the
    head is re-initialised and all weights trained for ``steps`` steps with ``r`` background tokens removed in
    training and test. A third "initial model" trains from scratch. The test set holds ``n_test_per_class``
    images per class, each shown once on a photo and once on a clean background (50/50 classes and
    backgrounds). ``device``: where the models train (:func:`train_vits`); they are tested on the CPU.

    Returns:
        dict with ``acc`` ``(3, n_removals, n_seeds)`` (inits: many, few, scratch), ``alpha``, ``diverged`` (the
        number of diverged runs) and ``n_train`` (training images per run).
    """
    removals = [int(r) for r in check_int_array("removals", removals, minimum=0)]
    alpha = alpha_star(removals)
    seeds = [int(s) for s in check_int_array("seeds", seeds, minimum=0)]
    _check_grid([1], seeds)
    pre_sizes = [int(s) for s in check_int_array("pre_sizes", pre_sizes, minimum=1)]
    check_array("photo_share", photo_share, ndim=1)
    classes = check_int_array("classes", classes, minimum=0, maximum=9)
    if not isinstance(arch, dict):
        raise ValueError(f"arch must be a dict of TinyViT options, got {arch!r}")
    check_int("pre_steps", pre_steps, minimum=1)
    if len(pre_sizes) != 2 or len(photo_share) != 2:
        raise ValueError("pre_sizes and photo_share must have two entries")
    for p in photo_share:
        check_positive("photo_share", p, allow_zero=True)
    classes = [int(c) for c in classes]
    others = [c for c in range(10) if c not in classes]
    d_pre, y_pre = digits_by_class(others)
    d_fin, y_fin = digits_by_class(classes)
    check_int("n_test_per_class", n_test_per_class, minimum=1, maximum=int(np.bincount(y_fin).min()) - 1)
    check_int("pre_sizes", max(pre_sizes), minimum=1, maximum=len(y_pre))
    n_seeds = len(seeds)
    # pre-training data (one set per seed; the "few" model uses its first pre_sizes[1] images)
    Xp, Yp, Kp = [], [], []
    for s in seeds:
        g = np.random.default_rng([2610, int(s)])
        order = g.permutation(len(y_pre))
        tok, rel = _render(d_pre[order], g.random(len(order)) < 0.5, 2611 + int(s))
        Xp.append(tok)
        Yp.append(y_pre[order])
        Kp.append(np.ones_like(rel))
    pre_models = _models(2 * n_seeds, dict(arch, n_classes=len(others)), seed=2612)
    members = np.array([(k, pre_sizes[m]) for m in range(2) for k in range(n_seeds)])
    res = train_vits(pre_models, torch.tensor(np.stack(Xp), dtype=torch.float32), torch.tensor(np.stack(Yp)),
                     torch.tensor(np.stack(Kp)), members, steps=pre_steps, lr=lr, batch=batch, seed=2613,
                     device=device)
    diverged = int(res.diverged.sum())
    # fine-tuning data: per seed, a training set with the spurious split and a balanced test set
    n_r = len(removals)
    Xf, Yf, Kf, Xt, Yt, Kt = [], [], [], [], [], []
    for s in seeds:
        g = np.random.default_rng([2620, int(s)])
        test = np.concatenate([g.permutation(np.flatnonzero(y_fin == c))[:n_test_per_class] for c in range(2)])
        train = g.permutation(np.setdiff1d(np.arange(len(y_fin)), test))
        photo = g.random(len(train)) < np.asarray(photo_share)[y_fin[train]]
        tok, rel = _render(d_fin[train], photo, 2621 + int(s))
        Xf.append(tok)
        Yf.append(y_fin[train])
        Kf.append(_masks(rel, removals, 2622 + int(s)))
        both = np.concatenate([test, test])
        tok, rel = _render(d_fin[both], np.arange(len(both)) < len(test), 2623 + int(s))
        Xt.append(tok)
        Yt.append(y_fin[both])
        Kt.append(_masks(rel, removals, 2624 + int(s)))
    n_train = min(len(y) for y in Yf)
    Xf = torch.tensor(np.stack([x[:n_train] for x in Xf]), dtype=torch.float32)
    Yf = torch.tensor(np.stack([y[:n_train] for y in Yf]))
    Kf = torch.tensor(np.stack([k[:, :n_train] for k in Kf]))
    Xs, Ys, Ks = _per_removal(Xf, Yf, Kf)
    grid = [(m, i, k) for m in range(3) for i in range(n_r) for k in range(n_seeds)]
    models = _models(len(grid), dict(arch, n_classes=2), seed=2625)
    for model, (m, _, k) in zip(models, grid):
        if m < 2:  # copy the pre-trained body; the two-class head keeps its fresh initialisation
            body = {n: v for n, v in pre_models[m * n_seeds + k].state_dict().items() if not n.startswith("head.")}
            model.load_state_dict(body, strict=False)
    members = np.array([(k * n_r + i, n_train) for _, i, k in grid])
    res = train_vits(models, Xs, Ys, Ks, members, steps=steps, lr=lr, batch=batch, seed=2626, device=device)
    diverged += int(res.diverged.sum())
    Xt, Yt, Kt = torch.tensor(np.stack(Xt), dtype=torch.float32), torch.tensor(np.stack(Yt)), torch.tensor(np.stack(Kt))
    acc = np.zeros((3, n_r, n_seeds))
    for model, (m, i, k) in zip(models, grid):
        acc[m, i, k] = accuracy(model, Xt[k], Yt[k], Kt[k, i])
    return {"acc": acc, "alpha": alpha, "diverged": diverged, "n_train": n_train}
