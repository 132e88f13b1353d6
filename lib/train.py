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
from torch.func import functional_call

from . import _optim
from ._stacking import _Bound, _flat_views, _mlp_plan, _MLPView, _named_leaves, _stack
from .config import check_bool, check_device, check_int, check_positive

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
    for name, arg in (("boundaries", boundaries), ("values", values)):
        if isinstance(arg, (str, bytes)) or not hasattr(arg, "__iter__"):
            raise ValueError(f"{name} must be a sequence of numbers, got {arg!r}")
    boundaries, values = list(boundaries), list(values)
    for b in boundaries:
        check_int("boundaries", b, minimum=0)
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"values must have len(boundaries)+1 = {len(boundaries) + 1} entries, got {len(values)}")
    if boundaries != sorted(boundaries):
        raise ValueError("boundaries must be increasing")
    for v in values:
        check_positive("values", v, allow_zero=True)

    def f(step: int) -> float:
        return float(values[int(np.searchsorted(boundaries, step, side="right"))])

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


def _check_on(name: str, tensors, dev: torch.device) -> None:
    """Raise ``ValueError`` unless every tensor lives on ``dev`` (``cuda`` matches the current ``cuda:N``)."""
    for t in tensors:
        here = t.device
        if here.type != dev.type or (dev.index is not None and here.index not in (dev.index, None)):
            raise ValueError(f"{name} are on {here} but device is {dev}: move them with .to(device) first "
                             "(tensors are trained in place, so they cannot be moved here)")


def _to_cpu(value):
    """A recorded statistic as the CPU sees it: a tensor on another device comes back to the CPU (detached);
    anything else, CPU tensors included, is returned as it is, so CPU runs keep their exact values."""
    if isinstance(value, torch.Tensor) and value.device.type != "cpu":
        return value.detach().cpu()
    return value


def _iterate(steps: int, progress):
    if progress is not None:
        check_bool("progress", progress)
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
    divergence_growth: float | None = 1e4,
    progress: bool | None = None,
    callbacks=(),
    generator: torch.Generator | None = None,
    adam_betas=(0.9, 0.999),
    weight_decay: float = 0.0,
    momentum: float = 0.0,
    nesterov: bool = False,
    clip_norm: float | None = None,
    frozen=(),
    device="cpu",
    tracker=None,
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
        record_every: recording period in steps, or a collection of the steps to record (e.g. log-spaced);
            step 0 (for a period) and the last step are always recorded.
        divergence_bound: the run stops, marked diverged, when the loss is not finite or the parameter norm
            exceeds this bound ...
        divergence_factor: ... or when the loss exceeds this factor (> 1) times the initial loss (only when the
            initial loss is > 0; ``None`` switches this test off). The default 1e6 catches Adam blow-ups to a
            finite loss; the largest ratio in the book's runs is about 2e3 (GD at the edge of stability).
        divergence_growth: ... or when the loss rose at each of the last 8 steps, by more than this factor (> 1)
            in all, and is above its initial loss (``None`` switches this test off): a geometric blow-up is
            caught within a few steps (GD on ``x**2`` at lr 1.5 at step 8, not step 10 as by the factor 1e6).
        progress: show a tqdm bar (default: only when ``steps > 2000``).
        callbacks: callables ``cb(params, step, loss)``, called after every update.
        generator: torch generator handed to ``batch_fn`` (default: seeded with 0, so runs are repeatable).
        adam_betas, weight_decay: Adam/AdamW coefficients; weight decay (>= 0) also applies to ``"gd"``/``"sgd"``.
        momentum, nesterov: heavy-ball momentum in [0, 1) for ``"gd"``/``"sgd"`` (PyTorch semantics), Nesterov's.
        clip_norm: clip the gradient to this global norm before the update (``clip_grad_norm_`` semantics).
        frozen: names of parameters (module parameter names or dict keys) that get no update; they keep their
            values bit for bit. Module parameters with ``requires_grad=False`` are frozen anyway.
        device: where to train (``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``; :func:`lib.config.check_device`).
            A module is moved there (``module.to(device)``, in place); a tensor or dict of tensors must already
            be there (it is updated in place, so it cannot be moved). ``loss_fn`` and ``batch_fn`` must give
            tensors on that device; ``generator`` stays a CPU generator (draw on the CPU, then ``.to(device)``,
            so a seed gives the same numbers on every device). The history comes back as CPU NumPy arrays.
        tracker: a :class:`lib.curvature.SharpnessTracker` (flat tensor ``params``, full batch only): called on
            ``(loss_fn, params)`` at every step, its top Hessian eigenvalue is recorded as ``"sharpness"`` (at the
            recorded steps), and the step takes the loss and the gradient it computed anyway with its Hessian
            graph instead of a forward and backward pass of its own.
    """
    check_int("steps", steps, minimum=0)
    dev = check_device("device", device)
    recorded = _optim.record_test(record_every)
    _optim.check_options(lr=lr, optimizer=optimizer, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                         adam_betas=adam_betas, clip_norm=clip_norm, divergence_bound=divergence_bound,
                         divergence_factor=divergence_factor, batch_fn=batch_fn,
                         divergence_growth=divergence_growth)
    if not callable(loss_fn):
        raise ValueError("loss_fn must be callable")
    if isinstance(params, torch.nn.Module):
        params.to(dev)  # in place; a no-op for a module already there
    if tracker is not None:
        from .curvature import SharpnessTracker

        if not isinstance(tracker, SharpnessTracker):
            raise ValueError("tracker must be a lib.curvature.SharpnessTracker")
        if not isinstance(params, torch.Tensor) or batch_fn is not None:
            raise ValueError("tracker needs a flat parameter tensor and a full-batch loss (no batch_fn)")
    leaves = [p for _, p in _named_leaves(params, frozen)]
    _check_on("params", leaves, dev)
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

    def log(step, loss_value, lr_t, diverged=False):
        history["step"].append(step)
        history["loss"].append(loss_value)
        history["lr"].append(lr_t)
        if record is None and tracker is None:
            return
        if diverged:  # record() never sees diverged parameters: its statistics are NaN at that step
            for k, v in history.items():
                if k not in ("step", "loss", "lr"):
                    v.append(np.full_like(np.asarray(v[-1], dtype=float), np.nan))
            return
        if tracker is not None:
            history.setdefault("sharpness", []).append(tracker.value)
        if record is None:
            return
        with torch.no_grad():
            stats = record(params, step)
        for k, v in stats.items():
            history.setdefault(k, []).append(_to_cpu(v))

    loss0 = None
    growing = _optim.GrowthTest(divergence_growth)
    for step in _iterate(steps, progress):
        lr_t = _optim.lr_at(lr, schedule, step)
        if tracker is not None:
            tracker(loss_fn, params.detach())
            loss = tracker.loss_value
        else:
            loss = evaluate(step)
        loss_value = float(loss.detach())
        loss0 = loss_value if loss0 is None else loss0
        grew = growing(loss_value, loss0)
        diverged = (not math.isfinite(loss_value) or _optim.norm(leaves) > divergence_bound
                    or _optim.loss_blew_up(loss_value, loss0, divergence_factor) or grew)
        if recorded(step) or step == steps or diverged:
            log(step, loss_value, lr_t, diverged)
        if diverged:
            result.diverged, result.diverged_step = True, step
            break
        if step == steps:
            break
        grads = (tracker.gradient,) if tracker is not None else torch.autograd.grad(loss, leaves)
        if clip_norm is not None:
            grads = _optim.clip_global(grads, clip_norm)
        _optim.apply_update(opt, leaves, grads, lr_t)
        for cb in callbacks:
            cb(params, step, loss_value)
    result.history = {k: np.asarray(v) for k, v in history.items()}
    return result


# ----------------------------------------------------------------------------------------------- K models at once
@dataclass
class StackedResult:
    """What :func:`train_stacked` returns.

    Attributes:
        params: name -> (K, ...) tensor, the K trained models' parameters stacked (frozen ones included).
        buffers: name -> (K, ...) tensor of the modules' buffers (empty for a dict of tensors).
        history: ``step`` (T,), ``lr`` (T,), ``loss`` (T, K) and each ``record`` key (T, K, ...); a diverged
            model's entries are NaN after its ``diverged_step``.
        diverged: (K,) bool, whether each model was stopped (frozen) for divergence.
        diverged_step: (K,) int, the step at which it was, -1 where it was not.
    """

    params: dict
    buffers: dict
    history: dict
    diverged: np.ndarray
    diverged_step: np.ndarray

    @property
    def K(self) -> int:
        return len(self.diverged)

    def state_dict(self, k: int) -> dict:
        """Model ``k``'s parameters and buffers as an ordinary state dict (detached copies)."""
        check_int("k", k, minimum=0, maximum=self.K - 1)
        return {n: v[k].detach().clone() for n, v in {**self.params, **self.buffers}.items()}

    def state_dicts(self) -> list[dict]:
        return [self.state_dict(k) for k in range(self.K)]

    def load_into(self, module: torch.nn.Module, k: int) -> torch.nn.Module:
        """Load model ``k`` into ``module`` (an instance of the trained architecture) and return it."""
        module.load_state_dict(self.state_dict(k))
        return module

    def final(self, key: str = "loss") -> np.ndarray:
        """Last recorded value of ``key`` per model."""
        return np.asarray(self.history[key][-1])


def train_stacked(
    models_or_params,
    loss_fn: Callable,
    *,
    lr: float,
    steps: int,
    optimizer: str = "gd",
    batch_fn: Callable | None = None,
    shared_batch: bool = False,
    schedule: Callable[[int], float] | None = None,
    record: Callable | None = None,
    record_every: int = 1,
    divergence_bound: float = 1e8,
    divergence_factor: float | None = 1e6,
    divergence_growth: float | None = 1e4,
    progress: bool | None = None,
    callbacks=(),
    generator: torch.Generator | None = None,
    adam_betas=(0.9, 0.999),
    weight_decay: float = 0.0,
    momentum: float = 0.0,
    nesterov: bool = False,
    clip_norm: float | None = None,
    frozen=(),
    device="cpu",
    randomness: str = "error",
) -> StackedResult:
    """Train K independent copies of one small model at once: :func:`train` vectorised over a model axis.

    The parameters are stacked along a leading axis K (``torch.func.stack_module_state``), the per-model loss is
    ``torch.func.vmap``-ed over K (``functional_call`` for modules) and the sum of the K losses is
    back-propagated once. The models never interact, so the gradient is block-diagonal; SGD-momentum, Adam and
    AdamW act elementwise, so one optimiser over the stacked tensors gives model k exactly the trajectory that
    :func:`train` gives it on its own (up to round-off). Clipping (``clip_norm``) and divergence act per model: a
    model that diverges (the tests of :func:`train`, on its own loss and parameter norm) is frozen at the state
    where it was detected (what :func:`train` would return), flagged, and the others go on.

    Args:
        models_or_params: a list of K ``nn.Module`` copies of one architecture (trained in place: the trained
            parameters are copied back at the end), or a dict name -> (K, ...) tensor (updated in place).
        loss_fn: the per-model loss, as for :func:`train`: ``loss_fn(model, batch) -> scalar`` where ``model``
            is the module with model k's parameters swapped in (or model k's dict of tensors), ``batch`` model
            k's slice of the batch; ``loss_fn(model)`` without ``batch_fn``. It runs under ``vmap``: no
            ``.item()``/``float()``, no data-dependent Python control flow, no in-place buffer updates.
        batch_fn: ``batch_fn(step, generator) -> batch``, every tensor of the batch with a leading axis K (model
            k trains on slice k), or without it when ``shared_batch=True`` (every model sees the same batch).
        record: ``record(model, step) -> dict[str, tensor]``, per model like ``loss_fn`` (vmapped, so it must
            return tensors); history entries get shape (T, K, ...).
        callbacks: ``cb(params, step, losses)`` after every update, with the stacked dict and the (K,) losses.
        others: ``lr``, ``steps``, ``optimizer``, ``schedule``, ``record_every``, ``divergence_bound``,
            ``divergence_factor``, ``divergence_growth``, ``progress``, ``generator``, ``adam_betas``,
            ``weight_decay``, ``momentum``, ``nesterov``, ``clip_norm``, ``frozen``: as for :func:`train`
            (``clip_norm`` clips each model's own gradient norm).
        device: where to train (:func:`lib.config.check_device`). A list of modules is stacked and the stack
            moved there (the trained parameters are copied back into the modules, wherever they are); a dict of
            stacked tensors must already be there (it is updated in place). ``batch_fn`` must return tensors on
            that device, drawn from the CPU ``generator`` and moved (the same seed gives the same batches on every
            device). ``params`` and ``buffers`` of the result stay on ``device``; the history and the divergence
            flags are CPU NumPy arrays.
        randomness: ``torch.vmap``'s handling of random operations inside ``loss_fn`` (e.g. dropout): "error"
            (default: none allowed), "different" (each model its own draws) or "same". The draws come from torch's
            global generator of ``device``: seed it (``torch.manual_seed``) to repeat a run.
    """
    check_int("steps", steps, minimum=0)
    dev = check_device("device", device)
    if randomness not in ("error", "different", "same"):
        raise ValueError(f"randomness must be 'error', 'different' or 'same', got {randomness!r}")
    recorded = _optim.record_test(record_every)
    _optim.check_options(lr=lr, optimizer=optimizer, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                         adam_betas=adam_betas, clip_norm=clip_norm, divergence_bound=divergence_bound,
                         divergence_factor=divergence_factor, batch_fn=batch_fn,
                         divergence_growth=divergence_growth)
    if not callable(loss_fn) or (record is not None and not callable(record)):
        raise ValueError("loss_fn (and record, if given) must be callable")
    check_bool("shared_batch", shared_batch)
    params, buffers, trainable, base, K = _stack(models_or_params, frozen)
    if base is not None:  # stacked copies: move them (a no-op on the CPU)
        params = {n: v.to(dev) for n, v in params.items()}
        buffers = {n: v.to(dev) for n, v in buffers.items()}
    _check_on("models_or_params", [*params.values(), *buffers.values()], dev)
    names = [n for n in params if n in trainable]
    given = {n: params[n] for n in names}  # a dict of tensors is updated in place: copied back at the end
    flat, views = _flat_views([params[n] for n in names], K)
    params.update(zip(names, views))
    leaves = [params[n].requires_grad_(True) for n in names]
    schedule = schedule or constant()
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    # one optimiser over one (K, P) tensor whose views are the stacked parameters: the updates act elementwise,
    # so this is the same arithmetic as one tensor per parameter, in a handful of kernels instead of dozens
    opt = _optim.make_optimizer([flat], optimizer=optimizer, lr=lr, momentum=momentum, nesterov=nesterov,
                                weight_decay=weight_decay, adam_betas=adam_betas)
    plan = _mlp_plan(base) if base is not None and not buffers else None
    prefix = "" if base is None or plan is not None else "inner."

    def per_model(fn, *extra):
        """vmap over K of ``fn(model_k, *args_k, *extra)``."""
        if base is None:
            one = lambda p, *args: fn(p, *args, *extra)
        elif plan is not None:  # an MLP: its layers applied directly (batched matmuls under vmap)
            one = lambda p, *args: fn(_MLPView(plan, p), *args, *extra)
        else:
            bound = _Bound(base, lambda m, *args: fn(m, *args, *extra))
            one = lambda p, *args: functional_call(bound, p, args)
        return one

    state = lambda: {prefix + n: v for n, v in {**params, **buffers}.items()}
    loss_one = per_model(loss_fn)

    def evaluate(step):
        if batch_fn is None:
            losses = torch.vmap(loss_one, randomness=randomness)(state())
        else:
            batch = batch_fn(step, generator)
            losses = torch.vmap(loss_one, in_dims=(0, None if shared_batch else 0), randomness=randomness)(
                state(), batch)
        if tuple(losses.shape) != (K,):
            raise ValueError(f"loss_fn must return a scalar per model, got shape {tuple(losses.shape)[1:]}")
        return losses

    history: dict[str, list] = {"step": [], "loss": [], "lr": []}
    div = torch.zeros(K, dtype=torch.bool, device=dev)
    div_step = np.full(K, -1)
    anchor: dict = {}

    def mask_dead(values, step):
        """NaN for the models that diverged before ``step`` (floating values with a leading K axis)."""
        values = _to_cpu(torch.as_tensor(values)).detach().clone()
        dead = torch.as_tensor((div_step >= 0) & (div_step < step))
        if values.is_floating_point() and values.ndim >= 1 and values.shape[0] == K and dead.any():
            values[dead] = float("nan")
        return values.numpy()

    def log(step, losses, lr_t):
        history["step"].append(step)
        history["loss"].append(mask_dead(losses, step))
        history["lr"].append(lr_t)
        if record is not None:
            with torch.no_grad():
                stats = torch.vmap(per_model(record, step), randomness=randomness)(state())
            for k, v in stats.items():
                history.setdefault(k, []).append(mask_dead(v, step))

    loss0 = None
    growing = _optim.GrowthTest(divergence_growth)
    for step in _iterate(steps, progress):
        lr_t = _optim.lr_at(lr, schedule, step)
        losses = evaluate(step)
        lv = losses.detach()
        loss0 = lv.clone() if loss0 is None else loss0
        bad = ~torch.isfinite(lv) | (_optim.norm_per_model(leaves) > divergence_bound) | growing(lv, loss0)
        new = (bad | _optim.loss_blew_up(lv, loss0, divergence_factor)) & ~div
        if new.any():
            div |= new
            div_step[new.cpu().numpy()] = step
            with torch.no_grad():
                for n, p in zip(names, leaves):
                    keep = new.view(-1, *([1] * (p.ndim - 1)))
                    anchor[n] = torch.where(keep, p, anchor[n]) if n in anchor else p.detach().clone()
        if recorded(step) or step == steps or new.any():
            log(step, lv, lr_t)
        if step == steps or div.all():
            break
        live = torch.where(div, torch.zeros_like(losses), losses)
        grads = torch.autograd.grad(live.sum(), leaves)
        if div.any():
            grads = [torch.where(div.view(-1, *([1] * (g.ndim - 1))), torch.zeros_like(g), g) for g in grads]
        if clip_norm is not None:
            grads = _optim.clip_per_model(grads, clip_norm)
        _optim.apply_update(opt, [flat], [torch.cat([g.reshape(K, -1) for g in grads], 1)], lr_t)
        if div.any():
            with torch.no_grad():
                for n, p in zip(names, leaves):
                    p.copy_(torch.where(div.view(-1, *([1] * (p.ndim - 1))), anchor[n], p))
        for cb in callbacks:
            cb(params, step, lv)
    with torch.no_grad():
        for n in names:
            params[n] = params[n].detach().clone()
            if base is None:
                given[n].copy_(params[n])
                params[n] = given[n]
    if base is not None:
        with torch.no_grad():
            for k, m in enumerate(models_or_params):
                for n, p in m.named_parameters():
                    if n in trainable:
                        p.copy_(params[n][k])
    out = {k: np.stack(v) if k not in ("step", "lr") else np.asarray(v) for k, v in history.items()}
    params = {n: v.detach() for n, v in params.items()}
    return StackedResult(params=params, buffers=buffers, history=out, diverged=div.cpu().numpy().copy(),
                         diverged_step=div_step)
