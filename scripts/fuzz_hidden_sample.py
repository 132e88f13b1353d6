"""An independent check of ``tests/test_fuzz.py``: bad values the fuzz table does not use, on a random sample.

With a fixed seed, draw a sample of the public functions that have a valid base call in the fuzz table, and for each
one parameter at random (declared or inferred, as the fuzz test mutates them). Give that parameter values the table
never tries: ``-0.0`` for a positive number, ``2**63`` for a seed, ``-(2**63)`` for a count, NumPy scalars of the wrong
kind, ``True`` for an integer, a string that looks like a number, a nested or ragged list, one ``inf`` or one NaN
entry in an otherwise valid array, an option in capitals, ... . Each call runs in a forked process with a time limit
(a hang counts as a failure). Prints the share of invalid values and of wrong types that raise a ``ValueError``
naming the argument (the goals: 95 % and 90 %), then every call that did not.

Two kinds of calls are left out of the shares, and counted: a list or array for a single-number parameter whose
function takes an array of valid values there (it broadcasts by design: probed first with ``[base, base]``), and
the (function, parameter) pairs of ``BY_DESIGN``, read in the code (NaN marks a missing value, ...); the raw
shares with the latter are printed beside.

    PYTHONPATH=$PWD python scripts/fuzz_hidden_sample.py [--n 60] [--seed 0] [--timeout 20] [--all]

``--all`` takes every function instead of a sample (minutes).
"""

from __future__ import annotations

import argparse
import inspect
import multiprocessing as mp
import random
import re
import sys
import warnings
from pathlib import Path

import numpy as np

NAN, INF = float("nan"), float("inf")
RAGGED = [[1.0], [1.0, 2.0]]
#: kind -> (invalid values, wrong types); "inf1"/"nan1": the base array with its first entry set to inf / NaN;
#: "upper"/"space": a string option in capitals / with a trailing space.
HIDDEN = {
    "count": ([-(2**63), np.int64(-5)], [True, np.float64(3.0), "7", [[3]]]),
    "countnone": ([-(2**63), np.int64(-5)], [True, np.float64(3.0), "7"]),
    "seed": ([2**63, 2**32, -(2**63)], [True, np.float64(1.0), "0"]),
    "pos": ([-0.0, -1e308, -INF, np.float32(NAN)], ["0.1", True, [[0.1]], np.array([0.1, 0.2])]),
    "posnone": ([-0.0, -1e308, -INF, np.float32(NAN)], ["0.1", True, [[0.1]]]),
    "posinf": ([-0.0, -1e308, -INF, np.float32(NAN)], ["0.1", True, [[0.1]]]),
    "nonneg": ([-1e-300, -INF, np.float32(NAN)], ["0.5", True, [[0.5]]]),
    "nonneginf": ([-1e-300, -INF, np.float32(NAN)], ["0.5", True, [[0.5]]]),
    "real": ([-INF, np.float32(NAN), np.float64(INF)], ["1e3", True, [[1.0]]]),
    "realnone": ([-INF, np.float32(NAN)], ["1e3", True, [[1.0]]]),
    "prob": ([1.0 + 1e-9, -1e-300, 1e308, np.float32(NAN)], ["0.5", True, [[0.5]]]),
    "probnone": ([1.0 + 1e-9, -1e-300, 1e308], ["0.5", True]),
    "bool": ([], [1, 0, np.int64(1), "True", "false", [True]]),
    "option": (["upper", "space", ""], [True, b"bytes", ["list"]]),
    "option?": (["upper", "space", ""], [True, b"bytes"]),
    "array": (["inf1", "nan1"], ["1.0", RAGGED, {"a": 1.0}]),
    "array0": (["inf1", "nan1"], ["1.0", RAGGED]),
    "arraynone": (["inf1", "nan1"], ["1.0", RAGGED]),
    "array?": (["nan1"], ["1.0", RAGGED]),
    "state": ([], ["1.0", RAGGED]),
    "callable": ([], [3, "print", [len]]),
    "object": ([], [1.5, True, []]),
    "objectnone": ([], [1.5, True]),
    "object?": ([], [1.5, True]),
    "int?": ([-(2**63)], [True, np.float64(2.0), "2"]),
    "float?": ([np.float32(NAN)], ["1.0", True, [[1.0]]]),
}


#: Values a parameter accepts by design, found by this sample and read in the code: (function, parameter) -> why.
#: They are listed and left out of the shares (the raw shares, with them, are printed too).
BY_DESIGN = {
    ("curves.peak_positions", "curve"): "non-finite entries end a curve (a diverged run), as documented",
    ("plots.phase_heatmap", "values"): "NaN marks a cell not computed (finite='some')",
    ("parts.generalisation.shallow_vits.first_step_below", "curves"): "NaN marks a step not recorded",
    ("parts.generalisation.shallow_vits.r_squared", "x"): "NaN pairs are dropped, as documented",
    ("parts.generalisation.shallow_vits.r_squared", "y"): "NaN pairs are dropped, as documented",
    ("curves.running_median", "curve"): "NaN entries are allowed (finite='some'): a curve with missing points",
    ("parts.concept_learning.diffusion.learned_step", "values"): "NaN marks a checkpoint not read (finite='some')",
    ("parts.edge_of_stability.matrix_factorisation.divergence_boundary", "finite"): "NaN marks a point not run",
    ("parts.induction_heads.trained_transformers.plateau_and_drop", "loss"): "NaN marks a step not recorded "
                                                                             "(finite='some')",
    ("plots.matrix_heatmap", "matrix"): "NaN marks a cell left blank (finite='some')",
    ("success.success_map", "xs"): "setting values may hold NaN by design (finite='some')",
    ("parts.concept_learning.sim_one_layer.fit_exponential_rate", "residual"): "NaN marks a step not recorded "
                                                                                "(finite='some')",
    ("plots.attention_heatmap", "A"): "NaN marks a masked entry left blank (finite='some')",
    ("plots.bifurcation_scatter", "points"): "NaN marks a diverged orbit point (finite='some')",
    ("curves.count_peaks", "curve"): "non-finite entries end a curve (a diverged run), as documented",
    ("parts.edge_of_stability.beyond_low_dimension.eos_mask", "sharpness"): "NaN marks a diverged run, as documented",
    ("parts.graph_networks.telling_graphs_apart.draw_values", "values"): "NaN marks a node drawn without a value "
                                                                         "(finite='some')",
    ("config.check_device", "value"): "a checker: its message names the caller's argument (its name parameter)",
}
#: Kinds of a single number: an array of valid values in their place is tried first; a parameter that takes it
#: broadcasts by design, so lists and arrays are not wrong types there.
SCALAR_KINDS = {"pos", "posnone", "posinf", "nonneg", "nonneginf", "real", "realnone", "prob", "probnone", "float?"}


def _hidden(value, bad):
    """The mutated argument: ``bad`` itself, or the base ``value`` changed as the marker says."""
    import torch

    if isinstance(bad, str) and bad in ("inf1", "nan1"):
        fill = INF if bad == "inf1" else NAN
        if torch.is_tensor(value):
            arr = value.detach().clone()
            arr = arr if arr.is_floating_point() else arr.double()
        else:
            arr = np.array(value, dtype=float)
        if (arr.numel() if torch.is_tensor(arr) else arr.size) == 0:
            return None
        arr.reshape(-1)[0] = fill
        return arr
    if isinstance(bad, str) and bad in ("upper", "space"):
        if not isinstance(value, str):
            return None
        out = value.upper() if bad == "upper" else value + " "
        return None if out == value else out
    return bad


def _call(fn, args, kwargs, name, bad, conn):
    """Child process: the mutated call; sends back "named" or what happened instead."""
    import torch

    torch.set_num_threads(1)
    params = list(inspect.signature(fn).parameters)
    args, kwargs = list(args), dict(kwargs)
    pos = params.index(name)
    if pos < len(args):
        args[pos] = bad
    else:
        kwargs[name] = bad
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            fn(*args, **kwargs)
            out = "silent"
        except ValueError as e:
            out = "named" if re.search(rf"\b{re.escape(name)}\b", str(e)) else f"ValueError: {e}"
        except BaseException as e:  # noqa: BLE001 - classify whatever comes out
            out = f"{type(e).__name__}: {e}"
    conn.send(out[:200])
    conn.close()


def run_one(fn, args, kwargs, name, bad, timeout: float) -> str:
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_call, args=(fn, args, kwargs, name, bad, child))
    proc.start()
    child.close()
    out = parent.recv() if parent.poll(timeout) else f"hang (> {timeout:g} s)"
    if proc.is_alive():
        proc.kill()
    proc.join()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60, help="functions in the sample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per call")
    ap.add_argument("--all", action="store_true", help="every function, every parameter")
    opts = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import torch

    torch.set_num_threads(1)
    import test_fuzz

    cases = {}
    for case in test_fuzz.CASES:
        fn, args, kwargs, kinds = case.values
        cases.setdefault(f"{fn.__module__}.{fn.__qualname__}", (fn, args, kwargs, kinds))
    keys = sorted(cases)
    rng = random.Random(opts.seed)
    picked = keys if opts.all else sorted(rng.sample(keys, min(opts.n, len(keys))))
    rows, skipped = [], 0
    for key in picked:
        fn, args, kwargs, kinds = cases[key]
        params = inspect.signature(fn).parameters
        kinds = {n: k for n, k in test_fuzz._with_flags(fn, args, kwargs, kinds).items()
                 if any(HIDDEN.get(k, ((), ())))}
        if not kinds:
            continue
        names = sorted(kinds) if opts.all else [rng.choice(sorted(kinds))]
        for name in names:
            pos = list(params).index(name)
            base = args[pos] if pos < len(args) else kwargs.get(name, params[name].default)
            invalid, wrong = HIDDEN[kinds[name]]
            broadcasts = None
            for category, values in (("invalid value", invalid), ("wrong type", wrong)):
                for bad in values:
                    value = _hidden(base, bad)
                    if value is None:
                        continue
                    if kinds[name] in SCALAR_KINDS and isinstance(value, (list, np.ndarray)) and base is not None:
                        if broadcasts is None:  # does an array of the (valid) base value pass?
                            try:
                                probe = np.array([base, base], dtype=float)
                                broadcasts = run_one(fn, args, kwargs, name, probe, opts.timeout) == "silent"
                            except (TypeError, ValueError):
                                broadcasts = False
                        if broadcasts:
                            skipped += 1
                            continue
                    out = run_one(fn, args, kwargs, name, value, opts.timeout)
                    rows.append((key[4:], name, kinds[name], category, value, out))
    print(f"functions: {len(picked)} of {len(keys)} with a base call (seed {opts.seed}); calls: {len(rows)}; "
          f"array values skipped where the parameter broadcasts by design: {skipped}")
    by_design = [r for r in rows if (r[0], r[1]) in BY_DESIGN and r[5] != "named"]
    ok = True
    for category, bar in (("invalid value", 0.95), ("wrong type", 0.90)):
        sel = [r for r in rows if r[3] == category]
        named = sum(r[5] == "named" for r in sel)
        kept = [r for r in sel if not ((r[0], r[1]) in BY_DESIGN and r[5] != "named")]
        share = named / max(len(kept), 1)
        ok &= share >= bar
        print(f"{category}: {named}/{len(kept)} = {share:.1%} named (goal {bar:.0%}); with the {len(sel) - len(kept)} "
              f"accepted by design: {named}/{len(sel)} = {named / max(len(sel), 1):.1%}")
    for key, name in sorted({(r[0], r[1]) for r in by_design}):
        print(f"  by design: {key}({name}): {BY_DESIGN[key, name]}")
    hangs = [r for r in rows if r[5].startswith("hang")]
    print(f"hangs: {len(hangs)}")
    for key, name, kind, category, value, out in rows:
        if out != "named" and (key, name) not in BY_DESIGN:
            text = repr(value) if not hasattr(value, "shape") else f"{type(value).__name__}{tuple(value.shape)}"
            print(f"  {key}({name}={text[:40]}) [{kind}, {category}]: {out[:110]}")
    return 0 if ok and not hangs else 1


if __name__ == "__main__":
    sys.exit(main())
