"""Colour x size circle images: the compositional data-generating process of Park et al. (2024), CPU-sized.

Each image shows one disc on a light background. Two binary concepts define four classes:

=====  =======  ======
class  colour   size
=====  =======  ======
00     red      big
01     red      small
10     blue     big
11     blue     small
=====  =======  ======

The *colour signal* ``delta`` is the per-channel distance between the class-mean colours,
``red = (0.5 + delta/2, 0.5 - delta/2, 0.5 - delta/2)`` and ``blue = (0.5 - delta/2, 0.5 - delta/2, 0.5 + delta/2)``;
the *size signal* is the difference of the mean radii (0.7 and 0.3 of the half-width, i.e. diameters of 70 % and
30 % of the image as in Yang et al. 2025, App. G.1). A diffusion model is trained on the classes 00, 01, 10 and
prompted with the conditioning of the held-out class 11 (blue, small).

Two variants: ``"faithful"`` (centre ~ U[-0.5, 0.5]^2 and background ~ U[0.8, 1]^3, as Park et al.) and ``"easy"``
(centre ~ U[-0.25, 0.25]^2, background fixed at 0.9), the variant recommended at 8x8 on a CPU because the model
learns to draw a disc much sooner and the concept-level dynamics are not hidden behind that phase.
"""

from __future__ import annotations

import numpy as np

from lib.config import check_array, check_in, check_int, check_positive, check_range, check_seed

#: (colour, size) bits of the four classes: colour 0 = red, 1 = blue; size 0 = big, 1 = small.
CLASSES = ((0, 0), (0, 1), (1, 0), (1, 1))


#: The three classes seen in training and the held-out composition (blue, small).
TRAIN_CLASSES = ((0, 0), (0, 1), (1, 0))


HELD_OUT = (1, 1)


#: Mean radius (grid units, the image spans [-1, 1]) of big and small discs, and the half-range of the jitter.
RADII = (0.7, 0.3)


RADIUS_JITTER = 0.1


VARIANTS = ("easy", "faithful")


def class_colors(delta: float) -> np.ndarray:
    """Mean RGB colour of red (row 0) and blue (row 1) for colour signal ``delta``; shape (2, 3), values in [0, 1]."""
    check_range("delta", delta, 0.0, 1.0)
    d = float(delta) / 2
    return np.array([[0.5 + d, 0.5 - d, 0.5 - d], [0.5 - d, 0.5 - d, 0.5 + d]])


def class_conditioning(delta: float, classes=CLASSES) -> np.ndarray:
    """Conditioning vectors ``(radius, R, G, B)`` at the class means; shape (len(classes), 4).

    The prompt for the held-out class is ``class_conditioning(delta, [HELD_OUT])``.
    """
    cols = class_colors(delta)
    rows = []
    for c in classes:
        if tuple(c) not in CLASSES:
            raise ValueError(f"classes must contain pairs from {CLASSES}, got {c!r}")
        rows.append([RADII[c[1]], *cols[c[0]]])
    return np.array(rows, dtype=np.float32)


def circles_color_size(n_per_class: int, delta: float, *, classes=TRAIN_CLASSES, image_size: int = 8,
                       variant: str = "easy", pixel_noise: float = 1e-3, seed: int = 0):
    """Sample images of discs from the colour x size data-generating process.

    Args:
        n_per_class: images per class (>= 1).
        delta: colour signal, the per-channel distance between mean red and mean blue, in [0, 1].
        classes: which (colour, size) classes to draw, a subset of :data:`CLASSES`.
        image_size: side ``S`` of the square images (>= 4).
        variant: ``"easy"`` or ``"faithful"`` (see the module docstring).
        pixel_noise: standard deviation of i.i.d. Gaussian pixel noise (>= 0).
        seed: seed of the NumPy generator.

    Returns:
        ``images`` (N, 3, S, S) float32 in [0, 1]; ``cond`` (N, 4) float32, the sampled ``(radius, R, G, B)``;
        ``labels`` (N, 2) int64, the ``(colour, size)`` bits; ``N = n_per_class * len(classes)``.
    """
    check_int("n_per_class", n_per_class, minimum=1)
    check_int("image_size", image_size, minimum=4)
    check_in("variant", variant, VARIANTS)
    check_positive("pixel_noise", pixel_noise, allow_zero=True)
    check_range("delta", delta, 0.0, 1.0)
    check_seed("seed", seed)
    cols = class_colors(delta)
    classes = [tuple(c) for c in classes]
    for c in classes:
        if c not in CLASSES:
            raise ValueError(f"classes must contain pairs from {CLASSES}, got {c!r}")
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.array(classes, dtype=np.int64), n_per_class, axis=0)
    n = len(labels)
    radius = np.array(RADII)[labels[:, 1]] + rng.uniform(-RADIUS_JITTER, RADIUS_JITTER, n)
    color = cols[labels[:, 0]] + rng.uniform(-delta / 8, delta / 8, (n, 3))
    half = 0.25 if variant == "easy" else 0.5
    centre = rng.uniform(-half, half, (n, 2))
    background = np.full((n, 3), 0.9) if variant == "easy" else rng.uniform(0.8, 1.0, (n, 3))
    images = render_discs(centre, radius, color, background, image_size)
    images = images + pixel_noise * rng.standard_normal(images.shape)
    cond = np.concatenate([radius[:, None], color], axis=1)
    return images.astype(np.float32), cond.astype(np.float32), labels


def render_discs(centre, radius, color, background, image_size: int) -> np.ndarray:
    """Anti-aliased discs: ``background * (1 - m) + color * m`` with ``m`` the soft disc mask.

    Shapes: centre (N, 2), radius (N,), color (N, 3), background (N, 3) -> images (N, 3, S, S). The mask ramps
    linearly from 0 to 1 over one pixel across the rim (an area-coverage approximation), which keeps small discs
    visible at 8x8.
    """
    check_array("centre", centre)
    check_array("radius", radius)
    check_array("color", color)
    check_array("background", background)
    check_int("image_size", image_size, minimum=4)
    centre, radius = np.asarray(centre, float), np.asarray(radius, float)
    color, background = np.asarray(color, float), np.asarray(background, float)
    n = len(radius)
    for name, arr, shape in (("centre", centre, (n, 2)), ("color", color, (n, 3)), ("background", background, (n, 3))):
        if arr.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    grid = np.linspace(-1, 1, image_size)
    pixel = grid[1] - grid[0]
    yy, xx = np.meshgrid(grid, grid, indexing="ij")
    dist = np.hypot(xx[None] - centre[:, 0, None, None], yy[None] - centre[:, 1, None, None])
    mask = np.clip(0.5 + (radius[:, None, None] - dist) / pixel, 0.0, 1.0)[:, None]
    return background[:, :, None, None] * (1 - mask) + color[:, :, None, None] * mask
