"""The book's style sheet (book/_ext/eld_layout.py, static/eld_layout.css): a Sphinx build of one page links it and
copies it, and its code-cell rule holds the chapters' 88 columns in the 666 px box of a 1280 px window."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CSS = ROOT / "book" / "_ext" / "static" / "eld_layout.css"


def _line_length() -> int:
    return int(re.search(r"^line-length\s*=\s*(\d+)", (ROOT / "notebooks" / "ruff.toml").read_text(), re.M).group(1))


def test_code_rule_fits_the_chapters_line_length_at_desktop_width():
    text = CSS.read_text()
    rule = re.search(r"div\.cell_input div\.highlight pre\s*\{([^}]*)\}", text).group(1)
    font_px = float(re.search(r"font-size:\s*([\d.]+)rem", rule).group(1)) * 16
    pad_px = float(re.search(r"padding:\s*([\d.]+)rem", rule).group(1)) * 16
    # the box of a code cell in a 1280 px window (measured in the browser review) and a monospace advance of 0.602 em
    # (DejaVu Sans Mono / Liberation Mono; SF Mono and Consolas are narrower)
    assert _line_length() * 0.602 * font_px <= 666 - 2 * pad_px
    assert "pre-wrap" in rule and "overflow-wrap: anywhere" in rule  # narrower windows and print wrap


def test_a_sphinx_build_links_and_copies_the_style_sheet(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\nextensions = ['eld_layout']\n")
    (src / "index.rst").write_text("Title\n=====\n\n.. code-block:: python\n\n   x = 1\n")
    out = tmp_path / "html"
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out)], check=True)
    assert (out / "_static" / "eld_layout.css").read_text() == CSS.read_text()
    assert "_static/eld_layout.css" in (out / "index.html").read_text()


def test_the_book_loads_the_extension():
    import yaml

    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["sphinx"]["local_extensions"]["eld_layout"] == "book/_ext"


def test_stacked_claims_labels_match_the_claims_tables_columns():
    """The phone layout labels a claim row's last three cells expected, measured and rule, and stacks only the tables
    with six columns or more: lib.claims.table_html's columns, with and without the report's chapter column."""
    from lib.claims import Claim, table_html

    claim = Claim(work="w", source="Fig 1", statement="s", expected="e", measured="m", tolerance="t",
                  status="reproduced", chapter="c")
    for show_chapter, n in ((False, 6), (True, 7)):
        heads = re.findall(r"<th>([^<]*)</th>", table_html([claim], show_chapter=show_chapter))
        assert len(heads) == n and heads[-3:] == ["expected", "measured", "rule"]
        row = re.search(r"<tbody><tr[^>]*>(.*)</tr></tbody>", table_html([claim], show_chapter=show_chapter)).group(1)
        assert row.count("<td>") == n
    css = CSS.read_text()
    for label, k in (("expected", 3), ("measured", 2)):
        assert f'td:nth-last-child({k}):nth-child(n+{7 - k})::before {{ content: "{label}: "' in css
    assert 'td:last-child:nth-child(n+6)::before { content: "rule: "' in css
    assert ":has(th:nth-child(6))" in css
