"""Sharpness side by side: ``lib.curvature`` against the Cohen-style reference of ``cohen_reference.py``.

    python benchmarks/bench_sharpness.py [--repeats 5] [--before] [--cohen-settings] [--only NAME ...]

Every row at **equal tolerance**: the reference is ``eigsh(tol=1e-6)`` (ARPACK's test ``||H u - lam u|| <= tol
|lam|``) on double-backward products over the whole data set as one batch; ``lib`` certifies the same residual
test at the same ``tol``. Both in float64, one torch thread and one BLAS thread, CPU seconds
(``time.process_time``), median of ``--repeats`` after one warm-up, the methods of a row interleaved within each
repeat (a change of machine load hits all of them alike). Product counts are counted, never extrapolated.

Rows (models of ``sharpness_problems.py``):

* top Hessian eigenvalue of the four benchmark models (E10 MLP, teacher-student, 99k MLP, transformer) and of
  four held-out ones (tanh teacher-student on 10,000 points, 5.6k tanh MLP, 17k GELU network, softplus
  classifier): the reference against ``lib.curvature.hessian_top_eigenpairs(loss, theta, k=1, tol=1e-6)`` as the
  chapters call it; ``--cohen-settings`` adds the reference with Cohen et al.'s own ``tol=0`` and 1,000-sample
  batches (a handicapped baseline, labelled as such); ``--before`` adds lib's previous engine (``jvp(grad)``,
  ``ncv=20``);
* sharpness at every step of 100 GD steps (lr 0.4) on the E10 MLP, from its initialisation and from the edge of
  stability: the reference's ``gd.py`` loop against ``lib.curvature.SharpnessTracker`` (passed to
  ``lib.train.train`` as its ``tracker``, which steps with the tracker's loss and gradient, or driving a plain GD
  loop with its gradient);
* one Hessian-vector product and the order-4 directional derivatives on the E10 MLP (engines and routes of
  ``lib.curvature``).

The relative error is ``|lib - reference| / |reference|`` (the largest over the 101 values for the loop); every
row must also stay within ``MAX_REL_ERROR`` = 1e-8 to count as met.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cohen_reference as cohen  # noqa: E402
import sharpness_problems as problems  # noqa: E402
from _timing import interleaved  # noqa: E402

from lib import curvature  # noqa: E402
from lib.train import train  # noqa: E402

#: speed-up goals (reference time / lib time at equal tolerance): every top-eigenvalue row, every-step rows
GOALS = {"one": 2.0, "every step": 8.0}
MAX_REL_ERROR = 1e-8
#: Lanczos tolerance (on the residual, relative), as the chapters call ``hessian_top_eigenpairs``
TOL = 1e-6


def _counted(fn):
    """``fn()`` and the number of reference products it took."""
    cohen.PRODUCTS[0] = 0
    out = fn()
    return out, cohen.PRODUCTS[0]


def eigen_row(problem, repeats, before=False, cohen_settings=False, held_out=False):
    loss, theta = problem.loss, problem.theta
    fns = [lambda: cohen.top_eigenvalue(problem),
           lambda: float(curvature.hessian_top_eigenpairs(loss, theta, k=1, tol=TOL)[0][0])]
    if cohen_settings:
        fns.append(lambda: cohen.top_eigenvalue(problem, fair=False))
    if before:
        fns.append(lambda: float(curvature.hessian_top_eigenpairs(loss, theta, k=1, engine="forward", ncv=20)[0][0]))
    times, outs = interleaved(fns, repeats)
    op = curvature.HessianOperator(loss, theta)
    curvature.top_eigenpairs(op, 1, tol=TOL)
    ref = outs[0]
    _, n_ref = _counted(lambda: cohen.top_eigenvalue(problem))
    kind = "held out" if held_out else "benchmark"
    row = dict(task=f"top eigenvalue, {problem.name} ({theta.numel():,} params, {problem.n:,} samples; {kind})",
               goal=GOALS["one"], t_ref=times[0], t_lib=times[1], err=abs(outs[1] - ref) / abs(ref),
               hvps=f"{n_ref} / {op.products}", value=ref)
    extra = 2
    if cohen_settings:
        _, n_cohen = _counted(lambda: cohen.top_eigenvalue(problem, fair=False))
        row.update(t_cohen=times[extra], hvps_cohen=n_cohen)
        extra += 1
    if before:
        row.update(t_before=times[extra], err_before=abs(outs[extra] - ref) / abs(ref))
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
        res = train(theta0.clone(), loss, lr=lr, steps=steps, progress=False, tracker=tracker)
        return np.asarray(res.history["sharpness"])

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
    _, n_ref = _counted(ref_loop)
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


def run(repeats=5, before=False, which=tuple(problems.ALL), cohen_settings=False, every_step=True):
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    rows = []
    with threadpool_limits(limits=1):
        for name in which:
            rows.append(eigen_row(problems.ALL[name](), repeats, before, cohen_settings,
                                  held_out=name in problems.HELD_OUT))
        if every_step:
            rows += every_step_rows(repeats)
            rows += small_rows(repeats)
    return rows


def table(rows, repeats):
    before = any("t_before" in r for r in rows)
    cohen_settings = any("t_cohen" in r for r in rows)
    lines = [f"Sharpness against a Cohen-style reference at equal tolerance (eigsh tol={TOL:g}, one batch, float64; "
             f"CPU s, one thread, median of {repeats}, interleaved; the last two rows compare lib's old and new "
             "routes)\n"]
    head = "| task | reference (s) | lib (s) | speed-up | goal | rel. error | HVPs (ref / lib) |"
    sep = "|---|---:|---:|---:|---|---:|---|"
    if cohen_settings:
        head += " reference with Cohen's tol=0 and 1,000-sample batches (handicapped; s, HVPs) |"
        sep += "---|"
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
        if cohen_settings:
            line += f" {r['t_cohen']:.4f} ({r['hvps_cohen']}) |" if "t_cohen" in r else " - |"
        if before:
            line += (f" {r['t_before']:.4f} | {r['t_ref'] / r['t_before']:.1f}x |" if "t_before" in r else " - | - |")
        lines.append(line)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before", action="store_true", help="add the previous lib engine (jvp(grad), ncv=20)")
    parser.add_argument("--cohen-settings", action="store_true",
                        help="add the reference with Cohen et al.'s tol=0 and 1,000-sample batches (handicapped)")
    parser.add_argument("--only", nargs="*", default=list(problems.ALL), choices=list(problems.ALL))
    parser.add_argument("--no-every-step", action="store_true", help="leave out the every-step and small rows")
    args = parser.parse_args()
    rows = run(args.repeats, args.before, args.only, args.cohen_settings, not args.no_every_step)
    print(table(rows, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
