"""Part V: memorisation in transformer modules.

Reproduces chapter 4 and appendix C of L. Chen, *Simple Structures in Neural Networks* (PhD thesis, NYU, 2025),
bibtex key ``chen2025thesis`` (the material first appeared as Chen, Bruna & Bietti, "Distributional associations
vs in-context reasoning", 2025). The transformer itself lives in :mod:`lib.models.transformer`.

==============================================================  =====================================================
chapter                                                         modules
==============================================================  =====================================================
2. Why: one step, attention's avoidance, a rank-one noise       :mod:`~lib.parts.memorisation.mechanism`
(all chapters)                                                  :mod:`~lib.parts.memorisation.settings`
==============================================================  =====================================================
"""
