"""Approximation theory of Wang, Yu, E & Wu (2024), Sec. 4 and App. A: induction heads built by hand.

Conventions: sequences are batch-first tensors ``X`` of shape ``(B, L, d)`` (the paper's ``X in R^{d x L}``
transposed); positions are 1-indexed in the docstrings (as in the paper) and 0-indexed in the code.

* Targets: :func:`ih2_target` (Eq. 4), :func:`ihn_target` (Eq. 6), :func:`gih_target` (Eq. 7).
* Thm 4.1: :func:`build_vanilla_ih` (the two-layer single-head construction of App. A.1), :func:`thm41_bound`
  (the proof's explicit bound ``4 ||W*||_{1,1} e^{-p}/(1-e^{-p})``), :func:`run_last` (``TF_{-1}``).
* In-context bigram reading of ``IH_2`` with one-hot tokens: :func:`in_context_bigram`.
* Thm 4.3: delay kernels from exponential (ALiBi) heads, :func:`fit_delay_kernel`, :func:`exp_kernel`,
  :func:`single_head_delay_error`, and the assembled ``IH_n`` transformer :func:`build_ihn`,
  :func:`layer1_copy_error`.
* Thm 4.4: the proper orthogonal decomposition :func:`pod` of a similarity ``g`` (a functional SVD), random
  ReLU features :func:`relu_features_fit` (the FFN), the assembled ``GIH_2`` transformer :func:`build_gih2`,
  the best dot-product (bilinear) surrogate :func:`best_bilinear_fit` and :func:`rms_error` (the norm of Eq. 5
  with ``p = 2``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.config import (
    check_array,
    check_callable,
    check_finite,
    check_instance,
    check_int,
    check_int_array,
    check_positive,
    check_seed,
    check_shape,
    renamed_arguments,
)
from lib.models.transformer import Transformer, TransformerConfig


# ------------------------------------------------------------------------------------------------ targets
def _check_X(X):
    if not torch.is_tensor(X) or X.ndim != 3:
        raise ValueError(f"X must be a tensor of shape (B, L, d), got {getattr(X, 'shape', type(X))}")


def _patches(X: torch.Tensor, n: int):
    """Query patch ``(x_L, x_{L-1}, .., x_{L-n+2})`` ``(B, (n-1)d)`` and key patches
    ``(x_{s-1}, .., x_{s-n+1})`` for ``s = n..L-1`` ``(B, L-n, (n-1)d)``."""
    B, L, d = X.shape
    q = torch.cat([X[:, L - 1 - i] for i in range(n - 1)], dim=-1)
    s = torch.arange(n - 1, L - 1)  # 0-indexed s = n-1 .. L-2  (1-indexed n .. L-1)
    k = torch.cat([X[:, s - 1 - i] for i in range(n - 1)], dim=-1)
    return q, k, X[:, s]


def ih2_target(X: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Vanilla induction head, Eq. (4): ``sum_{s=2}^{L-1} softmax_s(x_L^T W x_{s-1}) x_s``.

    Args: ``X`` ``(B, L, d)`` with ``L >= 3``, ``W`` ``(d, d)``. Returns ``(B, d)``.
    """
    check_array("X", X)
    check_array("W", W)
    return ihn_target(X, W, 2)


def ihn_target(X: torch.Tensor, W: torch.Tensor, n: int) -> torch.Tensor:
    """In-context n-gram induction head, Eq. (6)/(14):
    ``sum_{s=n}^{L-1} softmax_s((x_L,..,x_{L-n+2})^T W (x_{s-1},..,x_{s-n+1})) x_s``.

    Args: ``X`` ``(B, L, d)`` with ``L > n``, ``W`` ``((n-1)d, (n-1)d)``, ``n >= 2``. Returns ``(B, d)``.
    """
    check_array("X", X)
    check_array("W", W)
    _check_X(X)
    check_int("n", n, minimum=2)
    B, L, d = X.shape
    if L <= n:
        raise ValueError(f"L must be > n = {n}, got {L}")
    check_shape("W", W, ((n - 1) * d, (n - 1) * d))
    q, k, v = _patches(X, n)
    scores = torch.einsum("bi,ij,bsj->bs", q, W.to(X.dtype), k)
    return torch.einsum("bs,bsd->bd", torch.softmax(scores, dim=-1), v)


def gih_target(X: torch.Tensor, g, n: int = 2) -> torch.Tensor:
    """Generalised induction head, Eq. (7): ``sum_{s=n}^{L-1} softmax_s(g(X_{L-n+2:L}, X_{s-n+1:s-1})) x_s``.

    Args:
        X: ``(B, L, d)``.
        g: callable ``g(u, v)`` with ``u`` ``(B, 1, (n-1)d)`` (current patch) and ``v`` ``(B, S, (n-1)d)``
            (earlier patches), returning scores ``(B, S)``.
    Returns ``(B, d)``.
    """
    check_array("X", X)
    check_callable("g", g)
    _check_X(X)
    check_int("n", n, minimum=2)
    if X.shape[1] <= n:
        raise ValueError(f"L must be > n = {n}, got {X.shape[1]}")
    q, k, v = _patches(X, n)
    scores = g(q[:, None, :], k)
    return torch.einsum("bs,bsd->bd", torch.softmax(scores, dim=-1), v)


# ------------------------------------------------------------------------------------------- Theorem 4.1
def key_mask(L: int, n: int = 2) -> torch.Tensor:
    """Layer-2 keys of the constructions: ``s = n..L`` allowed (1-indexed), i.e. keys whose patch exists.
    Boolean ``(L,)``; causality then restricts the last query to ``s <= L-1``."""
    check_int("L", L, minimum=1)
    check_int("n", n, minimum=2)
    m = torch.zeros(L, dtype=torch.bool)
    m[n - 1 :] = True
    return m


def _base_config(d_in, D, heads1, ffn=False, ffn_hidden=None, heads2=1):
    return TransformerConfig(
        vocab_size=None, d_in=d_in, d_model=D, n_layers=2, n_heads=(heads1, heads2), d_head=D,
        max_len=1 << 20, ffn=(ffn, False), ffn_hidden=ffn_hidden, residual=(True, False), rpe="alibi",
        causal="strict", attn_scale=1.0, d_out=d_in, record_attention=True,
    )


def build_vanilla_ih(W: torch.Tensor, p: float, dtype=torch.float64) -> Transformer:
    """The two-layer single-head transformer of Thm 4.1 (App. A.1), weights set by hand.

    ``D = 2d``; embedding ``x -> (x; 0)``; layer 1 (residual): ``W_Q = W_K = 0``, ALiBi slope ``p``,
    ``W_V = [[0, 0], [I, 0]]`` so token ``s`` becomes ``(x_s; y_s)`` with ``y_s ~ x_{s-1}``; layer 2 (no
    residual):
    slope 0, ``W_Q = [[0, 0], [I, 0]]``, ``W_K = [[0, 0], [0, W]]``, ``W_V = [[I, 0], [0, 0]]``; read-out
    ``(I 0)``. Use with :func:`run_last` (which masks the layer-2 key ``s = 1``).

    Args: ``W`` ``(d, d)`` the similarity matrix ``W*``; ``p > 0`` the layer-1 slope ``p^{(1,1)}``.
    """
    check_array("W", W)
    check_positive("p", p)
    if not torch.is_tensor(W) or W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be a square (d, d) tensor, got {getattr(W, 'shape', type(W))}")
    check_positive("p", p, allow_zero=True)
    d = W.shape[0]
    D = 2 * d
    model = Transformer(_base_config(d, D, 1)).to(dtype).zero_()
    I, Z = torch.eye(d, dtype=dtype), torch.zeros(d, d, dtype=dtype)
    blk = lambda a, b, c, e: torch.cat([torch.cat([a, b], 1), torch.cat([c, e], 1)], 0)
    model.set_embedding(torch.cat([I, Z], 0))
    model.set_head(0, 0, W_V=blk(Z, Z, I, Z), slope=p)
    model.set_output_proj(0, torch.eye(D, dtype=dtype))
    model.set_head(1, 0, W_Q=blk(Z, Z, I, Z), W_K=blk(Z, Z, Z, W.to(dtype)), W_V=blk(I, Z, Z, Z), slope=0.0)
    model.set_output_proj(1, torch.eye(D, dtype=dtype))
    model.set_readout(torch.cat([I, Z], 1))
    return model


@torch.no_grad()
def run_last(model: Transformer, X: torch.Tensor, n: int = 2) -> torch.Tensor:
    """``TF_{-1}(X)``: the last output token of a hand-built model, with the layer-2 keys ``s < n`` masked.
    ``X`` ``(B, L, d)`` -> ``(B, d)``."""
    check_instance("model", model, Transformer)
    check_array("X", X)
    _check_X(X)
    L = X.shape[1]
    out = model(X.to(next(model.parameters()).dtype), key_masks=[None, key_mask(L, n)])
    return out[:, -1]


def thm41_bound(W, p) -> np.ndarray:
    """The explicit bound of the proof of Thm 4.1 (App. A.1): ``4 ||W||_{1,1} e^{-p} / (1 - e^{-p})``
    (tokens with ``||x||_inf <= 1``). ``p`` scalar or array, ``> 0``."""
    p = check_array("p", p, positive=True)
    w11 = float(np.abs(check_array("W", W)).sum())
    return 4.0 * w11 * np.exp(-p) / (1.0 - np.exp(-p))


def sup_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """``max_batch ||a - b||_inf`` for ``(B, d)`` tensors (the norm of Eq. 5 with ``p = inf`` on a sample)."""
    check_array("a", a)
    check_array("b", b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    return float((a - b).abs().amax())


def rms_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """``(mean_batch ||a - b||_inf^2)^{1/2}`` for ``(B, d)`` tensors (the norm of Eq. 5 with ``p = 2``)."""
    check_array("a", a)
    check_array("b", b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    return float(((a - b).abs().amax(dim=-1) ** 2).mean().sqrt())


# ------------------------------------------------------------------------------- in-context bigram reading
def in_context_bigram(tokens: torch.Tensor, V: int):
    """Empirical distribution of the tokens that followed earlier occurrences of the last token.

    With one-hot tokens and ``W* = beta I``, ``IH_2`` of Eq. (4) equals ``(1 - eps) P + eps Q`` exactly, where
    ``P`` is this distribution (over keys ``s = 2..L-1`` whose predecessor matches ``x_L``), ``Q`` the
    distribution
    of the successors of the non-matching keys and ``eps = (N - k) / (k e^beta + N - k)`` (``N = L - 2`` keys,
    ``k`` matches); as ``beta -> inf`` it is the in-context bigram estimate ``P``.

    Args: ``tokens`` ``(B, L)`` int. Returns ``P`` ``(B, V)``, ``Q`` ``(B, V)`` and ``k`` ``(B,)`` (``P = 0``
    where ``k = 0``).
    """
    check_array("tokens", tokens)
    if not torch.is_tensor(tokens) or tokens.ndim != 2:
        raise ValueError("tokens must be an integer tensor of shape (B, L)")
    check_int("V", V, minimum=1)
    B, L = tokens.shape
    if L < 3:
        raise ValueError(f"L must be >= 3, got {L}")
    prev, succ = tokens[:, : L - 2], tokens[:, 1 : L - 1]
    match = prev == tokens[:, -1:]
    oh = torch.nn.functional.one_hot(succ, V).to(torch.float64)
    k = match.sum(1)
    P = (oh * match[..., None]).sum(1) / k.clamp(min=1)[:, None]
    Q = (oh * (~match)[..., None]).sum(1) / (L - 2 - k).clamp(min=1)[:, None]
    return P, Q, k


# --------------------------------------------------------------------------------- Theorem 4.3: delay kernels
def exp_kernel(betas, alphas, J: int) -> np.ndarray:
    """Sum of exponential kernels ``phi(j) = sum_h alpha_h exp(-beta_h (j - 1))``, ``j = 1..J`` (proof of
    Thm 4.3, Lemma D.2). ``betas, alphas`` ``(H,)``. Returns ``(J,)``."""
    betas, alphas = check_array("betas", betas), check_array("alphas", alphas)
    if betas.shape != alphas.shape or betas.ndim != 1:
        raise ValueError("betas and alphas must be 1-D arrays of the same length")
    check_int("J", J, minimum=1)
    j = np.arange(1, J + 1)
    return np.exp(-np.outer(j - 1, betas)) @ alphas


def fit_delay_kernel(delay: int, betas, J: int = 400, J_fit: int | None = None) -> dict:
    """Least-squares fit of ``sum_h alpha_h e^{-beta_h (j-1)}`` to the delay kernel ``1{j = delay}``.

    Args:
        delay: the lag ``i >= 1``.
        betas: ``(H,)`` positive slopes (fixed).
        J: number of lags on which the ``l1`` error is measured (the tail beyond is
            ``< sum|alpha| e^{-beta J}``).
        J_fit: lags used in the least squares (default ``max(4 * delay, 3 * H)``; must be ``<= J``).

    Returns:
        dict with ``alphas`` ``(H,)``, ``kernel`` ``(J,)`` (the fitted kernel on lags ``1..J``), ``l1`` (the
        ``l1(N)`` error of Lemma D.2 on ``1..J``) and ``max_alpha`` (``max_h |alpha_h|``).
    """
    check_int("delay", delay, minimum=1)
    betas = check_array("betas", betas, finite=False, nonempty=False)
    if betas.ndim != 1 or betas.size == 0 or np.any(betas <= 0) or not np.all(np.isfinite(betas)):
        raise ValueError(f"betas must be a non-empty 1-D array of positive numbers, got {betas}")
    H = betas.size
    J_fit = max(4 * delay, 3 * H) if J_fit is None else J_fit
    check_int("J_fit", J_fit, minimum=1)
    check_int("J", J, minimum=J_fit)
    j = np.arange(1, J_fit + 1)
    A = np.exp(-np.outer(j - 1, betas))
    target = (j == delay).astype(float)
    alphas = np.linalg.lstsq(A, target, rcond=None)[0]
    kernel = exp_kernel(betas, alphas, J)
    l1 = float(np.abs(kernel - (np.arange(1, J + 1) == delay)).sum())
    return {"alphas": alphas, "kernel": kernel, "l1": l1, "max_alpha": float(np.abs(alphas).max())}


def single_head_delay_error(delay: int, beta: float) -> float:
    """Best ``l1`` error of ONE exponential head ``alpha e^{-beta (j-1)}`` against ``1{j = delay}``.

    Closed form (minimise ``|alpha| c + |alpha u^{i-1} - 1|`` over ``alpha``, ``u = e^{-beta}``,
    ``c = sum_{j != i} u^{j-1}``): ``min(1, c / u^{i-1})``; equal to 1 for every ``beta`` when ``delay >= 2``
    (the zero kernel is optimal) and to ``u / (1 - u)`` for ``delay = 1``.
    """
    check_int("delay", delay, minimum=1)
    check_positive("beta", beta)
    u = np.exp(-beta)
    total = 1.0 / (1.0 - u)
    peak = u ** (delay - 1)
    c = total - peak
    return float(min(1.0, c / peak))


def build_ihn(W: torch.Tensor, n: int, betas: list, alphas: list, d: int, dtype=torch.float64) -> Transformer:
    """The two-layer multi-head transformer of Thm 4.3 (App. A.2), weights set by hand.

    ``D = n d``. Layer 1 (residual) has ``H = sum_i H_i`` heads: head ``h`` of group ``i`` (lag ``i =
    1..n-1``)
    has slope ``beta_{h,i}``, ``W_Q = W_K = 0`` and value ``alpha_{h,i} / (1 - e^{-beta_{h,i}}) S_i`` (``S_i``
    copies the token block to block ``i``; the factor undoes the long-sequence softmax normaliser), so
    block ``i``
    of token ``s`` becomes ``x_hat_{s-i} ~ x_{s-i}``. Layer 2 (no residual): one head, slope 0,
    ``W_Q = [[0, 0], [I_{D-d}, 0]]``, ``W_K = [[0, 0], [0, W]]``, ``W_V = diag(I_d, 0)``; read-out ``(I_d
    0)``.

    Args:
        W: ``((n-1)d, (n-1)d)`` similarity matrix ``W*`` of Eq. (6).
        n: order ``>= 2``.
        betas, alphas: lists of ``n-1`` arrays, ``betas[i-1]`` ``(H_i,)`` slopes and ``alphas[i-1]`` weights
            of the group approximating lag ``i`` (e.g. from :func:`fit_delay_kernel`).
        d: token dimension.
    """
    check_array("W", W)
    check_instance("betas", betas, (list, tuple))
    check_instance("alphas", alphas, (list, tuple))
    check_int("n", n, minimum=2)
    check_int("d", d, minimum=1)
    if len(betas) != n - 1 or len(alphas) != n - 1:
        raise ValueError(
            f"betas and alphas must hold n-1 = {n - 1} groups, got {len(betas)} and {len(alphas)}"
        )
    check_shape("W", W, ((n - 1) * d, (n - 1) * d))
    D = n * d
    groups = [(i + 1, float(b), float(a)) for i in range(n - 1) for b, a in zip(np.ravel(betas[i]),
                                                                               np.ravel(alphas[i]))]
    H = len(groups)
    model = Transformer(_base_config(d, D, H)).to(dtype).zero_()
    E = torch.zeros(D, d, dtype=dtype)
    E[:d] = torch.eye(d, dtype=dtype)
    model.set_embedding(E)
    for h, (lag, beta, alpha) in enumerate(groups):
        S = torch.zeros(D, D, dtype=dtype)
        S[lag * d : (lag + 1) * d, :d] = torch.eye(d, dtype=dtype)
        model.set_head(0, h, W_V=alpha / (1.0 - np.exp(-beta)) * S, slope=beta)
    model.set_output_proj(0, torch.cat([torch.eye(D, dtype=dtype)] * H, dim=1))
    WQ = torch.zeros(D, D, dtype=dtype)
    WQ[d:, : D - d] = torch.eye(D - d, dtype=dtype)
    WK = torch.zeros(D, D, dtype=dtype)
    WK[d:, d:] = W.to(dtype)
    WV = torch.zeros(D, D, dtype=dtype)
    WV[:d, :d] = torch.eye(d, dtype=dtype)
    model.set_head(1, 0, W_Q=WQ, W_K=WK, W_V=WV, slope=0.0)
    model.set_output_proj(1, torch.eye(D, dtype=dtype))
    R = torch.zeros(d, D, dtype=dtype)
    R[:, :d] = torch.eye(d, dtype=dtype)
    model.set_readout(R)
    return model


@torch.no_grad()
def layer1_copy_error(model: Transformer, X: torch.Tensor, n: int) -> float:
    """``eps_SA^(1)`` of the proof of Thm 4.3: ``sup_{s >= n} ||x_s^(1) - (x_s; x_{s-1}; ..;
    x_{s-n+1})||_inf``
    for the layer-1 output of :func:`build_ihn` / :func:`build_vanilla_ih` on ``X`` ``(B, L, d)``."""
    check_instance("model", model, Transformer)
    check_array("X", X)
    _check_X(X)
    check_int("n", n, minimum=2)
    B, L, d = X.shape
    _, hidden = model(X.to(next(model.parameters()).dtype), return_hidden=True)
    h1 = hidden[0][:, n - 1 :, : n * d]
    s = torch.arange(n - 1, L)
    ideal = torch.cat([X[:, s - i] for i in range(n)], dim=-1).to(h1.dtype)
    return float((h1 - ideal).abs().amax())


# ---------------------------------------------------------------------------------- Theorem 4.4: POD + FFN
def _exp(x):
    return torch.exp(x) if torch.is_tensor(x) else np.exp(x)


#: Similarities of two scalars used in the chapter (each ``g(u, v, beta)`` acts element-wise, broadcasting).
SIMILARITIES = {
    "dot": lambda u, v, beta: beta * u * v,
    "antonym": lambda u, v, beta: -beta * u * v,
    "square": lambda u, v, beta: beta * (u * v) ** 2,
    "gauss": lambda u, v, beta: beta * _exp(-((u - v) ** 2) / 0.1),
    "abs": lambda u, v, beta: -beta * abs(u - v),
}


@dataclass
class POD:
    """Numerical proper orthogonal decomposition ``g(u, v) = sum_k sigma_k phi_k(u) psi_k(v)`` on ``[low,
    high]``.

    ``nodes``/``weights``: the Gauss-Legendre rule; ``sigma`` ``(R,)``; ``phi``/``psi`` ``(N, R)`` values
    on the
    nodes (orthonormal in ``L^2`` of the uniform probability measure). :meth:`~POD.phi_at`/:meth:`~POD.psi_at`
    evaluate the
    basis anywhere by the Nystrom formula ``phi_k(u) = sigma_k^{-1} E_v[g(u, v) psi_k(v)]``.
    """

    g: object
    low: float
    high: float
    nodes: np.ndarray
    weights: np.ndarray
    sigma: np.ndarray
    phi: np.ndarray
    psi: np.ndarray

    def phi_at(self, u, K: int) -> np.ndarray:
        """The first ``K`` left basis functions at the points ``u``: ``(len(u), K)`` (Nystrom formula)."""
        u = np.asarray(u, float)
        G = self.g(u[:, None], self.nodes[None, :])
        return (G * self.weights) @ self.psi[:, :K] / self.sigma[:K]

    def psi_at(self, v, K: int) -> np.ndarray:
        """The first ``K`` right basis functions at the points ``v``: ``(len(v), K)`` (Nystrom formula)."""
        v = np.asarray(v, float)
        G = self.g(self.nodes[:, None], v[None, :])
        return (G.T * self.weights) @ self.phi[:, :K] / self.sigma[:K]

    def truncation(self, u, v, K: int) -> np.ndarray:
        """``g_K(u, v) = sum_{k <= K} sigma_k phi_k(u) psi_k(v)`` on all pairs: ``(len(u), len(v))``."""
        return (self.phi_at(u, K) * self.sigma[:K]) @ self.psi_at(v, K).T


def pod(g, low: float = -1.0, high: float = 1.0, n_nodes: int = 200) -> POD:
    """Functional SVD (POD, App. A.3.2 Eq. 15) of ``g : [low, high]^2 -> R`` for the uniform measure.

    Discretise with an ``n_nodes``-point Gauss-Legendre rule: ``sqrt(w_i) g(u_i, v_j) sqrt(w_j) = U S V^T``;
    ``sigma_k = S_k``, ``phi_k(u_i) = U_ik / sqrt(w_i)``, ``psi_k(v_j) = V_jk / sqrt(w_j)``.
    ``g(u, v)`` must act element-wise on broadcast NumPy arrays.
    """
    check_int("n_nodes", n_nodes, minimum=2)
    check_callable("g", g)
    check_finite("low", low)
    check_finite("high", high)
    if not high > low:
        raise ValueError(f"high must be > low, got low={low}, high={high}")
    x, w = np.polynomial.legendre.leggauss(n_nodes)
    nodes = low + (x + 1) * (high - low) / 2
    weights = w / 2  # probability weights of the uniform measure
    G = np.asarray(g(nodes[:, None], nodes[None, :]), float)
    sw = np.sqrt(weights)
    U, S, Vt = np.linalg.svd(sw[:, None] * G * sw[None, :])
    return POD(g, low, high, nodes, weights, S, U / sw[:, None], Vt.T / sw[:, None])


def relu_features_fit(f, M: int, low: float = -1.0, high: float = 1.0, rng=0, n_fit: int = 400,
                      ridge: float = 1e-10) -> dict:
    """Fit a scalar function on ``[low, high]`` with a width-``M`` ReLU layer: ``f(x) ~ b0 + sum_m a_m
    relu(s_m x + c_m)``.

    Random features (kinks ``t_m`` uniform in ``[low, high]``, signs ``s_m = +-1``, ``c_m = -s_m t_m``) and a
    ridge least-squares read-out on ``n_fit`` equispaced points: a stand-in for the Barron-space approximation
    of Lemma A.6 (which only asserts existence).

    Returns:
        dict with ``w`` ``(M,)`` (= ``s_m``), ``c`` ``(M,)``, ``a`` ``(M,)``, ``b0`` and ``max_err`` (the sup
        error on the fit points).
    """
    check_callable("f", f)
    check_finite("low", low)
    check_finite("high", high)
    check_positive("ridge", ridge)
    if not isinstance(rng, np.random.Generator):
        check_seed("rng", rng)
    check_int("M", M, minimum=1)
    check_int("n_fit", n_fit, minimum=2)
    check_positive("ridge", ridge, allow_zero=True)
    g = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
    t = g.uniform(low, high, M)
    s = np.where(g.random(M) < 0.5, -1.0, 1.0)
    c = -s * t
    x = np.linspace(low, high, n_fit)
    Phi = np.concatenate([np.ones((n_fit, 1)), np.maximum(0.0, x[:, None] * s + c)], axis=1)
    y = np.asarray(f(x), float)
    A = Phi.T @ Phi + ridge * np.eye(M + 1)
    coef = np.linalg.solve(A, Phi.T @ y)
    err = float(np.abs(Phi @ coef - y).max())
    return {"w": s, "c": c, "a": coef[1:], "b0": float(coef[0]), "max_err": err}


def build_gih2(P: POD, K: int, M: int, p: float = 12.0, rng=0, dtype=torch.float64) -> Transformer:
    """The two-layer transformer with FFN of Thm 4.4 (App. A.3) for scalar tokens (``d = 1``, ``n = 2``).

    ``D = 2 + 2K``; coordinates ``(x_s, y_s, phi_hat_1..K(x_s), psi_hat_1..K(y_s))``. Layer 1: one ALiBi head
    with slope ``p`` copies ``y_s ~ x_{s-1}`` (as in Thm 4.1); its FFN (width ``M``, ``M // (2K)`` ReLU
    neurons per
    basis function, fitted by :func:`relu_features_fit`) writes the POD bases into the free coordinates.
    Layer 2: ``W_Q = sum_k sqrt(sigma_k) e_k e_{2+k}^T``, ``W_K = sum_k sqrt(sigma_k) e_k e_{2+K+k}^T`` so the
    score is ``g_hat_K(x_L, y_s) = sum_k sigma_k phi_hat_k(x_L) psi_hat_k(y_s)``; value ``x_s``; read-out
    ``x``.
    """
    check_instance("P", P, POD)
    check_positive("p", p)
    if not isinstance(rng, np.random.Generator):
        check_seed("rng", rng)
    check_int("K", K, minimum=1, maximum=len(P.sigma))
    check_int("M", M, minimum=2 * K)
    check_positive("p", p, allow_zero=True)
    m = M // (2 * K)
    D = 2 + 2 * K
    model = Transformer(_base_config(1, D, 1, ffn=True, ffn_hidden=2 * K * m)).to(dtype).zero_()
    E = torch.zeros(D, 1, dtype=dtype)
    E[0, 0] = 1.0
    model.set_embedding(E)
    WV = torch.zeros(D, D, dtype=dtype)
    WV[1, 0] = 1.0
    model.set_head(0, 0, W_V=WV, slope=p)
    model.set_output_proj(0, torch.eye(D, dtype=dtype))
    gen = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
    W1 = np.zeros((2 * K * m, D))
    b1 = np.zeros(2 * K * m)
    W2 = np.zeros((D, 2 * K * m))
    b2 = np.zeros(D)
    # the FFN sees x_hat in [-2, 2] (the proof's box);
    # the bases are fitted on the token range widened a little
    span = 0.05 * (P.high - P.low)
    lo, hi = P.low - span, P.high + span
    for k in range(K):
        for which, (src, fn) in enumerate(((0, lambda x, k=k: P.phi_at(x, k + 1)[:, k]),
                                           (1, lambda x, k=k: P.psi_at(x, k + 1)[:, k]))):
            fit = relu_features_fit(fn, m, lo, hi, rng=gen)
            rows = slice((2 * k + which) * m, (2 * k + which + 1) * m)
            W1[rows, src] = fit["w"]
            b1[rows] = fit["c"]
            out = 2 + which * K + k
            W2[out, rows] = fit["a"]
            b2[out] = fit["b0"]
    model.set_ffn(0, W1, b1, W2, b2)
    sq = np.sqrt(P.sigma[:K])
    WQ = torch.zeros(D, D, dtype=dtype)
    WK = torch.zeros(D, D, dtype=dtype)
    for k in range(K):
        WQ[k, 2 + k] = sq[k]
        WK[k, 2 + K + k] = sq[k]
    WV2 = torch.zeros(D, D, dtype=dtype)
    WV2[0, 0] = 1.0
    model.set_head(1, 0, W_Q=WQ, W_K=WK, W_V=WV2, slope=0.0)
    model.set_output_proj(1, torch.eye(D, dtype=dtype))
    R = torch.zeros(1, D, dtype=dtype)
    R[0, 0] = 1.0
    model.set_readout(R)
    return model


def best_bilinear_fit(P: POD) -> dict:
    """Best ``L^2`` fit of ``g`` by the scores a dot product of affine token features can produce,
    ``c0 + c1 u + c2 v + c3 u v`` (with a constant coordinate in the embedding).

    Returns:
        dict with ``coef`` ``(4,)`` (``c0, c1, c2, c3``) and ``r2``: the fraction of the variance *across keys*
        (``g`` minus its mean over ``v`` for each ``u``, the only part softmax sees) explained by the fit;
        ``r2 = 0`` means a dot product of the raw tokens cannot represent any of ``g``'s retrieval preferences.
    """
    check_instance("P", P, POD)
    u, v = np.meshgrid(P.nodes, P.nodes, indexing="ij")
    w = np.outer(P.weights, P.weights)
    G = np.asarray(P.g(u, v), float)
    F = np.stack([np.ones_like(u), u, v, u * v], -1).reshape(-1, 4)
    sw = np.sqrt(w).reshape(-1)
    coef = np.linalg.lstsq(F * sw[:, None], G.reshape(-1) * sw, rcond=None)[0]
    fit = (F @ coef).reshape(u.shape)

    def centred(A):
        return A - (A * P.weights[None, :]).sum(1, keepdims=True)

    Gc, Fc = centred(G), centred(fit)
    var = float((w * Gc**2).sum())
    res = float((w * (Gc - Fc) ** 2).sum())
    return {"coef": coef, "r2": 1.0 - res / var if var > 0 else 1.0}


@renamed_arguments(rng="seed")
def gih2_width_sweep(P: POD, g, Ls, Ms, Ks, B: int = 64, seed: int = 31) -> dict:
    """Error of the Thm 4.4 transformer (:func:`build_gih2`) at the best POD rank, over sequence lengths and widths.

    For each length ``L`` in ``Ls`` a batch of ``B`` uniform scalar sequences is drawn (seed ``seed + L``); for each
    FFN width ``M`` in ``Ms`` every rank ``K`` in ``Ks`` with ``M >= 2K`` is built and the smallest
    ``|||GIH_2 - TF|||_{L,2}`` (:func:`rms_error`, not normalised) is kept. ``g(u, v)``: the similarity on token
    values (broadcast tensors), the same one ``P`` decomposes. ``rng``, the old name of ``seed``, still works for
    one release (``DeprecationWarning``).

    Returns:
        dict with ``error`` (len(Ls), len(Ms)), ``best_K`` (the rank that gave it, same shape), ``Ls`` and ``Ms``.
    """
    from lib.data.tokens import uniform_sequences

    check_instance("P", P, POD)
    check_callable("g", g)
    check_int("B", B, minimum=1)
    check_seed("seed", seed)
    Ls, Ms, Ks = (check_int_array(name, v) for name, v in (("Ls", Ls), ("Ms", Ms), ("Ks", Ks)))
    for name, v, low in (("Ls", Ls, 4), ("Ms", Ms, 2), ("Ks", Ks, 1)):
        if v.size == 0 or v.min() < low:
            raise ValueError(f"{name} must be a non-empty list of integers >= {low}, got {v.tolist()}")
    if Ms.min() < 2 * Ks.min():
        raise ValueError(f"every width in Ms must be >= 2 min(Ks) = {2 * Ks.min()}, got {Ms.tolist()}")
    err = np.full((Ls.size, Ms.size), np.inf)
    best = np.zeros((Ls.size, Ms.size), int)
    for i, L in enumerate(Ls):
        X = uniform_sequences(B, int(L), 1, rng=seed + int(L), dtype=torch.float64)
        tgt = gih_target(X, lambda u, v: g(u[..., 0], v[..., 0]))
        for a, M in enumerate(Ms):
            for b, K in enumerate(Ks):
                if M >= 2 * K and K <= len(P.sigma):
                    e = rms_error(run_last(build_gih2(P, int(K), int(M), rng=100 * a + b), X), tgt)
                    if e < err[i, a]:
                        err[i, a], best[i, a] = e, K
    return {"error": err, "best_K": best, "Ls": Ls, "Ms": Ms}
