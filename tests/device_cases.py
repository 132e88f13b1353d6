"""Small runs of every function of lib that takes ``device``, shared by tests/test_device.py (on the CPU:
``device="cpu"`` is bit for bit the default) and tests/test_cuda.py (on a GPU: ``"cuda"`` against the CPU within
a stated tolerance).

Each case is ``fn(device) -> dict of NumPy arrays``; ``device=None`` calls the function without the argument (its
default). ``TOLERANCE[name] = (rtol, atol)`` is the CUDA-against-CPU tolerance: a few float32 training steps on
the GPU round differently from the CPU (other kernels, other summation orders), so results agree to about 1e-5
relative per step; a discrete read-out (an argmax, a threshold) can flip for a near-tie and gets a wider bound.
"""

from __future__ import annotations

import numpy as np
import torch


def _kw(device):
    return {} if device is None else {"device": device}


def _dev(device):
    return torch.device("cpu" if device is None else device)


def train_module(device):
    from lib.train import train

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).float()
    X, y = torch.randn(64, 3).float(), torch.randn(64, 1).float()
    Xd, yd = X.to(_dev(device)), y.to(_dev(device))

    def batch_fn(step, g):  # drawn on the CPU generator, then moved
        idx = torch.randint(0, 64, (16,), generator=g).to(Xd.device)
        return Xd[idx], yd[idx]

    res = train(model, lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(), lr=0.05, steps=20, optimizer="sgd",
                momentum=0.9, batch_fn=batch_fn, record=lambda m, s: {"w": m[0].weight.sum()}, record_every=5,
                **_kw(device))
    return {"loss": res.history["loss"], "w": np.asarray(res.history["w"], float),
            "final": torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu().numpy()}


def train_tensors(device):
    from lib.train import train

    g = torch.Generator().manual_seed(1)
    A = torch.randn(6, 6, generator=g).float().to(_dev(device))
    params = {"u": torch.randn(6, generator=g).float().to(_dev(device)),
              "v": torch.randn(6, generator=g).float().to(_dev(device))}
    res = train(params, lambda p: ((p["u"] @ A - p["v"]) ** 2).sum(), lr=0.01, steps=25, optimizer="adam",
                **_kw(device))
    return {"loss": res.history["loss"], "u": params["u"].detach().cpu().numpy()}


def train_stacked_modules(device):
    from lib.train import train_stacked

    torch.manual_seed(2)
    models = [torch.nn.Linear(4, 1).float() for _ in range(3)]
    X, y = torch.randn(3, 32, 4).float(), torch.randn(3, 32, 1).float()
    Xd, yd = X.to(_dev(device)), y.to(_dev(device))
    ar = torch.arange(3, device=_dev(device))[:, None]

    def batch_fn(step, g):
        idx = torch.randint(0, 32, (3, 8), generator=g).to(Xd.device)
        return Xd[ar, idx], yd[ar, idx]

    res = train_stacked(models, lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(), lr=0.05, steps=20, optimizer="adamw",
                        weight_decay=0.01, batch_fn=batch_fn, record=lambda m, s: {"w": m.weight.sum()},
                        **_kw(device))
    return {"loss": res.history["loss"], "w": res.history["w"], "diverged": res.diverged,
            "final": torch.stack([m.weight.detach().reshape(-1) for m in models]).cpu().numpy()}


def train_stacked_tensors(device):
    from lib.train import train_stacked

    g = torch.Generator().manual_seed(3)
    params = {"w": torch.randn(4, 5, generator=g).float().to(_dev(device))}
    # model 3's loss is 400 times steeper: plain GD at lr 0.2 diverges there, and it is frozen while the others go on
    scale = torch.tensor([1.0, 1.0, 2.0, 400.0]).float().to(_dev(device))
    res = train_stacked(params, lambda p, s: s * ((p["w"] - 1.0) ** 2).sum(), lr=0.2, steps=15,
                        batch_fn=lambda step, gen: scale, **_kw(device))
    return {"loss": res.history["loss"], "w": params["w"].detach().cpu().numpy(), "diverged": res.diverged,
            "diverged_step": res.diverged_step}


def concept_diffusion(device):
    from lib.parts.concept_learning.diffusion import concept_diffusion_experiment

    r = concept_diffusion_experiment(deltas=(0.2, 0.7), seeds=(0,), n_per_class=16, channels=(8, 8), steps=12,
                                     batch_size=8, n_checkpoints=3, first_checkpoint=2, samples=4, sample_steps=3,
                                     classifier_steps=5, **_kw(device))
    return {k: np.asarray(r[k], float) for k in ("concepts", "loss", "classifier_accuracy", "checkpoint")}


def concept_classifier(device):
    from lib.models.cnn import concept_probs
    from lib.parts.concept_learning.diffusion import train_concept_classifier

    model, acc = train_concept_classifier(steps=5, n=8, deltas=(0.2, 0.7), **_kw(device))
    x = torch.linspace(0, 1, 3 * 8 * 8).reshape(1, 3, 8, 8).float().to(next(model.parameters()).device)
    return {"acc": acc, "probs": concept_probs(model, x).cpu().numpy()}


def sim_mlps(device):
    from lib.parts.concept_learning import deep_models, linear_gd, sim_data

    X, _ = sim_data.sim_samples((1.0, 2.0), (0.1, 0.1), 4, 100, seed=0)
    ws, bs = linear_gd.init_deep_linear(4, 4, 2, 8, K=2, bias=True, seed=0)
    r = linear_gd.sgd_mlp_batched(X, weights=ws, biases=bs, lr=0.05, steps=20, batch_size=16, x_eval=X[:3],
                                  record_every=[0, 10, 20], **_kw(device))
    d = deep_models.deep_linear_sgd_run([1.0, 2.0], [0.1, 0.1], 2, 3, 4, n_seeds=2, lr=0.1, steps=10,
                                        batch_size=16, n_per_cluster=20, **_kw(device))
    return {"outputs": r["outputs"], "loss": r["loss"], "w0": r["weights"][0].numpy(), "ood": d["ood_loss"],
            "train": d["train_loss"]}


def graph_transformer(device):
    from lib.parts.generalisation import graph_transformers as gt
    from lib.parts.generalisation.settings import GT

    cfg = dict(GT, n=60, degree=10, K=5, m=8, n_test=20, steps=15)
    r = gt.train_gt([10, 20], [0, 1], cfg, 0.4, 0.05, **_kw(device))
    return {k: np.asarray(r[k], float) for k in ("test_hinge", "test_err", "test_curve", "mass", "b")}


def vit(device):
    from lib.parts.generalisation import shallow_vits as sv
    from lib.parts.generalisation.settings import VIT

    cfg = dict(VIT, L=10, m=8, steps=6, n_test=20)
    r = sv.train_vit([4, 8, 8], [0, 0, 1], cfg, 0.4, 0.1, record_every=2, curve_members=[0, 2], **_kw(device))
    out = {k: np.asarray(r[k], float) for k in ("test_hinge", "train_hinge", "test_curve", "train_curve", "mass",
                                                "A", "idx")}
    sparse = sv.sparsification_runs(cfg, [0], 6, 0.4, 0.1, 2, (2, 1.0), record_every=3, **_kw(device))
    out.update(sparse_curve=sparse["test_curve"], sparse=sparse["test_hinge"])
    m = sv.sigma_map(cfg, [0.0, 0.5], [4, 8], [0, 1], 0.4, 0.1, **_kw(device))
    return out | {"sigma_map": m["test_hinge"]}


def noisy_recall(device):
    from lib.parts.memorisation import noisy_recall as nr
    from lib.parts.memorisation.settings import RECALL_QUICK

    setting = dict(RECALL_QUICK, d=16, T=16, batch=8, n_test=8)
    r = nr.recall_experiment(setting, 4, seed=0, pretrain_steps=2, **_kw(device))
    out = {f"state_{k}": v.numpy() for k, v in r["state"].items()}
    return out | {f"history_{k}": np.asarray(v, float) for k, v in r["history"].items()}


def ioi(device):
    from lib.parts.memorisation import ioi as mi

    tiny = dict(n_tokens=6, d=8, T=10, batch=8, alpha=0.5, steps=3, lr=0.03, momentum=0.9, weight_decay=1e-4,
                adam_lr=1e-3, n_test=16, laser_rank=2)
    out = {}
    for opt in ("sgd", "adam"):
        r = mi.ioi_experiment(tiny, 2, opt, seed=0, **_kw(device))
        out |= {f"{opt}_{k}": np.asarray(v, float) for k, v in r["history"].items()}
        out |= {f"{opt}_final_{v}_{k}": np.asarray(x) for v, d in r["final"].items() for k, x in d.items()}
    split = dict(n_chars=8, d=8, T=12, batch=8, alpha=0.5, steps=5, momentum=0.9, weight_decay=1e-4, n_test=32)
    b = mi.bigram_split_loss(split, 4, 8, lr=0.1, seed=0, **_kw(device))
    return out | {"bigram_loss": np.asarray(b["bigram_loss"]), "entropy": np.asarray(b["entropy"])}


def template_lm(device):
    from lib.parts.memorisation import language_models as lm

    r = lm.run_template_lm(6, 4, 16, 2, 3e-3, 0, [0, 6], [1, 16], **_kw(device))
    out = {f"history_{k}": np.asarray(v, float) for k, v in r["history"].items() if k != "diverged_step"}
    return out | {"sweep": np.asarray(r["sweep"]["probe"], float)}


def vit_images(device):
    from lib.parts.generalisation import vit_images as vi

    arch = dict(width=8, heads=2, blocks=1)
    a = vi.accuracy_map([0, 9], [20, 40], [0], arch=arch, steps=2, lr=1e-2, batch=8, n_test=30, **_kw(device))
    sp = vi.spurious_runs([0, 9], [0], n_test_per_class=10, pre_sizes=(40, 8), arch=arch, pre_steps=2, steps=2,
                          lr=1e-2, batch=8, **_kw(device))
    return {"acc": a["acc"], "spurious": sp["acc"]}


def in_context(device):
    from lib.parts.generalisation import in_context_learning as icl

    mu, nu = icl.icl_banks()
    tasks = icl.cyclic_tasks(6)
    cfg = dict(relevant=mu, irrelevant=nu, tasks=tasks, length=6, alpha=0.8, kappa=0.5)
    r = icl.train_icl([cfg, dict(cfg, alpha=0.6)], m=10, steps=8, batch=8, checkpoints=[0, 8], monitor=[cfg, cfg],
                      monitor_every=4, monitor_n=16, **_kw(device))
    out = {k: np.asarray(r[k], float) for k in ("loss", "monitor_hinge")}
    out |= {f"state_{k}": v.numpy() for k, v in r["states"][-1].items()}
    g = icl.train_icl_gpt(cfg, [cfg], d_model=8, n_layers=1, n_heads=2, batch=8, steps=4, n_test=16, **_kw(device))
    return out | {"gpt_error": g["error"], "gpt_loss": g["loss"]}


def chain_of_thought(device):
    from lib.parts.generalisation import chain_of_thought as cot
    from lib.parts.generalisation import cot_multilayer

    a = cot.train_cot(steps=10, batch=8, n_examples=5, checkpoints=(0, 5), **_kw(device))
    r = cot_multilayer.train_multilayer_cot(steps=3, batch=8, n_examples=3, n_test=5, d_model=16, checkpoints=(1,),
                                            **_kw(device))
    return {"Ws": a["Ws"], "loss": a["loss"], "masses": r["masses"], "ml_loss": r["loss"]}


def group_mlps(device):
    from lib.parts.generalisation import group_images as gim

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3, 20, 5)), (rng.random((3, 20)) < 0.5).astype(float)
    Xt, yt = rng.normal(size=(2, 10, 5)), (rng.random(10) < 0.5).astype(float)
    return {"acc": gim.train_group_mlps(X, y, Xt, yt, [0, 1, 2], width=8, steps=10, **_kw(device))}


def sampled_gcn(device):
    from lib.graphs import sampling
    from lib.parts.generalisation import gcn_sampling as gs

    problem = gs.two_group_problem((10, 110), (8, 2), seed=0)
    A_star = sampling.effective_adjacency(problem["A"], problem["groups"], (0.7, 0.3))
    Y = gs.sin_tanh_labels(A_star, problem["X"], problem["W_star"], problem["C_star"])
    masks = gs.label_masks(120, (80,), (0, 1))
    out = {}
    for sampler in ("group", "fastgcn", "none"):
        r = gs.train_sampled_gcn(problem, Y, masks, sampler=sampler, p_star=(0.7, 0.3), m=8, steps=10, lr=1e-2,
                                 seed=0, **_kw(device))
        out |= {f"{sampler}_{k}": np.asarray(r[k], float) for k in ("test_error", "train_error", "loss")}
    return out


def walk_counting(device):
    from lib.graphs import generators
    from lib.parts.graph_networks import walk_counting as wc

    G = generators.random_regular(3, 20, 0)
    mask = wc.split_nodes(20, "parity", 10, seed=0)
    out = {}
    for model, K in (("gin", None), ("gamlp-A", 4), ("gamlp-A1", 4)):
        r = wc.fit_counting_model(G, 2, model, mask=mask, width=8, lr=0.01, steps=10, K=K, **_kw(device))
        out |= {f"{model}_pred": r["pred"], f"{model}_loss": r["loss"]}
    return out


def sbm(device):
    from lib.parts.graph_networks.communities import run_sbm

    r = run_sbm(5.0, 1.0, n=40, K=4, n_train=6, n_test=3, sgnn_depth=2, chunk=6, **_kw(device))
    out = {f"overlap_{k}": np.asarray(v, float) for k, v in r["overlap"].items()}
    out.update({f"loss_{k}": np.asarray(v, float) for k, v in r["loss"].items()})
    return out


def induction(device):
    from lib.parts.induction_heads.trained_transformers import train_induction

    r = train_induction(dict(T=16, V=8, seg_min=3, seg_max=6, d_model=16, batch=8, steps=10, record_every=5,
                             eval_batch=16), **_kw(device))
    return {k: np.asarray(r[k], float) for k in ("loss", "eval_loss", "prev_score", "ind_score", "maps2")}


CASES = {
    "lib.train.train (module, SGD-momentum)": train_module,
    "lib.train.train (dict of tensors, Adam)": train_tensors,
    "lib.train.train_stacked (modules, AdamW)": train_stacked_modules,
    "lib.train.train_stacked (dict of tensors)": train_stacked_tensors,
    "concept_learning.diffusion.concept_diffusion_experiment": concept_diffusion,
    "concept_learning.diffusion.train_concept_classifier": concept_classifier,
    "concept_learning.linear_gd.sgd_mlp_batched, deep_models.deep_linear_sgd_run": sim_mlps,
    "generalisation.graph_transformers.train_gt": graph_transformer,
    "generalisation.shallow_vits.train_vit, sparsification_runs, sigma_map": vit,
    "memorisation.noisy_recall.recall_experiment, train_recall": noisy_recall,
    "memorisation.ioi.ioi_experiment, train_ioi, bigram_split_loss": ioi,
    "memorisation.language_models.run_template_lm, train_template_lm": template_lm,
    "generalisation.vit_images.accuracy_map, spurious_runs, train_vits": vit_images,
    "generalisation.in_context_learning.train_icl, train_icl_gpt": in_context,
    "generalisation.chain_of_thought.train_cot, cot_multilayer.train_multilayer_cot": chain_of_thought,
    "generalisation.group_images.train_group_mlps": group_mlps,
    "generalisation.gcn_sampling.train_sampled_gcn": sampled_gcn,
    "graph_networks.walk_counting.fit_counting_model": walk_counting,
    "graph_networks.communities.run_sbm": sbm,
    "induction_heads.trained_transformers.train_induction": induction,
}

#: (rtol, atol) of a CUDA result against the CPU one, per case (see the module docstring).
TOLERANCE = {name: (1e-3, 1e-4) for name in CASES}
TOLERANCE["graph_networks.communities.run_sbm"] = (0.0, 0.35)
TOLERANCE["generalisation.vit_images.accuracy_map, spurious_runs, train_vits"] = (0.0, 0.1)  # accuracies (argmax)
TOLERANCE["generalisation.in_context_learning.train_icl, train_icl_gpt"] = (1e-3, 0.07)  # 0-1 errors of 16 prompts
TOLERANCE["generalisation.group_images.train_group_mlps"] = (0.0, 0.1)  # accuracies on 10 test points
TOLERANCE["concept_learning.diffusion.concept_diffusion_experiment"] = (1e-2, 1e-3)  # sampled through 3 DDIM steps
