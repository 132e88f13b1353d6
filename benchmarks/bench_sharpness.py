"""Sharpness side by side: ``lib.curvature`` against the Cohen-style reference of ``cohen_reference.py``.

    python benchmarks/bench_sharpness.py [--repeats 3] [--before]

Rows (models of ``sharpness_problems.py``, float64, one torch thread and one BLAS thread, CPU seconds, median of
``--repeats`` after one warm-up, the methods of a row interleaved within each repeat):

* top Hessian eigenvalue of the E10 MLP, the teacher-student model, the 99k MLP and the transformer:
  the reference (double backward per product and per batch of 1,000, ``eigsh`` defaults) against
  ``lib.curvature.hessian_top_eigenpairs(loss, theta, k=1, tol=1e-6)`` as the chapters call it (retained-graph
  products, ``eigsh(which="LA", tol=1e-6, ncv=8)``); ``--before`` adds the previous engine (``jvp(grad)``,
  ``ncv=20``);
* sharpness at every step of 100 GD steps (lr 0.4) on the E10 MLP, from its initialisation and from the edge of
  stability: the reference's ``gd.py`` loop against ``lib.curvature.SharpnessTracker`` (recorded by
  ``lib.train.train``, or driving a GD loop with its gradient);
* one Hessian-vector product and the order-4 directional derivatives on the E10 MLP (engines and routes of
  ``lib.curvature``).

The relative error is ``|lib - reference| / |reference|`` (the largest over the 101 values for the loop).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cohen_reference as cohen  # noqa: E402
import sharpness_problems as problems  # noqa: E402

from lib import curvature  # noqa: E402
from lib.train import train  # noqa: E402

#: speed-up goals (reference time / lib time) of issue "Performance", section 1
GOALS = {"E10 MLP": 4.0, "teacher-student": 4.0, "MLP 99k": 4.0, "transformer": 2.0, "every step": 8.0}
MAX_REL_ERROR = 1e-8
#: Lanczos tolerance (on the residual, relative), as the chapters call ``hessian_top_eigenpairs``
TOL = 1e-6


def interleaved(fns, repeats):
    """CPU seconds (median over ``repeats``, after one warm-up each) and the last output of every function;
    the functions run round-robin so that a change of machine load hits all of them alike."""
    outs = [fn() for fn in fns]
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t = time.process_time()
            outs[i] = fn()
            times[i].append(time.process_time() - t)
    return [statistics.median(t) for t in times], outs


def _count_reference_products(problem):
    count = [0]
    original = cohen.compute_hvp

    def counting(p, v):
        count[0] += 1
        return original(p, v)

    cohen.compute_hvp = counting
    try:
        cohen.top_eigenvalue(problem)
    finally:
        cohen.compute_hvp = original
    return count[0]


def eigen_row(problem, repeats, before=False):
    loss, theta = problem.loss, problem.theta
    fns = [lambda: cohen.top_eigenvalue(problem),
           lambda: float(curvature.hessian_top_eigenpairs(loss, theta, k=1, tol=TOL)[0][0])]
    if before:
        fns.append(lambda: float(curvature.hessian_top_eigenpairs(loss, theta, k=1, engine="forward", ncv=20)[0][0]))
    times, outs = interleaved(fns, repeats)
    op = curvature.HessianOperator(loss, theta)
    curvature.top_eigenpairs(op, 1, tol=TOL)
    ref = outs[0]
    row = dict(task=f"top eigenvalue, {problem.name} ({theta.numel():,} params)", goal=GOALS[problem.name],
               t_ref=times[0], t_lib=times[1], err=abs(outs[1] - ref) / abs(ref),
               hvps=f"{_count_reference_products(problem)} / {op.products}", value=ref)
    if before:
        row.update(t_before=times[2], err_before=abs(outs[2] - ref) / abs(ref))
    return row


def every_step_rows(repeats, steps=100, lr=0.4):
    """Sharpness at every step of ``steps`` GD steps on the E10 MLP, from its initialisation (the first steps
    catapult: the sharpness jumps by factors of 2-5 from step to step) and from the edge of stability (after 60
    epochs). lib runs ``lib.train.train`` recording the tracker, and a GD loop that steps with the gradient the
    tracker computed anyway (``SharpnessTracker.gradient``)."""
    rows = []
    for start, epochs in (("from initialisation", 0), ("at the edge of stability", 60)):
        rows += _every_step(problems.e10_mlp(epochs=epochs), start, repeats, steps, lr)
    return rows


def _every_step(problem, start, repeats, steps, lr):
    theta0, loss = problem.theta, problem.loss
    trackers = {}

    def train_loop():
        tracker = trackers["train"] = curvature.SharpnessTracker()
        res = train(theta0.clone(), loss, lr=lr, steps=steps, progress=False,
                    record=lambda th, step: {"sharp": tracker(loss, th)})
        return np.asarray(res.history["sharp"])

    def tracker_loop():
        tracker = trackers["gd"] = curvature.SharpnessTracker()
        theta, out = theta0.clone(), []
        for _ in range(steps + 1):
            out.append(tracker(loss, theta))
            theta = theta - lr * tracker.gradient
        return np.array(out)

    def ref_loop():
        return cohen.gd_with_sharpness(problem, lr, steps)

    times, (ref, a, b) = interleaved([ref_loop, train_loop, tracker_loop], repeats)
    n_ref = _count_reference_products(problem) * (steps + 1)
    rows = []
    for key, t, vals, how in (("train", times[1], a, "lib.train + tracker"),
                              ("gd", times[2], b, "GD loop on the tracker's gradient")):
        tr = trackers[key]
        rows.append(dict(task=f"sharpness every step, {steps} GD steps {start}, E10 MLP ({how})",
                         goal=GOALS["every step"], t_ref=times[0], t_lib=t,
                         err=float(np.max(np.abs(vals - ref) / np.abs(ref))),
                         hvps=f"{n_ref} / {tr.total_products} ({tr.fallbacks} fallbacks)"))
    return rows


def small_rows(repeats):
    problem = problems.e10_mlp()
    loss, theta = problem.loss, problem.theta
    v = torch.linspace(-1, 1, theta.numel(), dtype=theta.dtype)
    u = v / v.norm()
    (t_fwd, t_graph), (a, b) = interleaved([lambda: curvature.hvp(loss, theta, v, engine="forward"),
                                            lambda: curvature.hvp(loss, theta, v, engine="graph")], repeats * 5)
    (t_dfwd, t_drev), (c, d) = interleaved(
        [lambda: curvature.directional_derivatives(loss, theta, u, 4, route="forward"),
         lambda: curvature.directional_derivatives(loss, theta, u, 4, route="reverse")], repeats * 3)
    return [dict(task="one Hessian-vector product, E10 MLP: jvp(grad) vs double backward", goal=None,
                 t_ref=t_fwd, t_lib=t_graph, err=float((a - b).norm() / a.norm()), hvps="1 / 1"),
            dict(task="order-4 directional derivatives, E10 MLP: nested jvp vs nested reverse", goal=None,
                 t_ref=t_dfwd, t_lib=t_drev, err=float(((c - d).abs() / c.abs()).max()), hvps="-")]


def run(repeats=3, before=False, which=("e10", "teacher_student", "mlp_100k", "transformer")):
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    rows = []
    with threadpool_limits(limits=1):
        for name in which:
            rows.append(eigen_row(problems.BUILDERS[name](), repeats, before))
        rows += every_step_rows(repeats)
        rows += small_rows(repeats)
    return rows


def table(rows, repeats):
    before = any("t_before" in r for r in rows)
    lines = [f"Sharpness against a Cohen-style reference (CPU s, one thread, median of {repeats}; "
             "the last two rows compare lib's old and new routes)\n"]
    head = "| task | reference (s) | lib (s) | speed-up | goal | rel. error | HVPs (ref / lib) |"
    sep = "|---|---:|---:|---:|---|---:|---|"
    if before:
        head += " lib before (s) | speed-up before |"
        sep += "---:|---:|"
    lines += [head, sep]
    for r in rows:
        ratio = r["t_ref"] / r["t_lib"]
        if r["goal"] is None:
            goal = "-"
        else:
            met = ratio >= r["goal"] and r["err"] <= MAX_REL_ERROR
            goal = f">= {r['goal']:.0f}x: {'met' if met else 'NOT met'}"
        line = (f"| {r['task']} | {r['t_ref']:.4f} | {r['t_lib']:.4f} | {ratio:.1f}x | {goal} | {r['err']:.1e} | "
                f"{r['hvps']} |")
        if before:
            line += (f" {r['t_before']:.4f} | {r['t_ref'] / r['t_before']:.1f}x |" if "t_before" in r else " - | - |")
        lines.append(line)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", action="store_true", help="add the previous lib engine (jvp(grad), ncv=20)")
    parser.add_argument("--only", nargs="*", default=list(problems.BUILDERS), choices=list(problems.BUILDERS))
    args = parser.parse_args()
    print(table(run(args.repeats, args.before, args.only), args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
