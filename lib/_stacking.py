"""Internals of :mod:`lib.train`: which leaves of a model are trained, and how K copies of one model are stacked
(``torch.func.stack_module_state``) and applied inside ``vmap`` (MLPs layer by layer, other modules through
``functional_call``)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch.func import stack_module_state


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


class _Bound(torch.nn.Module):
    """``forward(*args) = fn(inner, *args)``: lets ``functional_call`` hand ``fn`` the module with model k's
    parameters swapped in, so a ``loss_fn(model, batch)`` written for :func:`train` works unchanged."""

    def __init__(self, inner: torch.nn.Module, fn: Callable):
        super().__init__()
        self.inner = inner
        self.fn = fn

    def forward(self, *args):
        return self.fn(self.inner, *args)


def _flat_views(tensors, K):
    """One (K, P) tensor holding the stacked ``tensors`` side by side, and views of it shaped like them."""
    flat = torch.cat([t.detach().reshape(K, -1) for t in tensors], 1) if tensors else torch.zeros(K, 0)
    views, start = [], 0
    for t in tensors:
        size = t[0].numel()
        views.append(flat[:, start:start + size].view(t.shape))
        start += size
    return flat, views


_ACTIVATIONS = {torch.nn.ReLU: torch.relu, torch.nn.Tanh: torch.tanh, torch.nn.Sigmoid: torch.sigmoid,
                torch.nn.Identity: lambda x: x, torch.nn.SiLU: torch.nn.functional.silu}


def _mlp_plan(model):
    """The layers of an MLP as steps ``("linear", prefix, has_bias)`` / ``("act", fn)`` and whether the output is
    squeezed: for an ``nn.Sequential`` of ``nn.Linear`` and elementwise activations, ``lib.models.mlp.MLP`` and
    ``ReLUMLP``; ``None`` for any other module (which then goes through ``functional_call``)."""
    from .models.mlp import MLP, ReLUMLP

    def linear(prefix, layer):
        return ("linear", prefix, layer.bias is not None)

    if type(model) is torch.nn.Sequential:
        steps = []
        for name, layer in model.named_children():
            if type(layer) is torch.nn.Linear:
                steps.append(linear(f"{name}.", layer))
            elif type(layer) in _ACTIVATIONS:
                steps.append(("act", _ACTIVATIONS[type(layer)]))
            elif type(layer) is torch.nn.GELU and layer.approximate == "none":
                steps.append(("act", torch.nn.functional.gelu))
            else:
                return None
        return steps, False
    if type(model) in (MLP, ReLUMLP):
        relu = type(model) is ReLUMLP or model.activation == "relu"
        steps = []
        for i, layer in enumerate(model.layers):
            steps.append(linear(f"layers.{i}.", layer))
            if relu and i < len(model.layers) - 1:
                steps.append(("act", torch.relu))
        return steps, type(model) is ReLUMLP and model.out_dim == 1
    return None


class _MLPView:
    """Model k of a stacked MLP inside ``vmap``: calling it applies the layers with model k's parameters (what
    ``functional_call`` does, without swapping parameters into a module at every call)."""

    def __init__(self, plan, params):
        self._steps, self._squeeze = plan
        self._params = params

    def __call__(self, x):
        p = self._params
        for step in self._steps:
            if step[0] == "linear":
                x = torch.nn.functional.linear(x, p[step[1] + "weight"], p[step[1] + "bias"] if step[2] else None)
            else:
                x = step[1](x)
        return x.squeeze(-1) if self._squeeze else x

    forward = __call__


def _stack(models_or_params, frozen):
    """Stacked trainable leaves, stacked constants (frozen parameters, buffers), the module template (or None)."""
    frozen = _frozen_set(frozen)
    if isinstance(models_or_params, (list, tuple)):
        models = list(models_or_params)
        if not models or not all(isinstance(m, torch.nn.Module) for m in models):
            raise ValueError("models_or_params must be a non-empty list of nn.Modules or a dict of stacked tensors")
        shapes = [[(n, tuple(p.shape)) for n, p in m.state_dict().items()] for m in models]
        if any(type(m) is not type(models[0]) or s != shapes[0] for m, s in zip(models, shapes)):
            raise ValueError("models_or_params: the K modules must be copies of one architecture (same type, "
                             "parameter names and shapes)")
        trainable = {n for n, _ in _named_leaves(models[0], frozen)}
        params, buffers = stack_module_state(models)
        params = {n: v.detach().clone() for n, v in params.items()}
        buffers = {n: v.detach().clone() for n, v in buffers.items()}
        base = copy.deepcopy(models[0]).to("meta")
        return params, buffers, trainable, base, len(models)
    if isinstance(models_or_params, dict) and models_or_params and all(
            isinstance(v, torch.Tensor) and v.ndim >= 1 for v in models_or_params.values()):
        K = {v.shape[0] for v in models_or_params.values()}
        if len(K) != 1:
            raise ValueError(f"models_or_params: every stacked tensor needs the same leading axis K, got {sorted(K)}")
        trainable = {n for n, _ in _named_leaves(models_or_params, frozen)}
        return dict(models_or_params), {}, trainable, None, K.pop()
    raise ValueError("models_or_params must be a non-empty list of nn.Modules or a dict of stacked tensors (K, ...)")
