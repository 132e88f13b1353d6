"""Part III settings: the paper's configurations (``PAPER_*``, ``None`` where silent) and the named
CPU configurations of the diffusion experiment (``CPU_FIG6_*``; ``PAPER_SCALE_FIG6`` for a GPU).
"""

from __future__ import annotations

#: The chapter's settings (8x8 "easy" images; ``PAPER_FIG6`` below is the paper's own): colour signals at the ends
#: of the paper's range (0.2-0.7) and three seeds in both modes; full mode adds two intermediate signals and trains
#: twice as long. The chapter trains the signals in two processes (``lib.sweep``, one thread each).
CPU_FIG6_QUICK = dict(deltas=(0.2, 0.7), seeds=(0, 1, 2), image_size=8, variant="easy", n_per_class=2048,
                      channels=(16, 32), steps=1500, batch_size=64, lr=1e-3, weight_decay=0.01,
                      n_checkpoints=20, first_checkpoint=10, samples=32, sample_steps=20, classifier_steps=600)


CPU_FIG6_FULL = dict(CPU_FIG6_QUICK, deltas=(0.2, 0.35, 0.5, 0.7), steps=3000, n_checkpoints=30, samples=48)


#: Training details of Park et al.'s released code (github.com/cfpark00/concept-learning, the code behind the
#: paper's App. G) that the chapter's design leaves out, as options of ``concept_diffusion_experiment``: images on
#: [0, 1] rather than [-1, 1]; the last convolution of every residual block and the output convolution
#: initialised at zero, with an output that adds the input back (eps_hat = z_t at initialisation); a fresh
#: starting noise at every checkpoint instead of one fixed noise; dropout 0.1 in every residual block; the noise
#: schedule ``gamma(t) = b + |w| t`` learned with the VDM bound in bits per dimension (whose reconstruction term drives
#: b down), with every model's gradient norm clipped to 0.01 (the code's default).
AUTHORS_CODE_VARIANTS = {
    "images on [0, 1]": dict(data_range="unit"),
    "zero-initialised blocks, residual output": dict(zero_init=True, residual_out=True),
    "fresh sampling noise at every checkpoint": dict(fresh_noise=True),
    "dropout 0.1 in every block": dict(dropout=0.1),
    "a learned noise schedule and a gradient clip of 0.01": dict(learned_schedule=True, clip_norm=0.01),
}

#: The authors' code records its first checkpoint at step 500 of 20,000 (a square-root grid to the end).
AUTHORS_FIRST_CHECKPOINT_FRACTION = 500 / 20_000


#: The closest configuration to the paper's App. G that this code runs (a GPU job: 32x32 faithful data, three
#: U-Net levels, 20k AdamW steps of batch 128, six colour signals in the paper's range, five seeds, 100 DDIM steps,
#: 60 checkpoints). Still one residual block per level, no attention, a fixed schedule (see PAPER_FIG6).
PAPER_SCALE_FIG6 = dict(CPU_FIG6_FULL, deltas=(0.2, 0.3, 0.4, 0.5, 0.6, 0.7), seeds=(0, 1, 2, 3, 4), image_size=32,
                        variant="faithful", channels=(64, 128, 256), steps=20_000, batch_size=128, n_checkpoints=60,
                        first_checkpoint=100, samples=32, sample_steps=100, classifier_steps=3000)


#: The paper's own setting (Yang et al. 2025, App. G; details missing there are taken from Park et al. 2024's
#: public configuration). Too large for the book's CPU budget; the chapter runs the 8x8 "easy" variant.
#: Radii, batch and sampling steps follow the paper's text; the authors' released code differs: radii 0.65 / 0.25
#: with a jitter of +-0.15, batch 64 in every image configuration, 50 steps of a stochastic ancestral sampler.
PAPER_FIG6 = dict(
    image_size=32, variant="faithful", radii=(0.7, 0.3), color_signal_range=(0.2, 0.7), n_per_class=2048,
    unet_channels=(64, 128, 256), res_blocks_per_level=2, attention="bottleneck", schedule="learned linear",
    gamma_min=-5.0, gamma_max=10.0, sampling_steps=100, optimizer="AdamW", lr=1e-3, weight_decay=0.01,
    batch_size=128, steps=20_000, samples_per_checkpoint=32, seeds=5,
)


# : The paper's common SIM setting (App. F.1): 5000 samples per cluster, d = 64, SGD with batch 128 and
# learning
#: rate 0.1 for 40 epochs, hidden width 64, a random rotation of all points.
PAPER_SIM = dict(d=64, n=5000, batch_size=128, lr=0.1, epochs=40, width=64, rotate=True)


#: Fig. 5: s = 2, "all entries of W initialised positive"; d, d', mu, eta and init scale are not given (our
#: guesses).
PAPER_FIG5 = dict(
    mu=(1.0, 2.0), sigma=(0.05, 0.05), d=2, d_prime=2, tau=0.05, positive=True, lr=0.01, steps=6000
)


#: Fig. 8 (triple descent) and Fig. 9 (quadruple descent): mu, sigma and d = s from the captions; eta, tau, d'
#: guessed.
PAPER_FIG8 = dict(
    mu=(1.0, 1.5, 2.2), sigma=(0.05, 0.05, 0.05), d=3, d_prime=3, tau=0.05, lr=0.01, steps=20000
)


PAPER_FIG9 = dict(
    mu=(1.0, 1.5, 2.2, 2.7), sigma=(0.05, 0.05, 0.05, 0.5), d=4, d_prime=4, tau=0.05, lr=0.01, steps=20000
)


#: Fig. 10 (failure mode): mu, sigma, d = s from the caption.
PAPER_FIG10 = dict(
    mu=(0.7, 1.7, 3.0), sigma=(0.05, 0.05, 0.05), d=3, d_prime=3, tau=0.05, lr=0.01, steps=20000
)


#: Fig. 2(c) / 3: 4-layer linear MLPs, width 64, d = 64 (high dim) and d = 2 (low dim); SGD lr 0.1, batch 128,
#: 40 epochs of 5000 samples per cluster (App. F.1); mu, sigma not given (our guess below).
PAPER_FIG2C = dict(
    mu=(1.0, 2.0),
    sigma=(0.05, 0.05),
    dims=(64, 2),
    depth=4,
    width=64,
    lr=0.1,
    batch=128,
    epochs=40,
    n_per_cluster=5000,
)


#: Fig. 7: 2-layer ReLU MLP, mu = (1, 2, 3, 4), sigma = 1/2 each; d = 64, width 64, SGD lr 0.1, batch 128
#: (F.1).
PAPER_FIG7 = dict(
    mu=(1.0, 2.0, 3.0, 4.0),
    sigma=(0.5, 0.5, 0.5, 0.5),
    d=64,
    width=64,
    lr=0.1,
    batch=128,
    n_per_cluster=5000,
    epochs=(1, 3, 5),
)


#: Fig. 13 / 14: 3-layer linear, 3 hidden units, d = 3, s = 2, sigma = 0.05, not rotated; mu = (1, 2) and (2,
#: 4).
PAPER_FIG13 = dict(
    mus=((1.0, 2.0), (2.0, 4.0)),
    sigma=(0.05, 0.05),
    d=3,
    depth=3,
    width=3,
    lr=0.1,
    batch=128,
    epochs=40,
    n_per_cluster=5000,
)
