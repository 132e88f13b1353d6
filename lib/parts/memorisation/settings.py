"""Part V settings: what the thesis states (``PAPER_*``; ``None`` where it is silent) and the CPU stand-ins.

The book's quick/full sizes are picked in each chapter's first cell with ``lib.config.pick``. The thesis's own
sizes are named configurations here; the book never runs them on CPU.
"""

from __future__ import annotations

# --- Chapter 2 (mechanism): Sec 4.4.4.3, Fig 4.5, Thm 4.3 -------------------------------------------------------

#: Fig 4.5 as stated: n = 3, α = 0.03, d in {8, 12}, 20 runs, ranks 1-4; learning rate and steps not given.
PAPER_FIG45 = {"n": 3, "alpha": 0.03, "d": (8, 12), "runs": 20, "ranks": (1, 2, 3, 4), "lr": None, "steps": None}
#: Thm 4.3 as stated: N = 2 (three outputs), orthonormal embeddings, W(0) = 0, α in (0.2, 0.4).
PAPER_THM43 = {"n": 2, "alpha_range": (0.2, 0.4), "init": "zero"}
#: Our Fig 4.5 run (population GD, exact): the thesis's sizes with lr 1 and 5000 steps.
MECHANISM_FIG45 = {"n": 3, "alpha": 0.03, "d": (8, 12), "seeds": 20, "lr": 1.0, "steps": 5000}
