"""The student edition of the book: the chapters without their solutions (``make student``).

    python scripts/student.py notebooks --out _build/student/notebooks   # .ipynb copies without {solution} blocks
    python scripts/student.py config --out _build/student/_config.yml     # the book's config with solutions hidden

``notebooks`` writes one ``.ipynb`` per chapter (``notebooks/<part>/NN_name.md`` ->
``<out>/<part>/NN_name.ipynb``) with every ``{solution}`` directive removed from its Markdown cells; the exercises
stay. ``config`` writes a copy of ``_config.yml`` for the student HTML build: sphinx-exercise's ``hide_solutions``
on, and neither download nor launch buttons nor page sources (each would serve a chapter with its solutions).
``make student`` runs both and builds the HTML from that config. The notebooks are not executed here; the HTML
build executes the chapters in quick mode unless ``BOOK_MODE`` says otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: the opening line of a solution directive: a colon fence (``:::``, ``::::``, ...) or a backtick fence
_OPEN = re.compile(r"^\s*(?P<fence>:{3,}|`{3,})\{solution\}")


def strip_solutions(text: str) -> str:
    """``text`` (MyST Markdown) without its ``{solution}`` directives, each removed from its opening fence to the
    closing fence of the same character and at least the same length (so a directive nested inside a solution, which
    must use a shorter fence, goes with it). Raises ValueError naming ``text`` if a solution is never closed."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, not {type(text).__name__}")
    out: list[str] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        fence = m.group("fence")
        close = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        if j == len(lines):
            raise ValueError(f"text: the {{solution}} opened on line {i + 1} is never closed")
        i = j + 1
        # one blank line where the solution was: drop the blank line that followed it
        if out and not out[-1].strip() and i < len(lines) and not lines[i].strip():
            i += 1
    return "".join(out)


def has_solution(text: str) -> bool:
    """Whether MyST Markdown ``text`` still holds a solution: a ``{solution}`` directive or an admonition titled
    "Solution" (the form the exercises must not use)."""
    return bool(re.search(r"\{solution\}|\{admonition\}\s*Solution", text))


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapters of the book (``notebooks/<part>/NN_name.md``)."""
    return sorted(root.glob("notebooks/*/[0-9]*.md"))


def student_notebook(md: Path):
    """The chapter ``md`` as a notebook (nbformat) with its solutions removed from every Markdown cell."""
    import jupytext

    md = Path(md)
    if not md.is_file():
        raise ValueError(f"md: no chapter at {md}")
    nb = jupytext.read(md)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = strip_solutions(cell.source).rstrip("\n")
    nb.cells = [c for c in nb.cells if c.cell_type != "markdown" or c.source.strip()]
    return nb


def write_notebooks(out: Path, root: Path = ROOT) -> list[Path]:
    """Write the student notebook of every chapter under ``out/<part>/``; return the paths written."""
    import jupytext

    written = []
    for md in chapters(root):
        nb = student_notebook(md)
        path = Path(out) / md.parent.name / (md.stem + ".ipynb")
        path.parent.mkdir(parents=True, exist_ok=True)
        jupytext.write(nb, path)
        written.append(path)
    return written


def student_config(config: dict) -> dict:
    """A copy of the book's ``_config.yml`` (as a dict) for the student edition: solutions hidden, no download
    button, the title marked."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, not {type(config).__name__}")
    import copy

    cfg = copy.deepcopy(config)
    cfg["title"] = f"{cfg.get('title', 'Executable Learning Dynamics')} (student edition)"
    cfg.setdefault("html", {})["use_download_button"] = False
    # no launch buttons: the theme copies each executed notebook, solutions included, next to the page for them
    cfg["launch_buttons"] = {"notebook_interface": "jupyterlab", "binderhub_url": ""}
    sphinx = cfg.setdefault("sphinx", {})
    sphinx["recursive_update"] = True  # merge the theme option below into jupyter-book's, do not replace them
    extra = sphinx.setdefault("config", {})
    extra["hide_solutions"] = True
    extra["html_copy_source"] = False  # the page sources (.md with solutions) are not copied into the site
    extra.setdefault("html_theme_options", {})["use_download_button"] = False
    return cfg


def write_config(out: Path, root: Path = ROOT) -> Path:
    import yaml

    cfg = student_config(yaml.safe_load((root / "_config.yml").read_text()))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # jupyter-book resolves local_extensions against the folder of the configuration file, not the book's: point
    # them from where this copy lives back to the book's extensions
    local = cfg.get("sphinx", {}).get("local_extensions") or {}
    for name, path in local.items():
        local[name] = os.path.relpath(Path(root).resolve() / path, out.parent.resolve())
    out.write_text("# Generated by scripts/student.py from _config.yml: do not edit.\n"
                   + yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["notebooks", "config"])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.what == "notebooks":
        written = write_notebooks(args.out)
        left = [p for p in written if has_solution(p.read_text())]
        if left:
            print("solutions left in: " + ", ".join(map(str, left)), file=sys.stderr)
            return 1
        print(f"{len(written)} student notebooks without solutions in {args.out}")
    else:
        print(f"student config: {write_config(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
