"""The whole book's cost, chapter by chapter, from the build's report.

    python benchmarks/book_table.py [_build/timings.json]

Every build (`make book`, `make test`, `make test-full`) writes `_build/timings.json`: for each chapter the wall
time, the CPU time of its kernel, the kernel's peak resident memory and the wall time of one call of its slowest
widget's callback (the median over the static frames the build rendered; each frame is what the live widget does
when a slider moves). This script prints them as a Markdown table with the totals, in the order of the table of
contents, so the README's table can be refreshed from a build.

    python benchmarks/book_table.py --estimates [_build/timings.json]

writes the build's kernel CPU times into ``book/execution_estimates.json`` (for the build's mode, quick or full),
which orders the side-by-side execution of the notebooks (longest first; the processes a chapter trains in are
kept as they are).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def toc_chapters() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    out = []

    def walk(entries):
        for entry in entries or []:
            if entry.get("file", "").startswith("notebooks/"):
                out.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("parts"))
    return out


def write_estimates(timings: dict, mode: str, path: Path = ROOT / "book" / "execution_estimates.json") -> int:
    """Store each chapter's kernel CPU seconds of ``timings`` as its ``mode`` estimate in ``path``."""
    data = json.loads(path.read_text())
    chapters = data.setdefault("chapters", {})
    for doc in toc_chapters():
        cpu = timings.get(doc, {}).get("cpu_s")
        if cpu is not None:
            chapters.setdefault(doc, {})[mode] = round(float(cpu), 1)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{path}: {mode}-mode CPU seconds of {len(chapters)} chapters")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timings", nargs="?", default=str(ROOT / "_build" / "timings.json"))
    parser.add_argument("--estimates", action="store_true",
                        help="write the CPU times into book/execution_estimates.json instead of printing the table")
    parser.add_argument("--mode", choices=["quick", "full"], default=None,
                        help="the build's mode (default: BOOK_MODE, else full)")
    args = parser.parse_args()
    path = Path(args.timings)
    if not path.exists():
        print(f"{path} not found: build the book first (make book, or make test for quick mode)", file=sys.stderr)
        return 1
    timings = json.loads(path.read_text())
    if args.estimates:
        return write_estimates(timings, args.mode or os.environ.get("BOOK_MODE", "full"))
    nan = float("nan")
    rows = ["| chapter | wall (s) | kernel CPU (s) | peak memory (MiB) | widget callback, median (max) (s) |",
            "|---|---:|---:|---:|---:|"]
    for doc in toc_chapters():
        t = timings.get(doc)
        if t is None:
            continue
        widget = (f"{t['widget_median_s']:.2f} ({t['widget_max_s']:.2f})" if "widget_median_s" in t else "-")
        rows.append(f"| {doc.removeprefix('notebooks/')} | {t['runtime_s']:.0f} | {t.get('cpu_s', nan):.0f} | "
                    f"{t.get('peak_rss_mb', nan):.0f} | {widget} |")
    wall = sum(t["runtime_s"] for t in timings.values())
    cpu = sum(t.get("cpu_s", 0.0) for t in timings.values())
    peak = max((t.get("peak_rss_mb", 0.0) for t in timings.values()), default=nan)
    rows.append(f"| **total** ({len(timings)} chapters) | {wall:.0f} | {cpu:.0f} | max {peak:.0f} | |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
