"""Local Sphinx extension: the book's own style sheet, ``static/eld_layout.css`` (code cells that fit their box at
desktop width and wrap on phones and in print), and ``static/eld_figures.js`` (figures that stay legible on a
phone, in a box of their own that scrolls sideways)."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"


def _add_static_path(app):
    if str(STATIC) not in app.config.html_static_path:
        app.config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("builder-inited", _add_static_path)
    app.add_css_file("eld_layout.css")
    app.add_js_file("eld_figures.js", loading_method="defer")
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
