"""Sweeps over configurations with a safe on-disk cache and joblib parallelism.

**Key.** A result is cached under the SHA-256 of

* the sweep's name and its configuration (canonical JSON: sorted keys, arrays as lists with their dtype; a
  ``torch.device`` as its name, so ``device`` keys a run like any other value);
* the source of every ``.py`` file of this package (``lib/**``), so an edit anywhere in the library invalidates
  every entry;
* the cached function's own code: its source, or, where no source can be read (a function typed into a notebook
  cell or ``python -c``), its code object (bytecode, constants, names, nested code objects); its defaults; and,
  for a function defined outside ``lib``, the helper functions and plain constants it names at module level
  (recursively), e.g. a notebook's ``STEPS = 200``, the objects it names (an ``nn.Module`` by its weights, a NumPy
  generator by its state, another object by its attributes) and the modules it names outside ``lib`` and the
  installed packages, by their source;
* torch's default dtype and ``BOOK_MODE``;
* the versions of Python and of the installed packages: torch, numpy, scipy, scikit-learn, networkx,
  transformers, matplotlib, joblib and every package pinned in ``requirements.txt``.

**Format.** One ``.npz`` file per entry, read with ``numpy.load(allow_pickle=False)``: the arrays are members
``a0, a1, ...``; the structure (dicts, lists, tuples, numbers, strings, dataclasses, tensors) is JSON in
``__meta__``, which also records the key; ``__sha256__`` is a checksum of the JSON and of every array. Nothing is
ever unpickled: an entry that does not load, verify or match its key is recomputed and overwritten. Results must
be built from ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``list``, ``tuple``, ``dict``, ``set``,
NumPy arrays and scalars (no ``object`` dtype), torch tensors (restored on the CPU) and dataclasses (restored only
if their class is already imported or lives in ``lib``); anything else raises ``ValueError``.

**Writes.** An entry is written to a temporary file ``.tmp-<host>-<pid>-*`` next to it and moved into place with
``os.replace``, so readers see the old entry or the new one, never half of one, and two processes writing one key
leave one valid entry. Temporary files of processes that died (or older than a day) are removed by the next call.
:func:`sweep` stores each configuration's result as soon as it is computed, so a killed sweep resumes from there.

**Where the work runs.** Through joblib, whose backends (``loky`` by default, or a Dask or Ray cluster via
``backend="dask"`` / ``joblib.parallel_backend``) decide where ``fn`` runs; results are stored by the calling
process. ``ELD_NO_CACHE=1`` (or ``true``/``yes``; ``0``/``false``/``no``/empty keep it) disables the cache,
``ELD_CACHE_DIR`` moves it (default ``<repo>/.cache``), and ``python -m lib.sweep clear`` empties it (``make book``
and ``make test`` do so unless ``KEEP_CACHE=1``).

**Nothing else is touched.** The first entry written marks the cache's root with a file ``.eld-sweep-cache``.
Clearing deletes only files named like an entry (``<32 hex digits>.npz``) or a temporary file
(``.tmp-<host>-<pid>-*.npz``) in the root's sub-folders, and refuses a directory without the marker (other than
the default ``<repo>/.cache``) with an error naming ``ELD_CACHE_DIR``, so a mis-set variable cannot empty someone's
data folder. A sub-folder that is a symbolic link is never written to, read from or cleaned.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import json
import os
import re
import socket
import sys
import tempfile
import time
import types
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ._cache_format import _in_lib, decode_entry, encode_entry, library_versions
from .config import REPO_ROOT, cache_dir, check_int

_PACKAGE = __name__.rpartition(".")[0] or "lib"
_LIB_DIR = Path(__file__).resolve().parent
_TMP = ".tmp-"
_ORPHAN_AGE_S = 24 * 3600
#: the file that marks a folder as a sweep cache (written with its first entry)
MARKER = ".eld-sweep-cache"
_ENTRY_RE = re.compile(r"[0-9a-f]{32}\.(npz|pkl)")  # .pkl: the format before this one
_TMP_RE = re.compile(r"\.tmp-[A-Za-z0-9_]+-[0-9]+-[A-Za-z0-9_]*(\.npz)?")


# ----------------------------------------------------------------------------------------------------- the key
def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return {"__array__": obj.tolist(), "dtype": str(obj.dtype)}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.device):  # a ``device`` argument: keyed as its name
        return str(obj)
    raise ValueError(f"config values must be JSON-like (numbers, strings, lists, dicts, arrays); got {type(obj)}")


def lib_source_hash() -> str:
    """SHA-256 of the relative path and source of every ``.py`` file of the package (``lib/**``)."""
    h = hashlib.sha256()
    for path in sorted(_LIB_DIR.rglob("*.py")):
        h.update(path.relative_to(_LIB_DIR).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _code_digest(code: types.CodeType) -> str:
    """Hash of what a code object computes (bytecode, constants, names), not of where it was typed."""
    h = hashlib.sha256()
    for attr in ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_flags"):
        h.update(repr(getattr(code, attr)).encode())
    h.update(code.co_code)
    for attr in ("co_names", "co_varnames", "co_freevars", "co_cellvars"):
        h.update(repr(getattr(code, attr)).encode() + b"\0")
    for const in code.co_consts:
        h.update(_code_digest(const).encode() if isinstance(const, types.CodeType) else repr(const).encode())
        h.update(b"\0")
    return h.hexdigest()


def _global_names(code: types.CodeType) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _value_digest(value, seen: dict):
    """A JSON-able fingerprint of a default, closure cell or module-level constant a function depends on."""
    if isinstance(value, (types.FunctionType, functools.partial)):
        return _fn_fingerprint(value, seen)
    if isinstance(value, (np.ndarray, np.generic)) and not value.dtype.hasobject:
        arr = np.ascontiguousarray(value)
        return ["array", arr.dtype.str, list(arr.shape), hashlib.sha256(arr.reshape(-1).view(np.uint8)).hexdigest()]
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return repr(value)
    if type(value) in (tuple, list, frozenset, set, dict):
        if id(value) in seen:
            return [type(value).__name__, "seen"]
        if len(value) > 10_000:  # too big to walk: its text
            return [type(value).__name__, hashlib.sha256(repr(value).encode()).hexdigest()]
        seen[id(value)] = value  # kept alive, so that no other object reuses its id meanwhile
        if type(value) is dict:
            return ["dict", [[repr(k), _value_digest(v, seen)] for k, v in value.items()]]
        items = [_value_digest(v, seen) for v in value]
        return [type(value).__name__, sorted(map(repr, items)) if isinstance(value, (set, frozenset)) else items]
    if isinstance(value, types.ModuleType):  # a helper module of the user's: by its source
        return ["module", value.__name__, _module_source_digest(value)]
    if isinstance(value, type):  # a class: its methods, unless lib's (covered by lib_source_hash)
        if _in_lib(value.__module__) or value.__module__ == "builtins" or id(value) in seen:
            return ["class", value.__module__, value.__qualname__]
        seen[id(value)] = value
        methods = [[k, _fn_fingerprint(v, seen)] for k, v in sorted(vars(value).items()) if inspect.isfunction(v)]
        return ["class", value.__module__, value.__qualname__, methods]
    if dataclasses.is_dataclass(value):
        fields = [[f.name, _value_digest(getattr(value, f.name), seen)] for f in dataclasses.fields(value)]
        return ["dataclass", _value_digest(type(value), seen), fields]
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return ["tensor", _value_digest(value.detach().cpu().numpy(), seen)]
    if id(value) in seen:
        return ["object", type(value).__module__, type(value).__qualname__, "seen"]
    if torch is not None and isinstance(value, torch.nn.Module):  # e.g. a notebook's global model: by its weights
        seen[id(value)] = value
        state = [[k, _value_digest(v, seen)] for k, v in value.state_dict().items()]
        return ["nn.Module", _value_digest(type(value), seen), repr(value), state]
    if isinstance(value, np.random.Generator):
        return ["Generator", repr(value.bit_generator.state)]
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict) and len(attrs) <= 200 and not _in_lib(type(value).__module__):
        seen[id(value)] = value  # another global object: by its attributes
        return ["object", _value_digest(type(value), seen), [[k, _value_digest(v, seen)] for k, v in attrs.items()]]
    return ["object", type(value).__module__, type(value).__qualname__]


def _module_source_digest(module: types.ModuleType):
    """SHA-256 of a module's source file, for modules outside ``lib`` and outside installed packages (whose
    versions are in the key); ``None`` for the rest."""
    path = getattr(module, "__file__", None)
    if not path or _in_lib(module.__name__):
        return None
    parts = Path(path).parts
    if "site-packages" in parts or "dist-packages" in parts or Path(path).is_relative_to(sys.base_prefix):
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _fn_fingerprint(fn, seen: dict | None = None):
    """JSON-able fingerprint of ``fn``'s code (see the module docstring); recursion guarded by ``seen``."""
    seen = {} if seen is None else seen
    if isinstance(fn, functools.partial):
        return ["partial", _fn_fingerprint(fn.func, seen), _value_digest(fn.args, seen),
                _value_digest(dict(sorted(fn.keywords.items())), seen)]
    if id(fn) in seen:
        return ["seen", getattr(fn, "__qualname__", "")]
    seen[id(fn)] = fn
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn)
    module = getattr(target, "__module__", None)
    parts = ["fn", module, getattr(target, "__qualname__", repr(type(target)))]
    try:
        parts.append(inspect.getsource(target))
    except (OSError, TypeError):
        code = getattr(target, "__code__", None)
        parts.append(_code_digest(code) if code is not None else None)
    func = getattr(fn, "__func__", fn)  # bound methods
    if inspect.isfunction(func):
        parts.append(_value_digest(func.__defaults__, seen))
        parts.append(_value_digest(dict(sorted((func.__kwdefaults__ or {}).items())), seen))
        cells = []
        for cell in func.__closure__ or ():
            try:
                cells.append(_value_digest(cell.cell_contents, seen))
            except ValueError:  # an empty cell
                cells.append(None)
        parts.append(cells)
        if not _in_lib(func.__module__):  # lib's own dependencies are covered by lib_source_hash
            glb = func.__globals__
            deps = []
            for name in sorted(_global_names(func.__code__)):
                if name in glb:
                    value = glb[name]
                    if inspect.isfunction(value) and _in_lib(value.__module__):
                        continue
                    deps.append([name, _value_digest(value, seen)])
            parts.append(deps)
    return parts


def _global_state() -> dict:
    """The process-wide settings a result may depend on: torch's default dtype and the book's mode (as
    ``BOOK_MODE`` reads, so a function that calls :func:`lib.config.pick` inside is keyed on it)."""
    torch = sys.modules.get("torch")
    return {"dtype": str(torch.get_default_dtype()) if torch is not None else None,
            "mode": os.environ.get("BOOK_MODE", "full").strip().lower() or "full"}


def code_version(fn: Callable) -> str:
    """Hash of everything but the configuration that ``fn``'s result depends on: the source of every file of
    ``lib``, ``fn``'s own code (source or code object, defaults, module-level helpers, constants, objects (an
    ``nn.Module`` by its weights) and modules (by their source) outside ``lib``), torch's default dtype,
    ``BOOK_MODE``, and the versions of Python and of the installed packages (``lib._cache_format.library_versions``)."""
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    blob = json.dumps({"lib": lib_source_hash(), "fn": _fn_fingerprint(fn), "versions": library_versions(),
                       "state": _global_state()}, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def config_key(name: str, config: dict, version: str) -> str:
    """Cache key of a configuration: sha256 of the name, the canonical JSON of the configuration and the code
    version (:func:`code_version`)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if not isinstance(version, str) or not version:
        raise ValueError(f"version must be a non-empty string, got {version!r}")
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    blob = json.dumps({"name": name, "config": _jsonable(config), "version": version}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _default_name(fn) -> str:
    base = fn.func if isinstance(fn, functools.partial) else fn
    qual = getattr(base, "__qualname__", type(base).__qualname__)
    return f"{getattr(base, '__module__', 'unknown')}.{qual}"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def _path(name: str, key: str) -> Path:
    if len(_safe(name).encode()) > 200:  # a folder name the file system would refuse
        raise ValueError(f"name must be at most 200 characters, got {len(name)}")
    folder = cache_dir() / _safe(name)
    if folder.is_symlink():
        raise ValueError(f"the cache folder of name={name!r} ({folder}) is a symbolic link: refusing to write "
                         "through it (remove the link or use another name)")
    return folder / f"{key}.npz"


def _mark(root: Path) -> None:
    """Write the marker that makes ``root`` a sweep cache that :func:`clear_cache` may empty."""
    marker = root / MARKER
    if not marker.exists():
        marker.write_text("sweep cache of lib.sweep: `python -m lib.sweep clear` deletes its entries\n")


def _host() -> str:
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname()) or "host"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def clean_orphans(directory: Path, *, max_age_s: float = _ORPHAN_AGE_S) -> int:
    """Remove the temporary files in ``directory`` left by writers that died (same host, process gone) or that
    are older than ``max_age_s`` seconds. Returns how many were removed."""
    removed = 0
    if Path(directory).is_symlink():
        return 0
    for path in Path(directory).glob(_TMP + "*"):
        if not _TMP_RE.fullmatch(path.name) or path.is_symlink() or not path.is_file():
            continue
        parts = path.name.split("-", 3)  # ['.tmp', host, pid, random]
        try:
            dead = len(parts) == 4 and parts[1] == _host() and not _pid_alive(int(parts[2]))
            if dead or time.time() - path.stat().st_mtime > max_age_s:
                path.unlink()
                removed += 1
        except (OSError, ValueError):
            continue
    return removed


def _load(path: Path, key: str):
    if path.is_symlink():  # never read through a link: recomputed, and the link replaced by a real entry
        return False, None
    try:
        return True, decode_entry(path, key=key)
    except Exception:  # missing, truncated, garbage, pickled, tampered or foreign: recompute
        return False, None


def _store(path: Path, key: str, name: str, result) -> None:
    data = encode_entry(result, key=key, name=name)  # before touching the disk: unsupported types raise here
    _mark(path.parent.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{_TMP}{_host()}-{os.getpid()}-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as err:  # e.g. a directory where the entry goes: keep the computed result, store nothing
        warnings.warn(f"sweep cache: could not store {path} ({err}); the result is returned but not cached",
                      stacklevel=3)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def clear_cache(directory: Path | str | None = None) -> int:
    """Delete every cache entry (and temporary file) under ``directory`` (default :func:`lib.config.cache_dir`);
    only files this module writes are touched: names ``<32 hex>.npz`` and ``.tmp-<host>-<pid>-*`` in the root's
    sub-folders (not links), then the sub-folders left empty. A directory that does not hold the marker file
    :data:`MARKER` (written with the first entry) is refused with a ``ValueError`` naming ``ELD_CACHE_DIR``, unless
    it is the default ``<repo>/.cache``. Returns how many files were removed."""
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise ValueError(f"directory must be a path or None, got {directory!r}")
    root = Path(directory) if directory is not None else cache_dir()
    removed = 0
    if not root.is_dir():
        return 0
    default = root.resolve() == (REPO_ROOT / ".cache").resolve()
    if not (root / MARKER).is_file() and not default and any(root.iterdir()):
        raise ValueError(f"refusing to clear {str(root)!r}: it has no {MARKER} marker, so it is not a sweep cache "
                         "(check ELD_CACHE_DIR)")
    for sub in root.iterdir():
        if not sub.is_dir() or sub.is_symlink():
            continue
        for path in sub.iterdir():
            if (_ENTRY_RE.fullmatch(path.name) or _TMP_RE.fullmatch(path.name)) and not path.is_symlink() \
                    and path.is_file():
                path.unlink(missing_ok=True)
                removed += 1
        try:
            sub.rmdir()
        except OSError:  # not empty: something that is not ours
            pass
    return removed


# ---------------------------------------------------------------------------------------------------- the API
def _use_cache(cache) -> bool:
    if not isinstance(cache, bool):
        raise ValueError(f"cache must be True or False, got {cache!r}")
    return cache and not cache_disabled()


def cache_disabled() -> bool:
    """Whether ``ELD_NO_CACHE`` switches the cache off: ``1``/``true``/``yes``/``on`` do, ``0``/``false``/``no``/
    ``off`` and an empty or unset variable do not; anything else raises a ``ValueError`` naming it."""
    value = os.environ.get("ELD_NO_CACHE", "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"ELD_NO_CACHE must be 1/true/yes/on or 0/false/no/off (or unset), got {value!r}")


def _check_name(name) -> None:
    if name is not None and (not isinstance(name, str) or not name):
        raise ValueError(f"name must be a non-empty string or None, got {name!r}")


def cached_call(fn: Callable, config: dict, *, name: str | None = None, cache: bool = True):
    """``fn(**config)``, cached on disk under ``name`` (default: ``fn``'s qualified name); see the module
    docstring for the key and the format."""
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    _check_name(name)
    if not _use_cache(cache):
        return fn(**config)
    name = name or _default_name(fn)
    key = config_key(name, config, code_version(fn))
    path = _path(name, key)
    clean_orphans(path.parent)
    ok, result = _load(path, key)
    if ok:
        return result
    result = fn(**config)
    _store(path, key, name, result)
    return result


def _indexed(fn, i: int, config: dict):
    return i, fn(**config)


def sweep(
    fn: Callable,
    configs: list[dict],
    *,
    name: str | None = None,
    n_jobs: int = 1,
    cache: bool = True,
    progress: bool = False,
    backend: str | None = None,
) -> list:
    """Run ``fn(**config)`` for each configuration, in order, reusing cached results.

    Each result is stored as soon as it is computed, so an interrupted sweep resumes where it stopped.

    Args:
        fn: a picklable (module-level) function of keyword arguments when ``n_jobs != 1``.
        configs: list of keyword-argument dicts.
        name: cache namespace (default: ``fn``'s qualified name).
        n_jobs: joblib workers for the configurations not in the cache (1 runs in this process, -1 all).
        cache: read and write the on-disk cache.
        progress: show a tqdm bar over the missing configurations.
        backend: joblib backend name (default ``loky``); ``"dask"`` runs on the current ``dask.distributed``
            client (see the page "Running at paper scale"), and any backend registered with joblib works.
    """
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(configs, (list, tuple)) or not all(isinstance(c, dict) for c in configs):
        raise ValueError("configs must be a list of dicts")
    check_int("n_jobs", n_jobs, minimum=-1)
    if n_jobs == 0:
        raise ValueError("n_jobs must be a positive integer or -1 (all cores)")
    if backend is not None and not isinstance(backend, str):
        raise ValueError(f"backend must be a joblib backend name or None, got {backend!r}")
    _check_name(name)
    use_cache = _use_cache(cache)
    name = name or _default_name(fn)
    results: list = [None] * len(configs)
    missing = list(range(len(configs)))
    if use_cache:
        version = code_version(fn)
        paths = {i: _path(name, config_key(name, cfg, version)) for i, cfg in enumerate(configs)}
        clean_orphans(cache_dir() / _safe(name))
        missing = []
        for i in range(len(configs)):
            ok, res = _load(paths[i], paths[i].stem)
            if ok:
                results[i] = res
            else:
                missing.append(i)
    if not missing:
        return results
    with contextlib.ExitStack() as stack:
        if n_jobs == 1:
            done = ((i, fn(**configs[i])) for i in missing)
        else:
            from joblib import Parallel, delayed, parallel_config

            if backend is not None:  # parallel_config also registers joblib's external backends (dask, ray)
                stack.enter_context(parallel_config(backend=backend))
            tasks = [delayed(_indexed)(fn, i, configs[i]) for i in missing]
            try:
                done = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks)
            except ValueError as err:  # a backend that cannot stream results: all at the end
                if "return_as" not in str(err):
                    raise
                done = Parallel(n_jobs=n_jobs)(tasks)
        if progress:
            from tqdm.auto import tqdm

            done = tqdm(done, total=len(missing), leave=False)
        for i, res in done:
            results[i] = res
            if use_cache:
                _store(paths[i], paths[i].stem, name, res)
    return results


def _main(argv: list[str]) -> int:
    if argv != ["clear"]:
        print("usage: python -m lib.sweep clear   (empty the sweep cache: ELD_CACHE_DIR or <repo>/.cache)")
        return 2
    try:
        n = clear_cache()
    except ValueError as err:
        print(f"python -m lib.sweep clear: {err}", file=sys.stderr)
        return 1
    print(f"sweep cache {cache_dir()}: {n} files removed")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
