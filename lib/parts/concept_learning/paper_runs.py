"""Part III's named runs (:mod:`lib.paper_scale`): Fig. 6 at 32x32 faithful images, and the CPU study of the
authors' training details.

``concept_fig6`` runs :func:`~lib.parts.concept_learning.diffusion.concept_diffusion_experiment` at
:data:`~lib.parts.concept_learning.settings.PAPER_SCALE_FIG6`, one piece per (colour signal, seed), and decides the
chapter's Fig. 6 claims with :func:`~lib.parts.concept_learning.diffusion_variants.fig6_verdicts` at the chapter's
constants (:data:`FIG6_RULES`; a unit test checks that they are the chapter's).

``concept_variants`` (a CPU study, about 1,400 CPU seconds) retrains the chapter's quick configuration
:data:`~lib.parts.concept_learning.settings.CPU_FIG6_QUICK` once with the chapter's training and once under each
training detail of :data:`~lib.parts.concept_learning.settings.AUTHORS_CODE_VARIANTS`, one piece per (variant, colour
signal); the chapter reads its committed result while the code it ran is unchanged (:func:`variant_study`) and
retrains otherwise.
"""

from __future__ import annotations

import numpy as np

from lib.paper_scale import PaperRun, current_result
from lib.parts.concept_learning.diffusion import concept_diffusion_experiment
from lib.parts.concept_learning.diffusion_variants import fig6_verdicts
from lib.parts.concept_learning.settings import AUTHORS_CODE_VARIANTS, CPU_FIG6_QUICK, PAPER_SCALE_FIG6

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


#: The label of the chapter's own training among the study's variants.
OWN_TRAINING = "the chapter's training"
#: The CPU study's configuration: the chapter's quick configuration and the variants' options by label.
VARIANT_STUDY = dict(run=CPU_FIG6_QUICK, variants={OWN_TRAINING: {}, **AUTHORS_CODE_VARIANTS})
_VARIANT_SMOKE = dict(run=dict(_SMOKE, seeds=(0, 1)),
                      variants={OWN_TRAINING: {}, "dropout 0.1 in every block": dict(dropout=0.1)})


def _variant_pieces(config: dict) -> list[dict]:
    return [dict(config["run"], deltas=(float(d),), options=dict(opts), label=label)
            for label, opts in config["variants"].items() for d in config["run"]["deltas"]]


def _variant_piece(piece: dict, device: str) -> dict:
    kw = {k: v for k, v in piece.items() if k not in ("options", "label")}
    r = concept_diffusion_experiment(**kw, **piece["options"], device=device)
    return {k: np.asarray(r[k]) for k in ("deltas", "seeds", "checkpoint", "concepts")}


def _variant_combine(config: dict, results: list[dict]) -> dict:
    D = len(config["run"]["deltas"])
    out = dict(labels=np.asarray(list(config["variants"]), dtype=str), seeds=results[0]["seeds"],
               checkpoint=results[0]["checkpoint"], deltas=np.asarray(config["run"]["deltas"], float))
    for v in range(len(config["variants"])):
        row = results[v * D:(v + 1) * D]
        out[f"concepts_{v}"] = np.concatenate([x["concepts"] for x in row], axis=0)
    return out


def variant_study(results_dir=None):
    """The committed result of ``concept_variants`` as the chapter's variant runs, when it is current.

    Returns:
        ``(runs, meta, state)``: ``runs`` is ``{label: run}`` (each run a dict with ``deltas``, ``seeds``,
        ``checkpoint`` and ``concepts``, what :func:`~lib.parts.concept_learning.diffusion_variants.fig6_verdicts`
        reads) and ``meta`` the result's provenance, both None unless ``state`` (that of
        :func:`lib.paper_scale.current_result`) is ``"current"``.
    """
    arrays, meta, state = current_result("concept_variants", results_dir)
    if arrays is None:
        return None, None, state
    runs = {str(label): dict(deltas=arrays["deltas"], seeds=arrays["seeds"], checkpoint=arrays["checkpoint"],
                             concepts=arrays[f"concepts_{v}"]) for v, label in enumerate(arrays["labels"])}
    return runs, meta, state


def _no_claims(arrays, config: dict) -> list:
    return []  # a CPU study: its claims are the chapter's own


def _variant_cost(config: dict) -> str:
    run = config["run"]
    models = len(config["variants"]) * len(run["deltas"]) * len(run["seeds"])
    steps = models * run["steps"]
    return (f"{models} U-Nets x {run['steps']:,} AdamW steps = {steps:,} model-steps of batch {run['batch_size']} "
            f"at {run['image_size']}x{run['image_size']}; about 1,400 CPU seconds (one thread a process: 12-15 minutes "
            "with --jobs 2 on two cores)")


CONCEPT_PAPER_RUNS = [
    PaperRun(
        name="concept_fig6", title="III.3 Fig. 6 at the paper's scale: 32x32 faithful images, six signals x five "
        "seeds, 20k steps", chapter="notebooks/concept_learning/03_diffusion", config=PAPER_SCALE_FIG6,
        smoke=_SMOKE, pieces=_pieces, run_piece=_run_piece, combine=_combine, claims=_claims, cost=_cost,
        entry=concept_diffusion_experiment,
        note="one residual block per U-Net level, no attention, a fixed noise schedule (see PAPER_FIG6)",
        gpu_piece_s=420.0),  # 20,000 steps at the 16.9 ms measured on an H200, plus checkpoints and sampling
    PaperRun(
        name="concept_variants", title="III.3 under the training details of the authors' code: the quick "
        "configuration retrained once per detail (two signals x three seeds, 1,500 steps)",
        chapter="notebooks/concept_learning/03_diffusion", config=VARIANT_STUDY, smoke=_VARIANT_SMOKE,
        pieces=_variant_pieces, run_piece=_variant_piece, combine=_variant_combine, claims=_no_claims,
        cost=_variant_cost, entry=concept_diffusion_experiment, paper_scale=False,
        note="the book's own size, not the paper's: a study too long for every build"),
]
