"""Cases of ``tests/test_fuzz.py`` for the parts' helpers and small models (imported there): one valid, small call
per public function, with the kinds of the parameters to mutate (the others get a kind from their base value)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from lib import curvature, maps, plots, success, widgets
from lib.data import gmm as gmm_mod
from lib.graphs import generators, operators, wl
from lib.models import cnn, hf, shallow_attention, unet
from lib.parts.concept_learning import deep_models, diffusion, jacobian_lemmas, linear_gd, shapes, sim_data
from lib.parts.concept_learning import plots as cplots
from lib.parts.edge_of_stability import beyond_low_dimension as bld
from lib.parts.edge_of_stability import matrix_factorisation as mf
from lib.parts.generalisation import (
    chain_of_thought,
    cot_multilayer,
    cot_prompt_length,
    gcn_sampling,
    group_imbalance,
    scaling,
    settings,
    shallow_vits,
    vit_images,
    vit_rules,
)
from lib.parts.generalisation import in_context_learning as icl
from lib.parts.graph_networks import communities, rooted_graphs, telling_graphs_apart, walk_counting
from lib.parts.induction_heads import construction, convergence, four_phases, sample_flows, trained_transformers
from lib.parts.memorisation import ioi, language_models, noisy_recall, recall_rules
from lib.parts.memorisation import settings as msettings


def C(fn, kinds: str, *args, **kwargs):
    """One case: ``fn(*args, **kwargs)`` is valid; ``kinds`` = "name:kind name:kind ..."."""
    return pytest.param(fn, args, kwargs, dict(k.split(":") for k in kinds.split()), id=fn.__qualname__)


def _ax():
    import matplotlib.pyplot as plt

    return plt.figure(figsize=(1, 1)).add_subplot()


def _fig():
    import matplotlib.pyplot as plt

    return plt.figure(figsize=(1, 1))


G6 = nx.cycle_graph(6)
T6 = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64)
A2 = sim_data.second_moment([1.0, 2.0], [0.1, 0.2], 2)
W0_2 = np.array([[0.5, 0.01], [0.01, 0.3]])
LIN = torch.nn.Linear(2, 1).double()
XY = (torch.ones(4, 2, dtype=torch.float64), torch.zeros(4, 1, dtype=torch.float64))
TS_X = torch.randn(8, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
MF_C = mf.diag_target(np.array([[1.0, 0.5]]))[0]
ICL_MODEL = icl.icl_model(2, m=4, d_x=4, d_y=2)
TOK = torch.tensor([[0, 1, 2, 0, 1, 2]])
STEP_MAPS = torch.tensor([[[1, 2, 0], [2, 0, 1]]])
STEP_MAPS3 = torch.tensor([[[1, 2, 0], [2, 0, 1], [0, 2, 1]]])
SCHED = diffusion.VPSchedule()


GMM2 = gmm_mod.gaussian_mixture([0.5, 0.5], np.array([[1.0, 0.0], [-1.0, 0.0]]), np.stack([np.eye(2)] * 2))
W2 = torch.tensor([[1.0, -1.0], [0.5, 0.5]], dtype=torch.float64)
GI_X = np.random.default_rng(0).standard_normal((40, 2))
GI_Y = (GI_X[:, 0] > 0).astype(float)
GCN_PROBLEM = gcn_sampling.two_group_problem((10, 30), (4, 2), d=3, p=3, seed=0)
VIT_CFG = dict(settings.VIT, L=10, m=8, steps=5, n_test=20)
RECALL = dict(msettings.RECALL_QUICK, n_chars=8, d=16, T=16, batch=8, n_test=16)
RECALL_MODEL = noisy_recall.recall_model(8, 16, 16)
CLEAN = noisy_recall.eval_batches(RECALL)[0]
HEX, TRI = generators.hexagon_and_triangles()


ICL_CFG6 = dict(relevant=icl.icl_banks()[0], irrelevant=icl.icl_banks()[1], tasks=icl.cyclic_tasks(6), length=4,
                alpha=0.8, kappa=0.5)
ICL_M = icl.icl_model(2, m=4)
ICL_P = icl.sample_icl_prompts(6, ICL_CFG6["relevant"], ICL_CFG6["irrelevant"], ICL_CFG6["tasks"], length=4,
                               alpha=0.8, kappa=0.5, generator=torch.Generator().manual_seed(0))
ICL_B = icl._run_batch([ICL_CFG6] * 2, 5, torch.Generator().manual_seed(0), 30)
WS, BS = linear_gd.init_deep_linear(2, 2, 2, 3, K=1, bias=True, seed=0)
SIM_X = sim_data.sim_samples((1.0, 2.0), (0.1, 0.1), 2, 8, seed=0)[0]
TREE = wl.aggregation_tree(G6, 0, 2)
IHN_W = torch.tensor([[1.0, 0.5], [-0.3, 0.8]], dtype=torch.float64)
IHN_X = torch.ones(2, 6, 1, dtype=torch.float64)


SYM = deep_models.run_symmetric(A2, [1.0, 2.0], deep_models.init_symmetric(2, 2, 0.1, 2), 0.1, 30)
FOUR = four_phases.four_phase_dynamics(1.0, 0.49, 20, 0.01, 100.0, n_points=20)


def _eps(z, t, cond):
    return torch.zeros_like(z)


def _plot(a):
    fig = _fig()
    fig.gca().plot([0, a])
    return fig


CASES = [
    # ------------------------------------------------------------------------------------------ generic layer
    C(curvature.flatten_module, "model:object loss_of_model:callable", LIN,
      lambda call: ((call(XY[0]) - XY[1]) ** 2).mean()),
    C(curvature.top_eigenpairs, "op:object k:count method:option tol:pos maxiter:count seed:seed",
      curvature.HessianOperator(lambda t: (t**2).sum() + t.sum() ** 4, T6), 1),
    C(maps.cobweb, "ax:object F:callable x0:real steps:count n_curve:count", _ax(), lambda x: 0.5 * x, 0.3, 3,
      (0.0, 1.0), n_curve=10),
    C(plots.figure_description, "fig:object", _fig()),
    C(widgets.render_png, "fig:object dpi:count", _fig(), 20),
    C(widgets.static_html, "plot_fn:callable dpi:count", _plot, {"a": [1, 2]}, {"a": 1}, dpi=20),
    C(cnn.ConceptCNN, "cfg:objectnone", cnn.CNNConfig(channels=(4, 4, 4), hidden=8)),
    C(unet.CondUNet, "cfg:objectnone", unet.UNetConfig(channels=(8, 8), emb_dim=8)),
    C(shallow_attention.ShallowAttention, "runs:count d:count m:count readout:option init_o_std:nonneg", 1, 4, 3),
    # ---------------------------------------------------------------------------------------------- Part I
    C(bld.ts_unpack, "theta:array d:count", torch.ones(20, dtype=torch.float64), 4),
    C(bld.ts_ratios, "theta:array d:count", torch.ones(20, dtype=torch.float64), 4),
    C(bld.ts_loss, "X:array y:array", TS_X, torch.ones(8, dtype=torch.float64)),
    C(bld.equal_k_sharpness, "X:array k_values:array", TS_X, [0.5, 1.0]),
    C(bld.line_search_minimum, "loss:callable theta:array g:array lr:pos n_grid:count",
      lambda t: (t**2).sum(), T6, T6, 0.1, n_grid=11),
    C(mf.mf_flat_loss, "m:count p:count q:count C:array", 2, 2, 2, MF_C),
    C(mf.orbit_structure, "Y:array Z:array C:array", torch.eye(2), torch.eye(2), MF_C),
    # ---------------------------------------------------------------------------------------------- Part II
    C(construction.build_vanilla_ih, "W:array p:pos", torch.eye(2, dtype=torch.float64), 2.0),
    C(construction.run_last, "model:object X:array n:count",
      construction.build_vanilla_ih(torch.eye(2, dtype=torch.float64), 2.0), torch.ones(1, 4, 2,
                                                                                        dtype=torch.float64)),
    C(construction.relu_features_fit, "f:callable M:count low:real high:real n_fit:count ridge:pos rng:seed",
      np.sin, 4, n_fit=20),
    C(four_phases.mixed_target, "X:array alpha_star:pos w_star:pos softmax:option",
      np.random.default_rng(0).standard_normal((2, 6)), 1.0, 0.49),
    C(trained_transformers.induction_targets, "tokens:array", TOK),
    C(trained_transformers.induction_score, "A:array tokens:array", torch.full((1, 1, 6, 6), 1 / 6), TOK),
    # --------------------------------------------------------------------------------------------- Part III
    C(deep_models.check_assumptions, "a:array W0:array lr:pos P:pos K:pos kappa:pos C:pos", A2, W0_2, 0.1),
    C(deep_models.assumptions_satisfiable, "a:array W0:array lr:pos", A2, W0_2, 0.1),
    C(deep_models.run_symmetric, "a:array mu:array U0:array lr:pos steps:count", A2, [1.0, 2.0],
      deep_models.init_symmetric(2, 2, 0.1, 1), 0.1, 3),
    C(jacobian_lemmas.check_lemmas, "max_steps:count dynamics:option lam:prob chunk:count",
      jacobian_lemmas.lemma_setting([1.0, 4.0], 2), 3),
    C(linear_gd.end_to_end, "weights:object", [torch.eye(2), torch.eye(2)]),
    C(shapes.class_conditioning, "delta:prob", 0.5),
    C(shapes.render_discs, "centre:array radius:array color:array background:array image_size:count",
      np.full((1, 2), 4.0), np.array([2.0]), np.ones((1, 3)), np.zeros((1, 3)), 8),
    C(diffusion.VPSchedule, "gamma_min:real gamma_max:real"),
    C(diffusion.ddim_sample, "eps_fn:callable schedule:object noise:array cond:array steps:count clip:posnone",
      _eps, SCHED, torch.zeros(1, 3, 4, 4), torch.zeros(1, 4), steps=2),
    # ---------------------------------------------------------------------------------------------- Part IV
    C(rooted_graphs.tree_walk_counts, "m:count K:count labels:array", 2, 2, np.array([0, 1, 1, 0, 1, 0, 1]),
      (0, 1)),
    C(telling_graphs_apart.algorithm1_keys, "graphs:object", [nx.cycle_graph(10)]),
    C(walk_counting.handset_gin, "G:object length:count", G6, 2),
    # ---------------------------------------------------------------------------------------------- Part VI
    C(icl.unseen_tasks, "tasks:array m1:count", icl.cyclic_tasks(4), 4),
    C(icl.neuron_rows, "model:object", ICL_MODEL),
    C(icl.one_run, "model:object run:count", ICL_MODEL, 1),
    C(shallow_vits.vit_init, "runs:count d:count kappa:pos delta:nonneg sigma:nonneg gen:object", 1, 4, 1.0, 0.2,
      0.1, torch.Generator().manual_seed(0)),
    C(vit_images.alpha_star, "n_removed:array", [0, 3]),
    C(chain_of_thought.step_transitions, "step_maps:array tau:prob rho:prob mode:option generator:objectnone",
      STEP_MAPS, 0.5, 0.8, generator=torch.Generator().manual_seed(0)),
    C(chain_of_thought.fig75_transitions, "step_maps:array fail_share:prob generator:objectnone", STEP_MAPS3,
      generator=torch.Generator().manual_seed(0)),
    C(language_models.encode, "words:object", ["the", "dog"]),
    # ------------------------------------------------------------------------------------------ third round
    C(hf.tiny_gpt_neox, "vocab_size:count d_model:count n_layers:count n_heads:count max_len:count seed:seed", 8,
      d_model=8, n_layers=1, n_heads=1, max_len=8),
    C(deep_models.deep_linear_population_run, "d:count depth:count width:count n_seeds:count lr:pos steps:count",
      [1.0, 2.0], [0.1, 0.1], 3, 2, 3, n_seeds=1, lr=0.1, steps=2),
    C(chain_of_thought.cot_training_batch, "batch:count n_examples:count alpha:prob n_patterns:count d:count "
      "n_steps:count generator:object", 2, n_examples=2, alpha=0.5, n_patterns=4, d=6, n_steps=2,
      generator=torch.Generator().manual_seed(0)),
    C(cot_prompt_length.expected_cot_loss, "W:array n_examples:count alpha:prob n_prompts:count d:count "
      "n_patterns:count n_steps:count seed:seed", chain_of_thought.hand_built_weight(30, 3), n_examples=2,
      alpha=0.5, n_prompts=4),
    C(cot_prompt_length.prompt_length_search, "lengths:array loss_of:callable level:pos", [2, 3, 4],
      lambda n: 0.5**n, 0.2),
    C(cot_multilayer.multilayer_cot_model, "d:count n_steps:count d_model:count n_layers:count n_heads:count "
      "seed:seed positions:option max_len:count", 6, 2, d_model=8, n_layers=1, n_heads=1),
    C(gcn_sampling.two_group_problem, "sizes:array degrees:array d:count p:count k_out:count seed:seed", (10, 30),
      (4, 2), d=3, p=3),
    C(gcn_sampling.sampling_spread, "problem:object p_star:array keeps:array draws:count seed:seed", GCN_PROBLEM,
      (0.7, 0.3), (0.9,), draws=2),
    C(gcn_sampling.symmetric_spread, "problem:object p_star:array keeps:array draws:count seed:seed", GCN_PROBLEM,
      (0.7, 0.3), (0.9,), draws=2),
    C(group_imbalance.score_moments, "X:array y:array gmm:object", GI_X, GI_Y, GMM2),
    C(group_imbalance.gamma_function, "W_star:array gmm:object", W2.numpy(), GMM2),
    C(group_imbalance.teacher_curvature, "W_star:array gmm:object n:count rng:object", W2.numpy(), GMM2, 50,
      np.random.default_rng(0)),
    C(group_imbalance.excess_risks, "W:array W_star:array gmm:object n_test:count rng:object", W2, W2, GMM2, 50,
      np.random.default_rng(0)),
    C(group_imbalance.draw_problems, "gmms:object K:count n:count draws:count rng:object", [GMM2], 2, 20, 2,
      np.random.default_rng(0)),
    C(group_imbalance.tensor_initialization, "X:array y:array K:count gmm:object rng:object", GI_X, GI_Y, 2, GMM2,
      np.random.default_rng(0)),
    C(scaling.boundary_exponent, "xs:array success:array Ns:array predicted:real min_points:count n_boot:count",
      [1.0, 2.0, 4.0, 8.0], np.array([[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0],
                                       [0.0, 0.0, 0.0, 0.0]])[..., None], [10, 20, 40, 80], -1.0, n_boot=20),
    C(vit_rules.iteration_exponent, "alphas:array iters:state record_every:count predicted:real n_boot:count",
      [0.35, 0.4, 0.5, 0.6], np.outer([60.0, 50.0, 40.0, 35.0], [1.0, 1.1, 0.9]), 1, n_boot=100),
    C(vit_rules.sigma_drop_exponent, "sigmas:array success:array Ns:array predicted:real min_points:count "
      "n_boot:count", [0.0, 0.25, 0.5, 1.0], np.array([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0],
                                                        [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]])[..., None]
      .repeat(3, 2), [10, 20, 40, 80], n_boot=100),
    C(recall_rules.fig43_verdicts, "histories:object alpha:prob late_step:count",
      [{k: np.linspace(0.1, 0.9, 4) if k != "step" else np.arange(4.0) for k in recall_rules.FIG43_KEYS}], 0.5,
      late_step=2),
    C(recall_rules.layer1_offsets, "attention:array max_offset:count", np.full((2, 5, 5), 0.2), 3),
    C(recall_rules.fig46_verdicts, "prev_hit:prob by_offset:array ff2:array value2:array n_chars:count "
      "trigger:count", 0.5, [0.1, 0.6, 0.1], np.eye(4), np.eye(4), 3, 0),
    C(shallow_vits.make_data, "seeds:array n_train:count n_test:count alpha_star:prob alpha_hash:prob", [0], 4, 5,
      VIT_CFG, 0.5, 0.0),
    C(shallow_vits.token_noise, "alpha_star:prob alpha_hash:prob n:count seed:seed", VIT_CFG, 0.3, 0.2, n=50),
    C(vit_images.digits_by_class, "classes:array", [0, 1]),
    C(communities.bethe_spectra, "edge:array n:count", np.array([[0, 1, 2, 0], [1, 2, 3, 3]]), 4),
    C(communities.spectral_overlaps, "edges:object labels:array n:count method:option",
      [np.array([[0, 1, 2, 0], [1, 2, 3, 3]])], np.array([[0, 0, 1, 1]]), 4, "adjacency"),
    C(telling_graphs_apart.word_features, "G:object ops:object max_len:count", HEX,
      {"A": operators.adjacency(HEX)}, 2),
    C(telling_graphs_apart.power_graph_check, "G1:object G2:object operator_sets:object max_len:count", HEX, TRI,
      {"literal": lambda G: {"A": operators.adjacency(G)}}, 2),
    C(construction.best_bilinear_fit, "P:object", construction.pod(lambda u, v: 2 * u * v, n_nodes=10)),
    C(construction.build_gih2, "P:object K:count M:count p:pos rng:seed",
      construction.pod(lambda u, v: 2 * u * v, n_nodes=10), 1, 8),
    C(four_phases.reparam_forward, "X:array params:object p1:posinf softmax:option",
      np.random.default_rng(0).standard_normal((2, 6)), {k: torch.tensor(v) for k, v in
                                                          dict(g=0.5, p=200.0, h=0.5, w=0.49).items()}),
    C(sample_flows.ih_sample_flow, "X:array alpha_star:pos w_star:pos sigma_init:pos t_max:pos softmax:option "
      "n_points:count n_grid:count", np.random.default_rng(0).standard_normal((4, 6)), 1.0, 0.49, 0.01, 10.0,
      n_points=5, n_grid=11),
    C(ioi.ioi_scores, "model:object test:array rank:count", noisy_recall.recall_model(6, 8, 10, ffn=("mlp",) * 3),
      ioi.sample_ioi(6, 10, 4, 0.0)[0]),
    C(noisy_recall.recall_model, "n_chars:count d:count T:count seed:seed", 8, 16, 16),
    C(noisy_recall.eval_batches, "setting:object seed:seed triggers:array", RECALL),
    C(noisy_recall.repeated_targets, "clean:object triggers:array", CLEAN),
    C(noisy_recall.probe_maps, "model:object", RECALL_MODEL),
    C(noisy_recall.pre_ff2_states, "model:object clean:object triggers:array", RECALL_MODEL, CLEAN),
    C(noisy_recall.dropped_scores, "model:object clean:object triggers:array", RECALL_MODEL, CLEAN),
    C(noisy_recall.value_rank_scores, "model:object clean:object ranks:array triggers:array", RECALL_MODEL, CLEAN,
      [1, 2]),
    C(noisy_recall.init_code_scale, "model:object", noisy_recall.recall_model(8, 16, 16)),
    # ------------------------------------------------------------------------------------------ fourth round
    C(cplots.plot_entry_groups, "ax:object s:count d:count", _ax(), 2, 4),
    C(cplots.plot_hypercube, "ax:object V:array values:array vmax:pos node_size:pos cbar:bool", _ax(),
      np.array([[0, 0], [0, 1], [1, 0], [1, 1]]), np.array([0.1, 0.2, 0.3, 0.4])),
    C(cplots.plot_trajectory_plane, "ax:object traj:array mu:array n_markers:count", _ax(),
      np.cumsum(np.ones((5, 2)), 0), [1.0, 2.0]),
    C(telling_graphs_apart.draw_values, "ax:object G:object values:array node_size:pos font_size:pos", _ax(), G6,
      nx.circular_layout(G6), np.arange(6.0)),
    C(rooted_graphs.draw_graph_rooted, "ax:object G:object root:count", _ax(), G6, 0),
    C(rooted_graphs.draw_aggregation_tree, "ax:object T:object", _ax(), TREE),
    C(rooted_graphs.draw_labelled_tree, "ax:object T:object x:array", _ax(), TREE, np.zeros(TREE.number_of_nodes())),
    C(rooted_graphs.tree_layout, "T:object", TREE),
    C(diffusion.Ensemble, "models:object", [torch.nn.Linear(2, 2)]),
    C(linear_gd.population_gd_deep_linear, "weights:object A:array lr:pos steps:count", WS,
      sim_data.population_moments((1.0, 2.0), (0.1, 0.1), 2)[1], lr=0.05, steps=2),
    C(linear_gd.sgd_mlp_batched, "X:array weights:object activation:option lr:pos steps:count batch_size:count "
      "seed:seed", SIM_X, weights=WS, biases=BS, lr=0.05, steps=2, batch_size=4),
    C(chain_of_thought.cot_inference, "W:array n_queries:count n_examples:count alpha:prob tau:prob rho:prob "
      "mode:option d:count n_patterns:count n_test_patterns:count n_steps:count noise:nonneg seed:seed",
      chain_of_thought.hand_built_weight(30, 3), n_queries=4, n_examples=3),
    C(chain_of_thought.icl_inference, "W:array n_queries:count n_examples:count alpha:prob tau:prob rho:prob "
      "mode:option d:count n_patterns:count n_test_patterns:count n_steps:count noise:nonneg seed:seed",
      chain_of_thought.hand_built_weight(30, 3), n_queries=4, n_examples=3),
    C(chain_of_thought.sample_test_prompts, "n_queries:count n_examples:count alpha:prob tau:prob rho:prob "
      "mode:option d:count n_patterns:count n_test_patterns:count n_steps:count noise:nonneg seed:seed",
      4, 3, 0.8, 0.5, 0.8, "distractor", 30, 20, 10, 3, 0.2, 0),
    C(gcn_sampling.sin_tanh_labels, "A_hat:array X:array W_star:array C_star:array", torch.eye(4),
      torch.ones(4, 3), torch.ones(3, 2), torch.ones(2, 2)),
    C(group_imbalance.local_uniqueness, "gmm:object K:count n:count draws:count inits:count seed:seed tol:pos",
      GMM2, 2, 100, 1, 2, 1),
    C(icl.baseline_errors, "X:array z:array length:count d_x:count", ICL_P["X"], ICL_P["z"], 4,
      methods=("1-NN",)),
    C(icl.lucky_neurons, "model:object X:array z:array d_x:count", ICL_M, ICL_B["X"], ICL_B["z"], 30,
      ICL_B["valid"]),
    C(shallow_vits.lucky_dynamics, "history:object a:array patterns:array",
      {"W_O": np.ones((2, 1, 4, 3)), "W_V": np.ones((2, 1, 3, 3))}, [1.0, 1.0, -1.0, -1.0], np.eye(3)),
    C(shallow_vits.thm1_hypotheses, "alpha_star:prob alpha_hash:prob tau:nonneg", VIT_CFG, 0.3, 0.2, 0.1),
    C(construction.build_ihn, "W:array n:count betas:object alphas:object d:count", IHN_W, 3, [np.arange(1.0, 6.0)] * 2,
      [construction.fit_delay_kernel(k, np.arange(1.0, 6.0))["alphas"] for k in (1, 2)], 1),
    C(noisy_recall.restore_model, "setting:object state:object", RECALL, RECALL_MODEL.state_dict()),
    C(noisy_recall.recall_metrics, "model:object clean:object noisy:object", RECALL_MODEL, CLEAN,
      noisy_recall.eval_batches(RECALL)[1]),
    C(success.success_map, "run_fn:callable xs:array Ns:array seeds:array", lambda x, Ns, seeds: Ns >= x, [4, 16],
      [2, 4, 8, 16, 32], [0, 1]),
    C(group_imbalance.asymptotic_excess, "W_star:array gmm:object n:count n_mc:count rng:object", W2, GMM2, 20,
      50, np.random.default_rng(0)),
    C(construction.layer1_copy_error, "model:object X:array n:count",
      construction.build_ihn(IHN_W, 3, [np.arange(1.0, 6.0)] * 2,
                             [construction.fit_delay_kernel(k, np.arange(1.0, 6.0))["alphas"] for k in (1, 2)], 1),
      torch.rand(2, 8, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64), 3),
    C(deep_models.plateau_stats, "run:object i:count level:prob", SYM),
    C(deep_models.stage_sequence, "run:object prominence:pos", SYM),
    C(deep_models.major_after_minor, "run:object b:count", SYM, 0),
    C(four_phases.phase_times, "res:object", FOUR),
    C(four_phases.predicted_half_w_time, "res:object", FOUR),
    C(convergence.lyapunov_rates, "res:object", FOUR),
    C(mf.fig6_orbit_check, "run:object", mf.fig6_run(0, 0.8, 20)),
]
