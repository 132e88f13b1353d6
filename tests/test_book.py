"""Checks that read the outputs of a book build: quick mode by `make test`, full mode by `make test-full`.

* every claim has the status its chapter expects, and every chapter of the table of contents recorded claims;
* every claim has a kind, every expected failure a deviation, and every item of the coverage manifests is covered
  by a claim of this build or explained (a claim that vanishes leaves a gap);
* the report page has its headline, deviations, coverage tables and downloads; the API pages render and a
  chapter's {py:func} link lands on them;
* every widget output carries the static form the HTML book shows;
* every chapter page of the HTML book shows its figures (not only the widgets' static frames);
* every chapter ran within its quick-mode budget;
* executing a chapter again, alone, gives the identical claims table and figures (determinism; the build
  executes chapters side by side).
"""

import json
import os
import re
import sys
import warnings
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "scripts"))

pytestmark = pytest.mark.book

#: quick-mode budget of a chapter in CPU seconds of its kernel (the diffusion chapter trains a denoiser and has more).
#: ``make test-full`` checks the full build (BOOK_MODE=full) against the full-mode budgets: a few minutes a chapter;
#: the diffusion chapter's full run is known to take longer (about 14 CPU-minutes, see the performance issue).
MODE = os.environ.get("BOOK_MODE", "quick")
# the diffusion chapter trains 6 U-Nets in quick mode (two signals x three seeds, two processes) and 12 in full mode
BUDGET = ({"notebooks/concept_learning/03_diffusion": 300.0} if MODE == "quick"
          # full mode also retrains the quick configuration three times as the authors' code trains it (about
          # 1,000 CPU s more than the 776 s measured before; not yet measured in a whole full build)
          else {"notebooks/concept_learning/03_diffusion": 2000.0,
                # the single pass of the GA-MLPs and the sGNN over 5 SBM settings in two processes: 337 s of CPU
                # in one full build, 407 s in the next on a busier machine (363 s wall)
                "notebooks/graph_networks/03_communities": 450.0})
DEFAULT_BUDGET = 60.0 if MODE == "quick" else 300.0
#: A budget is a report, not a verdict: CPU time grows under load (two kernels side by side, a busy machine: V.1 took
#: 408 CPU s in one full build and 294 s in another), so a chapter over its budget is reported as a warning and
#: fails only past this multiple of it, an overrun that load cannot explain.
TIMING_SLACK = 2.0


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


@pytest.mark.parametrize("docname", _toc_chapters())
def test_chapter_claims_have_expected_status(docname):
    claims = _claims_by_doc().get(docname)
    assert claims, f"{docname} recorded no claims"
    wrong = [f"{c['source']}: {c['statement']} -> {c['status']} (chapter expects {c['expect']}; "
             f"measured {c['measured']})" for c in claims if c["status"] not in (c["expect"], "checked in full mode")]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("docname", _toc_chapters())
def test_claims_are_labelled(docname):
    """Every claim has a kind; every expected failure says why."""
    for c in _claims_by_doc().get(docname, []):
        assert c.get("kind") in ("paper", "book", "illustration"), f"{c['source']}: no kind"
        assert c["expect"] == "reproduced" or c.get("deviation"), f"{c['source']}: expected failure without a reason"


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


def test_rates_and_exponents_decide_by_an_interval():
    """A rule that reads R^2 of a line cannot see an exponent: any claim whose rule mentions R^2 decides by the
    fitted exponent's interval as well (lib.stats.power_law_exponent, lib.claims.exponent_status)."""
    bad = [f"{c['chapter']}: {c['source']}: {c['tolerance']}" for cs in _claims_by_doc().values() for c in cs
           if re.search(r"R\^?2|R²|r_squared", c["tolerance"]) and "interval" not in c["tolerance"]]
    assert not bad, "rules that decide by R^2 alone:\n" + "\n".join(bad)


def test_inconclusive_claims_say_why():
    bad = [f"{c['chapter']}: {c['source']}" for cs in _claims_by_doc().values() for c in cs
           if c["status"] == "inconclusive" and not c.get("reason")]
    assert not bad, "inconclusive claims without a reason:\n" + "\n".join(bad)


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


@pytest.mark.parametrize("docname", _toc_chapters())
def test_widget_outputs_have_static_form(docname):
    import nbformat
    from execute_notebook import widget_outputs_without_static

    path = BUILD / "jupyter_execute" / f"{docname}.ipynb"
    assert path.exists(), f"no executed notebook for {docname}"
    nb = nbformat.read(path, as_version=4)
    assert not widget_outputs_without_static(nb)
    n_widgets = sum("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                    for cell in nb.cells for o in cell.get("outputs", []))
    assert n_widgets >= 1, f"{docname} has no widget"


@pytest.mark.parametrize("docname", _toc_chapters())
def test_no_dead_sliders(docname):
    """A static-form slider with a single position cannot move: a fixed parameter is shown as text."""
    page = (BUILD / "html" / f"{docname}.html").read_text()
    assert 'type="range" min="0" max="0"' not in page, f"{docname}: a static slider with one position"


@pytest.mark.parametrize("docname", _toc_chapters())
def test_no_stray_claim_reprs(docname):
    """A cell ending in ``claims.record(...)`` prints the Claim's repr; claims belong in the table."""
    import nbformat

    nb = nbformat.read(BUILD / "jupyter_execute" / f"{docname}.ipynb", as_version=4)
    stray = [i for i, cell in enumerate(nb.cells) for o in cell.get("outputs", [])
             if "".join(o.get("data", {}).get("text/plain", "")).startswith("Claim(")]
    assert not stray, f"{docname}: cells {stray} print a Claim repr"


#: figures (matplotlib outputs rendered as images) a chapter page must show at least, besides its widgets.
MIN_FIGURES = 3


@pytest.mark.parametrize("docname", _toc_chapters())
def test_chapter_page_shows_its_figures(docname):
    """A kernel without an inline backend (e.g. MPLBACKEND=Agg inherited from the shell) silently drops every
    ``plt.show()``; count the figure outputs of the executed notebook and the images of the rendered page."""
    import nbformat

    nb = nbformat.read(BUILD / "jupyter_execute" / f"{docname}.ipynb", as_version=4)
    figures = sum("image/png" in o.get("data", {}) for cell in nb.cells for o in cell.get("outputs", []))
    assert figures >= MIN_FIGURES, f"{docname}: {figures} figure outputs"
    page = (BUILD / "html" / f"{docname}.html").read_text()
    assert page.count('src="../../_images/') >= MIN_FIGURES, (
        f"{docname}: the rendered page shows fewer than {MIN_FIGURES} figures")
    assert "<p>|" not in page, f"{docname}: a Markdown table output was rendered as a paragraph"


@pytest.mark.parametrize("docname", _toc_chapters())
def test_chapter_within_quick_budget(docname):
    """The budget is on the CPU time of the chapter's kernel, which load on a shared machine barely moves; the wall
    time stays in the build's report (timings.json)."""
    timings = json.loads((BUILD / "timings.json").read_text())
    assert docname in timings, f"{docname} was not executed"
    budget = BUDGET.get(docname, DEFAULT_BUDGET)
    spent = timings[docname].get("cpu_s", timings[docname]["runtime_s"])
    message = f"{docname} used {spent} s of CPU ({timings[docname]['runtime_s']} s wall), budget {budget} s"
    assert spent <= TIMING_SLACK * budget, f"{message}: more than {TIMING_SLACK} times the budget"
    if spent > budget:
        warnings.warn(f"over budget: {message}", stacklevel=1)


@pytest.mark.parametrize("docname", _toc_chapters())
def test_widgets_speak_to_readers(docname):
    """Each static widget says in one line what to look for, and its controls are named in words, not in the
    Python names of the drawing function (no underscores)."""
    import re

    page = (BUILD / "html" / f"{docname}.html").read_text()
    n_widgets = page.count('class="eld-static-widget"')
    assert page.count('class="eld-widget-caption"') >= n_widgets, f"{docname}: a widget without a caption"
    labels = re.findall(r'class="eld-widget-label"[^>]*>([^<]*)</span>', page)
    assert not [x for x in labels if "_" in x], f"{docname}: controls named by Python names: {labels}"


@pytest.mark.parametrize("docname", _toc_chapters())
def test_figures_have_descriptive_alt_text(docname):
    """Every figure a chapter draws carries a description of what it shows (titles and axis labels), not the
    path of its image file."""
    import re

    page = (BUILD / "html" / f"{docname}.html").read_text()
    alts = [m.group(1) for m in re.finditer(r'<img alt="([^"]*)"[^>]*? src="(?:\.\./)+_images/', page)]
    assert alts, f"{docname}: no figure found"
    bad = [a for a in alts if not a.strip() or a.endswith(".png") or "_images" in a]
    assert not bad, f"{docname}: figures without a description: {bad[:3]}"


#: the book's text column in CSS pixels (lib.plots.COLUMN_WIDTH at 100 dpi) and the rounding of a tight bounding box
COLUMN_PX = 688
COLUMN_SLACK_PX = 12


def _page_images(docname):
    import re

    page = (BUILD / "html" / f"{docname}.html").read_text()
    return page, re.findall(r'<img alt="[^"]*"[^>]*? src="(?:\.\./)*(_images/[^"]+\.png)"', page)


@pytest.mark.parametrize("docname", _toc_chapters())
def test_figures_fit_the_column(docname):
    """Every figure is drawn at most as wide as the text column, so it is shown at full size and its labels keep
    their size (a figure twice as wide is shown at half size, tick labels at 5 px)."""
    import struct

    _, images = _page_images(docname)
    wide = {}
    for rel in images:
        with open(BUILD / "html" / rel, "rb") as fh:
            width = struct.unpack(">I", fh.read(24)[16:20])[0]
        if width > COLUMN_PX + COLUMN_SLACK_PX:
            wide[rel.rsplit("/", 1)[-1]] = width
    assert not wide, f"{docname}: figures wider than the {COLUMN_PX} px column: {wide}"


@pytest.mark.parametrize("docname", _toc_chapters())
def test_figures_have_numbered_captions(docname):
    """Every figure of a chapter sits in a numbered figure with a caption (MyST-NB figure metadata)."""
    import re

    page, images = _page_images(docname)
    captioned = re.findall(r'<figure[^>]*>\s*<img[^>]*?src="(?:\.\./)*(_images/[^"]+\.png)"[^>]*>\s*'
                           r'<figcaption>\s*<p><span class="caption-number">', page)
    missing = sorted(set(images) - set(captioned))
    assert not missing, f"{docname}: {len(missing)} of {len(images)} figures without a numbered caption"


@pytest.mark.parametrize("docname", _toc_chapters())
def test_chapter_resources_reported(docname):
    """The build's report carries each chapter's peak memory and, where it has a static widget, the time of its
    widget callback (speed targets are the benchmark's business: this only checks they are measured)."""
    timings = json.loads((BUILD / "timings.json").read_text())
    assert timings[docname].get("peak_rss_mb", 0) > 0, f"{docname}: no peak memory in timings.json"
    page = (BUILD / "html" / f"{docname}.html").read_text()
    if "data-eld-static" in page:
        assert "widget_median_s" in timings[docname], f"{docname}: its widget's callback time was not recorded"


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
                  if timings[d].get("cpu_s", timings[d]["runtime_s"]) <= BUDGET.get(d, DEFAULT_BUDGET)
                  and d not in BUDGET)
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
