"""Notebooks executed side by side before Sphinx reads them (book/_ext/eld_execute.py).

A two-notebook Sphinx build through MyST-NB: with the side-by-side execution both notebooks run in workers, reach
MyST-NB through its cache (nothing is executed twice), see their own ``ELD_DOCNAME``, and the pages show the same
outputs as a build where MyST-NB executes them itself, one after the other."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXT = ROOT / "book" / "_ext"
sys.path.insert(0, str(EXT))

import eld_execute  # noqa: E402

NOTEBOOK = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# {title}

```{{code-cell}} ipython3
import os
print("docname", os.environ["ELD_DOCNAME"], "mode", os.environ.get("BOOK_MODE"))
print("value", sum(i * i for i in range({n})))
```
"""


def _book(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['myst_nb', 'eld_book']\nnb_execution_mode = 'cache'\nexclude_patterns = ['_build']\n")
    (src / "index.md").write_text("# Book\n\n```{toctree}\na\nb\n```\n")
    (src / "a.md").write_text(NOTEBOOK.format(title="A", n=10))
    (src / "b.md").write_text(NOTEBOOK.format(title="B", n=20))
    return src


def _build(src: Path, out: Path, *extra: str) -> str:
    env = dict(os.environ, ELD_BUILD_JOBS="2", BOOK_MODE="quick")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "-q", *extra, str(src), str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _outputs(html: str) -> list[str]:
    return re.findall(r'<div class="cell_output docutils container">(.*?)</div>\s*</div>', html, re.S)


def test_side_by_side_execution_matches_myst_nb_executing_itself(tmp_path):
    src = _book(tmp_path)
    _build(src, tmp_path / "parallel" / "html")
    _build(src, tmp_path / "serial" / "html", "-D", "nb_execution_mode=force")
    for name, value in (("a", 285), ("b", 2470)):
        parallel = (tmp_path / "parallel" / "html" / f"{name}.html").read_text()
        serial = (tmp_path / "serial" / "html" / f"{name}.html").read_text()
        assert f"docname {name} mode quick" in parallel and f"value {value}" in parallel
        assert _outputs(parallel) == _outputs(serial) != []
        # the executed notebook MyST-NB leaves next to the pages (its download) holds the outputs in both builds
        cells = [nbformat.read(tmp_path / build / "jupyter_execute" / f"{name}.ipynb", as_version=4).cells
                 for build in ("parallel", "serial")]
        assert [c.get("outputs") for c in cells[0]] == [c.get("outputs") for c in cells[1]]
        assert any(c.get("outputs") for c in cells[0])
    timings = json.loads((tmp_path / "parallel" / "timings.json").read_text())
    assert set(timings) == {"a", "b"}
    assert all(t["succeeded"] and t["cpu_s"] > 0 for t in timings.values())  # the workers' kernels, not zero


def test_a_failing_notebook_still_stops_the_build_with_its_error(tmp_path):
    src = _book(tmp_path)
    (src / "index.md").write_text("# Book\n\n```{toctree}\nb\n```\n")
    (src / "a.md").unlink()
    failing = NOTEBOOK.format(title="B", n=20).replace('print("value"', 'raise RuntimeError("boom")\nprint("value"')
    (src / "b.md").write_text(failing)
    env = dict(os.environ, ELD_BUILD_JOBS="2")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-D", "nb_execution_raise_on_error=1",
                           str(src), str(tmp_path / "out" / "html")], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode != 0
    assert "b.md" in proc.stdout + proc.stderr


def test_a_chapter_starts_at_most_the_processes_the_build_gives_it(monkeypatch):
    from lib import chapter

    monkeypatch.delenv("ELD_PROCESSES", raising=False)
    assert chapter.processes(2) == 2  # run alone: what the chapter asks for
    monkeypatch.setenv("ELD_PROCESSES", "1")
    assert chapter.processes(2) == 1 and chapter.processes(1) == 1
    monkeypatch.setenv("ELD_PROCESSES", "2")
    assert chapter.processes(1) == 1 and chapter.processes(3) == 2
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("ELD_PROCESSES", bad)
        with pytest.raises(ValueError, match="ELD_PROCESSES"):
            chapter.processes(2)
    # the build gives each chapter the slots of its estimate: two for the diffusion chapter, one for the rest
    full = eld_execute.load_estimates("full")
    assert full["notebooks/concept_learning/03_diffusion"][1] == 2
    assert sum(p > 1 for _, p in full.values()) == 1


def test_wide_then_longest_first_and_jobs_from_the_environment(monkeypatch):
    jobs = {"a": (10.0, 1), "b": (200.0, 2), "c": (10.0, 1), "d": (50.0, 1)}
    assert eld_execute.schedule(jobs) == ["b", "d", "a", "c"]
    # a chapter of two processes never waits in the middle for two free slots: the wide ones start first
    jobs = {"a": (100.0, 1), "b": (200.0, 2), "c": (10.0, 1), "w": (50.0, 2)}
    assert eld_execute.schedule(jobs) == ["b", "w", "a", "c"]
    monkeypatch.setenv("ELD_BUILD_JOBS", "3")
    assert eld_execute.build_jobs() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("ELD_BUILD_JOBS", bad)
        with pytest.raises(ValueError, match="ELD_BUILD_JOBS"):
            eld_execute.build_jobs()
    monkeypatch.delenv("ELD_BUILD_JOBS")
    assert eld_execute.build_jobs() >= 1


def test_estimates_cover_every_chapter_and_its_processes():
    """Every chapter has an estimate in both modes, and a chapter that trains in several processes (``n_jobs``)
    says how many, so that the build does not run more processes than there are cores (a chapter that asks
    ``lib.chapter.processes`` gets at most its estimate's slots, so its estimate may be smaller)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from book_table import toc_chapters

    for mode in ("quick", "full"):
        estimates = eld_execute.load_estimates(mode)
        for doc in toc_chapters():
            assert doc in estimates, f"{doc}: no {mode}-mode estimate in book/execution_estimates.json"
            text = (ROOT / f"{doc}.md").read_text()
            jobs = re.search(r"^(?:N_)?JOBS = (.+)$", text, re.M)
            if jobs:
                value = jobs.group(1).split("#")[0]
                numbers = [int(n) for n in re.findall(r"\d+", value)]
                wanted = numbers[-1] if "pick" in value and mode == "full" else numbers[0]
                if "chapter.processes(" in value:  # the chapter starts at most the slots the build gives it
                    assert 1 <= estimates[doc][1] <= wanted, f"{doc}: at most {wanted} processes in {mode} mode"
                else:
                    assert estimates[doc][1] == wanted, f"{doc}: {wanted} processes in {mode} mode, estimates " \
                        f"say {estimates[doc][1]}"
