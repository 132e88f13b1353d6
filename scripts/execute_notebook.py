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


def execute(path: Path, *, mode: str, claims_dir: Path, docname: str, timeout: int = 1200):
    """Execute the chapter at ``path`` in ``mode``, its claims going to ``claims_dir`` under ``docname``.

    Returns ``(notebook, error)``: the executed notebook and the text of a cell error (None when all cells ran).
    """
    import jupytext
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = jupytext.read(path)
    env = dict(BOOK_MODE=mode, ELD_CLAIMS_DIR=str(claims_dir), ELD_DOCNAME=docname)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits them; restored below for the calling process
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(Path(path).parent)}})
    try:
        client.execute()
    except CellExecutionError as err:
        return nb, str(err)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb, None


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

    path = Path(args.notebook).resolve()
    claims_dir = Path(tempfile.mkdtemp(prefix="eld-claims-"))
    t0 = time.time()
    nb, error = execute(path, mode=args.mode, claims_dir=claims_dir, docname=path.stem, timeout=args.timeout)
    ok = error is None
    if error:
        print(error[-4000:])
    elapsed = time.time() - t0
    print(f"\n{path.relative_to(ROOT)}: {'OK' if ok else 'FAILED'} in {elapsed:.1f} s ({args.mode} mode)")
    if args.save:
        import nbformat

        nbformat.write(nb, args.save)
    for f in sorted(claims_dir.glob("*.json")):
        payload = json.loads(f.read_text())
        print(f"\nClaims of {payload['chapter']} ({len(payload['claims'])}):")
        for c in payload["claims"]:
            # a claim decided only in full mode is "checked in full mode" in a quick run, as the book's checks allow
            as_expected = c["status"] in (c["expect"], "checked in full mode")
            flag = "  " if as_expected else "!!"
            ok &= as_expected
            print(f" {flag} [{c['status']}] (expects {c['expect']}) {c['source']}: {c['statement']}")
            print(f"      expected {c['expected']} | measured {c['measured']} | tol {c['tolerance']}")
    bad = widget_outputs_without_static(nb)
    if bad:
        ok = False
        print("\nWidget outputs without a static form:", ", ".join(bad))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
