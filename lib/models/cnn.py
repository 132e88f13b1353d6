"""A small CNN classifier with one 2-way head per concept: the read-out of images into concept space.

``logits = ConceptCNN(cfg)(x)`` maps images (B, C, S, S) to logits (B, heads, 2); ``concept_probs`` gives the
concept-space coordinates ``P(concept value = 1)`` (B, heads), e.g. ``(P(blue), P(small))`` for the colour x size
data. Layout (Yang et al. 2025, App. G.3, shrunk): convolutions -> global max-pool -> MLP, as the paper's
"backbone + max pooling + MLP" classifier.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from ..config import check_array, check_instance, check_int, check_shape


@dataclass
class CNNConfig:
    in_channels: int = 3
    channels: tuple = (32, 32, 64)
    hidden: int = 64
    heads: int = 2  # number of binary concepts

    def __post_init__(self):
        check_array("channels", self.channels)
        check_int("in_channels", self.in_channels, minimum=1)
        check_int("hidden", self.hidden, minimum=1)
        check_int("heads", self.heads, minimum=1)
        if len(self.channels) < 1 or any(int(c) < 1 for c in self.channels):
            raise ValueError(f"channels must be a non-empty tuple of positive ints, got {self.channels!r}")


class ConceptCNN(nn.Module):
    """3x3 conv + GELU blocks, global max-pool, 2-layer MLP, ``heads`` two-way outputs: (B,C,S,S) -> (B,heads,2)."""

    def __init__(self, cfg: CNNConfig | None = None):
        check_instance("cfg", cfg, (CNNConfig, type(None)))
        super().__init__()
        cfg = cfg or CNNConfig()
        self.cfg = cfg
        layers, cin = [], cfg.in_channels
        for c in cfg.channels:
            layers += [nn.Conv2d(cin, int(c), 3, padding=1), nn.GELU()]
            cin = int(c)
        self.features = nn.Sequential(*layers)
        self.mlp = nn.Sequential(nn.Linear(cin, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, 2 * cfg.heads))

    def forward(self, x):
        h = self.features(x).amax(dim=(2, 3))
        return self.mlp(h).view(-1, self.cfg.heads, 2)


def concept_probs(model: ConceptCNN, x: torch.Tensor, batch: int = 1024) -> torch.Tensor:
    """Concept-space coordinates ``P(value = 1)`` per head for images ``x`` (B, C, S, S) -> (B, heads)."""
    check_instance("model", model, ConceptCNN)
    check_shape("x", x, (None, model.cfg.in_channels, None, None))
    check_int("batch", batch, minimum=1)
    if not torch.isfinite(x).all():
        raise ValueError("x must hold finite pixel values only (found NaN or inf)")
    out = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            out.append(torch.softmax(model(x[i:i + batch]), dim=-1)[..., 1])
    return torch.cat(out) if out else torch.zeros(0, model.cfg.heads)
