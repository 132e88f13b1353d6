"""Theory of Chen & Bruna, *Beyond the Edge of Stability via Two-step Gradient Updates* (Part I).

`scalar` holds the one-dimensional and two-dimensional results (Thm 1-4, Lemma 1-2, Eq. (4), (6)),
`matrix` the matrix-factorisation results (Thm 6, Obs 1-2, Eq. (8)-(9)), `networks` the 16-neuron
teacher-student and MLP experiments (App. B.3).
"""

from .matrix import *  # noqa: F401,F403
from .networks import *  # noqa: F401,F403
from .scalar import *  # noqa: F401,F403
