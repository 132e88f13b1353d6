"""Checks of the HTML book (marker `book`: they read `_build/html`, run by `make test` after the build), and of
the sources that feed it.

* no page title (browser tab, bookmarks, search results) carries raw TeX;
* MathJax is served from the book itself (math renders without network), never from under `_static/` of the
  sources (jupyter-book would add every `.js` there to every page);
* every page has the favicon and a valid default colour mode;
* the execution statistics page lists every chapter;
* the README and the book's pages name only the repository of `_config.yml` (each chapter's repository and Binder
  buttons are checked with the chapter's other page checks, scripts/page_checks.py).
"""

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO = urlparse(CONFIG["repository"]["url"]).path.strip("/")  # owner/name


def _pages():
    if not (HTML / "index.html").exists():
        pytest.skip("no book build found: run `make test`")
    return sorted(p for p in HTML.rglob("*.html") if "_static" not in p.parts)


def _chapters():
    from test_book import _toc_chapters

    return _toc_chapters()


@pytest.mark.book
def test_titles_carry_no_tex():
    bad = {}
    for page in _pages():
        m = re.search(r"<title>(.*?)</title>", page.read_text(encoding="utf8"), re.S)
        if m and re.search(r"[$\\]", m.group(1)):
            bad[str(page.relative_to(HTML))] = m.group(1).strip()
    assert not bad, f"raw TeX in page titles (write the heading without TeX): {bad}"


@pytest.mark.book
def test_mathjax_is_served_by_the_book():
    setting = CONFIG["sphinx"]["config"]["mathjax_path"]
    assert "://" not in setting
    assert (HTML / "_static" / setting).exists(), "MathJax was not copied into the build (book/_ext/eld_mathjax.py)"
    pages_with_math = 0
    for page in _pages():
        text = page.read_text(encoding="utf8")
        for src in re.findall(r'<script[^>]*src="([^"]*mathjax[^"]*)"', text, re.I):
            pages_with_math += 1
            assert "://" not in src, f"{page.relative_to(HTML)} loads MathJax from {src}"
            assert (page.parent / src.split("?")[0]).resolve().exists(), f"{page.relative_to(HTML)}: {src} missing"
    assert pages_with_math >= len(_chapters())


def test_no_javascript_under_the_sources_static_folder():
    static = ROOT / "_static"
    assert not static.exists() or not list(static.rglob("*.js")), "jupyter-book adds these to every page"


@pytest.mark.book
def test_every_page_has_a_favicon_and_a_default_colour_mode():
    for page in _pages():
        text = page.read_text(encoding="utf8")
        if 'http-equiv="Refresh"' in text or "http-equiv=\"refresh\"" in text:
            continue  # the redirect of index.html
        assert re.search(r'<link rel="icon" href="[^"]*favicon\.svg"', text), page.relative_to(HTML)
        mode = re.search(r'data-default-mode="([^"]*)"', text)
        assert mode and mode.group(1) in ("auto", "light", "dark"), page.relative_to(HTML)


@pytest.mark.book
def test_execution_statistics_list_every_chapter():
    page = (HTML / "book" / "execution.html").read_text(encoding="utf8")
    table = page[page.index("<table"):page.index("</table>")]
    for chapter in _chapters():
        assert Path(chapter).name in table, f"{chapter} is missing from the execution statistics"
    assert "❌" not in table, "a chapter failed to execute"


def test_readme_and_pages_name_the_configured_repository():
    for path in [ROOT / "README.md", *sorted((ROOT / "book").glob("*.md"))]:
        named = set(re.findall(r"(?:github\.com|mybinder\.org/v2/gh)/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)",
                               path.read_text(encoding="utf8")))
        assert named <= {REPO}, f"{path.name} names another repository than _config.yml: {named - {REPO}}"
    readme = (ROOT / "README.md").read_text(encoding="utf8")
    assert f"mybinder.org/v2/gh/{REPO}/" in readme, "the README has no Binder badge for the configured repository"

