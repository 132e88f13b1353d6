"""Graphs: the shared layer for the parts on graph neural networks.

Everything here is generic and exact where a claim needs exactness: graphs are networkx graphs with nodes
``0..n-1``, node features are integer arrays of shape ``(n, f)``, and comparisons of colours or features use
Python or int64 integers (with an overflow check), never hashes or floats.

* :mod:`lib.graphs.generators`: seeded networkx wrappers and named graphs (the 14-node pair of Chen's thesis,
  Fig 2.1; :math:`C_6` and :math:`K_{3,3}`; the hexagon and two triangles; the graph atlas) and the seeded
  two-block Bernoulli SBM with block labels;
* :mod:`lib.graphs.wl`: exact 1-WL colour refinement with one palette shared across graphs, and rooted
  aggregation (computation) trees;
* :mod:`lib.graphs.operators`: :math:`A`, :math:`D^{-\\alpha}AD^{-\\beta}`, :math:`\\tilde A_{(\\epsilon)}`,
  :math:`\\min(A^2,1)` and the feature stack ``propagate(M, X, K)`` = :math:`[X, MX, \\dots, M^KX]`;
* :mod:`lib.graphs.walks`: attributed walk counts (walks whose nodes carry prescribed features);
* :mod:`lib.graphs.sampling`: degree-group random graphs, the sparse normalised adjacency
  :math:`D^{-1/2}(\\mathrm{adj}+I)D^{-1/2}`, effective adjacency matrices and the topology samplers of Li's
  thesis, chapter 5 (group-wise node sampling, FastGCN);
* :mod:`lib.graphs.equivalence`: the number of node classes (and of graph classes) that depth-:math:`K` GNNs
  (1-WL) and GA-MLPs induce.
"""
