"""The sweep cache (lib.sweep): exact round trips, keys that follow the code, no code execution on load, resumable
sweeps, concurrent writers, and a sweep on a dask.distributed LocalCluster."""

import dataclasses
import functools
import io
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pytest

from lib import sweep

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private, empty cache directory for one test."""
    path = tmp_path / "cache"
    monkeypatch.setenv("ELD_CACHE_DIR", str(path))
    monkeypatch.delenv("ELD_NO_CACHE", raising=False)
    return path


def _run_python(code: str, env: dict, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env={**os.environ, **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc


# ------------------------------------------------------------------------------------------- basic behaviour
def _square(x):
    _square.calls += 1
    return x * x


_square.calls = 0


def test_sweep_caches_and_recovers_from_corrupt_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("ELD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ELD_NO_CACHE", raising=False)
    _square.calls = 0
    configs = [{"x": i} for i in range(4)]
    assert sweep.sweep(_square, configs, name="sq") == [0, 1, 4, 9]
    assert _square.calls == 4
    assert sweep.sweep(_square, configs, name="sq") == [0, 1, 4, 9]
    assert _square.calls == 4  # all cached
    files = sorted((tmp_path / "sq").glob("*.npz"))
    assert len(files) == 4 and not list((tmp_path / "sq").glob(".tmp-*"))
    files[0].write_bytes(b"garbage")
    assert sweep.sweep(_square, configs, name="sq") == [0, 1, 4, 9]
    assert _square.calls == 5  # only the corrupt entry was recomputed
    assert sweep.cached_call(_square, {"x": 7}, name="sq") == 49
    with pytest.raises(ValueError, match="configs"):
        sweep.sweep(_square, {"x": 1})
    with pytest.raises(ValueError, match="n_jobs"):
        sweep.sweep(_square, configs, n_jobs=0)


def test_config_key_depends_on_config_and_version():
    k1 = sweep.config_key("a", {"x": 1, "y": [1, 2]}, "v1")
    assert k1 == sweep.config_key("a", {"y": [1, 2], "x": 1}, "v1")
    assert k1 != sweep.config_key("a", {"x": 2, "y": [1, 2]}, "v1")
    assert k1 != sweep.config_key("a", {"x": 1, "y": [1, 2]}, "v2")


def test_device_enters_the_key_by_its_name():
    import torch

    base = sweep.config_key("a", {"x": 1}, "v1")
    cpu = sweep.config_key("a", {"x": 1, "device": "cpu"}, "v1")
    cuda = sweep.config_key("a", {"x": 1, "device": "cuda"}, "v1")
    assert len({base, cpu, cuda}) == 3
    assert sweep.config_key("a", {"x": 1, "device": torch.device("cuda")}, "v1") == cuda
    assert sweep.config_key("a", {"x": 1, "device": torch.device("cpu")}, "v1") == cpu


@pytest.mark.parametrize(
    "call,arg",
    [
        (lambda: sweep.cached_call(1, {}), "fn"),
        (lambda: sweep.cached_call(_square, [1]), "config"),
        (lambda: sweep.cached_call(_square, {"x": 1}, name=""), "name"),
        (lambda: sweep.cached_call(_square, {"x": 1}, cache="yes"), "cache"),
        (lambda: sweep.sweep(_square, [{"x": 1}], backend=3), "backend"),
        (lambda: sweep.config_key("", {}, "v"), "name"),
        (lambda: sweep.config_key("a", {"x": object()}, "v"), "config"),
    ],
)
def test_bad_arguments_name_the_argument(cache, call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


# ---------------------------------------------------------------------------------------- exact round trips
@dataclasses.dataclass
class _Run:
    lr: float
    losses: np.ndarray
    meta: dict = dataclasses.field(default_factory=dict)


def _assert_same(a, b):
    """Same type and same value, recursively (NaN equal to NaN, -0.0 distinct from 0.0)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    elif isinstance(a, (np.generic, float, complex)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    elif type(a).__module__.startswith("torch"):
        assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        assert a.detach().equal(b.detach())
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _assert_same(getattr(a, f.name), getattr(b, f.name))
    else:
        assert a == b


def _roundtrip(result):
    return sweep.decode_entry(io.BytesIO(sweep.encode_entry(result, key="k")), key="k")


def test_results_round_trip_exactly():
    import torch

    from lib.claims import Claim

    claim = Claim(work="w", source="Fig 1", statement="s", expected="holds", measured="m", tolerance="t", status="ok")
    result = {
        "step": np.arange(5), "loss": np.array([1.0, np.nan, np.inf, -0.0, 1e-300]), "f16": np.ones((2, 3), np.float16),
        "names": np.array(["a", "bc"]), "mask": np.array([True, False]), "empty": np.zeros((0, 4)),
        "lr": 0.1, "diverged": False, "n": 2**70, "none": None, "nan": float("nan"), "ninf": float("-inf"),
        "z": 1 - 2j, "np_scalars": [np.float64(0.25), np.float32(1.5), np.int64(-3), np.bool_(True)],
        "tuple": (1, "a", (2.0,)), "set": {1, 2}, 3: "int key", (1, 2): "tuple key", 0.5: "float key",
        "nested": [{"a": [np.eye(2)]}], "run": _Run(0.5, np.linspace(0, 1, 3), {"tag": "x"}), "claim": claim,
        "tensor": torch.arange(6.0).reshape(2, 3), "bf16": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
        "param": torch.nn.Parameter(torch.ones(2, dtype=torch.float64)),
    }
    out = _roundtrip(result)
    _assert_same(result, out)
    assert out["claim"] == claim and out["run"].meta == {"tag": "x"}
    with pytest.raises(ValueError, match="object"):
        _roundtrip({"bad": np.array([None, 1], dtype=object)})
    with pytest.raises(ValueError, match="cannot cache"):
        _roundtrip({"bad": object()})


def test_chapter_results_round_trip(cache):
    """A real cached experiment of EoS chapter 4 (a few epochs) comes back identical from the cache."""
    from lib.parts.edge_of_stability.beyond_low_dimension import teacher_student_experiment

    cfg = dict(m=8, lr=0.5, steps=5, sharp_every=2)
    fresh = sweep.cached_call(teacher_student_experiment, cfg, name="ts")
    again = sweep.cached_call(teacher_student_experiment, cfg, name="ts")
    _assert_same(fresh, again)
    assert fresh is not again and len(list((cache / "ts").glob("*.npz"))) == 1


def test_unsupported_result_is_an_error_and_writes_nothing(cache):
    with pytest.raises(ValueError, match="cannot cache"):
        sweep.cached_call(lambda: object(), {}, name="obj")
    assert not list(cache.glob("obj/*"))


# -------------------------------------------------------------------------------- nothing dangerous is loaded
class _Payload:
    """Unpickling this creates the marker file: proof that a payload ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_planted_pickle_is_never_executed(cache, tmp_path):
    marker = tmp_path / "payload-ran"
    cfg = {"x": 3}
    key = sweep.config_key("planted", cfg, sweep.code_version(_square))
    entry = cache / "planted" / f"{key}.npz"
    entry.parent.mkdir(parents=True)
    payload = pickle.dumps({"__eld_cache__": 1, "result": _Payload(marker)})
    for path in (entry, entry.with_suffix(".pkl")):  # the entry's name, and the old format's name
        path.write_bytes(payload)
    assert sweep.cached_call(_square, cfg, name="planted") == 9
    assert not marker.exists()
    assert sweep.decode_entry(entry, key=key) == 9  # overwritten by a valid entry
    # a pickle inside an .npz member (an object array) is refused too
    buf = io.BytesIO()
    np.savez(buf, __meta__=np.frombuffer(b"{}", np.uint8), a0=np.array([_Payload(marker)], dtype=object))
    entry.write_bytes(buf.getvalue())
    assert sweep.cached_call(_square, cfg, name="planted") == 9
    assert not marker.exists()


def test_tampered_foreign_corrupt_and_truncated_entries_are_recomputed(cache):
    _square.calls = 0
    assert sweep.cached_call(_square, {"x": 4}, name="c") == 16
    (entry,) = (cache / "c").glob("*.npz")
    good = entry.read_bytes()
    key = entry.stem
    # a well-formed entry with another result but the old checksum
    forged = io.BytesIO(good)
    with np.load(forged, allow_pickle=False) as npz:
        members = {k: npz[k] for k in npz.files}
    members["__meta__"] = np.frombuffer(members["__meta__"].tobytes().replace(b"16", b"99"), np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **members)
    # a valid entry of another key, copied over this one
    other = sweep.encode_entry(99, key="0" * 32)
    flipped = bytearray(good)  # one bit of the stored result flipped on disk
    flipped[good.index(b'"tree": 16') + 9] ^= 0x01
    bad_entries = [buf.getvalue(), other, good[: len(good) // 2], b"", b"garbage", bytes(flipped)]
    for i, bad in enumerate(bad_entries, start=2):
        entry.write_bytes(bad)
        assert sweep.cached_call(_square, {"x": 4}, name="c") == 16
        assert _square.calls == i, f"bad entry {i - 2} was trusted"
        assert sweep.decode_entry(entry, key=key) == 16


# ------------------------------------------------------------------------------------ keys follow the code
_NOTEBOOK_CELL = """
import numpy as np
SCALE = {scale}
def helper(x):
    return x * SCALE
def experiment(n):
    return helper(np.arange(n)) {op} 1
"""


def _notebook_function(scale=2, op="+", cell="<cell-1>"):
    """``experiment`` as a notebook would define it: no source file that ``inspect`` can read."""
    module = types.ModuleType("__main__")
    exec(compile(_NOTEBOOK_CELL.format(scale=scale, op=op), cell, "exec"), module.__dict__)
    return module.experiment


def test_notebook_function_is_keyed_on_its_code_helpers_and_constants():
    base = sweep.code_version(_notebook_function())
    assert base == sweep.code_version(_notebook_function(cell="<cell-7>"))  # a re-run in a new kernel hits
    assert base != sweep.code_version(_notebook_function(op="-"))  # the body changed
    assert base != sweep.code_version(_notebook_function(scale=3))  # a constant it uses changed
    assert base != sweep.code_version(functools.partial(_notebook_function(), n=3))
    assert sweep.code_version(functools.partial(_square, x=2)) != sweep.code_version(functools.partial(_square, x=3))


def test_versions_of_the_stack_are_in_the_key(monkeypatch):
    base = sweep.code_version(_square)
    monkeypatch.setattr(sweep, "library_versions", lambda: {"torch": "0.0", "numpy": "0", "scipy": "0"})
    assert sweep.code_version(_square) != base



def test_global_state_packages_modules_and_objects_are_in_the_key(monkeypatch, tmp_path):
    """The stale cases of the second review: default dtype, BOOK_MODE, package versions, a helper module outside
    lib, a global nn.Module."""
    import torch

    base = sweep.code_version(_square)
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if before == torch.float32 else torch.float32)
    try:
        assert sweep.code_version(_square) != base
    finally:
        torch.set_default_dtype(before)
    assert sweep.code_version(_square) == base
    monkeypatch.setenv("BOOK_MODE", "full" if os.environ.get("BOOK_MODE") == "quick" else "quick")
    assert sweep.code_version(_square) != base
    monkeypatch.undo()
    versions = sweep.library_versions()
    assert {"networkx", "scikit-learn", "transformers", "torch", "numpy", "scipy"} <= set(versions)

    helper = tmp_path / "helper_mod_eld.py"
    helper.write_text("def scale(x):\n    return 2 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import helper_mod_eld

    module = types.ModuleType("__main__")
    module.helper_mod_eld = helper_mod_eld
    exec(compile("def uses(x):\n    return helper_mod_eld.scale(x)\n", "<cell>", "exec"), module.__dict__)
    first = sweep.code_version(module.uses)
    helper.write_text("def scale(x):\n    return 3 * x\n")
    assert sweep.code_version(module.uses) != first

    torch.manual_seed(0)
    module.net = torch.nn.Linear(2, 1)
    exec(compile("def apply(x):\n    return net(x)\n", "<cell>", "exec"), module.__dict__)
    first = sweep.code_version(module.apply)
    assert sweep.code_version(module.apply) == first
    with torch.no_grad():
        module.net.weight.add_(1.0)
    assert sweep.code_version(module.apply) != first
    sys.modules.pop("helper_mod_eld", None)


_PROBE = """
import sys
from lib import sweep
from lib._probe import probe
print(sweep.cached_call(probe, {"x": 3}, name="probe"))
"""


def test_editing_any_lib_file_invalidates_the_cache(tmp_path):
    """The reviewer's stale case: the cached function's own module is unchanged, a module it uses changes."""
    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "lib", pkg / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "lib" / "_probe_dep.py").write_text("FACTOR = 1\n")
    (pkg / "lib" / "_probe.py").write_text(
        "def probe(x):\n    from ._probe_dep import FACTOR\n    print('computed')\n    return x * FACTOR\n"
    )
    env = {"PYTHONPATH": str(pkg), "ELD_CACHE_DIR": str(tmp_path / "cache"), "ELD_NO_CACHE": ""}
    assert _run_python(_PROBE, env, pkg).stdout.split() == ["computed", "3"]
    assert _run_python(_PROBE, env, pkg).stdout.split() == ["3"]  # cached
    (pkg / "lib" / "_probe_dep.py").write_text("FACTOR = 2\n")
    assert _run_python(_PROBE, env, pkg).stdout.split() == ["computed", "6"]  # recomputed, not stale
    with open(pkg / "lib" / "config.py", "a") as fh:
        fh.write("# a comment\n")
    assert _run_python(_PROBE, env, pkg).stdout.split() == ["computed", "6"]  # any edit in lib invalidates


# ------------------------------------------------------------------------- interrupted and concurrent writers
_RESUMABLE = """
import os, sys, time
from lib import sweep

def slow_square(x):
    with open(os.environ["CALL_LOG"], "a") as fh:
        fh.write(f"{x}\\n")
    if x >= int(os.environ.get("HANG_FROM", "1000")):
        time.sleep(120)
    return {"x": x, "sq": x * x}

print(sweep.sweep(slow_square, [{"x": i} for i in range(6)], name="resume"))
"""


def test_killed_sweep_resumes_from_its_stored_results(tmp_path):
    log, cache_path = tmp_path / "calls.txt", tmp_path / "cache"
    log.write_text("")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ELD_CACHE_DIR": str(cache_path), "CALL_LOG": str(log),
           "ELD_NO_CACHE": "", "HANG_FROM": "3"}
    proc = subprocess.Popen([sys.executable, "-c", _RESUMABLE], env=env, cwd=ROOT)
    try:
        deadline = time.time() + 60
        # killed once it stored 3 results and hangs in the 4th
        while len(list(cache_path.glob("resume/*.npz"))) < 3 or "3" not in log.read_text().split():
            assert time.time() < deadline and proc.poll() is None, "the sweep did not store its first results"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert log.read_text().split() == ["0", "1", "2", "3"]  # killed while computing x = 3
    log.write_text("")
    env.pop("HANG_FROM")
    out = subprocess.run([sys.executable, "-c", _RESUMABLE], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert log.read_text().split() == ["3", "4", "5"]  # only what the killed run had not stored
    assert out.strip() == str([{"x": i, "sq": i * i} for i in range(6)])


def test_orphaned_temporary_files_are_cleaned(cache):
    sweep.cached_call(_square, {"x": 1}, name="orph")
    folder = cache / "orph"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    orphan = folder / f".tmp-{sweep._host()}-{dead}-abc.npz"
    old = folder / ".tmp-otherhost-1-old.npz"
    live = folder / f".tmp-{sweep._host()}-{os.getpid()}-xyz.npz"  # a writer that is still running
    for path in (orphan, old, live):
        path.write_bytes(b"partial")
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    sweep.cached_call(_square, {"x": 1}, name="orph")
    assert not orphan.exists() and not old.exists() and live.exists()
    assert sweep.clear_cache() == 2 and not folder.exists()  # the entry and the live temporary file


_WRITER = """
import os, sys, time
import numpy as np
from lib import sweep

def big(n):
    time.sleep(0.2)
    return {"a": np.arange(n, dtype=float), "b": [np.ones(n)] * 3}

while not os.path.exists(os.environ["GO"]):
    time.sleep(0.005)
r = sweep.cached_call(big, {"n": 300_000}, name="race")
print(float(r["a"].sum()))
"""


def test_two_processes_writing_one_key_leave_one_valid_entry(tmp_path):
    go, cache_path = tmp_path / "go", tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ELD_CACHE_DIR": str(cache_path), "GO": str(go),
           "ELD_NO_CACHE": ""}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER], env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    time.sleep(0.5)
    go.touch()
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outs[0] == outs[1] == f"{float(np.arange(300_000).sum())}\n"
    files = sorted(p.name for p in (cache_path / "race").iterdir())
    assert len(files) == 1 and files[0].endswith(".npz"), files  # one entry, no temporary files
    result = sweep.decode_entry(cache_path / "race" / files[0], key=files[0][:-4])
    assert np.array_equal(result["a"], np.arange(300_000, dtype=float)) and len(result["b"]) == 3


def test_parallel_sweep_stores_every_result(cache):
    configs = [{"x": i} for i in range(4)]
    assert sweep.sweep(_square, configs, name="par", n_jobs=2, backend="threading") == [0, 1, 4, 9]
    assert len(list((cache / "par").glob("*.npz"))) == 4


# ----------------------------------------------------------------------------------------------------- Dask
def dask_experiment(seed: int, n: int, lr: float) -> dict:
    """A small deterministic experiment whose result has the types chapters cache."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(n)
    losses = np.cumprod(np.full(20, 1 - lr)) * float(w @ w)
    return {"losses": losses, "final": float(losses[-1]), "seed": seed, "w": w.astype(np.float32),
            "diverged": bool(losses[-1] > 1e6), "shape": (n,)}


def test_cached_sweep_on_a_dask_local_cluster_matches_the_serial_run(cache):
    pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    configs = [{"seed": s, "n": 50 + s, "lr": lr} for s in range(3) for lr in (0.1, 0.5)]
    serial = sweep.sweep(dask_experiment, configs, name="dask-serial", cache=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        on_cluster = sweep.sweep(dask_experiment, configs, name="dask", n_jobs=2, backend="dask")
    _assert_same(serial, on_cluster)
    assert len(list((cache / "dask").glob("*.npz"))) == len(configs)  # stored by this process
    _assert_same(serial, sweep.sweep(dask_experiment, configs, name="dask"))  # read back from the cache


# ------------------------------------------------------------------------------- clearing and configuration
def test_clear_refuses_a_directory_that_is_not_a_sweep_cache(tmp_path, monkeypatch):
    """A mis-set ELD_CACHE_DIR: `python -m lib.sweep clear` deletes nothing and names the variable."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.npz").write_bytes(b"precious")
    (tmp_path / "notes.txt").write_text("precious")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ELD_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "lib.sweep", "clear"], env=env, capture_output=True, text=True)
    assert proc.returncode == 1 and "ELD_CACHE_DIR" in proc.stderr
    assert (tmp_path / "sub" / "data.npz").read_bytes() == b"precious" and (tmp_path / "notes.txt").exists()
    monkeypatch.setenv("ELD_CACHE_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="ELD_CACHE_DIR"):
        sweep.clear_cache()


def test_clear_deletes_only_what_the_cache_wrote(cache):
    sweep.cached_call(_square, {"x": 3}, name="mine")
    assert (cache / sweep.MARKER).is_file()
    folder = cache / "mine"
    foreign = [folder / "data.npz", folder / "notes.txt", cache / "other" / "data.npz", cache / "top.npz",
               folder / ".tmp-not-ours.txt"]
    for path in foreign:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"precious")
    outside = cache.parent / "outside"
    outside.mkdir()
    (outside / ("0" * 32 + ".npz")).write_bytes(b"precious")
    (cache / "linked").symlink_to(outside)
    assert sweep.clear_cache() == 1  # the one entry
    assert all(path.read_bytes() == b"precious" for path in foreign)
    assert (outside / ("0" * 32 + ".npz")).exists()
    assert not list(folder.glob("[0-9a-f]" * 32 + ".npz"))


def test_symlinked_cache_folder_is_refused(cache, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".tmp-notmine.txt").write_text("keep")
    cache.mkdir()
    (cache / "linked").symlink_to(outside)
    with pytest.raises(ValueError, match="name="):
        sweep.cached_call(_square, {"x": 2}, name="linked")
    assert sorted(p.name for p in outside.iterdir()) == [".tmp-notmine.txt"]
    assert sweep.clean_orphans(cache / "linked", max_age_s=0) == 0


def test_an_entry_that_would_inflate_is_refused_before_inflation(cache):
    import zipfile

    sweep.cached_call(_square, {"x": 4}, name="zip")
    (path,) = (cache / "zip").glob("*.npz")
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for n, data in members.items():
            zf.writestr(n, data)
    from lib._cache_format import decode_entry

    with pytest.raises(ValueError, match="compressed"):
        decode_entry(path, key=path.stem)
    _square.calls = 0
    assert sweep.cached_call(_square, {"x": 4}, name="zip") == 16 and _square.calls == 1


def test_a_directory_at_the_entry_path_keeps_the_result(cache):
    key = sweep.config_key("dir", {"x": 5}, sweep.code_version(_square))
    (cache / "dir" / f"{key}.npz").mkdir(parents=True)
    with pytest.warns(UserWarning, match="not cached"):
        assert sweep.cached_call(_square, {"x": 5}, name="dir") == 25


def test_overlong_name_is_named_before_computing(cache):
    _square.calls = 0
    with pytest.raises(ValueError, match="name"):
        sweep.cached_call(_square, {"x": 1}, name="n" * 300)
    assert _square.calls == 0


def test_cache_environment_variables(cache, monkeypatch, tmp_path):
    from lib import config

    for value, off in (("1", True), ("yes", True), ("0", False), ("false", False), ("", False)):
        monkeypatch.setenv("ELD_NO_CACHE", value)
        assert sweep.cache_disabled() is off
    monkeypatch.setenv("ELD_NO_CACHE", "maybe")
    with pytest.raises(ValueError, match="ELD_NO_CACHE"):
        sweep.cached_call(_square, {"x": 1})
    monkeypatch.delenv("ELD_NO_CACHE")
    monkeypatch.setenv("ELD_CACHE_DIR", "")
    with pytest.raises(ValueError, match="ELD_CACHE_DIR"):
        config.cache_dir()
    afile = tmp_path / "a_file"
    afile.write_text("x")
    monkeypatch.setenv("ELD_CACHE_DIR", str(afile))
    with pytest.raises(ValueError, match="ELD_CACHE_DIR"):
        config.cache_dir()


def test_decoded_dataclasses_pass_their_own_checks():
    from lib._cache_format import decode_entry, encode_entry
    from lib.models.transformer import TransformerConfig

    cfg = TransformerConfig(d_in=2, d_model=8, n_layers=1, max_len=8)
    assert decode_entry(io.BytesIO(encode_entry(cfg, key="k")), key="k") == cfg
    object.__setattr__(cfg, "n_layers", -3)  # a forged entry: fields the constructor would refuse
    with pytest.raises(ValueError, match="n_layers"):
        decode_entry(io.BytesIO(encode_entry(cfg, key="k")), key="k")


def test_success_map_members_are_validated():
    from lib.success import check_members

    sizes, seeds = check_members([10, 20], np.array([0, 1]), "Ls")
    assert sizes.tolist() == [10, 20] and seeds.dtype.kind == "i"
    for bad in (([10], [0, 1]), ([0, 5], [0, 1]), ([1.5, 2.0], [0, 1]), ([], [])):
        with pytest.raises(ValueError, match="Ls and seeds"):
            check_members(*bad, "Ls")


def test_every_environment_variable_read_is_in_the_readme():
    """Each environment variable that ``lib``, the scripts, the book's build or its post-build tests read is listed
    in the README's table of environment variables (the configuration a reader can set)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    pattern = re.compile(r"(?:environ(?:\.get|\.setdefault|\.pop)?\(\s*|environ\[|getenv\(\s*)"
                         r"[\"']([A-Z][A-Z0-9_]+)[\"']")
    sources = [*root.glob("lib/**/*.py"), *root.glob("scripts/*.py"), *root.glob("book/**/*.py"),
               root / "tests" / "test_book.py"]
    read = {m.group(1) for path in sources for m in pattern.finditer(path.read_text())}
    assert {"BOOK_MODE", "ELD_CACHE_DIR", "ELD_NO_CACHE"} <= read
    readme = (root / "README.md").read_text()
    table = readme[readme.index("Environment variables the book reads"):]
    missing = sorted(v for v in read if f"`{v}`" not in table)
    assert not missing, f"environment variables read but not in the README's table: {missing}"
