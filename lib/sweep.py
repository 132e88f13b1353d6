"""Sweeps over configurations with an on-disk cache and joblib parallelism.

A result is cached under a key hashed from the sweep's name, its configuration and the code version (the
source of the function's module and of ``lib``'s package version), so editing the code invalidates the cache.
Entries are written atomically (temporary file + ``os.replace``); an entry that cannot be read is recomputed,
never trusted. Parallelism goes through joblib, whose backends (``loky`` by default, or a Dask / Ray cluster
via ``joblib.parallel_backend``) decide where the work runs.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import __version__
from .config import cache_dir, check_int


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
    raise ValueError(f"config values must be JSON-like (numbers, strings, lists, dicts, arrays); got {type(obj)}")


def code_version(fn: Callable) -> str:
    """Hash of the source of ``fn``'s module (or of ``fn`` itself) and of ``lib``'s version."""
    try:
        src = inspect.getsource(inspect.getmodule(fn)) if inspect.getmodule(fn) else inspect.getsource(fn)
    except (OSError, TypeError):
        src = getattr(fn, "__qualname__", repr(fn))
    return hashlib.sha256((src + __version__).encode()).hexdigest()[:16]


def config_key(name: str, config: dict, version: str) -> str:
    """Cache key of a configuration: sha256 of the name, the JSON of the configuration and the code version."""
    blob = json.dumps({"name": name, "config": _jsonable(config), "version": version}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _path(name: str, key: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
    return cache_dir() / safe / f"{key}.pkl"


def _load(path: Path):
    try:
        with open(path, "rb") as fh:
            payload = pickle.load(fh)
        if not isinstance(payload, dict) or payload.get("__eld_cache__") != 1:
            raise ValueError("not a cache entry")
        return True, payload["result"]
    except Exception:  # a missing, truncated or foreign file: recompute
        return False, None


def _store(path: Path, result) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump({"__eld_cache__": 1, "result": result}, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cached_call(fn: Callable, config: dict, *, name: str | None = None, cache: bool = True):
    """``fn(**config)``, cached on disk under ``name`` (default: ``fn``'s qualified name)."""
    if not callable(fn):
        raise ValueError("fn must be callable")
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    name = name or f"{fn.__module__}.{fn.__qualname__}"
    if not cache or os.environ.get("ELD_NO_CACHE"):
        return fn(**config)
    path = _path(name, config_key(name, config, code_version(fn)))
    ok, result = _load(path)
    if ok:
        return result
    result = fn(**config)
    _store(path, result)
    return result


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

    Args:
        fn: a picklable (module-level) function of keyword arguments.
        configs: list of keyword-argument dicts.
        name: cache namespace (default: ``fn``'s qualified name).
        n_jobs: joblib workers for the configurations not in the cache (1 runs in this process).
        cache: read and write the on-disk cache.
        progress: show a tqdm bar over the missing configurations.
        backend: joblib backend name (default ``loky``); a Dask or Ray backend registered with joblib works too.
    """
    if not isinstance(configs, (list, tuple)) or not all(isinstance(c, dict) for c in configs):
        raise ValueError("configs must be a list of dicts")
    check_int("n_jobs", n_jobs, minimum=-1)
    if n_jobs == 0:
        raise ValueError("n_jobs must be a positive integer or -1 (all cores)")
    name = name or f"{fn.__module__}.{fn.__qualname__}"
    version = code_version(fn)
    results: list = [None] * len(configs)
    missing = []
    for i, cfg in enumerate(configs):
        if cache and not os.environ.get("ELD_NO_CACHE"):
            ok, res = _load(_path(name, config_key(name, cfg, version)))
            if ok:
                results[i] = res
                continue
        missing.append(i)
    if missing:
        todo = [configs[i] for i in missing]
        if progress:
            from tqdm.auto import tqdm

            todo_iter = tqdm(todo, leave=False)
        else:
            todo_iter = todo
        if n_jobs == 1:
            computed = [fn(**cfg) for cfg in todo_iter]
        else:
            from joblib import Parallel, delayed

            computed = Parallel(n_jobs=n_jobs, backend=backend)(delayed(fn)(**cfg) for cfg in todo_iter)
        for i, res in zip(missing, computed):
            results[i] = res
            if cache and not os.environ.get("ELD_NO_CACHE"):
                _store(_path(name, config_key(name, configs[i], version)), res)
    return results
