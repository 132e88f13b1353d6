"""Chapter II.3: the induction head's true-softmax moments, the sample flow and online SGD of the
reparametrised model (Wang et al., App. C), against which the exp-linearised flow of chapter II.2 is compared.
"""

from __future__ import annotations

import numpy as np

from lib.config import (
    check_array,
    check_bool,
    check_finite,
    check_in,
    check_int,
    check_positive,
    check_range,
    check_seed,
)
from lib.flows import integrate_flow
from lib.maps import stop_at_divergence
from lib.parts.induction_heads.four_phases import _check_setting, mixed_target, reparam_forward, targets_star


# ------------------------------------------------------------------------- true softmax on sampled sequences
def ih_moments(w_values, X, w_star: float, *, softmax: str = "true", target: str | None = None):
    """Monte-Carlo moments of the induction head on a fixed sample, for each ``w`` (score weight ``w^2``).

    With ``A_w = sum_s att_w(s) x_s`` (model head without ``h``) and ``T`` the target head (without ``h*``), the
    loss is ``(h^2 E A_w^2 - 2 h h* E A_w T + h*^2 E T^2)/2``.

    Args:
        w_values: shape (n_w,).
        X: sample, shape (N, L).
        w_star: target weight.
        softmax: attention of the model, ``"true"`` or ``"exp"`` (``exp(z)/(L-2)``).
        target: attention of the target (default: same as ``softmax``).

    Returns:
        ``(EA2, EAT, ET2)``: arrays (n_w,), (n_w,) and a float.
    """
    check_in("softmax", softmax, ("true", "exp"))
    target = softmax if target is None else target
    check_in("target", target, ("true", "exp"))
    X = check_array("X", X)
    check_array("w_values", w_values)
    check_range("w_star", w_star, 0.0, 1 / np.sqrt(2), lo_open=True, hi_open=True)
    if X.ndim != 2 or X.shape[1] < 5:
        raise ValueError(f"X must have shape (N, L) with L >= 5, got {X.shape}")
    L = X.shape[1]
    prod = X[:, -1:] * X[:, : L - 2]
    vals = X[:, 1 : L - 1]

    def head(v, kind):
        z = v * prod
        if kind == "true":
            e = np.exp(z - z.max(1, keepdims=True))
            return (e * vals).sum(1) / e.sum(1)
        return (np.exp(z) * vals).sum(1) / (L - 2)

    T = head(w_star**2, target)
    EA2, EAT = [], []
    for w in np.atleast_1d(np.asarray(w_values, dtype=float)):
        A = head(w**2, softmax)
        EA2.append(np.mean(A**2))
        EAT.append(np.mean(A * T))
    return np.array(EA2), np.array(EAT), float(np.mean(T**2))


def ih_loss_from_moments(h, alpha_star: float, EA2, EAT, ET2):
    """Induction-head loss from :func:`ih_moments`: ``(h^2 EA2 - 2 h h* EAT + h*^2 ET2)/2``."""
    h = check_array("h", h, finite=True)
    EA2, EAT = check_array("EA2", EA2), check_array("EAT", EAT)
    check_finite("ET2", ET2)
    _, h_star = targets_star(alpha_star)
    return 0.5 * (h**2 * EA2 - 2 * h * h_star * EAT + h_star**2 * ET2)


def ih_sample_flow(
    X,
    alpha_star: float,
    w_star: float,
    sigma_init: float,
    t_max: float,
    *,
    softmax: str = "true",
    n_points: int = 300,
    n_grid: int = 121,
    separate_qk: bool = False,
):
    """Gradient flow of ``(w, h)`` on the sample-average induction-head loss over a fixed sample ``X`` (N, L).

    The loss is ``(h^2 EA2(v) - 2 h h* EAT(v) + h*^2 ET2)/2`` with ``v = w^2`` (see :func:`ih_moments`); the two
    moments are computed on a grid of ``n_grid`` values of ``v`` in ``[0, 0.7]`` and interpolated by cubic splines,
    so the flow ``dw/dt = -2w dL/dv``, ``dh/dt = -dL/dh`` costs nothing per step. ``softmax`` picks the true softmax
    or the exp-linearised one, for both target and model.

    Returns:
        ``(t, w, h, loss)`` arrays, shape (n_points+1,).
    """
    check_positive("sigma_init", sigma_init)
    check_positive("t_max", t_max)
    check_int("n_points", n_points, minimum=2)
    check_bool("separate_qk", separate_qk)
    from scipy.interpolate import CubicSpline

    check_in("softmax", softmax, ("true", "exp"))
    check_int("n_grid", n_grid, minimum=8)
    _, h_star = targets_star(alpha_star)
    v_grid = np.linspace(0.0, 0.7, n_grid)
    EA2, EAT, ET2 = ih_moments(np.sqrt(v_grid), X, w_star, softmax=softmax)
    sA2, sAT = CubicSpline(v_grid, EA2), CubicSpline(v_grid, EAT)
    dA2, dAT = sA2.derivative(), sAT.derivative()
    speed = 0.5 if separate_qk else 1.0

    def rhs(t, y):
        w, h = y
        v = min(w * w, 0.7)
        dLdv = 0.5 * h * h * dA2(v) - h * h_star * dAT(v)
        dLdh = h * sA2(v) - h_star * sAT(v)
        return [-speed * 2 * w * dLdv, -dLdh]

    res = integrate_flow(
        rhs, [sigma_init, sigma_init], (0.0, t_max), log_time_grid=n_points, t_min=1.0, rtol=1e-9, atol=1e-14
    )
    w, h = res.y
    v = np.minimum(w**2, 0.7)
    loss = 0.5 * (h**2 * sA2(v) - 2 * h * h_star * sAT(v) + h_star**2 * ET2)
    return res.t, w, h, loss


# ------------------------------------------------------------------------------------------ Monte-Carlo training
def online_sgd_reparam(
    *,
    alpha_star: float,
    w_star: float,
    L: int,
    sigma_init: float,
    steps: int,
    batch: int,
    lr_4gram: float,
    lr_ih: float,
    separate_qk: bool,
    seeds,
    eval_size: int = 2048,
    record_every: int = 10,
    qk_ratio: float = 1.0,
):
    """Online SGD of the true-softmax reparameterised model (Eq. 10, ``p^(1,1) = inf``) on fresh Gaussian batches.

    Every parameter starts at ``sigma_init``, except with ``separate_qk`` and ``qk_ratio != 1``: then
    ``w_Q(0) = qk_ratio sigma_init`` and ``w_K(0) = sigma_init / qk_ratio`` (an unbalanced start with the same
    product, for Lemma 5.4's balance ``w_Q^2 - w_K^2``).

    All seeds run in parallel (a leading seed dimension). Learning rates: ``lr_4gram`` for (p, g) and ``lr_ih`` for
    the induction head's weights; the two heads' losses are decoupled, so two rates are two time units. The
    time of step k is reported per head: ``t_4gram = k lr_4gram`` and ``t_ih = k lr_ih`` (the gradient-flow clock).

    Returns:
        dict of NumPy arrays: ``step`` (n_rec,), ``t_4gram``, ``t_ih`` (n_rec,), ``loss_g4``, ``loss_ih`` (S, n_rec)
        on a fixed evaluation sample of ``eval_size`` sequences, and the parameters ``g, p, h, w`` (S, n_rec)
        (``w = sqrt(|wq wk|)`` when separate), plus ``wq``, ``wk`` when separate; ``diverged`` (S,) and
        ``diverged_step`` (S,) (-1 where not), by :func:`lib.maps.stop_at_divergence` on the recorded losses and
        parameters (the book's rule, that of :func:`lib.train.train`): a seed's records after that step are NaN.
    """
    import torch

    _check_setting(alpha_star, w_star, L)
    check_positive("sigma_init", sigma_init)
    check_int("steps", steps, minimum=1)
    check_int("batch", batch, minimum=1)
    check_positive("lr_4gram", lr_4gram)
    check_positive("lr_ih", lr_ih)
    check_positive("qk_ratio", qk_ratio)
    check_bool("separate_qk", separate_qk)
    check_int("eval_size", eval_size, minimum=1)
    check_int("record_every", record_every, minimum=1)
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise ValueError(f"seeds must be a non-empty list of integers, got {seeds!r}")
    for s in seeds:
        check_seed("seeds", s)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must be a non-empty list of integers")
    S = len(seeds)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    eval_gen = torch.Generator().manual_seed(10_000 + seeds[0])
    Xe = torch.randn(eval_size, L, generator=eval_gen, dtype=torch.float64)
    Ye = mixed_target(Xe, alpha_star, w_star)
    names = ["g", "p", "h"] + (["wq", "wk"] if separate_qk else ["w"])
    start = {"wq": qk_ratio * sigma_init, "wk": sigma_init / qk_ratio}
    params = {
        k: torch.full((S,), float(start.get(k, sigma_init)), dtype=torch.float64, requires_grad=True)
        for k in names
    }
    lrs = {k: (lr_4gram if k in ("g", "p") else lr_ih) for k in names}
    rec = {k: [] for k in ["step", "loss_g4", "loss_ih"] + names}

    def evaluate(k):
        with torch.no_grad():
            out = reparam_forward(Xe, params)
            err = (out - Ye[None]) ** 2
            rec["step"].append(k)
            rec["loss_g4"].append((0.5 * err[..., 0].mean(1)).numpy().copy())
            rec["loss_ih"].append((0.5 * err[..., 1].mean(1)).numpy().copy())
            for n in names:
                rec[n].append(params[n].detach().numpy().copy())

    for k in range(steps + 1):
        if k % record_every == 0 or k == steps:
            evaluate(k)
        if k == steps:
            break
        X = torch.stack(
            [torch.randn(batch, L, generator=gg, dtype=torch.float64) for gg in gens]
        )  # (S, B, L)
        out = reparam_forward(X, params)  # (S, B, 2)
        tgt = mixed_target(X.reshape(S * batch, L), alpha_star, w_star).reshape(S, batch, 2)
        loss = 0.5 * ((out - tgt) ** 2).sum(-1).mean(1).sum()
        grads = torch.autograd.grad(loss, [params[n] for n in names])
        with torch.no_grad():
            for n, gr in zip(names, grads):
                params[n] -= lrs[n] * gr
    out = {k: np.array(v) for k, v in rec.items()}
    checked = stop_at_divergence({k: out[k] for k in ["loss_g4", "loss_ih"] + names}, loss_keys=["loss_g4", "loss_ih"],
                                 batch_ndim=1)
    if checked["diverged"].any():
        out.update({k: checked[k] for k in ["loss_g4", "loss_ih"] + names})
    diverged = checked["diverged"]
    diverged_step = np.where(diverged, out["step"][np.maximum(checked["diverged_step"], 0)], -1)
    for k in ["loss_g4", "loss_ih"] + names:
        out[k] = out[k].T  # (S, n_rec)
    if separate_qk:
        out["w"] = np.sqrt(np.abs(out["wq"] * out["wk"]))
    out["t_4gram"] = out["step"] * lr_4gram
    out["t_ih"] = out["step"] * lr_ih
    out["diverged"], out["diverged_step"] = diverged, diverged_step
    return out
