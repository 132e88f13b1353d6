"""The sweep cache's entry format (private to :mod:`lib.sweep`): a result as one ``.npz`` archive that cannot
execute code when read.

The structure of the result and its key are JSON inside the archive, every array is stored as an ``.npy`` member
read with ``allow_pickle=False``, and a SHA-256 covers the JSON and every array. Supported: dicts, lists, tuples,
sets, numbers (NaN, infinities and -0.0 included), complex numbers, strings, None, NumPy arrays and scalars, torch
tensors and dataclasses; anything else raises ``ValueError`` before anything is written.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import io
import json
import re
import sys
import zipfile
from pathlib import Path

import numpy as np

FORMAT = 1
_PACKAGE = __name__.rpartition(".")[0] or "lib"
_MAX_DEPTH = 100


_CORE = ("torch", "numpy", "scipy", "scikit-learn", "networkx", "transformers", "matplotlib", "joblib")


@functools.lru_cache(maxsize=1)
def _pinned_names() -> tuple:
    """The distributions pinned in the repository's ``requirements.txt`` (empty if there is none)."""
    path = Path(__file__).resolve().parent.parent / "requirements.txt"
    if not path.is_file():
        return ()
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        name = re.split(r"[\s=<>!~;\[]", line, maxsplit=1)[0] if line else ""
        if name:
            names.append(name.lower())
    return tuple(names)


@functools.lru_cache(maxsize=1)
def _installed_versions() -> tuple:
    from importlib import metadata

    out = {"python": ".".join(map(str, sys.version_info[:3]))}
    for dist in sorted(set(_CORE) | set(_pinned_names())):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return tuple(out.items())


def library_versions() -> dict:
    """Versions of Python and of the installed distributions a result may depend on: torch, numpy, scipy,
    scikit-learn, networkx, transformers, matplotlib, joblib and every package pinned in ``requirements.txt``
    (``None`` if absent). Read once per process."""
    return dict(_installed_versions())


def _in_lib(module_name: str | None) -> bool:
    return bool(module_name) and (module_name == _PACKAGE or module_name.startswith(_PACKAGE + "."))


# ------------------------------------------------------------------------------------------ encoding results
class _Encoder:
    """Result -> (JSON tree, arrays). Every JSON object in the tree is a tagged node; a JSON list is a list."""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def _array(self, arr: np.ndarray, what: str) -> str:
        if arr.dtype.hasobject:
            raise ValueError(f"cannot cache {what} of dtype object (it would need pickle)")
        ref = f"a{len(self.arrays)}"
        self.arrays[ref] = arr
        return ref

    def encode(self, obj, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise ValueError(f"cannot cache a result nested deeper than {_MAX_DEPTH} levels (or cyclic)")
        t, d = type(obj), depth + 1
        if obj is None or t in (bool, int, str):
            return obj
        if t is float:
            return obj if np.isfinite(obj) else {"__eld__": "float", "repr": repr(obj)}
        if t is complex:
            return {"__eld__": "complex", "re": self.encode(obj.real, d), "im": self.encode(obj.imag, d)}
        if t is list:
            return [self.encode(v, d) for v in obj]
        if t in (tuple, set, frozenset):
            return {"__eld__": t.__name__, "items": [self.encode(v, d) for v in obj]}
        if t is dict:
            return {"__eld__": "dict", "items": [[self.encode(k, d), self.encode(v, d)] for k, v in obj.items()]}
        if t is np.ndarray:
            return {"__eld__": "ndarray", "ref": self._array(obj, "an array")}
        if isinstance(obj, np.generic):
            return {"__eld__": "scalar", "ref": self._array(np.asarray(obj), "a scalar")}
        torch = sys.modules.get("torch")
        if torch is not None and t in (torch.Tensor, torch.nn.Parameter):
            return self._tensor(obj, torch)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            fields = [[f.name, self.encode(getattr(obj, f.name), d)] for f in dataclasses.fields(obj)]
            return {"__eld__": "dataclass", "cls": f"{t.__module__}:{t.__qualname__}", "fields": fields}
        raise ValueError(f"cannot cache a value of type {t.__module__}.{t.__qualname__}: results must be built from "
                         "None, bool, int, float, complex, str, list, tuple, dict, set, NumPy arrays and scalars, "
                         "torch tensors and dataclasses (or pass cache=False)")

    def _tensor(self, obj, torch):
        if obj.layout != torch.strided or obj.is_quantized:
            raise ValueError(f"cannot cache a {obj.layout} or quantized tensor; convert it to a dense one")
        t = obj.detach().cpu().contiguous()
        try:
            arr, view = t.numpy(), False
        except TypeError:  # bfloat16 and other dtypes NumPy lacks: keep the bits
            ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
            arr, view = t.view(ints[t.element_size()]).numpy(), True
        return {"__eld__": "tensor", "ref": self._array(arr, "a tensor"), "dtype": str(obj.dtype).split(".")[-1],
                "view": view, "parameter": type(obj) is torch.nn.Parameter, "requires_grad": obj.requires_grad}


def _resolve_dataclass(spec: str):
    """The dataclass named ``module:qualname``, only from an imported module or from ``lib`` (never from a
    module an entry could make us import)."""
    module_name, _, qualname = spec.partition(":")
    module = sys.modules.get(module_name)
    if module is None and _in_lib(module_name):
        module = importlib.import_module(module_name)
    if module is None:
        raise ValueError(f"dataclass module {module_name} is not imported")
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
        raise ValueError(f"{spec} is not a dataclass")
    return obj


def _decode(node, arrays: dict, depth: int = 0):
    if depth > _MAX_DEPTH + 1:
        raise ValueError("entry nested too deeply")
    d = depth + 1
    if node is None or type(node) in (bool, int, float, str):
        return node
    if type(node) is list:
        return [_decode(v, arrays, d) for v in node]
    tag = node["__eld__"]
    if tag == "float":
        value = float(node["repr"])
        if np.isfinite(value):
            raise ValueError("finite floats are stored plainly")
        return value
    if tag == "complex":
        return complex(_decode(node["re"], arrays, d), _decode(node["im"], arrays, d))
    if tag in ("tuple", "set", "frozenset"):
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](_decode(v, arrays, d) for v in node["items"])
    if tag == "dict":
        return {_decode(k, arrays, d): _decode(v, arrays, d) for k, v in node["items"]}
    if tag == "ndarray":
        return arrays[node["ref"]]
    if tag == "scalar":
        return arrays[node["ref"]][()]
    if tag == "tensor":
        import torch

        dtype = getattr(torch, node["dtype"])
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"not a torch dtype: {node['dtype']}")
        t = torch.from_numpy(np.array(arrays[node["ref"]]))
        t = t.view(dtype) if node["view"] else t
        if t.dtype != dtype:
            raise ValueError("tensor dtype mismatch")
        if node["parameter"]:
            return torch.nn.Parameter(t, requires_grad=bool(node["requires_grad"]))
        return t.requires_grad_(True) if node["requires_grad"] else t
    if tag == "dataclass":
        cls = _resolve_dataclass(node["cls"])
        values = {k: _decode(v, arrays, d) for k, v in node["fields"]}
        if set(values) != {f.name for f in dataclasses.fields(cls)}:
            raise ValueError(f"the fields of {node['cls']} changed")
        obj = cls.__new__(cls)
        for k, v in values.items():
            object.__setattr__(obj, k, v)
        post = getattr(cls, "__post_init__", None)
        if post is not None:  # the class's own checks: a forged entry with invalid fields is refused
            post(obj)
        return obj
    raise ValueError(f"unknown node {tag!r}")


def _checksum(meta: bytes, arrays: dict) -> str:
    h = hashlib.sha256(meta)
    for ref in sorted(arrays):
        arr = np.ascontiguousarray(arrays[ref])
        h.update(f"\0{ref}\0{arr.dtype.str}\0{arr.shape}\0".encode())
        h.update(arr.reshape(-1).view(np.uint8))
    return h.hexdigest()


def encode_entry(result, *, key: str, name: str = "") -> bytes:
    """The bytes of a cache entry (an ``.npz`` archive) holding ``result``; see the module docstring."""
    enc = _Encoder()
    tree = enc.encode(result)
    meta = json.dumps({"format": FORMAT, "key": key, "name": name, "tree": tree, "versions": library_versions()},
                      allow_nan=False).encode()
    members = {"__meta__": np.frombuffer(meta, np.uint8),
               "__sha256__": np.frombuffer(_checksum(meta, enc.arrays).encode(), np.uint8), **enc.arrays}
    buf = io.BytesIO()
    np.savez(buf, **members)
    return buf.getvalue()


def _check_stored(source) -> None:
    """Refuse an archive whose members are compressed or claim more bytes than they occupy, before anything is
    inflated: entries are written uncompressed (``np.savez``), so a member that would inflate is not one of ours
    (a small file could otherwise expand to gigabytes before its checksum is read)."""
    if hasattr(source, "seek"):
        start = source.tell()
    try:
        with zipfile.ZipFile(source) as zf:
            for info in zf.infolist():
                if info.compress_type != zipfile.ZIP_STORED or info.file_size > info.compress_size:
                    raise ValueError(f"archive member {info.filename!r} is compressed: not a cache entry")
    except zipfile.BadZipFile:
        raise ValueError("not an .npz archive") from None
    finally:
        if hasattr(source, "seek"):
            source.seek(start)


def decode_entry(source, *, key: str):
    """The result held by a cache entry (a path or a binary file); ``ValueError`` (or an I/O error) if it does
    not load without pickle, fails its checksum or belongs to another key."""
    _check_stored(source)
    npz = np.load(source, allow_pickle=False)
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise ValueError("not an .npz archive")
    with npz:
        arrays = {ref: npz[ref] for ref in npz.files}
    meta, digest = arrays.pop("__meta__").tobytes(), arrays.pop("__sha256__").tobytes().decode()
    if _checksum(meta, arrays) != digest:
        raise ValueError("checksum mismatch")
    info = json.loads(meta)
    if info.get("format") != FORMAT or info.get("key") != key:
        raise ValueError("entry of another format or key")
    return _decode(info["tree"], arrays)


# ------------------------------------------------------------------------------------------------- the files
