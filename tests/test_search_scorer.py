"""The search's scorer (book/_ext/static/search_scorer.js, html_search_scorer in _config.yml): a Sphinx build puts it
into the search page's language_data.js, and it ranks an API entry that matches only through its module path below
the pages, while an entry whose own name matches keeps its score."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCORER = ROOT / "book" / "_ext" / "static" / "search_scorer.js"


def test_the_book_uses_the_scorer():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert (ROOT / cfg["sphinx"]["config"]["html_search_scorer"]) == SCORER


def test_a_sphinx_build_serves_the_scorer(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(f"html_search_scorer = {str(SCORER)!r}\n")
    (src / "index.rst").write_text("Title\n=====\n\nText.\n")
    out = tmp_path / "html"
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out)], check=True)
    assert "book/api" in (out / "_static" / "language_data.js").read_text()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_scores():
    results = [
        ["book/api_memorisation", "lib.parts.memorisation.mechanism.one_step_margins", "#x", "Python function", 20],
        ["book/api_memorisation", "lib.parts.memorisation", "#y", "Python module", 21],
        ["book/api_memorisation", "lib.memorisation_helper", "#z", "Python function", 16],
        ["notebooks/memorisation/01_noisy_recall", "Noisy in-context recall", "", None, 5],
    ]
    script = (
        f"globalThis.window = {{location: {{search: '?q=memorisation'}}}};\n{SCORER.read_text()}\n"
        f"console.log(JSON.stringify({json.dumps(results)}.map((r) => Scorer.score(r))));"
    )
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout
    # the function and the module match only through their path; the helper's own name matches; the page is a page
    assert json.loads(out) == [0, 21, 16, 5]
