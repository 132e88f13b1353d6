"""Part I settings: the paper's configurations (``PAPER_*``; ``None`` where the paper is silent).

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The paper's settings (Appendix B). Initial points and step counts are not stated there; ``None`` marks
#: them.
PAPER_FIG4 = dict(lr=1.01, functions=("quartic, mu=1", "2 sin x"), x0=None, steps=None)


PAPER_FIG12 = dict(mu=1.0, lrs=(1.05, 1.235, 1.237), x0=None, steps=None)


PAPER_FIG7 = dict(mu=1.0, lrs=(1.05, 1.25), x0=None, y0=None, steps=None)


PAPER_FIG3 = dict(mu=1.0, lrs=(1.08, 0.95), x0=None, y0=None, steps=None)


PAPER_FIG5 = dict(d=2, m=1000, lr=2.2, K=1.1, w0=(0.0, 0.1), v0=0.1, w_teacher=(1.0, 0.0), steps=None)


@dataclass(frozen=True)
class MFConfig:
    """One MF experiment. ``None`` marks a value the paper does not give (our default is used instead)."""

    figure: str
    d: int | None
    steps: int | None
    init: str
    alpha: float | None = None
    eta_times_eos: float | None = None
    notes: str = ""
    ours: dict = field(default_factory=dict)


# : Fig 1: grid of (eta sigma_1^2, eta sigma_2^2), finite vs infinite. d, spectrum, init scale, steps, grid
# and alpha : of panel (b) are not given; ``ours`` holds the values this book uses.
PAPER_FIG1 = MFConfig(
    figure="Fig 1", d=None, steps=None, init="generic / quasi-symmetric / symmetric", alpha=None,
    notes="boundary compared with eta(s1^2+s2^2)=2 (a) and Eq. (9) (b, c)",
    ours=dict(d=4, spectrum_tail=(0.5, 0.25), init_scale=0.1, eps=1e-3, alpha=0.8, steps=3000, grid=(41, 40)),
)


#: Fig 2: sigma_max(Y), sigma_max(Z) over the last 10 iterates against eta sigma_1^2, generic init.
PAPER_FIG2 = MFConfig(
    figure="Fig 2", d=None, steps=None, init="generic", notes="last 10 iterates reported",
    ours=dict(d=4, ratio=0.2, init_scale=0.1, steps=6000, keep=64, n_eta=221),
)


#: Fig 6: C = X0 X0^T in R^{8x8}, eta = 1.02 x EoS threshold (= 1.02 / sigma_1^2), alpha = 0.8.
PAPER_FIG6 = MFConfig(
    figure="Fig 6", d=8, steps=None, init="symmetric and quasi-symmetric", alpha=0.8, eta_times_eos=1.02,
    notes="orbit of top singular values 'about 6.1 and 5.3'",
    ours=dict(x0="iid N(0,1) entries", eps=1e-3, steps=3000),
)


#: Fig 8 as stated in App. B.3.1 (epoch = one full-batch GD step, our reading; v_i = 1/k_i assumed).
PAPER_FIG8 = dict(d=16, m=10000, k_step=0.0625, noise=0.01, lrs=(0.5, 2.6), steps=100, decay_steps=20,
                  decay_to=0.5, flattest_ratio=1.21, eos_lr="around 2.5")


#: Figs 9-11 as stated in App. B.3.2 (MNIST 0/1, 2000 images, 79 pixels with std >= 110, width 16).
PAPER_FIG9_11 = dict(dataset="MNIST 0 vs 1", n=2000, std_min=110, in_dim=79, width=16, depths=(3, 4, 5),
                     lrs=(0.5, 0.4, 0.35), small_lr=0.1, loss="MSE", steps=None)
