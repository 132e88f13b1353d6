"""Serve MathJax from the book itself, so that its math renders without network.

``_config.yml`` sets ``mathjax_path: mathjax/tex-mml-chtml.js``, which Sphinx resolves to
``_static/mathjax/tex-mml-chtml.js`` in the HTML output. This extension copies the npm package ``mathjax``
(pinned in ``package.json``, installed into ``node_modules`` by ``npm ci``, which ``make`` runs) to that place
when an HTML build finishes.

The copy is made into the *output* only: a ``.js`` file under the book's own ``_static/`` folder would be added
by jupyter-book to every page as a script.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

#: prefix of a ``mathjax_path`` served by this extension (relative to the output's ``_static``)
LOCAL_PREFIX = "mathjax/"
#: the parts of the package the CHTML combined component loads (TeX extensions on demand, fonts, the menu's
#: accessibility tools); the other combined components and the SVG output are left out.
PARTS = ("tex-mml-chtml.js", "input", "output/chtml.js", "output/chtml", "a11y", "ui", "sre", "adaptors")


def mathjax_source(srcdir: str | Path) -> Path:
    """Where ``npm ci`` puts the ES5 build of MathJax, for a book whose source folder is ``srcdir``."""
    return Path(srcdir) / "node_modules" / "mathjax" / "es5"


def _served_locally(app: Sphinx) -> bool:
    path = app.config.mathjax_path or ""
    return "://" not in path and path.startswith(LOCAL_PREFIX)


def _check(app: Sphinx) -> None:
    if app.builder.format != "html" or not _served_locally(app):
        return
    main = mathjax_source(app.srcdir) / "tex-mml-chtml.js"
    if not main.exists():
        raise ExtensionError(
            f"MathJax is served from the book, but {main} is missing: run `npm ci` in the book's folder "
            "(`make setup` does it)"
        )


def _copy(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html" or not _served_locally(app):
        return
    src = mathjax_source(app.srcdir)
    dest = Path(app.outdir) / "_static" / Path(app.config.mathjax_path).parent
    for part in PARTS:
        s, d = src / part, dest / part
        if s.is_dir():
            shutil.copytree(s, d, dirs_exist_ok=True)
        else:
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, d)


def setup(app: Sphinx) -> dict:
    # every page loads MathJax, also those whose only math is in HTML outputs (claims tables, the report)
    app.set_html_assets_policy("always")
    app.connect("builder-inited", _check)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
