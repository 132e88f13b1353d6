"""More cases for ``tests/test_fuzz.py`` (imported there; kept apart so each file stays readable): one valid,
small call per public function, with the kinds of the parameters to mutate (see ``MUTATIONS`` in test_fuzz)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from lib import claims, config, curvature, curves, plots, success, sweep
from lib.data import gmm, prompts, tokens
from lib.graphs import equivalence, generators, sampling, walks, wl
from lib.models import gnn, laser, one_hidden, probes
from lib.parts.concept_learning import deep_models, sim_data, sim_one_layer
from lib.parts.concept_learning import plots as cplots
from lib.parts.edge_of_stability import balancing, beyond_low_dimension, matrix_factorisation, one_dimensional
from lib.parts.generalisation import group_imbalance, scaling
from lib.parts.graph_networks import rooted_graphs, telling_graphs_apart
from lib.parts.induction_heads import construction, convergence, four_phases
from lib.parts.memorisation import language_models, mechanism, recall_data


def C(fn, kinds: str, *args, **kwargs):
    """One case: ``fn(*args, **kwargs)`` is valid; ``kinds`` = "name:kind name:kind ..."."""
    return pytest.param(fn, args, kwargs, dict(k.split(":") for k in kinds.split()), id=fn.__qualname__)


def _gen():
    return torch.Generator().manual_seed(0)


def _rng():
    return np.random.default_rng(0)


G6 = nx.cycle_graph(6)
X6 = np.arange(6) % 2
Y8 = np.linspace(1.0, 0.1, 8)
T8 = np.arange(8.0)
MU2, SIG2 = [1.0, 2.0], [0.1, 0.2]
BANK = prompts.orthonormal_bank(4, 6)
A3 = torch.softmax(torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(0)), -1).tril()
TOK = torch.tensor([[0, 1, 2, 0, 1, 2]])
EDGE_INDEX = gnn.edge_index_of(G6)
GMM2 = gmm.gaussian_mixture([0.5, 0.5], np.array([[1.0, 0.0], [-1.0, 0.0]]), np.stack([np.eye(2)] * 2))
SPARSE_A = sampling.gcn_adjacency(np.array([[0, 1, 2, 3], [1, 2, 3, 0]]), 4)
W2 = torch.eye(2, dtype=torch.float64)
X2 = torch.tensor([[1.0, 0.5], [-0.5, 1.0], [0.3, -0.2]], dtype=torch.float64)
Y2 = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)


def _mpl_ax():
    import matplotlib.pyplot as plt

    return plt.figure(figsize=(1, 1)).add_subplot()


AX = None


def ax():
    return _mpl_ax()


CASES = [
    # ---------------------------------------------------------------------------------------- argument checks
    C(config.check_int, "value:count minimum:any maximum:any", "value", 3, minimum=0, maximum=5),
    C(config.check_seed, "value:seed", "value", 3),
    C(config.check_range, "value:real lo_open:bool hi_open:bool lo:realnone hi:realnone", "value", 0.5, 0.0, 1.0),
    C(config.check_finite, "value:real", "value", 1.0),
    C(config.check_bool, "value:bool", "value", True),
    C(config.check_callable, "value:callable", "value", len),
    C(config.check_instance, "value:object", "value", torch.Generator(), torch.Generator),
    C(config.check_int_array, "value:array minimum:any maximum:any", "value", [1, 2], minimum=0,
      maximum=5),
    C(config.check_in, "value:option", "value", "a", ("a", "b")),
    C(config.check_shape, "array:state", "array", np.ones((2, 3)), (2, None)),
    C(config.renamed_arguments, "", eta="lr"),
    C(config.renamed_key, "mapping:object old:any new:any", {"eta": 0.1}, "eta", "lr", name="cfg"),
    # ------------------------------------------------------------------------------------------ generic layer
    C(curvature.HessianOperator, "loss:callable theta:array engine:option",
      lambda t: (t**2).sum(), torch.ones(3, dtype=torch.float64)),
    C(curves.attention_mass_by_type, "weights:array same_a:array same_b:array", A3[0].numpy(),
      np.eye(5, dtype=bool), np.eye(5, k=-1, dtype=bool)),
    C(success.fit_boundary, "success:array Ns:array level:prob", np.array([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]),
      [10, 20, 40]),
    C(success.check_members, "sizes:array seeds:array", [10, 20], [0, 1], "sizes"),
    C(claims.exponent_rule, "predicted:real level:prob", 1.0),
    C(claims.badge, "state:option", "reproduced"),
    C(sweep.code_version, "fn:callable", len),
    C(plots.attention_heatmap, "A:array colorbar:bool", ax(), np.eye(3)),
    C(plots.matrix_heatmap, "matrix:array", ax(), np.eye(3), xlabel="x", ylabel="y"),
    C(plots.phase_heatmap, "x:array y:array values:array", ax(), [0.0, 1.0], [0.0, 1.0], np.eye(2), xlabel="x",
      ylabel="y"),
    C(plots.shade_phases, "boundaries:array alpha:prob", ax(), [0.0, 1.0, 2.0]),
    C(plots.bifurcation_scatter, "params:array points:array s:pos", ax(), [1.0, 2.0], [0.1, 0.2],
      xlabel="r", ylabel="x"),
    # -------------------------------------------------------------------------------------------- data layer
    C(prompts.subframe, "bank:array n:count generator:object", BANK, 2, generator=_gen()),
    C(prompts.shift_tasks, "batch:count m:count steps:count generator:object", 2, 4, 3, generator=_gen()),
    C(prompts.follow_steps, "step_maps:array start:array", torch.tensor([[[1, 2, 0], [2, 0, 1]]]),
      torch.tensor([[0, 1]])),
    C(prompts.context_starts, "query:array n:count m:count alpha:prob generator:object", torch.tensor([0, 1]), 3,
      4, 0.5, generator=_gen()),
    C(prompts.orthogonal_noise, "frame:array norm:nonneg generator:object", (2, 6), BANK, 0.1, generator=_gen()),
    C(prompts.cot_columns, "tokens:array", torch.ones(2, 2, 3, 6)),
    C(prompts.icl_columns, "inputs:array labels:array n_steps:count", torch.ones(2, 3, 6), torch.ones(2, 3, 6), 2),
    C(prompts.query_columns, "tokens:array k:array n_steps:count", torch.ones(2, 3, 6), torch.tensor([1, 2]), 2),
    C(prompts.sample_chains, "transitions:array start:array generator:object",
      torch.full((1, 2, 3, 3), 1 / 3), torch.tensor([[0, 1]]), generator=_gen()),
    C(gmm.gaussian_mixture, "lambdas:array means:array covs:array", [0.5, 0.5], np.zeros((2, 2)),
      np.stack([np.eye(2)] * 2)),
    C(gmm.rotated_covariance, "diag:array rng:object", [1.0, 2.0], _rng()),
    C(gmm.teacher_probability, "W:array X:array", np.ones((2, 2)), np.ones((3, 2))),
    C(gmm.teacher_labels, "W:array X:array rng:object", np.ones((2, 2)), np.ones((3, 2)), _rng()),
    C(tokens.as_generator, "rng:any", 0),
    C(tokens.pattern_sequences, "labels:array L:count alpha_star:prob alpha_hash:prob patterns:array noise:nonneg",
      np.array([0, 1]), 6, 0.3, 0.2, tokens.pattern_bank(4, 8), 0.1, _rng()),
    # ----------------------------------------------------------------------------------------- graphs layer
    C(equivalence.gamlp_features, "G:object K:count", G6, X6[:, None]),
    C(equivalence.node_keys, "G:object K:count model:option", G6),
    C(equivalence.graph_keys, "graphs:object K:count model:option", [G6, nx.path_graph(6)]),
    C(generators.binary_sbm_edges, "n:count a:nonneg b:nonneg count:count seed:seed", 20, 5.0, 1.0, 2),
    C(generators.from_neighbourhoods, "neighbours:object n:count first_label:count", {1: (2, 3), 2: (1,), 3: (1,)},
      3),
    C(generators.tree_labellings, "m:count depth:count count:countnone seed:seed", 2, 2, count=3),
    C(sampling.gcn_adjacency, "edges:array0 n:count", np.array([[0, 1, 2, 3], [1, 2, 3, 0]]), 4),
    C(sampling.column_scale, "A:object scale:array", SPARSE_A, np.ones(4)),
    C(sampling.effective_adjacency, "A:object groups:array p_star:array", SPARSE_A, [0, 0, 1, 1], [1.0, 1.0]),
    C(sampling.GroupSampler, "A:object groups:array p_star:array keep:prob", SPARSE_A, [0, 0, 1, 1], [1.0, 1.0]),
    C(sampling.FastGCNSampler, "A:object t:count", SPARSE_A, 2),
    C(sampling.sampler_by_name, "name:option A:object groups:array p_star:array keep:prob", "group", SPARSE_A,
      [0, 0, 1, 1], [1.0, 1.0]),
    C(walks.attributed_walk_counts, "G:object X:arraynone pattern:object", G6, X6[:, None], (0, 1)),
    C(walks.brute_force_walk_counts, "G:object X:arraynone pattern:object", G6, X6[:, None], (0, 1)),
    C(walks.walk_type_counts, "G:object X:arraynone k:count alphabet:object", G6, X6[:, None], 2, (0, 1)),
    C(wl.node_features, "G:object", G6),
    C(wl.wl_colours_batch, "G:object labels:array rounds:count", G6, [[0] * 6]),
    # ----------------------------------------------------------------------------------------- models layer
    C(gnn.edge_index_of, "G:object", G6),
    C(laser.laser, "target:object rank:countnone fraction:probnone", torch.nn.Linear(4, 4), rank=2),
    C(one_hidden.newton_critical_point, "W0:array X:array y:array iters:count tol:pos max_step:pos", W2, X2, Y2,
      iters=2),
    C(probes.prev_token_score, "A:array", A3),
    C(probes.induction_key_mask, "tokens:array", TOK),
    # ---------------------------------------------------------------------------------------------- Part I
    C(one_dimensional.higher_order_test, "derivs:array tol:pos", [1.0, 0.5, 2.0]),
    C(one_dimensional.stable_oscillation_condition, "f2:real f3:real f4:real", 1.0, 0.5, 2.0),
    C(balancing.product_hessian_top, "x:array", [1.0, 0.5]),
    C(balancing.project_onto_manifold, "x:state y:state lr:pos mu:pos", 1.0, 0.5, 0.5),
    C(balancing.candidate_manifold_indicator, "x:state y:state lr:pos mu:pos", 1.0, 0.5, 0.5),
    C(beyond_low_dimension.cross_section, "loss:callable theta:array lr:pos eig_method:option min_sharpness:real",
      lambda t: (t**2).sum() + t.sum() ** 4, torch.ones(4, dtype=torch.float64), 0.1),
    C(matrix_factorisation.diag_target, "spectra:array", np.array([[1.0, 0.5]])),
    C(matrix_factorisation.line_holds, "k1:array k2:array", [0.5], [0.5]),
    C(matrix_factorisation.divergence_boundary, "k1_values:array k2_values:array finite:array", [0.5, 1.0],
      [0.5, 1.0], np.ones((2, 2), dtype=bool)),
    C(matrix_factorisation.top_direction_value, "M:array u:array", np.eye(2), [1.0, 0.0]),
    C(matrix_factorisation.thm6_eigenpair, "X:array Y:array", np.eye(2), np.eye(2)),
    C(matrix_factorisation.thm6_condition, "X:array Y:array", np.eye(2), np.eye(2)),
    # ---------------------------------------------------------------------------------------------- Part II
    C(construction.rms_error, "a:array b:array", torch.ones(3), torch.zeros(3)),
    C(construction.sup_error, "a:array b:array", torch.ones(3), torch.zeros(3)),
    C(construction.ih2_target, "X:array W:array", torch.ones(1, 4, 2), torch.eye(2)),
    C(construction.ihn_target, "X:array W:array n:count", torch.ones(1, 4, 2), torch.eye(2), 2),
    C(construction.gih_target, "X:array g:callable n:count", torch.ones(1, 4, 2), lambda a, b: (a * b).sum(-1)),
    C(construction.in_context_bigram, "tokens:array V:count", TOK, 3),
    C(convergence.lyapunov_g4, "p:state g:state alpha_star:pos", 0.5, 0.5, 1.0),
    C(convergence.lyapunov_ih, "w:state h:state alpha_star:pos w_star:pos", 0.1, 0.1, 1.0, 0.49),
    C(convergence.ih_grad_v, "v:state h:state alpha_star:pos w_star:pos L:count", 0.1, 0.1, 1.0, 0.49, 20),
    C(four_phases.rhs_g4, "p:real g:real alpha_star:pos L:count", 0.5, 0.5, 1.0, 20),
    C(four_phases.stage1_rhs, "L:count g0:pos alpha_star:pos", 20, 0.1, 1.0),
    # --------------------------------------------------------------------------------------------- Part III
    C(sim_data.as_concepts, "mu:array sigma:array d:countnone", MU2, SIG2),
    C(sim_data.empirical_mean, "X:array", np.ones((4, 2))),
    C(sim_data.empirical_second_moment, "X:array", np.ones((4, 2))),
    C(sim_data.augmented_moment, "A:array m:array", np.eye(2), np.ones(2)),
    C(sim_data.sim_gaussian_mixture_batch, "mu:array sigma:array d:countnone n:count seeds:array rotate:bool "
      "origin_cluster:bool", MU2, SIG2, n=8),
    C(sim_one_layer.affine_rates, "mu:array sigma:array origin_cluster:bool", MU2, SIG2),
    C(sim_one_layer.flip_mu, "mu:array sigma:array k:count j:count", MU2, SIG2, 0, 1),
    C(sim_one_layer.learning_order, "mu:array sigma:array", MU2, SIG2),
    C(sim_one_layer.one_layer_weights, "mu:array sigma:array times:array d:countnone", MU2, SIG2, T8),
    C(sim_one_layer.theorem41_terms, "mu:array sigma:array times:array d:countnone", MU2, SIG2, T8),
    C(sim_one_layer.fit_exponential_rate, "times:array residual:array lo:real hi:real", T8, np.exp(-T8), 1.0, 6.0),
    C(deep_models.entry_groups, "s:count d:count", 2, 3),
    C(deep_models.w_update_d2, "W:state a:array", np.eye(2), [1.0, 0.5]),
    C(deep_models.growth_suppression_noise, "W:state a:array", np.eye(2), [1.0, 0.5]),
    C(cplots.hypercube_positions, "s:count", 2),
    # ---------------------------------------------------------------------------------------------- Part IV
    C(rooted_graphs.product_operator, "A:array X:array", np.eye(3), np.ones((3, 2))),
    C(rooted_graphs.per_class_spread, "outer:array inner:array", np.ones((2, 3)), np.ones((2, 3))),
    C(rooted_graphs.prop24_class_bound, "m:count K:count n_features:count corrected:bool", 2, 1),
    C(rooted_graphs.rooted_gamlp_classes, "m:count K:count max_nodes:count alpha:real beta:real single:bool",
      1, 1, 3),
    C(telling_graphs_apart.lemma_a4_collisions, "n:count alpha:count", 4, 2),
    C(telling_graphs_apart.algorithm1_rank, "n:count", 10),
    C(telling_graphs_apart.depth2_tree, "G:object node:count", G6, 0),
    C(telling_graphs_apart.first_separating_power, "operator:option K:count tol:pos", G6, nx.path_graph(6), "A",
      3),
    C(telling_graphs_apart.shared_classes, "graphs:object K:count model:option", [G6, nx.path_graph(6)], 2),
    C(telling_graphs_apart.wl_palette_colours, "graphs:object rounds:count", [G6], 2),
    C(telling_graphs_apart.prop22_keys, "graphs:object alpha:count", [G6], 2),
    C(telling_graphs_apart.lemma_a9_identities, "w:array", np.ones((2, 14))),
    # ----------------------------------------------------------------------------------------------- Part V
    C(mechanism.one_step_gradients, "z:array y:array n_tokens:count", np.array([[0, 1, 2]]), np.array([1]), 4),
    C(mechanism.memory_gradient_descent, "alpha:prob t_max:pos dt:pos", 0.2, 0.01),
    C(recall_data.recall_counts, "z:array y_bar:array q:count noise:count", torch.tensor([[0, 1, 2, 0]]),
      torch.tensor([1]), 0, 2),
    C(recall_data.repeated_trigger_mask, "tokens:array triggers:array", TOK, (0,)),
    C(language_models.template_sentence, "kind:option rng:object dog_fraction:prob", "fact", _rng()),
    C(language_models.corpus_batch, "batch:count rng:object mix:array dog_fraction:prob", 2, _rng()),
    C(language_models.probe_prompts, "seed:seed n:count", 1, 3),
    # ----------------------------------------------------------------------------------------------- Part VI
    C(group_imbalance.gmm_step_size, "gmm:object c:pos", GMM2),
    C(group_imbalance.weight_spread, "W:array", torch.ones(1, 2, 2, 2)),
    C(group_imbalance.local_initialization, "W_star:array count:count generator:object eps:nonneg", torch.eye(2),
      2, _gen()),
    C(scaling.seed_boundaries, "success:array Ns:array", np.array([[[0.0, 1.0], [1.0, 1.0], [1.0, 1.0]]]),
      [10, 20, 40]),
]
