"""Part VI: how advanced networks generalise.

Reproduces chapters 2-7 and appendices A-F of H. Li, *Optimization and Generalization Analysis of Advanced Neural
Networks* (PhD thesis, RPI, 2024), bibtex key ``li2024thesis``: shallow vision transformers, graph transformers,
group imbalance, GCNs with topology sampling, in-context learning and chain-of-thought.

==============================================================  =====================================================
chapter                                                         modules
==============================================================  =====================================================
``notebooks/generalisation/01_shallow_vits.md``                 :mod:`~lib.parts.generalisation.shallow_vits`
                                                                :mod:`~lib.parts.generalisation.vit_images`
``notebooks/generalisation/02_graph_transformers.md``           :mod:`~lib.parts.generalisation.graph_transformers`
``notebooks/generalisation/03_group_imbalance.md``              :mod:`~lib.parts.generalisation.group_imbalance`
                                                                :mod:`~lib.parts.generalisation.group_images`
``notebooks/generalisation/04_gcn_sampling.md``                 :mod:`~lib.parts.generalisation.gcn_sampling`
``notebooks/generalisation/05_in_context_learning.md``          :mod:`~lib.parts.generalisation.in_context_learning`
``notebooks/generalisation/06_chain_of_thought.md``             :mod:`~lib.parts.generalisation.chain_of_thought`
                                                                :mod:`~lib.parts.generalisation.cot_multilayer`
                                                                :mod:`~lib.parts.generalisation.cot_prompt_length`
(all chapters)                                                  :mod:`~lib.parts.generalisation.settings`
==============================================================  =====================================================
"""
