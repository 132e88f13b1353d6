"""Cases of ``tests/test_fuzz.py`` for the trainers and experiment drivers (imported there): each valid call trains
for one or two steps at toy sizes, so that the mutations reach the checks at the top of the trainer."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from lib.parts.concept_learning import diffusion
from lib.parts.edge_of_stability import beyond_low_dimension as bld
from lib.parts.generalisation import (
    chain_of_thought,
    cot_multilayer,
    group_images,
    settings,
    shallow_vits,
)
from lib.parts.generalisation import in_context_learning as icl
from lib.parts.graph_networks import communities, walk_counting
from lib.parts.memorisation import ioi, language_models, noisy_recall
from lib.parts.memorisation import settings as msettings


def C(fn, kinds: str, *args, **kwargs):
    """One case: ``fn(*args, **kwargs)`` is valid; ``kinds`` = "name:kind name:kind ..."."""
    return pytest.param(fn, args, kwargs, dict(k.split(":") for k in kinds.split()), id=fn.__qualname__)


MU, NU = icl.icl_banks()
ICL = dict(relevant=MU, irrelevant=NU, tasks=icl.cyclic_tasks(6), length=4, alpha=0.8, kappa=0.5)
IOI = dict(n_tokens=6, d=8, T=10, batch=4, alpha=0.5, steps=1, lr=0.03, momentum=0.9, weight_decay=1e-4,
           adam_lr=1e-3, n_test=4, laser_rank=2)
TS_X, TS_Y = bld.teacher_student_data(8, 16)
TS_THETA = bld.ts_init(16)[0]
MLP_X = torch.randn(12, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
VIT = dict(settings.VIT, L=10, m=8, steps=1, n_test=10)
RECALL = dict(msettings.RECALL_QUICK, n_chars=8, d=16, T=16, batch=4, n_test=8)
SPLIT = dict(n_chars=8, d=8, T=12, batch=4, alpha=0.5, steps=1, momentum=0.9, weight_decay=1e-4, n_test=8)

CASES = [
    C(chain_of_thought.train_cot, "d:count n_patterns:count n_steps:count n_examples:count alpha:prob batch:count "
      "lr:pos steps:count init_std:nonneg seed:seed", steps=1, batch=2, n_examples=2),
    C(cot_multilayer.train_multilayer_cot, "steps:count batch:count n_examples:count n_test:count d_model:count "
      "positions:option",
      steps=1, batch=2, n_examples=2, n_test=2, d_model=8, n_layers=1, n_heads=1),
    C(icl.train_icl, "configs:object m:count delta:prob lr:pos batch:count steps:count seed:seed", [ICL], m=4,
      steps=1, batch=2),
    C(icl.train_icl_gpt, "train_config:object tests:object d_model:count n_layers:count n_heads:count lr:pos "
      "batch:count steps:count n_test:count seed:seed", ICL, [ICL], d_model=8, n_layers=1, n_heads=1, steps=1,
      batch=2, n_test=4),
    C(bld.run_teacher_student, "X:array y:array theta0:array lr:pos steps:count sharp_every:count", TS_X, TS_Y,
      TS_THETA, lr=0.5, steps=1),
    C(diffusion.train_concept_classifier,
      "image_size:count variant:option steps:count n:count seed:seed deltas:arraynone",
      steps=1, n=2, deltas=[0.5]),
    C(walk_counting.fit_counting_model, "G:object length:count model:option mask:array width:count lr:pos "
      "steps:count seed:seed", nx.cycle_graph(6), 2, "gin", mask=np.arange(6) < 3, width=4, lr=0.01, steps=1),
    C(group_images.fraction_sweep, "fractions:array seeds:array minority:count n_total:count width:count "
      "steps:count lr:pos", [0.5], [0], minority=1, n_total=40, width=4, steps=1),
    C(language_models.train_template_lm, "steps:count batch:count d_model:count n_layers:count lr:pos seed:seed "
      "dog_fraction:prob", steps=1, batch=2, d_model=8, n_layers=1),
    C(ioi.train_ioi, "setting:object n_layers:count optimizer:option seed:seed record_every:count", IOI, 2, "sgd"),
    C(bld.run_mlp_eos, "X:array y:array depth:count lr:pos steps:count width:count stats_every:count "
      "keep_params_every:count cond_frac:prob seed:seed", MLP_X, (MLP_X[:, 0] > 0).double(), depth=2, lr=0.1,
      steps=1, width=4, cond_frac=0.0),
    C(shallow_vits.train_vit, "Ns:array seeds:array alpha_star:prob alpha_hash:prob record_every:count "
      "n_remove:count", [4], [0], VIT, 0.4, 0.1, record_every=1),
    C(communities.run_sbm, "a:nonneg b:nonneg n:count K:count n_train:count n_test:count hidden:count "
      "sgnn_depth:count", 5.0, 1.0, n=40, K=2, n_train=2, n_test=2, sgnn_depth=1, chunk=2),
    C(noisy_recall.train_recall, "setting:object steps:count seed:seed", RECALL, 1),
    C(ioi.bigram_split_loss, "setting:object h_attn:count h_mlp:count lr:pos seed:seed", SPLIT, 4, 8, 0.1),
]
