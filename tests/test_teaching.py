"""The "Teaching with this book" page (book/teaching.md) agrees with the book: a row for every chapter, in the order
of the table of contents, with the chapter's quick and full CPU times from the README's table and every exercise of
the chapter listed once, on paper or on a computer."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "book" / "teaching.md").read_text()
ROMAN = ["I", "II", "III", "IV", "V", "VI"]


def _chapters() -> list[list[str]]:
    """The chapters of each numbered part, in the order of _toc.yml."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [[s["file"] for s in part["chapters"][0]["sections"]] for part in toc["parts"] if part.get("numbered")]


def _rows() -> dict[str, list[str]]:
    rows = {}
    for line in PAGE.splitlines():
        m = re.match(r"\| ((?:I|II|III|IV|V|VI)\.\d+) ", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in line.strip().strip("|").split(" | ")]
    return rows


def _readme_times() -> list[tuple[int, int]]:
    """(quick, full) CPU seconds of the README's chapter table, in its order (the order of the book)."""
    out = []
    for line in (ROOT / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[2].isdigit() and cells[5].isdigit():
            out.append((int(cells[2]), int(cells[5])))
    return out


def test_the_page_is_in_the_table_of_contents():
    assert "book/teaching" in (ROOT / "_toc.yml").read_text()


def test_one_row_per_chapter_with_the_readme_times():
    chapters = [c for part in _chapters() for c in part]
    rows = _rows()
    names = [f"{ROMAN[p]}.{i + 1}" for p, part in enumerate(_chapters()) for i in range(len(part))]
    assert list(rows) == names
    times = _readme_times()
    assert len(times) == len(chapters)
    for name, (quick, full) in zip(names, times, strict=True):
        assert rows[name][3] == f"{quick} / {full}", f"{name}: the README gives {quick} / {full} CPU s"
    # the whole book: the README's total row (its per-chapter values are rounded)
    total = re.search(r"\*\*total\*\* \| \*\*(\d+)\*\* \|.*\| \*\*(\d+)\*\* \|", (ROOT / "README.md").read_text())
    assert f"{int(total.group(1)):,} CPU seconds in quick mode and {int(total.group(2)):,} in full mode" in PAGE


def test_every_exercise_is_listed_once():
    names = {f"{ROMAN[p]}.{i + 1}": c for p, part in enumerate(_chapters()) for i, c in enumerate(part)}
    for name, row in _rows().items():
        n = len(re.findall(r"\{exercise\}", (ROOT / f"{names[name]}.md").read_text()))
        listed = [int(x) for x in re.findall(r"(?:^|[:,] )(\d+)\b", re.sub(r"\([^)]*\)", "", row[4]))]
        assert sorted(listed) == list(range(1, n + 1)), f"{name}: {n} exercises, the page lists {listed}"
