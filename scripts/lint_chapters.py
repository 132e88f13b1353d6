"""Lint the chapters like the library: export each MyST chapter to a notebook, run ruff on its code cells.

    python scripts/lint_chapters.py          # check (used by `make lint`): ruff check + ruff format --check
    python scripts/lint_chapters.py --fix    # apply ruff's fixes and formatting, and write the chapters back

``--fix`` (``make format-chapters``) writes back only the code cells ruff changed, into the chapter's own text: the
prose, the cells' options and their metadata (figure captions) stay byte for byte, and a chapter whose code ruff
left alone is not written at all.

It also checks the ledger's rule that a claim has one expectation in both modes: no ``expect=`` (in a chapter or in
``lib``) may depend on the build mode (``config.pick(...)``, ``BOOK_MODE``, ``QUICK``); a claim quick mode cannot decide
is ``full_mode_only=True``. And it checks the math of every page (``scripts/lint_math.py``): a display ``$$`` stands
in a paragraph of its own, so MyST does not pair its ``$`` signs with the inline formulas around it.

The notebooks are written to a temporary folder (the `.ipynb` twins are never committed); ruff reads only their
code cells, so the prose is left alone. Settings: `notebooks/ruff.toml` (the library's rules, code wrapped at 88
characters for the book's text column).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "notebooks" / "ruff.toml"
BIN = Path(sys.executable).parent


def chapters() -> list[Path]:
    return sorted(ROOT.glob("notebooks/*/[0-9]*.md")) + [ROOT / "notebooks" / "_template.md"]


_MODE_WORDS = ("pick", "book_mode", "quick", "mode")


def mode_dependent_expects(code: str, where: str = "<code>") -> list[str]:
    """``where:line`` of every ``expect=`` keyword whose value reads the build mode (``config.pick``, ``BOOK_MODE``,
    ``QUICK``, a ``mode`` variable), in ``code``; a cell that does not parse (IPython magics) is skipped."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg != "expect":
                continue
            names = {n.id for n in ast.walk(kw.value) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(kw.value) if isinstance(n, ast.Attribute)}
            if any(w in name.lower() for name in names for w in _MODE_WORDS):
                bad.append(f"{where}:{kw.value.lineno}: expect= depends on the build mode "
                           f"({ast.unparse(kw.value)[:60]}); use one expectation and full_mode_only=True")
    return bad


def ledger_violations() -> list[str]:
    """Mode-dependent expectations in the chapters' code cells and in ``lib``."""
    import jupytext

    bad = []
    for md in chapters():
        for i, cell in enumerate(jupytext.read(md).cells):
            if cell.cell_type == "code":
                bad += mode_dependent_expects(cell.source, f"{md.relative_to(ROOT)} (code cell {i})")
    for py in sorted((ROOT / "lib").rglob("*.py")):
        bad += mode_dependent_expects(py.read_text(), str(py.relative_to(ROOT)))
    return bad


def patched_text(text: str, old_cells, new_cells) -> str | None:
    """``text`` (a MyST chapter whose cells are ``old_cells``) with the source of each code cell replaced by that of
    the same cell in ``new_cells``; everything else, prose, cell options and metadata, byte for byte as it was.
    None when a cell's source cannot be found in order in the text."""
    if len(old_cells) != len(new_cells):
        return None
    out, pos = [], 0
    for old, new in zip(old_cells, new_cells, strict=True):
        if old.cell_type != "code" or old.source == new.source:
            continue
        start = text.find(old.source, pos) if old.source else -1
        if start < 0:
            return None
        out += [text[pos:start], new.source]
        pos = start + len(old.source)
    return "".join(out) + text[pos:]


def write_back(md: Path, fixed) -> bool:
    """Write the code cells of ``fixed`` (the formatted notebook of the chapter ``md``) into ``md``; a chapter whose
    code did not change is not written at all (its bytes and its modification time are kept). True if written."""
    import jupytext

    text = md.read_text()
    original = jupytext.read(md)
    if [c.source for c in original.cells if c.cell_type == "code"] == \
            [c.source for c in fixed.cells if c.cell_type == "code"]:
        return False
    new = patched_text(text, original.cells, fixed.cells)
    if new is None:  # the cells no longer line up: write the whole notebook back
        fixed.metadata = original.metadata
        new = jupytext.writes(fixed, fmt="md:myst")
    if new == text:
        return False
    md.write_text(new)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix", action="store_true", help="apply fixes and formatting to the chapters")
    args = parser.parse_args()
    import jupytext

    with tempfile.TemporaryDirectory(prefix="eld-lint-") as tmp:
        pairs = []
        for md in chapters():
            nb = jupytext.read(md)
            path = Path(tmp) / f"{md.parent.name}__{md.stem}.ipynb"
            jupytext.write(nb, path)
            pairs.append((md, path))
        files = [str(p) for _, p in pairs]
        ruff = [str(BIN / "ruff")]
        if args.fix:
            subprocess.run(ruff + ["check", "--config", str(CONFIG), "--fix", "--exit-zero", "-q", *files], check=True)
            subprocess.run(ruff + ["format", "--config", str(CONFIG), "-q", *files], check=True)
            for md, path in pairs:
                if write_back(md, jupytext.read(path)):
                    print(f"rewrote {md.relative_to(ROOT)}")
        check = subprocess.run(ruff + ["check", "--config", str(CONFIG), "--output-format", "concise", *files])
        fmt = subprocess.run(ruff + ["format", "--config", str(CONFIG), "--check", *files])
    ledger = ledger_violations()
    sys.path.insert(0, str(ROOT / "scripts"))
    from lint_math import math_violations  # display math MyST would pair wrongly (scripts/lint_math.py)

    ledger += math_violations()
    for line in ledger:
        print(line)
    return check.returncode or fmt.returncode or int(bool(ledger))


if __name__ == "__main__":
    sys.exit(main())
