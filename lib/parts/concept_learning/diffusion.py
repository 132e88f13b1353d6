"""Variance-preserving diffusion: noise schedule, denoising loss, DDIM sampler, and batched training of an ensemble.

Notation (Kingma et al. 2021, "variational diffusion models"; Song et al. 2021, DDIM):

* log-SNR schedule ``gamma(t) = gamma_min + (gamma_max - gamma_min) t`` for ``t`` in [0, 1] (linear, fixed: the
  paper learns it, initialised at ``gamma_min = -5``, ``gamma_max = 10``);
* ``alpha_t^2 = sigmoid(-gamma(t))``, ``sigma_t^2 = sigmoid(gamma(t))``, so ``alpha_t^2 + sigma_t^2 = 1`` and
  ``SNR(t) = alpha_t^2 / sigma_t^2 = exp(-gamma(t))``;
* forward process ``z_t = alpha_t x + sigma_t eps``, ``eps ~ N(0, I)``;
* loss: ``E_{t ~ U[0,1], eps} || eps - eps_hat(z_t, t, c) ||^2`` (eps-prediction; for a linear schedule the VDM
  continuous-time loss is this times the constant ``(gamma_max - gamma_min) / 2``);
* DDIM (eta = 0): ``x_hat = (z_t - sigma_t eps_hat) / alpha_t`` (clipped to [-1, 1]),
  ``z_s = alpha_s x_hat + sigma_s eps_hat`` for ``s < t``.

:func:`train_ensemble` trains ``K`` independent copies of one architecture at once (one per colour signal and seed)
with :func:`lib.train.train_stacked` (``torch.func.vmap`` over stacked parameters): the models never interact (the
summed loss has a block-diagonal gradient, and AdamW acts elementwise). On a CPU this is about 1.5x faster than a
loop over 12 models and no faster for 2 to 6 (measured: the chapter's processes hold 3 or 6, and a per-model loop
costs the same 19-21 ms a model-step there); :class:`Ensemble` is the same stacked forward pass, used to sample
from all K models at the checkpoints.
"""

from __future__ import annotations

import copy
import ctypes
import ctypes.util
import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call, stack_module_state

from lib.config import (
    check_array,
    check_bool,
    check_callable,
    check_device,
    check_finite,
    check_instance,
    check_int,
    check_int_array,
    check_positive,
    check_range,
    check_seed,
    check_shape,
)
from lib.curves import distance_rebound, hitting_time, running_median
from lib.stats import bootstrap_paired_mean
from lib.train import train_stacked


@dataclass(frozen=True)
class VPSchedule:
    """Linear log-SNR schedule ``gamma(t) = gamma_min + (gamma_max - gamma_min) t`` (VDM, Kingma et al. 2021)."""

    gamma_min: float = -5.0
    gamma_max: float = 10.0

    def __post_init__(self):
        check_finite("gamma_min", self.gamma_min)
        check_finite("gamma_max", self.gamma_max)
        if not (np.isfinite(self.gamma_min) and np.isfinite(self.gamma_max) and self.gamma_max > self.gamma_min):
            raise ValueError(f"gamma_max must be finite and > gamma_min, got ({self.gamma_min}, {self.gamma_max})")

    def gamma(self, t: torch.Tensor) -> torch.Tensor:
        """log(sigma_t^2 / alpha_t^2) at times t (any shape)."""
        return self.gamma_min + (self.gamma_max - self.gamma_min) * t

    def alpha_sigma(self, t: torch.Tensor):
        """``(alpha_t, sigma_t)`` with ``alpha_t^2 = sigmoid(-gamma)``, ``sigma_t^2 = sigmoid(gamma)``."""
        g = self.gamma(t)
        return torch.sigmoid(-g).sqrt(), torch.sigmoid(g).sqrt()

    def snr(self, t: torch.Tensor) -> torch.Tensor:
        """Signal-to-noise ratio ``alpha_t^2 / sigma_t^2 = exp(-gamma(t))``."""
        return torch.exp(-self.gamma(t))


def q_sample(schedule: VPSchedule, x: torch.Tensor, t: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """Forward process ``z_t = alpha_t x + sigma_t eps``; x, eps (B, ...), t (B,) -> (B, ...)."""
    check_instance("schedule", schedule, VPSchedule)
    for name, value in (("x", x), ("t", t), ("eps", eps)):
        if not torch.is_tensor(value) or not value.is_floating_point():
            raise ValueError(f"{name} must be a float tensor, got {type(value).__name__}")
        check_array(name, value)
    if ((t < 0) | (t > 1)).any():
        raise ValueError("t must lie in [0, 1]")
    check_shape("t", t, (x.shape[0],))
    check_shape("eps", eps, tuple(x.shape))
    a, s = schedule.alpha_sigma(t.reshape(-1, *([1] * (x.dim() - 1))))
    return a * x + s * eps


def diffusion_loss(eps_fn, schedule: VPSchedule, x: torch.Tensor, cond: torch.Tensor, t: torch.Tensor,
                   eps: torch.Tensor) -> torch.Tensor:
    """Mean over batch and pixels of ``(eps - eps_fn(z_t, t, cond))^2`` with ``z_t`` from :func:`q_sample`.

    x, eps (B, C, S, S); t (B,); cond (B, cond_dim). ``eps_fn(z, t, cond)`` returns (B, C, S, S).
    """
    check_callable("eps_fn", eps_fn)
    if not torch.is_tensor(cond):
        raise ValueError(f"cond must be a tensor, got {type(cond).__name__}")
    check_array("cond", cond)
    z = q_sample(schedule, x, t, eps)
    return ((eps - eps_fn(z, t, cond)) ** 2).mean()


def _vdm_loss(model, x: torch.Tensor, cond: torch.Tensor, t: torch.Tensor, eps: torch.Tensor, eps0: torch.Tensor,
             *, data_noise: float = 1e-3) -> torch.Tensor:
    """The continuous-time VDM bound (Kingma et al. 2021, Eq. 11) in bits per dimension, averaged over the batch,
    for a denoiser with a learned linear schedule (``lib.models.unet.ScheduledUNet``), as Park et al.'s code trains.

    Three terms per image: diffusion ``0.5 gamma'(t) ||eps - eps_hat(z_t, t)||^2`` (``gamma' = |gamma_w|``);
    latent ``KL(q(z_1 | x) || N(0, I))``; reconstruction ``-log N(x; z_0 / alpha_0, data_noise^2)`` with
    ``z_0 = alpha_0 x + sigma_0 eps0``. x, eps, eps0 (B, C, S, S); t (B,) in [0, 1]; cond (B, cond_dim).
    Runs under ``torch.func.vmap``, so the tensors' values are not checked.
    """
    check_positive("data_noise", data_noise)
    if not (callable(getattr(model, "gamma", None)) and hasattr(model, "gamma_w")):
        raise ValueError("model must have a learned schedule (lib.models.unet.ScheduledUNet)")
    for name, value in (("x", x), ("cond", cond), ("t", t), ("eps", eps), ("eps0", eps0)):
        if not torch.is_tensor(value):
            raise ValueError(f"{name} must be a tensor, got {type(value).__name__}")
    bpd = 1.0 / (x[0].numel() * math.log(2.0))
    shape = (-1,) + (1,) * (x.dim() - 1)
    g = model.gamma(t).reshape(shape)
    z = torch.sigmoid(-g).sqrt() * x + torch.sigmoid(g).sqrt() * eps
    diffusion = 0.5 * model.gamma_w.abs() * ((eps - model(z, t, cond)) ** 2).flatten(1).sum(-1)
    var1 = torch.sigmoid(model.gamma(torch.ones((), dtype=x.dtype, device=x.device)))
    latent = (0.5 * (var1 + (1 - var1) * x ** 2 - torch.log(var1) - 1)).flatten(1).sum(-1)
    g0 = model.gamma(torch.zeros((), dtype=x.dtype, device=x.device))
    resid = (torch.sigmoid(g0) / torch.sigmoid(-g0)).sqrt() * eps0  # x - z_0 / alpha_0, up to its sign
    recon = (resid ** 2 / (2 * data_noise ** 2) + math.log(data_noise) + 0.5 * math.log(2 * math.pi)).flatten(1).sum(-1)
    return (bpd * (diffusion + latent + recon)).mean()


@torch.no_grad()
def ddim_sample(eps_fn, schedule: VPSchedule, noise: torch.Tensor, cond: torch.Tensor, *, steps: int = 25,
                clip: float | None = 1.0) -> torch.Tensor:
    """Deterministic DDIM sampler (eta = 0) from ``t = 1`` to ``t = 0``; returns the final ``x_hat`` (B, C, S, S).

    ``noise`` (B, C, S, S) is the starting ``z_1`` (fixing it across checkpoints gives common random numbers);
    ``cond`` (B, cond_dim); ``clip``: clip ``x_hat`` to [-clip, clip] at every step (None: no clipping).
    Implements ``z_s = alpha_s x_hat + sigma_s eps_hat`` on the grid ``t_i = 1 - i / steps``.
    """
    check_callable("eps_fn", eps_fn)
    check_instance("schedule", schedule, VPSchedule)
    check_array("noise", noise)
    check_array("cond", cond)
    check_int("steps", steps, minimum=1)
    if clip is not None:
        check_positive("clip", clip)
    check_shape("cond", cond, (noise.shape[0], None))
    ts = torch.linspace(1.0, 0.0, steps + 1, dtype=noise.dtype, device=noise.device)
    z = noise
    x_hat = None
    for i in range(steps + 1):
        t = ts[i].expand(noise.shape[0])
        a, s = schedule.alpha_sigma(ts[i])
        eps = eps_fn(z, t, cond)
        x_hat = (z - s * eps) / a
        if clip is not None:
            x_hat = x_hat.clamp(-clip, clip)
            eps = (z - a * x_hat) / s
        if i < steps:
            a_next, s_next = schedule.alpha_sigma(ts[i + 1])
            z = a_next * x_hat + s_next * eps
    return x_hat


class Ensemble:
    """K copies of one architecture with stacked parameters; ``eps(z, t, c)`` with a leading model axis K.

    Shapes: z (K, B, C, S, S), t (K, B), c (K, B, cond_dim) -> (K, B, C, S, S).
    """

    def __init__(self, models: list[torch.nn.Module]):
        check_instance("models", models, (list, tuple))
        if len(models) < 1:
            raise ValueError("models must be a non-empty list")
        self.K = len(models)
        params, buffers = stack_module_state(models)
        self.params = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
        self.buffers = buffers
        self.base = copy.deepcopy(models[0]).to("meta").eval()  # sampling: dropout (if any) off

    def _one(self, p, b, z, t, c):
        return functional_call(self.base, (p, b), (z, t, c))

    def eps(self, z, t, c):
        return torch.vmap(self._one)(self.params, self.buffers, z, t, c)

    def state_dicts(self) -> list[dict]:
        """The K models' parameters as ordinary state dicts (detached copies)."""
        return [{k: v[i].detach().clone() for k, v in self.params.items()} for i in range(self.K)]


def release_freed_memory() -> bool:
    """Hand the memory the allocator keeps after freeing it back to the system (glibc's ``malloc_trim``).

    Training the U-Nets frees and reallocates large activation buffers every step; glibc keeps the freed pages,
    so the resident memory of a long run climbs to several GB although little of it is in use. Returns whether
    the call was available (False off glibc, where nothing is done)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        trim = libc.malloc_trim if libc is not None else None
    except (OSError, AttributeError):
        trim = None
    if trim is None:
        return False
    trim(0)
    return True


def train_ensemble(models: list[torch.nn.Module], images: torch.Tensor, cond: torch.Tensor, *,
                   schedule: VPSchedule | None = None, steps: int = 2000, batch_size: int = 64, lr: float = 1e-3,
                   weight_decay: float = 0.01, checkpoints=(), prompt: torch.Tensor | None = None,
                   noise: torch.Tensor | None = None, readout=None, sample_steps: int = 25, keep_images: int = 8,
                   seed: int = 0, progress=None, trim_every: int = 200, data_range: str = "symmetric",
                   fresh_noise_seed: int | None = None, objective: str = "eps", clip_norm: float | None = None,
                   device="cpu") -> dict:
    """Train K denoisers (model k on ``images[k]``, ``cond[k]``) with AdamW on :func:`diffusion_loss`.

    Args:
        models: K freshly initialised modules with ``forward(z, t, c)`` (e.g. ``lib.models.unet.CondUNet``).
        images: (K, N, C, S, S) training images scaled to [-1, 1] (``data_range="symmetric"``) or left on
            [0, 1] (``"unit"``, as in Park et al.'s code); cond: (K, N, cond_dim).
        steps, batch_size, lr, weight_decay: AdamW training (fresh minibatch of each model's data every step).
        checkpoints: steps (0 <= c <= steps) after which every model samples ``noise.shape[0]`` images of
            ``prompt`` (K, cond_dim) with :func:`ddim_sample` from the SAME ``noise`` (n, C, S, S) and ``readout``
            maps the images (K * n, C, S, S) in [0, 1] to concept coordinates (K * n, heads).
        fresh_noise_seed: None (default) samples every checkpoint from ``noise`` (common random numbers); an int
            draws a fresh starting noise of ``noise``'s shape at every checkpoint from a generator seeded with
            it, as Park et al.'s code does (``noise`` then only gives the shape).
        objective: "eps" (default) the plain eps-prediction loss on the fixed ``schedule``; "vdm" the
            continuous-time VDM bound in bits per dimension (Kingma et al. 2021, Eq. 11: diffusion, latent and
            reconstruction terms, data noise 1e-3) with antithetic diffusion times, for models with a learned schedule
            (``lib.models.unet.ScheduledUNet``; ``schedule`` is then unused), as in Park et al.'s code; each
            model samples its checkpoints with its own learned schedule.
        clip_norm: clip each model's global gradient norm to this value (Park et al.'s code: 0.01); None: none.
            Models with dropout layers train with independent dropout draws per model, from torch's generator
            seeded with ``seed`` (the caller's global random state is left as it was).
        keep_images: how many of the sampled images per model and checkpoint to keep (float16, in [0, 1]).
        trim_every: every that many steps, return freed memory to the system (:func:`release_freed_memory`;
            0 never): without it the resident memory of a long run grows to several GB.
        device: where to train and sample (:func:`lib.config.check_device`): the data, the stacked models and
            the sampling noise are moved there; every minibatch, diffusion time and noise is drawn on the CPU from
            the seeded generator and moved, so a seed gives the same draws on every device. ``readout`` gets
            images on that device. The returned arrays (and state dicts) are on the CPU.

    Non-finite losses mark a model as diverged instead of raising.

    Returns:
        history dict of NumPy arrays: ``step`` (steps,), ``loss`` (steps, K), ``lr`` (steps,) the learning rate
        used, ``checkpoint`` (P,), ``concepts`` (P, K, n, heads) per-sample coordinates, ``images`` (P, K, keep,
        C, S, S), ``seconds`` (wall time), ``diverged`` (K,) bool and ``state_dicts`` (the K trained models'
        weights, on the CPU).
    """
    check_array("images", images)
    check_array("cond", cond)
    K = len(models)
    dev = check_device("device", device)
    check_int("steps", steps, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    check_int("sample_steps", sample_steps, minimum=1)
    check_int("keep_images", keep_images, minimum=0)
    check_int("trim_every", trim_every, minimum=0)
    if data_range not in ("symmetric", "unit"):
        raise ValueError(f"data_range must be 'symmetric' or 'unit', got {data_range!r}")
    if fresh_noise_seed is not None:
        check_seed("fresh_noise_seed", fresh_noise_seed)
    if objective not in ("eps", "vdm"):
        raise ValueError(f"objective must be 'eps' or 'vdm', got {objective!r}")
    if objective == "vdm" and not all(hasattr(m, "gamma_b") and hasattr(m, "gamma_w") for m in models):
        raise ValueError("models must have a learned schedule (lib.models.unet.ScheduledUNet) for objective='vdm'")
    if clip_norm is not None:
        check_positive("clip_norm", clip_norm)
    check_positive("lr", lr)
    check_positive("weight_decay", weight_decay, allow_zero=True)
    check_seed("seed", seed)
    check_shape("images", images, (K, None, None, None, None))
    check_shape("cond", cond, (K, images.shape[1], None))
    checkpoints = sorted(int(c) for c in checkpoints)
    for c in checkpoints:
        check_range("checkpoints", c, 0, steps)
    if checkpoints and (prompt is None or noise is None or readout is None):
        raise ValueError("checkpoints need prompt (K, cond_dim), noise (n, C, S, S) and readout")
    if prompt is not None:
        check_shape("prompt", prompt, (K, cond.shape[-1]))
    schedule = schedule or VPSchedule()
    ens = Ensemble(models)  # the stacked forward pass used for sampling at the checkpoints
    ens.params = {k: v.to(dev) for k, v in ens.params.items()}  # no-ops on the CPU
    ens.buffers = {k: v.to(dev) for k, v in ens.buffers.items()}
    images, cond = images.to(dev), cond.to(dev)
    prompt = None if prompt is None else prompt.to(dev)
    noise = None if noise is None else noise.to(dev)
    N = images.shape[1]
    ar = torch.arange(K, device=dev)[:, None]
    hist = {"checkpoint": [], "concepts": [], "images": []}
    start = time.perf_counter()
    noise_gen = None if fresh_noise_seed is None else torch.Generator().manual_seed(int(fresh_noise_seed))

    def evaluate(step, params):
        ens.params = params
        n = noise.shape[0]
        z0 = noise if noise_gen is None else torch.randn(noise.shape, generator=noise_gen, dtype=noise.dtype).to(dev)
        z = z0.expand(K, *noise.shape)
        c = prompt[:, None, :].expand(K, n, prompt.shape[-1])
        eps_fn = lambda zz, tt, cc: ens.eps(zz.view(K, n, *zz.shape[1:]), tt.view(K, n),  # noqa: E731
                                            cc.view(K, n, -1)).reshape(K * n, *zz.shape[1:])
        with torch.no_grad():
            if objective == "eps":
                x = ddim_sample(eps_fn, schedule, z.reshape(K * n, *noise.shape[1:]), c.reshape(K * n, -1),
                                steps=sample_steps)
            else:  # each model with its own learned schedule gamma_b + |gamma_w| t
                x = torch.cat([ddim_sample(lambda zz, tt, cc, k=k: ens._one(
                    {n_: v[k] for n_, v in params.items()}, {n_: v[k] for n_, v in ens.buffers.items()}, zz, tt, cc),
                    VPSchedule(float(params["gamma_b"][k]), float(params["gamma_b"][k] + params["gamma_w"][k].abs())),
                    z[k], c[k], steps=sample_steps) for k in range(K)])
            img = (((x + 1) / 2) if data_range == "symmetric" else x).clamp(0, 1)
            coords = readout(img).reshape(K, n, -1)
        hist["checkpoint"].append(step)
        hist["concepts"].append(coords.cpu().numpy())
        hist["images"].append(img.reshape(K, n, *img.shape[1:])[:, :keep_images].cpu().numpy().astype(np.float16))

    def batch(step, gen):  # model k: a fresh minibatch of its own images, diffusion times and noise
        idx = torch.randint(N, (K, batch_size), generator=gen).to(dev)  # drawn on the CPU, then moved
        x, c = images[ar, idx], cond[ar, idx]
        if objective == "vdm":  # antithetic times (one uniform offset per model), as in VDM
            t0 = torch.rand(K, 1, generator=gen, dtype=x.dtype) / batch_size
            t = (t0 + torch.arange(batch_size, dtype=x.dtype) / batch_size).to(dev)
            eps, eps0 = (torch.randn(x.shape, generator=gen, dtype=x.dtype).to(dev) for _ in range(2))
            return x, c, t, eps, eps0
        t = torch.rand(K, batch_size, generator=gen, dtype=x.dtype).to(dev)
        eps = torch.randn(x.shape, generator=gen, dtype=x.dtype).to(dev)
        alpha, sigma = schedule.alpha_sigma(t[..., None, None, None])
        return alpha * x + sigma * eps, t, c, eps

    def loss(model, b):  # Eq. of diffusion_loss (or vdm_loss), on model k's batch
        if objective == "vdm":
            return _vdm_loss(model, *b)
        z, t, c, eps = b
        return ((eps - model(z, t, c)) ** 2).mean()

    ck = set(checkpoints)
    if 0 in ck:
        evaluate(0, ens.params)

    def after_update(params, step, losses):  # the update of step `step` is training step step + 1
        if step + 1 in ck:
            evaluate(step + 1, params)
        if trim_every and (step + 1) % trim_every == 0:
            release_freed_memory()

    random_layers = any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in models[0].modules())
    with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
        torch.manual_seed(int(seed))  # the dropout draws, if any
        res = train_stacked(models, loss, lr=lr, steps=steps, optimizer="adamw", weight_decay=weight_decay,
                            batch_fn=batch, generator=torch.Generator().manual_seed(int(seed)),
                            callbacks=[after_update], progress=bool(progress), clip_norm=clip_norm,
                            randomness="different" if random_layers else "error", device=dev)
    # train_stacked logs the loss of each step's batch before its update, and one more batch after the last update
    out = {k: np.asarray(v) for k, v in hist.items()}
    out["step"] = res.history["step"][:-1] + 1
    out["loss"] = res.history["loss"][:-1]
    out["lr"] = np.full(len(out["step"]), lr)
    out["diverged"] = res.diverged
    out["seconds"] = time.perf_counter() - start
    out["state_dicts"] = [{k: v.cpu() for k, v in sd.items()} for sd in res.state_dicts()]
    return out


def log_checkpoints(first: int, last: int, n: int) -> list[int]:
    """``n`` roughly log-spaced distinct integer steps from ``first`` to ``last`` (inclusive), plus step 0."""
    check_int("first", first, minimum=1)
    check_int("last", last, minimum=first)
    check_int("n", n, minimum=1)
    steps = np.unique(np.round(np.geomspace(first, last, n)).astype(int))
    return [0, *steps.tolist()]


def train_concept_classifier(*, image_size: int = 8, variant: str = "easy", steps: int = 600, n: int = 60,
                             seed: int = 0, deltas=None, device="cpu"):
    """Train the concept read-out (``lib.models.cnn.ConceptCNN``, heads = colour, size) on all four classes.

    The colour signal of the training images is spread over ``deltas`` (default 18 values in [0.05, 0.9]) so one
    classifier reads out every signal level; ``n`` images per class and level. Returns ``(model, accuracy)``
    with the held-out accuracy per head (2,) on fresh images. ``device``: where to train (the model is returned
    there; the data and minibatch draws are made on the CPU and moved; the accuracy is a CPU array).
    """
    check_int("steps", steps, minimum=1)
    check_int("n", n, minimum=1)
    check_seed("seed", seed)
    if deltas is not None:
        check_array("deltas", deltas)
    import torch.nn.functional as F

    from lib.models.cnn import CNNConfig, ConceptCNN, concept_probs
    from lib.parts.concept_learning.shapes import CLASSES, circles_color_size
    from lib.train import train

    dev = check_device("device", device)
    deltas = np.linspace(0.05, 0.9, 18) if deltas is None else np.asarray(deltas, float)

    def data(s, m):
        xs, ls = [], []
        for i, d in enumerate(deltas):
            x, _, lab = circles_color_size(m, float(d), classes=CLASSES, image_size=image_size, variant=variant,
                                           seed=10_000 * s + i)
            xs.append(x)
            ls.append(lab)
        return torch.tensor(np.concatenate(xs), dtype=torch.float32), torch.tensor(np.concatenate(ls))

    x, lab = data(2 * seed + 1, n)
    x, lab = x.to(dev), lab.to(dev)
    torch.manual_seed(seed)
    model = ConceptCNN(CNNConfig(channels=(16, 16, 32))).float()  # float32 whatever torch's default dtype

    def batch(step, gen):  # a fresh minibatch of 128 images every step
        idx = torch.randint(len(x), (128,), generator=gen).to(dev)
        return x[idx], lab[idx]

    def loss(m, b):  # cross-entropy summed over the two heads (colour, size)
        return F.cross_entropy(m(b[0]).reshape(-1, 2), b[1].reshape(-1))

    model.train()
    train(model, loss, lr=1e-3, steps=steps, optimizer="adamw", weight_decay=0.01, batch_fn=batch,
          generator=torch.Generator().manual_seed(int(seed)), record_every=max(steps, 1), device=dev)
    model.eval()
    xt, lt = data(2 * seed + 2, max(n // 3, 4))
    acc = ((concept_probs(model, xt.to(dev)) > 0.5).long() == lt.to(dev)).float().mean(0).cpu().numpy()
    return model, acc


def concept_diffusion_experiment(deltas=(0.1, 0.8), seeds=(0,), image_size: int = 8, variant: str = "easy",
                                 n_per_class: int = 2048, channels=(16, 32), steps: int = 1500,
                                 batch_size: int = 64, lr: float = 1e-3, weight_decay: float = 0.01,
                                 n_checkpoints: int = 20, first_checkpoint: int = 10, samples: int = 32,
                                 sample_steps: int = 20, classifier_steps: int = 600, noise_seed: int = 1234,
                                 progress=None, threads: int = 1, data_range: str = "symmetric",
                                 zero_init: bool = False, residual_out: bool = False,
                                 fresh_noise: bool = False, dropout: float = 0.0, learned_schedule: bool = False,
                                 clip_norm: float | None = None, device: str = "cpu") -> dict:
    """Train one conditional denoiser per (colour signal, seed) on the classes 00, 01, 10 and read out the
    held-out prompt (blue, small) in concept space at log-spaced checkpoints (Yang et al. 2025, Fig. 6).

    All randomness is seeded. ``threads``: torch intra-op threads (1: the U-Nets are small, and one thread per
    process is fastest on a shared machine; run several processes instead, see :func:`merge_diffusion_runs`).

    Options for the training details of Park et al.'s released code (the defaults are the chapter's design):
    ``data_range="unit"`` trains on images in [0, 1] instead of [-1, 1]; ``zero_init`` and ``residual_out`` are
    the U-Net options of ``lib.models.unet.UNetConfig``; ``fresh_noise`` samples every checkpoint from a fresh
    starting noise instead of the same one; ``dropout`` the U-Net's dropout rate in training (the code: 0.1);
    ``learned_schedule`` trains each denoiser's own linear noise schedule with the VDM bound
    (``objective="vdm"`` of :func:`train_ensemble`); ``clip_norm`` clips each model's gradient norm (the code:
    0.01).

    ``device`` (``"cpu"``, ``"cuda"``, ...; :func:`lib.config.check_device`): where the classifier and the
    denoisers train and sample. Initial weights, data and every random draw are made on the CPU from the same
    seeds and moved there, and the returned arrays are CPU NumPy arrays, so a result looks the same whatever the
    device (equal up to floating-point round-off, not bit for bit, across devices).

    Returns:
        dict of NumPy arrays: ``deltas`` (D,) the colour signals, ``seeds`` (R,), ``checkpoint`` (P,) the
        sampling steps, ``concepts`` (D, R, P, samples, 2) with per-image ``(P(blue), P(small))``, ``images``
        (D, R, P, keep, 3, S, S) float16, ``loss`` (steps, D, R), ``diverged`` (D, R) bool (a non-finite loss),
        ``classifier_accuracy`` (2,) of the concept classifier, ``seconds`` (wall time); with
        ``learned_schedule`` also ``gamma_ends`` (D, R, 2), each trained schedule's ``(gamma(0), gamma(1))``.
    """
    from lib.models.cnn import concept_probs
    from lib.models.unet import CondUNet, ScheduledUNet, UNetConfig
    from lib.parts.concept_learning.shapes import HELD_OUT, TRAIN_CLASSES, circles_color_size, class_conditioning

    deltas = tuple(float(d) for d in check_array("deltas", deltas, ndim=1))
    seeds = tuple(int(s) for s in check_int_array("seeds", seeds, minimum=0))
    check_int_array("channels", channels, minimum=1)
    for name, value in (("steps", steps), ("n_checkpoints", n_checkpoints), ("first_checkpoint", first_checkpoint),
                        ("samples", samples), ("classifier_steps", classifier_steps)):
        check_int(name, value, minimum=1)
    check_seed("noise_seed", noise_seed)
    if progress is not None:
        check_bool("progress", progress)
    if data_range not in ("symmetric", "unit"):
        raise ValueError(f"data_range must be 'symmetric' or 'unit', got {data_range!r}")
    for name, value in (("zero_init", zero_init), ("residual_out", residual_out), ("fresh_noise", fresh_noise)):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be a bool, got {value!r}")
    check_bool("learned_schedule", learned_schedule)
    check_range("dropout", dropout, 0.0, 1.0, hi_open=True)
    if clip_norm is not None:
        check_positive("clip_norm", clip_norm)
    start = time.perf_counter()
    check_int("threads", threads, minimum=1)
    dev = check_device("device", device)
    torch.set_num_threads(threads)
    clf, acc = train_concept_classifier(image_size=image_size, variant=variant, steps=classifier_steps, device=dev)
    runs = [(d, s) for d in deltas for s in seeds]
    imgs, conds, prompts, models = [], [], [], []
    for d, s in runs:
        x, c, _ = circles_color_size(n_per_class, d, classes=TRAIN_CLASSES, image_size=image_size,
                                     variant=variant, seed=1000 * s + int(round(100 * d)))
        imgs.append(torch.tensor(2 * x - 1 if data_range == "symmetric" else x, dtype=torch.float32))
        conds.append(torch.tensor(c, dtype=torch.float32))
        prompts.append(torch.tensor(class_conditioning(d, [HELD_OUT])[0], dtype=torch.float32))
        torch.manual_seed(10_000 + s)  # the same initialisation for every colour signal of one seed
        unet = CondUNet(UNetConfig(channels=tuple(channels), zero_init=zero_init, residual_out=residual_out,
                                   dropout=float(dropout))).float()
        models.append(ScheduledUNet(unet) if learned_schedule else unet)
    noise = torch.randn(samples, 3, image_size, image_size, generator=torch.Generator().manual_seed(noise_seed),
                        dtype=torch.float32)
    hist = train_ensemble(models, torch.stack(imgs), torch.stack(conds), steps=steps, batch_size=batch_size,
                          lr=lr, weight_decay=weight_decay,
                          checkpoints=log_checkpoints(first_checkpoint, steps, n_checkpoints),
                          prompt=torch.stack(prompts), noise=noise, readout=lambda im: concept_probs(clf, im),
                          sample_steps=sample_steps, seed=12_345, progress=progress, data_range=data_range,
                          fresh_noise_seed=noise_seed + 1 if fresh_noise else None,
                          objective="vdm" if learned_schedule else "eps", clip_norm=clip_norm, device=dev)
    D, R = len(deltas), len(seeds)
    P = len(hist["checkpoint"])
    return dict(
        deltas=np.array(deltas), seeds=np.array(seeds), checkpoint=hist["checkpoint"],
        concepts=hist["concepts"].reshape(P, D, R, samples, -1).transpose(1, 2, 0, 3, 4),
        images=hist["images"].reshape(P, D, R, *hist["images"].shape[2:]).transpose(1, 2, 0, 3, 4, 5, 6),
        loss=hist["loss"].reshape(-1, D, R), diverged=hist["diverged"].reshape(D, R),
        classifier_accuracy=acc, seconds=time.perf_counter() - start,
        **({"gamma_ends": np.array([[float(sd["gamma_b"]), float(sd["gamma_b"] + sd["gamma_w"].abs())]
                                    for sd in hist["state_dicts"]]).reshape(D, R, 2)} if learned_schedule else {}),
    )


def merge_diffusion_runs(parts: list[dict]) -> dict:
    """One result from :func:`concept_diffusion_experiment` runs over disjoint colour signals with the same seeds
    and checkpoints (e.g. one process per signal with ``lib.sweep.sweep(..., n_jobs=2)``): the arrays are joined
    along the signal axis, in the order given.

    Returns:
        dict with the keys of :func:`concept_diffusion_experiment`, joined along the signal axis; ``seconds`` is
        the longest part's.
    """
    if not isinstance(parts, (list, tuple)) or not parts:
        raise ValueError("parts must be a non-empty list of concept_diffusion_experiment results")
    first = parts[0]
    for p in parts[1:]:
        if not np.array_equal(p["seeds"], first["seeds"]) or not np.array_equal(p["checkpoint"], first["checkpoint"]):
            raise ValueError("parts must share their seeds and checkpoints")
    deltas = np.concatenate([p["deltas"] for p in parts])
    if len(np.unique(deltas)) != len(deltas):
        raise ValueError(f"parts must hold disjoint colour signals, got {deltas.tolist()}")
    out = dict(first)
    for key, axis in (("deltas", 0), ("concepts", 0), ("images", 0), ("diverged", 0), ("loss", 1)):
        out[key] = np.concatenate([p[key] for p in parts], axis=axis)
    out["seconds"] = max(float(p["seconds"]) for p in parts)
    return out


def concept_mse(coords, target=(1.0, 1.0)) -> np.ndarray:
    """Squared distance ``||C - target||^2`` of concept-space points ``coords`` (..., k) to ``target`` (k,)."""
    coords = check_array("coords", coords)
    target = check_array("target", target, ndim=1)
    if coords.shape[-1:] != target.shape:
        raise ValueError(f"coords must end with dimension {target.shape[0]}, got shape {coords.shape}")
    return ((coords - target) ** 2).sum(-1)


def learned_step(values, steps, level: float) -> float:
    """First checkpoint step at which a concept counts as learned: the running median over 3 checkpoints of
    its read-out ``values`` (P,) reaches ``level`` (one-checkpoint spikes of the noisy classifier are ignored);
    ``inf`` if it never does. A thin wrapper of :func:`lib.curves.hitting_time`."""
    values = check_array("values", values, finite="some")
    steps = check_array("steps", steps)
    check_finite("level", level)
    return hitting_time(steps, values, level, direction="up", interpolate=False, window=3, never=np.inf)


def mse_rebound_bootstrap(concepts, *, n_boot: int = 500, window: int = 3, seed: int = 0) -> tuple[float, float]:
    """The MSE bump of one run and its sampling error over the generated images.

    ``concepts`` (P, n, 2): the per-image read-outs of one run at P checkpoints (the same n starting noises at
    every checkpoint). The bump is the largest rise of the ``window``-checkpoint running median of the
    concept-space MSE above its earlier minimum (:func:`lib.curves.distance_rebound`); the bootstrap resamples the
    n images with replacement (the same draw at every checkpoint, as the images are paired) ``n_boot`` times.
    Returns ``(bump, standard error)``.
    """
    c = check_array("concepts", concepts)
    if c.ndim != 3 or c.shape[-1] != 2 or c.shape[0] < 2 or c.shape[1] < 2:
        raise ValueError(f"concepts must have shape (P >= 2, n >= 2, 2), got {c.shape}")
    check_int("n_boot", n_boot, minimum=2)
    check_int("window", window, minimum=1)
    check_seed("seed", seed)

    def bump(points):  # points (..., P, 2) -> (...)
        return distance_rebound(running_median(concept_mse(points), window=window))

    return bootstrap_paired_mean(c, bump, n_boot=n_boot, seed=seed)
