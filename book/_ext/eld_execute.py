"""Execute the book's notebooks side by side before Sphinx reads them.

MyST-NB executes a notebook while Sphinx reads it, one at a time, and each kernel uses one thread: on a 2-core
machine half of it sits idle for the whole build. Here, once Sphinx knows which documents it will read
(``env-before-read-docs``), every notebook among them is executed in its own process, as many at a time as there
are cores (``ELD_BUILD_JOBS`` overrides it), and the executed notebook is handed to MyST-NB through its
jupyter-cache (``execute_notebooks: cache`` in ``_config.yml``). MyST-NB then reads each document as before and takes
its outputs from that cache; what it renders is what it would have rendered after executing the notebook itself.

* **The same execution.** A worker reads the notebook with MyST-NB's own reader (so the cache key matches) and
  executes it with the function MyST-NB uses (``jupyter_cache``'s ``single_nb_execution``, same working directory,
  cell timeout and error handling), with the environment of a serial build (``BOOK_MODE``, ``ELD_CLAIMS_DIR``,
  ``ELD_RESOURCES_DIR``, ``ELD_DOCNAME``). A notebook that fails is not cached: MyST-NB executes it again itself
  and stops the build with its traceback, exactly as without this module.
* **Never stale.** The cache lives in the build directory and is emptied before every pre-execution, so it only
  ever holds outputs of this build's code; it is not a cache across builds (``lib.sweep`` is that).
* **No oversubscription.** A chapter that trains in several processes of its own (``processes`` in
  ``book/execution_estimates.json``) takes that many slots, and every chapter is told its slots
  (``ELD_PROCESSES``, read by :func:`lib.chapter.processes`): one that would start two processes when run alone
  starts one where the estimates give it one slot. Those chapters start first, then the rest, each group
  longest first (the estimates' CPU seconds): a chapter waiting for two free slots in the middle of the build would
  leave a core idle until the chapter before it ends (measured: 141 s of one idle core in a full build). The order
  changes only the wall time, never a result.
* **Timings.** The worker measures the CPU time of its kernel (``RUSAGE_CHILDREN`` after the kernel has exited),
  as the serial build measured it in Sphinx's process; the wall time is the execution's own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ESTIMATES = Path(__file__).resolve().parent.parent / "execution_estimates.json"
#: Estimated CPU seconds of a chapter missing from the estimates (only its place in the order depends on it).
UNKNOWN_ESTIMATE_S = 30.0


def build_jobs() -> int:
    """Notebooks executed at once: ``ELD_BUILD_JOBS`` or the number of cores this process may use."""
    value = os.environ.get("ELD_BUILD_JOBS", "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"ELD_BUILD_JOBS must be a positive integer, got {value!r}")
        return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def load_estimates(mode: str) -> dict[str, tuple[float, int]]:
    """``{docname: (estimated CPU seconds, processes)}`` in ``mode`` from ``book/execution_estimates.json``."""
    if not ESTIMATES.exists():
        return {}
    data = json.loads(ESTIMATES.read_text())
    out = {}
    for docname, entry in data.get("chapters", {}).items():
        cpu = float(entry.get(mode, UNKNOWN_ESTIMATE_S))
        processes = int(entry.get("processes", {}).get(mode, 1))
        out[docname] = (cpu, max(1, processes))
    return out


def schedule(jobs: dict[str, tuple[float, int]]) -> list[str]:
    """The order in which to start ``jobs`` (``{name: (cost, processes)}``): the chapters of several processes
    first, then the others, each group longest first, names breaking ties."""
    return sorted(jobs, key=lambda name: (jobs[name][1] <= 1, -jobs[name][0], name))


def _worker(argv: list[str]) -> int:
    """Executes one notebook (run as ``python eld_execute.py --worker IN OUT STATS CWD TIMEOUT ALLOW_ERRORS``)."""
    import resource

    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    src, out, stats, cwd, timeout, allow_errors = argv
    nb = nbformat.read(src, as_version=4)
    result = single_nb_execution(nb, cwd=cwd, timeout=int(timeout) if timeout != "None" else None,
                                 allow_errors=allow_errors == "1", meta_override=True)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    record = {"runtime_s": result.time, "cpu_s": usage.ru_utime + usage.ru_stime,
              "error": None if result.err is None else f"{result.err.__class__.__name__}",
              "traceback": result.exc_string}
    if result.err is None:
        nbformat.write(nb, out)
    Path(stats).write_text(json.dumps(record))
    return 0


def pre_execute(app, docnames) -> dict[str, dict]:
    """Execute the notebooks among ``docnames`` and put them in MyST-NB's cache; returns ``{docname: record}``
    with ``runtime_s``, ``cpu_s`` and ``error`` (None when it ran through) of each notebook executed."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.read import create_nb_reader
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    env = app.env
    nb_config = env.mystnb_config
    if nb_config.execution_mode != "cache":
        return {}
    cache_path = Path(nb_config.execution_cache_path).resolve()
    build_root = Path(app.outdir).resolve().parent
    if build_root not in cache_path.parents:
        # a cache of the user's own choosing, outside the build: neither emptied nor written here
        logger.warning(f"jupyter-cache at {cache_path} is outside the build directory: notebooks run one at a time")
        return {}
    shutil.rmtree(cache_path, ignore_errors=True)
    work = build_root / ".eld_execute"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    pending = {}
    for docname in sorted(docnames):
        path = Path(env.doc2path(docname))
        if path.suffix not in (".md", ".ipynb"):
            continue
        text = path.read_text(encoding="utf8")
        reader = create_nb_reader(str(path), env.myst_config, nb_config, text)
        if reader is None:
            continue
        nb = reader.read(text)
        stem = docname.replace("/", "__")
        nbformat.write(nb, work / f"{stem}.in.ipynb")
        pending[docname] = (path, stem)
    if not pending:
        return {}

    mode = os.environ.get("BOOK_MODE", "full")
    known = load_estimates(mode)
    slots = build_jobs()
    jobs = {d: known.get(d, (UNKNOWN_ESTIMATE_S, 1)) for d in pending}
    order = schedule(jobs)
    logger.info(f"executing {len(order)} notebooks, {slots} at a time ({mode} mode)", color="green")

    cache = get_cache(str(cache_path))
    timeout = str(nb_config.execution_timeout) if nb_config.execution_timeout else "None"
    allow_errors = "1" if nb_config.execution_allow_errors else "0"
    running: dict[str, tuple[subprocess.Popen, int, float]] = {}
    records: dict[str, dict] = {}
    started = time.time()
    while order or running:
        busy = sum(w for _, w, _ in running.values())
        # start the next chapter in the order when its processes fit; a chapter wider than the machine runs alone
        while order and (not running or busy + min(jobs[order[0]][1], slots) <= slots):
            docname = order.pop(0)
            path, stem = pending[docname]
            weight = min(jobs[docname][1], slots)
            # the chapter's own sweeps use at most the slots it takes (lib.chapter.processes)
            child_env = dict(os.environ, ELD_DOCNAME=docname, ELD_PROCESSES=str(weight))
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(work / f"{stem}.in.ipynb"),
                   str(work / f"{stem}.out.ipynb"), str(work / f"{stem}.json"), str(path.parent), timeout,
                   allow_errors]
            running[docname] = (subprocess.Popen(cmd, env=child_env), weight, time.time())
            busy += weight
        time.sleep(0.2)
        for docname in [d for d, (proc, _, _) in running.items() if proc.poll() is not None]:
            proc, _, t0 = running.pop(docname)
            path, stem = pending[docname]
            stats = work / f"{stem}.json"
            record = (json.loads(stats.read_text()) if stats.exists()
                      else {"runtime_s": time.time() - t0, "cpu_s": None, "error": f"worker exit {proc.returncode}"})
            record["notebook"] = str(work / f"{stem}.out.ipynb")
            records[docname] = record
            if record["error"] is None:
                executed = nbformat.read(work / f"{stem}.out.ipynb", as_version=4)
                cache.cache_notebook_bundle(
                    CacheBundleIn(executed, str(path), data={"execution_seconds": record["runtime_s"]}),
                    check_validity=False, overwrite=True)
                logger.info(f"executed {docname} in {record['runtime_s']:.1f} s ({record['cpu_s']:.1f} CPU s); "
                            f"{len(order) + len(running)} left, {time.time() - started:.0f} s so far")
            else:
                # MyST-NB finds no cached copy, executes the notebook itself and reports the error as usual
                logger.info(f"executing {docname} failed ({record['error']}): it is executed again while read")
    return records


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--worker":
    sys.exit(_worker(sys.argv[2:]))
