"""Benchmarks for Part I (edge of stability): sharpness against a Cohen-style reference, curvature of the E10 MLP
and batched learning-rate sweeps.

    python benchmarks/bench_curvature.py [--repeats 3] [--sharpness]

0. With ``--sharpness``: sharpness side by side with the Cohen-style reference of ``cohen_reference.py``
   (``bench_sharpness.py``, which ``make benchmark`` runs on its own, so the table is printed once).
1. Top Hessian eigenvalue of the depth-3 ReLU MLP of chapter 4 (digits 0/1 stand-in, ~900 parameters, after 60
   GD epochs at lr 0.4, i.e. at the edge of stability) three ways through
   ``lib.curvature.hessian_top_eigenpairs``:
   Lanczos on torch.func Hessian-vector products, power iteration on the same products, and the dense Hessian;
   accuracy is relative to the dense value.
2. A sweep over 64 learning rates, batched against a Python loop over the learning rates, for the 1-D map
   x -> x + K (1 - x^2) x (GD on (x^2-1)^2/4, chapter 1) and for matrix factorisation (chapter 3, d = 4).

Prints a Markdown table (wall-clock medians over ``--repeats`` runs, one torch thread).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _timing import timed  # noqa: E402

from lib import curvature  # noqa: E402
from lib.data.digits import digits_binary  # noqa: E402
from lib.models.mlp import ReLUMLP  # noqa: E402
from lib.parts.edge_of_stability import matrix_factorisation as mf  # noqa: E402
from lib.train import train  # noqa: E402


def mlp_point():
    X, y, _ = digits_binary()
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    torch.manual_seed(0)
    model = ReLUMLP(X.shape[1], 16, 3)
    theta, loss = curvature.flatten_module(model, lambda call: ((call(X) - y) ** 2).mean())
    theta = theta.clone()
    train(theta, loss, lr=0.4, steps=60, progress=False)
    return theta.detach(), loss


def bench_eigen(repeats):
    theta, loss = mlp_point()
    rows = []
    def top(method, **kw):
        return lambda: curvature.hessian_top_eigenpairs(loss, theta, k=1, method=method, **kw)

    t_dense, (lam_d, _) = timed(top("dense"), repeats, warmup=True)
    ref = float(lam_d[0])
    for method, kw in (("lanczos", dict(tol=1e-8)), ("power", dict(tol=1e-8, maxiter=2000))):
        t, (lam, _) = timed(top(method, **kw), repeats, warmup=True)
        err = abs(float(lam[0]) - ref) / ref
        rows.append((f"top eigenvalue, {method} (HVPs)", t, f"rel. error {err:.1e}"))
    rows.append(("top eigenvalue, dense Hessian + eigh", t_dense, f"reference lambda = {ref:.4f}"))
    return rows, theta.numel()


def bench_scalar_sweep(repeats, n=64, steps=2000):
    Ks = np.linspace(0.9, 1.45, n)

    def loop():
        out = []
        for K in Ks:
            x = 0.3
            for _ in range(steps):
                x = x + K * (1 - x * x) * x
            out.append(x)
        return np.array(out)

    def batched():
        x = np.full(n, 0.3)
        for _ in range(steps):
            x = x + Ks * (1 - x * x) * x
        return x

    def vmapped():
        def run(K):
            x = torch.full((), 0.3, dtype=torch.float64)
            for _ in range(steps):
                x = x + K * (1 - x * x) * x
            return x

        return torch.func.vmap(run)(torch.as_tensor(Ks)).numpy()

    t_loop, a = timed(loop, repeats, warmup=True)
    t_b, b = timed(batched, repeats, warmup=True)
    t_v, c = timed(vmapped, repeats, warmup=True)
    same = np.allclose(a, b) and np.allclose(a, c)
    return [(f"1-D map, {n} lrs x {steps} steps, Python loop", t_loop, "reference"),
            (f"1-D map, {n} lrs x {steps} steps, NumPy batched", t_b,
             f"speed-up {t_loop / t_b:.0f}x, same result: {same}"),
            (f"1-D map, {n} lrs x {steps} steps, torch.func.vmap", t_v, f"speed-up {t_loop / t_v:.1f}x")]


def bench_mf_sweep(repeats, n=64, steps=2000, d=4):
    Ks = np.linspace(0.9, 1.45, n)
    C = mf.diag_target(Ks[:, None] * np.array([1.0, 0.2, 0.1, 0.05])[None, :])
    Y0, Z0 = mf.generic_init(1, d, 0.1, 0)
    Yb, Zb = Y0.expand(n, d, d).clone(), Z0.expand(n, d, d).clone()

    def loop():
        return np.stack([mf.mf_gd(Y0, Z0, C[i], 1.0, steps)["Y"][0] for i in range(n)])

    def loop_numpy():
        return np.stack([mf.mf_trajectory(Y0[0], Z0[0], C[i], 1.0, steps)["Y"] for i in range(n)])

    def batched():
        return mf.mf_gd(Yb, Zb, C, 1.0, steps)["Y"]

    t_loop, a = timed(loop, repeats, warmup=True)
    t_np, b = timed(loop_numpy, max(1, repeats // 2), warmup=True)
    t_b, c = timed(batched, repeats, warmup=True)
    same = np.allclose(a, c, atol=1e-10)
    name = f"MF d={d}, {n} lrs x {steps} steps"
    return [(f"{name}, loop of torch runs", t_loop, "reference"),
            (f"{name}, loop of NumPy runs (with SVD records)", t_np, f"speed-up {t_loop / t_np:.1f}x"),
            (f"{name}, batched bmm", t_b, f"speed-up {t_loop / t_b:.0f}x, same result: {same}")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sharpness", action="store_true",
                        help="print the side-by-side sharpness table first (make benchmark runs bench_sharpness.py "
                             "on its own, so by default it is left out here)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    if args.sharpness:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_sharpness

        print(bench_sharpness.table(bench_sharpness.run(args.repeats), args.repeats) + "\n")
    rows, n_params = bench_eigen(args.repeats)
    rows += bench_scalar_sweep(args.repeats)
    rows += bench_mf_sweep(args.repeats)
    print(f"Part I benchmarks (one torch thread; E10 MLP with {n_params} parameters; "
          f"median of {args.repeats})\n")
    print("| task | wall time (s) | note |")
    print("|---|---:|---|")
    for name, t, note in rows:
        print(f"| {name} | {t:.4f} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
