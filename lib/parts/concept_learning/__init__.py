"""Part III: concept learning and compositional generalisation.

Reproduces Yang, Park, Wang, Hu, Nanda, Sanborn, Tanaka & Kim, *Dynamics of Concept Learning and Compositional
Generalization* (ICLR 2025), bibtex key ``yang2025sim``.

=====================================================  ==========================================================
chapter                                                modules
=====================================================  ==========================================================
``notebooks/concept_learning/01_sim_one_layer.md``     :mod:`~lib.parts.concept_learning.sim_one_layer`,
                                                       :mod:`~lib.parts.concept_learning.linear_gd`
``notebooks/concept_learning/02_deep_models.md``       :mod:`~lib.parts.concept_learning.deep_models`,
                                                       :mod:`~lib.parts.concept_learning.jacobian_lemmas`,
                                                       :mod:`~lib.parts.concept_learning.linear_gd`,
                                                       :mod:`~lib.parts.concept_learning.plots`
``notebooks/concept_learning/03_diffusion.md``         :mod:`~lib.parts.concept_learning.diffusion`,
                                                       :mod:`~lib.parts.concept_learning.diffusion_variants`,
                                                       :mod:`~lib.parts.concept_learning.shapes`
(all chapters)                                         :mod:`~lib.parts.concept_learning.sim_data`,
                                                       :mod:`~lib.parts.concept_learning.settings`
=====================================================  ==========================================================
"""
