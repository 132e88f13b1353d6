"""Theory of Wang, Yu, E & Wu, *How Transformers Implement Induction Heads*.

`approximation` holds the constructions of Sec. 4 (Thms 4.1, 4.3, 4.4), `dynamics` the optimisation analysis
of Sec. 5 (the mixed target, the reparameterised model, the four-phase gradient flow).
"""

from .approximation import *  # noqa: F401,F403
from .dynamics import *  # noqa: F401,F403
