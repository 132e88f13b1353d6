"""The reproduction report, rendered from a small ledger without a Sphinx build."""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))


def _claim(**kw):
    base = dict(work="chen2023eos", source="Fig 2(b)", statement="s", expected="e", measured="m", tolerance="t",
                status="reproduced", expect="reproduced", note="", chapter="eos-x", mode="quick", kind="paper",
                deviation="")
    return base | kw


def test_report_headline_deviations_coverage_and_downloads(tmp_path):
    import eld_book

    build = tmp_path / "_build"
    claims_dir = build / "claims"
    claims_dir.mkdir(parents=True)
    ledger = [_claim(), _claim(kind="book", source="Sec. 9"),
              _claim(source="Thm 1", status="not reproduced", expect="not reproduced", deviation="false as stated")]
    (claims_dir / "notebooks__p__01_x.json").write_text(json.dumps({"chapter": "eos-x", "title": "X",
                                                                     "claims": ledger}))
    app = SimpleNamespace(outdir=str(build / "html"), srcdir=str(ROOT),
                          env=SimpleNamespace(found_docs={"notebooks/p/01_x", "book/report"}),
                          builder=SimpleNamespace(get_relative_uri=lambda a, b: f"../{b}.html"))
    html = eld_book._report_html(app, "book/report")
    assert "checked <strong>2</strong> claims made by the papers" in html
    assert "1 the book's own results" in html
    assert "false as stated" in html and "#claim-eos-x-2" in html          # the deviation, linked to its row
    assert "Coverage:" in html and "Fig 2" in html                          # the manifest of chen2023eos
    assert 'href="../claims.json"' in html and 'href="../claims.csv"' in html
    exported = json.loads((build / "html" / "claims.json").read_text())
    assert len(exported) == 3 and exported[2]["deviation"] == "false as stated"
    assert (build / "html" / "claims.csv").read_text().count("\n") == 4
