"""An unresolved ``py:`` cross-reference fails the ``-W`` builds (``book/_ext/eld_book.py``,
``on_missing_reference``): a Sphinx build of one page with the book's extension, with and without such a reference."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = """Title
=====

.. py:function:: here()

   A function of this page.

:py:func:`here` resolves; :py:class:`numpy.ndarray` names a class outside lib (exempt: no inventory offline).
"""


def _build(tmp_path, extra: str = "", check: bool = True):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        f"extensions = ['myst_nb', 'eld_book']\neld_check_py_refs = {check}\n")
    (src / "index.rst").write_text(PAGE + extra)
    return subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "--keep-going", "-b", "html", str(src),
                           str(tmp_path / "html")], capture_output=True, text=True)


def test_resolved_references_and_classes_outside_lib_pass(tmp_path):
    out = _build(tmp_path)
    assert out.returncode == 0, out.stderr


UNRESOLVED = [("func", "lib.nowhere"), ("data", "NOWHERE"), ("class", "lib.Nowhere"), ("meth", "Nowhere.method")]


def test_an_unresolved_py_reference_fails_the_build(tmp_path):
    out = _build(tmp_path, "".join(f"\nAnd :py:{role}:`{target}`.\n" for role, target in UNRESOLVED))
    assert out.returncode != 0
    for role, target in UNRESOLVED:
        assert f"py:{role} reference target not found: {target}" in out.stderr, out.stderr
    assert "numpy.ndarray" not in out.stderr


def test_the_check_can_be_switched_off_for_a_one_page_build(tmp_path):
    out = _build(tmp_path, "\nAnd :py:func:`lib.nowhere`.\n", check=False)
    assert out.returncode == 0, out.stderr
