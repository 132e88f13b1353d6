"""The chapter template is not a page of the book (it is excluded from the table of contents on purpose), so the
book build never runs it; these tests do, so that a new chapter copied from it starts from working code that passes
the book's checks of a chapter page (``scripts/page_checks.py``, the checks ``make test`` runs on every chapter)."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))


def test_template_builds_alone_and_passes_every_page_check(tmp_path):
    """The template's one-page build (``scripts/check_page.py``, warnings as errors) and every check of a chapter
    page on it, as ``check_page.py --checks`` runs them."""
    import check_page
    import page_checks

    docname, status = check_page.build_page(ROOT / "notebooks" / "_template.md", tmp_path / "build", mode="quick")
    assert status == 0, "the template's one-page build failed (warnings are errors)"
    page = page_checks.Page(tmp_path / "build" / "_build", docname, mode="quick")
    assert page_checks.run_checks(page) == []
    claims = page.claims()
    assert {c["kind"] for c in claims} == {"illustration"} and all(c["status"] == c["expect"] for c in claims)


def test_template_shows_the_conventions_a_chapter_follows():
    """What the page checks cannot see: the template shows a rate decided by a fitted exponent's interval, a
    claim's preconditions, sizes chosen by config.pick, and the chapter shape's sections."""
    text = (ROOT / "notebooks" / "_template.md").read_text()
    for needle in ("stats.power_law_exponent(", "claims.exponent_status(", "preconditions=", "config.pick(",
                   "claims.show_new()", "claims.show()", "caption=", "labels=", "::::{exercise}", "::::{solution}",
                   "## What differs from the paper", ":::{prf:theorem}"):
        assert needle in text, f"the template lost {needle!r}"
    assert text.count("mystnb:\n  figure:\n    caption:") >= 3


def test_template_executes_with_claims_and_a_static_widget(tmp_path):
    """scripts/execute_notebook.py's route (no Sphinx): the template runs, its claims as it expects."""
    from execute_notebook import execute, widget_outputs_without_static

    nb, error = execute(ROOT / "notebooks" / "_template.md", mode="quick", claims_dir=tmp_path,
                        docname="notebooks/_template", timeout=120)
    assert error is None, error
    assert not widget_outputs_without_static(nb)
    payload = json.loads((tmp_path / "notebooks___template.json").read_text())
    assert payload["claims"] and all(c["status"] == c["expect"] for c in payload["claims"])
