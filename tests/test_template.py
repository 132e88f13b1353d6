"""The chapter template is not a page of the book (it is excluded from the table of contents on purpose), so the
book build never runs it; this test does, so that a new chapter copied from it starts from working code."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))


def test_template_executes_with_claims_and_a_static_widget(tmp_path):
    from execute_notebook import execute, widget_outputs_without_static

    nb, error = execute(ROOT / "notebooks" / "_template.md", mode="quick", claims_dir=tmp_path,
                        docname="notebooks/_template", timeout=120)
    assert error is None, error
    assert not widget_outputs_without_static(nb)
    payload = json.loads((tmp_path / "notebooks___template.json").read_text())
    assert payload["claims"] and all(c["status"] == c["expect"] for c in payload["claims"])
