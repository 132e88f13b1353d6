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
from torch.func import functional_call

from lib.config import (
    check_array,
    check_device,
    check_finite,
    check_in,
    check_instance,
    check_int,
    check_int_array,
    check_positive,
    check_range,
    check_seed,
    renamed_key,
)
from lib.data.tokens import pattern_bank, pattern_sequences
from lib.models.shallow_attention import ShallowAttention, attention_mass
from lib.success import check_members, success_map


def vit_init(runs: int, d: int, kappa: float, delta: float, sigma: float, gen: torch.Generator):
    """The initial ``(W_K, W_Q)`` and ``W_V`` of the chapter: ``kappa (I + delta G / sqrt d)`` and
    ``I + sigma G' / sqrt d`` (our non-degenerate reading of the thesis's ``delta^2 I / c_0^2``)."""
    check_int("runs", runs, minimum=1)
    check_int("d", d, minimum=1)
    check_instance("gen", gen, torch.Generator)
    check_positive("kappa", kappa)
    check_positive("delta", delta, allow_zero=True)
    check_positive("sigma", sigma, allow_zero=True)
    eye = torch.eye(d)
    wk = kappa * (eye + delta * torch.randn(runs, d, d, generator=gen) / math.sqrt(d))
    wq = kappa * (eye + delta * torch.randn(runs, d, d, generator=gen) / math.sqrt(d))
    wv = eye + sigma * torch.randn(runs, d, d, generator=gen) / math.sqrt(d)
    return (wk, wq), wv


def make_data(seeds, n_train: int, n_test: int, cfg: dict, alpha_star: float, alpha_hash: float, noisy=None):
    """Per-seed training and test sets ``(R, n, L, d)`` with labels ``(R, n)`` and relevant-token masks.

    The pattern bank is fixed (seed 0); seed ``s`` draws its own samples, so the first ``N`` training examples
    of a seed are shared by every member that uses that seed.

    Args:
        noisy: ``(count, level)`` or None: in every sample, ``count`` tokens at random positions carry noise
            ``level N(0, I)`` instead of ``c_0 N(0, I)`` (the "tokens with significant noise" of Fig 2.5).

    Returns:
        dict with ``X, y, rel, idx, noise`` (training) and ``Xt, yt, relt, idxt, noiset`` (test); ``idx`` holds
        each token's pattern and ``noise`` marks the high-noise tokens ``(R, n, L)``.
    """
    check_array("seeds", seeds)
    check_int("n_train", n_train, minimum=1)
    check_int("n_test", n_test, minimum=1)
    if noisy is not None:
        if isinstance(noisy, str) or not hasattr(noisy, "__len__") or len(noisy) != 2:
            raise ValueError(f"noisy must be None or a pair (count, level), got {noisy!r}")
        check_int("noisy count", noisy[0], minimum=0, maximum=cfg["L"])
        check_positive("noisy level", noisy[1], allow_zero=True)
    P = pattern_bank(cfg["M"], cfg["d"], rng=0)
    out = {k: [] for k in ("X", "y", "rel", "idx", "noise", "Xt", "yt", "relt", "idxt", "noiset")}
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
            noise = torch.zeros(idx.shape, dtype=torch.bool)
            if noisy is not None and noisy[0] > 0:  # a separate stream: the clean tokens do not change
                g = np.random.default_rng([9000, int(s), int(bool(pre))])
                pos = np.argsort(g.random(idx.shape), axis=1)[:, : noisy[0]]
                np.put_along_axis(noise.numpy(), pos, True, axis=1)
                fresh = torch.as_tensor(g.standard_normal(X.shape), dtype=X.dtype)
                X = torch.where(noise[..., None], P.to(X.dtype)[idx] + noisy[1] * fresh, X)
            suf = "t" if pre else ""
            out["X" + suf].append(X)
            out["y" + suf].append(torch.as_tensor(y, dtype=X.dtype))
            out["rel" + suf].append(rel)
            out["idx" + suf].append(idx)
            out["noise" + suf].append(noise)
    return {k: torch.stack(v) for k, v in out.items()}


#: the token sparsifications of Figs 2.4-2.5 (none, random tokens, label-irrelevant tokens, noisy tokens)
REMOVALS = ("none", "random", "irrelevant", "noisy")

#: about how many hidden activations (runs x test samples x tokens x neurons) one chunk of a test evaluation
#: holds: larger passes spend their time writing and reading memory.
EVAL_ELEMENTS = 2**21


def keep_mask(idx, noise, kind: str, count: int, rng=None) -> torch.Tensor:
    """Which tokens survive the token sparsification of Fig 2.5: ``count`` tokens per sample are removed.

    Args:
        idx: pattern index of every token ``(n, L)`` (0, 1: discriminative; 2 and up: label-irrelevant).
        noise: boolean ``(n, L)``, the high-noise tokens.
        kind: ``"none"`` (keep all), ``"random"`` (any tokens), ``"irrelevant"`` (tokens of the patterns
            ``mu_3, ...``) or ``"noisy"`` (high-noise tokens), chosen uniformly among the candidates.
        count: tokens removed per sample (ignored for ``"none"``); every sample must have that many candidates.
        rng: NumPy generator or seed for the choice.

    Returns:
        boolean ``(n, L)``, True where the token is kept.
    """
    check_array("idx", idx)
    check_array("noise", noise)
    check_in("kind", kind, REMOVALS)
    idx, noise = torch.as_tensor(idx), torch.as_tensor(noise, dtype=torch.bool)
    if idx.dim() != 2 or noise.shape != idx.shape:
        raise ValueError(f"idx and noise must be equal (n, L) arrays, got {tuple(idx.shape)}, {tuple(noise.shape)}")
    check_int("count", count, minimum=0, maximum=idx.shape[1] - 1)
    keep = torch.ones(idx.shape, dtype=torch.bool)
    if kind == "none" or count == 0:
        return keep
    cand = {"random": torch.ones_like(keep), "irrelevant": idx >= 2, "noisy": noise}[kind]
    if (cand.sum(1) < count).any():
        raise ValueError(f"count={count} exceeds the {kind} tokens of some sample ({int(cand.sum(1).min())})")
    u = torch.as_tensor(np.random.default_rng(rng).random(idx.shape))
    order = torch.argsort(torch.where(cand, u, 2.0), dim=1)[:, :count]
    keep[torch.arange(idx.shape[0])[:, None], order] = False
    return keep


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
    remove=None,
    n_remove: int = 0,
    noisy=None,
    curve_members=None,
    record=None,
    device="cpu",
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
        remove: per-member token sparsification (one of :data:`REMOVALS` each, default ``"none"``), applied to
            the training and the test samples by the key mask and the query mask of the model.
        n_remove: tokens removed per sample by ``remove`` (:func:`keep_mask`).
        noisy: ``(count, level)`` high-noise tokens per sample (:func:`make_data`).
        curve_members: indices of the members whose test loss and attention mass are evaluated at the records
            before the last (default: all); the others' ``test_curve`` and ``mass`` are NaN there. Evaluating the
            test set is most of the cost of a run, and training does not depend on it.
        record: ``record(model, step) -> dict[str, tensor]`` of extra statistics (for instance copies of the
            weights), called at every recorded step before that step's update, as ``lib.train.train``'s hook; or
            None.
        device: where to train (:func:`lib.config.check_device`). Data, initial weights and every minibatch
            draw are made on the CPU from the same seeds and moved there; the arrays come back on the CPU.

    Returns:
        dict of numpy arrays: ``test_hinge`` (R,), ``train_hinge`` (R,), ``curve_t`` (K,), ``train_curve``,
        ``test_curve``, ``mass`` (R, K) (test attention mass on the label-relevant tokens), ``diverged`` (R,),
        ``A`` (R, L, L) final test attention of one sample, and ``idx`` its pattern ids; with ``record``,
        ``history``: each key of its dict stacked over the recorded steps ``(K, ...)`` (on the CPU).
    """
    check_int("n_remove", n_remove, minimum=0)
    if record is not None and not callable(record):
        raise ValueError(f"record must be callable or None, got {type(record).__name__}")
    Ns, seeds = check_members(Ns, seeds, "Ns")
    cfg = renamed_key(cfg, "eta", "lr", name="cfg")
    steps = cfg["steps"] if steps is None else steps
    check_int("steps", steps, minimum=1)
    check_int("record_every", record_every, minimum=1)
    sigma = cfg["sigma"] if sigma is None else sigma
    dev = check_device("device", device)
    R = len(Ns)
    every = torch.arange(R)
    if curve_members is None:
        curve_members = every
    else:
        curve_members = torch.as_tensor(np.asarray(curve_members, dtype=np.int64).reshape(-1))
        if len(curve_members) and (curve_members.min() < 0 or curve_members.max() >= R):
            raise ValueError(f"curve_members must be indices in [0, {R - 1}], got {curve_members.tolist()}")
    useeds = np.unique(seeds)
    data = make_data(useeds, int(Ns.max()), cfg["n_test"], cfg, alpha_star, alpha_hash, noisy=noisy)
    row = torch.as_tensor(np.searchsorted(useeds, seeds))
    keep = keept = None
    if remove is not None:
        if len(remove) != R:
            raise ValueError(f"remove must name one removal per member ({R}), got {len(remove)}")
        code = {k: i for i, k in enumerate(REMOVALS)}
        for k in remove:
            check_in("remove", k, REMOVALS)
        by_key = {
            (int(s), k, t): keep_mask(
                data["idx" + t][i], data["noise" + t][i], k, n_remove, [8000, int(s), code[k], len(t)]
            )
            for i, s in enumerate(useeds)
            for k in set(remove)
            for t in ("", "t")
        }
        keep = torch.stack([by_key[(int(s), k, "")] for s, k in zip(seeds, remove)])
        keept = torch.stack([by_key[(int(s), k, "t")] for s, k in zip(seeds, remove)])
    gen = torch.Generator().manual_seed(int(seeds.sum()) * 7919 + R)
    init_qk, init_v = vit_init(R, cfg["d"], cfg["kappa"], cfg["delta"], sigma, gen)
    model = ShallowAttention(
        R, cfg["d"], cfg["m"], freeze_qk=freeze_qk, init_qk=init_qk, init_v=init_v, init_o_std=0.01, generator=gen
    ).to(dev)  # initialised on the CPU, then moved (a no-op on the CPU)
    params = [p for p in model.parameters() if p.requires_grad]
    idx_test = data["idxt"][row][:, 0]  # kept on the CPU for the result
    data = {k: v.to(dev) for k, v in data.items()}
    row, every, curve_members = row.to(dev), every.to(dev), curve_members.to(dev)
    keep = None if keep is None else keep.to(dev)
    keept = None if keept is None else keept.to(dev)
    members_ar = torch.arange(R, device=dev)[:, None]
    Nt = torch.as_tensor(Ns).to(dev)
    B = cfg["batch"]
    Xt, yt, relt = data["Xt"][row], data["yt"][row], data["relt"][row]
    rec_t, tr, te, ms, hist = [], [], [], [], []
    diverged = np.zeros(R, bool)

    def masks(k):  # key mask (R, B, 1, L) and query mask (R, B, L) of the kept tokens, or None
        return (None, None) if k is None else (k[:, :, None, :], k)

    chunk = max(1, EVAL_ELEMENTS // (R * cfg["L"] * cfg["m"]))

    def evaluate(members):
        """Test hinge and attention mass (R,) of ``members`` (NaN for the others), and the members' attention
        (len(members), L, L) on test sample 0; the test set goes through in chunks so that the hidden layer
        (runs, chunk, L, m) stays small (the same per-sample values as one pass, a few times faster)."""
        lt, mt = torch.full((R,), float("nan"), device=dev), torch.full((R,), float("nan"), device=dev)
        if len(members) == 0:
            return lt, mt, None
        sub = {n: p.detach()[members] for n, p in model.named_parameters()}  # the members' own weights
        loss, mass, A0 = [], [], None
        with torch.no_grad():
            for s in range(0, Xt.shape[1], chunk):
                sl = slice(s, s + chunk)
                allowed, queries = masks(None if keept is None else keept[members, sl])
                out, A = functional_call(model, sub, (Xt[members, sl],),
                                         dict(allowed=allowed, queries=queries, return_attention=True))
                loss.append(torch.relu(1 - yt[members, sl] * out))
                mass.append(attention_mass(A, relt[members, sl]))
                A0 = A[:, 0] if A0 is None else A0
        lt[members] = torch.cat(loss, 1).mean(1)
        mt[members] = torch.cat(mass, 1).mean(1)
        return lt, mt, A0

    for t in range(steps + 1):
        if t % record_every == 0 or t == steps:
            lt, mt, A = evaluate(every if t == steps else curve_members)  # the last: every run's final values
            rec_t.append(t)
            te.append(lt.cpu().numpy())
            ms.append(mt.cpu().numpy())
            if record is not None:
                with torch.no_grad():
                    hist.append({k: torch.as_tensor(v).detach().cpu().numpy() for k, v in record(model, t).items()})
        if t == steps:
            break
        u = torch.rand(R, B, generator=gen).to(dev)  # drawn on the CPU generator, then moved
        ib = (u * Nt[:, None]).long()
        Xb = data["X"][row[:, None], ib]
        yb = data["y"][row[:, None], ib]
        allowed, queries = masks(None if keep is None else keep[members_ar, ib])
        loss_r = torch.relu(1 - yb * model(Xb, allowed=allowed, queries=queries)).mean(1)
        if t % record_every == 0:
            tr.append(loss_r.detach().cpu().numpy())
        grads = torch.autograd.grad(loss_r.sum(), params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= cfg["lr"] * g
            bad = ~torch.isfinite(loss_r.detach())
            diverged |= bad.cpu().numpy()
    with torch.no_grad():
        Xtr = data["X"][row]
        allowed, queries = masks(keep)
        ltr = torch.relu(1 - data["y"][row] * model(Xtr, allowed=allowed, queries=queries))
        mask = torch.arange(Xtr.shape[1], device=dev)[None] < Nt[:, None]
        train_h = (ltr * mask).sum(1) / Nt
    out = {
        "test_hinge": lt.cpu().numpy(),
        "train_hinge": train_h.cpu().numpy(),
        "curve_t": np.array(rec_t),
        "test_curve": np.stack(te, 1),
        "train_curve": np.stack(tr, 1),
        "mass": np.stack(ms, 1),
        "diverged": diverged,
        "A": A.cpu().numpy(),
        "idx": idx_test.numpy(),
    }
    if record is not None:
        out["history"] = {k: np.stack([h[k] for h in hist]) for k in hist[0]}
    return out


def _check_cfg(cfg) -> None:
    """``cfg`` must be a settings dict like ``settings.VIT``."""
    if not isinstance(cfg, dict) or any(k not in cfg for k in ("L", "M", "d", "steps")):
        raise ValueError(f"cfg must be a settings dict like settings.VIT, got {type(cfg).__name__}")


def sigma_map(cfg: dict, sigmas, Ns, seeds, alpha_star: float, alpha_hash: float, device="cpu") -> dict:
    """Final test hinge losses over a ``(sigma, N, seed)`` grid (Fig 2.1(b)), one batched run per ``sigma``.

    ``sigma`` is the initial error of ``W_V`` (:func:`vit_init`); the runs are those of :func:`train_vit` through
    :func:`lib.success.success_map`, with the losses recorded only at the start and the end; ``device`` as there.

    Returns:
        dict: ``test_hinge`` ``(len(sigmas), len(Ns), len(seeds))`` and ``diverged`` (the number of diverged runs).
    """
    _check_cfg(cfg)
    sigmas = check_array("sigmas", sigmas, ndim=1)
    if (sigmas < 0).any():
        raise ValueError(f"sigmas must be >= 0, got {sigmas.tolist()}")
    store = {}

    def run_fn(sig, N, S):
        store[float(sig)] = train_vit(N, S, cfg, alpha_star, alpha_hash, sigma=float(sig), record_every=cfg["steps"],
                                      device=device)
        return np.isfinite(store[float(sig)]["test_hinge"])

    success_map(run_fn, sigmas.tolist(), Ns, seeds)
    shape = (len(Ns), len(seeds))
    return {
        "test_hinge": np.stack([store[float(x)]["test_hinge"].reshape(shape) for x in sigmas]),
        "diverged": np.array(sum(int(store[float(x)]["diverged"].sum()) for x in sigmas)),
    }


def sparsification_runs(
    cfg: dict, seeds, N: int, alpha_star: float, alpha_hash: float, n_remove: int, noisy, record_every: int = 20,
    device="cpu",
) -> dict:
    """Fig 2.5: test hinge loss during training after each token sparsification of :data:`REMOVALS`.

    Every removal (and none) trains on the same samples of each seed; all ``len(REMOVALS) x len(seeds)`` runs
    share one batched call of :func:`train_vit`.

    Args:
        cfg: settings (``settings.VIT`` with the figure's ``L``, ``delta``, ``sigma``).
        seeds: repeats; N: training samples; alpha_star, alpha_hash: token fractions.
        n_remove: tokens removed per sample; noisy: ``(count, level)`` high-noise tokens per sample.
        record_every: steps between recorded test losses.
        device: where to train (:func:`train_vit`).

    Returns:
        dict: ``curve_t`` (K,), ``test_curve`` ``(len(REMOVALS), len(seeds), K)``, ``test_hinge``
        ``(len(REMOVALS), len(seeds))`` and ``diverged`` (the number of diverged runs).
    """
    _check_cfg(cfg)
    seeds = check_int_array("seeds", seeds, minimum=0)
    check_int("N", N, minimum=1)
    kinds = [k for k in REMOVALS for _ in seeds]
    r = train_vit(
        np.full(len(kinds), N), np.tile(seeds, len(REMOVALS)), cfg, alpha_star, alpha_hash,
        remove=kinds, n_remove=n_remove, noisy=noisy, record_every=record_every, device=device,
    )
    shape = (len(REMOVALS), len(seeds))
    return {
        "curve_t": r["curve_t"],
        "test_curve": r["test_curve"].reshape(shape + (-1,)),
        "test_hinge": r["test_hinge"].reshape(shape),
        "diverged": np.array(int(r["diverged"].sum())),
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


def token_noise(cfg: dict, alpha_star: float, alpha_hash: float, n: int = 2000, seed: int = 0) -> dict:
    """The token noise of the data: each token's distance to its own pattern, ``||x - mu_j||`` (the ``tau`` of
    the thesis's Eq. 2.5, which bounds it for every token), over ``n`` samples of ``cfg``'s data model.

    Returns:
        dict with the ``mean`` and ``max`` distance and ``kappa``, the minimum distance between patterns.
    """
    check_seed("seed", seed)
    check_int("n", n, minimum=1)
    P = pattern_bank(cfg["M"], cfg["d"], rng=0)
    g = np.random.default_rng([7000, int(seed)])
    y = np.where(g.random(n) < 0.5, 1.0, -1.0)
    X, idx = pattern_sequences(y, cfg["L"], alpha_star, alpha_hash, P, cfg["c0"], rng=g)
    dist = torch.linalg.vector_norm(X - P.to(X.dtype)[idx], dim=-1)
    kappa = float(torch.cdist(P, P).masked_fill(torch.eye(len(P), dtype=torch.bool), np.inf).min())
    return {"mean": float(dist.mean()), "max": float(dist.max()), "kappa": kappa}


def thm1_hypotheses(cfg: dict, alpha_star: float, alpha_hash: float, tau: float) -> dict:
    """The checkable hypotheses of Thm 1 (and so of Prop 1, and of Lemma A.3.1 behind Prop 2) for token noise
    ``tau``, as ``{description with the numbers: held}`` (the preconditions of a claim):
    ``tau < kappa / 4`` (Eq. 2.5, ``kappa = sqrt 2`` for orthonormal patterns), ``tau <= min(sigma, delta)``
    and Eq. 2.8, ``alpha_* >= alpha_# / (exp(-(delta + tau)) (1 - (sigma + tau)))``."""
    check_range("alpha_star", alpha_star, 0, 1)
    check_range("alpha_hash", alpha_hash, 0, 1)
    check_positive("tau", tau, allow_zero=True)
    kappa, sigma, delta = math.sqrt(2.0), float(cfg["sigma"]), float(cfg["delta"])
    denom = math.exp(-(delta + tau)) * (1.0 - (sigma + tau))
    eq28 = denom > 0 and alpha_star >= alpha_hash / denom
    return {
        f"token noise tau = {tau:.2f} < kappa/4 = {kappa / 4:.2f} (Eq. 2.5)": bool(tau < kappa / 4),
        f"tau = {tau:.2f} <= min(sigma, delta) = {min(sigma, delta):g} (Thm 1)": bool(tau <= min(sigma, delta)),
        f"Eq. 2.8: alpha_* = {alpha_star:g} >= alpha_# / (exp(-(delta + tau)) (1 - (sigma + tau))) "
        f"(the denominator is {denom:.2f})": bool(eq28),
    }


def lucky_dynamics(history: dict, a, patterns) -> dict:
    """Lemma A.3.1 measured on the weights that :func:`train_vit` recorded (``record`` returning ``W_O`` and,
    optionally, ``W_V``, ``W_K``, ``W_Q`` at every recorded step).

    A neuron is *lucky* (the thesis's ``W_{l,n}(0)``, ``U_{l,n}(0)``, Eqs. A.8-A.9) for the label-relevant
    pattern of label ``+1`` when its output weight ``a_i`` is positive and its initial row has a positive
    projection on the value feature ``p_1``, and for label ``-1`` when ``a_i < 0`` and ``w_{O,i}(0) . p_2 > 0``;
    the value features ``p_j`` are read as the patterns ``mu_j`` (``W_V(0)`` is the identity up to ``sigma``).

    Args:
        history: ``W_O`` ``(K, R, m, d)`` and, optionally, ``W_V``, ``W_K``, ``W_Q`` ``(K, R, d, d)``.
        a: the fixed output weights ``(m,)`` (only their signs matter).
        patterns: the patterns ``(M, d)``, ``M >= 2``; rows 0 and 1 are the label-relevant ones.

    Returns:
        dict: ``lucky`` ``(R, m)`` (1: lucky for ``p_1``, 2: for ``p_2``, 0: not lucky); ``along`` ``(K, R)``,
        the mean over lucky neurons of the growth ``w_{O,i}(t) . p_* - w_{O,i}(0) . p_*`` along their own
        feature (A.19); ``norm`` ``(K, R)``, the mean growth of ``||w_{O,i}(t)||`` (A.21); ``ratio``
        ``(K, R, m)``, ``max_{p != p_*} w_{O,i}(t) . p / w_{O,i}(t) . p_*`` (A.20; NaN for the others); and,
        where recorded, ``value`` ``(K, R, M)``, the change of ``W_V mu_j`` along ``mu_j`` (Claim 3), and
        ``key``, ``query`` ``(K, R, M)``, the changes of ``||W_K mu_j||`` and ``||W_Q mu_j||`` (Claim 2).
    """
    if not isinstance(history, dict) or "W_O" not in history:
        raise ValueError("history must be a dict with the recorded 'W_O' (train_vit's record)")
    wo = check_array("history['W_O']", history["W_O"], ndim=4)
    a = check_array("a", a, ndim=1)
    P = check_array("patterns", patterns, ndim=2)
    K, R, m, d = wo.shape
    if a.size != m:
        raise ValueError(f"a must have one weight per neuron ({m}), got {a.size}")
    if P.shape[0] < 2 or P.shape[1] != d:
        raise ValueError(f"patterns must have shape (M >= 2, {d}), got {P.shape}")
    proj = wo @ P.T  # (K, R, m, M)
    lucky = np.where((a > 0) & (proj[0, ..., 0] > 0), 1, np.where((a < 0) & (proj[0, ..., 1] > 0), 2, 0))
    own = np.where(lucky == 2, 1, 0)  # the feature each neuron is lucky for
    along_i = np.take_along_axis(proj, np.broadcast_to(own[None, ..., None], (K, R, m, 1)), -1)[..., 0]
    others = np.where(np.arange(P.shape[0]) == own[None, ..., None], -np.inf, proj).max(-1)
    is_lucky = lucky > 0
    count = np.maximum(is_lucky.sum(-1), 1)
    nrm = np.linalg.norm(wo, axis=-1)
    out = {
        "lucky": lucky,
        "along": ((along_i - along_i[0]) * is_lucky).sum(-1) / count,
        "norm": ((nrm - nrm[0]) * is_lucky).sum(-1) / count,
        "ratio": np.where(is_lucky, others / np.where(is_lucky, along_i, 1.0), np.nan),
    }
    for key in ("W_V", "W_K", "W_Q"):
        if key in history:
            W = check_array(f"history[{key!r}]", history[key], ndim=4)
            if W.shape != (K, R, d, d):
                raise ValueError(f"history[{key!r}] must have shape ({K}, {R}, {d}, {d}), got {W.shape}")
            v = np.einsum("krij,mj->krmi", W, P)  # W mu_j
            if key == "W_V":
                out["value"] = np.einsum("krmi,mi->krm", v - v[0], P)
            else:
                n = np.linalg.norm(v, axis=-1)
                out["key" if key == "W_K" else "query"] = n - n[0]
    return out


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


__all__ = [
    "REMOVALS", "vit_init", "make_data", "keep_mask", "train_vit", "sigma_map", "sparsification_runs",
    "first_step_below", "thm1_bound", "prop1_bound", "token_noise", "thm1_hypotheses", "lucky_dynamics",
    "r_squared"]
