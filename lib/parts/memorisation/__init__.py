"""Part V: memorisation in transformer modules.

Reproduces chapter 4 and appendix C of L. Chen, *Simple Structures in Neural Networks* (PhD thesis, NYU, 2025),
bibtex key ``chen2025thesis`` (the material first appeared as Chen, Bruna & Bietti, "Distributional associations
vs in-context reasoning", 2025). The transformer itself lives in :mod:`lib.models.transformer`.

==============================================================  =====================================================
chapter                                                         modules
==============================================================  =====================================================
``notebooks/memorisation/01_noisy_recall.md``                   :mod:`~lib.parts.memorisation.noisy_recall`,
                                                                :mod:`~lib.parts.memorisation.recall_data`
``notebooks/memorisation/02_mechanism.md``                      :mod:`~lib.parts.memorisation.mechanism`
``notebooks/memorisation/03_language_models.md``                :mod:`~lib.parts.memorisation.language_models`,
                                                                :mod:`~lib.parts.memorisation.ioi`
(all chapters)                                                  :mod:`~lib.parts.memorisation.settings`
==============================================================  =====================================================
"""
