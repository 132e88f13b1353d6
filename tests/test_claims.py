"""The claims ledger: records, kinds, deviations, full-mode-only claims, chapter set-up and coverage manifests."""

import json
from pathlib import Path

import pytest

from lib import chapter, claims

ROOT = Path(__file__).resolve().parent.parent
BASE = dict(source="Thm 1", statement="s", expected="1", measured="1.0", tolerance="0")


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("ELD_CLAIMS_DIR", str(tmp_path))
    monkeypatch.delenv("ELD_DOCNAME", raising=False)
    claims.chapter("unit-test", "Unit test chapter", work="chen2023eos")
    return tmp_path


def test_claims_written_and_validated(ledger):
    c = claims.record(**BASE, status=claims.status(True), kind="paper")
    assert c.as_expected and c.work == "chen2023eos" and c.kind == "paper"
    payload = json.loads((ledger / "unit-test.json").read_text())
    assert payload["claims"][0]["status"] == "reproduced"
    assert payload["claims"][0]["kind"] == "paper"
    assert claims.status(False, partly=True) == "partly reproduced"
    assert claims.status(False) == "not reproduced"
    html = claims.show()._repr_html_()
    assert html.index("status") < html.index("claim</th>")  # the status column comes first
    with pytest.raises(ValueError, match="work"):
        claims.record(**BASE, work="nobody2020", status="reproduced", kind="paper")
    with pytest.raises(ValueError, match="status"):
        claims.record(**BASE, status="kind of", kind="paper")
    with pytest.raises(ValueError, match="kind"):
        claims.record(**BASE, status="reproduced", kind="opinion")
    with pytest.raises(TypeError):
        claims.record(**BASE, status="reproduced")  # kind is required
    with pytest.raises(ValueError, match="slug"):
        claims.chapter("a/b", "bad")


def test_expected_failure_needs_a_deviation(ledger):
    with pytest.raises(ValueError, match="deviation"):
        claims.record(**BASE, status="not reproduced", kind="paper", expect="not reproduced")
    with pytest.raises(ValueError, match="deviation"):
        claims.record(**BASE, status="reproduced", kind="paper", deviation="no reason to have one")
    c = claims.record(**BASE, status="not reproduced", kind="paper", expect="not reproduced",
                      deviation="the statement is false for quadratics")
    assert c.as_expected and c.deviation


def test_full_mode_only_claims(ledger, monkeypatch):
    monkeypatch.setenv("BOOK_MODE", "quick")
    c = claims.record(**BASE, status="not reproduced", kind="paper", full_mode_only=True)
    assert c.status == claims.FULL_ONLY and c.as_expected and c.mode == "quick"
    monkeypatch.setenv("BOOK_MODE", "full")
    c = claims.record(**BASE, status="not reproduced", kind="paper", full_mode_only=True)
    assert c.status == "not reproduced" and not c.as_expected


def test_chapter_setup_sets_work_threads_and_dtype(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("ELD_CLAIMS_DIR", str(tmp_path))
    default = torch.get_default_dtype()
    try:
        rng = chapter.setup("unit-setup", "Set-up", "wang2024induction", float64=True, seed=3)
        assert torch.get_default_dtype() == torch.float64 and torch.get_num_threads() == 1
        assert rng.integers(1 << 30) == __import__("numpy").random.default_rng(3).integers(1 << 30)
        c = claims.record(**BASE, status="reproduced", kind="book")
        assert c.work == "wang2024induction"
        for bad in (dict(work="x"), dict(threads=0), dict(float64="yes"), dict(seed=-1)):
            kw = dict(slug="s", title="t", work="chen2023eos") | bad
            with pytest.raises(ValueError, match=next(iter(bad))):
                chapter.setup(kw.pop("slug"), kw.pop("title"), kw.pop("work"), **kw)
    finally:
        torch.set_default_dtype(default)


@pytest.mark.parametrize(
    "source, item, hit",
    [("Fig 2(c)", "Fig 2", True), ("Fig 12", "Fig 2", False), ("Fig 2.1", "Fig 2", False),
     ("Figs. 8-10(c)", "Fig 9", True), ("Fig 9/10(d)", "Fig 10", True), ("Eq. (4), Thm 2", "Eq. 4", True),
     ("Theorem 4.4 (proof)", "Thm 4.4", True), ("Thm 4.4", "Thm 4", False), ("Prop 5-7", "Proposition 6", True),
     ("Lemma 5.4 / App. C.2", "App. C.2", True), ("App. C.2", "App. C", False)],
)
def test_source_mentions(source, item, hit):
    assert claims.source_mentions(source, item) is hit


def test_coverage_rows(tmp_path):
    path = tmp_path / "m.yml"
    path.write_text("work: chen2023eos\nitems:\n  - {id: Fig 2}\n  - {id: Fig 3, explained: a drawing}\n"
                    "  - {id: Thm 9, match: [Theorem 9, App. Z]}\n")
    manifest = claims.load_manifest(path)
    ledger = [dict(work="chen2023eos", source="Fig 2(b)", chapter="a"), dict(work="yang2025sim", source="Fig 3")]
    rows = {r["id"]: r for r in claims.coverage(manifest, ledger)}
    assert rows["Fig 2"]["covered"] and not rows["Fig 3"]["covered"] and rows["Fig 3"]["explained"]
    assert not rows["Thm 9"]["covered"] and not rows["Thm 9"]["explained"]
    path.write_text("work: chen2023eos\nitems:\n  - {id: Fig 2}\n  - {id: Fig 2}\n")
    with pytest.raises(ValueError, match="twice"):
        claims.load_manifest(path)


@pytest.mark.parametrize("path", sorted((ROOT / "book" / "coverage").glob("*.yml")), ids=lambda p: p.stem)
def test_manifests_are_valid(path):
    manifest = claims.load_manifest(path)
    assert manifest["work"] == path.stem.split("_ch")[0]


def test_manifests_of_one_work_merge_and_reject_repeated_ids(tmp_path):
    (tmp_path / "chen2023eos.yml").write_text("work: chen2023eos\ntitle: T\nitems:\n  - {id: Fig 2}\n")
    (tmp_path / "chen2023eos_ch3.yml").write_text("work: chen2023eos\nitems:\n  - {id: Fig 3}\n")
    merged = claims.load_manifests(tmp_path)
    assert list(merged) == ["chen2023eos"] and merged["chen2023eos"]["title"] == "T"
    assert [i["id"] for i in merged["chen2023eos"]["items"]] == ["Fig 2", "Fig 3"]
    (tmp_path / "chen2023eos_ch4.yml").write_text("work: chen2023eos\nitems:\n  - {id: Fig 3}\n")
    with pytest.raises(ValueError, match="already listed"):
        claims.load_manifests(tmp_path)



def test_show_new_shows_each_claim_once_with_a_unique_anchor(ledger):
    claims.record(**BASE, status="reproduced", kind="paper")
    claims.record(**BASE, status="reproduced", kind="book")
    first = claims.show_new()._repr_html_()
    claims.record(**BASE, status="reproduced", kind="paper")
    second = claims.show_new()._repr_html_()
    assert first.count('id="claim-unit-test-') == 2 and 'id="claim-unit-test-2"' in second
    assert claims.show_new().claims == []
    assert 'id="claim-' not in claims.show()._repr_html_()  # every row was shown under its figure already


def test_claims_tables_typeset_inline_math():
    assert claims.tex_html("rate $\\eta<2$ & x") == "rate \\(\\eta&lt;2\\) &amp; x"
    row = dict(BASE, status="reproduced", kind="paper", expect="reproduced", chapter="c",
               statement="sharpness $2/\\eta$")
    out = claims.table_html([row])
    assert "mathjax_process" in out and "\\(2/\\eta\\)" in out and "$" not in out.split("</style>")[1]


def test_inconclusive_claims_need_a_reason_and_preconditions_decide(ledger):
    with pytest.raises(ValueError, match="reason"):
        claims.record(**BASE, status="inconclusive", kind="paper")
    with pytest.raises(ValueError, match="reason"):
        claims.record(**BASE, status="reproduced", kind="paper", reason="a caveat, not a reason")
    c = claims.record(**BASE, status="inconclusive", kind="paper", reason="three points cannot fit an exponent")
    assert c.status == claims.INCONCLUSIVE and not c.as_expected and "three points" in c.reason
    # a failed precondition overrides the rule's verdict: the claim could not be decided
    pre = {"the model beats the mean predictor (relative MSE 0.95 < 0.5)": False, "10 seeds": True}
    c = claims.record(**BASE, status="not reproduced", kind="paper", preconditions=pre, expect="inconclusive",
                      deviation="at this size the model does not learn")
    assert c.status == "inconclusive" and c.as_expected
    assert c.reason == "precondition failed: the model beats the mean predictor (relative MSE 0.95 < 0.5)"
    assert c.preconditions == [{"what": k, "held": v} for k, v in pre.items()]
    c = claims.record(**BASE, status="not reproduced", kind="paper", preconditions={"10 seeds": True})
    assert c.status == "not reproduced" and c.reason == ""
    for bad in ({"": True}, {"x": "yes"}, ["x"]):
        with pytest.raises(ValueError, match="preconditions"):
            claims.record(**BASE, status="reproduced", kind="paper", preconditions=bad)
    assert "Could not decide" in claims.show()._repr_html_()


def test_rules_written_after_a_run_are_recorded(ledger):
    c = claims.record(**BASE, status="reproduced", kind="paper", rule_after_run="5 % set after a first run at 2 %")
    payload = json.loads((ledger / "unit-test.json").read_text())
    assert c.rule_after_run and payload["claims"][0]["rule_after_run"].startswith("5 %")
    assert "Rule written after a run" in claims.show()._repr_html_()
    with pytest.raises(ValueError, match="rule_after_run"):
        claims.record(**BASE, status="reproduced", kind="paper", rule_after_run=True)


def test_exponent_status_passes_the_predicted_law_and_fails_twice_it():
    import numpy as np

    from lib.stats import power_law_exponent

    rng = np.random.default_rng(0)
    x = np.geomspace(1, 16, 6)
    noise = np.exp(0.05 * rng.standard_normal((6, 8)))
    right = power_law_exponent(x, 2.0 * x[:, None] ** -2 * noise)
    doubled = power_law_exponent(x, 2.0 * x[:, None] ** -4 * noise)
    state, reason, rule = claims.exponent_status(right, -2)
    assert state == "reproduced" and reason == "" and "covers -2" in rule
    assert claims.exponent_status(doubled, -2)[0] == "not reproduced"
    # three noisy points and three seeds cannot tell -2 from 0 or -4: inconclusive, with the reason
    wide = power_law_exponent(x[:3], 2.0 * x[:3, None] ** -2 * np.exp(1.0 * rng.standard_normal((3, 3))))
    state, reason, _ = claims.exponent_status(wide, -2)
    assert state == "inconclusive" and "cannot tell" in reason
    assert claims.exponent_status(right, -2, competing=[-1.99])[0] == "inconclusive"  # too close to tell apart
    for bad, name in ((dict(fit=1.0, predicted=-2), "fit"), (dict(fit=right, predicted=float("nan")), "predicted"),
                      (dict(fit=right, predicted=-2, competing=[-2]), "competing")):
        with pytest.raises(ValueError, match=name):
            claims.exponent_status(**bad)


def test_coverage_classes_by_the_strongest_claim(tmp_path):
    path = tmp_path / "m.yml"
    path.write_text("work: chen2023eos\nitems:\n" + "".join(f"  - {{id: Fig {i}}}\n" for i in range(1, 6))
                    + "  - {id: Fig 6, explained: a schematic}\n")
    manifest = claims.load_manifest(path)
    c = lambda src, kind="paper", st="reproduced": dict(work="chen2023eos", source=src, kind=kind, status=st)  # noqa: E731
    ledger = [c("Fig 1", "book"), c("Fig 1", st="not reproduced"), c("Fig 2", st="inconclusive"),
              c("Fig 3", "illustration"), c("Fig 3", "book"), c("Fig 4", st=claims.FULL_ONLY)]
    rows = {r["id"]: r for r in claims.coverage(manifest, ledger)}
    assert [rows[f"Fig {i}"]["by"] for i in range(1, 7)] == ["paper", "inconclusive", "illustrated", "paper", "gap",
                                                             "explained"]
    assert rows["Fig 1"]["strongest"]["kind"] == "paper" and rows["Fig 3"]["strongest"]["kind"] == "book"
    assert rows["Fig 5"]["strongest"] is None
