"""Bad input gets a clear error: a table of mutations per parameter kind, applied to the public entry points.

Every case below is one valid call of a public function (small sizes) and the kinds of the parameters to mutate.
Each mutation changes one argument at a time to an invalid value of its kind (a negative count, a zero or NaN
step size, an unknown option, an all-NaN or empty array, ...) or to a wrong type (a string for a number, a string
for a boolean, a number for an option, None, ...). The call must raise a ``ValueError`` whose message names the
argument. The bar: at least 95 % of invalid values and 90 % of wrong types do, and no mutated call returns a
non-finite or empty result silently. ``python -m pytest tests/test_fuzz.py -s`` prints what slips through.

Every parameter of a case is mutated, declared or not: an undeclared one gets a kind from its base value
(``_inferred_kind``: a flag must refuse ``"no"``/None through ``check_bool``, a seed goes through ``check_seed``, an
integer refuses 2.5 and ``"3"``, a number NaN and ``"abc"``, an option an unknown string, a data array NaN entries
and a string, an object a string); None defaults, free-text labels and torch's ``dtype``/``device`` are left out.
The cases live in this file and in ``fuzz_cases_more.py`` (generic layers), ``fuzz_cases_parts.py`` (parts'
helpers and small models) and ``fuzz_cases_train.py`` (trainers at toy sizes).
``test_every_public_name_is_fuzzed_or_listed`` enumerates every public function and class of ``lib`` and
requires a case or an entry in ``NOT_YET_FUZZED`` with its reason (records and functions without parameters are
exempt); it prints how many are fuzzed.
"""

from __future__ import annotations

import math
import re
import warnings

import networkx as nx
import numpy as np
import pytest
import torch
from fuzz_cases_more import CASES as MORE_CASES  # noqa: E402 - tests/ is on the path (no package)
from fuzz_cases_parts import CASES as PARTS_CASES  # noqa: E402
from fuzz_cases_rest import CASES as REST_CASES  # noqa: E402
from fuzz_cases_train import CASES as TRAIN_CASES  # noqa: E402

from lib import chapter, config, curvature, curves, flows, maps, plots, stats, sweep, train, widgets
from lib.data import digits, gmm, prompts, sphere, tokens
from lib.graphs import equivalence, generators, operators, sampling, wl
from lib.models import cnn, gcn, gnn, laser, mlp, one_hidden, prune, sgnn, transformer, unet
from lib.parts.concept_learning import (
    deep_models,
    diffusion,
    diffusion_variants,
    jacobian_lemmas,
    linear_gd,
    shapes,
    sim_data,
    sim_one_layer,
)
from lib.parts.edge_of_stability import balancing, beyond_low_dimension, matrix_factorisation, one_dimensional
from lib.parts.generalisation import chain_of_thought, gcn_sampling, group_imbalance, settings, shallow_vits, vit_images
from lib.parts.generalisation import graph_transformers as gtr
from lib.parts.generalisation import group_images as gim
from lib.parts.generalisation import in_context_learning as icl
from lib.parts.graph_networks import communities, rooted_graphs, telling_graphs_apart, walk_counting
from lib.parts.induction_heads import construction, convergence, four_phases, sample_flows, trained_transformers
from lib.parts.memorisation import ioi, language_models, mechanism, noisy_recall, recall_data


@pytest.fixture(autouse=True)
def _close_figures():
    """Entry points that draw (lib.plots.panels) leave their figure open; close it so that later tests start
    with no open figure."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")

NAN, INF = float("nan"), float("inf")
#: kind -> (invalid values, wrong types)
MUTATIONS = {
    "count": ([-1, 2.5], ["3", None]),  # an integer size or step count (>= 0 or >= 1)
    "seed": ([-1], ["3", 2.5]),
    "pos": ([0.0, -1.0, NAN, INF], ["abc", None]),  # a finite number > 0
    "nonneg": ([-1.0, NAN, INF], ["abc", None]),  # a finite number >= 0
    "real": ([NAN, INF], ["abc", None]),  # any finite number
    "bool": ([], ["no", None]),
    "option": (["bogus"], [3]),
    "array": (["nan", "empty"], ["abc", None]),  # "nan"/"empty": the base array filled with NaN / emptied
    "array0": (["nan"], ["abc", None]),  # an array that may be empty (an edge list without edges)
    "arraynone": (["nan", "empty"], ["abc"]),  # an array, None allowed (no node features)
    "probnone": ([-0.5, 1.5, NAN], ["abc"]),  # a probability, None allowed
    "state": ([], ["abc", None]),  # the state of a map: inf/NaN (a diverged run) passes through by design
    "prob": ([-0.5, 1.5, NAN], ["abc", None]),
    "countnone": ([-1, 2.5], ["3"]),  # a count, None allowed
    "nonneginf": ([-1.0, NAN], ["abc", None]),  # >= 0, inf allowed
    "posinf": ([0.0, -1.0, NAN], ["abc", None]),  # > 0, inf allowed
    "posnone": ([0.0, -1.0, NAN, INF], ["abc"]),  # > 0, None allowed
    "callable": ([], ["abc", None]),
    "object": ([], ["abc", None, 3]),  # a configuration or model object of a given class
    "objectnone": ([], ["abc", 3]),  # an object of a given class, None allowed (the default)
    "realnone": ([NAN, INF], ["abc"]),  # a finite number, None allowed (no bound)
    "any": ([], []),  # any value by design (a fill value, a bound that None switches off): nothing to refuse
}


def _quad(theta):
    return (theta**2).sum() + theta.sum() ** 4


G6 = nx.cycle_graph(6)
T6 = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64)
Y8 = np.linspace(1.0, 0.1, 8)
T8 = np.arange(8.0)
SMALL_CFG = transformer.TransformerConfig(d_in=2, d_model=8, n_layers=1, max_len=8)
CNN = cnn.ConceptCNN(cnn.CNNConfig(channels=(4, 4, 4), hidden=8)).float()
IMGS = torch.zeros(3, 3, 8, 8)
UNET_CFG = unet.UNetConfig(channels=(8, 8), emb_dim=8)
FUNC = one_dimensional.quartic()
MU2, SIG2 = [1.0, 2.0], [0.1, 0.2]
MU6, NU6 = icl.icl_banks(6, 4, 10)
ICL_CFG = dict(relevant=MU6, irrelevant=NU6, tasks=icl.cyclic_tasks(6), length=4, alpha=0.8, kappa=0.5)
GT_TINY = dict(settings.GT, n=40, degree=6, K=4, m=4, n_test=10, steps=2, batch=4)
TOY_SPD = gtr.toy_graph()["spd"]
GT_G0 = gtr.core_graph(40, 0.4, 0.1, 6)
EDGES4 = np.array([[0, 1, 2, 0], [1, 2, 3, 3]])  # a 4-cycle as a (2, m) edge list with i < j


def C(fn, kinds: str, *args, **kwargs):
    """One case: ``fn(*args, **kwargs)`` is valid; ``kinds`` = "name:kind name:kind ..."."""
    return pytest.param(fn, args, kwargs, dict(k.split(":") for k in kinds.split()), id=fn.__qualname__)


CASES = [
    # ------------------------------------------------------------------------------------------- generic layer
    C(curvature.hvp, "loss:callable theta:array v:array engine:option", _quad, T6, T6),
    C(curvature.hessian, "loss:callable theta:array", _quad, T6),
    C(curvature.hessian_top_eigenpairs, "loss:callable theta:array k:count method:option tol:pos maxiter:count "
      "seed:seed engine:option", _quad, T6, k=1),
    C(curvature.default_ncv, "k:count n:count", 1, 20),
    C(curvature.SharpnessTracker, "tol:pos gap:pos watch:nonneg max_iter:count refresh_every:count engine:option "
      "seed:seed period:count"),
    C(curvature.directional_derivatives, "loss:callable theta:array u:array max_order:count route:option",
      _quad, T6, T6),
    C(curves.count_peaks, "curve:array prominence:pos", np.sin(T8), 0.1),
    C(curves.n_descents, "curve:array prominence:pos", np.sin(T8), 0.1),
    C(curves.running_median, "curve:array window:count", Y8, 3),
    C(curves.hitting_time, "t:array y:array threshold:real direction:option interpolate:bool window:count never:any",
      T8, Y8, 0.5),
    C(curves.speed, "values:array times:array", np.stack([Y8, Y8], 1), T8),
    C(curves.geometric_midpoints, "times:array", T8 + 1),
    C(curves.loglog_slope, "x:array y:array", T8 + 1, Y8),
    C(curves.ratio_spread, "values:array", Y8),
    C(curves.path_bend, "paths:array target:array window:count", np.stack([Y8, Y8[::-1]], 1), [1.0, 1.0]),
    C(flows.log_time_grid, "t0:nonneg t1:pos n:count", 0.0, 10.0, 5),
    C(flows.integrate_flow, "rhs:callable y0:array method:option rtol:pos atol:pos",
      lambda t, y: -y, [1.0], (0.0, 1.0)),
    C(maps.lyapunov_exponent, "F:callable x0:array steps:count transient:nonneg seed:seed", lambda x: 0.5 * x,
      [1.0], 5),
    C(plots.panels, "n:count cols:count height:pos width:pos", 2),
    C(maps.iterate_map, "F:callable x0:array steps:count bound:pos", lambda x: 0.5 * x, [1.0], 5),
    C(maps.detect_period, "traj:state max_period:count tol:pos", np.tile([0.0, 1.0], 8), 4),
    C(maps.bifurcation_diagram, "F_param:callable params:array transient:count keep:count",
      lambda x, r: r * x * (1 - x), np.array([2.5, 3.2]), 0.3, transient=20, keep=4),
    C(maps.two_step_fixed_points, "F:callable lo:real hi:real n_grid:count tol:pos",
      lambda x: 3.3 * x * (1 - x), 0.0, 1.0, n_grid=101),
    C(maps.stop_at_divergence, "batch_ndim:count bound:pos factor:posnone growth:posnone", {"x": Y8}),
    C(stats.wilson_interval, "k:count n:count z:pos", 3, 10),
    C(stats.frequency, "flags:array z:pos", [True, False, True]),
    C(stats.mean_se, "values:array", [1.0, 2.0, 4.0]),
    C(stats.chain_violations, "values:array tol:nonneg", [1.0, 0.0, 2.0]),
    C(stats.bootstrap_paired_mean, "samples:array statistic:callable n_boot:count seed:seed",
      np.stack([np.stack([Y8, Y8[::-1]], 1)] * 3, 1), lambda p: p[..., -1, 0]),
    C(stats.order_violations, "V:array values:array tol:nonneg", np.array([[0.0, 1.0], [1.0, 1.0]]),
      np.array([1.0, 2.0])),
    C(train.step_decay, "at:count factor:pos", 10, 0.5),
    C(train.piecewise, "boundaries:array values:array", [5], [1.0, 0.1]),
    C(train.train, "loss_fn:callable lr:pos steps:count optimizer:option record_every:count "
      "divergence_bound:pos momentum:nonneg weight_decay:nonneg nesterov:bool params:state divergence_factor:posnone "
      "divergence_growth:posnone",
      torch.ones(3), lambda p: (p**2).sum(), lr=0.1, steps=3),
    C(widgets.static_grid, "max_frames:count", {"a": [1, 2, 3]}, None, 4),
    C(widgets.static_lines, "points:count", {"a": [1, 2, 3]}, {"a": [1, 3]}, 5),
    C(widgets.slider_figure, "plot_fn:callable dpi:count",
      lambda a: __import__("matplotlib.pyplot").pyplot.figure(figsize=(1, 1)), {"a": [1, 2]}),
    # ------------------------------------------------------------------------------------------- shared layers
    C(digits.digits_binary, "std_min:nonneg scale:pos"),
    C(sphere.sample_sphere, "m:count d:count seed:seed", 4, 3),
    C(tokens.random_tokens, "B:count T:count V:count", 2, 5, 4),
    C(tokens.repeat_prefix_tokens, "B:count T:count V:count seg_min:count seg_max:count", 2, 12, 5, 2, 4),
    C(tokens.in_context_bigram_tokens, "B:count T:count V:count n_triggers:count", 2, 8, 5),
    C(tokens.markov_tokens, "B:count T:count V:count concentration:pos", 2, 8, 5),
    C(tokens.gaussian_sequences, "B:count L:count d:count", 2, 5),
    C(tokens.uniform_sequences, "B:count L:count d:count low:real high:real", 2, 5),
    C(tokens.one_hot, "V:count", torch.tensor([0, 1, 2]), 4),
    C(generators.graph_atlas, "max_nodes:count min_nodes:count", 3),
    C(generators.gnp_graphs, "n:count p:prob count:count seed:seed", 5, 0.5, 2),
    C(generators.random_regular, "d:count n:count seed:seed", 2, 6),
    C(generators.fig21_pair, "typo:bool"),
    C(operators.normalised_adjacency, "alpha:real", G6),
    C(operators.augmented_adjacency, "eps:nonneg", G6),
    C(operators.power_graph_adjacency, "add_identity:bool", G6),
    C(operators.bethe_hessian, "r:real", G6, 1.5),
    C(operators.shifted_bethe_hessian, "r:real kappa:real", G6, 1.5),
    C(operators.propagate, "X:array K:count renormalise:bool", operators.adjacency(G6), np.ones((6, 1)), 2),
    C(wl.wl_colours, "rounds:count", [G6]),
    C(wl.first_separating_round, "max_rounds:count", G6, nx.path_graph(6)),
    C(wl.aggregation_tree, "root:count depth:count", G6, 0, 2),
    C(equivalence.equivalence_classes, "K:count model:option", G6),
    C(equivalence.graph_classes, "K:count model:option", [G6, nx.path_graph(6)]),
    C(equivalence.isomorphism_classes, "rounds:count", [G6]),
    C(mlp.DeepLinear, "d_in:count d_out:count depth:count width:count bias:bool init_scale:nonneg", 2, 2, 2, 3),
    C(mlp.MLP, "d_in:count d_out:count depth:count width:count activation:option bias:bool init_scale:nonneg",
      2, 2, 2, 3),
    C(mlp.ReLUMLP, "in_dim:count width:count depth:count out_dim:count bias:bool", 2, 3, 2),
    C(transformer.TransformerConfig, "d_in:count d_model:count n_layers:count n_heads:count max_len:count",
      d_in=2, d_model=8, n_layers=1, max_len=8),
    C(transformer.default_alibi_slopes, "n_heads:count", 2),
    C(transformer.alibi_bias, "T:count causal:option slopes:object", 4, torch.ones(1)),
    C(transformer.softmax_attention, "q:state k:state v:state scale:pos", *(torch.ones(1, 3, 2),) * 3),
    C(transformer.MultiHeadAttention, "cfg:object layer:count", SMALL_CFG, 0),
    C(transformer.FFN, "d_model:count hidden:count bias:bool", 4, 8),
    C(transformer.LinearFFN, "d_model:count bias:bool", 4),
    C(transformer.Block, "cfg:object layer:count", SMALL_CFG, 0),
    C(transformer.Transformer, "cfg:object", SMALL_CFG),
    C(cnn.CNNConfig, "in_channels:count hidden:count heads:count"),
    C(cnn.concept_probs, "x:array batch:count", CNN, IMGS),
    C(unet.UNetConfig, "in_channels:count blocks:count cond_dim:count emb_dim:count groups:count dropout:prob"),
    C(unet.ScheduledUNet, "unet:object gamma_min:real gamma_max:real", unet.CondUNet(UNET_CFG)),
    C(unet.timestep_embedding, "t:object dim:count max_period:pos", torch.rand(3), 8),
    C(unet.ResBlock, "cin:count cout:count emb_dim:count groups:count", 8, 8, 8, 4),
    C(gnn.GINLayer, "d_in:count d_out:count width:count mlp_depth:count train_eps:bool eps:real", 2, 3),
    C(gnn.GIN, "d_in:count width:count depth:count d_out:count jk:bool mlp_depth:count readout_depth:count "
      "train_eps:bool", 2),
    C(sgnn.SGNNLayer, "d_in:count d_out:count powers:count residual:bool", 3, 3),
    C(sgnn.SGNN, "d_in:count width:count depth:count n_classes:count powers:count init_scale:pos"),
    C(gcn.GCN3, "d:count m1:count m2:count k_out:count copies:count", 3, 4, 4, 2),
    C(one_hidden.gd_one_hidden, "lr:pos steps:count record_every:count divergence_bound:pos",
      torch.zeros(1, 3, 2, dtype=torch.float64), torch.ones(5, 3, dtype=torch.float64),
      torch.ones(5, dtype=torch.float64), 0.1, 3),
    C(laser.low_rank, "W:array k:count", torch.eye(3), 1),
    C(laser.laser_rank, "fraction:prob", (4, 6), 0.5),
    C(gmm.sample_mixture, "n:count batch:countnone",
      gmm.gaussian_mixture([0.5, 0.5], np.zeros((2, 2)), np.stack([np.eye(2)] * 2)), 4,
      np.random.default_rng(0)),
    C(prompts.orthonormal_bank, "n:count dim:count", 3, 5),
    C(sampling.degree_group_graph, "sizes:array degrees:array seed:seed", [6, 4], [2, 2]),
    C(sampling.group_psi, "sizes:array degrees:array", [6, 4], [2, 2]),
    # ----------------------------------------------------------------------------------------------- Part I
    C(one_dimensional.quartic, "mu:pos"),
    C(one_dimensional.least_squares, "g:callable y:real xbar:real expect_oscillation:bool",
      lambda x: x**2, 1.0, 1.0, "sq", "x^2"),
    C(one_dimensional.compose, "q:callable p:callable", lambda x: x, lambda x: x),
    C(one_dimensional.oscillation_test, "order:count tol:pos", FUNC),
    C(one_dimensional.gd_map, "func:callable lr:pos", FUNC, 0.5),
    C(one_dimensional.gd_iterate_many, "x0:array lrs:array steps:count bound:pos", [FUNC], [0.5], [1.05], 4),
    C(one_dimensional.two_step_gap, "x0:state lr:pos", FUNC, [0.5], 1.05),
    C(one_dimensional.two_cycle_learning_rate, "eps:real span:pos n_grid:count", FUNC, 0.05),
    C(one_dimensional.period2_orbit, "mu:pos lr:pos", 1.0, 1.05),
    C(one_dimensional.two_cycle_multiplier, "K:pos", 1.05),
    C(one_dimensional.quartic_gd_map, "x:state K:pos mu:pos", [0.5], 1.05),
    C(one_dimensional.quartic_multiplier_numeric, "K:pos mu:pos", 1.05),
    C(one_dimensional.orbit_eos_ratios, "func:callable lr:pos points:array", FUNC, 1.05, [0.9, 1.1]),
    C(one_dimensional.prop1_quantity, "g:callable x:array", lambda x: x**3, [0.5, 1.0]),
    C(balancing.scalar_fact_step, "x:state y:state lr:pos mu:pos", np.ones(1), np.ones(1) / 2, 0.5),
    C(balancing.run_scalar_fact, "x0:state y0:state lr:pos steps:count mu:pos bound:pos", [1.0], [0.5], 0.5, 4),
    C(balancing.imbalance_next, "x:state y:state lr:pos mu:pos", np.ones(1), np.ones(1) / 2, 0.5),
    C(balancing.product_next, "x:state y:state lr:pos mu:pos", np.ones(1), np.ones(1) / 2, 0.5),
    C(balancing.lemma2_certificate, "x0:array y0:array lr:pos mu:pos", 1.0, 0.5, 0.5),
    C(balancing.hessian_xy, "x:state y:state mu:pos", [1.0], [0.5]),
    C(balancing.sharpness_xy, "x:state y:state mu:pos", [1.0], [0.5]),
    C(balancing.damian_indicator, "x:state y:state lr:pos mu:pos", [1.0], [0.5], 0.5),
    C(balancing.damian_manifold_interval, "lr:pos mu:pos", 1.5),
    C(balancing.prop7_min_sharpness, "n:count", 3),
    C(balancing.run_single_neuron_population, "K:pos steps:count", 1.1, 5),
    C(balancing.run_single_neuron_empirical, "X:array lr:pos steps:count", np.eye(2), 1.0, 3),
    C(balancing.thm4_bound, "t:array K:pos eps:pos", T8, 1.05, 0.05),
    C(beyond_low_dimension.teacher_student_data, "m:count d:count seed:seed", 8, 4),
    C(beyond_low_dimension.ts_init, "d:count seed:seed k_step:nonneg noise:nonneg", 4),
    C(beyond_low_dimension.eos_mask, "sharpness:array lr:pos frac:pos", Y8, 0.5),
    C(matrix_factorisation.rho_orbit, "K:pos", 1.05),
    C(matrix_factorisation.mf_gd, "lr:pos steps:count tail:count record_every:count bound:pos",
      *matrix_factorisation.generic_init(1, 2), matrix_factorisation.diag_target(np.array([[1.0, 0.5]])), 0.5, 4,
      record_every=2),
    C(matrix_factorisation.generic_init, "batch:count d:count scale:pos seed:seed", 1, 3),
    C(matrix_factorisation.divergence_grid, "k1_values:array k2_values:array init:option alpha:pos d:count "
      "steps:count scale:pos seed:seed", [0.5], [0.5], steps=5),
    C(matrix_factorisation.eq9_holds, "k1:array k2:array alpha:pos", [0.5], [0.5], 0.8),
    C(matrix_factorisation.mf_bifurcation, "K_values:array ratio:pos d:count steps:count keep:count scale:pos "
      "seed:seed", [0.9], steps=10, keep=2),
    C(matrix_factorisation.fig6_run, "seed:seed alpha:pos steps:count K:pos eps:pos d:count", 0, 0.8, 5),
    C(matrix_factorisation.eq203_eigenvalues, "k1:pos kp:pos alpha:pos", 1.05, 0.3, 0.8),
    C(matrix_factorisation.offdiag_block, "k1:pos kp:pos alpha:pos at:option", 1.05, 0.3, 0.8),
    C(matrix_factorisation.is_semi_convergent, "A:array tol:pos", np.eye(2) / 2),
    # ---------------------------------------------------------------------------------------------- Part II
    C(construction.key_mask, "L:count n:count", 6),
    C(construction.thm41_bound, "W:array p:pos", np.eye(2), 2.0),
    C(construction.exp_kernel, "betas:array alphas:array J:count", [0.5], [1.0], 5),
    C(construction.fit_delay_kernel, "delay:count betas:array J:count", 2, [0.5, 0.9], 20),
    C(construction.single_head_delay_error, "delay:count beta:pos", 2, 0.5),
    C(construction.pod, "g:callable low:real high:real n_nodes:count", lambda x, y: x * y),
    C(convergence.ih_linear_rate, "alpha_star:pos w_star:pos L:count separate_qk:bool", 1.0, 0.49, 20),
    C(convergence.balance_flow, "wq0:real wk0:real h0:real alpha_star:pos w_star:pos L:count t_max:pos "
      "n_points:count", 0.02, 0.01, 0.01, 1.0, 0.49, 20, 10.0, n_points=5),
    C(convergence.balance_gd, "wq0:real wk0:real h0:real alpha_star:pos w_star:pos L:count lr:pos steps:count",
      0.02, 0.01, 0.01, 1.0, 0.49, 20, lr=0.1, steps=3),
    C(four_phases.targets_star, "alpha_star:pos", 1.0),
    C(four_phases.prev_token_weights, "L:count p1:nonneginf", 6, 2.0),
    C(four_phases.stage1_flow, "L:count sigma_init:pos alpha_star:pos t_max:pos n_points:count",
      20, 0.01, 1.0, 10.0, n_points=5),
    C(four_phases.ngram_sums, "p:real L:count", 0.5, 20),
    C(four_phases.loss_g4, "p:real g:real alpha_star:pos L:count", 0.5, 0.5, 1.0, 20),
    C(four_phases.loss_ih, "w:real h:real alpha_star:pos w_star:pos L:count", 0.1, 0.1, 1.0, 0.49, 20),
    C(four_phases.rhs_ih, "w:state h:state alpha_star:pos w_star:pos L:count separate_qk:bool",
      0.1, 0.1, 1.0, 0.49, 20),
    C(four_phases.four_phase_dynamics, "alpha_star:pos w_star:pos L:count sigma_init:pos t_max:pos "
      "separate_qk:bool only_ih:bool n_points:count", 1.0, 0.49, 20, 0.01, 10.0, n_points=5),
    C(four_phases.plateau_time_scale, "alpha_star:pos w_star:pos L:count sigma_init:pos", 1.0, 0.49, 20, 0.01),
    C(four_phases.plateau_rate, "alpha_star:pos w_star:pos L:count separate_qk:bool", 1.0, 0.49, 20),
    C(four_phases.plateau_loss, "alpha_star:pos w_star:pos L:count", 1.0, 0.49, 20),
    C(sample_flows.ih_moments, "w_values:array X:array w_star:pos softmax:option", [0.1],
      np.random.default_rng(0).standard_normal((4, 6)), 0.49),
    C(trained_transformers.uniform_prev_token_score, "T:count causal:option", 6),
    C(trained_transformers.alibi_prev_token_score, "p:pos T:count", 1.0, 6),
    C(trained_transformers.plateau_and_drop, "step:array loss:array level0:pos hi:pos lo:pos", T8, Y8, 1.0),
    # --------------------------------------------------------------------------------------------- Part III
    C(sim_data.sim_gaussian_mixture, "mu:array sigma:array d:countnone n:count rotate:bool seed:seed", MU2, SIG2, n=8),
    C(sim_data.concept_rates, "mu:array sigma:array origin_cluster:bool", MU2, SIG2),
    C(sim_data.random_rotation, "d:count seed:seed", 3),
    C(sim_data.second_moment, "mu:array sigma:array d:count", MU2, SIG2, 3),
    C(sim_data.sim_samples, "mu:array sigma:array d:count n_per_cluster:count rotate:bool seed:seed",
      MU2, SIG2, 3, 4),
    C(sim_one_layer.one_layer_flow, "mu:array sigma:array times:array", MU2, SIG2, T8),
    C(sim_one_layer.one_layer_gd, "mu:array sigma:array lr:pos steps:count", MU2, SIG2, 0.1, 5),
    C(sim_one_layer.predicted_learning_times, "mu:array sigma:array horizon:posinf", MU2, SIG2),
    C(sim_one_layer.rate_sampling_std, "mu:array sigma:array n:count", MU2, SIG2, 10),
    C(sim_one_layer.flip_sigma, "k:count j:count", MU2, SIG2, 0, 1),
    C(deep_models.init_symmetric, "d:count d_prime:count tau:pos n_seeds:count seed:seed positive:bool",
      3, 3, 0.1, 2),
    C(deep_models.default_record_steps, "steps:count n_log:count n_lin:count", 100),
    C(deep_models.plateau_slope_theory, "a:array i:count", [1.0, 0.5]),
    C(deep_models.deep_linear_sgd_run,
      "n_seeds:count lr:pos steps:count batch_size:count n_per_cluster:count seed:seed",
      MU2, SIG2, 2, 2, 2, n_seeds=1, lr=0.1, steps=2, batch_size=2, n_per_cluster=2),
    C(deep_models.bump_windows, "prominence:pos", [1.0, 2.0, 1.0], 0.1),
    C(jacobian_lemmas.lemma_setting, "a:array n_seeds:count seed:seed K:pos kappa:pos r:pos delta:pos",
      [1.0, 4.0], 2),
    C(linear_gd.init_deep_linear, "d_in:count d_out:count depth:count K:count init_scale:nonneg bias:bool "
      "seed:seed", 2, 2, 2, 3),
    C(shapes.class_colors, "delta:prob", 0.5),
    C(shapes.circles_color_size, "n_per_class:count delta:prob image_size:count variant:option "
      "pixel_noise:nonneg seed:seed", 2, 0.5),
    C(diffusion.log_checkpoints, "first:count last:count n:count", 1, 100, 5),
    C(diffusion.learned_step, "values:array steps:array level:real", Y8[::-1], T8, 0.5),
    C(diffusion.train_ensemble, "steps:count batch_size:count lr:pos weight_decay:nonneg sample_steps:count "
      "keep_images:count objective:option clip_norm:posnone", [unet.CondUNet(UNET_CFG)], torch.zeros(1, 4, 3, 8, 8),
      torch.zeros(1, 4, 4), steps=1, batch_size=2),
    # ---------------------------------------------------------------------------------------------- Part IV
    C(telling_graphs_apart.walk_counts, "K:count", G6, 3),
    C(telling_graphs_apart.operator_stack, "operator:option K:count", G6, "A", 2),
    C(telling_graphs_apart.alpha_bound, "n:count", 5),
    C(telling_graphs_apart.smallest_injective_alpha, "n:count max_alpha:count", 4),
    C(telling_graphs_apart.class_counts, "Ks:array", [G6], [1, 2]),
    C(telling_graphs_apart.layout, "seed:seed", G6),
    C(rooted_graphs.gnn_tree_classes, "m:count K:count", 2, 2),
    C(rooted_graphs.gamlp_tree_classes, "m:count K:count", 2, 2),
    C(rooted_graphs.aggregation_tree_count, "m:count K:count", 2, 2),
    C(rooted_graphs.lemma_a6_bound, "m:count K:count", 2, 2),
    C(rooted_graphs.enumerate_trees, "m:count K:count", 2, 2),
    C(rooted_graphs.rooted_class_counts, "Ks:array", G6, [1, 2]),
    C(communities.sbm_snr, "a:pos b:nonneg", 5.0, 1.0),
    C(communities.overlap, "pred:array labels:array", np.array([0, 1, 0, 1]), np.array([0, 1, 1, 1])),
    C(communities.block_operator, "n:count operator:option kappa:real", [EDGES4], 4, "A"),
    C(communities.power_features, "n:count operator:option K:count", [EDGES4], 4, "A", 2),
    C(communities.spectral_partition, "n:count method:option", EDGES4, 4, "adjacency"),
    C(communities.paired_difference, "first:array second:array", [0.5, 0.6, 0.7], [0.4, 0.6, 0.5]),
    C(communities.beats, "first:array second:array", [0.5, 0.6, 0.7], [0.4, 0.6, 0.5]),
    C(communities.comparable, "first:array second:array", [0.5, 0.6, 0.7], [0.4, 0.6, 0.5]),
    C(walk_counting.parity_features, "n:count", 4),
    C(walk_counting.blue_walk_labels, "length:count", G6, 2),
    C(walk_counting.split_nodes, "n:count rule:option n_train:count seed:seed", 6, "first", 3),
    C(walk_counting.gamlp_design, "operator:option K:count", G6, "A", 2),
    C(walk_counting.cosine_schedule, "steps:count", 10),
    C(walk_counting.handset_counts, "length:count", G6, 2),
    # ----------------------------------------------------------------------------------------------- Part V
    C(mechanism.table_c1, "n_tokens:count alpha:prob", 10, 0.3),
    C(mechanism.value_gradient_cases, "n_tokens:count seq_len:count alpha:prob m:count reps:count seed:seed",
      4, 6, 0.3, m=5, reps=2),
    C(mechanism.qk_gradient_scores,
      "n_tokens:count seq_len:count alpha:prob beta1:pos beta2:nonneg m:count reps:count seed:seed", 4, 6, 0.3,
      m=5, reps=2),
    C(mechanism.noise_logit_fixed_point, "alpha:prob n_tokens:count", 0.2, 8),
    C(mechanism.noise_logit_recursion, "alpha:prob n_tokens:count lr:pos steps:count", 0.2, 8, 1.0, 5),
    C(mechanism.sample_recall_sequences, "m:count n_tokens:count seq_len:count alpha:prob trigger:count", 4, 6, 8,
      0.2, np.random.default_rng(0)),
    C(mechanism.one_step_margins, "m:count n_tokens:count seq_len:count alpha:prob reps:count seed:seed",
      4, 6, 8, 0.2, reps=2),
    C(mechanism.c38_flow, "alpha:prob t_max:pos n_points:count", 0.2, t_max=10.0, n_points=5),
    C(mechanism.c38_probabilities, "a:array b:array", np.array([0.1, 0.2]), np.array([0.3, 0.1])),
    C(recall_data.char_bigram, "n_chars:count uniform:bool", 8),
    C(recall_data.sample_recall, "batch:count T:count alpha:prob", torch.full((6,), 1 / 6),
      torch.full((6, 6), 1 / 6), 2, 8, 0.2),
    C(ioi.sample_ioi, "n_tokens:count T:count batch:count alpha:prob q:count", 6, 10, 2, 0.3, q=1),
    C(ioi.split_widths, "d:count budget:count mlp_share:prob", 8, 256, 0.5),
    C(ioi.split_model, "n_tokens:count d:count T:count h_attn:count h_mlp:count n_layers:count seed:seed",
      6, 8, 10, 4, 8),
    # ----------------------------------------------------------------------------------------------- Part VI
    C(shallow_vits.thm1_bound, "alpha_star:array sigma:array tau:array", 0.3, 0.1),
    C(shallow_vits.prop1_bound, "alpha_star:array sigma:array tau:array", 0.3, 0.1),
    C(shallow_vits.r_squared, "x:array y:array", T8, T8**2),
    C(shallow_vits.first_step_below, "curve_t:array curves:array threshold:real", T8, np.stack([Y8, Y8]), 0.5),
    C(shallow_vits.keep_mask, "kind:option count:count", np.tile([0, 1, 2, 3], (2, 1)),
      np.tile([True, False, True, False], (2, 1)), "random", 1),
    C(vit_images.removal_mask, "n_removed:count", np.tile([True] * 16 + [False] * 9, (2, 1)), 3,
      np.random.default_rng(0)),
    C(vit_images.patchify, "images:array", np.zeros((2, 20, 20))),
    C(vit_images.compose_images, "digits:array", np.ones((2, 8, 8)), [True, False], np.random.default_rng(0)),
    C(vit_images.TinyViT, "d_patch:count n_tokens:count width:count heads:count blocks:count n_classes:count"),
    C(vit_images.accuracy_map, "steps:count lr:pos batch:count n_test:count", [0], [8], [0],
      arch=dict(width=4, heads=1, blocks=1), steps=1, lr=1e-2, batch=2, n_test=10, classes=[0, 1]),
    C(gtr.core_graph, "n:count gamma_d:prob eps_S:prob degree:count c0:nonneg eps0:prob seed:seed", 20, 0.4,
      0.1, 4),
    C(gtr.winning_margin, "spd:array z:count", TOY_SPD, np.zeros(8), np.ones(8), 1),
    C(gtr.pe_index, "spd:array Z:count", TOY_SPD, 3),
    C(gtr.pe_attention_toy, "b:array sizes:array relevant:array", [0.0, 1.0], [1.0, 2.0], [0.5, 0.5]),
    C(gtr.loglog_exponent, "x:array y:state", T8 + 1, T8 + 1),
    C(gtr.train_gt, "steps:countnone record_every:count gcn:bool pe:bool core_distance:count", [4], [0], GT_TINY,
      0.4, 0.1, steps=2),
    C(gtr.core_graph, "core_distance:count hubs:count", 40, 0.4, 0.1, 8, core_distance=2),
    C(gtr.normalised_margin, "spd:array", TOY_SPD, np.zeros(8), np.ones(8), [1, 2]),
    C(gtr.sbm_graph, "n:count gamma_d:prob c0:nonneg seed:seed", 20, 4.0, 1.0, 0.4),
    C(gtr.karate_graph, ""),
    C(gtr.train_gt_graphs, "steps:countnone record_every:count gcn:bool pe:bool seed:seed", [GT_G0], [0], [4],
      GT_TINY, steps=2),
    # ------------------------------------------------------------------ further public names (second round)
    C(curves.decay_law, "t:array y:array", T8 + 1, np.exp(-T8)),
    C(curves.peak_positions, "curve:array prominence:pos", np.stack([np.sin(T8)] * 2), 0.1),
    C(generators.barabasi_albert, "n:count m:count seed:seed", 8, 2),
    C(generators.binary_sbm, "n:count a:nonneg b:nonneg seed:seed", 20, 5.0, 1.0),
    C(generators.erdos_renyi_mean_degree, "n:count mean_degree:nonneg seed:seed", 10, 3.0),
    C(generators.full_mary_tree, "m:count depth:count", 2, 2),
    C(generators.powerlaw_cluster, "n:count m:count p:prob seed:seed", 10, 2, 0.3),
    C(stats.power_law_exponent, "x:array y:array n_boot:count seed:seed level:prob", [1.0, 2.0, 4.0, 8.0],
      [1.0, 0.5, 0.26, 0.12], n_boot=100),
    C(sim_data.hypercube_corners, "mu:array", MU2),
    C(sim_data.ood_point, "mu:array", MU2),
    C(sim_data.population_moments, "mu:array sigma:array origin_cluster:bool", MU2, SIG2),
    C(matrix_factorisation.mf_trajectory, "lr:pos steps:count bound:pos",
      *(a[0] for a in matrix_factorisation.generic_init(1, 2)),
      matrix_factorisation.diag_target(np.array([[1.0, 0.5]]))[0], 0.5, 4),
    C(sweep.config_key, "config:object", "n", {"x": 1}, "v"),
    C(operators.triangle_adjacency, "G:object", G6),
    C(sampling.inf_norm, "A:array", torch.eye(3)),
    C(operators.adjacency, "G:object", G6),
    C(operators.degrees, "G:object", G6),
    C(noisy_recall.log_steps, "steps:count", 100),
    C(curves.detour, "traj:array target:array", np.stack([Y8, Y8[::-1]], 1), [1.0, 1.0]),
    C(curves.distance_rebound, "dist:array", Y8),
    C(unet.num_params, "model:object", torch.nn.Linear(2, 1)),
    C(equivalence.class_sizes, "keys:object", [1, 1, 2]),
    C(tokens.pattern_bank, "M:count d:count", 3, 4),
    C(matrix_factorisation.quasi_symmetric_init, "X0:array alpha:pos eps:nonneg seed:seed", np.eye(2), 0.5),
    C(gtr.graph_experiment, "family:option gamma_d:prob eps_S:prob", "core", [1], [0], [4], GT_TINY,
      runs={"pe": 1}),
    C(group_imbalance.rho, "u:array sigma:array", [0.5, 1.0], 1.0),
    C(group_imbalance.spread_rate, "steps:array spreads:array fit_from:prob", T8, np.exp(-T8)),
    C(group_imbalance.uniqueness_map, "ns:array draws:count inits:count seed:seed", [0.5, 0.5],
      [[np.ones(2), -np.ones(2)]], [[1.0, 1.0]], 1, [40], 1, 2, 0),
    C(group_imbalance.permutation_error, "W:array W_star:array", np.eye(2), np.eye(2)[::-1]),
    C(gim.digit_groups, "n_test:count split_seed:seed", 50, 0),
    C(gim.to_group, "X:array group:option contrast:prob", np.full((3, 4), 0.5), 1),
    C(gim.covariance_norm, "X:array", np.stack([T8, Y8], 1)),
    C(gim.interior_peak, "acc:array z:pos", np.array([[0.8, 0.81], [0.9, 0.92], [0.85, 0.84]])),
    C(gim.slope_interval, "x:array acc:array n_boot:count level:prob seed:seed", [0.1, 0.3],
      np.array([[0.8, 0.81], [0.9, 0.92]]), 50),
    C(gcn_sampling.label_masks, "n:count sizes:array seeds:array generator_seed:seed", 10, [2, 4], [0, 1]),
    C(chain_of_thought.transition_stats, "A:array steps:array", [np.eye(3) * 0.7 + 0.1], [np.arange(3)]),
    C(chain_of_thought.hand_built_weight, "d:count n_steps:count pattern_gain:pos step_gain:pos", 6, 2),
    C(chain_of_thought.AttentionOnlyCoT, "d:count n_steps:count init_std:nonneg seed:seed", 6, 2),
    C(chain_of_thought.oracle_errors, "A:array steps:array alpha:prob lengths:array n_queries:count seed:seed",
      [np.eye(3) * 0.7 + 0.1], [np.arange(3)], alpha=0.8, lengths=[2, 4], n_queries=20),
    C(prune.neuron_mask, "rate:prob method:option", torch.rand(2, 5), 0.4),
    C(icl.icl_banks, "m1:count m2:count d_x:count beta:pos", 3, 2, 6, 1.0),
    C(icl.cyclic_tasks, "m1:count u:count", 4, 2),
    C(icl.all_tasks, "m1:count", 4),
    C(icl.condition_632, "tasks:array m1:count", icl.cyclic_tasks(4), 4),
    C(icl.ood_patterns, "a:real b:real", MU6, 0.6, 0.5),
    C(icl.sample_icl_prompts, "n:count length:count alpha:prob kappa:nonneg d_y:count", 4, MU6, NU6,
      icl.cyclic_tasks(6), length=3, alpha=0.8, kappa=0.5, generator=torch.Generator().manual_seed(0), d_y=4),
    C(icl.icl_model, "runs:count m:count d_x:count d_y:count delta:prob seed:seed", 1, m=4, d_x=4, d_y=2),
    C(icl.icl_metrics, "n:count seed:seed", icl.icl_model(1, m=4, d_x=10, d_y=30), [ICL_CFG], n=5),
    C(icl.pruning_curve, "rates:array method:option run:count n:count draws:count seed:seed",
      icl.icl_model(1, m=4, d_x=10, d_y=30), ICL_CFG, [0.0, 0.5], n=5),
    # ------------------------------------------------------ the second review's silent acceptances and trainers
    C(config.set_float64, "enabled:bool", False),
    C(config.set_threads, "n:count", torch.get_num_threads()),
    C(chapter.processes, "n:count", 2),
    C(config.seed_everything, "seed:seed", 0),
    C(config.check_array, "ndim:countnone finite:bool nonempty:bool positive:bool", "value", [1.0, 2.0],
      ndim=1),
    C(config.check_positive, "allow_zero:bool", "value", 1.0),
    C(train.train_stacked, "loss_fn:callable lr:pos steps:count optimizer:option record_every:count "
      "divergence_bound:pos divergence_factor:posnone divergence_growth:posnone momentum:nonneg "
      "weight_decay:nonneg randomness:option", {"w": torch.ones(2, 3)}, lambda p: (p["w"] ** 2).sum(), lr=0.1,
      steps=3),
    C(sim_one_layer.affine_flow, "mu:array sigma:array times:array origin_cluster:bool", MU2, SIG2, T8),
    C(sim_one_layer.one_layer_gd_moments, "A:array lr:pos steps:count z:array record_every:count",
      np.diag([1.0, 2.0]), 0.1, 5, z=np.ones(2)),
    C(sim_one_layer.learning_times, "mu:array times:array", np.ones((8, 2)), MU2, T8),
    C(sample_flows.online_sgd_reparam, "alpha_star:pos w_star:pos L:count sigma_init:pos steps:count batch:count "
      "lr_4gram:pos lr_ih:pos separate_qk:bool eval_size:count record_every:count qk_ratio:pos", alpha_star=1.0,
      w_star=0.49, L=20, sigma_init=0.01, steps=2, batch=2, lr_4gram=0.1, lr_ih=0.1, separate_qk=False, seeds=[0],
      eval_size=8),
    C(sample_flows.ih_loss_from_moments, "h:array alpha_star:pos EA2:array EAT:array ET2:real", 0.5, 1.0,
      np.ones(3), np.ones(3), 1.0),
    C(four_phases.stage1_loss, "p_tilde:nonneg L:count g0:pos alpha_star:pos grad:bool", 0.5, 20, 0.1, 1.0),
    C(mechanism.associative_memory_run, "n:count alpha:prob d:count seeds:count steps:count lr:pos every:count "
      "seed:seed", 3, 0.2, 4, seeds=1, steps=2, ranks=(1,), every=1),
    C(communities.linear_readout_overlap, "features:array k:count seed:seed",
      np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 2, 1),
    C(telling_graphs_apart.multiset_gap, "rows1:array rows2:array", np.ones((3, 2)), np.ones((3, 2))),
]


CASES += [
    C(config.check_device, "value:option", "device", "cpu"),
    C(diffusion_variants.decay_laws, "per_seed_paths:array steps:array",
      np.linspace(0.0, 1.0, 13)[None, None, :, None].repeat(3, 1).repeat(2, 3) ** 0.5, np.arange(1.0, 14.0)),
]
CASES += MORE_CASES + PARTS_CASES + TRAIN_CASES + REST_CASES


def _mutate(value, bad):
    if isinstance(bad, str) and bad in ("nan", "empty") and not isinstance(value, str):
        arr = value.detach().clone() if torch.is_tensor(value) else np.array(value, dtype=float)
        if bad == "nan":
            return arr.float().fill_(NAN) if torch.is_tensor(arr) and not arr.is_floating_point() else (
                arr.fill_(NAN) if torch.is_tensor(arr) else np.full_like(arr, NAN))
        return arr.reshape(-1)[:0]
    return bad


def _silently_bad(out) -> bool:
    """A result that is empty or non-finite (numbers, arrays, tensors, dicts and tuples of them)."""
    if isinstance(out, dict):
        return any(_silently_bad(v) for v in out.values())
    if isinstance(out, (tuple, list)) and out and not isinstance(out[0], (nx.Graph, str)):
        return any(_silently_bad(v) for v in out)
    if torch.is_tensor(out):
        if out.is_sparse:
            out = out.coalesce().values()
        return out.numel() == 0 or (out.is_floating_point() and not torch.isfinite(out).all())
    if isinstance(out, np.ndarray) and out.dtype.kind == "f":
        return out.size == 0 or not np.isfinite(out).all()
    if isinstance(out, float):
        return not math.isfinite(out)
    return False


def _call(fn, args, kwargs, name, bad):
    import inspect

    params = list(inspect.signature(fn).parameters)
    args, kwargs = list(args), dict(kwargs)
    pos = params.index(name)
    if pos < len(args):
        args[pos] = _mutate(args[pos], bad)
    else:
        default = inspect.signature(fn).parameters[name].default
        kwargs[name] = _mutate(kwargs.get(name, default), bad)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            out = fn(*args, **kwargs)
        except ValueError as e:
            return "named" if re.search(rf"\b{re.escape(name)}\b", str(e)) else f"ValueError: {e}"
        except Exception as e:  # noqa: BLE001 - the point is to classify whatever comes out
            return f"{type(e).__name__}: {e}"
    return "silent, non-finite or empty result" if _silently_bad(out) else "silent"


OUTCOMES: list[tuple[str, str, str, object, str]] = []


#: Parameters a case does not declare get a kind from their base value (``_with_flags``): the undeclared kinds.
INFERRED = {
    "int?": ([2.5], ["3", None]),  # an integer (sign not known: only a fraction and wrong types)
    "float?": ([NAN], ["abc", None]),  # a number (NaN is refused by every number parameter of lib)
    "option?": (["bogus"], [3]),  # a string option
    "array?": (["nan"], ["abc"]),  # numbers: a data array or a sequence of them
    "object?": ([], ["abc"]),  # a model, graph, generator or configuration
}
MUTATIONS.update(INFERRED)
#: Names of free-text string parameters (labels, titles, file names): no option to get wrong.
FREE_TEXT = re.compile(r"(label|title|name|caption|text|cmap|color|colour|statement|source|what|unit|marker|"
                       r"version)s?$")


def _inferred_kind(name: str, value):
    """The kind of an undeclared parameter from its base value, or None (None values mean a default)."""
    if isinstance(value, bool) or isinstance(value, np.bool_):
        return "bool"
    if value is None:
        return None
    if name == "seed" or name.endswith("_seed"):
        return "seed"
    if isinstance(value, (int, np.integer)):
        return "int?"
    if isinstance(value, (float, np.floating)):
        return "float?"
    if isinstance(value, str):
        return None if FREE_TEXT.search(name) else "option?"
    if callable(value) and not isinstance(value, (torch.nn.Module, type)):
        return "callable"
    if torch.is_tensor(value) or isinstance(value, np.ndarray):
        return "array?" if value.dtype != torch.bool and value.dtype != bool else "object?"
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in value):
        return "array?"
    if isinstance(value, (dict, list, tuple)):
        return None  # settings, runs and records: their fields are the function's business
    return "object?"


def _with_flags(fn, args, kwargs, kinds) -> dict:
    """``kinds`` plus every parameter of ``fn`` it does not declare, with a kind inferred from its base value
    (``_inferred_kind``): a flag (``True``/``False``) must refuse ``"no"``, None and 2 (``check_bool``), never
    read them as truthy; a number refuses NaN and a string, an option an unknown string, and so on."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return kinds
    out = dict(kinds)
    for i, (name, p) in enumerate(params.items()):
        if name in out or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name.startswith("_") \
                or name in ("self", "cls", "dtype", "device"):  # torch's own dtype/device checks
            continue
        value = args[i] if i < len(args) and p.kind != p.KEYWORD_ONLY else kwargs.get(name, p.default)
        if value is inspect.Parameter.empty:
            continue
        kind = _inferred_kind(name, value)
        if kind is not None:
            out[name] = kind
    return out


@pytest.mark.parametrize("fn,args,kwargs,kinds", CASES)
def test_bad_input_case(fn, args, kwargs, kinds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(*args, **kwargs)  # the base call is valid
    for name, kind in _with_flags(fn, args, kwargs, kinds).items():
        invalid, wrong = MUTATIONS[kind]
        for category, values in (("invalid value", invalid), ("wrong type", wrong)):
            for bad in values:
                OUTCOMES.append((fn.__qualname__, name, category, bad, _call(fn, args, kwargs, name, bad)))


def test_bad_input_bar():
    """At least 95 % of invalid values and 90 % of wrong types raise a ValueError naming the argument; no call
    returns a non-finite or empty result silently (runs after the cases above)."""
    if not OUTCOMES:
        pytest.skip("run together with the cases of this file")
    lines, ratios = [], {}
    for category, bar in (("invalid value", 0.95), ("wrong type", 0.90)):
        rows = [o for o in OUTCOMES if o[2] == category]
        ok = sum(o[4] == "named" for o in rows)
        ratios[category] = (ok / len(rows), bar)
        lines.append(f"{category}: {ok}/{len(rows)} = {ok / len(rows):.1%} named (bar {bar:.0%})")
    slipped = [o for o in OUTCOMES if o[4] != "named"]
    report = "\n".join(lines + [f"  {f}({n}={b!r}) [{c}]: {r[:90]}" for f, n, c, b, r in slipped])
    print(report)
    silent_bad = [o for o in OUTCOMES if o[4].startswith("silent, non-finite")]
    assert not silent_bad, report
    assert all(r >= bar for r, bar in ratios.values()), report


# ---------------------------------------------------------------------------------- every public name of lib
#: Public functions and classes of ``lib`` that take arguments but have no case above yet, by module, each line
#: with its reason after ``#`` (a continuation line, indented, shares the reason of the line it ends). The test
#: below keeps this list exact: a new public name needs a case (or an entry here), and a name that gets a case
#: or disappears must leave the list, so the share of ``lib`` under the fuzz only grows.
NOT_YET_FUZZED = """
chapter: note_widget_frames setup  # build plumbing: setup seeds the process and writes the chapter's record
claims: ClaimsTable chapter coverage load_manifest load_manifests normalise_source record source_mentions
    table_html tex_html  # ledger and report: free text and records
claims: status  # ok/partly are often NumPy or torch booleans from a comparison; check_bool would break chapters
config: pick  # any two values by design (a quick and a full setting)
graphs.wl: colour_multiset  # any hashable colours by design
models.gnn: neighbour_sum  # per-step kernel, guarded by its fuzzed caller (KERNEL_CALLERS)
models.sgnn: apply_adjacency instance_norm  # per-step kernels, guarded by their fuzzed caller (KERNEL_CALLERS)
models.one_hidden: cross_entropy_gradient cross_entropy_hessian cross_entropy_risk one_hidden_probability
    # per-step kernels, guarded by their fuzzed caller (KERNEL_CALLERS)
models.shallow_attention: attention_mass  # per-step kernel, guarded by its fuzzed caller (KERNEL_CALLERS)
models.hf: load_pretrained  # loads a saved model from a folder or the hub: no case written yet
parts.edge_of_stability.balancing: single_neuron_reduced_step
    # per-step kernel, guarded by its fuzzed caller (KERNEL_CALLERS)
paper_scale: code_files code_hash current_result gpu_plan ledger load_result piece_status result_state run
    # the paper-scale runner, its registry and result files: tests/test_paper_scale.py
parts.concept_learning.deep_models: illusion_fraction
    # takes a SymmetricRun and the OOD losses of a long run: no case written yet
parts.concept_learning.diffusion_variants: variant_runs  # trains diffusion models (minutes)
parts.concept_learning.paper_runs: variant_study  # reads a committed result: tests/test_paper_scale.py
sweep: cached_call clean_orphans clear_cache sweep  # cache machinery, tested in test_sweep.py
parts.edge_of_stability.matrix_factorisation: mf_loss mf_step
    # per-step kernels, guarded by their fuzzed caller (KERNEL_CALLERS)
parts.generalisation.gcn_sampling: relative_mse  # per-step kernel, guarded by its fuzzed caller (KERNEL_CALLERS)
parts.graph_networks.communities: permutation_ce  # per-step kernel, guarded by its fuzzed caller (KERNEL_CALLERS)
parts.generalisation.in_context_learning: icl_forward
    # per-step kernel, guarded by its fuzzed caller (KERNEL_CALLERS)
parts.memorisation.language_models: lm_loss  # per-step kernel, guarded by its fuzzed caller (KERNEL_CALLERS)
"""


def _public_names() -> dict:
    """Every function and class defined in a public module of ``lib`` whose name has no leading underscore."""
    import importlib
    import inspect
    import pkgutil

    import lib

    out = {}
    for info in pkgutil.walk_packages(lib.__path__, "lib."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not name.startswith("_") and (inspect.isfunction(value) or inspect.isclass(value)) \
                    and value.__module__ == info.name:
                out[f"{info.name[4:]}.{name}"] = value
    return out


def _nothing_to_mutate(value) -> bool:
    """A record (a dataclass without checks, an exception) or a function without parameters."""
    import dataclasses
    import inspect

    if inspect.isclass(value) and ((dataclasses.is_dataclass(value) and not hasattr(value, "__post_init__"))
                                   or issubclass(value, BaseException)):
        return True
    try:
        return not inspect.signature(value).parameters
    except (TypeError, ValueError):
        return False


def test_every_public_name_is_fuzzed_or_listed():
    names = _public_names()
    covered = {f"{fn.__module__[4:]}.{fn.__qualname__}" for fn, *_ in (c.values for c in CASES)}
    listed = set()
    for line in NOT_YET_FUZZED.replace("\n    ", " ").strip().splitlines():
        module, _, rest = line.partition(":")
        rest, hash_, reason = rest.partition("#")
        assert hash_ and reason.strip(), f"NOT_YET_FUZZED: give the reason after '#' for {line!r}"
        listed |= {f"{module.strip()}.{n}" for n in rest.split()}
    trivial = {n for n, v in names.items() if _nothing_to_mutate(v)}
    missing = sorted(set(names) - covered - trivial - listed)
    stale = sorted(listed - (set(names) - covered - trivial))
    print(f"public names of lib: {len(names)}; fuzzed: {len(covered & set(names))}; nothing to mutate: "
          f"{len(trivial - covered)}; not yet fuzzed: {len(listed)}")
    assert not missing, f"public names with neither a case nor an entry in NOT_YET_FUZZED: {missing}"
    assert not stale, f"entries of NOT_YET_FUZZED that are fuzzed, trivial or gone: {stale}"


# ---------------------------------------------------------------------------------------- per-step kernels
#: Kernels that ``NOT_YET_FUZZED`` leaves out: each runs inside every training, GD or Newton step (or every forward
#: pass), where checking its tensors would cost a pass over them and, on a GPU, a device sync per call; a diverged
#: state must also pass through them to be flagged by the trainer. Their data come from a public caller that checks
#: them: kernel -> (that caller, which has a fuzz case, and the caller's argument the kernel's input derives from).
KERNEL_CALLERS = {
    "models.gnn.neighbour_sum": (walk_counting.fit_counting_model, "G"),
    "models.sgnn.apply_adjacency": (communities.run_sbm, "a"),
    "models.sgnn.instance_norm": (communities.run_sbm, "n"),
    "parts.graph_networks.communities.permutation_ce": (communities.run_sbm, "K"),
    "models.one_hidden.cross_entropy_gradient": (one_hidden.newton_critical_point, "X"),
    "models.one_hidden.cross_entropy_hessian": (one_hidden.newton_critical_point, "X"),
    "models.one_hidden.cross_entropy_risk": (one_hidden.newton_critical_point, "y"),
    "models.one_hidden.one_hidden_probability": (one_hidden.newton_critical_point, "W0"),
    "models.shallow_attention.attention_mass": (shallow_vits.train_vit, "alpha_star"),
    "parts.edge_of_stability.balancing.single_neuron_reduced_step": (balancing.run_single_neuron_population, "K"),
    "parts.edge_of_stability.matrix_factorisation.mf_loss": (matrix_factorisation.mf_gd, "C"),
    "parts.edge_of_stability.matrix_factorisation.mf_step": (matrix_factorisation.mf_gd, "Y0"),
    "parts.generalisation.gcn_sampling.relative_mse": (gcn_sampling.train_sampled_gcn, "Y"),
    "parts.generalisation.in_context_learning.icl_forward": (icl.train_icl, "configs"),
    "parts.memorisation.language_models.lm_loss": (language_models.train_template_lm, "batch"),
}


@pytest.mark.parametrize("kernel", sorted(KERNEL_CALLERS))
def test_kernel_is_guarded_by_its_fuzzed_caller(kernel, monkeypatch):
    """The kernel is listed in ``NOT_YET_FUZZED``, its caller's fuzz case really reaches it (the kernel is
    wrapped in every module that binds it and must be called by the caller's valid base call), and every bad
    value of the caller's argument is refused with a ``ValueError`` naming that argument."""
    import sys

    caller, arg = KERNEL_CALLERS[kernel]
    listed = NOT_YET_FUZZED.replace("\n    ", " ")
    module, name = kernel.rsplit(".", 1)
    assert re.search(rf"^{re.escape(module)}:[^#]*\b{name}\b", listed, re.M), f"{kernel} is not in NOT_YET_FUZZED"
    case = next((c.values for c in CASES if c.values[0] is caller), None)
    assert case is not None, f"{caller.__qualname__} (the caller of {kernel}) has no fuzz case"
    fn, args, kwargs, kinds = case
    target = getattr(sys.modules[f"lib.{module}"], name)
    calls = []

    def wrapped(*a, **k):
        calls.append(1)
        return target(*a, **k)

    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("lib.") and getattr(mod, name, None) is target:
            monkeypatch.setattr(mod, name, wrapped)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(*args, **kwargs)
    assert calls, f"the fuzz case of {caller.__qualname__} never calls {kernel}"
    kind = _with_flags(fn, args, kwargs, kinds)[arg]
    invalid, wrong = MUTATIONS[kind]
    outcomes = {repr(bad): _call(fn, args, kwargs, arg, bad) for bad in invalid + wrong}
    assert all(o == "named" for o in outcomes.values()), outcomes
