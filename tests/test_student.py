"""The student edition (``make student``, scripts/student.py): no student notebook holds a solution, every exercise
stays, and the student HTML build hides the solutions. The chapters are read, never executed."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("student", ROOT / "scripts" / "student.py")
student = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(student)

CHAPTERS = student.chapters()


def test_strip_removes_colon_and_backtick_solutions_and_keeps_the_rest():
    text = (
        "Intro.\n\n::::{exercise}\n:label: a\n\nDo it.\n::::\n\n::::{solution} a\n:class: dropdown\n\nSecret.\n"
        ":::{math}\nx\n:::\n\nStill secret.\n::::\n\nAfter.\n\n```{solution} b\nHidden too.\n```\nEnd.\n"
    )
    out = student.strip_solutions(text)
    assert "Secret" not in out and "secret" not in out and "Hidden" not in out
    assert "{solution}" not in out
    assert "::::{exercise}" in out and "Do it." in out and "After." in out and out.endswith("End.\n")
    assert "\n\n\n" not in out


def test_strip_leaves_text_without_solutions_unchanged():
    text = "# Title\n\n:::{prf:theorem}\n$x$\n:::\n\nNo solutions here.\n"
    assert student.strip_solutions(text) == text


def test_strip_rejects_an_unclosed_solution_and_a_non_string():
    with pytest.raises(ValueError, match="never closed"):
        student.strip_solutions("::::{solution} a\nforever\n:::\n")
    with pytest.raises(ValueError, match="text"):
        student.strip_solutions(None)


def test_every_exercise_of_the_book_has_its_solution_as_a_solution_directive():
    """A solution written as a plain admonition would survive the student edition: none is."""
    for md in CHAPTERS:
        text = md.read_text()
        assert not re.search(r"\{admonition\}\s*Solution", text), f"{md.name}: a solution as an admonition"
        exercises = re.findall(r"\{exercise\}\n:label: (\S+)", text)
        solutions = re.findall(r"\{solution\} (\S+)", text)
        assert sorted(exercises) == sorted(solutions), f"{md.name}: exercises and solutions do not pair up"
        assert exercises, f"{md.name} has no exercise"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_student_notebook_holds_a_solution(md):
    original = md.read_text()
    nb = student.student_notebook(md)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert not student.has_solution(markdown)
    # every exercise is still there, and each solution's text is gone
    assert markdown.count("{exercise}") == original.count("{exercise}")
    for body in re.findall(r"\{solution\}[^\n]*\n(?::class:[^\n]*\n)?(.*?)\n:{3,}\n", original, flags=re.S):
        first = next((line for line in body.splitlines() if len(line.strip()) > 20), None)
        if first is not None:
            assert first not in markdown, f"{md.name}: solution text left: {first[:60]}"
    # the code cells are the chapter's own, unchanged
    import jupytext

    code = [c.source for c in jupytext.read(md).cells if c.cell_type == "code"]
    assert [c.source for c in nb.cells if c.cell_type == "code"] == code


def test_write_notebooks_writes_one_notebook_per_chapter(tmp_path):
    written = student.write_notebooks(tmp_path)
    assert len(written) == len(CHAPTERS)
    for path in written:
        assert path.suffix == ".ipynb" and not student.has_solution(path.read_text())
    assert student.main(["notebooks", "--out", str(tmp_path / "again")]) == 0


def test_student_config_hides_solutions_and_downloads(tmp_path):
    import yaml

    path = student.write_config(tmp_path / "_config.yml")
    cfg = yaml.safe_load(path.read_text())
    book = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["sphinx"]["config"]["hide_solutions"] is True
    assert cfg["sphinx"]["config"]["html_theme_options"] == {"use_download_button": False}
    assert cfg["sphinx"]["recursive_update"] is True  # the theme option merges into jupyter-book's
    assert cfg["sphinx"]["config"]["html_copy_source"] is False
    assert not cfg["launch_buttons"]["binderhub_url"]  # the launch buttons copy the executed notebook into the site
    # everything else is the book's own configuration
    assert cfg["execute"] == book["execute"] and cfg["parse"] == book["parse"]
    # the same extensions, found from where the copy lives (jupyter-book resolves them against its folder)
    local = cfg["sphinx"]["local_extensions"]
    assert set(local) == set(book["sphinx"]["local_extensions"])
    for name, folder in local.items():
        assert (path.parent / folder / f"{name}.py").resolve() == (ROOT / book["sphinx"]["local_extensions"][name]
                                                                  / f"{name}.py").resolve()
        assert (path.parent / folder / f"{name}.py").exists()
    assert "hide_solutions" not in book["sphinx"]["config"]
    with pytest.raises(ValueError, match="config"):
        student.student_config([])


def test_make_student_uses_the_student_config_and_notebooks():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nstudent:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/student.py notebooks" in recipe and "scripts/student.py config" in recipe
    assert "--config" in recipe and "--path-output" in recipe
