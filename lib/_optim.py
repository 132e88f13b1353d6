"""Private helpers of :mod:`lib.train`: option checks, optimiser construction, gradient clipping, divergence tests.

Nothing here is public API; :func:`lib.train.train` and :func:`lib.train.train_stacked` are the entry points.
The optimisers are PyTorch's own (``torch.optim.SGD``, ``Adam``, ``AdamW``): their updates act elementwise, so one
optimiser over stacked parameters (leading model axis ``K``) updates every model exactly as ``K`` separate ones
would. Gradient clipping follows ``torch.nn.utils.clip_grad_norm_`` (``g <- g * min(1, c / (||g|| + 1e-6))``),
either over all gradients (one model) or per model along the leading axis.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .config import check_bool, check_in, check_int, check_positive, check_range

OPTIMIZERS = ("gd", "sgd", "adam", "adamw")


def check_options(*, lr, optimizer, momentum, nesterov, weight_decay, adam_betas, clip_norm, divergence_bound,
                  divergence_factor, batch_fn, divergence_growth=None) -> None:
    """Validate the optimiser options shared by ``train`` and ``train_stacked`` (ValueError naming the argument)."""
    check_positive("lr", lr)
    check_in("optimizer", optimizer, OPTIMIZERS)
    check_range("momentum", momentum, 0.0, 1.0, hi_open=True)
    check_positive("weight_decay", weight_decay, allow_zero=True)
    if momentum and optimizer not in ("gd", "sgd"):
        raise ValueError(f"momentum applies to optimizer 'gd'/'sgd' only (Adam's is adam_betas), got {optimizer!r}")
    check_bool("nesterov", nesterov)
    if nesterov and not momentum:
        raise ValueError("nesterov=True needs momentum > 0")
    try:
        b1, b2 = (float(b) for b in adam_betas)
    except (TypeError, ValueError):
        raise ValueError(f"adam_betas must be a pair of numbers in [0, 1), got {adam_betas!r}") from None
    check_range("adam_betas", b1, 0.0, 1.0, hi_open=True)
    check_range("adam_betas", b2, 0.0, 1.0, hi_open=True)
    if clip_norm is not None:
        check_positive("clip_norm", clip_norm)
    check_positive("divergence_bound", divergence_bound)
    if divergence_factor is not None:
        check_range("divergence_factor", divergence_factor, 1.0, None, lo_open=True)
    if divergence_growth is not None:
        check_range("divergence_growth", divergence_growth, 1.0, None, lo_open=True)
    if optimizer == "sgd" and batch_fn is None:
        raise ValueError("optimizer='sgd' needs a batch_fn (use optimizer='gd' for full batch)")


def make_optimizer(leaves, *, optimizer, lr, momentum, nesterov, weight_decay, adam_betas):
    """The ``torch.optim`` optimiser over ``leaves``, or ``None`` for the plain step ``p <- p - lr * g``.

    Plain GD/SGD (no momentum, no weight decay) is not routed through ``torch.optim.SGD``: it keeps the book's
    original update ``p.sub_(lr * g)`` bit for bit.
    """
    if optimizer in ("gd", "sgd"):
        if momentum == 0 and weight_decay == 0:
            return None
        return torch.optim.SGD(leaves, lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay)
    cls = torch.optim.Adam if optimizer == "adam" else torch.optim.AdamW
    return cls(leaves, lr=lr, betas=tuple(adam_betas), weight_decay=weight_decay)


def apply_update(opt, leaves, grads, lr_t: float) -> None:
    """One update of ``leaves`` with ``grads`` at learning rate ``lr_t`` (``opt`` from :func:`make_optimizer`)."""
    with torch.no_grad():
        if opt is None:
            for p, g in zip(leaves, grads):
                p.sub_(lr_t * g)
            return
        for group in opt.param_groups:
            group["lr"] = lr_t
        for p, g in zip(leaves, grads):
            p.grad = g
        opt.step()
        opt.zero_grad(set_to_none=True)


def clip_global(grads, max_norm: float) -> list[torch.Tensor]:
    """``torch.nn.utils.clip_grad_norm_`` on a list of gradients (returns scaled copies)."""
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return [g * coef for g in grads]


def clip_per_model(grads, max_norm: float) -> list[torch.Tensor]:
    """Per-model ``clip_grad_norm_``: model ``k``'s gradient (slice ``k`` of every stacked gradient) is clipped to
    norm ``max_norm`` on its own."""
    norms = torch.stack([torch.linalg.vector_norm(g.reshape(g.shape[0], -1), dim=1) for g in grads])  # (L, K)
    coef = torch.clamp(max_norm / (torch.linalg.vector_norm(norms, dim=0) + 1e-6), max=1.0)  # (K,)
    return [g * coef.view(-1, *([1] * (g.ndim - 1))) for g in grads]


def norm(leaves) -> float:
    """Euclidean norm of all ``leaves`` together (one model)."""
    return math.sqrt(sum(float((p.detach() ** 2).sum()) for p in leaves))


def norm_per_model(leaves) -> torch.Tensor:
    """Euclidean norm of each model's parameters, (K,), for stacked ``leaves``."""
    return torch.sqrt(sum((p.detach().reshape(p.shape[0], -1) ** 2).sum(1) for p in leaves))


def loss_blew_up(loss, loss0, factor):
    """Whether ``loss > factor * loss0`` (only where ``loss0 > 0``; ``factor=None`` switches the test off).

    Works on floats (one model) and on tensors (K,) alike.
    """
    if isinstance(loss, float):
        if factor is None:
            return False
        return loss0 > 0 and loss > factor * loss0
    if factor is None:
        return torch.zeros_like(loss, dtype=torch.bool)
    return (loss0 > 0) & (loss > factor * loss0)


#: how many rising steps in a row the per-step divergence test asks for (here and in :mod:`lib.maps`)
GROWTH_WINDOW = 8


class GrowthTest:
    """The per-step divergence test: the loss rose at each of the last :data:`GROWTH_WINDOW` steps, by more than
    ``factor`` in all, and is above its initial value. A run that blows up geometrically is caught after a few
    steps (GD on ``x**2`` at lr 1.5, whose loss grows fourfold per step, at step 8), long before it passes
    ``divergence_factor`` times its initial loss; a transient spike (a catapult, a loss spike at the edge of
    stability) rises for fewer steps or stays below the initial loss. ``factor=None`` switches it off.

    Call it once per step with the loss (a float, or a (K,) tensor for stacked models) and the initial loss.
    """

    def __init__(self, factor):
        self.factor = factor
        self.recent: list = []

    def __call__(self, loss, loss0):
        scalar = isinstance(loss, float)
        if self.factor is None:
            return False if scalar else torch.zeros_like(loss, dtype=torch.bool)
        self.recent.append(loss)
        if len(self.recent) > GROWTH_WINDOW + 1:
            self.recent.pop(0)
        if len(self.recent) <= GROWTH_WINDOW:
            return False if scalar else torch.zeros_like(loss, dtype=torch.bool)
        first = self.recent[0]
        if scalar:
            rising = all(b > a for a, b in zip(self.recent, self.recent[1:]))
            return bool(rising and first > 0 and loss > self.factor * first and loss > loss0)
        window = torch.stack(self.recent)
        rising = (window[1:] > window[:-1]).all(dim=0)
        return rising & (first > 0) & (loss > self.factor * first) & (loss > loss0)


def lr_at(lr: float, schedule, step: int) -> float:
    """``lr * schedule(step)``, checking that the schedule returns a finite multiplier >= 0."""
    m = float(schedule(step))
    if not math.isfinite(m) or m < 0:
        raise ValueError(f"schedule(step) must return a finite multiplier >= 0, got {m!r} at step {step}")
    return lr * m


def record_test(record_every):
    """``step -> bool``: every ``record_every`` steps (an int >= 1) or at the given steps (a collection of ints)."""
    if isinstance(record_every, (int, np.integer)) and not isinstance(record_every, bool):
        check_int("record_every", record_every, minimum=1)
        return lambda step: step % record_every == 0
    if isinstance(record_every, (str, bytes)):
        raise ValueError(f"record_every must be an int >= 1 or a collection of steps, got {record_every!r}")
    try:
        values = [float(s) for s in record_every]
    except (TypeError, ValueError):
        raise ValueError(f"record_every must be an int >= 1 or a collection of steps, got {record_every!r}") from None
    if any(not v.is_integer() or v < 0 for v in values):
        raise ValueError(f"record_every must hold integer steps >= 0, got {record_every!r}")
    return {int(v) for v in values}.__contains__
