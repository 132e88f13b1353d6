"""The book's own pages agree with the table of contents: every chapter a page links exists and is in the book, and
the introduction names every chapter of Part VI (it once said Part VI had no graph-transformer or in-context
chapters, long after both were in the book)."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _toc_files() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = set()

    def walk(entries):
        for e in entries:
            if "file" in e:
                found.add(e["file"])
            walk(e.get("sections", []))
            walk(e.get("chapters", []))

    walk([c for part in toc["parts"] for c in part["chapters"]])
    return found


def _chapter_links(page: Path) -> set[str]:
    return {m.group(1) for m in re.finditer(r"\]\(\.\./(notebooks/[^)#]+)\.md", page.read_text())}


def test_every_chapter_a_page_links_is_in_the_book():
    toc = _toc_files()
    for page in sorted((ROOT / "book").glob("*.md")):
        stale = _chapter_links(page) - toc
        assert not stale, f"{page.name} links chapters that are not in _toc.yml: {sorted(stale)}"


def test_the_introduction_names_every_chapter_of_part_vi():
    part_vi = {f for f in _toc_files() if f.startswith("notebooks/generalisation/")}
    assert len(part_vi) >= 6
    missing = part_vi - _chapter_links(ROOT / "book" / "intro.md")
    assert not missing, f"book/intro.md does not name these Part VI chapters: {sorted(missing)}"
    assert "no chapters" not in (ROOT / "book" / "intro.md").read_text()


def _parts() -> list[tuple[str, list[str]]]:
    """(part page, its chapters) in the order of _toc.yml."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [(c["file"], [s["file"] for s in c["sections"]]) for part in toc["parts"] if part.get("numbered")
            for c in part["chapters"] if c.get("sections")]


def test_every_part_page_links_each_of_its_chapters():
    for page, chapters in _parts():
        missing = set(chapters) - _chapter_links(ROOT / f"{page}.md")
        assert not missing, f"{page}.md has no row for {sorted(missing)} (its chapter table)"


def test_every_part_package_lists_each_chapter_module():
    """The chapter table of ``lib/parts/<part>/__init__.py`` orders the part's API page (scripts/api_pages.py)."""
    for _, chapters in _parts():
        for chapter in chapters:
            part, stem = chapter.split("/")[1:]
            table = (ROOT / "lib" / "parts" / part / "__init__.py").read_text()
            module = f"lib.parts.{part}.{stem.split('_', 1)[1]}`"
            assert module in table, f"lib/parts/{part}/__init__.py: no row for {chapter} and {module[:-1]}"
