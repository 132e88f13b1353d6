"""One trainer for the whole book: full-batch gradient descent, (online) SGD and Adam.

``train`` works on an ``nn.Module``, a single tensor or a dict of tensors, records a history every
``record_every`` steps, applies a learning-rate schedule, and stops a diverging run (non-finite loss or
parameter norm above ``divergence_bound``), marking it diverged instead of raising.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from .config import check_in, check_int, check_positive

OPTIMIZERS = ("gd", "sgd", "adam")


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


def _leaves(params) -> list[torch.Tensor]:
    if isinstance(params, torch.nn.Module):
        return [p for p in params.parameters() if p.requires_grad]
    if isinstance(params, torch.Tensor):
        return [params]
    if isinstance(params, dict) and params and all(isinstance(v, torch.Tensor) for v in params.values()):
        return list(params.values())
    raise ValueError("params must be an nn.Module, a tensor or a non-empty dict of tensors")


def _norm(leaves) -> float:
    return math.sqrt(sum(float((p.detach() ** 2).sum()) for p in leaves))


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
    progress: bool | None = None,
    callbacks=(),
    generator: torch.Generator | None = None,
    adam_betas=(0.9, 0.999),
    weight_decay: float = 0.0,
) -> TrainResult:
    """Train ``params`` by gradient descent, SGD or Adam, recording a history.

    The update is ``theta <- theta - lr * schedule(t) * grad L(theta)`` for ``"gd"``/``"sgd"`` (plain steps,
    no momentum), Adam's for ``"adam"``.

    Args:
        params: an ``nn.Module``, a tensor, or a dict of tensors (leaves; ``requires_grad`` is set here).
        loss_fn: ``loss_fn(params) -> scalar`` for full batch, ``loss_fn(params, batch)`` with ``batch_fn``.
        lr: base learning rate (> 0).
        steps: number of updates (>= 0).
        optimizer: ``"gd"`` (full batch), ``"sgd"`` (needs ``batch_fn``) or ``"adam"``.
        batch_fn: ``batch_fn(step, generator) -> batch``; fresh samples each step give online SGD.
        schedule: ``schedule(step) -> multiplier`` of ``lr`` (see :func:`step_decay`, :func:`piecewise`).
        record: ``record(params, step) -> dict[str, float]`` of extra statistics, called every ``record_every``.
        record_every: recording period in steps; the last step is always recorded.
        divergence_bound: the run stops, marked diverged, when the loss is not finite or the parameter norm
            exceeds this bound.
        progress: show a tqdm bar (default: only when ``steps > 2000``).
        callbacks: callables ``cb(params, step, loss)``, called after every update.
        generator: torch generator handed to ``batch_fn`` (default: seeded with 0, so runs are repeatable).
    """
    check_positive("lr", lr)
    check_int("steps", steps, minimum=0)
    check_in("optimizer", optimizer, OPTIMIZERS)
    check_int("record_every", record_every, minimum=1)
    check_positive("divergence_bound", divergence_bound)
    if not callable(loss_fn):
        raise ValueError("loss_fn must be callable")
    if optimizer == "sgd" and batch_fn is None:
        raise ValueError("optimizer='sgd' needs a batch_fn (use optimizer='gd' for full batch)")
    leaves = _leaves(params)
    for p in leaves:
        p.requires_grad_(True)
    schedule = schedule or constant()
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    opt = None
    if optimizer == "adam":
        opt = torch.optim.Adam(leaves, lr=lr, betas=adam_betas, weight_decay=weight_decay)

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

    show = progress if progress is not None else steps > 2000
    iterator = range(steps + 1)
    if show:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, leave=False, mininterval=1.0)
    for step in iterator:
        lr_t = lr * schedule(step)
        loss = evaluate(step)
        loss_value = float(loss.detach())
        diverged = not math.isfinite(loss_value) or _norm(leaves) > divergence_bound
        if step % record_every == 0 or step == steps or diverged:
            log(step, loss_value, lr_t)
        if diverged:
            result.diverged, result.diverged_step = True, step
            break
        if step == steps:
            break
        grads = torch.autograd.grad(loss, leaves)
        with torch.no_grad():
            if opt is None:
                for p, g in zip(leaves, grads):
                    p.sub_(lr_t * g)
            else:
                for group in opt.param_groups:
                    group["lr"] = lr_t
                for p, g in zip(leaves, grads):
                    p.grad = g
                opt.step()
                opt.zero_grad(set_to_none=True)
        for cb in callbacks:
            cb(params, step, loss_value)
    result.history = {k: np.asarray(v) for k, v in history.items()}
    return result
