"""Named paper-scale runs: one command runs a chapter's experiment at (or near) its paper's size on the best device,
in resumable pieces, and writes a small result file with its provenance; the page "Running at paper scale" reads
those files at build time and applies each chapter's own decision rules to them.

``python -m lib.paper_scale --list`` lists the named runs with an estimate of their cost;
``python -m lib.paper_scale NAME`` runs one (``make paper-scale NAME=...``). A run is split into *pieces* (colour
signals and seeds, sweep points, SBM settings): each finished piece is stored at once (in ``ELD_PAPER_SCALE_DIR``,
default ``<repo>/.paper_scale``, never cleared by the book's builds) under a key of the run's name, the piece's
configuration, the device type and the hash of the code it runs, so an interrupted run continues with the first
unfinished piece. ``--max-pieces N`` stops after N new pieces (to keep each job under a time limit); the last call
finds every piece stored and writes ``NAME.npz`` (only the arrays the chapter's claims need) and ``NAME.json``
(configuration, commit, code hash and the files it covers, device name, torch version, wall time, date) in
``book/paper_scale/results`` (``--out`` elsewhere).

A result is *stale* when its configuration is no longer the registered one or the hash of the code it ran (the
source of the ``lib`` modules its pieces import, followed transitively) has changed: the ledger shows it as stale,
never as current. ``--smoke`` runs a tiny configuration of the same code on the CPU in seconds (for the tests);
its result is marked ``smoke`` and the ledger never counts it as paper-scale.

A named run can also be a *CPU study* (``paper_scale=False``): an experiment at the book's own size that is too
long for every build (the diffusion chapter's retrainings under the authors' training details). Its committed result
is read by its chapter when :func:`current_result` finds it current, and the chapter runs the experiment itself
otherwise; it is listed with the runs but never stands on the paper-scale ledger. ``--jobs N`` runs N pieces side
by side (processes, one torch thread each when N is the number of cores).

``python -m lib.paper_scale --plan`` (:func:`gpu_plan`) orders the runs without a current result for a GPU, the
cheapest first, from each run's planning estimate until pieces measured on the device replace it;
``scripts/gpu_runs.sh`` works through that plan under a time budget.

The runs themselves are defined in the parts (``lib.parts.<part>.paper_runs``, each a list ``*_PAPER_RUNS`` of
:class:`PaperRun`) next to the chapters' decision rules they reuse.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import importlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._cache_format import decode_entry, encode_entry
from .config import REPO_ROOT, best_device, check_bool, check_device, check_int

#: Where committed paper-scale results live (read by the page at build time).
RESULTS_DIR = REPO_ROOT / "book" / "paper_scale" / "results"
#: The modules that define named runs (each a list ``*_PAPER_RUNS``).
RUN_MODULES = (
    "lib.parts.concept_learning.paper_runs",
    "lib.parts.generalisation.paper_runs",
    "lib.parts.graph_networks.paper_runs",
    "lib.parts.memorisation.paper_runs",
)


@dataclass(frozen=True)
class PaperRun:
    """One named paper-scale configuration.

    Attributes:
        name: the run's name (``python -m lib.paper_scale NAME``).
        title: what it reproduces, for the listing and the page.
        chapter: the chapter's document name (``notebooks/<part>/<chapter>``).
        config: the paper-scale configuration (JSON-like).
        smoke: a tiny configuration of the same code, for the tests (seconds on a CPU).
        pieces: ``pieces(config) -> list of piece configurations`` (each runs on its own, in order).
        run_piece: ``run_piece(piece, device) -> dict of NumPy arrays``.
        combine: ``combine(config, results) -> dict of NumPy arrays`` (what ``NAME.npz`` holds).
        claims: ``claims(arrays, config) -> list of dicts`` with ``source``, ``statement``, ``status``,
            ``measured``, ``rule`` and ``cpu`` (a statement prefix of the chapter's CPU claim(s) it stands beside),
            computed with the chapter's own rule functions.
        cost: ``cost(config) -> str``, an estimate (model-steps and what is known of their time).
        entry: the experiment function the pieces call (its module, and the ``lib`` modules that imports, make
            the code a result depends on; see :func:`code_files`).
        note: how the configuration differs from the paper's, if it does.
        paper_scale: False for a CPU study (see the module's docstring): listed, never on the ledger.
        gpu_piece_s: the planning estimate of one piece's seconds on one H100 or H200 GPU, from the CPU timings
            and the run's arithmetic until a GPU run measures it (:func:`gpu_plan` then uses the measured time).
        gpu_jobs: pieces run side by side on a GPU machine (more than one where a piece has much CPU work
            beside its GPU work, e.g. building graphs).
        cpu_piece: ``cpu_piece(piece) -> bool``, True for a piece whose work a GPU does not speed up (a GA-MLP
            whose time is its SciPy features): it runs on the CPU on every machine, and a machine without a GPU
            can run those pieces ahead (``run(..., cpu_pieces_only=True)``, ``--cpu-pieces``).
    """

    name: str
    title: str
    chapter: str
    config: dict
    smoke: dict
    pieces: Callable
    run_piece: Callable
    combine: Callable
    claims: Callable
    cost: Callable
    entry: Callable
    note: str = ""
    paper_scale: bool = True
    gpu_piece_s: float | None = None
    gpu_jobs: int = 1
    cpu_piece: Callable | None = None


def paper_runs() -> dict:
    """Every named run, ``{name: PaperRun}``, from :data:`RUN_MODULES`."""
    out = {}
    for mod_name in RUN_MODULES:
        mod = importlib.import_module(mod_name)
        for attr, value in vars(mod).items():
            if attr.endswith("_PAPER_RUNS"):
                for r in value:
                    if r.name in out:
                        raise RuntimeError(f"two paper-scale runs are named {r.name!r}")
                    out[r.name] = r
    return out


def _get(name) -> PaperRun:
    runs = paper_runs()
    if not isinstance(name, str) or name not in runs:
        raise ValueError(f"name must be one of {sorted(runs)}, got {name!r}")
    return runs[name]


# ------------------------------------------------------------------------------------------ code and configuration
def _module_file(mod_name: str) -> Path | None:
    parts = mod_name.split(".")
    if parts[0] != "lib":
        return None
    base = REPO_ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(path: Path, mod_name: str) -> set:
    """The ``lib`` modules that the file imports (anywhere in it, function bodies included)."""
    package = mod_name if path.name == "__init__.py" else mod_name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}  # ``from lib.parts.x import module``
    return {m for m in out if m == "lib" or m.startswith("lib.")}


def code_files(name: str) -> list[str]:
    """The ``lib`` source files a named run's result depends on: the module of its experiment function
    (``entry``) and every ``lib`` module it imports, transitively (paths relative to the repository). The
    decision rules are not among them: the ledger applies the present rules to a result at build time."""
    run = _get(name)
    todo, seen = [run.entry.__module__], {}
    while todo:
        mod = todo.pop()
        path = _module_file(mod)
        if mod in seen or path is None:
            continue
        seen[mod] = path
        todo.extend(_imports(path, mod) - set(seen))
        if "." in mod:  # a package's __init__ runs first
            todo.append(mod.rpartition(".")[0])
    return sorted({p.relative_to(REPO_ROOT).as_posix() for p in seen.values()})


def code_hash(name: str) -> str:
    """SHA-256 of the path and source of every file of :func:`code_files` and of the run's own ``pieces``,
    ``run_piece`` and ``combine`` functions (what a stale check compares)."""
    import inspect

    r = _get(name)
    h = hashlib.sha256()
    for rel in code_files(name):
        h.update(rel.encode() + b"\0" + (REPO_ROOT / rel).read_bytes() + b"\0")
    for fn in (r.pieces, r.run_piece, r.combine):
        h.update(inspect.getsource(fn).encode() + b"\0")
    return h.hexdigest()


def _canonical(obj):
    """JSON-like form of a configuration (tuples as lists, keys sorted) for storing and comparing."""
    return json.loads(json.dumps(obj, sort_keys=True, default=lambda o: o.tolist() if hasattr(o, "tolist") else o))


def _config(run: PaperRun, smoke: bool) -> dict:
    return run.smoke if smoke else run.config


# ------------------------------------------------------------------------------------------------- the pieces
def work_dir() -> Path:
    """Where finished pieces are kept: ``ELD_PAPER_SCALE_DIR`` or ``<repo>/.paper_scale``."""
    return Path(os.environ.get("ELD_PAPER_SCALE_DIR") or REPO_ROOT / ".paper_scale")


def _piece_key(name: str, piece: dict, device_type: str, chash: str) -> str:
    blob = json.dumps({"name": name, "piece": _canonical(piece), "device": device_type, "code": chash},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _piece_path(name: str, smoke: bool, key: str) -> Path:
    return work_dir() / (name + ("-smoke" if smoke else "")) / f"{key}.npz"


def _load_piece(path: Path, key: str):
    try:
        return decode_entry(path, key=key)
    except Exception:  # missing, damaged or another key's: run it again
        return None


def _store_piece(path: Path, key: str, name: str, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_bytes(encode_entry(value, key=key, name=name))
    os.replace(tmp, path)


def _piece_device(run: PaperRun, piece: dict, device):
    """The device a piece runs on: the CPU for a piece that a GPU does not speed up (``run.cpu_piece``)."""
    import torch

    return torch.device("cpu") if run.cpu_piece is not None and run.cpu_piece(piece) else device


def piece_status(name: str, *, smoke: bool = False, device=None) -> list[bool]:
    """For each piece of a named run, whether it is already stored for this code and device."""
    check_bool("smoke", smoke)
    run = _get(name)
    dev = check_device("device", device or best_device())
    chash = code_hash(name)
    out = []
    for piece in run.pieces(_config(run, smoke)):
        key = _piece_key(name, piece, _piece_device(run, piece, dev).type, chash)
        out.append(_load_piece(_piece_path(name, smoke, key), key) is not None)
    return out


def _device_name(dev) -> str:
    import torch

    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    if dev.type == "mps":
        return "Apple MPS"
    return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def _git_commit() -> str:
    """The commit of the code (with a mark when ``lib`` has uncommitted changes); in a copy of the working tree
    without git (a GPU machine sent the files alone), the commit named by ``ELD_COMMIT``, marked as given."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "lib"], cwd=REPO_ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        given = os.environ.get("ELD_COMMIT", "").strip()
        return f"{given} (given by ELD_COMMIT: no git here)" if given else "unknown"
    return head + ("+uncommitted changes in lib" if dirty else "")


def _timed_piece(name: str, index: int, piece: dict, device: str, threads: int | None):
    """Run one piece (in a worker process when ``threads`` is set): ``(index, stored value)``."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    start = time.perf_counter()
    arrays = _get(name).run_piece(piece, device)
    return index, {"arrays": arrays, "seconds": time.perf_counter() - start,
                   "device": _device_name(torch.device(device))}


def run(name: str, *, smoke: bool = False, device=None, out_dir=None, max_pieces: int | None = None,
        progress: bool = True, n_jobs: int = 1, cpu_pieces_only: bool = False):
    """Run the named configuration (or its smoke variant), resuming from stored pieces.

    Args:
        name: a name of :func:`paper_runs`.
        smoke: run the tiny configuration (on the CPU unless ``device`` says otherwise); the result is marked.
        device: ``"cuda"``, ``"cpu"``, ... (default: CUDA when available, else the CPU).
        out_dir: where ``NAME.npz`` and ``NAME.json`` go (default :data:`RESULTS_DIR`; smoke runs default to
            ``<work_dir>/smoke-results`` so that they never land among the committed results).
        max_pieces: run at most this many new pieces, then return None (call again to continue).
        progress: show a tqdm bar over the pieces.
        n_jobs: pieces run side by side in this many processes (joblib; each piece is stored as it finishes);
            with more than one, each process gets ``cpu_count // n_jobs`` torch threads.
        cpu_pieces_only: run only the pieces that run on the CPU on every machine (``PaperRun.cpu_piece``),
            ahead of a GPU run that does the rest; returns None while other pieces remain.

    Returns the path of ``NAME.json``, or None when stopped by ``max_pieces`` before the last piece.
    """
    check_bool("smoke", smoke)
    check_bool("progress", progress)
    if max_pieces is not None:
        check_int("max_pieces", max_pieces, minimum=1)
    check_int("n_jobs", n_jobs, minimum=1)
    check_bool("cpu_pieces_only", cpu_pieces_only)
    r = _get(name)
    dev = check_device("device", device or ("cpu" if smoke else best_device()))
    config = _config(r, smoke)
    chash = code_hash(name)
    pieces = r.pieces(config)
    devs = [_piece_device(r, p, dev) for p in pieces]
    keys = [_piece_key(name, p, d.type, chash) for p, d in zip(pieces, devs)]
    results = [_load_piece(_piece_path(name, smoke, k), k) for k in keys]
    done_before = sum(x is not None for x in results)
    from tqdm.auto import tqdm

    bar = tqdm(total=len(pieces), initial=done_before, desc=name, disable=not progress, unit="piece")
    todo = [i for i in range(len(pieces)) if results[i] is None]
    if cpu_pieces_only:
        on_cpu = [r.cpu_piece is not None and bool(r.cpu_piece(p)) for p in pieces]
        stopped = not all(on_cpu[i] for i in todo)
        todo = [i for i in todo if on_cpu[i]]
    else:
        stopped = False
    stopped = stopped or (max_pieces is not None and len(todo) > max_pieces)
    todo = todo[:max_pieces] if max_pieces is not None else todo
    if n_jobs == 1 or len(todo) <= 1:
        done = (_timed_piece(name, i, pieces[i], str(devs[i]), None) for i in todo)
    else:
        from joblib import Parallel, delayed

        threads = max(1, (os.cpu_count() or 1) // n_jobs)
        done = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(_timed_piece)(name, i, pieces[i], str(devs[i]), threads) for i in todo)
    for i, value in done:
        _store_piece(_piece_path(name, smoke, keys[i]), keys[i], name, value)
        results[i] = value
        bar.update(1)
    if stopped:
        bar.close()
        return None
    bar.close()
    arrays = r.combine(config, [x["arrays"] for x in results])
    out = Path(out_dir) if out_dir is not None else (work_dir() / "smoke-results" if smoke else RESULTS_DIR)
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / f"{name}.npz", **{k: np.asarray(v) for k, v in arrays.items()})
    import torch

    meta = {
        "name": name, "title": r.title, "chapter": r.chapter, "smoke": smoke, "config": _canonical(config),
        "commit": _git_commit(), "code_hash": chash, "code_files": code_files(name), "device": str(dev),
        "device_name": sorted({x["device"] for x in results}), "torch": torch.__version__,
        "python": platform.python_version(),
        "wall_seconds": round(sum(float(x["seconds"]) for x in results), 1), "pieces": len(pieces),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    path = out / f"{name}.json"
    path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return path


# ------------------------------------------------------------------------------------------------- the ledger
def load_result(name: str, results_dir=None):
    """``(arrays, meta)`` of a named run's result file in ``results_dir`` (default :data:`RESULTS_DIR`), or
    None when there is none."""
    d = Path(results_dir) if results_dir is not None else RESULTS_DIR
    if not (d / f"{name}.json").is_file() or not (d / f"{name}.npz").is_file():
        return None
    meta = json.loads((d / f"{name}.json").read_text())
    with np.load(d / f"{name}.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, meta


def result_state(name: str, meta: dict) -> str:
    """``"current"``, ``"smoke"`` (a smoke run, never paper-scale) or ``"stale: <why>"`` for a result's
    metadata against the registered configuration and the present code."""
    r = _get(name)
    if meta.get("smoke"):
        return "smoke"
    why = []
    if meta.get("config") != _canonical(r.config):
        why.append("its configuration is no longer the registered one")
    if meta.get("code_hash") != code_hash(name):
        why.append("the code it ran has changed since")
    return "stale: " + " and ".join(why) if why else "current"


def current_result(name: str, results_dir=None):
    """A named run's committed result when it is current: ``(arrays, meta, state)``, where ``state`` is
    :func:`result_state`'s (or ``"none"`` without a result file) and ``arrays`` and ``meta`` are None unless the
    state is ``"current"`` (a chapter reads a CPU study this way and runs the experiment itself otherwise)."""
    _get(name)
    loaded = load_result(name, results_dir)
    if loaded is None:
        return None, None, "none"
    state = result_state(name, loaded[1])
    return (loaded[0], loaded[1], state) if state == "current" else (None, None, state)


def ledger(results_dir=None, cpu_claims=None) -> list[dict]:
    """One row per claim of every named run: the paper-scale status from the committed result (computed now
    with the chapter's rule functions) beside the CPU status of the chapter's matching claim(s).

    Args:
        results_dir: where the result files are (default :data:`RESULTS_DIR`).
        cpu_claims: the CPU build's claims (dicts with ``docname``, ``statement``, ``status``; e.g. read from
            the build's claims files), or None.

    Each row: ``run``, ``title``, ``chapter``, ``source``, ``statement``, ``cpu`` (list of statuses),
    ``state`` (``"none"``, ``"current"``, ``"stale: ..."``), ``status`` (``None`` without a current result),
    ``measured``, ``rule``, ``device``, ``date``.
    """
    rows = []
    cpu_claims = cpu_claims or []
    for name, r in paper_runs().items():
        if not r.paper_scale:
            continue
        loaded = load_result(name, results_dir)
        state = "none" if loaded is None else result_state(name, loaded[1])
        if state == "smoke":
            state = "none"  # a smoke result is not a paper-scale result
        meta = loaded[1] if loaded is not None and state != "none" else {}
        claims = r.claims(loaded[0], meta["config"]) if state == "current" else r.claims(None, r.config)
        for c in claims:
            cpu = [x["status"] for x in cpu_claims
                   if x.get("docname") == r.chapter and str(x.get("statement", "")).startswith(c["cpu"])]
            rows.append(dict(run=name, title=r.title, chapter=r.chapter, source=c["source"],
                             statement=c["statement"], cpu=cpu, state=state,
                             status=c["status"] if state == "current" else None,
                             measured=c.get("measured", "") if state == "current" else "", rule=c["rule"],
                             device=", ".join(meta.get("device_name", [])), date=meta.get("date", "")))
    return rows


def listing() -> str:
    """The named runs, one paragraph each: name, what it reproduces, pieces and an estimate of its cost."""
    lines = []
    for name, r in paper_runs().items():
        n = len(r.pieces(r.config))
        kind = "" if r.paper_scale else " (a CPU study: its chapter reads the committed result)"
        gpu = "" if r.gpu_piece_s is None else (
            f"\n    planning estimate on one H100/H200: about {r.gpu_piece_s:,.0f} s a piece, {r.gpu_jobs} at a time "
            f"(not measured: gpu_plan uses the measured time once pieces are stored)")
        lines.append(f"{name}: {r.title} [{r.chapter}]{kind}\n    {n} pieces; cost: {r.cost(r.config)}{gpu}"
                     + (f"\n    differs from the paper: {r.note}" if r.note else ""))
    return "\n".join(lines)


def gpu_plan(device_type: str = "cuda", results_dir=None, smoke: bool = False, names=None) -> list[dict]:
    """The paper-scale runs still to do on a GPU, cheapest first: what ``scripts/gpu_runs.sh`` works through.

    A run with a current result (:func:`result_state`, on any device) is left out, and so is a CPU study. The
    cheapest first, so that a short GPU session completes whole runs rather than a piece of each.

    Args:
        device_type: the device type whose stored pieces count (``"cuda"``, ``"cpu"`` or ``"mps"``).
        results_dir: where the committed results are (default :data:`RESULTS_DIR`).
        smoke: plan the smoke configurations (a dry run: their pieces are counted, and no result is current).
        names: plan these runs only, each even when its result is current (to run it again, e.g. on a GPU
            after a CPU run); default every paper-scale run without a current result.

    Returns:
        a list of dicts sorted by ``seconds_left``: ``name``, ``pieces`` (how many), ``left`` (pieces not yet
        stored for this device type and the present code), ``piece_s`` (seconds a piece: the mean over the
        stored pieces of the kind left (CPU pieces or the others, :attr:`PaperRun.cpu_piece`) when there are
        any, with ``measured`` True, else the run's planning estimate ``gpu_piece_s``), ``jobs`` (pieces at a
        time) and ``seconds_left`` (``piece_s`` times the rounds of ``jobs`` pieces left).
    """
    if device_type not in ("cuda", "cpu", "mps"):
        raise ValueError(f"device_type must be 'cuda', 'cpu' or 'mps', got {device_type!r}")
    check_bool("smoke", smoke)
    runs = paper_runs()
    if names is not None and (isinstance(names, str) or not all(isinstance(n, str) and n in runs for n in names)):
        raise ValueError(f"names must be a list of names of {sorted(runs)}, got {names!r}")
    plan = []
    for name, r in runs.items():
        if names is not None:
            if name not in names:
                continue
        elif not r.paper_scale or (not smoke and current_result(name, results_dir)[2] == "current"):
            continue
        chash = code_hash(name)
        stored = []
        pieces = r.pieces(_config(r, smoke))
        on_cpu = [r.cpu_piece is not None and bool(r.cpu_piece(p)) for p in pieces]
        for piece, cpu in zip(pieces, on_cpu):
            key = _piece_key(name, piece, "cpu" if cpu else device_type, chash)
            stored.append(_load_piece(_piece_path(name, smoke, key), key))
        kinds = {c for c, x in zip(on_cpu, stored) if x is None} or set(on_cpu)  # time the kind of piece left
        seconds = [float(x["seconds"]) for c, x in zip(on_cpu, stored) if x is not None and c in kinds]
        piece_s = float(np.mean(seconds)) if seconds else float(r.gpu_piece_s or 600.0)
        left = sum(x is None for x in stored)
        plan.append(dict(name=name, pieces=len(pieces), left=left, piece_s=piece_s, measured=bool(seconds),
                         jobs=r.gpu_jobs, seconds_left=piece_s * -(-left // r.gpu_jobs)))
    return sorted(plan, key=lambda p: p["seconds_left"])


def _main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lib.paper_scale", description=__doc__.split("\n\n")[0])
    p.add_argument("name", nargs="*", help="the named run (see --list); with --plan, any number")
    p.add_argument("--list", action="store_true", help="list the named runs with an estimate of their cost")
    p.add_argument("--plan", action="store_true", help="the GPU plan: runs without a current result (or NAME, even "
                   "if current), cheapest first (one line each: name, pieces left, seconds a piece, pieces at a time)")
    p.add_argument("--smoke", action="store_true", help="the tiny configuration (CPU, seconds; marked smoke)")
    p.add_argument("--device", default=None, help="cuda, cuda:N, cpu, mps (default: cuda if available)")
    p.add_argument("--out", default=None, help="directory for NAME.npz and NAME.json")
    p.add_argument("--max-pieces", type=int, default=None, help="stop after this many new pieces")
    p.add_argument("--jobs", type=int, default=1, help="pieces run side by side (processes)")
    p.add_argument("--cpu-pieces", action="store_true", help="run only the pieces that run on the CPU on every "
                   "machine (ahead of a GPU run that does the rest)")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if a.list:
        print(listing())
        return 0
    if a.plan:
        for x in gpu_plan((a.device or "cuda").split(":")[0], smoke=a.smoke, names=a.name or None):
            print(x["name"], x["left"], round(x["piece_s"]), x["jobs"])
        return 0
    if len(a.name) != 1:
        p.error("give one NAME, or --list or --plan")
    a.name = a.name[0]
    path = run(a.name, smoke=a.smoke, device=a.device, out_dir=a.out, max_pieces=a.max_pieces,
               progress=not a.no_progress, n_jobs=a.jobs, cpu_pieces_only=a.cpu_pieces)
    if path is None:
        done = piece_status(a.name, smoke=a.smoke, device=a.device or ("cpu" if a.smoke else None))
        more = "run the same command again to continue"
        r = _get(a.name)
        if a.cpu_pieces and all(d or not (r.cpu_piece and r.cpu_piece(p))
                                for d, p in zip(done, r.pieces(_config(r, a.smoke)))):
            more = "the CPU's pieces are done; the rest want a GPU (the same command without --cpu-pieces there)"
        print(f"{a.name}: {sum(done)} of {len(done)} pieces stored; {more}")
        return 3
    print(f"{a.name}: wrote {path} and {path.with_suffix('.npz')}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
