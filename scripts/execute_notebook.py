"""Execute one chapter notebook (a MyST-markdown Jupytext file) and report on it.

    python scripts/execute_notebook.py notebooks/<part>/<chapter>.md [--mode quick|full] [--save out.ipynb]
        [--compare _build]

Prints the claims the chapter recorded, each marked ``!!`` where its status is not the one the chapter expects,
every widget output that lacks the static form, every output on stderr (the book's -W build stops on them), and
a last line that says OK or FAILED and why. A cell that raises is shown: its number, its source and the end of its
traceback (without terminal colours).

It then compares the claims with those of the last build (``--compare``, default ``_build``: the chapter's
``_build/claims/<docname>.json`` of a book build, else the ledger ``_build/html/claims.json``) and lists every claim
whose status changed, and the claims that are new or gone. Exit status 1 on a cell error, a claim not as expected,
a widget without its static form, or an output on stderr (a change against the last build alone is reported,
not an error).

The kernel runs the checkout's ``lib`` (``PYTHONPATH`` is set to the repository, as ``check_page.py`` does).
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
    # the kernel imports this checkout's lib, whatever the environment's editable install points at (check_page.py)
    env = dict(BOOK_MODE=mode, ELD_CLAIMS_DIR=str(claims_dir), ELD_DOCNAME=docname, PYTHONPATH=str(ROOT))
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


def stderr_outputs(nb) -> list[str]:
    """``cell i: first line`` of every output written to stderr: the book's -W build stops on them (MyST-NB's
    ``mystnb.stderr`` warning), a warning printed by a library included."""
    found = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                text = "".join(out.get("text", "")).strip()
                found.append(f"cell {i}: {text.splitlines()[0][:120] if text else ''}")
    return found


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


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def failing_cell(nb) -> str:
    """The first cell of the executed ``nb`` with an error output: its number (counting every cell from 0), its
    source and the end of its traceback, without terminal colour codes ('' when no cell failed)."""
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                trace = _ANSI.sub("", "\n".join(out.get("traceback", [])))
                trace = "\n".join(trace.splitlines()[-30:])
                return (f"cell {i} failed:\n{cell.source}\n\n{trace}\n{out.get('ename', '')}: "
                        f"{_ANSI.sub('', out.get('evalue', ''))}")
    return ""


def docname_of(path: Path) -> str:
    """The chapter's document name in the book (``notebooks/<part>/<chapter>``), or its file name outside it."""
    try:
        return path.resolve().relative_to(ROOT).with_suffix("").as_posix()
    except ValueError:
        return path.stem


def last_build_claims(build: Path, docname: str) -> tuple[list[dict], str] | None:
    """The claims of ``docname`` in the build folder ``build`` and the file they came from: the chapter's
    ``claims/<docname>.json`` of a book build, else the ledger ``html/claims.json``; None when neither has it."""
    own = build / "claims" / (docname.replace("/", "__") + ".json")
    if own.exists():
        return json.loads(own.read_text()).get("claims", []), str(own)
    ledger = build / "html" / "claims.json"
    if ledger.exists():
        claims = [c for c in json.loads(ledger.read_text()) if c.get("docname") == docname]
        if claims:
            return claims, str(ledger)
    return None


def compare_claims(before: list[dict], after: list[dict]) -> list[str]:
    """Lines for every claim whose status changed between ``before`` and ``after`` (claims matched by source and
    statement), and for claims that are new or gone; empty when nothing changed."""
    key = lambda c: (c["source"], c["statement"])  # noqa: E731
    old = {key(c): c for c in before}
    new = {key(c): c for c in after}
    lines = []
    for k, c in new.items():
        if k not in old:
            lines.append(f" + new [{c['status']}] {c['source']}: {c['statement']}")
        elif old[k]["status"] != c["status"]:
            lines.append(f" ~ [{old[k]['status']}] -> [{c['status']}] {c['source']}: {c['statement']}"
                         f" (measured {old[k]['measured']} -> {c['measured']})")
    lines += [f" - gone [{c['status']}] {c['source']}: {c['statement']}" for k, c in old.items() if k not in new]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("--mode", default=os.environ.get("BOOK_MODE", "quick"), choices=["quick", "full"])
    parser.add_argument("--save", default=None, help="write the executed notebook here")
    parser.add_argument("--timeout", type=int, default=1200)
    parser.add_argument("--compare", default=str(ROOT / "_build"),
                        help="the build folder whose claims to compare with (default: the book's _build)")
    args = parser.parse_args(argv)

    path = Path(args.notebook).resolve()
    docname = docname_of(path)
    claims_dir = Path(tempfile.mkdtemp(prefix="eld-claims-"))
    t0 = time.time()
    nb, error = execute(path, mode=args.mode, claims_dir=claims_dir, docname=docname, timeout=args.timeout)
    elapsed = time.time() - t0
    problems = []
    if error:
        print(failing_cell(nb) or _ANSI.sub("", error)[-4000:])
        problems.append("a cell raised an error")
    if args.save:
        import nbformat

        nbformat.write(nb, args.save)
    claims = []
    for f in sorted(claims_dir.glob("*.json")):
        payload = json.loads(f.read_text())
        claims += payload["claims"]
        print(f"\nClaims of {payload['chapter']} ({len(payload['claims'])}):")
        for c in payload["claims"]:
            # a claim decided only in full mode is "checked in full mode" in a quick run, as the book's checks allow
            as_expected = c["status"] in (c["expect"], "checked in full mode")
            print(f" {'  ' if as_expected else '!!'} [{c['status']}] (expects {c['expect']}) {c['source']}: "
                  f"{c['statement']}")
            print(f"      expected {c['expected']} | measured {c['measured']} | tol {c['tolerance']}")
    differ = sum(c["status"] not in (c["expect"], "checked in full mode") for c in claims)
    if differ:
        problems.append(f"{differ} of {len(claims)} claims differ from what the chapter expects (marked !!)")
    stderr = stderr_outputs(nb)
    if stderr:
        print("\nOutputs on stderr (the book's -W build fails on them):\n  " + "\n  ".join(stderr))
        problems.append(f"{len(stderr)} outputs on stderr")
    bad = widget_outputs_without_static(nb)
    if bad:
        problems.append(f"widget outputs without a static form: {', '.join(bad)}")
    earlier = last_build_claims(Path(args.compare), docname) if claims else None
    if earlier is not None:
        before, source = earlier
        modes = {c.get("mode") for c in before} - {None, ""}
        changes = compare_claims(before, claims)
        note = f" (that build ran in {', '.join(sorted(modes))} mode)" if modes and modes != {args.mode} else ""
        print(f"\nAgainst the last build's claims ({source}){note}: "
              + (f"{len(changes)} changed" if changes else "no status changed"))
        for line in changes:
            print(line)
    elif claims:
        print(f"\nNo earlier claims of {docname} under {args.compare}: nothing to compare")
    verdict = "OK" if not problems else "FAILED: " + "; ".join(problems)
    print(f"\n{docname}: {verdict} ({elapsed:.1f} s, {args.mode} mode)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
