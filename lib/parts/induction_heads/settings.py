"""Part II settings: the paper's configurations (``PAPER_*``, ``None`` where silent) and the named
configurations of the trained stand-in (``STANDIN_*``; ``ELHAGE_FIG1`` for a GPU).
"""

from __future__ import annotations

#: Settings of the hand-built checks (the paper gives no numerical setting for Sec. 4; these are ours).
PAPER_THM41 = {"d": 4, "W_star": "N(0,1) entries", "tokens": "uniform [-1,1]^d", "p": (4, 6, 8, 10),
               "L": (20, 400), "n_sequences": 200}


#: Fig. 2 of the paper: the only numerical figure (closed-form Stage-II flow; the horizon is ours).
PAPER_FIG2 = dict(alpha_star=1.0, w_star=0.49, sigma_init=0.01, L=1000, t_max=2e5)


#: The time-scale sweeps of Thm 5.5 (one factor at a time around Fig. 2; the grid of chapter 2).
PAPER_SWEEPS = dict(
    L=[250, 500, 1000, 2000, 4000],
    sigma_init=[1e-1, 1e-2, 1e-3, 1e-4, 1e-6],
    alpha_star=[0.5, 1.0, 2.0, 4.0, 8.0],
    w_star=[0.2, 0.3, 0.4, 0.49],
)


#: The model behind the paper's Fig 1 (a picture taken from Elhage et al., 2021): a pretrained two-layer
#: attention-only transformer on natural text. The caption says eight heads per layer, the introduction twelve.
#: Not runnable here (no pretrained weights, no text corpus); kept as the reference setting.
ELHAGE_FIG1 = dict(n_layers=2, n_heads=8, ffn=False, data="natural-language text", training="pretrained LM")


#: Our stand-in (quick mode): 2 layers x 1 head, no FFN, strictly causal ALiBi attention with learnable slopes
#: (the RPE of Eq. 3), sequences of length 32 over 24 tokens, prefixes of 6-16 distinct tokens.
STANDIN_QUICK = dict(T=32, V=24, seg_min=6, seg_max=16, d_model=32, n_heads=1, init_std=0.1, lr=2e-3, batch=32,
                     steps=700, record_every=25, eval_batch=256)


#: Full mode: same model and data, longer training.
STANDIN_FULL = dict(STANDIN_QUICK, steps=1200)


#: Seed of the fixed held-out batch of
#: :func:`~lib.parts.induction_heads.trained_transformers.train_induction`.
EVAL_SEED = 10_000
