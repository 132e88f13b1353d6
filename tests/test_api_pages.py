"""The API pages are written by ``scripts/api_pages.py``, never by hand: the module list of ``book/api.md`` (the
generic top level of ``lib`` and its shared layers) and its links to the part pages are generated and current."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import api_pages  # noqa: E402


def test_the_shared_page_is_current():
    text = (ROOT / "book" / "api.md").read_text()
    assert api_pages.shared_page(text) == text, "book/api.md is out of date: run python scripts/api_pages.py"


def test_every_module_outside_the_parts_has_a_section_and_every_part_a_link():
    text = (ROOT / "book" / "api.md").read_text()
    lib = ROOT / "lib"
    for path in sorted(lib.rglob("*.py")):
        rel = path.relative_to(lib)
        if rel.parts[0] == "parts" or path.stem.startswith("_"):
            continue
        mod = ".".join(("lib", *rel.with_suffix("").parts))
        assert f".. automodule:: {mod}\n" in text, f"{mod} has no section on book/api.md"
    for part in api_pages.TITLES:
        assert f"(api_{part}.md)" in text and (ROOT / "book" / f"api_{part}.md").exists()


def test_a_stale_list_is_rewritten_and_the_prose_kept():
    text = (ROOT / "book" / "api.md").read_text()
    stale = text.replace("## `lib.success`", "## `lib.gone`")
    stale = "Some prose of the page's own.\n\n" + stale + "\nMore prose after the list.\n"
    fresh = api_pages.shared_page(stale)
    assert "lib.gone" not in fresh and "## `lib.success`" in fresh
    assert fresh.startswith("Some prose of the page's own.") and fresh.endswith("More prose after the list.\n")


def test_a_page_without_its_markers_is_refused():
    with pytest.raises(ValueError, match="marker"):
        api_pages.shared_page("# API\n\nno markers\n")
