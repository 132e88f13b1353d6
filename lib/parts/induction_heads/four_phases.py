"""Optimisation analysis of Wang, Yu, E & Wu (2024), Sec. 5 and App. B-C: from a 4-gram to an induction head.

Notation (the paper's, with the two-head model of Eqs. 9-10): scalar Gaussian tokens ``x_1..x_L``; the mixed target
(Eq. 8) has a 4-gram part ``g* x_{L-2}`` with ``g* = a/(1+a)`` and an induction-head part
``h* sum_s softmax(w*^2 x_L x_{s-1}) x_s`` with ``h* = 1/(1+a)`` (``a`` = ``alpha_star``). Stage II trains
``p`` (RPE of the 4-gram head), ``g`` (its value weight), ``w`` (the single query-key weight ``w_KQ``) and ``h``
(the induction head's value weight). The 4-gram loss (Eq. 19) is exact; the induction-head loss (Eq. 22) uses the
paper's exp-linearised softmax ``softmax(z) -> exp(z)/(L-2)``. The model sums run over the ``L-2`` keys
``s = 2..L-1`` for both target and model (our reading of Eq. 10).

Everything here is NumPy/SciPy except the Monte-Carlo model and its SGD trainer (torch, float64).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lib.config import (
    check_array,
    check_bool,
    check_finite,
    check_in,
    check_instance,
    check_int,
    check_positive,
    check_range,
)
from lib.curves import hitting_time
from lib.flows import integrate_flow


def _check_setting(alpha_star, w_star, L):
    check_positive("alpha_star", alpha_star)
    check_range("w_star", w_star, 0.0, 1 / np.sqrt(2), lo_open=True, hi_open=True)
    check_int("L", L, minimum=5)


def targets_star(alpha_star: float) -> tuple[float, float]:
    """``(g*, h*) = (a/(1+a), 1/(1+a))``: the weights of the two components of the mixed target (Eq. 8)."""
    check_positive("alpha_star", alpha_star)
    return alpha_star / (1 + alpha_star), 1 / (1 + alpha_star)


# ------------------------------------------------------------------------------------------ the model (torch)
def prev_token_weights(L: int, p1: float):
    """Layer-1 attention of Eq. 9: ``K[i, j] = softmax_j(-p1 (i-1-j))`` over ``j < i`` (0-based), shape (L, L).

    Row 0 is empty (the first token has nothing to attend to: ``y_1 = 0``). ``p1 = inf`` gives ``y_s = x_{s-1}``.
    """
    check_int("L", L, minimum=2)
    if isinstance(p1, (str, bytes, bool)) or p1 is None:
        raise ValueError(f"p1 must be a number >= 0 (or inf), got {p1!r}")
    try:
        p1 = float(p1)
    except (TypeError, ValueError):
        raise ValueError(f"p1 must be a number >= 0 (or inf), got {p1!r}") from None
    if np.isnan(p1) or p1 < 0:
        raise ValueError(f"p1 must be >= 0 (or inf), got {p1}")
    i = np.arange(L)[:, None]
    j = np.arange(L)[None, :]
    lag = i - 1 - j
    K = np.zeros((L, L))
    mask = j < i
    if np.isinf(p1):
        K[(lag == 0) & mask] = 1.0
        return K
    logits = np.where(mask, -p1 * lag, -np.inf)
    logits[0] = 0.0
    K = np.exp(logits - logits.max(axis=1, keepdims=True))
    K[0] = 0.0
    K /= np.maximum(K.sum(axis=1, keepdims=True), 1e-300)
    return K


def mixed_target(X, alpha_star: float, w_star: float, *, softmax: str = "true"):
    """Mixed target of Eq. 8 for a batch of scalar sequences.

    Args:
        X: tokens, shape (B, L), a torch tensor or NumPy array.
        alpha_star: relative weight of the 4-gram component.
        w_star: the target's query-key weight.
        softmax: ``"true"`` or ``"exp"`` (the paper's App. C.2 simplification ``exp(z)/(L-2)``).

    Returns:
        torch tensor (B, 2): ``(g* x_{L-2}, h* sum_{s=2}^{L-1} softmax(w*^2 x_L x_{s-1}) x_s)``.
    """
    check_array("X", X)
    check_positive("w_star", w_star)
    import torch

    check_in("softmax", softmax, ("true", "exp"))
    X = torch.as_tensor(X, dtype=torch.float64)
    if X.ndim != 2 or X.shape[1] < 5:
        raise ValueError(f"X must have shape (B, L) with L >= 5, got {tuple(X.shape)}")
    g_star, h_star = targets_star(alpha_star)
    L = X.shape[1]
    scores = w_star**2 * X[:, -1:] * X[:, : L - 2]  # key s (1-based 2..L-1) compares x_{s-1}
    vals = X[:, 1 : L - 1]
    att = torch.softmax(scores, dim=1) if softmax == "true" else torch.exp(scores) / (L - 2)
    return torch.stack([g_star * X[:, L - 3], h_star * (att * vals).sum(1)], dim=1)


def reparam_forward(X, params: dict, *, p1: float = float("inf"), softmax: str = "true"):
    """The reparameterised two-layer transformer of Eqs. 9-10 (last output token), batched.

    Args:
        X: tokens, shape (B, L), or (S, B, L) with one batch per parallel run.
        params: torch tensors, all scalars or all of shape (S,) for S parallel runs: ``g`` (= w_V^(2,1)),
            ``p`` (= p^(2,1)), ``h`` (= w_V^(2,2)) and either ``w`` (the paper's single w_KQ, the score uses
            ``w**2``) or ``wq`` and ``wk`` (separate query and key weights, score ``wq*wk``).
        p1: layer-1 RPE parameter p^(1,1) (``inf``: exact previous-token head, the Stage-II setting).
        softmax: ``"true"`` or ``"exp"`` (App. C.2 simplification) in the induction head.

    Returns:
        (..., B, 2): the 4-gram head and the induction head outputs (leading S for parallel runs).
    """
    check_array("X", X)
    check_instance("params", params, dict)
    try:
        ok = not isinstance(p1, (str, bytes, bool)) and p1 is not None and float(p1) > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"p1 must be a number > 0 (inf allowed), got {p1!r}")
    import torch

    check_in("softmax", softmax, ("true", "exp"))
    X = torch.as_tensor(X, dtype=torch.float64)
    if X.ndim not in (2, 3) or X.shape[-1] < 5:
        raise ValueError(f"X must have shape (B, L) or (S, B, L) with L >= 5, got {tuple(X.shape)}")
    for key in ("g", "p", "h"):
        if key not in params:
            raise ValueError(f"params must contain {key!r}")
    if "w" in params:
        kq = params["w"] ** 2
    elif "wq" in params and "wk" in params:
        kq = params["wq"] * params["wk"]
    else:
        raise ValueError("params must contain 'w' or both 'wq' and 'wk'")
    L = X.shape[-1]
    if np.isinf(float(p1)):
        Y = torch.cat([torch.zeros_like(X[..., :1]), X[..., :-1]], dim=-1)  # y_s = x_{s-1}
    else:
        Y = X @ torch.as_tensor(prev_token_weights(L, p1)).T  # y_s, Eq. 9
    keys = Y[..., 1 : L - 1]  # y_s for s = 2..L-1
    vals = X[..., 1 : L - 1]  # x_s for s = 2..L-1
    lag = torch.arange(L - 3, -1, -1, dtype=torch.float64)  # L-1-s for s = 2..L-1
    p, g, h = (torch.as_tensor(params[k], dtype=torch.float64) for k in ("p", "g", "h"))
    kq = torch.as_tensor(kq, dtype=torch.float64)
    if p.ndim == 1:  # S parallel runs: shape (S, 1, 1) against (S or 1, B, L-2)
        p, g, h, kq = (v[:, None, None] for v in (p, g, h, kq))
        if X.ndim == 2:
            keys, vals, X = keys[None], vals[None], X[None]
    a1 = torch.softmax(-p * lag, dim=-1)  # 4-gram head attention over keys, (.., 1, L-2) or (L-2,)
    scores = kq * X[..., -1:] * keys
    att = torch.softmax(scores, dim=-1) if softmax == "true" else torch.exp(scores) / (L - 2)
    out1 = g[..., 0] * (a1 * keys).sum(-1) if g.ndim else g * (a1 * keys).sum(-1)
    out2 = h[..., 0] * (att * vals).sum(-1) if h.ndim else h * (att * vals).sum(-1)
    return torch.stack([out1, out2], dim=-1)


# ------------------------------------------------------------------------------------------ stage I (App. B)
def stage1_loss(p_tilde: float, L: int, g0: float, alpha_star: float, *, grad: bool = False):
    """Exact Gaussian 4-gram loss of Stage I as a function of ``p_tilde = p^(1,1)`` (App. B).

    Layer 2's 4-gram head has ``p^(2,1) = 0`` (uniform over the ``L-2`` keys) and value weight ``g0``; only the
    ``p_tilde``-dependent 4-gram part is returned (the induction-head part does not depend on ``p_tilde``).
    With ``c_tau = g0/(L-2) sum_s K[s, tau]`` the loss is ``(sum c^2 - 2 g* c_{L-2} + g*^2)/2``.

    Returns:
        the loss, or ``(loss, d loss / d p_tilde)`` with ``grad=True``.
    """
    check_positive("p_tilde", p_tilde, allow_zero=True)
    check_int("L", L, minimum=5)
    check_positive("g0", g0)
    check_bool("grad", grad)
    g_star, _ = targets_star(alpha_star)
    K = prev_token_weights(L, p_tilde)
    rows = slice(1, L - 1)  # keys s = 2..L-1 (0-based 1..L-2)
    c = g0 / (L - 2) * K[rows].sum(0)
    loss = 0.5 * (np.sum(c**2) - 2 * g_star * c[L - 3] + g_star**2)
    if not grad:
        return float(loss)
    i = np.arange(L)[:, None]
    j = np.arange(L)[None, :]
    lag = np.where(j < i, i - 1 - j, 0).astype(float)
    mean_lag = (K * lag).sum(1, keepdims=True)
    dK = K * (-lag + mean_lag)
    dc = g0 / (L - 2) * dK[rows].sum(0)
    dloss = float(np.sum(c * dc) - g_star * dc[L - 3])
    return float(loss), dloss


def stage1_rhs(L: int, g0: float, alpha_star: float):
    """Right-hand side ``d p_tilde/dt = -d loss/d p_tilde`` of the Stage-I gradient flow (Lemma 5.3)."""
    check_int("L", L, minimum=1)
    check_positive("g0", g0)
    check_positive("alpha_star", alpha_star)

    def rhs(t, y):
        return [-stage1_loss(max(float(y[0]), 0.0), L, g0, alpha_star, grad=True)[1]]

    return rhs


def stage1_flow(L: int, sigma_init: float, alpha_star: float, t_max: float, *, n_points: int = 200):
    """Integrate Stage I from ``p_tilde(0) = sigma_init`` (with ``g(0) = sigma_init``) up to ``t_max``.

    Returns:
        ``(t, p_tilde)`` arrays, shape (n_points+1,), on a log-time grid.
    """
    check_positive("sigma_init", sigma_init)
    check_positive("t_max", t_max)
    check_int("n_points", n_points, minimum=2)
    res = integrate_flow(
        stage1_rhs(L, sigma_init, alpha_star),
        [sigma_init],
        (0.0, t_max),
        log_time_grid=n_points,
        t_min=1.0,
        rtol=1e-8,
        atol=1e-10,
    )
    return res.t, res.y[0]


# ------------------------------------------------------------------------------------------ stage II, 4-gram head
def ngram_sums(p: float, L: int) -> tuple[float, float]:
    """``M(p) = sum_{k=0}^{L-3} e^{-pk}`` and ``m(p) = -M'(p) = sum_k k e^{-pk}`` (App. C.1), summed directly."""
    check_finite("p", p)
    check_int("L", L, minimum=3)
    p = float(p)
    n = L - 2
    if p > 0:
        n = min(n, int(745.0 / p) + 2)
    k = np.arange(n, dtype=float)
    e = np.exp(-p * k)
    return float(e.sum()), float((k * e).sum())


def loss_g4(p: float, g: float, alpha_star: float, L: int) -> float:
    """4-gram partial loss, Eq. 19: ``g*^2/2 + g^2 M(2p)/(2 M(p)^2) - g* g / M(p)`` (exact for Gaussian tokens)."""
    check_finite("p", p)
    check_finite("g", g)
    _check_setting(alpha_star, 0.5, L)
    g_star, _ = targets_star(alpha_star)
    M1, _ = ngram_sums(p, L)
    M2, _ = ngram_sums(2 * p, L)
    return 0.5 * g_star**2 + 0.5 * g**2 * M2 / M1**2 - g_star * g / M1


def rhs_g4(p: float, g: float, alpha_star: float, L: int) -> tuple[float, float]:
    """``(dp/dt, dg/dt)`` of the 4-gram head under gradient flow (App. C.1, below Eq. 19)."""
    check_finite("p", p)
    check_finite("g", g)
    g_star, _ = targets_star(alpha_star)
    M1, m1 = ngram_sums(p, L)
    M2, m2 = ngram_sums(2 * p, L)
    dp = (g**2 * m2 - g**2 * M2 * m1 / M1 + g_star * g * m1) / M1**2
    dg = g_star / M1 - g * M2 / M1**2
    return dp, dg


# ------------------------------------------------------------------------------------------ stage II, induction head
def _elementwise(x) -> np.ndarray:
    """``x`` as a float array for :func:`psi` and :func:`phi`, which the flows call at every evaluation: a
    string, None or a ragged list raises a ``ValueError`` naming ``x``; NaN (a diverged state) passes through."""
    if isinstance(x, (str, bytes)) or x is None:
        raise ValueError(f"x must be a number or an array of numbers, got {x!r}")
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"x must be a number or an array of numbers, got {type(x).__name__}") from None


def psi(x):
    """``psi(x) = (1-x^2)^{-1/2}`` = E exp(x X Y) Z^2 for independent standard Gaussians (Lemma D.3)."""
    x = _elementwise(x)
    if np.any(np.abs(x) >= 1):
        raise ValueError("psi(x) needs |x| < 1 (Lemma D.3); here w^2 + w*^2 and 2 w^2 must stay below 1")
    return (1 - x**2) ** -0.5


def phi(x):
    """``phi(x) = psi'(x) = x (1-x^2)^{-3/2}`` (App. C.2)."""
    x = _elementwise(x)
    if np.any(np.abs(x) >= 1):
        raise ValueError("phi(x) needs |x| < 1")
    return x * (1 - x**2) ** -1.5


def loss_ih(w, h, alpha_star: float, w_star: float, L: int):
    """Induction-head partial loss with the exp-linearised softmax, Eq. 22.

    ``[h*^2 psi(2w*^2) - 2 h h* psi(w^2+w*^2) + h^2 psi(2w^2)] / (2(L-2))``; ``w``, ``h`` broadcast.
    """
    check_array("w", w)
    check_array("h", h)
    _check_setting(alpha_star, w_star, L)
    _, h_star = targets_star(alpha_star)
    w = np.asarray(w, dtype=float)
    h = np.asarray(h, dtype=float)
    vs = w_star**2
    return (h_star**2 * psi(2 * vs) - 2 * h * h_star * psi(w**2 + vs) + h**2 * psi(2 * w**2)) / (2 * (L - 2))


def rhs_ih(w: float, h: float, alpha_star: float, w_star: float, L: int, *, separate_qk: bool = False):
    """``(dw/dt, dh/dt)`` of the induction head under gradient flow (App. C.2).

    ``dw/dt = 2hw [h* phi(w^2+w*^2) - h phi(2w^2)]/(L-2)``, ``dh/dt = [h* psi(w^2+w*^2) - h psi(2w^2)]/(L-2)``.
    With ``separate_qk=True`` the query and key weights are trained separately from equal values (so they stay
    equal, Lemma 5.4) and ``dw/dt`` is half the paper's: the chain rule through ``wq*wk`` gives one factor ``w``
    per weight instead of ``d(w^2)/dw = 2w``.
    """
    _check_setting(alpha_star, w_star, L)  # (w, h) is the ODE state: only its type is checked
    for name, value in (("w", w), ("h", h)):
        if isinstance(value, (str, bytes, bool)) or value is None:
            raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}")
    check_bool("separate_qk", separate_qk)
    _, h_star = targets_star(alpha_star)
    vs = w_star**2
    dw = 2 * h * w * (h_star * phi(w**2 + vs) - h * phi(2 * w**2)) / (L - 2)
    dh = (h_star * psi(w**2 + vs) - h * psi(2 * w**2)) / (L - 2)
    if separate_qk:
        dw = 0.5 * dw
    return float(dw), float(dh)


@dataclass
class FourPhaseResult:
    """Trajectory of the closed-form Stage-II flow (Fig. 2). Arrays have shape (n_t,); ``result["t"]`` works too.

    Attributes:
        t: times; g, h, p, w: the parameters w_V1, w_V2, p^(2,1), w_KQ; loss_g4, loss_ih, loss: the partial and
        total losses; events: first times g reaches g* (``T_g1``), h reaches h* (``T_o``), w reaches w*/2
        (``T_half_w``); setting: the arguments.
    """

    t: np.ndarray
    g: np.ndarray
    h: np.ndarray
    p: np.ndarray
    w: np.ndarray
    loss_g4: np.ndarray
    loss_ih: np.ndarray
    loss: np.ndarray
    events: dict = field(default_factory=dict)
    setting: dict = field(default_factory=dict)

    def __getitem__(self, key: str):
        if key not in ("t", "g", "h", "p", "w", "loss_g4", "loss_ih", "loss"):
            raise KeyError(key)
        return getattr(self, key)


def four_phase_dynamics(
    alpha_star: float,
    w_star: float,
    L: int,
    sigma_init: float,
    t_max: float,
    *,
    separate_qk: bool = False,
    only_ih: bool = False,
    n_points: int = 1200,
    t_min: float = 1e-2,
    rtol: float = 1e-10,
    atol: float = 1e-14,
) -> FourPhaseResult:
    """Integrate the closed-form Stage-II gradient flow (Eqs. 19 and 22 with the ODEs of App. C).

    All four parameters ``(p, g, w, h)`` start at ``sigma_init`` (Eq. 12); the first layer is the exact
    previous-token head (``p^(1,1) = inf``, Lemma 5.3). The (p, g) and (w, h) flows are decoupled.

    Args:
        alpha_star: relative weight of the 4-gram component (> 0).
        w_star: target query-key weight, in (0, 1/sqrt 2) so that Eq. 22 is finite.
        L: sequence length (>= 5).
        sigma_init: initial value of every parameter, in (0, w_star).
        t_max: horizon.
        separate_qk: train w_Q, w_K separately (half-speed w, see :func:`rhs_ih`) instead of the single w_KQ.
        only_ih: integrate only the (decoupled) induction head; ``p``, ``g``, ``loss_g4`` are then ``nan``.
        n_points: number of log-spaced output times in ``[t_min, t_max]`` (plus t = 0).

    Returns:
        :class:`FourPhaseResult`.
    """
    check_bool("separate_qk", separate_qk)
    check_bool("only_ih", only_ih)
    check_int("n_points", n_points, minimum=2)
    _check_setting(alpha_star, w_star, L)
    check_range("sigma_init", sigma_init, 0.0, w_star, lo_open=True, hi_open=True)
    check_positive("t_max", t_max)
    check_positive("t_min", t_min)
    if t_min >= t_max:
        raise ValueError(f"t_min must be below t_max ({t_max}), got {t_min!r}")
    g_star, h_star = targets_star(alpha_star)

    def rhs(t, y):
        p, g, w, h = y
        dp, dg = (0.0, 0.0) if only_ih else rhs_g4(p, g, alpha_star, L)
        dw, dh = rhs_ih(w, h, alpha_star, w_star, L, separate_qk=separate_qk)
        return [dp, dg, dw, dh]

    events = {
        "T_g1": lambda t, y: y[1] - g_star,
        "T_o": lambda t, y: y[3] - h_star,
        "T_half_w": lambda t, y: y[2] - w_star / 2,
    }
    if only_ih:
        del events["T_g1"]
    res = integrate_flow(
        rhs,
        [sigma_init] * 4,
        (0.0, float(t_max)),
        events=events,
        log_time_grid=n_points,
        t_min=t_min,
        rtol=rtol,
        atol=atol,
    )
    if not res.success:
        raise RuntimeError(f"the Stage-II flow failed to integrate: {res.message}")
    p, g, w, h = res.y
    if only_ih:
        p, g = np.full_like(w, np.nan), np.full_like(w, np.nan)
        lg4 = np.full_like(w, np.nan)
    else:
        lg4 = np.array([loss_g4(pi, gi, alpha_star, L) for pi, gi in zip(p, g)])
    lih = loss_ih(w, h, alpha_star, w_star, L)
    setting = dict(
        alpha_star=alpha_star,
        w_star=w_star,
        L=L,
        sigma_init=sigma_init,
        t_max=t_max,
        separate_qk=separate_qk,
        only_ih=only_ih,
    )
    return FourPhaseResult(
        t=res.t,
        g=g,
        h=h,
        p=p,
        w=w,
        loss_g4=lg4,
        loss_ih=lih,
        loss=lg4 + lih,
        events=res.events,
        setting=setting,
    )


def phase_times(res: FourPhaseResult) -> dict:
    """Phase boundaries of Thm 5.5 measured on a trajectory.

    Returns:
        dict with ``T_I`` (L_G4 <= 1% of its start), ``T_g1`` (g reaches g*), ``T_o`` (h reaches h*, the
        observation time of the proof), ``T_II`` / ``T_50`` / ``T_III`` (L_IH <= 99% / 50% / 1% of L_IH(T_o),
        after T_o), ``T_half_w`` (w reaches w*/2), ``T_h2`` (turning point of h: its maximum after T_o), and
        ``ih_ratio_TI`` (L_IH(T_I) / L_IH(0), which Phase I says is >= 0.99).
    """
    check_instance("res", res, FourPhaseResult)
    t = res.t
    T_I = hitting_time(t, res.loss_g4, 0.01 * res.loss_g4[0]) if np.isfinite(res.loss_g4[0]) else float("nan")
    T_o = res.events.get("T_o", float("nan"))
    out = dict(
        T_I=T_I,
        T_g1=res.events.get("T_g1", float("nan")),
        T_o=T_o,
        T_half_w=res.events.get("T_half_w", float("nan")),
    )
    if np.isfinite(T_o):
        l_o = float(np.interp(T_o, t, res.loss_ih))
        for name, frac in (("T_II", 0.99), ("T_50", 0.5), ("T_III", 0.01)):
            out[name] = hitting_time(t, res.loss_ih, frac * l_o, after=T_o)
        after = t >= T_o
        out["T_h2"] = float(t[after][np.argmax(res.h[after])])
    else:
        out.update(T_II=float("nan"), T_50=float("nan"), T_III=float("nan"), T_h2=float("nan"))
    out["ih_ratio_TI"] = (
        float(np.interp(T_I, t, res.loss_ih) / res.loss_ih[0]) if np.isfinite(T_I) else float("nan")
    )
    return out


def plateau_time_scale(alpha_star: float, w_star: float, L: int, sigma_init: float) -> float:
    """The time scale of Thm 5.5, Phases II-III: ``(1+a)^2 L log(1/sigma_init) / w*^2``."""
    _check_setting(alpha_star, w_star, L)
    check_range("sigma_init", sigma_init, 0.0, 1.0, lo_open=True, hi_open=True)
    return (1 + alpha_star) ** 2 * L * np.log(1 / sigma_init) / w_star**2


def plateau_rate(alpha_star: float, w_star: float, L: int, *, separate_qk: bool = False) -> float:
    """Growth rate ``r`` of ``w`` on the plateau: ``dw/dt ~ r w`` with ``h`` at its ``w = 0`` optimum.

    ``r = 2 h*^2 w*^2 (1-w*^4)^{-2} / (L-2)`` (linearising App. C.2 at ``w = 0``, ``h = h* psi(w*^2)``); halved
    with ``separate_qk``. It carries the ``w*^2 / ((1+a)^2 L)`` of Thm 5.5 with an explicit constant.
    """
    check_bool("separate_qk", separate_qk)
    _check_setting(alpha_star, w_star, L)
    _, h_star = targets_star(alpha_star)
    r = 2 * h_star**2 * w_star**2 * (1 - w_star**4) ** -2 / (L - 2)
    return 0.5 * r if separate_qk else r


def plateau_loss(alpha_star: float, w_star: float, L: int) -> float:
    """Best induction-head loss with ``w = 0``: ``h*^2 [psi(2w*^2) - psi(w*^2)^2] / (2(L-2))`` (the plateau)."""
    _check_setting(alpha_star, w_star, L)
    _, h_star = targets_star(alpha_star)
    vs = w_star**2
    return float(h_star**2 * (psi(2 * vs) - psi(vs) ** 2) / (2 * (L - 2)))


def predicted_half_w_time(res: FourPhaseResult) -> float:
    """``T_o + log(w*/(2 w(T_o))) / r``: when w would reach w*/2 growing at the plateau rate from T_o."""
    check_instance("res", res, FourPhaseResult)
    s = res.setting
    T_o = res.events["T_o"]
    w_o = float(np.interp(T_o, res.t, res.w))
    r = plateau_rate(s["alpha_star"], s["w_star"], s["L"], separate_qk=s["separate_qk"])
    return T_o + np.log(s["w_star"] / (2 * w_o)) / r
