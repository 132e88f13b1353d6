"""Part I: gradient descent beyond the edge of stability.

Reproduces Chen & Bruna, *Beyond the Edge of Stability via Two-step Gradient Updates* (ICML 2023), bibtex key
``chen2023eos``; the same material is chapter 3 of L. Chen's thesis (``chen2025thesis``).

=====================================================  ==========================================================
chapter                                                modules
=====================================================  ==========================================================
``notebooks/edge_of_stability/01_one_dimensional.md``  :mod:`~lib.parts.edge_of_stability.one_dimensional`
``notebooks/edge_of_stability/02_balancing.md``        :mod:`~lib.parts.edge_of_stability.balancing`
``03_matrix_factorisation.md``                         :mod:`~lib.parts.edge_of_stability.matrix_factorisation`
``04_beyond_low_dimension.md``                         :mod:`~lib.parts.edge_of_stability.beyond_low_dimension`
(all chapters)                                         :mod:`~lib.parts.edge_of_stability.settings`
=====================================================  ==========================================================
"""
