"""``scripts/execute_notebook.py``: its last line says FAILED when a claim differs from what the chapter expects, a
cell error shows the failing cell, and the claims are compared with those of the last build."""

import json
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import execute_notebook  # noqa: E402

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

```{code-cell} ipython3
from lib import chapter, claims

chapter.setup("tiny", "Tiny", "chen2023eos")
```
"""
CLAIM = """
```{code-cell} ipython3
claims.record(kind="illustration", source="Fig 1", statement="one is two", expected="2", measured="1",
              tolerance="equal", status=claims.status(1 == 2))
claims.show_new()
```
"""
ERROR = """
```{code-cell} ipython3
value = 1 / 0
```
"""


def _claim(status, measured="1"):
    return dict(source="Fig 1", statement="one is two", status=status, measured=measured, expect="reproduced")


def test_compare_lists_changed_new_and_gone_claims():
    before = [_claim("reproduced", "2"), dict(_claim("reproduced"), source="Fig 2")]
    after = [_claim("not reproduced"), dict(_claim("reproduced"), source="Fig 3")]
    lines = execute_notebook.compare_claims(before, after)
    assert lines[0] == " ~ [reproduced] -> [not reproduced] Fig 1: one is two (measured 2 -> 1)"
    assert any(x.startswith(" + new [reproduced] Fig 3") for x in lines)
    assert any(x.startswith(" - gone [reproduced] Fig 2") for x in lines)
    assert execute_notebook.compare_claims(before, before) == []


def test_last_build_claims_read_the_chapters_file_then_the_ledger(tmp_path):
    assert execute_notebook.last_build_claims(tmp_path, "notebooks/p/01_x") is None
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "claims.json").write_text(json.dumps([dict(_claim("reproduced"), docname="notebooks/p/01_x"),
                                                               dict(_claim("inconclusive"), docname="other")]))
    claims, source = execute_notebook.last_build_claims(tmp_path, "notebooks/p/01_x")
    assert [c["status"] for c in claims] == ["reproduced"] and source.endswith("claims.json")
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "notebooks__p__01_x.json").write_text(json.dumps({"claims": [_claim("not reproduced")]}))
    claims, source = execute_notebook.last_build_claims(tmp_path, "notebooks/p/01_x")
    assert [c["status"] for c in claims] == ["not reproduced"] and source.endswith("notebooks__p__01_x.json")


def test_failing_cell_shows_its_source_without_colour_codes():
    nb = nbformat.v4.new_notebook()
    trace = ["\x1b[0;31mZeroDivisionError\x1b[0m Traceback", "\x1b[1;32m----> 1\x1b[0m"]
    error = nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=trace)
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("value = 1 / 0", outputs=[error])]
    text = execute_notebook.failing_cell(nb)
    assert text.startswith("cell 1 failed:\nvalue = 1 / 0") and "\x1b" not in text
    assert text.endswith("ZeroDivisionError: division by zero")


def test_a_claim_not_as_expected_says_failed_and_the_change_since_the_last_build(tmp_path, capsys):
    chapter = tmp_path / "tiny.md"
    chapter.write_text(HEADER + CLAIM)
    build = tmp_path / "_build"
    (build / "claims").mkdir(parents=True)
    (build / "claims" / "tiny.json").write_text(json.dumps({"claims": [dict(_claim("reproduced", "2"), mode="quick")]}))
    assert execute_notebook.main([str(chapter), "--compare", str(build), "--timeout", "120"]) == 1
    out = capsys.readouterr().out
    assert " !! [not reproduced] (expects reproduced) Fig 1: one is two" in out
    assert " ~ [reproduced] -> [not reproduced] Fig 1: one is two (measured 2 -> 1)" in out
    assert out.rstrip().splitlines()[-1].startswith("tiny: FAILED: 1 of 1 claims differ from what the chapter expects")


def test_a_cell_error_shows_the_failing_cell(tmp_path, capsys):
    chapter = tmp_path / "broken.md"
    chapter.write_text(HEADER + ERROR)
    assert execute_notebook.main([str(chapter), "--compare", str(tmp_path), "--timeout", "120"]) == 1
    out = capsys.readouterr().out
    assert "cell 1 failed:\nvalue = 1 / 0" in out and "ZeroDivisionError" in out and "\x1b[" not in out
    assert out.rstrip().splitlines()[-1].startswith("broken: FAILED: a cell raised an error")


def test_outputs_on_stderr_are_listed():
    """The book's -W build stops on a cell that writes to stderr (a library's warning too): the runner says so."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("import warnings")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="fine\n"),
                    nbformat.v4.new_output("stream", name="stderr", text="UserWarning: layout changed\n  more\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("x"), cell]
    assert execute_notebook.stderr_outputs(nb) == ["cell 1: UserWarning: layout changed"]
