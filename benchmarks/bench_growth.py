"""How the cost of two shared routines grows with the problem size, so that a reader can see what scales linearly.

    python benchmarks/bench_growth.py [--repeats 3]

1. Sharpness: the top Hessian eigenvalue (``lib.curvature.hessian_top_eigenpairs``, Lanczos on Hessian-vector
   products, tolerance 1e-8) of a tanh MLP on 512 fixed points, for widths giving about 1k to 400k parameters,
   with the time per parameter.
2. The sweep runner (``lib.sweep.sweep``, cache on, serial) over grids of 16 to 1,024 configurations of a trivial
   function, first from an empty cache and then from the filled one: the per-configuration overhead of
   computing, storing and reading back a result.
(The K-models trainer's growth with K is the third table of ``bench_train.py``.)

Prints Markdown tables (wall-clock medians over ``--repeats`` runs, one torch thread).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _timing import timed  # noqa: E402

from lib import curvature  # noqa: E402

WIDTHS = (24, 96, 320, 640)  # 20 -> w -> w -> 1 tanh MLP: about 1k, 11k, 110k and 420k parameters
GRIDS = (16, 64, 256, 1024)


def _square(x: int) -> int:
    return x * x


def sharpness_rows(repeats: int) -> list[str]:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(512, 20, generator=g, dtype=torch.float64)
    y = torch.randn(512, 1, generator=g, dtype=torch.float64)
    rows = ["| parameters | top eigenvalue (s) | microseconds per parameter |", "|---:|---:|---:|"]
    for w in WIDTHS:
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(20, w), torch.nn.Tanh(), torch.nn.Linear(w, w), torch.nn.Tanh(),
                                  torch.nn.Linear(w, 1)).double()
        theta, loss = curvature.flatten_module(net, lambda call: ((call(X) - y) ** 2).mean())
        n = theta.numel()
        t, _ = timed(lambda f=loss, p=theta: curvature.hessian_top_eigenpairs(f, p, 1, tol=1e-8), repeats, warmup=True)
        rows.append(f"| {n:,} | {t:.3f} | {1e6 * t / n:.2f} |")
    return rows


def sweep_rows(repeats: int) -> list[str]:
    from lib.sweep import sweep

    rows = ["| configurations | empty cache (s) | filled cache (s) | ms per configuration (empty / filled) |",
            "|---:|---:|---:|---:|"]
    for n in GRIDS:
        configs = [{"x": i} for i in range(n)]
        cold, warm = [], []
        for _ in range(repeats):
            tmp = tempfile.mkdtemp()
            os.environ["ELD_CACHE_DIR"] = tmp
            try:
                t_cold, _ = timed(lambda c=configs: sweep(_square, c, name="growth"), 1)
                t_warm, _ = timed(lambda c=configs: sweep(_square, c, name="growth"), 1)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            cold.append(t_cold)
            warm.append(t_warm)
        c, w = sorted(cold)[len(cold) // 2], sorted(warm)[len(warm) // 2]
        rows.append(f"| {n:,} | {c:.3f} | {w:.3f} | {1e3 * c / n:.2f} / {1e3 * w / n:.2f} |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("Sharpness against the number of parameters\n")
    print("\n".join(sharpness_rows(args.repeats)))
    print("\nThe sweep runner against the grid size\n")
    print("\n".join(sweep_rows(args.repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
