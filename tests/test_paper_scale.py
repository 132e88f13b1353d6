"""lib.paper_scale end to end on the CPU, with the named runs' smoke configurations: the listing, a run writing its
result and provenance, resuming after an interruption without redoing finished pieces, stale results, the ledger,
and that the ledger's rules are the chapters' own."""

import json
import re
import shutil

import numpy as np
import pytest

from lib import paper_scale as ps
from lib.config import REPO_ROOT


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.setenv("ELD_PAPER_SCALE_DIR", str(tmp_path / "work"))
    return tmp_path


def test_at_least_four_named_runs_from_three_parts():
    runs = ps.paper_runs()
    assert len(runs) >= 4
    assert len({r.chapter.split("/")[1] for r in runs.values()}) >= 3
    for r in runs.values():
        assert r.chapter.startswith("notebooks/") and (REPO_ROOT / f"{r.chapter}.md").is_file()
        assert r.pieces(r.config) and r.pieces(r.smoke)


def test_list_prints_every_run_with_a_cost(capsys):
    assert ps._main(["--list"]) == 0
    out = capsys.readouterr().out
    for name in ps.paper_runs():
        assert re.search(rf"^{name}: ", out, re.M), name
    assert out.count("cost: ") == len(ps.paper_runs()) and "model-steps" in out


@pytest.mark.parametrize("name", sorted(ps.paper_runs()))
def test_smoke_run_writes_result_and_provenance(work, name):
    path = ps.run(name, smoke=True, out_dir=work / "out", progress=False)
    meta = json.loads(path.read_text())
    for key in ("config", "commit", "code_hash", "code_files", "device", "device_name", "torch", "python",
                "wall_seconds", "date", "pieces"):
        assert key in meta, key
    assert meta["smoke"] is True and meta["device"] == "cpu" and meta["code_hash"] == ps.code_hash(name)
    assert meta["config"] == ps._canonical(ps.paper_runs()[name].smoke)
    assert re.fullmatch(r"[0-9a-f]{40}.*|unknown", meta["commit"])
    arrays, meta2 = ps.load_result(name, work / "out")
    assert meta2 == meta and all(isinstance(v, np.ndarray) for v in arrays.values())
    r = ps.paper_runs()[name]
    for claim in r.claims(arrays, r.smoke):
        assert claim["status"] in ("reproduced", "partly reproduced", "not reproduced", "inconclusive")
    assert ps.result_state(name, meta) == "smoke"


def test_smoke_results_never_go_to_the_committed_results_by_default(work):
    path = ps.run("gt_fig33b", smoke=True, progress=False)
    assert ps.RESULTS_DIR not in path.parents and (work / "work") in path.parents


def test_an_interrupted_run_resumes_from_its_finished_pieces(work, monkeypatch):
    import lib.parts.generalisation.paper_runs as gpr

    original, calls = gpr.train_gt, []

    def counting(*args, **kw):
        calls.append(args[3:5])
        if len(calls) == 2 and crash["on"]:
            raise KeyboardInterrupt  # the machine goes away during the second piece
        return original(*args, **kw)

    crash = {"on": True}
    monkeypatch.setattr(gpr, "train_gt", counting)
    with pytest.raises(KeyboardInterrupt):
        ps.run("gt_fig33b", smoke=True, out_dir=work / "out", progress=False)
    assert ps.piece_status("gt_fig33b", smoke=True, device="cpu") == [True, False, False]
    assert not (work / "out" / "gt_fig33b.json").exists()
    crash["on"], calls[:] = False, []
    assert ps.run("gt_fig33b", smoke=True, out_dir=work / "out", progress=False, max_pieces=1) is None
    assert len(calls) == 1 and ps.piece_status("gt_fig33b", smoke=True, device="cpu") == [True, True, False]
    assert ps.run("gt_fig33b", smoke=True, out_dir=work / "out", progress=False) is not None
    assert len(calls) == 2  # the first piece was never run again
    calls[:] = []
    ps.run("gt_fig33b", smoke=True, out_dir=work / "out", progress=False)
    assert calls == []  # everything stored: only the result is written again


def test_cli_stops_after_max_pieces_and_says_how_far(work, capsys):
    assert ps._main(["gt_fig33a", "--smoke", "--max-pieces", "1", "--no-progress", "--out", str(work)]) == 3
    assert "1 of 3 pieces stored" in capsys.readouterr().out


def _as_paper_scale(name, out, monkeypatch):
    """Register the smoke configuration as the run's paper-scale one and relabel the smoke result as a
    paper-scale result of it (for the ledger and stale checks; the code is the same, so is its hash)."""
    import dataclasses

    import lib.parts.generalisation.paper_runs as gpr

    runs = [dataclasses.replace(r, config=r.smoke) if r.name == name else r for r in gpr.GENERALISATION_PAPER_RUNS]
    monkeypatch.setattr(gpr, "GENERALISATION_PAPER_RUNS", runs)
    path = out / f"{name}.json"
    meta = json.loads(path.read_text())
    meta.update(smoke=False)
    path.write_text(json.dumps(meta))
    return meta


def test_stale_when_code_hash_or_configuration_no_longer_match(work, monkeypatch):
    name = "gt_fig33b"
    ps.run(name, smoke=True, out_dir=work / "out", progress=False)
    meta = _as_paper_scale(name, work / "out", monkeypatch)
    assert ps.result_state(name, meta) == "current"
    assert ps.result_state(name, dict(meta, code_hash="0" * 64)) == "stale: the code it ran has changed since"
    other = dict(meta, config=dict(meta["config"], seeds=[0]))
    assert ps.result_state(name, other) == "stale: its configuration is no longer the registered one"


def test_code_hash_follows_the_source_of_the_files_it_covers(tmp_path, monkeypatch):
    name = "sbm_fig24"
    before, files = ps.code_hash(name), ps.code_files(name)
    assert "lib/parts/graph_networks/communities.py" in files and "lib/train.py" in files
    assert not any("concept_learning" in f or "generalisation" in f for f in files)
    shutil.copytree(REPO_ROOT / "lib", tmp_path / "lib")
    monkeypatch.setattr(ps, "REPO_ROOT", tmp_path)
    assert ps.code_hash(name) == before
    with open(tmp_path / "lib" / "train.py", "a") as fh:
        fh.write("\n# an edit\n")
    assert ps.code_hash(name) != before
    unrelated = tmp_path / "lib" / "parts" / "concept_learning" / "diffusion.py"
    after = ps.code_hash(name)
    unrelated.write_text(unrelated.read_text() + "\n# an edit elsewhere\n")
    assert ps.code_hash(name) == after


def test_ledger_without_results_lists_every_claim_with_no_status(work):
    rows = ps.ledger(work / "empty")
    assert {r["run"] for r in rows} == {n for n, r in ps.paper_runs().items() if r.paper_scale}
    assert all(r["state"] == "none" and r["status"] is None and r["rule"] for r in rows)


def test_ledger_shows_current_results_and_never_a_stale_or_smoke_one_as_current(work, monkeypatch):
    name = "gt_fig33b"
    ps.run(name, smoke=True, out_dir=work / "out", progress=False)
    rows = [r for r in ps.ledger(work / "out") if r["run"] == name]
    assert all(r["state"] == "none" and r["status"] is None for r in rows)  # a smoke result is not paper-scale
    meta = _as_paper_scale(name, work / "out", monkeypatch)
    cpu = [{"docname": ps.paper_runs()[name].chapter, "statement": rows[0]["statement"] + " ...",
            "status": "inconclusive"}]
    rows = [r for r in ps.ledger(work / "out", cpu) if r["run"] == name]
    assert all(r["state"] == "current" and r["status"] and r["device"] and r["date"] for r in rows)
    assert rows[0]["cpu"] == ["inconclusive"]
    (work / "out" / f"{name}.json").write_text(json.dumps(dict(meta, code_hash="f" * 64)))
    rows = [r for r in ps.ledger(work / "out") if r["run"] == name]
    assert all(r["state"].startswith("stale") and r["status"] is None for r in rows)


def test_the_ledger_rules_are_the_chapters():
    from lib.parts.concept_learning.paper_runs import FIG6_RULES
    from lib.parts.generalisation.paper_runs import GT_LEVEL

    text = (REPO_ROOT / "notebooks/concept_learning/03_diffusion.md").read_text()
    for const, key in (("LEVEL", "level"), ("BEND", "bend"), ("BEND_SE", "bend_se"), ("DECAY", "decay"),
                       ("BUMP", "bump"), ("BUMP_SE", "bump_se")):
        m = re.search(rf"^{const} = \(?\s*([0-9.]+)", text, re.M)
        assert m and float(m.group(1)) == FIG6_RULES[key], const
    gt_text = (REPO_ROOT / "notebooks/generalisation/02_graph_transformers.md").read_text()
    assert float(re.search(r"^LEVEL = ([0-9.]+)", gt_text, re.M).group(1)) == GT_LEVEL
    assert "scaling.boundary_exponent(" in gt_text
    sbm_text = (REPO_ROOT / "notebooks/graph_networks/03_communities.md").read_text()
    assert "cm.beats(" in sbm_text and "cm.comparable(" in sbm_text


def test_every_ledger_claim_stands_beside_a_claim_of_its_chapter():
    for r in ps.paper_runs().values():
        text = re.sub(r'"\s*\n\s*"', "", (REPO_ROOT / f"{r.chapter}.md").read_text())
        text = text.replace("{{", "{").replace("}}", "}")  # f-strings' literal braces
        for c in r.claims(None, r.config):
            # a statement the chapter builds with an f-string is found by its literal start
            assert c["cpu"] in text or c["cpu"].split("(")[0] in text, (r.name, c["cpu"])


def test_bad_arguments_name_them(work):
    with pytest.raises(ValueError, match="name"):
        ps.run("no_such_run")
    with pytest.raises(ValueError, match="max_pieces"):
        ps.run("gt_fig33b", smoke=True, max_pieces=0)
    with pytest.raises(ValueError, match="device"):
        ps.run("gt_fig33b", smoke=True, device="gpu")
    with pytest.raises(ValueError, match="smoke"):
        ps.piece_status("gt_fig33b", smoke="yes")


def _ext():
    import sys

    sys.path.insert(0, str(REPO_ROOT / "book" / "_ext"))
    import eld_paper_scale

    return eld_paper_scale


def test_the_page_shows_stale_as_stale_and_never_as_a_status():
    row = dict(run="gt_fig33b", title="t", chapter="notebooks/x", source="Fig 3.3(b)", statement="s",
               cpu=["reproduced"],
               state="stale: the code it ran has changed since", status=None, measured="", rule="r", device="GPU",
               date="d")
    page = _ext().ledger_html([row], lambda d: d + ".html")
    assert "stale: the code it ran has changed since" in page and "(not current; rerun it)" in page
    assert "No paper-scale results are committed yet" in page
    current = dict(row, state="current", status="not reproduced", measured="m")
    page = _ext().ledger_html([current], lambda d: d + ".html")
    assert "<strong>not reproduced</strong>" in page and "committed yet" not in page
    none = dict(row, run="not_run", state="none")
    page = _ext().ledger_html([none, row, current | dict(run="current_run")], lambda d: d + ".html")
    assert page.index("current_run") < page.index("gt_fig33b") < page.index("not_run")  # results first


def test_a_sphinx_build_renders_the_ledger_with_this_builds_cpu_claims(tmp_path):
    import subprocess
    import sys

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO_ROOT / 'book' / '_ext')!r})\nextensions = ['eld_paper_scale']\n")
    (src / "index.rst").write_text("Ledger\n======\n\n.. eld-paper-scale-ledger::\n")
    claims = tmp_path / "claims"  # next to the html output, as the book writes them
    claims.mkdir()
    (claims / "notebooks__generalisation__02_graph_transformers.json").write_text(json.dumps({"claims": [
        {"statement": "The labelled nodes needed for success grow like (1 - ε_S)^-2", "status": "inconclusive"}]}))
    out = tmp_path / "html"
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out)], check=True)
    page = (out / "index.html").read_text()
    committed = any(ps.RESULTS_DIR.glob("*.json"))
    assert committed or "No paper-scale results are committed yet" in page
    for name, r in ps.paper_runs().items():
        assert (f"<code>{name}</code>" in page) == r.paper_scale, name  # a CPU study is not on the ledger
    row = re.search(r"<tr><td><code>gt_fig33b</code>.*?</tr>", page, re.S).group(0)
    assert "<td>inconclusive</td>" in row


def test_pieces_side_by_side_give_what_one_process_gives(work):
    one = ps.run("concept_variants", smoke=True, out_dir=work / "one", progress=False)
    shutil.rmtree(work / "work")
    two = ps.run("concept_variants", smoke=True, out_dir=work / "two", progress=False, n_jobs=2)
    a, b = ps.load_result("concept_variants", one.parent)[0], ps.load_result("concept_variants", two.parent)[0]
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_a_cpu_study_is_read_by_its_chapter_only_while_current(work, monkeypatch):
    import dataclasses

    import lib.parts.concept_learning.paper_runs as cpr
    from lib.parts.concept_learning.diffusion_variants import fig6_verdicts

    name, out = "concept_variants", work / "out"
    assert cpr.variant_study(out) == (None, None, "none")
    ps.run(name, smoke=True, out_dir=out, progress=False)
    assert cpr.variant_study(out) == (None, None, "smoke")
    runs = [dataclasses.replace(r, config=r.smoke) if r.name == name else r for r in cpr.CONCEPT_PAPER_RUNS]
    monkeypatch.setattr(cpr, "CONCEPT_PAPER_RUNS", runs)
    meta = json.loads((out / f"{name}.json").read_text())
    (out / f"{name}.json").write_text(json.dumps(dict(meta, smoke=False)))
    study, meta2, state = cpr.variant_study(out)
    assert state == "current" and meta2["code_hash"] == ps.code_hash(name)
    assert list(study) == list(cpr._VARIANT_SMOKE["variants"])
    for run in study.values():
        assert run["concepts"].shape[:2] == (2, 2)  # two colour signals, two seeds
        fig6_verdicts(run, **cpr.FIG6_RULES)
    assert name not in {r["run"] for r in ps.ledger(out)}
    (out / f"{name}.json").write_text(json.dumps(dict(meta, smoke=False, code_hash="0" * 64)))
    assert cpr.variant_study(out)[2].startswith("stale")
    with pytest.raises(ValueError, match="name"):
        ps.current_result("no such run", out)
    with pytest.raises(ValueError, match="n_jobs"):
        ps.run(name, smoke=True, out_dir=out, progress=False, n_jobs=0)


def test_the_book_loads_the_paper_scale_extension():
    import yaml

    cfg = yaml.safe_load((REPO_ROOT / "_config.yml").read_text())
    assert cfg["sphinx"]["local_extensions"]["eld_paper_scale"] == "book/_ext"


# ------------------------------------------------------------------------- the VI.1 and V.1 runs (vit, recall)
_NEW_RUNS = {  # name: (module of the run, the experiment function it calls, the list's name)
    "vit_fig21": ("lib.parts.generalisation.paper_runs", "train_vit", "GENERALISATION_PAPER_RUNS"),
    "recall_fig43": ("lib.parts.memorisation.paper_runs", "recall_experiment", "MEMORISATION_PAPER_RUNS"),
}


@pytest.mark.parametrize("name", sorted(_NEW_RUNS))
def test_new_runs_resume_after_an_interruption(work, monkeypatch, name):
    import importlib

    mod_name, fn_name, _ = _NEW_RUNS[name]
    mod = importlib.import_module(mod_name)
    original, calls, crash = getattr(mod, fn_name), [], {"on": True}
    n_pieces = len(ps.paper_runs()[name].pieces(ps.paper_runs()[name].smoke))
    per_piece = 2 if name == "vit_fig21" else 1  # trained and frozen attention

    def counting(*args, **kw):
        calls.append(1)
        if crash["on"] and len(calls) == per_piece + 1:
            raise KeyboardInterrupt  # the machine goes away during the second piece
        return original(*args, **kw)

    monkeypatch.setattr(mod, fn_name, counting)
    with pytest.raises(KeyboardInterrupt):
        ps.run(name, smoke=True, out_dir=work / "out", progress=False)
    assert ps.piece_status(name, smoke=True, device="cpu") == [True] + [False] * (n_pieces - 1)
    assert not (work / "out" / f"{name}.json").exists()
    crash["on"], calls[:] = False, []
    assert ps.run(name, smoke=True, out_dir=work / "out", progress=False) is not None
    assert len(calls) == per_piece * (n_pieces - 1)  # the first piece was never run again
    calls[:] = []
    ps.run(name, smoke=True, out_dir=work / "out", progress=False)
    assert calls == []


@pytest.mark.parametrize("name", sorted(_NEW_RUNS))
def test_new_runs_are_stale_when_their_code_changes_and_current_otherwise(work, monkeypatch, name):
    import dataclasses
    import importlib

    mod_name, _, list_name = _NEW_RUNS[name]
    mod = importlib.import_module(mod_name)
    ps.run(name, smoke=True, out_dir=work / "out", progress=False)
    runs = [dataclasses.replace(r, config=r.smoke) if r.name == name else r for r in getattr(mod, list_name)]
    monkeypatch.setattr(mod, list_name, runs)
    meta = dict(json.loads((work / "out" / f"{name}.json").read_text()), smoke=False)
    assert ps.result_state(name, meta) == "current"
    assert ps.result_state(name, dict(meta, code_hash="0" * 64)) == "stale: the code it ran has changed since"
    (work / "out" / f"{name}.json").write_text(json.dumps(meta))
    rows = [r for r in ps.ledger(work / "out") if r["run"] == name]
    assert rows and all(r["state"] == "current" and r["status"] in ("reproduced", "partly reproduced",
                                                                       "not reproduced", "inconclusive")
                        for r in rows)


def test_new_runs_hash_their_own_code_only():
    vit, recall = ps.code_files("vit_fig21"), ps.code_files("recall_fig43")
    assert "lib/parts/generalisation/shallow_vits.py" in vit and "lib/models/shallow_attention.py" in vit
    assert "lib/parts/memorisation/noisy_recall.py" in recall and "lib/train.py" in recall
    assert not any("memorisation" in f for f in vit) and not any("generalisation" in f for f in recall)


def test_the_new_runs_rules_are_the_chapters():
    from lib.parts.generalisation.paper_runs import VIT_LEVEL

    vit = (REPO_ROOT / "notebooks/generalisation/01_shallow_vits.md").read_text()
    assert float(re.search(r"^LEVELS = \(1e-3, ([0-9.e-]+)\)", vit, re.M).group(1)) == VIT_LEVEL
    assert "success = success_map(run_fn, ALPHAS, NS, SEEDS)" in vit and "< LEVELS[1]" in vit
    assert "scaling.boundary_exponent(ALPHAS, success, NS, -2.0)" in vit
    assert re.search(r"ALPHAS, hinge\[True\] < LEVELS\[1\], NS, -4.0, competing=\(-2.0, -6.0\)", vit)
    # Fig 2.2: the chapter calls vit_rules.iteration_exponent, or still writes out its rule (ten records,
    # exponent -1)
    assert "vit_rules.iteration_exponent(" in vit or (
        "it_mean[0] >= 10 * REC" in vit and "claims.exponent_status(fit_it, -1.0)" in vit)
    recall = (REPO_ROOT / "notebooks/memorisation/01_noisy_recall.md").read_text()
    if "recall_rules.fig43_verdicts(" in recall:  # the chapter calls the rule functions
        assert "recall_rules.fig46_verdicts(" in recall
        return
    for rule in ("min(p5) > 0.5", "min(m5) > 0", "max(dev_late) < 0.15", "max(pn0) < 0.1", "min(gain) > 0.1",
                 "min(gain01) > 0.1", "min(pc[0.0]) > 0.95, min(pc[0.0]) > 0.8", "every and len(H) >= 3",
                 "prev_hit > 0.9", "by_off[1] > 5 * other", "row_q == TAU", "diag > 0.8", 'h["step"] >= 300'):
        assert rule in recall, rule


def test_recall_pieces_measure_layer_one_as_recall_rules_does(work):
    """The piece writes out recall_rules.layer1_offsets (so that the code hash covers the measurement): the two
    agree on the piece's own model."""
    import torch

    from lib.parts.memorisation import noisy_recall as nr
    from lib.parts.memorisation import paper_runs as mpr
    from lib.parts.memorisation.recall_rules import layer1_offsets

    piece = mpr._pieces(mpr._SMOKE)[0]
    out = mpr._run_piece(piece, "cpu")
    r = nr.recall_experiment(piece["setting"], piece["steps"], seed=0)
    model = nr.restore_model(piece["setting"], r["state"])
    with torch.no_grad():
        model(nr.eval_batches(piece["setting"], 0)[0][0][:, :-1])
    ref = layer1_offsets(model.attention_maps[0][:, 0])
    assert float(out["prev_hit"]) == pytest.approx(ref["prev_hit"])
    np.testing.assert_allclose(out["by_offset"], ref["by_offset"], rtol=1e-6)


def test_gpu_plan_takes_the_cheapest_first_and_leaves_out_current_results(work, monkeypatch):
    plan = ps.gpu_plan("cuda", results_dir=work / "none")
    runs = ps.paper_runs()
    assert [p["name"] for p in plan] and {p["name"] for p in plan} == {n for n, r in runs.items() if r.paper_scale}
    assert [p["seconds_left"] for p in plan] == sorted(p["seconds_left"] for p in plan)
    for p in plan:
        r = runs[p["name"]]
        assert p["left"] == p["pieces"] == len(r.pieces(r.config)) and not p["measured"]
        assert p["piece_s"] == r.gpu_piece_s and p["jobs"] == r.gpu_jobs
        assert p["seconds_left"] == p["piece_s"] * -(-p["left"] // p["jobs"])
    ps.run("gt_fig33b", smoke=True, out_dir=work / "out", progress=False)
    _as_paper_scale("gt_fig33b", work / "out", monkeypatch)  # a current result: nothing left to run
    assert "gt_fig33b" not in {p["name"] for p in ps.gpu_plan("cuda", results_dir=work / "out")}
    assert "gt_fig33b" in {p["name"] for p in ps.gpu_plan("cuda", results_dir=work / "none")}
    named = ps.gpu_plan("cuda", results_dir=work / "out", names=["gt_fig33b", "recall_fig43"])  # asked for: planned
    assert sorted(p["name"] for p in named) == ["gt_fig33b", "recall_fig43"]
    for bad in ("gt_fig33b", ["no_such_run"], [3]):
        with pytest.raises(ValueError, match="names"):
            ps.gpu_plan("cuda", names=bad)


def test_gpu_plan_counts_stored_pieces_of_its_device_type_and_their_measured_time(work, monkeypatch):
    import dataclasses

    import lib.parts.generalisation.paper_runs as gpr

    runs = [dataclasses.replace(r, config=r.smoke) if r.name == "gt_fig33a" else r
            for r in gpr.GENERALISATION_PAPER_RUNS]
    monkeypatch.setattr(gpr, "GENERALISATION_PAPER_RUNS", runs)
    assert ps.run("gt_fig33a", device="cpu", max_pieces=1, progress=False) is None  # one of three pieces
    (row,) = [p for p in ps.gpu_plan("cpu", results_dir=work / "none") if p["name"] == "gt_fig33a"]
    stored = [x for x in (work / "work" / "gt_fig33a").glob("*.npz")]
    assert len(stored) == 1 and row["left"] == 2 and row["measured"] and 0 < row["piece_s"] < 120
    (row,) = [p for p in ps.gpu_plan("cuda", results_dir=work / "none") if p["name"] == "gt_fig33a"]
    assert row["left"] == 3 and not row["measured"]  # a CPU piece is no CUDA piece
    with pytest.raises(ValueError, match="device_type"):
        ps.gpu_plan("tpu")
    with pytest.raises(ValueError, match="smoke"):
        ps.gpu_plan("cpu", smoke=1)


def test_a_dry_run_plans_the_smoke_configurations_even_of_runs_with_a_current_result(work, monkeypatch):
    ps.run("gt_fig33b", smoke=True, out_dir=work / "out", progress=False)
    _as_paper_scale("gt_fig33b", work / "out", monkeypatch)
    (row,) = [p for p in ps.gpu_plan("cpu", results_dir=work / "out", smoke=True) if p["name"] == "gt_fig33b"]
    r = ps.paper_runs()["gt_fig33b"]
    assert row["left"] == 0 and row["pieces"] == len(r.pieces(r.smoke))


def test_the_commit_is_the_one_given_where_there_is_no_git(tmp_path, monkeypatch):
    monkeypatch.setattr(ps, "REPO_ROOT", tmp_path)  # not a repository
    monkeypatch.delenv("ELD_COMMIT", raising=False)
    assert ps._git_commit() == "unknown"
    monkeypatch.setenv("ELD_COMMIT", "a" * 40)
    assert ps._git_commit() == "a" * 40 + " (given by ELD_COMMIT: no git here)"


def test_the_gpu_job_sends_back_one_archive_that_unpacks_in_place(tmp_path):
    """scripts/gpu_runs.sh as a dry run on the CPU (SMOKE=1): a machine that returns only a few files under $OUT
    gets the whole call in one archive and a summary."""
    import os
    import subprocess
    import sys
    import tarfile

    out, logs = tmp_path / "out", tmp_path / "logs"
    out.mkdir()
    env = dict(os.environ, SMOKE="1", SKIP_TESTS="1", OUT=str(out), GPU_RUNS_LOGS=str(logs), PY=sys.executable)
    r = subprocess.run(["bash", "scripts/gpu_runs.sh", "gt_fig33a"], cwd=REPO_ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["gpu_runs.tar.gz", "summary.txt"]
    with tarfile.open(out / "gpu_runs.tar.gz") as tar:
        names = tar.getnames()
    assert any(n.endswith("smoke-results/gt_fig33a.json") for n in names), names
    assert not any("book/paper_scale" in n for n in names)  # a dry run never touches the committed files
    summary = (out / "summary.txt").read_text()
    assert "gt_fig33a: result written" in summary and "gt_fig33b" not in summary  # only the run asked for


def test_cpu_pieces_run_ahead_on_a_machine_without_a_gpu_and_the_rest_completes_the_run(work, monkeypatch):
    """sbm_fig24's GA-MLP pieces (their time is SciPy features) run on the CPU on every machine: a CPU machine
    runs them ahead, a GPU run finds them stored and does the sGNN pieces, and the result is a straight run's."""
    import torch

    import lib.parts.graph_networks.paper_runs as gnr

    name, r = "sbm_fig24", ps.paper_runs()["sbm_fig24"]
    pieces = r.pieces(r.smoke)
    sgnn = [p["model"] == "sGNN" for p in pieces]
    assert any(sgnn) and not all(sgnn)
    for p, is_sgnn in zip(pieces, sgnn):  # a GPU run keys and runs the GA-MLP pieces on the CPU
        assert ps._piece_device(r, p, torch.device("cuda")).type == ("cuda" if is_sgnn else "cpu")
    assert ps.run(name, smoke=True, out_dir=work / "out", progress=False, cpu_pieces_only=True) is None
    assert ps.piece_status(name, smoke=True, device="cpu") == [not s for s in sgnn]
    (row,) = [p for p in ps.gpu_plan("cuda", smoke=True) if p["name"] == name]
    assert row["left"] == sum(sgnn) and not row["measured"]  # what a GPU session has left, not yet timed
    original, calls = gnr.run_sbm, []

    def counting(*args, **kw):
        calls.append(kw["operators"])
        return original(*args, **kw)

    monkeypatch.setattr(gnr, "run_sbm", counting)
    assert ps.run(name, smoke=True, out_dir=work / "out", progress=False) is not None
    assert calls == [()] * sum(sgnn)  # only the sGNN pieces were left
    monkeypatch.setenv("ELD_PAPER_SCALE_DIR", str(work / "straight"))
    ps.run(name, smoke=True, out_dir=work / "straight-out", progress=False)
    a, _ = ps.load_result(name, work / "out")
    b, _ = ps.load_result(name, work / "straight-out")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="cpu_pieces_only"):
        ps.run(name, smoke=True, cpu_pieces_only="yes")


def test_cli_says_when_only_gpu_pieces_are_left(work, capsys):
    assert ps._main(["sbm_fig24", "--smoke", "--cpu-pieces", "--no-progress", "--out", str(work)]) == 3
    assert "the rest want a GPU" in capsys.readouterr().out


def test_cli_plan_takes_any_number_of_names_and_a_run_takes_one(work, capsys):
    assert ps._main(["--plan", "--device", "cpu", "--smoke", "recall_fig43", "gt_fig33a"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert sorted(line.split()[0] for line in lines if line) == ["gt_fig33a", "recall_fig43"]
    with pytest.raises(SystemExit):
        ps._main(["gt_fig33a", "gt_fig33b", "--smoke"])
