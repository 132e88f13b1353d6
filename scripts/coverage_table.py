"""Print each work's coverage by evidence, and its claims by kind and status, from a build's claim files.

    python scripts/coverage_table.py [_build/claims]

One row per work: numbered items of its manifest, then how many are decided by a claim of the paper, covered only
by inconclusive claims of the paper, only by the book's own results or illustrations, explained, or gaps (the
classes of ``lib.claims.coverage``), then the paper claims by status. The same numbers head each work's section of
the reproduction report; this prints them for a closing note or a review without opening the HTML.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> int:
    from lib.claims import COVERAGE, STATUSES, WORK_SHORT, WORKS, coverage, load_manifests

    directory = Path(argv[0]) if argv else ROOT / "_build" / "claims"
    claims = [c for p in sorted(directory.glob("*.json")) for c in json.loads(p.read_text()).get("claims", [])]
    if not claims:
        print(f"no claims in {directory}")
        return 1
    manifests = load_manifests(ROOT / "book" / "coverage")
    states = (*STATUSES, "checked in full mode")
    print("| work | items | " + " | ".join(COVERAGE) + " | paper claims: " + " / ".join(states) + " |")
    print("|---" * (3 + len(COVERAGE)) + "|")
    for work in WORKS:
        mine = [c for c in claims if c["work"] == work]
        if not mine or work not in manifests:
            continue
        by = Counter(r["by"] for r in coverage(manifests[work], mine))
        paper = Counter(c["status"] for c in mine if c.get("kind", "paper") == "paper")
        print(f"| {WORK_SHORT[work]} | {len(manifests[work]['items'])} | " + " | ".join(str(by[k]) for k in COVERAGE)
              + " | " + " / ".join(str(paper[s]) for s in states) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
