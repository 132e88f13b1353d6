"""``scripts/lint_chapters.py --fix`` (``make format-chapters``) writes back only what ruff changed: a chapter whose
code is untouched keeps its bytes and its modification time, and a changed chapter keeps its prose, cell options and
figure-caption metadata byte for byte."""

import os
import shutil
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import lint_chapters  # noqa: E402

#: a chapter with long figure captions in its cells' metadata, which jupytext re-wraps when it writes a notebook
CHAPTER = ROOT / "notebooks" / "concept_learning" / "02_deep_models.md"


def test_an_untouched_chapter_is_not_written(tmp_path):
    md = tmp_path / CHAPTER.name
    shutil.copy2(CHAPTER, md)
    os.utime(md, (1_000_000_000, 1_000_000_000))
    assert not lint_chapters.write_back(md, jupytext.read(md))
    assert md.read_bytes() == CHAPTER.read_bytes() and md.stat().st_mtime == 1_000_000_000


def test_a_changed_cell_is_all_that_changes(tmp_path):
    md = tmp_path / CHAPTER.name
    shutil.copy2(CHAPTER, md)
    fixed = jupytext.read(md)
    i = next(i for i, c in enumerate(fixed.cells) if c.cell_type == "code" and "mystnb" in c.metadata)
    old = fixed.cells[i].source
    fixed.cells[i].source = "x = 1  # reformatted\n" + old
    assert lint_chapters.write_back(md, fixed)
    text = CHAPTER.read_text()
    assert md.read_text() == text.replace(old, fixed.cells[i].source, 1)
    assert jupytext.read(md).cells[i].metadata == jupytext.read(CHAPTER).cells[i].metadata


def test_cells_that_do_not_line_up_are_refused_by_the_patch():
    nb = jupytext.read(CHAPTER)
    assert lint_chapters.patched_text(CHAPTER.read_text(), nb.cells, nb.cells[:-1]) is None
