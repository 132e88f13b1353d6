"""Part VI's named paper-scale runs (:mod:`lib.paper_scale`): the success maps of Fig 3.3 at the thesis's graph.

``gt_fig33a`` and ``gt_fig33b`` train the graph transformer of Chapter VI.2
(:func:`~lib.parts.generalisation.graph_transformers.train_gt`) at the thesis's sizes
(:data:`~lib.parts.generalisation.settings.GT`: N = 1000, D = 120, K = 60, m = 400) with more steps, seeds and
labelled-set sizes than the chapter affords, one piece per point of the swept axis, and decide the chapter's
claims with the chapter's rule,
:func:`~lib.parts.generalisation.scaling.boundary_exponent` (success: final test hinge below :data:`GT_LEVEL`).
"""

from __future__ import annotations

import numpy as np

from lib.paper_scale import PaperRun
from lib.parts.generalisation.graph_transformers import train_gt
from lib.parts.generalisation.scaling import boundary_exponent
from lib.parts.generalisation.settings import GT

#: The graph-transformer chapter's success level (final test hinge loss below it; the thesis's is 1e-3).
GT_LEVEL = 0.1

_LS = (10, 20, 40, 80, 160, 320, 640)
_SEEDS = tuple(range(8))
_BASE = dict(cfg=dict(GT, steps=1500), Ls=_LS, seeds=_SEEDS, level=GT_LEVEL)
_FIG33A = dict(_BASE, axis="gamma_d", xs=(0.2, 0.3, 0.4, 0.5, 0.6), fixed=0.05)
_FIG33B = dict(_BASE, axis="eps_S", xs=(0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35), fixed=0.4)
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
            "model-steps; measured on 2 shared CPU cores at the paper configuration: about 0.6 s a step of the "
            "56 stacked networks and 30 s to build a piece's graphs (about 15 minutes a piece); no GPU timing yet")


GENERALISATION_PAPER_RUNS = [
    PaperRun(
        name=f"gt_fig33{panel}", title=f"VI.2 Fig 3.3({panel}) at the thesis's graph (N = 1000, D = 120, K = 60, "
        f"m = 400): |L|* against {what}", chapter="notebooks/generalisation/02_graph_transformers", config=cfg,
        smoke=dict(_TINY, axis=cfg["axis"], fixed=cfg["fixed"], xs=cfg["xs"][:3]), pieces=_gt_pieces,
        run_piece=_gt_piece, combine=_gt_combine, claims=_gt_claims, cost=_gt_cost, entry=train_gt,
        note="η = 0.1 (thesis 0.01), 1,500 steps, success at test hinge < 0.1 (thesis 1e-3), as in the chapter")
    for panel, cfg, what in (("a", _FIG33A, "γ_d"), ("b", _FIG33B, "1 - ε_S"))
]
