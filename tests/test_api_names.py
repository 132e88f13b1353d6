"""The public API's names: renamed arguments keep their old names as deprecated aliases for one release.

One name per quantity across parts (CONTRIBUTING.md): ``lr`` for a learning rate (the papers' ``eta``), ``seed``
for an integer seed, ``steps`` for a number of optimisation steps, ``n_patterns`` for the chain-of-thought
chapter's reasoning patterns (the thesis's ``M``). Each renamed argument is declared with
:func:`lib.config.renamed_arguments`; these tests find them all, so a new alias is tested without a new test.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings

import numpy as np
import pytest
import torch
from test_fuzz import CASES  # noqa: E402 - tests/ is on the path (no package)

import lib
from lib import config
from lib.parts.concept_learning import deep_models, jacobian_lemmas
from lib.parts.edge_of_stability import beyond_low_dimension, matrix_factorisation
from lib.parts.generalisation import graph_transformers, settings, shallow_vits
from lib.parts.induction_heads import construction


def _renamed_functions() -> list:
    """``(function, old, new)`` for every alias declared with ``renamed_arguments`` in a public module of lib."""
    out = []
    for info in pkgutil.walk_packages(lib.__path__, "lib."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name, value in sorted(vars(module).items()):
            aliases = getattr(value, "__renamed_arguments__", None)
            if aliases and not name.startswith("_") and value.__module__ == info.name:
                out += [pytest.param(value, old, new, id=f"{name}-{old}") for old, new in aliases.items()]
    return out


RENAMED = _renamed_functions()
BASE_CALLS = {fn: (args, kwargs) for fn, args, kwargs, _ in (c.values for c in CASES)}
_EYE = np.stack([np.eye(2)] * 2)
#: a valid call of each renamed function the fuzz tests have no case for yet
BASE_CALLS[matrix_factorisation.mf_step] = ((_EYE, _EYE, 2 * _EYE, 0.1), {})
BASE_CALLS[beyond_low_dimension.teacher_student_experiment] = ((), dict(m=8, lr=0.5, steps=2, decay_to=0.4,
                                                                          decay_steps=1, sharp_every=2))
BASE_CALLS[beyond_low_dimension.mlp_eos_experiment] = ((), dict(depth=2, lr=0.1, steps=2, stats_every=2))
_ABS = construction.SIMILARITIES["abs"]
BASE_CALLS[construction.gih2_width_sweep] = (
    (construction.pod(lambda u, v: _ABS(u, v, 3.0), n_nodes=40), lambda u, v: _ABS(u, v, 3.0), [8], [4], [1]),
    {"B": 4, "seed": 3})


def test_the_renamed_arguments_are_found():
    names = {p.values[0].__name__ for p in RENAMED}
    assert {"cot_inference", "icl_inference", "run_symmetric", "mf_gd", "gd_map", "gih2_width_sweep"} <= names


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if callable(a) and not isinstance(a, (np.ndarray, torch.Tensor)):
        return callable(b)
    if hasattr(a, "__dataclass_fields__"):
        return _same(vars(a), vars(b))
    if isinstance(a, (np.ndarray, torch.Tensor, float, int, np.number)):
        return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True)
    return a == b


@pytest.mark.parametrize("fn,old,new", RENAMED)
def test_deprecated_alias(fn, old, new):
    """The old keyword gives the new one's result with a DeprecationWarning naming the new name; both raise a
    ValueError naming the new argument."""
    assert fn in BASE_CALLS, f"{fn.__qualname__}: add a fuzz case (its base call is used here) or a BASE_CALLS entry"
    args, kwargs = BASE_CALLS[fn]
    bound = inspect.signature(fn).bind(*args, **kwargs)
    value = bound.arguments.pop(new) if new in bound.arguments else inspect.signature(fn).parameters[new].default
    assert value is not inspect.Parameter.empty
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = fn(**bound.arguments, **{new: value})
        with pytest.warns(DeprecationWarning, match=rf"\b{old}\b.*deprecated.*\b{new}\b"):
            got = fn(**bound.arguments, **{old: value})
    assert _same(expected, got)
    with pytest.raises(ValueError, match=rf"^{new}\b"):
        fn(**bound.arguments, **{old: value, new: value})


def test_renamed_arguments_refuses_a_bad_declaration():
    with pytest.raises(ValueError, match="old_to_new"):
        config.renamed_arguments(eta="not an identifier")
    with pytest.raises(ValueError, match="old_to_new"):
        config.renamed_arguments(eta="lr")(lambda eta: eta)  # still has the old name
    with pytest.raises(ValueError, match="old_to_new"):
        config.renamed_arguments(eta="lr")(lambda rate: rate)  # no new name to forward to
    positional = config.renamed_arguments(eta="lr")(lambda x, lr: x * lr)
    with pytest.raises(ValueError, match="^lr"):
        positional(2.0, 0.5, eta=0.5)  # the new name given by position, the old by keyword


def test_renamed_key():
    with pytest.warns(DeprecationWarning, match="'eta'.*'lr'"):
        assert config.renamed_key({"eta": 0.1, "m": 2}, "eta", "lr", name="cfg") == {"lr": 0.1, "m": 2}
    same = {"lr": 0.1}
    assert config.renamed_key(same, "eta", "lr") is same
    with pytest.raises(ValueError, match="cfg"):
        config.renamed_key({"eta": 0.1, "lr": 0.1}, "eta", "lr", name="cfg")


def test_settings_dicts_accept_the_old_learning_rate_key():
    """``cfg["eta"]`` (graph transformers, shallow ViTs) and ``setting["eta"]`` (App. D lemmas) still work."""
    cfg = {k: v for k, v in dict(settings.VIT, L=10, m=8, steps=2, n_test=20).items() if k != "lr"}
    with pytest.warns(DeprecationWarning, match="'lr'"):
        old = shallow_vits.train_vit([20], [0], {**cfg, "eta": settings.VIT["lr"]}, 0.4, 0.1, record_every=2)
    new = shallow_vits.train_vit([20], [0], {**cfg, "lr": settings.VIT["lr"]}, 0.4, 0.1, record_every=2)
    assert np.array_equal(old["test_hinge"], new["test_hinge"])
    with pytest.raises(ValueError, match="cfg"):
        shallow_vits.train_vit([20], [0], {**cfg, "eta": 0.1, "lr": 0.1}, 0.4, 0.1)
    tiny = {k: v for k, v in dict(settings.GT, n=40, degree=6, K=4, m=4, n_test=10, steps=2, batch=4).items()
            if k != "lr"}
    with pytest.raises(ValueError, match="cfg"):
        graph_transformers.train_gt([20], [0], {**tiny, "eta": 0.1, "lr": 0.1}, 0.4, 0.1)
    with pytest.warns(DeprecationWarning, match="'lr'"):
        graph_transformers.train_gt([20], [0], {**tiny, "eta": 0.1}, 0.4, 0.1)
    setting = jacobian_lemmas.lemma_setting((1.0, 4.0), 1, seed=0)
    old_setting = {("eta" if k == "lr" else k): v for k, v in setting.items()}
    with pytest.warns(DeprecationWarning, match="'lr'"):
        old = jacobian_lemmas.check_lemmas(old_setting, 5)
    assert _same(old, jacobian_lemmas.check_lemmas(setting, 5))


def test_symmetric_run_eta_is_a_deprecated_alias_of_lr():
    a = np.array([1.0, 4.0])
    U0 = np.stack([np.eye(2) * 0.1])
    run = deep_models.run_symmetric(a, [1.0, 2.0], U0, 0.01, 3)
    with pytest.warns(DeprecationWarning, match="SymmetricRun.lr"):
        assert run.eta == run.lr == 0.01
