"""Lint the chapters like the library: export each MyST chapter to a notebook, run ruff on its code cells.

    python scripts/lint_chapters.py          # check (used by `make lint`): ruff check + ruff format --check
    python scripts/lint_chapters.py --fix    # apply ruff's fixes and formatting, and write the chapters back

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
                nb = jupytext.read(path)
                original = jupytext.read(md)
                nb.metadata = original.metadata
                text = jupytext.writes(nb, fmt="md:myst")
                if text != md.read_text():
                    md.write_text(text)
                    print(f"rewrote {md.relative_to(ROOT)}")
        check = subprocess.run(ruff + ["check", "--config", str(CONFIG), "--output-format", "concise", *files])
        fmt = subprocess.run(ruff + ["format", "--config", str(CONFIG), "--check", *files])
        return check.returncode or fmt.returncode


if __name__ == "__main__":
    sys.exit(main())
