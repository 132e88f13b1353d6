"""A small conditional U-Net denoiser for tiny images (nanoGPT-style: one file, read top to bottom).

``eps_hat = CondUNet(cfg)(z_t, t, c)``: the noisy image ``z_t`` (B, C, S, S), the diffusion time ``t`` (B,) in
[0, 1] and a conditioning vector ``c`` (B, cond_dim) give the predicted noise (B, C, S, S).

Layout (Yang et al. 2025, App. G.2, shrunk): a sinusoidal time embedding and a 2-layer MLP embedding of ``c`` are
summed into one vector added inside every residual block; the condition embedding is also added to the feature map
after every downsampling (as in the paper). Each resolution level has ``blocks`` residual blocks
(GroupNorm -> GELU -> 3x3 conv, twice); there is no attention (the paper has one self-attention layer in the
bottleneck; at 4x4 it adds little).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import check_array, check_bool, check_finite, check_instance, check_int, check_positive, check_range


@dataclass
class UNetConfig:
    in_channels: int = 3
    channels: tuple = (32, 64)  # feature width of each resolution level; len(channels) - 1 downsamplings
    blocks: int = 1  # residual blocks per level (the paper uses 2)
    cond_dim: int = 4  # (radius, R, G, B)
    emb_dim: int = 64
    groups: int = 8  # GroupNorm groups (the paper uses LayerNorm = 1 group)
    zero_init: bool = False  # zero the last conv of every residual block and the output conv (Park et al.'s code)
    residual_out: bool = False  # return z + output, so eps_hat = z_t at initialisation (Park et al.'s code)
    dropout: float = 0.0  # dropout before the last conv of every residual block, in training (Park et al.: 0.1)

    def __post_init__(self):
        check_array("channels", self.channels)
        check_int("in_channels", self.in_channels, minimum=1)
        check_int("blocks", self.blocks, minimum=1)
        check_int("cond_dim", self.cond_dim, minimum=1)
        check_int("emb_dim", self.emb_dim, minimum=2)
        check_int("groups", self.groups, minimum=1)
        if len(self.channels) < 1 or any(int(c) < 1 or int(c) % self.groups for c in self.channels):
            raise ValueError(f"channels must be a non-empty tuple of multiples of groups={self.groups}, "
                             f"got {self.channels!r}")
        for name in ("zero_init", "residual_out"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        check_range("dropout", self.dropout, 0.0, 1.0, hi_open=True)
        if self.emb_dim % 2:
            raise ValueError(f"emb_dim must be even, got {self.emb_dim}")


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10_000.0) -> torch.Tensor:
    """Sinusoidal embedding of times ``t`` (B,) in [0, 1] -> (B, dim) (Vaswani et al. 2017, scaled by 1000)."""
    check_instance("t", t, torch.Tensor)
    # no test of the values: the U-Net calls this inside torch.func.vmap, where data-dependent branches fail
    if not isinstance(t, torch.Tensor) or t.ndim != 1 or t.numel() == 0:
        raise ValueError(f"t must be a non-empty 1-D tensor of times, got {t!r}")
    check_int("dim", dim, minimum=2)
    check_positive("max_period", max_period)
    if max_period <= 1:
        raise ValueError(f"max_period must be > 1, got {max_period}")
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=t.dtype, device=t.device) / half)
    args = 1000.0 * t[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    """x + conv(dropout(GELU(GN(conv(GELU(GN(x))) + proj(emb))))), with a 1x1 skip when the width changes.

    ``dropout`` > 0 adds a dropout layer (active in training mode only; under ``torch.func.vmap`` it needs
    ``randomness="different"``); 0 adds none, so the module is exactly the one without the option.
    """

    def __init__(self, cin: int, cout: int, emb_dim: int, groups: int, zero_init: bool = False,
                 dropout: float = 0.0):
        check_bool("zero_init", zero_init)
        check_range("dropout", dropout, 0.0, 1.0, hi_open=True)
        super().__init__()
        check_int("groups", groups, minimum=1)
        for name, value in (("cin", cin), ("cout", cout)):
            check_int(name, value, minimum=1)
            if value % groups:
                raise ValueError(f"{name} must be a multiple of groups={groups}, got {value}")
        check_int("emb_dim", emb_dim, minimum=1)
        self.norm1 = nn.GroupNorm(groups, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.emb = nn.Linear(emb_dim, cout)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        if zero_init:  # the block starts as its skip path
            nn.init.zeros_(self.conv2.weight)
            nn.init.zeros_(self.conv2.bias)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()
        self.drop = nn.Dropout(dropout) if dropout > 0 else None

    def forward(self, x, emb):
        h = self.conv1(F.gelu(self.norm1(x)))
        h = h + self.emb(emb)[:, :, None, None]
        h = F.gelu(self.norm2(h))
        h = self.conv2(self.drop(h) if self.drop is not None else h)
        return h + self.skip(x)


class CondUNet(nn.Module):
    """Conditional U-Net; see the module docstring. ``forward(z (B,C,S,S), t (B,), c (B,cond_dim)) -> (B,C,S,S)``.

    ``S`` must be divisible by ``2 ** (len(channels) - 1)``.
    """

    def __init__(self, cfg: UNetConfig | None = None):
        check_instance("cfg", cfg, (UNetConfig, type(None)))
        super().__init__()
        cfg = cfg or UNetConfig()
        self.cfg = cfg
        ch, E, G = tuple(int(c) for c in cfg.channels), cfg.emb_dim, cfg.groups
        Z = (cfg.zero_init, float(cfg.dropout))  # the residual blocks' options
        self.time_mlp = nn.Sequential(nn.Linear(E, E), nn.GELU(), nn.Linear(E, E))
        self.cond_mlp = nn.Sequential(nn.Linear(cfg.cond_dim, E), nn.GELU(), nn.Linear(E, E))
        self.conv_in = nn.Conv2d(cfg.in_channels, ch[0], 3, padding=1)
        self.down, self.downsample, self.cond_after_down = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        cin = ch[0]
        for i, c in enumerate(ch):
            self.down.append(nn.ModuleList([ResBlock(cin if b == 0 else c, c, E, G, *Z) for b in range(cfg.blocks)]))
            cin = c
            if i < len(ch) - 1:
                self.downsample.append(nn.Conv2d(c, ch[i + 1], 3, stride=2, padding=1))
                self.cond_after_down.append(nn.Linear(E, ch[i + 1]))
                cin = ch[i + 1]
        self.mid = ResBlock(ch[-1], ch[-1], E, G, *Z)
        self.up, self.upsample = nn.ModuleList(), nn.ModuleList()
        for i in reversed(range(len(ch))):
            self.up.append(nn.ModuleList([ResBlock(2 * ch[i] if b == 0 else ch[i], ch[i], E, G, *Z)
                                          for b in range(cfg.blocks)]))
            if i > 0:
                self.upsample.append(nn.Conv2d(ch[i], ch[i - 1], 3, padding=1))
        self.norm_out = nn.GroupNorm(G, ch[0])
        self.conv_out = nn.Conv2d(ch[0], cfg.in_channels, 3, padding=1)
        if cfg.zero_init:
            nn.init.zeros_(self.conv_out.weight)
            nn.init.zeros_(self.conv_out.bias)

    def forward(self, z, t, c):
        cond = self.cond_mlp(c)
        emb = self.time_mlp(timestep_embedding(t, self.cfg.emb_dim)) + cond
        h = self.conv_in(z)
        skips = []
        for i, blocks in enumerate(self.down):
            for block in blocks:
                h = block(h, emb)
            skips.append(h)
            if i < len(self.downsample):
                h = self.downsample[i](h) + self.cond_after_down[i](cond)[:, :, None, None]
        h = self.mid(h, emb)
        for j, blocks in enumerate(self.up):
            h = torch.cat([h, skips.pop()], dim=1)
            for block in blocks:
                h = block(h, emb)
            if j < len(self.upsample):
                h = self.upsample[j](F.interpolate(h, scale_factor=2.0, mode="nearest"))
        out = self.conv_out(F.gelu(self.norm_out(h)))
        return z + out if self.cfg.residual_out else out


class ScheduledUNet(nn.Module):
    """A denoiser with its own learned noise schedule ``gamma(t) = gamma_b + |gamma_w| t`` (VDM's learned linear
    schedule, as in Park et al.'s code), started at ``gamma(t) = gamma_min + (gamma_max - gamma_min) t``.

    ``forward(z, t, c)`` takes the diffusion time ``t`` (B,) and gives ``unet`` the schedule's position
    ``(gamma(t) - gamma_min) / (gamma_max - gamma_min)`` (the fixed starting values normalise it, as in that code),
    so at initialisation it is ``unet(z, t, c)``. :meth:`gamma` is differentiable in both parameters.
    """

    def __init__(self, unet: nn.Module, gamma_min: float = -5.0, gamma_max: float = 10.0):
        check_instance("unet", unet, nn.Module)
        check_finite("gamma_min", gamma_min)
        check_finite("gamma_max", gamma_max)
        if not gamma_max > gamma_min:
            raise ValueError(f"gamma_max must be > gamma_min, got ({gamma_min}, {gamma_max})")
        super().__init__()
        self.unet = unet
        self.gamma_min, self.gamma_max = float(gamma_min), float(gamma_max)
        self.gamma_b = nn.Parameter(torch.tensor(float(gamma_min)))
        self.gamma_w = nn.Parameter(torch.tensor(float(gamma_max - gamma_min)))

    def gamma(self, t: torch.Tensor) -> torch.Tensor:
        """The learned log noise-to-signal ratio at times ``t`` (any shape)."""
        return self.gamma_b + self.gamma_w.abs() * t

    def forward(self, z, t, c):
        position = (self.gamma(t) - self.gamma_min) / (self.gamma_max - self.gamma_min)
        return self.unet(z, position, c)


def num_params(model: nn.Module) -> int:
    """Number of trainable parameters."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
