"""Checks that read the outputs of a book build: quick mode by `make test`, full mode by `make test-full`.

* every check of one chapter's page (``scripts/page_checks.py``, which ``scripts/check_page.py --checks`` runs on
  a one-page build) on every chapter: its claims recorded with the status it expects, labelled, inconclusive ones
  with a reason, R^2 rules with an interval; every widget output with the static form the HTML book shows, a
  caption and named controls; at least three figures shown, each captioned, described and as wide as the column
  at most; the chapter within its CPU budget, its resources reported; its title, favicon and links;
* every item of the coverage manifests is covered by a claim of this build or explained (a claim that vanishes
  leaves a gap), and decided by a paper claim or says why not;
* the report page has its headline, deviations, coverage tables and downloads; the API pages render and a
  chapter's {py:func} link lands on them;
* executing a chapter again, alone, gives the identical claims table and figures (determinism; the build
  executes chapters side by side).
"""

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "scripts"))

pytestmark = pytest.mark.book

MODE = os.environ.get("BOOK_MODE", "quick")
#: the checks of one chapter's page and the chapters' CPU budgets: scripts/page_checks.py (check_page.py --checks
#: runs the same checks on a one-page build)
import page_checks  # noqa: E402


def _toc_chapters():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    out = []

    def walk(entries):
        for e in entries:
            if "file" in e and e["file"].startswith("notebooks/"):
                out.append(e["file"])
            walk(e.get("sections", []))
            walk(e.get("chapters", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    return out


def _claims_by_doc():
    from eld_book import load_claims

    if not (BUILD / "claims").exists():
        pytest.skip("no book build found: run `make test`")
    by_doc = {}
    for c in load_claims(BUILD / "claims"):
        by_doc.setdefault(c["docname"], []).append(c)
    return by_doc


def test_build_mode_is_the_one_checked():
    claims = [c for cs in _claims_by_doc().values() for c in cs]
    assert claims and {c["mode"] for c in claims} == {MODE}


@pytest.mark.parametrize("check", page_checks.CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("docname", _toc_chapters())
def test_chapter_page(docname, check):
    """Every check of one chapter's page (scripts/page_checks.py: claims, widgets, figures, budget, resources,
    title, links) on every chapter of the table of contents."""
    if not (BUILD / "claims").exists():
        pytest.skip("no book build found: run `make test`")
    check(page_checks.Page(BUILD, docname, mode=MODE))


def test_every_manifest_item_is_covered_or_explained():
    """The coverage manifests against this build's ledger: a claim that vanished leaves a gap."""
    from lib.claims import coverage, load_manifests

    claims = [c for cs in _claims_by_doc().values() for c in cs]
    works = {c["work"] for c in claims}
    gaps = []
    for manifest in load_manifests(ROOT / "book" / "coverage").values():
        if manifest["work"] not in works:
            continue
        gaps += [f"{manifest['work']}: {r['id']}" for r in coverage(manifest, claims)
                 if not r["covered"] and not r["explained"]]
    assert not gaps, "items neither covered by a claim nor explained:\n" + "\n".join(gaps)


def test_every_manifest_item_is_decided_by_the_paper_or_says_why_not():
    """Coverage by evidence: an item named only by the book's own results or illustrations must say, in its manifest
    entry, why no claim of the paper decides it (an item whose paper claims are inconclusive carries their reasons)."""
    from lib.claims import coverage, load_manifests

    claims = [c for cs in _claims_by_doc().values() for c in cs]
    works = {c["work"] for c in claims}
    weak = []
    for manifest in load_manifests(ROOT / "book" / "coverage").values():
        if manifest["work"] in works:
            weak += [f"{manifest['work']}: {r['id']} (only {', '.join(c['kind'] for c in r['claims'])} claims)"
                     for r in coverage(manifest, claims) if r["by"] == "illustrated" and not r["explained"]]
    assert not weak, "items covered only by book results or illustrations, with no reason given:\n" + "\n".join(weak)


def test_no_covered_manifest_item_says_it_is_not_covered():
    """A manifest note "not yet covered" goes when a claim names the item: the report must not contradict itself."""
    from lib.claims import coverage, load_manifests

    claims = [c for cs in _claims_by_doc().values() for c in cs]
    stale = []
    for manifest in load_manifests(ROOT / "book" / "coverage").values():
        stale += [f"{manifest['work']}: {r['id']} (claims: {', '.join(c['source'] for c in r['claims'])})"
                  for r in coverage(manifest, claims)
                  if r["covered"] and "not yet covered" in (r["explained"] or "")]
    assert not stale, "manifest items covered by claims but still explained as not covered:\n" + "\n".join(stale)


def test_report_page_headline_deviations_coverage_and_downloads():
    page = (BUILD / "html" / "book" / "report.html").read_text()
    assert "claims made by the papers" in page and 'id="known-deviations"' in page and "Coverage of the" in page
    for name in ("claims.json", "claims.csv"):
        assert f'href="../{name}"' in page and (BUILD / "html" / name).exists()
    assert len(json.loads((BUILD / "html" / "claims.json").read_text())) == sum(
        len(cs) for cs in _claims_by_doc().values())


def test_api_pages_render_and_chapters_link_to_them():
    api = (BUILD / "html" / "book" / "api_concept_learning.html").read_text()
    target = "lib.parts.concept_learning.diffusion.train_ensemble"
    assert f'id="{target}"' in api
    chapter = (BUILD / "html" / "notebooks" / "concept_learning" / "03_diffusion.html").read_text()
    assert f"api_concept_learning.html#{target}" in chapter


def _repeat_chapters():
    """The chapters ``test_build_is_deterministic`` executes again: the ``ELD_REPEAT_CHAPTERS`` cheapest (default
    3) and a rotating group of ``ELD_REPEAT_ROTATE`` others (default 1), picked by the day so that successive
    days' runs cycle through every chapter of the book within its default CPU budget (each trains with seeded
    randomness in quick mode; the diffusion chapter, over four minutes, only with ``ELD_REPEAT_CHAPTERS=all``), so that
    ``make test`` stays within its time; ``ELD_REPEAT_CHAPTERS=all`` repeats them all. The cost is the rerun
    chapters' uncached quick runtimes (the rerun does not read the cache): one to two minutes for the default
    four."""
    import datetime

    path = BUILD / "timings.json"
    if not path.exists():
        return []
    timings = json.loads(path.read_text())
    chapters = [d for d in _toc_chapters() if d in timings]
    setting = os.environ.get("ELD_REPEAT_CHAPTERS", "3").strip().lower()
    if setting == "all":
        return chapters
    cheapest = sorted(chapters, key=lambda d: timings[d]["runtime_s"])[:int(setting)]
    rest = sorted(d for d in set(chapters) - set(cheapest)
                  if timings[d].get("cpu_s", timings[d]["runtime_s"]) <= page_checks.budget(d, MODE)
                  and d not in page_checks.BUDGET[MODE])
    k = int(os.environ.get("ELD_REPEAT_ROTATE", "1"))
    if not rest or k <= 0:
        return cheapest
    start = (datetime.date.today().toordinal() * k) % len(rest)
    return cheapest + [rest[(start + i) % len(rest)] for i in range(min(k, len(rest)))]


@pytest.mark.parametrize("docname", _repeat_chapters())
def test_build_is_deterministic(docname, tmp_path, monkeypatch):
    """Executing a chapter again in the same mode, alone (the build executes chapters side by side) and with the
    cache switched off (so that every training runs again rather than being read back), gives the identical claims
    table and the identical figures."""
    import nbformat
    from execute_notebook import execute

    monkeypatch.setenv("ELD_NO_CACHE", "1")
    first = json.loads((BUILD / "claims" / (docname.replace("/", "__") + ".json")).read_text())
    nb, error = execute(ROOT / f"{docname}.md", mode=MODE, claims_dir=tmp_path, docname=docname, timeout=1800)
    assert error is None, error
    built = nbformat.read(BUILD / "jupyter_execute" / f"{docname}.ipynb", as_version=4)
    figures = lambda notebook: [out["data"]["image/png"] for cell in notebook.cells  # noqa: E731
                                for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    assert figures(built) == figures(nb) != [], f"{docname}: the figures differ from a second execution"
    second = json.loads((tmp_path / (docname.replace("/", "__") + ".json")).read_text())
    strip = lambda payload: [{k: c[k] for k in ("source", "statement", "expected", "measured", "status", "kind")}
                             for c in payload["claims"]]
    assert strip(first) == strip(second)
