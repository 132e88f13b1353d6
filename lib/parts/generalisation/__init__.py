"""Part VI: how advanced networks generalise.

Reproduces chapters 2-7 and appendices A-F of H. Li, *Optimization and Generalization Analysis of Advanced Neural
Networks* (PhD thesis, RPI, 2024), bibtex key ``li2024thesis``: shallow vision transformers, graph transformers,
group imbalance, GCNs with topology sampling, in-context learning and chain-of-thought.

==============================================================  =====================================================
chapter                                                         modules
==============================================================  =====================================================
(all chapters)                                                  :mod:`~lib.parts.generalisation.settings`
01 Shallow vision transformers                                  :mod:`~lib.parts.generalisation.shallow_vits`
==============================================================  =====================================================
"""
