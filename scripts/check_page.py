"""Build one chapter as a tiny book, with warnings as errors, to check that it renders.

    python scripts/check_page.py notebooks/<part>/<chapter>.md [--mode quick|full]

The page is copied into ``_build/check/<name>/`` together with a bibliography page and a copy of the book's
configuration (every ``book/*.bib`` file, the local extension); the HTML lands in
``_build/check/<name>/_build/html/page.html``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("--mode", default="quick", choices=["quick", "full"])
    args = parser.parse_args()
    page = Path(args.notebook).resolve()
    work = ROOT / "_build" / "check" / page.stem
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    shutil.copy(page, work / "page.md")
    (work / "book").mkdir()
    for asset in ("favicon.svg",):  # files the configuration names by a path relative to the book
        shutil.copy(ROOT / "book" / asset, work / "book" / asset)
    (work / "bibliography.md").write_text("# Bibliography\n\n```{bibliography}\n```\n")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["bibtex_bibfiles"] = [str(p) for p in sorted((ROOT / "book").glob("*.bib"))]
    # the book's local extensions (absolute paths), but eld_mathjax, which serves MathJax from the book's node_modules
    config["sphinx"]["local_extensions"] = {
        name: str(ROOT / path) for name, path in config["sphinx"]["local_extensions"].items() if name != "eld_mathjax"
    }
    scorer = config["sphinx"]["config"].get("html_search_scorer")
    if scorer:  # a path relative to the book
        config["sphinx"]["config"]["html_search_scorer"] = str(ROOT / scorer)
    config["exclude_patterns"] = ["_build"]
    (work / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (work / "_toc.yml").write_text("format: jb-book\nroot: page\nchapters:\n  - file: bibliography\n")
    env = dict(os.environ, BOOK_MODE=args.mode, PYTHONPATH=str(ROOT))
    jb = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(jb), "build", str(work), "-W", "--keep-going"]
    proc = subprocess.run(cmd, env=env, cwd=work)
    print(f"\nHTML: {work / '_build' / 'html' / 'page.html'}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
