"""Part V settings: what the thesis states (``PAPER_*``; ``None`` where it is silent) and the CPU stand-ins.

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``. The thesis's own
sizes are named configurations here; the book never runs them on CPU.
"""

from __future__ import annotations

# ----------------------------------------------------------------------------------------------------------------
# Chapter 1: noisy in-context recall (thesis Sec 4.4; the authors' code for what the text leaves open)

#: What the thesis (and, marked, its code) states for the two-layer experiments of Figs 4.3-4.12.
PAPER_RECALL = {
    "n_chars": 65,  # tiny Shakespeare characters
    "noise": "extra token N+1 (text); character id 2 in the code",
    "d": 256,
    "T": 256,
    "batch": 512,
    "steps": 2000,  # text; the code runs 5000
    "lr": 0.03,  # text: any lr in [0.001, 0.03]
    "momentum": 0.9,  # code
    "weight_decay": 1e-4,  # code
    "alpha": 0.5,
    "n_test": 512,  # code: fixed clean test sequences
    "rhos": (0.0, 0.1, 0.2, 1.0),  # code
    "finetune_steps": None,  # Figs 4.4 / 4.7 right: not given
    "triggers_fig_4_8": 5,
}

#: CPU stand-in, quick mode (a few tens of CPU seconds).
RECALL_QUICK = {
    "n_chars": 24,
    "d": 64,
    "T": 64,
    "batch": 32,
    "alpha": 0.5,
    "lr": 0.03,
    "momentum": 0.9,
    "weight_decay": 1e-4,
    "n_test": 256,
    "steps": 500,
    "finetune": (150, 150),
    "seeds": 1,
}
#: CPU stand-in, full mode: quick mode's model with the full test set, fine-tuning phases and three seeds.
RECALL_FULL = dict(RECALL_QUICK, n_test=512, finetune=(300, 300), seeds=3)
#: Full mode's larger alphabet (64 characters, batch 64, 1500 steps; one seed).
RECALL_FULL_WIDE = dict(RECALL_FULL, n_chars=64, batch=64, steps=1500, seeds=1)
#: The thesis's own size (about 1.3 TFLOP a step; a GPU configuration, never run by the book).
RECALL_PAPER = dict(RECALL_FULL, n_chars=65, d=256, T=256, batch=512, steps=2000)
# --- Chapter 2 (mechanism): Sec 4.4.4.3, Fig 4.5, Thm 4.3 -------------------------------------------------------

#: Fig 4.5 as stated: n = 3, α = 0.03, d in {8, 12}, 20 runs, ranks 1-4; learning rate and steps not given.
PAPER_FIG45 = {"n": 3, "alpha": 0.03, "d": (8, 12), "runs": 20, "ranks": (1, 2, 3, 4), "lr": None, "steps": None}
#: Thm 4.3 as stated: N = 2 (three outputs), orthonormal embeddings, W(0) = 0, α in (0.2, 0.4).
PAPER_THM43 = {"n": 2, "alpha_range": (0.2, 0.4), "init": "zero"}
#: Our Fig 4.5 run (population GD, exact): the thesis's sizes with lr 1 and 5000 steps.
MECHANISM_FIG45 = {"n": 3, "alpha": 0.03, "d": (8, 12), "seeds": 20, "lr": 1.0, "steps": 5000}


# --- Chapter 3: language models in miniature (Sec 4.5, App. C.1) -------------------------------------------

#: Table 4.1: Pythia-1B next-token probabilities on "Madrid is located in", full model and after LASER.
PAPER_TABLE_4_1 = {
    "tokens": ("the", "Spain", "a", "southern", "northern"),
    "full": (0.499, 0.079, 0.069, 0.023, 0.021),
    "laser": (0.027, 0.300, 0.002, 0.044, 0.046),
}
#: Fig 4.13: probability ratio of the correct answer over "the" at Pythia-1B step 14K, full -> LASER.
PAPER_FIG_4_13 = {"ioi_ratio": (2.3, 12.3), "fact_ratio": (0.16, 11.3), "step": 14000, "the_learned_step": 10}
#: Table 4.2: GSM8K few-shot accuracy (%), shots 1, 2, 4, 8.
PAPER_TABLE_4_2 = {
    "shots": (1, 2, 4, 8),
    "Phi-3": (56.0, 72.2, 78.2, 82.7),
    "Phi-3 + LASER": (66.1, 74.4, 77.0, 82.3),
    "Llama-3.1-8B": (44.7, 50.0, 57.6, 56.0),
    "Llama-3.1-8B + LASER": (46.1, 50.7, 55.9, 53.8),
    "Llama-3.1-8B-Instruct": (72.6, 74.7, 78.5, 79.7),
    "Llama-3.1-8B-Instruct + LASER": (73.6, 75.6, 77.7, 77.0),
}
#: App. C.1.2: LASER settings (model, task, layers, truncated layer (1-based), weight, rho).
PAPER_LASER_C12 = (
    ("Pythia-410M", "IOI", 24, 22, "MLP input", 0.02),
    ("Pythia-1B", "IOI", 16, 11, "MLP input", 0.008),
    ("Pythia-1B", "factual", 16, 16, "MLP input", 0.0125),
    ("Pythia-1.4B", "factual", 24, 24, "MLP input", 0.025),
    ("Pythia-2.8B", "factual", 32, 32, "MLP input", 0.04),
    ("Phi-3", "GSM8K", 32, 28, "MLP output", 0.02),
    ("Llama-3.1-8B(-Instruct)", "GSM8K", 32, 27, "MLP output", 0.02),
)
#: Template-LM stand-in (ours): 2-layer GPT-NeoX, d = 64, two heads, AdamW, batch 32 sentences.
LM_QUICK = {"steps": 600, "batch": 32, "d_model": 64, "n_layers": 2, "lr": 3e-3, "seeds": 1}
#: Full mode: three seeds, and the same training for longer.
LM_FULL = dict(LM_QUICK, steps=1000, seeds=3)


# --- Chapter 3: synthetic IOI with counting (App. C.8, Figs C.5, C.6) and Fig 4.14 ------------------------------

#: App. C.8 as stated: "most other settings" as Sec 4.4 (so d = T = 256, batch 512, lr 0.03); alpha, steps and
#: the Adam learning rate are not given.
PAPER_IOI = {
    "n_layers_sgd": (3, 4, 5, 6, 7),
    "n_layers_adam": (3, 4, 5),
    "laser_fraction": 0.01,  # of the last MLP's input matrix: rank 2 at d = 256
    "alpha": None,
    "steps": None,
    "adam_lr": None,
}
#: CPU stand-in (ours), full mode: L = 3, N = 8 tokens, d = 32, T = 16, batch 64, 1500 steps, three seeds. At d = 32
#: LASER's fraction 0.01 keeps rank 0 (the whole MLP input); the rank is the thesis's instead (2).
IOI_FULL = {
    "n_tokens": 8,
    "d": 32,
    "T": 16,
    "batch": 64,
    "alpha": 0.5,
    "steps": 1500,
    "lr": 0.03,
    "momentum": 0.9,
    "weight_decay": 1e-4,
    "adam_lr": 3e-3,
    "n_test": 512,
    "laser_rank": 2,
    "n_layers": 3,
    "seeds": 3,
}
#: Quick mode: one seed, 500 steps (a preview; the claims are decided in full mode).
IOI_QUICK = dict(IOI_FULL, steps=500, seeds=1)
#: Fig 4.14 stand-in (ours; the thesis gives no sizes): two layers, d = 32, budgets of 4 d^2 and 8 d^2 weights per
#: layer, MLP shares 1/4, 1/2, 3/4, 100 SGD steps, the best of three learning rates by the mean of three seeds.
SPLIT_FULL = {
    "n_chars": 24,
    "d": 32,
    "T": 32,
    "batch": 32,
    "alpha": 0.5,
    "steps": 100,
    "momentum": 0.9,
    "weight_decay": 1e-4,
    "n_test": 256,
    "budgets": (4, 8),  # in units of d^2 weights per layer
    "shares": (0.25, 0.5, 0.75),
    "lrs": (0.1, 0.3, 1.0),
    "seeds": 3,
}
#: Quick mode: one budget, one learning rate, one seed.
SPLIT_QUICK = dict(SPLIT_FULL, budgets=(4,), lrs=(0.3,), seeds=1)
