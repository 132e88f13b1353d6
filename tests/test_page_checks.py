"""The checks of one chapter's page (``scripts/page_checks.py``) on small hand-made builds: each fails on the fault
it exists for, with a message that names the fix, and the book's post-build tests run all of them."""

import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import page_checks  # noqa: E402

DOC = "notebooks/part/01_x"
FIGURE = ('<figure class="align-default" id="fig-{i}">\n<img alt="A plot of y against x" '
          'src="../../_images/f{i}.png" />\n<figcaption>\n<p><span class="caption-number">Fig. {i} </span>'
          '<span class="caption-text">A plot.</span></p>\n</figcaption>\n</figure>')
PNG_HEADER = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + (600).to_bytes(4, "big") + (300).to_bytes(4, "big")


def _build(tmp_path, *, figures=3, captioned=3, widget_caption=True, status="reproduced", cpu=10.0):
    build = tmp_path / "_build"
    (build / "html" / "notebooks" / "part").mkdir(parents=True)
    (build / "html" / "_images").mkdir()
    body = []
    for i in range(figures):
        (build / "html" / "_images" / f"f{i}.png").write_bytes(PNG_HEADER)
        body.append(FIGURE.format(i=i) if i < captioned else
                    f'<img alt="A plot of y against x" src="../../_images/f{i}.png" />')
    body.append('<div class="eld-static-widget" data-eld-static="1">'
                + ('<p class="eld-widget-caption">Look.</p>' if widget_caption else "")
                + '<span class="eld-widget-label">power p</span></div>')
    html = ('<html data-default-mode="auto"><head><title>A chapter</title><link rel="icon" href="../../_static/'
            'favicon.svg"></head><body>' + "\n".join(body)
            + '<a href="https://github.com/{r}">r</a><a href="https://mybinder.org/v2/gh/{r}/{b}?x">b</a>'
            "</body></html>")
    repo, branch = page_checks.configured_repository()
    (build / "html" / f"{DOC}.html").write_text(html.replace("{r}", repo).replace("{b}", branch))
    nb = nbformat.v4.new_notebook()
    widget = {"application/vnd.jupyter.widget-view+json": {}, "text/html": _static_marker()}
    nb.cells = [nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("display_data", {"image/png": "x"})])
                for _ in range(figures)]
    nb.cells.append(nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("display_data", widget)]))
    (build / "jupyter_execute" / "notebooks" / "part").mkdir(parents=True)
    nbformat.write(nb, build / "jupyter_execute" / f"{DOC}.ipynb")
    (build / "claims").mkdir()
    claim = dict(source="Fig 1", statement="s", expected="1", measured="1", tolerance="0.1", status=status,
                 expect="reproduced", kind="paper")
    (build / "claims" / (DOC.replace("/", "__") + ".json")).write_text(json.dumps({"claims": [claim]}))
    (build / "timings.json").write_text(json.dumps({DOC: {"runtime_s": cpu, "cpu_s": cpu, "peak_rss_mb": 300.0,
                                                          "widget_median_s": 0.1}}))
    return page_checks.Page(build, DOC, mode="quick")


def _static_marker():
    from lib.widgets import STATIC_MARKER

    return f"<div>{STATIC_MARKER}</div>"


def test_a_sound_page_passes_every_check(tmp_path):
    assert page_checks.run_checks(_build(tmp_path)) == []


@pytest.mark.parametrize("fault, check, words", [
    (dict(figures=2, captioned=2), "page_shows_its_figures", "fewer than 3"),
    (dict(captioned=2), "figures_have_numbered_captions", "1 of 3 figures without a numbered caption"),
    (dict(widget_caption=False), "widgets_speak_to_readers", "a widget without a caption"),
    (dict(status="not reproduced"), "claims_have_expected_status", "chapter expects reproduced"),
    (dict(cpu=130.0), "within_budget", "more than 2.0 times the budget"),
])
def test_each_fault_fails_its_check(tmp_path, fault, check, words):
    failed = page_checks.run_checks(_build(tmp_path, **fault))
    assert len(failed) == 1 and failed[0].startswith(f"{check}:") and words in failed[0], failed


def test_over_budget_within_the_slack_is_a_warning(tmp_path, capsys):
    assert page_checks.run_checks(_build(tmp_path, cpu=90.0)) == []
    assert "over budget" in capsys.readouterr().out


def test_budget_by_chapter_and_mode():
    assert page_checks.budget("notebooks/concept_learning/03_diffusion", "quick") == 300.0
    assert page_checks.budget("notebooks/part/01_x", "full") == page_checks.DEFAULT_BUDGET["full"]
    with pytest.raises(ValueError, match="mode"):
        page_checks.budget("notebooks/part/01_x", "fast")


def test_the_book_runs_every_page_check_on_every_chapter():
    text = (ROOT / "tests" / "test_book.py").read_text()
    assert 'parametrize("check", page_checks.CHECKS' in text
    names = {c.__name__ for c in page_checks.CHECKS}
    assert len(names) == len(page_checks.CHECKS)
    public = {n for n, f in vars(page_checks).items() if callable(f) and getattr(f, "__module__", "") ==
              "page_checks" and not n.startswith("_") and n[0].islower()}
    helpers = {"budget", "run_checks", "configured_repository"}
    assert public - helpers == names, "a check function not listed in page_checks.CHECKS"
