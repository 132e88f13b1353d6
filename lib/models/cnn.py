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
import torch.nn.functional as F

from ..config import check_int, check_positive, check_shape


@dataclass
class CNNConfig:
    in_channels: int = 3
    channels: tuple = (32, 32, 64)
    hidden: int = 64
    heads: int = 2  # number of binary concepts

    def __post_init__(self):
        check_int("in_channels", self.in_channels, minimum=1)
        check_int("hidden", self.hidden, minimum=1)
        check_int("heads", self.heads, minimum=1)
        if len(self.channels) < 1 or any(int(c) < 1 for c in self.channels):
            raise ValueError(f"channels must be a non-empty tuple of positive ints, got {self.channels!r}")


class ConceptCNN(nn.Module):
    """3x3 conv + GELU blocks, global max-pool, 2-layer MLP, ``heads`` two-way outputs: (B,C,S,S) -> (B,heads,2)."""

    def __init__(self, cfg: CNNConfig | None = None):
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
    check_shape("x", x, (None, model.cfg.in_channels, None, None))
    out = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            out.append(torch.softmax(model(x[i:i + batch]), dim=-1)[..., 1])
    return torch.cat(out) if out else torch.zeros(0, model.cfg.heads)


def train_classifier(model: ConceptCNN, images: torch.Tensor, labels: torch.Tensor, *, steps: int = 500,
                     batch_size: int = 128, lr: float = 1e-3, seed: int = 0) -> dict:
    """Train ``model`` with AdamW on cross-entropy summed over heads; images (N,C,S,S), labels (N, heads) in {0,1}.

    Returns a history dict of NumPy arrays ``step``, ``loss`` (the same convention as ``lib.train``).
    """
    check_int("steps", steps, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    check_positive("lr", lr)
    check_shape("labels", labels, (len(images), model.cfg.heads))
    gen = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    hist = {"step": [], "loss": []}
    model.train()
    for step in range(steps):
        idx = torch.randint(len(images), (batch_size,), generator=gen)
        logits = model(images[idx])
        loss = F.cross_entropy(logits.reshape(-1, 2), labels[idx].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        hist["step"].append(step)
        hist["loss"].append(float(loss.detach()))
    model.eval()
    return {k: torch.tensor(v).numpy() for k, v in hist.items()}
