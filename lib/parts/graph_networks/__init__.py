"""Part IV: graph neural networks and graph-augmented MLPs.

Reproduces chapter 2 and appendix A of L. Chen, *Simple Structures in Neural Networks* (PhD thesis, NYU, 2025),
bibtex key ``chen2025thesis`` (the material first appeared as Chen, Chen & Bruna, ICLR 2021). The generic graph
code (generators, exact 1-WL, operators, equivalence classes) lives in :mod:`lib.graphs`.

==============================================================  =====================================================
chapter                                                         modules
==============================================================  =====================================================
``notebooks/graph_networks/01_telling_graphs_apart.md``         :mod:`~lib.parts.graph_networks.telling_graphs_apart`
``notebooks/graph_networks/02_rooted_graphs.md``                :mod:`~lib.parts.graph_networks.rooted_graphs`,
                                                                :mod:`~lib.parts.graph_networks.walk_counting`
``notebooks/graph_networks/03_communities.md``                  :mod:`~lib.parts.graph_networks.communities`
(all chapters)                                                  :mod:`~lib.parts.graph_networks.settings`
==============================================================  =====================================================
"""
