"""Graph operators as scipy sparse matrices, and the GA-MLP feature stack :math:`[X, MX, \\dots, M^KX]`.

Notation of Chen's thesis (section 2.3 and appendix A.2): :math:`A` adjacency, :math:`D=\\mathrm{diag}(d_i)`
degrees, :math:`D^{-\\alpha}AD^{-\\beta}` the generalised normalised adjacency,
:math:`\\tilde A_{(\\epsilon)}=\\bar D_{(\\epsilon)}^{-1/2}(A+\\epsilon I)\\bar D_{(\\epsilon)}^{-1/2}`, the power-graph
adjacency :math:`\\min(A^2,1)` and the Bethe Hessian :math:`H(r)=(r^2-1)I-rA+D`. Graphs have nodes ``0..n-1``; a
node of degree 0 gets a zero row and column in every normalised operator (:math:`0^{-\\alpha}` is read as 0).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ..config import check_bool, check_int, check_positive, check_range

#: Largest magnitude an int64 stack may reach (a margin of 2 bits below 2**63).
INT64_SAFE = 2**61


def _n(G) -> int:
    if not isinstance(G, nx.Graph) or G.is_directed():
        raise ValueError(f"G must be an undirected networkx graph, got {type(G).__name__}")
    n = G.number_of_nodes()
    if set(G.nodes) != set(range(n)):
        raise ValueError("G must have nodes 0..n-1 (use nx.convert_node_labels_to_integers)")
    return n


def adjacency(G, dtype=np.int64) -> sp.csr_array:
    """:math:`A`, shape ``(n, n)``, rows and columns in node order ``0..n-1``."""
    n = _n(G)
    return sp.csr_array(nx.to_scipy_sparse_array(G, nodelist=range(n), dtype=dtype, format="csr"))


def degrees(G) -> np.ndarray:
    """Degrees :math:`d_i`, int64 array of shape ``(n,)``."""
    n = _n(G)
    return np.array([G.degree(i) for i in range(n)], dtype=np.int64)


def _inv_power(d: np.ndarray, p: float) -> np.ndarray:
    out = np.zeros(d.shape, dtype=np.float64)
    pos = d > 0
    out[pos] = d[pos].astype(np.float64) ** (-p)
    return out


def normalised_adjacency(G, alpha: float = 0.5, beta: float | None = None) -> sp.csr_array:
    """:math:`D^{-\\alpha}AD^{-\\beta}` (float64); ``beta=None`` means :math:`\\beta = 1-\\alpha`, the family of
    Prop 2.1. ``alpha=0.5`` is the symmetric normalisation, ``(1, 0)`` the random walk :math:`D^{-1}A`."""
    check_range("alpha", alpha, -10, 10)
    beta = 1.0 - alpha if beta is None else beta
    check_range("beta", beta, -10, 10)
    d = degrees(G)
    A = adjacency(G, np.float64)
    return sp.csr_array(sp.diags_array(_inv_power(d, alpha)) @ A @ sp.diags_array(_inv_power(d, beta)))


def augmented_adjacency(G, eps: float = 1.0) -> sp.csr_array:
    """:math:`\\tilde A_{(\\epsilon)}=\\bar D_{(\\epsilon)}^{-1/2}(A+\\epsilon I)\\bar D_{(\\epsilon)}^{-1/2}` with
    :math:`\\bar D_{(\\epsilon),ii}=d_i+\\epsilon` (thesis, appendix A.2; SGC uses :math:`\\epsilon=1`)."""
    check_positive("eps", eps)
    n = _n(G)
    Abar = adjacency(G, np.float64) + eps * sp.eye_array(n, format="csr")
    s = sp.diags_array((degrees(G) + eps) ** -0.5)
    return sp.csr_array(s @ Abar @ s)


def power_graph_adjacency(G, *, add_identity: bool = False) -> sp.csr_array:
    """The power-graph adjacency :math:`\\min(A^2, 1)` (int64), as written in the thesis's remark after Prop 2.2.

    Its diagonal is 1 at every non-isolated node (:math:`(A^2)_{ii}=d_i`). With ``add_identity=True`` it is
    :math:`\\min((A+I)^2, 1)`: 1 between nodes at distance at most 2."""
    check_bool("add_identity", add_identity)
    n = _n(G)
    A = adjacency(G)
    if add_identity:
        A = A + sp.eye_array(n, dtype=np.int64, format="csr")
    return sp.csr_array((A @ A).minimum(1))


def triangle_adjacency(G) -> sp.csr_array:
    """:math:`A\\odot A^2` (int64): entry :math:`ij` counts the triangles through the edge :math:`ij` (a
    triangle-based operator in the sense of SIGN, thesis appendix A.2)."""
    A = adjacency(G)
    return sp.csr_array(A.multiply(A @ A))


def bethe_hessian(G, r: float) -> sp.csr_array:
    """:math:`H(r)=(r^2-1)I-rA+D` (float64)."""
    check_range("r", r, -1e6, 1e6)
    n = _n(G)
    A = adjacency(G, np.float64)
    return sp.csr_array((r * r - 1) * sp.eye_array(n, format="csr") - r * A + sp.diags_array(degrees(G) * 1.0))


def shifted_bethe_hessian(G, r: float, kappa: float = 8.0) -> sp.csr_array:
    """:math:`\\tilde H=\\kappa I-H(r)` (float64), whose top eigenvectors are the informative ones of :math:`H`."""
    check_positive("kappa", kappa)
    n = _n(G)
    return sp.csr_array(kappa * sp.eye_array(n, format="csr") - bethe_hessian(G, r))


def propagate(M, X, K: int, *, renormalise: bool = False) -> np.ndarray:
    """The stack :math:`[X, MX, M^2X, \\dots, M^KX]` of GA-MLP features (Eq. 2.5 with
    :math:`\\omega_k(A)=M^k`), shape ``(K+1, n, f)``.

    Args:
        M: ``(n, n)`` operator: a scipy sparse matrix or a numpy array.
        X: ``(n, f)`` (or ``(n,)``) features.
        K: highest power (>= 0).
        renormalise: divide each :math:`M^kX` by the Euclidean norm of each of its columns (float only), so that
            high powers neither overflow nor vanish; the direction of every power is kept.

    Exactness: integer ``M`` and ``X`` are propagated in int64 after checking that
    :math:`\\max|X|\\cdot\\|M\\|_\\infty^K` stays below :data:`~lib.graphs.operators.INT64_SAFE`
    (``ValueError`` otherwise); pass
    ``X.astype(object)`` to propagate in exact Python integers (or fractions) instead.
    """
    if not hasattr(M, "shape") or len(M.shape) != 2:
        raise ValueError(f"M must be a 2-D matrix (dense or sparse), got {type(M).__name__}")
    check_int("K", K, minimum=0)
    check_bool("renormalise", renormalise)
    if isinstance(X, (str, bytes)) or X is None:
        raise ValueError(f"X must be an (n, f) array of node features, got {X!r}")
    X = np.asarray(X)
    if X.dtype.kind == "f" and not np.isfinite(X).all():
        raise ValueError("X must hold finite numbers only (found NaN or inf)")
    if X.ndim == 1:
        X = X[:, None]
    n = X.shape[0]
    if X.ndim != 2 or M.shape != (n, n):
        raise ValueError(f"M must have shape (n, n) and X shape (n, f) with the same n, got {M.shape} and {X.shape}")
    exact = X.dtype == object
    integer = np.issubdtype(X.dtype, np.integer) and np.issubdtype(M.dtype, np.integer)
    if renormalise and (exact or integer):
        raise ValueError("renormalise needs float features (exact integer stacks are not renormalised)")
    if exact:
        M = (M.toarray() if sp.issparse(M) else np.asarray(M)).astype(object)
    elif integer:
        rowsum = int(abs(M).sum(axis=1).max()) if n else 0
        bound = int(np.abs(X).max(initial=0)) * max(rowsum, 1) ** K
        if bound >= INT64_SAFE:
            raise ValueError(f"K={K}: int64 may overflow (bound {bound:.3e}); pass X.astype(object) for exact ints")
        X = X.astype(np.int64)
    else:
        X = X.astype(np.float64)
    out = [X]
    for _ in range(K):
        nxt = M @ out[-1]
        if renormalise:
            norm = np.linalg.norm(nxt, axis=0, keepdims=True)
            nxt = nxt / np.where(norm > 0, norm, 1.0)
        out.append(nxt)
    return np.stack(out)
