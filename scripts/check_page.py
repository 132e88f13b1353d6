"""Build one chapter as a tiny book, with warnings as errors, to check that it renders.

    python scripts/check_page.py notebooks/<part>/<chapter>.md [--mode quick|full] [--checks]

The page is copied into ``_build/check/<name>/``, at its own path in the book (``notebooks/<part>/<chapter>.md``),
together with a bibliography page and a copy of the book's configuration (every ``book/*.bib`` file, the local
extensions); the HTML lands in ``_build/check/<name>/_build/html/notebooks/<part>/<chapter>.html``.

``--checks`` then runs on that build the post-build checks of one chapter's page that ``make test`` runs on every
chapter (``scripts/page_checks.py``: claims as expected, widgets with static forms, captions and named controls, at
least three captioned figures as wide as the column at most, the CPU budget, the page's title and links) and lists
every check that fails. Exit status 1 if the build or a check fails.
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("--mode", default="quick", choices=["quick", "full"])
    parser.add_argument("--checks", action="store_true", help="run the post-build checks of a chapter page on it")
    args = parser.parse_args(argv)
    page = Path(args.notebook).resolve()
    work = ROOT / "_build" / "check" / page.stem
    docname, status = build_page(page, work, mode=args.mode)
    html = work / "_build" / "html" / f"{docname}.html"
    print(f"\nHTML: {html}")
    if not args.checks or not html.exists():
        return status or int(not html.exists())
    from page_checks import CHECKS, Page, run_checks

    failed = run_checks(Page(work / "_build", docname, mode=args.mode))
    for line in failed:
        print(f"FAILED {line}")
    print(f"\n{docname}: {len(CHECKS) - len(failed)} of {len(CHECKS)} page checks pass ({args.mode} mode)")
    return 1 if failed or status else 0


def docname_of(page: Path) -> str:
    """The document name of ``page`` in the book (``notebooks/<part>/<chapter>``), or ``page`` outside the book."""
    try:
        return page.relative_to(ROOT).with_suffix("").as_posix()
    except ValueError:
        return "page"


def build_page(page: Path, work: Path, *, mode: str = "quick") -> tuple[str, int]:
    """Build ``page`` alone, with warnings as errors, in ``work`` (emptied first); return its document name and the
    build's exit status. The build's outputs are in ``work/_build``."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    docname = docname_of(page)
    (work / docname).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(page, work / f"{docname}.md")
    (work / "book").mkdir(exist_ok=True)
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
    # the page's {py:func} links point at the API pages, which a one-page build lacks: the whole build checks them
    config["sphinx"]["config"]["eld_check_py_refs"] = False
    config["exclude_patterns"] = ["_build"]
    (work / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (work / "_toc.yml").write_text(f"format: jb-book\nroot: {docname}\nchapters:\n  - file: bibliography\n")
    env = dict(os.environ, BOOK_MODE=mode, PYTHONPATH=str(ROOT))
    jb = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(jb), "build", str(work), "-W", "--keep-going"]
    proc = subprocess.run(cmd, env=env, cwd=work)
    return docname, proc.returncode


if __name__ == "__main__":
    sys.exit(main())
