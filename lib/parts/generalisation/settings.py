"""Part VI settings: what the thesis states (``PAPER_*``; ``None`` where it is silent) and the CPU stand-ins.

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``. One section per
chapter of the thesis.
"""

from __future__ import annotations

# ---- Chapter 7: chain-of-thought with a one-layer attention-only transformer ----

#: Section 7.5 of the thesis: data, model and test defaults (None where the thesis is silent).
PAPER_COT = {
    "d_X": 30, "M": 20, "M_prime": 10, "K": 3, "alpha": 0.4, "noise": 0.2,
    "tau": 0.5, "rho": 0.8, "alpha_prime": 0.8,
    "l_tr": None, "lr": None, "batch": None, "steps": None, "init_std": None, "seeds": None,
    "fig75_tau_o": 0.4, "fig75_rho_o": 0.1,
    "fig77": {"layers": 3, "heads": 2, "K": 2},
}

#: Example 1 (Fig 7.1): the two step matrices, the correct step maps (0-based) and the thesis's numbers.
EXAMPLE_1 = {
    "A": [[[0.6, 0.4], [0.4, 0.6]], [[0.4, 0.6], [0.8, 0.2]]],
    "steps": [[0, 1], [1, 0]],
    "B": [[0.56, 0.44], [0.64, 0.36]],
    "tau": 0.36, "tau_o": 0.56, "condition": False,
}

#: The book's defaults where the thesis is silent (online SGD on fresh permutation tasks).
COT_TRAINING = {"l_tr": 20, "batch": 128, "lr": 1.0, "init_std": 0.01}
# ------------------------------------------------------------------------------------------------- chapter 5 (GCNs)
#: Section 5.4 as stated: graph, teacher (5.20), optimiser and sampler. ``None`` where the thesis is silent.
PAPER_GCN = {
    "N": 2000,
    "d": 10,
    "p": 10,
    "K": 2,
    "feature_law": "N(0,1)",
    "loss": "l2 regression",
    "lr": 1e-3,
    "batch": 5,
    "dropout": 0.4,
    "iterations": "4|Omega|",
    "optimizer": None,
    "keep": 0.9,
    "test_metric": None,
    "seeds": None,
    "graph_generator": None,
}
#: Figs 5.1 and 5.2: unbalanced graph, sampler p* = (0.7, 0.3), teacher on A* = A P*. Degrees not given.
PAPER_GCN_FIG51 = {"sizes": (100, 1900), "p_star": (0.7, 0.3), "m": 500, "degrees": None, "omegas": None}
PAPER_GCN_FIG52 = {"sizes": (100, 1900), "p_star": (0.7, 0.3), "omega": 1500, "degrees": None, "widths": None}
#: Figs 5.3 (unbalanced) and 5.4 (balanced): three teachers A P-hat; Dataset 2 is not given.
PAPER_GCN_FIG53 = {
    "sizes": (100, 1900),
    "degrees": (10, 1),
    "p_star": (0.9, 0.1),
    "datasets": ((0.9, 0.1), None, (0.5, 0.5)),
    "fastgcn_t": None,
}
PAPER_GCN_FIG54 = {**PAPER_GCN_FIG53, "sizes": (1000, 1000)}

#: The book's defaults where the thesis is silent: configuration-model graphs with these degree pairs, Dataset 2
#: = (0.1, 0.9), relative test MSE, full-batch Adam, FastGCN with t = 0.9 N draws and q(u) proportional to the
#: squared norm of column u of A.
GCN_DEFAULTS = {"degree_pairs": ((8, 2), (20, 2), (40, 2)), "dataset2": (0.1, 0.9), "seeds": (0, 1, 2)}
#: CPU stand-in (quick mode): N = 600 with the thesis's group ratios, m = 32, 300 full-batch Adam steps.
GCN_CPU = {"N": 600, "m": 32, "steps": 300, "lr": 1e-2, "omegas": (100, 250, 450), "widths": (8, 16, 32, 64)}
#: The thesis's own scale (needs a GPU or a long CPU run): N = 2000, m = 500, the number of labelled nodes up to 1500.
GCN_PAPER_SCALE = {
    "N": 2000,
    "m": 500,
    "steps": 2000,
    "lr": 1e-3,
    "omegas": (200, 500, 1000, 1500),
    "widths": (50, 100, 200, 500),
}
#: Algorithm 2 as run by the chapter: Section 5.4's step size, batch and iteration count (TT_w = 4|Omega|);
#: T_w = 1 (the thesis gives only the product; one step per weight-decay round comes closest to Lemma D.2.14's
#: T = Theta(log(log m / eps0) / eta) rounds); Table 5.1 with eps0 = 1/100 (its largest) and C0 = p1^2 p2 K^2 =
#: 10^2 * 10 * 2^2 (the displayed factors of its O-tilde, the other constants set to 1).
GCN_ALGORITHM2 = {"lr": 1e-3, "batch": 5, "iterations_per_label": 4, "inner": 1, "eps0": 0.01, "c0": 4000.0}
# ---------------------------------------------------------------- chapter 3 (thesis ch. 4): group imbalance

#: Sec. 4.5.1 of the thesis: the common synthetic setting (W* entries N(0, 1); local random start of radius 0.1).
PAPER_GMM = {
    "L": 2,
    "d": 5,
    "K": 3,
    "init_radius": 0.1,
    "W_star": "N(0, 1) entries",
    "inits_M": 20,
    "draws": 20,
    "success_spread": 1e-3,
    "step_size": None,
    "steps": None,
    "test_size": None,
}
#: Fig C.1 of the thesis: the tensor initialisation's setting (Σ not stated).
PAPER_GMM_TENSOR_INIT = {
    "n": 200_000,
    "d": 50,
    "K": 2,
    "lambdas": (0.5, 0.5),
    "mu1": -0.3,
    "mu2": 0.0,
    "W_star": "U[-0.1, 0.1] entries",
    "covariance": None,
    "relative_error": 0.65,
}
#: The book's defaults for chapter 3: the thesis's d and K, and the step-size constant c of the authors' code
#: (eta0 = c / sum_l lambda_l (max-norm of mu_l + spectral norm of Sigma_l^1/2)^2), with c = 4 (c = 40 made the
#: spread grow).
GMM_DEFAULTS = {"d": 5, "K": 3, "c_step": 4.0}
# ---- Chapter 1 (thesis ch. 2): shallow vision transformers ----

PAPER_VIT = {
    "M": 5,  # orthonormal patterns
    "d": 10,  # token dimension
    "L": 100,  # |S^n| after sparsification in Fig 2.1(a) (50 in Fig 2.1(b))
    "c0": 0.01,  # token noise (N = 2 already suffices on our trainer)
    "m": 1000,  # neurons of W_O (Sec. 2.5)
    "W_O_std": 0.01,
    "lr": None,  # SGD step: not stated
    "batch": None,
    "sigma": 0.1,  # Fig 2.1(a)
    "delta": 0.2,  # Fig 2.1(a)
    "S": 100,  # |S| in Fig 2.1(a)
    "trials": 20,
    "success_hinge": 1e-3,
}

VIT = {
    "M": 5, "d": 10, "L": 30, "c0": 0.3, "m": 100, "lr": 0.5, "batch": 16, "steps": 300,
    "sigma": 0.1, "delta": 0.2, "kappa": 1.0, "n_test": 500, "success_hinge": 1e-3,
}
#: ``VIT`` with the thesis's token noise c0 = 0.01 (Sec. 2.4.1): every token then lies within about 0.07 of its
#: pattern, inside Thm 1's tau < kappa/4 and tau <= min(sigma, delta); the chapter's Figs 2.1-2.4 run on it.
VIT_THESIS_NOISE = {**VIT, "c0": PAPER_VIT["c0"]}

#: Sec. 2.4.2 (Fig 2.6) as stated: CIFAR-10 images resized into a random 26x26 region of a 32x32 ImageNet "Plants"
#: crop, a 5-block 4-head ViT pre-trained on CIFAR-100. ``None`` where the thesis is silent.
PAPER_VIT_IMAGES = {
    "alpha_star": 26**2 / 32**2, "classes_ab": 10, "n_train": 50_000, "n_test": 10_000, "blocks": 5, "heads": 4,
    "success_accuracy": 0.775, "trials_b": 10, "classes_c": ("bird", "airplane"), "photo_share_c": (0.9, 0.1),
    "n_train_c": 10_000, "n_test_c": 2_000, "pre_c": ("CIFAR-100", "CIFAR-10, 8 classes x 500"),
    "patch": None, "width": None, "optimizer": None, "lr": None, "steps": None, "Ns": None,
}
#: The book's CPU stand-in of Fig 2.6 (``vit_images``): digits 3 vs 5 for (a, b) with success at 90 % test
#: accuracy, digits 3 vs 8 for (c) with the thesis's 90/10 photo split, a one-block two-head ViT of width 16.
VIT_IMAGES = {
    "arch": {"width": 16, "heads": 2, "blocks": 1}, "lr": 3e-3, "batch": 32, "classes_ab": (3, 5), "n_test_ab": 100,
    "success_accuracy": 0.9, "classes_c": (3, 8), "n_test_c": 50, "photo_share_c": (0.9, 0.1),
    "pre_sizes": (1000, 80),
}
#: Quick and full sizes of the stand-in (removed background tokens out of 9, training sizes, seeds, Adam steps).
VIT_IMAGES_QUICK = {"removals": (0, 9), "Ns": (40, 160), "seeds": (0, 1, 2), "steps": 200, "pre_steps": 200,
                    "steps_c": 150}
VIT_IMAGES_FULL = {"removals": (0, 3, 6, 9), "Ns": (40, 80, 160, 250), "seeds": (0, 1, 2), "steps": 300,
                   "pre_steps": 300, "steps_c": 200}

# ---- Chapter 5 (thesis ch. 6): in-context learning with a nonlinear transformer, and pruning ----

#: Section 6.5 of the thesis (None where it is silent: width, step size, batch, iterations, delta, seeds).
PAPER_ICL = {
    "d_X": 30, "d_Y": 30, "beta": 3.0, "M1": 6, "M2": 24, "K": 0.5, "K_ood": 5.0, "alpha": 0.8, "l_tr": 20,
    "U": 1, "U_gpt": 4, "m_a": 60, "m_b": 60, "fig62_ab": (0.64, 0.64), "ab_norm2": 0.82, "fig65_alpha": 0.6,
    "m": None, "lr": None, "batch": None, "steps": None, "delta": None, "gpt_width": None,
}
#: The book's choices where the thesis is silent (one-layer model and the GPT-2 stand-in of Fig 6.3).
ICL_TRAINING = {"m": 200, "delta": 0.2, "lr": 1.0, "batch": 64, "steps": 1500, "success_hinge": 0.02}
ICL_GPT = {"d_model": 64, "n_layers": 3, "n_heads": 2, "lr": 1e-3, "batch": 64, "steps": 3000}

# ---- Chapter 2 (thesis ch. 3): graph transformers ----

#: Section 3.5.1 of the thesis (None where it is silent: batch, iterations, Z, T_0).
PAPER_GT = {
    "n": 1000, "M": 10, "d": 20, "degree": 120, "c0": 0.01, "K": 60, "m": 400, "lr": 0.01, "delta": 0.2,
    "sigma": 0.1, "xi": 0.01, "gamma_d": 0.4, "eps_S_fig33a": 0.05, "eps_S_gcn": 0.2, "L_fig34": 400,
    "L_fig35": 400, "gamma_d_fig35": 0.2, "trials": 20, "success_hinge": 1e-3,
    "batch": None, "steps": None, "Z": None, "T0": None,
}
#: The book's choices where the thesis is silent (Z = 3: distances 0, 1 and >= 2; eta 0.1 instead of 0.01).
GT = {
    "n": 1000, "M": 10, "d": 20, "degree": 120, "c0": 0.01, "K": 60, "m": 400, "lr": 0.1, "delta": 0.2,
    "sigma": 0.1, "xi": 0.01, "kappa": 1.0, "Z": 3, "batch": 32, "steps": 400, "n_test": 200,
}

# ------------------------------------------------------------------------------------------------- chapter 4 (images)
#: Figs 4.1 and 4.8 (Sec. 4.5.2) as stated: CelebA, label "blonde hair", ResNet-9. ``None`` where the thesis is silent.
PAPER_CELEBA = {
    "label": "blonde hair",
    "model": "ResNet-9",
    "n_major": 4000,
    "n_minor": 1000,
    "n_aug": 300,
    "n_test": (500, 500),
    "n_total_fig48": 5000,
    "cov_norm": {"male": 5.1833, "female": 4.9716},
    "cov_space": "feature space (unspecified)",
    "deltas2": None,
    "fractions": None,
    "optimizer": None,
    "seeds": None,
}
#: The digits stand-in of lib.parts.generalisation.group_images; the thesis's 4000 + 1000 (+ 300 noisy copies)
#: scaled to 800 + 200 (+ 60); group 1 = digits turned by 90 degrees and inverted at contrast 0.6.
DIGIT_GROUPS = {
    "n_major": 800,
    "n_minor": 200,
    "n_aug": 60,
    "n_test": 500,
    "n_total": 600,
    "contrast": 0.6,
    "width": 32,
    "steps": 200,
    "lr": 0.01,
}
