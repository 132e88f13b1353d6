"""Benchmark of ``lib.train.train_stacked``: K small models trained at once against a Python loop of K ``train`` runs.

    python benchmarks/bench_train.py [--repeats 3] [--steps 200]

1. K = 8 MLPs (20 -> 64 -> 64 -> 1, tanh, 5,569 parameters each), Adam, a fresh minibatch of 64 of each model's
   own data every step: ``train_stacked`` (one vmapped step for all 8) against 8 consecutive ``train`` runs on the
   same batches; the final parameters agree to round-off (checked).
2. K = 8 copies of the MLP chapter VI.3 trains with ``train_stacked`` (``lib.models.mlp.MLP``, 64 -> 32 -> 1,
   ReLU, 2,113 parameters), logistic loss, full-batch Adam on 1,000 points each.
3. The same for K = 8 small CNNs (1 -> 8 -> 16 channels, 3x3 convolutions, 8x8 images, 10 classes, 1,946
   parameters), batch 32 (not an MLP: ``functional_call`` under ``vmap``).
4. Scaling: the first MLP for K = 1, 2, 4, 8, 16, milliseconds per step of all K models, stacked and looped.

Prints Markdown tables (CPU seconds, ``time.process_time``, medians over ``--repeats`` runs after a warm-up, the
loop and the stacked run interleaved; one torch thread, float32).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _timing import interleaved  # noqa: E402

from lib.train import train, train_stacked  # noqa: E402

N = 512  # training points per model


def book_mlp(seed: int) -> torch.nn.Module:
    from lib.models.mlp import MLP

    torch.manual_seed(seed)
    return MLP(64, 1, depth=2, width=32)


def mlp(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 1))


def cnn(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 16, 3),
                               torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                               torch.nn.Linear(16, 10))


def task(kind: str, K: int, steps: int):
    """Per-model data, index stream, model builder, loss and batch size of one benchmark task."""
    g = torch.Generator().manual_seed(0)
    if kind == "mlp":
        X, Y, batch, make = torch.randn(K, N, 20, generator=g), torch.randn(K, N, 1, generator=g), 64, mlp
        loss = lambda m, b: ((m(b[0]) - b[1]) ** 2).mean()
    elif kind == "book":
        X = torch.randn(K, 1000, 64, generator=g)
        Y, batch, make = (X[..., 0] > 0).float(), 1000, book_mlp
        loss = lambda m, b: torch.nn.functional.binary_cross_entropy_with_logits(m(b[0]).squeeze(-1), b[1])
        return X, Y, None, make, loss  # the whole data set every step, as chapter VI.3 trains
    else:
        X, Y, batch, make = torch.randn(K, N, 1, 8, 8, generator=g), torch.randint(0, 10, (K, N), generator=g), 32, cnn
        loss = lambda m, b: torch.nn.functional.cross_entropy(m(b[0]), b[1])
    idx = torch.randint(0, N, (steps + 1, K, batch), generator=g)
    return X, Y, idx, make, loss


def run_stacked(kind: str, K: int, steps: int):
    X, Y, idx, make, loss = task(kind, K, steps)
    ar = torch.arange(K)[:, None]
    batch_fn = (lambda s, g: (X, Y)) if idx is None else (lambda s, g: (X[ar, idx[s]], Y[ar, idx[s]]))
    res = train_stacked([make(k) for k in range(K)], loss, lr=1e-3, steps=steps, optimizer="adam",
                        batch_fn=batch_fn, record_every=steps, progress=False)
    return res.params


def run_loop(kind: str, K: int, steps: int):
    X, Y, idx, make, loss = task(kind, K, steps)
    out = []
    for k in range(K):
        m = make(k)
        if idx is None:
            batch_fn = lambda s, g, k=k: (X[k], Y[k])  # noqa: E731
        else:
            batch_fn = lambda s, g, k=k: (X[k][idx[s, k]], Y[k][idx[s, k]])  # noqa: E731
        train(m, loss, lr=1e-3, steps=steps, optimizer="adam", batch_fn=batch_fn, record_every=steps, progress=False)
        out.append(dict(m.named_parameters()))
    return out


def max_diff(stacked, looped) -> float:
    return max(float((stacked[n][k] - p.detach()).abs().max()) for k, d in enumerate(looped) for n, p in d.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)
    steps, reps = args.steps, args.repeats
    print(f"K = 8 models, {steps} Adam steps, CPU s, median of {reps} (interleaved), one torch thread\n")
    print("| model | loop of 8 `train` runs (s) | `train_stacked`, K = 8 (s) | speed-up | max abs. difference |")
    print("|---|---:|---:|---:|---:|")
    for kind, label in (("mlp", "MLP 20-64-64-1 tanh, batch 64"),
                        ("book", "chapter VI.3's MLP 64-32-1 ReLU, full batch"), ("cnn", "CNN 1-8-16, 8x8, batch 32")):
        (t_loop, t_stack), (looped, stacked) = interleaved(
            [lambda kind=kind: run_loop(kind, 8, steps), lambda kind=kind: run_stacked(kind, 8, steps)], reps)
        print(f"| {label} | {t_loop:.2f} | {t_stack:.2f} | {t_loop / t_stack:.1f}x | {max_diff(stacked, looped):.1e} |")
    print("\nScaling with K (MLP 20-64-64-1): milliseconds per step of all K models\n")
    print("| K | loop (ms/step) | stacked (ms/step) | speed-up |")
    print("|---:|---:|---:|---:|")
    for K in (1, 2, 4, 8, 16):
        (t_loop, t_stack), _ = interleaved([lambda K=K: run_loop("mlp", K, steps),
                                            lambda K=K: run_stacked("mlp", K, steps)], reps)
        print(f"| {K} | {1e3 * t_loop / steps:.2f} | {1e3 * t_stack / steps:.2f} | {t_loop / t_stack:.1f}x |")


if __name__ == "__main__":
    main()
