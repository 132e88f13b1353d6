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
              _claim(source="Thm 1", status="not reproduced", expect="not reproduced", deviation="false as stated"),
              _claim(source="Fig 3", status="inconclusive", expect="inconclusive", deviation="the model cannot learn",
                     reason="precondition failed: the model beats the mean predictor", rule_after_run=""),
              _claim(source="Fig 4", kind="book", rule_after_run="the 5 % bound was set after a 2 % run")]
    (claims_dir / "notebooks__p__01_x.json").write_text(json.dumps({"chapter": "eos-x", "title": "X",
                                                                     "claims": ledger}))
    app = SimpleNamespace(outdir=str(build / "html"), srcdir=str(ROOT),
                          env=SimpleNamespace(found_docs={"notebooks/p/01_x", "book/report"}),
                          builder=SimpleNamespace(get_relative_uri=lambda a, b: f"../{b}.html"))
    html = eld_book._report_html(app, "book/report")
    assert "recorded <strong>3</strong> claims made by the papers" in html
    assert "decided <strong>2</strong> of them" in html and 'could not decide <a href="#could-not-decide">1</a>' in html
    assert "2 results of the book's own" in html
    assert 'id="could-not-decide"' in html and "beats the mean predictor" in html  # the reason, listed apart
    assert 'id="rules-after-a-run"' in html and "set after a 2 % run" in html
    # coverage by evidence: Fig 2 decided by a paper claim, Fig 3 by an inconclusive one only, Fig 4 by a book result
    assert "decided by a claim of the paper" in html and "only inconclusive claims of the paper" in html
    assert "only the book's own results or illustrations" in html
    assert "false as stated" in html and "#claim-eos-x-2" in html          # the deviation, linked to its row
    assert "Coverage of the" in html and "Fig 2" in html                          # the manifest of chen2023eos
    assert 'href="../claims.json"' in html and 'href="../claims.csv"' in html
    exported = json.loads((build / "html" / "claims.json").read_text())
    assert len(exported) == 5 and exported[2]["deviation"] == "false as stated"
    assert exported[3]["reason"].startswith("precondition failed") and exported[4]["rule_after_run"]
    assert (build / "html" / "claims.csv").read_text().count("\n") == 6
