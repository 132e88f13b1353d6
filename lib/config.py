"""Run mode, seeding, precision and argument checks shared by every chapter.

The book runs in one of two modes, read from the environment variable ``BOOK_MODE``:

* ``quick``: used by the tests and CI; every experiment is shrunk so that its claim still shows and each chapter
  executes in under a minute on two CPU cores;
* ``full`` (the default): the largest setting that fits a few minutes per chapter on two CPU cores.

A chapter picks its sizes in one place with :func:`pick`, e.g. ``steps = pick(quick=500, full=5000)``.
"""

from __future__ import annotations

import functools
import inspect
import os
import random
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np

MODES = ("quick", "full")
REPO_ROOT = Path(__file__).resolve().parent.parent


def mode() -> str:
    """Return the current mode, ``"quick"`` or ``"full"`` (environment variable ``BOOK_MODE``)."""
    value = os.environ.get("BOOK_MODE", "full").strip().lower() or "full"
    if value not in MODES:
        raise ValueError(f"BOOK_MODE must be one of {MODES}, got {value!r}")
    return value


def is_quick() -> bool:
    """True in quick mode."""
    return mode() == "quick"


def pick(quick, full):
    """Return ``quick`` in quick mode and ``full`` in full mode."""
    return quick if is_quick() else full


def seed_everything(seed: int = 0) -> np.random.Generator:
    """Seed Python's, NumPy's and torch's global generators; return a fresh NumPy ``Generator``.

    Also asks torch for deterministic algorithms where it has them, so two runs give identical numbers.
    """
    check_seed("seed", seed)
    random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)
    try:
        import torch

        torch.manual_seed(int(seed))
        torch.use_deterministic_algorithms(True, warn_only=True)
    except ImportError:  # pragma: no cover - torch is a hard dependency of the book
        pass
    return np.random.default_rng(int(seed))


def set_float64(enabled: bool = True) -> None:
    """Make float64 (``enabled=True``) or float32 the default torch dtype."""
    import torch

    check_bool("enabled", enabled)
    torch.set_default_dtype(torch.float64 if enabled else torch.float32)


def set_threads(n: int = 1) -> None:
    """Set torch's intra-op threads. The book's models are tiny: one thread is fastest and is not slowed
    down by a busy machine (measured: 0.3 ms against 20 ms per small op with 2 threads under load)."""
    import torch

    check_int("n", n, minimum=1)
    torch.set_num_threads(int(n))


def cache_dir() -> Path:
    """Directory of the on-disk sweep cache: ``ELD_CACHE_DIR`` or ``<repo>/.cache`` (created if missing).

    A set but empty ``ELD_CACHE_DIR`` and one that names a file (or a directory that cannot be created) raise a
    ``ValueError`` naming the variable."""
    value = os.environ.get("ELD_CACHE_DIR")
    if value is not None and not value.strip():
        raise ValueError("ELD_CACHE_DIR is set but empty: unset it (default <repo>/.cache) or give a directory")
    path = Path(value) if value is not None else REPO_ROOT / ".cache"
    if path.exists() and not path.is_dir():
        raise ValueError(f"ELD_CACHE_DIR must name a directory, but {str(path)!r} is a file")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"the sweep cache directory (ELD_CACHE_DIR) {str(path)!r} cannot be created: {err}") from None
    return path


# --------------------------------------------------------------------------------------------------------------
# Argument checks: every public function of lib rejects bad arguments with a ValueError naming the argument.
# --------------------------------------------------------------------------------------------------------------


def _real(name: str, value) -> float:
    """``float(value)`` for a real number (Python, NumPy or a one-element tensor); strings, booleans, None and
    other objects raise a ``ValueError`` naming the argument (``float("3")`` would quietly accept a string)."""
    if isinstance(value, (str, bytes, bool, np.bool_)) or value is None:
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def check_positive(name: str, value, *, allow_zero: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite number > 0 (or >= 0 with ``allow_zero``)."""
    check_bool("allow_zero", allow_zero)
    v = _real(name, value)
    ok = np.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer in ``[minimum, maximum]``."""
    for bound_name, bound in (("minimum", minimum), ("maximum", maximum)):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (int, np.integer))):
            raise ValueError(f"{bound_name} must be an integer or None, got {bound!r}")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")


def check_range(name: str, value, lo=None, hi=None, *, lo_open: bool = False, hi_open: bool = False) -> None:
    """Raise ``ValueError`` unless ``lo <= value <= hi`` (open ends with ``lo_open`` / ``hi_open``)."""
    for bound_name, bound in (("lo", lo), ("hi", hi)):
        if bound is not None:
            check_finite(bound_name, bound)
    check_bool("lo_open", lo_open)
    check_bool("hi_open", hi_open)
    v = _real(name, value)
    bad = not np.isfinite(v)
    if lo is not None:
        bad |= v <= lo if lo_open else v < lo
    if hi is not None:
        bad |= v >= hi if hi_open else v > hi
    if bad:
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        raise ValueError(f"{name} must lie in {left}{lo}, {hi}{right}, got {value!r}")


def check_in(name: str, value, allowed: Iterable) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``allowed``."""
    allowed = tuple(allowed)
    try:
        found = value in allowed
    except (TypeError, ValueError, RuntimeError):  # an array compared with the options has no single truth value
        found = False
    # True == 1 and 1.0 == 1 in Python: a flag or a float is not an integer option (nor an int a flag option)
    if found and not isinstance(value, str):
        found = any(value == a and isinstance(value, (bool, np.bool_)) == isinstance(a, (bool, np.bool_))
                    and isinstance(value, (float, np.floating)) == isinstance(a, (float, np.floating))
                    for a in allowed if not isinstance(a, str))
    if not found:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def check_shape(name: str, array, shape: tuple) -> None:
    """Raise ``ValueError`` unless ``array.shape`` matches ``shape`` (``None`` entries match any size)."""
    actual = tuple(getattr(array, "shape", ()))
    if len(actual) != len(shape) or any(s is not None and s != a for s, a in zip(shape, actual)):
        raise ValueError(f"{name} must have shape {shape} (None = any), got {actual}")


def check_finite(name: str, value) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite real number."""
    if not np.isfinite(_real(name, value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def check_bool(name: str, value) -> None:
    """Raise ``ValueError`` unless ``value`` is a boolean (``True``/``False``; a string such as ``"no"`` is not)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def check_seed(name: str, value) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer seed in ``[0, 2**32)``."""
    check_int(name, value, minimum=0, maximum=2**32 - 1)


def check_device(name: str, value):
    """The ``torch.device`` named by ``value``: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or a ``torch.device``
    of those types. Raises ``ValueError`` naming the argument otherwise, and when the device is not available here
    (CUDA requested on a machine without it, or ``cuda:N`` beyond the GPUs present; MPS off Apple silicon).

    Every function of the book that trains a torch model takes ``device`` (default ``"cpu"``) and checks it here;
    randomness is drawn from seeded CPU generators and moved to the device, and results come back on the CPU."""
    import torch

    if isinstance(value, bool) or not isinstance(value, (str, torch.device)):
        raise ValueError(f"{name} must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {value!r}")
    try:
        dev = torch.device(value)
    except (RuntimeError, ValueError):
        raise ValueError(f"{name} must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {value!r}") from None
    if dev.type not in ("cpu", "cuda", "mps") or (dev.type == "cpu" and dev.index not in (None, 0)):
        raise ValueError(f"{name} must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {value!r}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{name} is {value!r} but CUDA is not available on this machine (torch "
                             f"{torch.__version__}, built with CUDA {torch.version.cuda}); use device='cpu'")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"{name} is {value!r} but this machine has {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ValueError(f"{name} is {value!r} but MPS is not available on this machine; use device='cpu'")
    return torch.device("cpu") if dev.type == "cpu" else dev


def best_device() -> str:
    """``"cuda"`` when a CUDA GPU is available, else ``"cpu"`` (the device a paper-scale run picks by default)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_instance(name: str, value, cls) -> None:
    """Raise ``ValueError`` unless ``value`` is an instance of ``cls`` (a class or a tuple of classes), e.g. a
    ``torch.Generator``, a ``numpy.random.Generator`` or a configuration object."""
    if not isinstance(value, cls):
        names = " or ".join(c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,)))
        raise ValueError(f"{name} must be a {names}, got {type(value).__name__}")


def check_callable(name: str, value) -> None:
    """Raise ``ValueError`` unless ``value`` is callable."""
    if not callable(value):
        raise ValueError(f"{name} must be callable, got {value!r}")


def check_array(name: str, value, *, ndim=None, finite: bool | str = True, nonempty: bool = True,
                positive: bool = False) -> np.ndarray:
    """A float NumPy copy of ``value`` (array, tensor or nested list), checked: ``ndim`` (an int or a tuple of
    allowed ranks), no NaN/inf entries (``finite=True``; ``"some"``: NaN marks missing values, but at least one
    entry is finite; ``False``: no test), at least one entry (``nonempty``). Raises ``ValueError`` naming the
    argument. ``positive``: every entry > 0."""
    if finite != "some":
        check_bool("finite", finite)
    check_bool("nonempty", nonempty)
    check_bool("positive", positive)
    if isinstance(value, (str, bytes, bool)) or value is None:
        raise ValueError(f"{name} must be an array of numbers, got {value!r}")
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {type(value).__name__}") from None
    if ndim is not None:
        if isinstance(ndim, (str, bytes, float)) or not isinstance(ndim, (int, np.integer, tuple, list)):
            raise ValueError(f"ndim must be an int >= 0, a tuple of them or None, got {ndim!r}")
        for k in (ndim,) if isinstance(ndim, (int, np.integer)) else ndim:
            check_int("ndim", k, minimum=0)
        allowed = (ndim,) if isinstance(ndim, (int, np.integer)) else tuple(ndim)
        if arr.ndim not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimensions, got shape {arr.shape}")
    if nonempty and arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if finite == "some":
        if arr.size and not np.isfinite(arr).any():
            raise ValueError(f"{name} has no finite entry")
    elif finite and not np.isfinite(arr).all():
        raise ValueError(f"{name} must hold finite numbers only (found NaN or inf)")
    if positive and not (arr > 0).all():
        raise ValueError(f"{name} must hold numbers > 0 only")
    return arr


def check_int_array(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> np.ndarray:
    """A 1-D int64 NumPy array from ``value`` (a list, array or tensor of integers), checked: non-empty, every
    entry a whole number in ``[minimum, maximum]``. Raises ``ValueError`` naming the argument."""
    for bound_name, bound in (("minimum", minimum), ("maximum", maximum)):
        if bound is not None:
            check_int(bound_name, bound)
    arr = check_array(name, value, ndim=1)
    if not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must hold integers, got {arr.tolist()}")
    if minimum is not None and arr.min() < minimum:
        raise ValueError(f"{name} must hold integers >= {minimum}, got {arr.tolist()}")
    if maximum is not None and arr.max() > maximum:
        raise ValueError(f"{name} must hold integers <= {maximum}, got {arr.tolist()}")
    return arr.astype(np.int64)



def renamed_arguments(**old_to_new: str):
    """Decorator keeping renamed keyword arguments working, for one release, under their old names.

    ``@renamed_arguments(eta="lr")`` lets ``f(eta=0.1)`` call ``f(lr=0.1)`` with a ``DeprecationWarning`` that
    names the new argument; passing both the old and the new name raises a ``ValueError`` naming the new one.
    Positional calls are unaffected. The wrapped function's signature (``inspect.signature``) and source (the
    sweep cache's fingerprint) are the original's; ``__renamed_arguments__`` holds the mapping.
    """
    for old, new in old_to_new.items():
        if not isinstance(new, str) or not new.isidentifier() or new == old:
            raise ValueError(f"old_to_new: the new name of {old!r} must be another identifier, got {new!r}")

    def decorate(fn):
        check_callable("fn", fn)
        params = inspect.signature(fn).parameters
        positions = {}
        for old, new in old_to_new.items():
            if new not in params:
                raise ValueError(f"old_to_new: {fn.__qualname__} has no argument {new!r} (alias {old!r})")
            if old in params:
                raise ValueError(f"old_to_new: {fn.__qualname__} still has an argument {old!r}")
            kinds = list(params)
            if params[new].kind in (params[new].POSITIONAL_ONLY, params[new].POSITIONAL_OR_KEYWORD):
                positions[new] = kinds.index(new)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs or positions.get(new, len(args)) < len(args):
                    raise ValueError(f"{new}: pass {new!r} or its deprecated alias {old!r} to "
                                     f"{fn.__name__}, not both")
                warnings.warn(f"{fn.__name__}: the argument {old!r} is deprecated and will be removed in the "
                              f"next release; use {new!r}", DeprecationWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        wrapper.__renamed_arguments__ = dict(old_to_new)
        return wrapper

    return decorate


def renamed_key(mapping: dict, old: str, new: str, *, name: str = "mapping") -> dict:
    """A copy of the settings dict ``mapping`` (an argument called ``name``) with its deprecated key ``old``
    renamed to ``new``, with a ``DeprecationWarning``; ``mapping`` itself when it has no key ``old``. Both keys
    present raise a ``ValueError`` naming ``name`` and ``new``.

    Example: ``cfg = renamed_key(cfg, "eta", "lr", name="cfg")`` keeps old settings dicts with ``"eta"`` working
    for one release."""
    if not isinstance(mapping, dict):
        raise ValueError(f"mapping ({name}) must be a dict, got {type(mapping).__name__}")
    for arg, value in (("old", old), ("new", new), ("name", name)):
        if not isinstance(value, str):
            raise ValueError(f"{arg} must be a string, got {value!r}")
    if old not in mapping:
        return mapping
    if new in mapping:
        raise ValueError(f"{name}: give {new!r} or its deprecated alias {old!r}, not both")
    warnings.warn(f"{name}: the key {old!r} is deprecated and will be removed in the next release; use {new!r}",
                  DeprecationWarning, stacklevel=3)
    out = dict(mapping)
    out[new] = out.pop(old)
    return out
