"""Shallow vision transformers (chapter 2 of Li's thesis): pattern data, SGD on (2.1), success maps.

The model is :class:`lib.models.shallow_attention.ShallowAttention`; the runs of one call (seeds, sample sizes,
frozen or trained attention) share a leading axis and are trained together by minibatch SGD on the hinge loss
(summing the runs' losses gives each run its own gradient, exactly as ``lib.train.train_stacked`` would; a
hand-written loop keeps the per-run minibatch indices ``floor(u N_r)`` that the success maps need).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from lib.config import check_array, check_finite, check_int, check_positive
from lib.data.tokens import pattern_bank, pattern_sequences
from lib.models.shallow_attention import ShallowAttention, attention_mass
from lib.success import check_members


def vit_init(runs: int, d: int, kappa: float, delta: float, sigma: float, gen: torch.Generator):
    """The initial ``(W_K, W_Q)`` and ``W_V`` of the chapter: ``kappa (I + delta G / sqrt d)`` and
    ``I + sigma G' / sqrt d`` (our non-degenerate reading of the thesis's ``delta^2 I / c_0^2``)."""
    check_positive("kappa", kappa)
    check_positive("delta", delta, allow_zero=True)
    check_positive("sigma", sigma, allow_zero=True)
    eye = torch.eye(d)
    wk = kappa * (eye + delta * torch.randn(runs, d, d, generator=gen) / math.sqrt(d))
    wq = kappa * (eye + delta * torch.randn(runs, d, d, generator=gen) / math.sqrt(d))
    wv = eye + sigma * torch.randn(runs, d, d, generator=gen) / math.sqrt(d)
    return (wk, wq), wv


def make_data(seeds, n_train: int, n_test: int, cfg: dict, alpha_star: float, alpha_hash: float):
    """Per-seed training and test sets ``(R, n, L, d)`` with labels ``(R, n)`` and relevant-token masks.

    The pattern bank is fixed (seed 0); seed ``s`` draws its own samples, so the first ``N`` training examples
    of a seed are shared by every member that uses that seed.
    """
    check_int("n_train", n_train, minimum=1)
    check_int("n_test", n_test, minimum=1)
    P = pattern_bank(cfg["M"], cfg["d"], rng=0)
    out = {k: [] for k in ("X", "y", "rel", "Xt", "yt", "relt", "idxt")}
    for s in seeds:
        for pre, n in (("", n_train), ("t", n_test)):
            if pre:  # test set: one draw from its own stream
                g = np.random.default_rng([5000, int(s)])
                y = np.where(g.random(n) < 0.5, 1.0, -1.0)
                X, idx = pattern_sequences(y, cfg["L"], alpha_star, alpha_hash, P, cfg["c0"], rng=g)
            else:  # training example i has its own stream: the first N do not depend on n_train
                parts = []
                for i in range(n):
                    g = np.random.default_rng([1000, int(s), i])
                    yi = np.where(g.random(1) < 0.5, 1.0, -1.0)
                    parts.append((yi,) + pattern_sequences(yi, cfg["L"], alpha_star, alpha_hash, P, cfg["c0"], rng=g))
                y = np.concatenate([q[0] for q in parts])
                X = torch.cat([q[1] for q in parts])
                idx = torch.cat([q[2] for q in parts])
            rel = torch.as_tensor(np.where(y[:, None] > 0, idx.numpy() == 0, idx.numpy() == 1))
            suf = "t" if pre else ""
            out["X" + suf].append(X)
            out["y" + suf].append(torch.as_tensor(y, dtype=X.dtype))
            out["rel" + suf].append(rel)
            if pre:
                out["idxt"].append(idx)
    return {k: torch.stack(v) for k, v in out.items()}


def train_vit(
    Ns,
    seeds,
    cfg: dict,
    alpha_star: float,
    alpha_hash: float,
    *,
    freeze_qk=False,
    sigma=None,
    steps=None,
    record_every: int = 10,
) -> dict:
    """Train one network per member ``(Ns[r], seeds[r])`` by SGD on the hinge loss, all at once.

    Args:
        Ns: training-set sizes per member; member ``r`` samples its minibatches from the first ``Ns[r]``
            examples of seed ``seeds[r]``.
        seeds: integer seeds per member (data and initialisation).
        cfg: settings (``settings.VIT``).
        alpha_star, alpha_hash: token fractions.
        freeze_qk: keep ``W_K, W_Q`` at their initial values (Fig 2.3, Prop 1).
        sigma: initial ``W_V`` error (default ``cfg["sigma"]``).
        steps: SGD steps (default ``cfg["steps"]``).
        record_every: steps between recorded train/test losses and attention masses.

    Returns:
        dict of numpy arrays: ``test_hinge`` (R,), ``train_hinge`` (R,), ``curve_t`` (K,), ``train_curve``,
        ``test_curve``, ``mass`` (R, K) (test attention mass on the label-relevant tokens), ``diverged`` (R,),
        ``A`` (R, L, L) final test attention of one sample, and ``idx`` its pattern ids.
    """
    Ns, seeds = check_members(Ns, seeds, "Ns")
    steps = cfg["steps"] if steps is None else steps
    check_int("steps", steps, minimum=1)
    check_int("record_every", record_every, minimum=1)
    sigma = cfg["sigma"] if sigma is None else sigma
    R = len(Ns)
    useeds = np.unique(seeds)
    data = make_data(useeds, int(Ns.max()), cfg["n_test"], cfg, alpha_star, alpha_hash)
    row = torch.as_tensor(np.searchsorted(useeds, seeds))
    gen = torch.Generator().manual_seed(int(seeds.sum()) * 7919 + R)
    init_qk, init_v = vit_init(R, cfg["d"], cfg["kappa"], cfg["delta"], sigma, gen)
    model = ShallowAttention(
        R, cfg["d"], cfg["m"], freeze_qk=freeze_qk, init_qk=init_qk, init_v=init_v, init_o_std=0.01, generator=gen
    )
    params = [p for p in model.parameters() if p.requires_grad]
    Nt = torch.as_tensor(Ns)
    B = cfg["batch"]
    Xt, yt, relt = data["Xt"][row], data["yt"][row], data["relt"][row]
    rec_t, tr, te, ms = [], [], [], []
    diverged = np.zeros(R, bool)

    def evaluate():
        with torch.no_grad():
            out = model(Xt)
            A = model.attention(Xt)
            return torch.relu(1 - yt * out).mean(1), attention_mass(A, relt).mean(1), A

    for t in range(steps + 1):
        if t % record_every == 0 or t == steps:
            lt, mt, _ = evaluate()
            rec_t.append(t)
            te.append(lt.numpy())
            ms.append(mt.numpy())
        if t == steps:
            break
        u = torch.rand(R, B, generator=gen)
        ib = (u * Nt[:, None]).long()
        Xb = data["X"][row[:, None], ib]
        yb = data["y"][row[:, None], ib]
        loss_r = torch.relu(1 - yb * model(Xb)).mean(1)
        if t % record_every == 0:
            tr.append(loss_r.detach().numpy())
        grads = torch.autograd.grad(loss_r.sum(), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= cfg["eta"] * g
            bad = ~torch.isfinite(loss_r.detach())
            diverged |= bad.numpy()
    lt, _, A = evaluate()
    with torch.no_grad():
        Xtr = data["X"][row]
        ltr = torch.relu(1 - data["y"][row] * model(Xtr))
        mask = torch.arange(Xtr.shape[1])[None] < Nt[:, None]
        train_h = (ltr * mask).sum(1) / Nt
    return {
        "test_hinge": lt.numpy(),
        "train_hinge": train_h.numpy(),
        "curve_t": np.array(rec_t),
        "test_curve": np.stack(te, 1),
        "train_curve": np.stack(tr, 1),
        "mass": np.stack(ms, 1),
        "diverged": diverged,
        "A": A[:, 0].numpy(),
        "idx": data["idxt"][row][:, 0].numpy(),
    }


def first_step_below(curve_t, curves, threshold: float) -> np.ndarray:
    """First recorded step at which each curve is ``<= threshold`` (NaN if never)."""
    check_positive("threshold", threshold)
    t = check_array("curve_t", curve_t, ndim=1)
    c = check_array("curves", curves, ndim=2, finite="some")
    if c.shape[1] != t.size:
        raise ValueError(f"curves must have shape (runs, {t.size}) to match curve_t, got {c.shape}")
    hit = c <= threshold
    out = np.where(hit.any(1), t[np.argmax(hit, 1)], np.nan)
    return out.astype(float)


def thm1_bound(alpha_star, sigma, tau=0.0, zeta=1.0, c1=1.0, c2=1.0):
    """Thm 1's sample-size scaling ``(alpha_* - c'(1 - zeta) - c''(sigma + tau))^-2`` (constants set to 1;
    ``inf`` where the bracket is not positive)."""
    alpha_star, sigma = check_array("alpha_star", alpha_star), check_array("sigma", sigma)
    tau, zeta = check_array("tau", tau), check_array("zeta", zeta)
    check_finite("c1", c1)
    check_finite("c2", c2)
    gap = alpha_star - c1 * (1 - zeta) - c2 * (sigma + tau)
    return np.where(gap > 0, 1.0 / np.maximum(gap, 1e-12) ** 2, np.inf)


def prop1_bound(alpha_star, sigma, tau=0.0):
    """Prop 1's frozen-attention scaling ``(alpha_* (alpha_* - sigma - tau))^-2`` (``inf`` where not
    positive)."""
    a = check_array("alpha_star", alpha_star)
    gap = a * (a - check_array("sigma", sigma) - check_array("tau", tau))
    return np.where(gap > 0, 1.0 / np.maximum(gap, 1e-12) ** 2, np.inf)


def r_squared(x, y) -> float:
    """``R^2`` of the least-squares line through ``(x, y)`` (NaN pairs dropped)."""
    x, y = check_array("x", x, ndim=1, finite="some"), check_array("y", y, ndim=1, finite="some")
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.size} and {y.size}")
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 3:
        return float("nan")
    res = y - np.polyval(np.polyfit(x, y, 1), x)
    return float(1 - res.var() / max(y.var(), 1e-300))


__all__ = ["vit_init", "make_data", "train_vit", "first_step_below", "thm1_bound", "prop1_bound", "r_squared"]
