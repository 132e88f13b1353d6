"""Part II: how transformers implement induction heads.

Reproduces Wang, Yu, E & Wu, *How Transformers Implement Induction Heads: Approximation and Optimization
Analysis* (2024), bibtex key ``wang2024induction``.

=====================================================  ==========================================================
chapter                                                modules
=====================================================  ==========================================================
``notebooks/induction_heads/01_construction.md``       :mod:`~lib.parts.induction_heads.construction`
``notebooks/induction_heads/02_four_phases.md``        :mod:`~lib.parts.induction_heads.four_phases`,
                                                       :mod:`~lib.parts.induction_heads.convergence`
``03_trained_transformers.md``                         :mod:`~lib.parts.induction_heads.trained_transformers`,
                                                       :mod:`~lib.parts.induction_heads.sample_flows`
(all chapters)                                         :mod:`~lib.parts.induction_heads.settings`
=====================================================  ==========================================================
"""
