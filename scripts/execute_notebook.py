"""Execute one chapter notebook (a MyST-markdown Jupytext file) and report on it.

    python scripts/execute_notebook.py notebooks/<part>/<chapter>.md [--mode quick|full] [--save out.ipynb]

Prints the wall time, any cell error, the claims the chapter recorded (and whether each has the status the
chapter expects) and every widget output that lacks the static form. Exit status 1 on any problem.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def widget_outputs_without_static(nb) -> list[str]:
    """Cell ids (index) of outputs carrying a widget view but no static form of lib.widgets."""
    from lib.widgets import STATIC_MARKER

    bad = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                html = data.get("text/html", "")
                html = "".join(html) if isinstance(html, list) else html
                if STATIC_MARKER not in html:
                    bad.append(f"cell {i}")
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("--mode", default=os.environ.get("BOOK_MODE", "quick"), choices=["quick", "full"])
    parser.add_argument("--save", default=None, help="write the executed notebook here")
    parser.add_argument("--timeout", type=int, default=1200)
    args = parser.parse_args()

    import jupytext
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = Path(args.notebook).resolve()
    nb = jupytext.read(path)
    claims_dir = Path(tempfile.mkdtemp(prefix="eld-claims-"))
    os.environ.update(BOOK_MODE=args.mode, ELD_CLAIMS_DIR=str(claims_dir), ELD_DOCNAME=path.stem)
    client = NotebookClient(nb, timeout=args.timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.time()
    ok = True
    try:
        client.execute()
    except CellExecutionError as err:
        ok = False
        print(str(err)[-4000:])
    elapsed = time.time() - t0
    print(f"\n{path.relative_to(ROOT)}: {'OK' if ok else 'FAILED'} in {elapsed:.1f} s ({args.mode} mode)")
    if args.save:
        import nbformat

        nbformat.write(nb, args.save)
    for f in sorted(claims_dir.glob("*.json")):
        payload = json.loads(f.read_text())
        print(f"\nClaims of {payload['chapter']} ({len(payload['claims'])}):")
        for c in payload["claims"]:
            flag = "  " if c["status"] == c["expect"] else "!!"
            ok &= c["status"] == c["expect"]
            print(f" {flag} [{c['status']}] (expects {c['expect']}) {c['source']}: {c['statement']}")
            print(f"      expected {c['expected']} | measured {c['measured']} | tol {c['tolerance']}")
    bad = widget_outputs_without_static(nb)
    if bad:
        ok = False
        print("\nWidget outputs without a static form:", ", ".join(bad))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
