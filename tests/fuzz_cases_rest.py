"""Cases of ``tests/test_fuzz.py`` for the experiment drivers, result readers and per-step kernels that had none
(imported there): each valid call trains for one or two steps at toy sizes (well under a second), so that the
mutations reach the checks at the top of the function."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib import claims, widgets
from lib.parts.concept_learning import diffusion, diffusion_variants, sim_one_layer
from lib.parts.edge_of_stability import balancing
from lib.parts.edge_of_stability import beyond_low_dimension as bld
from lib.parts.generalisation import chain_of_thought, gcn_sampling, shallow_vits, vit_images
from lib.parts.generalisation import group_images as gim
from lib.parts.generalisation import in_context_learning as icl
from lib.parts.generalisation.settings import VIT
from lib.parts.graph_networks import walk_counting
from lib.parts.induction_heads import construction, four_phases, trained_transformers
from lib.parts.memorisation import ioi, language_models, noisy_recall
from lib.parts.memorisation.settings import RECALL_QUICK


def C(fn, kinds: str, *args, **kwargs):
    """One case: ``fn(*args, **kwargs)`` is valid; ``kinds`` = "name:kind name:kind ..."."""
    return pytest.param(fn, args, kwargs, dict(k.split(":") for k in kinds.split()), id=fn.__qualname__)


_G = torch.Generator().manual_seed(0)
# --- in-context learning: one shallow-attention model and a probe batch
MU, NU = icl.icl_banks(6, 4, 10)
ICL_CFG = dict(relevant=MU, irrelevant=NU, tasks=icl.cyclic_tasks(6), length=4, alpha=0.8, kappa=0.5)
# --- ViTs on images: two tiny models and their data
ARCH = dict(width=8, heads=2, blocks=1)
VIT_X = torch.randn(2, 12, 25, 16, generator=_G)
VIT_Y = torch.randint(0, 3, (2, 12), generator=_G)
VIT_KEEP = torch.ones(2, 12, 25, dtype=torch.bool)
torch.manual_seed(0)
VIT_MODEL = vit_images.TinyViT(**ARCH, n_classes=3)
# --- group images: three training sets of 20 points and two test sets
_rng = np.random.default_rng(0)
GIM_X, GIM_Y = _rng.normal(size=(3, 20, 5)), (_rng.random((3, 20)) < 0.5).astype(float)
GIM_XT, GIM_YT = _rng.normal(size=(2, 10, 5)), (_rng.random(10) < 0.5).astype(float)
# --- sampled GCNs: one small two-group problem
GCN_PR = gcn_sampling.two_group_problem((10, 30), (8, 2), seed=0)
GCN_MASKS = gcn_sampling.label_masks(40, (20,), (0,))
GCN_Y = torch.zeros(40, 2, dtype=GCN_PR["X"].dtype)
GCN_SWEEP = dict(sizes=(10, 30), p_star=(0.7, 0.3), m=4, steps=1, lr=1e-2, seeds=(0,))
# --- ViT settings and the other trainers' toy settings
VIT_CFG = dict(VIT, L=10, m=8, steps=1, n_test=10)
RECALL = dict(RECALL_QUICK, d=16, T=16, batch=4, n_test=4)
IOI = dict(n_tokens=6, d=8, T=10, batch=4, alpha=0.5, steps=1, lr=0.03, momentum=0.9, weight_decay=1e-4,
           adam_lr=1e-3, n_test=4, laser_rank=2)
INDUCTION = dict(T=16, V=8, seg_min=3, seg_max=6, d_model=8, batch=4, steps=1, record_every=1, eval_batch=4)
# --- concept diffusion: a fake merged run with two signals, two seeds and eight checkpoints
_P = 8
RUN = dict(deltas=np.array([0.2, 0.8]), seeds=np.array([0, 1]), checkpoint=np.geomspace(10, 1000, _P).round(),
           concepts=np.clip(_rng.normal(0.5, 0.2, size=(2, 2, _P, 4, 2)), 0, 1),
           images=np.zeros((2, 2, _P, 1, 3, 2, 2), np.float16), diverged=np.zeros((2, 2), bool),
           loss=np.ones((5, 2, 2)), classifier_accuracy=np.ones(2), seconds=1.0)
RULES = dict(level=0.5, bend=0.1, bend_se=2.0, decay=2.0, bump=0.01, bump_se=2.0)
VERDICTS = diffusion_variants.fig6_verdicts(RUN, **RULES)
# --- formulas: diffusion's forward process, the ICL model's projections
X_IMG = torch.rand(4, 3, 4, 4, generator=_G) * 2 - 1
EPS = torch.randn(4, 3, 4, 4, generator=_G)
T4 = torch.rand(4, generator=_G)
ICL_MODEL = icl.icl_model(1, m=4, d_x=MU.shape[1], d_y=MU.shape[1])
ICL_X = torch.randn(1, 3, 5, 2 * MU.shape[1], generator=_G, dtype=ICL_MODEL.W_Q.dtype)
ICL_PAT = torch.randint(0, MU.shape[0], (3, 5), generator=_G)


def _plot(a):
    import matplotlib.pyplot as plt

    return plt.figure(figsize=(1, 1))


CASES = [
    # ------------------------------------------------------------------------------- result readers, records
    C(claims.exponent_status, "predicted:real", __import__("lib.stats", fromlist=["x"]).power_law_exponent(
        np.arange(1.0, 9.0), np.arange(1.0, 9.0) ** -1.0, n_boot=100), -1.0),
    C(claims.failed_preconditions, "preconditions:objectnone", {"enough seeds (3 >= 3)": True}),
    C(diffusion.concept_mse, "coords:array target:array", np.ones((3, 2)) * 0.5),
    C(diffusion.merge_diffusion_runs, "parts:object", [dict(RUN, deltas=RUN["deltas"][:1]),
                                                       dict(RUN, deltas=RUN["deltas"][1:])]),
    C(diffusion.mse_rebound_bootstrap, "concepts:array n_boot:count window:count seed:seed",
      RUN["concepts"][0, 0], n_boot=5),
    C(diffusion_variants.fig6_verdicts, "run:object level:pos bend:pos bend_se:pos decay:pos bump:pos bump_se:pos "
      "first_step:count", RUN, **RULES),
    C(diffusion_variants.decay_law_status, "laws:object", VERDICTS["laws"]),
    C(diffusion_variants.verdicts_survive, "v:object base:object", VERDICTS, VERDICTS),
    C(diffusion_variants.verdict_line, "v:object", VERDICTS),
    C(sim_one_layer.GDMoments, "steps:array outputs:state diverged:bool diverged_step:countnone",
      np.arange(3), np.ones((3, 2)), False, None),
    C(widgets.SliderFigure, "plot_fn:callable sliders:object dpi:count max_frames:count", _plot, {"a": [1, 2]},
      None, {}, 30, "", 4),
    C(vit_images.accuracy, "model:object X:array y:array keep:object", VIT_MODEL, VIT_X[0], VIT_Y[0], VIT_KEEP[0]),
    # ------------------------------------------------------------------------------- trainers at toy sizes
    C(bld.teacher_student_experiment, "m:count lr:pos steps:count decay_to:posnone decay_steps:count "
      "sharp_every:count data_seed:seed init_seed:seed", m=8, lr=0.5, steps=1),
    C(bld.mlp_eos_experiment, "depth:count lr:pos steps:count seed:seed stats_every:count keep_params_every:count "
      "std_min:nonneg cond_frac:prob", depth=2, lr=0.1, steps=1, cond_frac=0.0),
    C(gim.train_group_mlps, "X:array y:array X_test:array y_test:array seeds:array width:count steps:count lr:pos",
      GIM_X, GIM_Y, GIM_XT, GIM_YT, [0, 1, 2], width=4, steps=1),
    C(gim.augmentation_sweep, "deltas2:array seeds:array n_major:count n_minor:count n_aug:count contrast:pos "
      "width:count steps:count lr:pos", [0.0], [0], n_major=20, n_minor=8, n_aug=2, width=4, steps=1),
    C(gcn_sampling.train_sampled_gcn, "problem:object Y:array masks:object sampler:option p_star:array keep:prob "
      "m:count steps:count lr:pos seed:seed", GCN_PR, GCN_Y, GCN_MASKS, m=4, steps=1, lr=1e-2),
    C(gcn_sampling.train_sampled_gcn, "method:option batch:count inner:count eps0:prob c0:pos", GCN_PR, GCN_Y,
      GCN_MASKS, m=4, steps=2, lr=1e-3, method="algorithm2", batch=2, inner=1, eps0=0.01, c0=10.0),
    C(gcn_sampling.omega_width_sweep, "sizes:array degree_pairs:object p_star:array omegas:array widths:array "
      "omega_fixed:count m:count steps:count lr:pos seeds:array keep:prob graph_seed:seed",
      degree_pairs=((8, 2),), omegas=(20,), widths=(4,), omega_fixed=20, **GCN_SWEEP),
    C(gcn_sampling.which_target_sweep, "sizes:array degrees:array p_star:array datasets:object samplers:object "
      "omega:count m:count steps:count lr:pos seeds:array keep:prob graph_seed:seed",
      degrees=(8, 2), datasets=((0.7, 0.3),), samplers=("group",), omega=20, **GCN_SWEEP),
    C(shallow_vits.sparsification_runs, "cfg:object seeds:array N:count alpha_star:prob alpha_hash:prob "
      "n_remove:count noisy:object record_every:count", VIT_CFG, [0], 4, 0.4, 0.1, 2, (2, 1.0), record_every=1),
    C(shallow_vits.sigma_map, "cfg:object sigmas:array Ns:array seeds:array alpha_star:prob alpha_hash:prob",
      VIT_CFG, [0.0], [4], [0], 0.4, 0.1),
    C(vit_images.train_vits, "models:object X:array y:array keep:object members:array steps:count lr:pos "
      "batch:count seed:seed", [VIT_MODEL, vit_images.TinyViT(**ARCH, n_classes=3)], VIT_X, VIT_Y, VIT_KEEP,
      [[0, 12], [1, 6]], steps=1, lr=1e-2, batch=4),
    C(vit_images.spurious_runs, "removals:array seeds:array n_test_per_class:count pre_sizes:array "
      "photo_share:array arch:object pre_steps:count steps:count lr:pos batch:count",
      [0, 9], [0], n_test_per_class=4, pre_sizes=(16, 4), arch=ARCH, pre_steps=1, steps=1, lr=1e-2, batch=4),
    C(walk_counting.counting_table, "graph:object length:count split:option n_train:count models:object seed:seed",
      dict(kind="random_regular", n=12, degree=3, seed=0), 2, "parity", 6, [("GIN", None, 4, 0.01, 1)]),
    C(construction.gih2_width_sweep, "P:object g:callable Ls:array Ms:array Ks:array B:count seed:seed",
      construction.pod(lambda u, v: abs(u * v), n_nodes=20), lambda u, v: abs(u * v), [4], [2], [1], B=2),
    C(trained_transformers.train_induction, "setting:object seed:seed steps:countnone show:countnone progress:bool",
      INDUCTION),
    C(ioi.ioi_experiment, "setting:object n_layers:count optimizer:option seed:seed", IOI, 1, "sgd"),
    C(noisy_recall.recall_experiment, "setting:object steps:count seed:seed triggers:array ffn:object "
      "pretrain_steps:count", RECALL, 1),
    # ------------------------------------------------------------------------------- formulas and references
    C(four_phases.phi, "x:state", np.linspace(-0.5, 0.5, 5)),
    C(four_phases.psi, "x:state", np.linspace(-0.5, 0.5, 5)),
    C(balancing.single_neuron_population_loss, "v:real w:array w_teacher:array", 0.5, np.ones(3), np.ones(3)),
    C(balancing.single_neuron_population_grad, "v:real w:array w_teacher:array", 0.5, np.ones(3), np.ones(3)),
    C(diffusion.q_sample, "schedule:object x:array t:array eps:array", diffusion.VPSchedule(), X_IMG, T4, EPS),
    C(diffusion.diffusion_loss, "eps_fn:callable schedule:object x:array cond:array t:array eps:array",
      lambda z, t, c: z, diffusion.VPSchedule(), X_IMG, torch.zeros(4, 4), T4, EPS),
    C(icl.projection_norms, "model:object X:array pattern:object relevant:array", ICL_MODEL, ICL_X, ICL_PAT, MU),
]

LM, _ = language_models.train_template_lm(steps=1, batch=2, d_model=8, n_layers=1)
CASES += [
    C(language_models.run_template_lm, "steps:count batch:count d_model:count n_layers:count lr:pos seed:seed "
      "record_steps:array0 ranks:array", 1, 2, 8, 1, 3e-3, 0, [0, 1], [1]),
    C(language_models.probe, "model:object prompts:objectnone", LM),
    C(language_models.laser_sweep, "model:object ranks:array prompts:objectnone", LM, [1]),
]
CASES += [
    C(diffusion.concept_diffusion_experiment, "deltas:array seeds:array image_size:count variant:option "
      "n_per_class:count channels:array steps:count batch_size:count lr:pos weight_decay:nonneg n_checkpoints:count "
      "first_checkpoint:count samples:count sample_steps:count classifier_steps:count noise_seed:seed "
      "progress:objectnone threads:count data_range:option dropout:prob learned_schedule:bool clip_norm:posnone",
      deltas=(0.2, 0.7), seeds=(0,), n_per_class=4,
      channels=(8, 8), steps=2, batch_size=2, n_checkpoints=2, first_checkpoint=1, samples=2, sample_steps=1,
      classifier_steps=1),
]

COT = chain_of_thought.train_cot(steps=1, batch=2, n_examples=2)
CASES += [
    C(chain_of_thought.attention_dynamics, "Ws:array", COT["Ws"]),
    C(chain_of_thought.error_curves, "W:array", COT["Ws"][-1], lengths=[2, 3]),
]
