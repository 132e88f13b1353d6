"""Part VI's named paper-scale runs (:mod:`lib.paper_scale`): the success maps of Fig 3.3 at the thesis's graph, and
the sample-complexity map of Fig 2.1(a) with Figs 2.2 and 2.3 at the thesis's ViT sizes.

``gt_fig33a`` and ``gt_fig33b`` train the graph transformer of Chapter VI.2
(:func:`~lib.parts.generalisation.graph_transformers.train_gt`) at the thesis's sizes
(:data:`~lib.parts.generalisation.settings.GT`: N = 1000, D = 120, K = 60, m = 400) with more steps, seeds and
labelled-set sizes than the chapter affords, one piece per point of the swept axis, and decide the chapter's
claims with the chapter's rule,
:func:`~lib.parts.generalisation.scaling.boundary_exponent` (success: final test hinge below :data:`GT_LEVEL`).

``vit_fig21`` trains the shallow ViT of Chapter VI.1 (:func:`~lib.parts.generalisation.shallow_vits.train_vit`) at
the thesis's token count and width (L = 100, m = 1000), its token noise c0 = 0.01 and its 20 trials, over the
chapter's α* (from 0.35, where Eq. 2.8 holds) and N from 1 to 128, one piece per α*, trained and with W_K, W_Q
fixed; the largest N's runs record their test loss at every step. It decides Fig 2.1(a) and Fig 2.3 with
:func:`~lib.parts.generalisation.scaling.boundary_exponent` and Fig 2.2 with
:func:`~lib.parts.generalisation.vit_rules.iteration_exponent`, after Thm 1's hypotheses
(:func:`~lib.parts.generalisation.shallow_vits.thm1_hypotheses` at the measured token noise), as the chapter does.
Fig 2.1(b) has no run: at the thesis's point (α* = 0.3, α# = 0.2) Thm 1's hypotheses fail at every σ, so no
size could decide it. A caution for reading the result: a seed's labels do not depend on α* (training example i
of seed s has its own stream), and a CPU pilot at these sizes (α* = 0.35, N = 1 and 2, three seeds, 300 steps)
succeeded exactly where the training set held both labels (N = 2 in seed 0; never at N = 1). If that holds at
every α*, each seed's N* is the first N with both labels, the same at every α*, and the fitted exponent is 0.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lib.paper_scale import PaperRun
from lib.parts.generalisation.graph_transformers import train_gt
from lib.parts.generalisation.scaling import boundary_exponent
from lib.parts.generalisation.settings import GT, PAPER_VIT, VIT_THESIS_NOISE
from lib.parts.generalisation.shallow_vits import first_step_below, thm1_hypotheses, token_noise, train_vit
from lib.parts.generalisation.vit_rules import iteration_exponent

#: The graph-transformer chapter's success level (final test hinge loss below it; the thesis's is 1e-3).
GT_LEVEL = 0.1

_LS = (10, 20, 40, 80, 160, 320, 640)
_SEEDS = tuple(range(8))
_BASE = dict(cfg=dict(GT, steps=1500), Ls=_LS, seeds=_SEEDS, level=GT_LEVEL)
_FIG33A = dict(_BASE, axis="gamma_d", xs=(0.2, 0.3, 0.4, 0.5, 0.6), fixed=0.05)
_FIG33B = dict(_BASE, axis="eps_S", xs=(0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35), fixed=0.4)
#: A finer grid of labelled-set sizes for Fig 3.3(a), designed after ``gt_fig33a`` (2026-11-27) found the boundary at or
#: below its first |L| = 10 at four of its five γ_d (the rule is unchanged; only the grid is new).
_FIG33A_FINE = dict(_FIG33A, Ls=(2, 3, 5, 7, 10, 14, 20, 40))
_TINY = dict(cfg=dict(GT, n=60, degree=10, K=5, m=8, n_test=20, steps=10), Ls=(5, 10, 20), seeds=(0, 1, 2),
             level=GT_LEVEL)


def _gt_pieces(config: dict) -> list[dict]:
    return [dict(config, xs=(float(x),)) for x in config["xs"]]


def _gt_piece(piece: dict, device: str) -> dict:
    x = piece["xs"][0]
    gamma_d, eps_S = (x, piece["fixed"]) if piece["axis"] == "gamma_d" else (piece["fixed"], x)
    NN, SS = np.meshgrid(np.asarray(piece["Ls"]), np.asarray(piece["seeds"]), indexing="ij")  # as success_map
    r = train_gt(NN.ravel(), SS.ravel(), piece["cfg"], gamma_d, eps_S, device=device)
    return {"test_hinge": r["test_hinge"].reshape(NN.shape), "diverged": r["diverged"].reshape(NN.shape)}


def _gt_combine(config: dict, results: list[dict]) -> dict:
    return dict(xs=np.asarray(config["xs"], float), Ls=np.asarray(config["Ls"]), seeds=np.asarray(config["seeds"]),
                test_hinge=np.stack([r["test_hinge"] for r in results]),
                diverged=np.stack([r["diverged"] for r in results]))


def _gt_claims(arrays, config: dict) -> list[dict]:
    if config["axis"] == "gamma_d":
        source, lab = "Fig 3.3(a), Theorem 3.4.4", "γ_d"
    else:
        source, lab = "Fig 3.3(b), Theorem 3.4.4", "1 - ε_S"
    statement = f"The labelled nodes needed for success grow like ({lab})^-2"
    xs = np.asarray(config["xs"], float)
    law_x = xs if config["axis"] == "gamma_d" else 1 - xs
    if arrays is None:
        law = boundary_exponent(law_x, np.zeros((len(xs), len(config["Ls"]), 3), bool), config["Ls"], -2.0,
                                what="|L|*")
        return [dict(source=source, statement=statement, cpu=statement, status=None, measured="",
                     rule=law["tolerance"] + f" (success: test hinge < {config['level']:g}, per seed)")]
    success = np.asarray(arrays["test_hinge"]) < config["level"]
    law = boundary_exponent(law_x, success, config["Ls"], -2.0, what="|L|*")
    failed = [k for k, ok in law["preconditions"].items() if not ok]
    return [dict(source=source, statement=statement, cpu=statement, status=law["status"],
                 measured=law["measured"] + ("; precondition failed: " + "; ".join(failed) if failed else ""),
                 rule=law["tolerance"] + f" (success: test hinge < {config['level']:g}, per seed)")]


def _gt_cost(config: dict) -> str:
    members = len(config["Ls"]) * len(config["seeds"])
    c = config["cfg"]
    return (f"{len(config['xs'])} pieces of {members} stacked networks (width {c['m']}, N = {c['n']}, "
            f"{c['K']} sampled nodes) x {c['steps']:,} SGD steps = {len(config['xs']) * members * c['steps']:,} "
            "model-steps; measured on two CPU cores, one thread a piece and two pieces side by side: about 7.5 "
            "minutes a piece (gt_fig33a's five took 2,233 s of piece time, 21 minutes on the clock); no GPU "
            "timing yet")


GENERALISATION_PAPER_RUNS = [
    PaperRun(
        name=f"gt_fig33{panel}", title=f"VI.2 Fig 3.3({panel}) at the thesis's graph (N = 1000, D = 120, K = 60, "
        f"m = 400): |L|* against {what}", chapter="notebooks/generalisation/02_graph_transformers", config=cfg,
        smoke=dict(_TINY, axis=cfg["axis"], fixed=cfg["fixed"], xs=cfg["xs"][:3]), pieces=_gt_pieces,
        run_piece=_gt_piece, combine=_gt_combine, claims=_gt_claims, cost=_gt_cost, entry=train_gt,
        note="η = 0.1 (thesis 0.01), 1,500 steps, success at test hinge < 0.1 (thesis 1e-3), as in the chapter",
        gpu_piece_s=120.0, gpu_jobs=4)  # graphs (distances of N = 1000) and neighbour draws are CPU work
    for panel, cfg, what in (("a", _FIG33A, "γ_d"), ("b", _FIG33B, "1 - ε_S"))
]
GENERALISATION_PAPER_RUNS.append(dataclasses.replace(
    GENERALISATION_PAPER_RUNS[0], name="gt_fig33a_fine", config=_FIG33A_FINE,
    title="VI.2 Fig 3.3(a) at the thesis's graph, |L| from 2 to 40: a grid designed after gt_fig33a found the "
    "boundary at or below its first |L| = 10",
    note=GENERALISATION_PAPER_RUNS[0].note + "; the grid of |L| was chosen after gt_fig33a's result (the rule was "
    "not)"))


# ---- chapter 1 (thesis ch. 2): the sample-complexity map of Fig 2.1(a) at the thesis's sizes, with Fig 2.2's
# iteration counts (its runs at the largest N) and Fig 2.3's frozen attention (the same members, W_K, W_Q fixed)

#: The shallow-ViT chapter's success level (final test hinge below it; the thesis's is 1e-3) and its α* range:
#: with α_# = 0.5 - α_*, Eq. 2.8 needs α_* ≥ 0.31 at c0 = 0.01.
VIT_LEVEL = 0.01

_VIT21 = dict(cfg=dict(VIT_THESIS_NOISE, L=PAPER_VIT["L"], m=PAPER_VIT["m"], steps=300, n_test=500),
              alphas=(0.35, 0.4, 0.45, 0.5, 0.55, 0.6), Ns=(1, 2, 4, 8, 16, 32, 64, 128),
              seeds=tuple(range(PAPER_VIT["trials"])), level=VIT_LEVEL, record_every=1)
_VIT21_SMOKE = dict(_VIT21, cfg=dict(VIT_THESIS_NOISE, L=10, m=8, steps=6, n_test=10), alphas=(0.35, 0.5),
                    Ns=(1, 2), seeds=(0, 1, 2))


def _vit_pieces(config: dict) -> list[dict]:
    return [dict(config, alphas=(float(a),)) for a in config["alphas"]]


def _vit_piece(piece: dict, device: str) -> dict:
    alpha, cfg = piece["alphas"][0], piece["cfg"]
    NN, SS = np.meshgrid(np.asarray(piece["Ns"]), np.asarray(piece["seeds"]), indexing="ij")  # as success_map
    largest = np.flatnonzero(NN.ravel() == max(piece["Ns"]))
    hash_ = max(0.5 - alpha, 0.0)
    tr = train_vit(NN.ravel(), SS.ravel(), cfg, alpha, hash_, curve_members=largest,
                   record_every=piece["record_every"], device=device)
    fr = train_vit(NN.ravel(), SS.ravel(), cfg, alpha, hash_, freeze_qk=True, record_every=cfg["steps"],
                   device=device)
    return {"test_hinge": tr["test_hinge"].reshape(NN.shape), "frozen_hinge": fr["test_hinge"].reshape(NN.shape),
            "diverged": np.array(int(tr["diverged"].sum() + fr["diverged"].sum())), "curve_t": tr["curve_t"],
            "test_curve": tr["test_curve"][largest], "tau_max": np.array(token_noise(cfg, 0.3, 0.2)["max"])}


def _vit_combine(config: dict, results: list[dict]) -> dict:
    return dict(alphas=np.asarray(config["alphas"], float), Ns=np.asarray(config["Ns"]),
                seeds=np.asarray(config["seeds"]), curve_t=results[0]["curve_t"], tau_max=results[0]["tau_max"],
                **{k: np.stack([r[k] for r in results]) for k in ("test_hinge", "frozen_hinge", "test_curve",
                                                                   "diverged")})


def _decided(law: dict, hyp: dict) -> tuple:
    """A law's status after the hypotheses and its own preconditions (as ``claims.record`` applies them)."""
    failed = [k for k, ok in {**hyp, **law["preconditions"]}.items() if not ok]
    status = law["status"] if not failed else "inconclusive"
    return status, ("; precondition failed: " + "; ".join(failed) if failed else "")


def _vit_claims(arrays, config: dict) -> list[dict]:
    alphas, Ns, level = np.asarray(config["alphas"], float), config["Ns"], config["level"]
    n_a = len(alphas)
    hinge = {False: np.ones((n_a, len(Ns), 3)), True: np.ones((n_a, len(Ns), 3))} if arrays is None else \
        {False: np.asarray(arrays["test_hinge"]), True: np.asarray(arrays["frozen_hinge"])}
    iters = np.ones((n_a, 3))  # no result: only the rule's text is used
    hyp = {}
    if arrays is not None:
        iters = np.stack([first_step_below(arrays["curve_t"], c, level) for c in np.asarray(arrays["test_curve"])])
        hyp = thm1_hypotheses(config["cfg"], float(alphas.min()), 0.5 - float(alphas.min()), float(arrays["tau_max"]))
    law_a = boundary_exponent(alphas, hinge[False] < level, Ns, -2.0)
    law_fr = boundary_exponent(alphas, hinge[True] < level, Ns, -4.0, competing=(-2.0, -6.0))
    law_it = iteration_exponent(alphas, iters, config["record_every"], -1.0)
    suffix = f" (success: test hinge < {level:g}, per seed)"
    rows = []
    for source, statement, law, rule in (
        ("Fig 2.1(a), Thm 1", "The smallest N reaching success grows like 1/α*² (exponent -2 of N* in α*)", law_a,
         law_a["tolerance"] + suffix),
        ("Fig 2.2, Thm 1", "The number of iterations to reach zero loss grows like 1/α* (Eq. 2.10)", law_it,
         law_it["tolerance"] + f" (first step at test hinge ≤ {level:g}, recorded every {config['record_every']})"),
        ("Fig 2.3, Prop 1", "With fixed W_K, W_Q the needed N grows like α*^-4, a factor α*^-2 more than with "
         "trained attention", law_fr, law_fr["tolerance"] + suffix),
    ):
        status, failed = (None, "") if arrays is None else _decided(law, hyp)
        rows.append(dict(source=source, statement=statement, cpu=statement, status=status, rule=rule,
                         measured="" if arrays is None else law["measured"] + failed))
    return rows


def _vit_cost(config: dict) -> str:
    c = config["cfg"]
    members = len(config["Ns"]) * len(config["seeds"])
    steps = 2 * len(config["alphas"]) * members * c["steps"]
    evals = len(config["alphas"]) * len(config["seeds"]) * (c["steps"] // config["record_every"] + 1)
    seconds = 0.0095 * steps + 0.29 * evals
    return (f"{len(config['alphas'])} pieces of {members} trained + {members} frozen-attention networks (L = "
            f"{c['L']}, m = {c['m']}) x {c['steps']} SGD steps of batch {c['batch']} = {steps:,} model-steps, and "
            f"{evals:,} test-set evaluations ({c['n_test']} samples) of the largest N's runs for Fig 2.2; measured "
            "on one shared CPU core at these sizes: about 0.01 s a model-step and 0.29 s a member's evaluation "
            "(a run of two pieces side by side on two cores had finished none after 34 CPU minutes each), "
            f"so about {seconds / 3600:.1f} h on one core ({seconds / 60 / len(config['alphas']):.0f} minutes a "
            "piece); no GPU timing yet")


GENERALISATION_PAPER_RUNS += [
    PaperRun(
        name="vit_fig21", title="VI.1 Fig 2.1(a), Fig 2.2 and Fig 2.3 at the thesis's sizes (L = 100, m = 1000, "
        "c0 = 0.01, 20 trials): N* and the iterations against α*, trained and fixed attention",
        chapter="notebooks/generalisation/01_shallow_vits", config=_VIT21, smoke=_VIT21_SMOKE, pieces=_vit_pieces,
        run_piece=_vit_piece, combine=_vit_combine, claims=_vit_claims, cost=_vit_cost, entry=train_vit,
        note="α* from 0.35 (Eq. 2.8 fails at 0.3); η = 0.5, batch 16, 300 steps (the thesis gives none); "
        "success at test hinge < 0.01 (thesis 1e-3); Fig 2.2 from the map's runs at δ = 0.2 (thesis 0.4); "
        "the chapter's non-degenerate initialisation",
        gpu_piece_s=150.0, gpu_jobs=2),  # 320 networks x 300 steps, and 6,020 evaluations of 500 samples a piece
]
