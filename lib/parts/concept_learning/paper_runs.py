"""Part III's named paper-scale run (:mod:`lib.paper_scale`): Fig. 6 at 32x32 faithful images.

``concept_fig6`` runs :func:`~lib.parts.concept_learning.diffusion.concept_diffusion_experiment` at
:data:`~lib.parts.concept_learning.settings.PAPER_SCALE_FIG6`, one piece per (colour signal, seed), and decides the
chapter's Fig. 6 claims with :func:`~lib.parts.concept_learning.diffusion_variants.fig6_verdicts` at the chapter's
constants (:data:`FIG6_RULES`; a unit test checks that they are the chapter's).
"""

from __future__ import annotations

import numpy as np

from lib.paper_scale import PaperRun
from lib.parts.concept_learning.diffusion import concept_diffusion_experiment
from lib.parts.concept_learning.diffusion_variants import fig6_verdicts
from lib.parts.concept_learning.settings import PAPER_SCALE_FIG6

#: The diffusion chapter's decision constants (LEVEL, BEND, BEND_SE, DECAY, BUMP, BUMP_SE), as fig6_verdicts takes
#: them.
FIG6_RULES = dict(level=0.5, bend=0.1, bend_se=2.0, decay=10.0, bump=0.1, bump_se=2.0)

_SMOKE = dict(PAPER_SCALE_FIG6, deltas=(0.2, 0.7), seeds=(0,), image_size=8, variant="easy", n_per_class=16,
              channels=(8, 8), steps=24, batch_size=8, n_checkpoints=10, first_checkpoint=1, samples=4,
              sample_steps=2, classifier_steps=5)


def _pieces(config: dict) -> list[dict]:
    return [dict(config, deltas=(float(d),), seeds=(int(s),)) for d in config["deltas"] for s in config["seeds"]]


def _run_piece(piece: dict, device: str) -> dict:
    r = concept_diffusion_experiment(**piece, device=device)
    return {k: np.asarray(r[k]) for k in ("deltas", "seeds", "checkpoint", "concepts", "diverged",
                                          "classifier_accuracy")} | {"final_loss": np.asarray(r["loss"][-1])}


def _combine(config: dict, results: list[dict]) -> dict:
    D, R = len(config["deltas"]), len(config["seeds"])
    grid = [results[i * R:(i + 1) * R] for i in range(D)]
    return dict(
        deltas=np.asarray(config["deltas"], float), seeds=np.asarray(config["seeds"]),
        checkpoint=results[0]["checkpoint"],
        concepts=np.stack([np.concatenate([x["concepts"] for x in row], axis=1)[0] for row in grid]),
        diverged=np.stack([np.concatenate([x["diverged"] for x in row], axis=1)[0] for row in grid]),
        final_loss=np.stack([np.concatenate([x["final_loss"] for x in row], axis=1)[0] for row in grid]),
        classifier_accuracy=results[0]["classifier_accuracy"],
    )


_CLAIMS = (
    ("order", "Fig. 6(a), Sec. 5", "The colour signal sets the order of concept learning",
     "read-out running median > LEVEL = 0.5; reproduced if the reversal holds for the seed mean and in every seed, "
     "partly if for the seed mean or in some seeds"),
    ("bend", "Fig 6(a) (speed and bend)", "The concept-space path bends towards the training class",
     "offset > BEND = 0.1 and > 2 bootstrap SE in more than half the seeds, at the strongest and the weakest "
     "signal (partly: at one)"),
    ("decay", "Fig. 6(c), Thm 4.1", "The speed of movement in concept space decays by orders of magnitude",
     "first/last-quarter median speed ratio >= DECAY = 10 at every signal (partly: at some)"),
    ("final", "Fig. 6(a, b)", "With a strong colour signal the model composes the held-out",
     "seed-mean concept MSE at the strongest signal < 0.1 at the end"),
    ("bump", "Fig. 6(b), Sec. 5", "The concept-space MSE rises for a while before the model generalises",
     "rise > BUMP = 0.1 and > 2 bootstrap SE in more than half the weak-signal seeds (partly: in any run)"),
)


def _claims(arrays, config: dict) -> list[dict]:
    v = None if arrays is None else fig6_verdicts(arrays, **FIG6_RULES)
    out = []
    for key, source, statement, rule in _CLAIMS:
        measured = ""
        if v is not None:
            measured = {
                "order": f"strong δ colour/size at {v['order_strong']}, weak at {v['order_weak']}; reversal in "
                         f"{v['order_seeds']}/{v['seeds']} seeds",
                "bend": f"bend in {v['bend_strong']}/{v['seeds']} seeds (strong), {v['bend_weak']} (weak)",
                "decay": "speed ratio " + "/".join(f"{r:.0f}" for r in v["decay_ratio"]),
                "final": "final MSE " + "/".join(f"{m:.3f}" for m in v["final_mse"]),
                "bump": f"MSE bump in {v['bump_weak']}/{v['seeds']} weak-signal seeds",
            }[key]
        out.append(dict(source=source, statement=statement, cpu=statement, rule=rule, measured=measured,
                        status=None if v is None else v[f"{key}_status"]))
    return out


def _cost(config: dict) -> str:
    models = len(config["deltas"]) * len(config["seeds"])
    steps = models * config["steps"]
    return (f"{models} U-Nets x {config['steps']:,} AdamW steps = {steps:,} model-steps of batch "
            f"{config['batch_size']} at {config['image_size']}x{config['image_size']}; measured 16.9 ms a step on "
            f"one H200 and 6.7 s on one CPU core (issue 25): about {steps * 0.0169 / 3600:.1f} h on that GPU, "
            f"{steps * 6.748 / 86400:.0f} days on one core")


CONCEPT_PAPER_RUNS = [
    PaperRun(
        name="concept_fig6", title="III.3 Fig. 6 at the paper's scale: 32x32 faithful images, six signals x five "
        "seeds, 20k steps", chapter="notebooks/concept_learning/03_diffusion", config=PAPER_SCALE_FIG6,
        smoke=_SMOKE, pieces=_pieces, run_piece=_run_piece, combine=_combine, claims=_claims, cost=_cost,
        entry=concept_diffusion_experiment,
        note="one residual block per U-Net level, no attention, a fixed noise schedule (see PAPER_FIG6)"),
]
