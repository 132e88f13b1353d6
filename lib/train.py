"""One trainer for the whole book: full-batch GD, (online) SGD with momentum, Adam and AdamW; one model or K at once.

* :func:`train` works on an ``nn.Module``, a single tensor or a dict of tensors, records a history every
  ``record_every`` steps, applies a learning-rate schedule, clips gradients, leaves frozen parameters untouched,
  and stops a diverging run (non-finite loss, parameter norm above ``divergence_bound``, or loss above
  ``divergence_factor`` times its initial value), marking it diverged instead of raising.
* :func:`train_stacked` trains K independent copies of one small model at once (several seeds or data sets):
  the parameters are stacked along a leading axis K (``torch.func.stack_module_state``), the per-model loss is
  ``torch.func.vmap``-ed over K and the summed loss is back-propagated once. The models never interact (the
  gradient is block-diagonal) and the optimisers act elementwise, so model k follows exactly the trajectory
  :func:`train` would give it; a diverging model is frozen and flagged while the others go on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from . import _optim
from .config import check_int, check_positive

OPTIMIZERS = _optim.OPTIMIZERS


# ----------------------------------------------------------------------------------------------- schedules
def constant() -> Callable[[int], float]:
    """Multiplier 1 at every step."""
    return lambda step: 1.0


def step_decay(at: int, factor: float) -> Callable[[int], float]:
    """Multiplier 1 before step ``at`` and ``factor`` from then on (e.g. 2.6 -> 0.5 is ``factor=0.5/2.6``)."""
    check_int("at", at, minimum=0)
    check_positive("factor", factor)
    return lambda step: 1.0 if step < at else float(factor)


def piecewise(boundaries, values) -> Callable[[int], float]:
    """Multiplier ``values[i]`` on ``[boundaries[i-1], boundaries[i])``; needs ``len(values) == len(boundaries)+1``."""
    boundaries, values = list(boundaries), list(values)
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"values must have len(boundaries)+1 = {len(boundaries) + 1} entries, got {len(values)}")
    if boundaries != sorted(boundaries):
        raise ValueError("boundaries must be increasing")
    for v in values:
        check_positive("values", v, allow_zero=True)

    def f(step: int) -> float:
        return float(values[int(np.searchsorted(boundaries, step, side="right"))])

    return f


def warmup_cosine(warmup: int, total: int, floor: float = 0.0) -> Callable[[int], float]:
    """Linear warm-up over ``warmup`` steps, then cosine decay to ``floor`` at ``total``."""
    check_int("warmup", warmup, minimum=0)
    check_int("total", total, minimum=1)
    check_positive("floor", floor, allow_zero=True)

    def f(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    return f


# ----------------------------------------------------------------------------------------------- trainer
@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes:
        params: the trained parameters (the same object that was passed in, updated in place).
        history: name -> NumPy array, one entry per recorded step; always has ``step``, ``loss`` and ``lr``.
        diverged: whether the run was stopped for divergence.
        diverged_step: the step at which it was stopped (None if it did not diverge).
    """

    params: object
    history: dict = field(default_factory=dict)
    diverged: bool = False
    diverged_step: int | None = None

    def final(self, key: str = "loss") -> float:
        """Last recorded value of ``key``."""
        return float(self.history[key][-1])


def _frozen_set(frozen) -> set:
    return {frozen} if isinstance(frozen, str) else set(frozen)


def _named_leaves(params, frozen) -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) of the parameters to train: all but the ``frozen`` ones and those without requires_grad."""
    frozen = _frozen_set(frozen)
    if isinstance(params, torch.nn.Module):
        named = list(params.named_parameters())
        trainable = [(n, p) for n, p in named if p.requires_grad]
    elif isinstance(params, torch.Tensor):
        if frozen:
            raise ValueError("frozen needs an nn.Module or a dict of tensors, not a single tensor")
        return [("", params)]
    elif isinstance(params, dict) and params and all(isinstance(v, torch.Tensor) for v in params.values()):
        named = trainable = list(params.items())
    else:
        raise ValueError("params must be an nn.Module, a tensor or a non-empty dict of tensors")
    unknown = frozen - {n for n, _ in named}
    if unknown:
        raise ValueError(f"frozen names unknown parameters {sorted(unknown)}; known: {[n for n, _ in named]}")
    out = [(n, p) for n, p in trainable if n not in frozen]
    if not out:
        raise ValueError("frozen leaves no parameter to train")
    return out


def _iterate(steps: int, progress):
    show = progress if progress is not None else steps > 2000
    if not show:
        return range(steps + 1)
    from tqdm.auto import tqdm

    return tqdm(range(steps + 1), leave=False, mininterval=1.0)


def train(
    params,
    loss_fn: Callable,
    *,
    lr: float,
    steps: int,
    optimizer: str = "gd",
    batch_fn: Callable | None = None,
    schedule: Callable[[int], float] | None = None,
    record: Callable | None = None,
    record_every: int = 1,
    divergence_bound: float = 1e8,
    divergence_factor: float | None = 1e6,
    progress: bool | None = None,
    callbacks=(),
    generator: torch.Generator | None = None,
    adam_betas=(0.9, 0.999),
    weight_decay: float = 0.0,
    momentum: float = 0.0,
    nesterov: bool = False,
    clip_norm: float | None = None,
    frozen=(),
) -> TrainResult:
    """Train ``params`` by gradient descent, SGD (with momentum), Adam or AdamW, recording a history.

    ``"gd"``/``"sgd"`` without momentum and weight decay take the plain step ``theta <- theta - lr * schedule(t) *
    grad L(theta)``; with them, ``torch.optim.SGD``'s update (heavy ball ``b <- mu b + g``, ``theta <- theta -
    lr b``; coupled weight decay ``g <- g + wd theta``). ``"adam"`` is ``torch.optim.Adam`` (coupled weight decay),
    ``"adamw"`` ``torch.optim.AdamW`` (decoupled: ``theta <- theta (1 - lr wd)``; ``weight_decay=0`` here, not
    PyTorch's 0.01).

    Args:
        params: an ``nn.Module``, a tensor, or a dict of tensors (leaves; ``requires_grad`` is set here).
        loss_fn: ``loss_fn(params) -> scalar`` for full batch, ``loss_fn(params, batch)`` with ``batch_fn``.
        lr: base learning rate (> 0).
        steps: number of updates (>= 0).
        optimizer: ``"gd"`` (full batch), ``"sgd"`` (needs ``batch_fn``), ``"adam"`` or ``"adamw"``.
        batch_fn: ``batch_fn(step, generator) -> batch``; fresh samples each step give online SGD.
        schedule: ``schedule(step) -> multiplier`` of ``lr`` (finite, >= 0; see :func:`step_decay`).
        record: ``record(params, step) -> dict[str, float]`` of extra statistics, called every ``record_every``.
        record_every: recording period in steps; the last step is always recorded.
        divergence_bound: the run stops, marked diverged, when the loss is not finite or the parameter norm
            exceeds this bound ...
        divergence_factor: ... or when the loss exceeds this factor (> 1) times the initial loss (only when the
            initial loss is > 0; ``None`` switches this test off). The default 1e6 catches Adam blow-ups to a
            finite loss; the largest ratio in the book's runs is about 2e3 (GD at the edge of stability).
        progress: show a tqdm bar (default: only when ``steps > 2000``).
        callbacks: callables ``cb(params, step, loss)``, called after every update.
        generator: torch generator handed to ``batch_fn`` (default: seeded with 0, so runs are repeatable).
        adam_betas, weight_decay: Adam/AdamW coefficients; weight decay (>= 0) also applies to ``"gd"``/``"sgd"``.
        momentum, nesterov: heavy-ball momentum in [0, 1) for ``"gd"``/``"sgd"`` (PyTorch semantics), Nesterov's.
        clip_norm: clip the gradient to this global norm before the update (``clip_grad_norm_`` semantics).
        frozen: names of parameters (module parameter names or dict keys) that get no update; they keep their
            values bit for bit. Module parameters with ``requires_grad=False`` are frozen anyway.
    """
    check_int("steps", steps, minimum=0)
    check_int("record_every", record_every, minimum=1)
    _optim.check_options(lr=lr, optimizer=optimizer, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                         adam_betas=adam_betas, clip_norm=clip_norm, divergence_bound=divergence_bound,
                         divergence_factor=divergence_factor, batch_fn=batch_fn)
    if not callable(loss_fn):
        raise ValueError("loss_fn must be callable")
    leaves = [p for _, p in _named_leaves(params, frozen)]
    for p in leaves:
        p.requires_grad_(True)
    schedule = schedule or constant()
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    opt = _optim.make_optimizer(leaves, optimizer=optimizer, lr=lr, momentum=momentum, nesterov=nesterov,
                                weight_decay=weight_decay, adam_betas=adam_betas)

    history: dict[str, list] = {"step": [], "loss": [], "lr": []}
    result = TrainResult(params=params)

    def evaluate(step):
        batch = batch_fn(step, generator) if batch_fn is not None else None
        return loss_fn(params, batch) if batch_fn is not None else loss_fn(params)

    def log(step, loss_value, lr_t):
        history["step"].append(step)
        history["loss"].append(loss_value)
        history["lr"].append(lr_t)
        if record is not None:
            with torch.no_grad():
                stats = record(params, step)
            for k, v in stats.items():
                history.setdefault(k, []).append(v)

    loss0 = None
    for step in _iterate(steps, progress):
        lr_t = _optim.lr_at(lr, schedule, step)
        loss = evaluate(step)
        loss_value = float(loss.detach())
        loss0 = loss_value if loss0 is None else loss0
        diverged = (not math.isfinite(loss_value) or _optim.norm(leaves) > divergence_bound
                    or _optim.loss_blew_up(loss_value, loss0, divergence_factor))
        if step % record_every == 0 or step == steps or diverged:
            log(step, loss_value, lr_t)
        if diverged:
            result.diverged, result.diverged_step = True, step
            break
        if step == steps:
            break
        grads = torch.autograd.grad(loss, leaves)
        if clip_norm is not None:
            grads = _optim.clip_global(grads, clip_norm)
        _optim.apply_update(opt, leaves, grads, lr_t)
        for cb in callbacks:
            cb(params, step, loss_value)
    result.history = {k: np.asarray(v) for k, v in history.items()}
    return result
