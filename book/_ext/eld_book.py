"""Local Sphinx extension of the book.

* Claims: before each notebook is executed, the environment variables ``ELD_CLAIMS_DIR`` (``_build/claims``) and
  ``ELD_DOCNAME`` are set; the kernel inherits them and ``lib.claims`` writes the chapter's claims to
  ``_build/claims/<docname>.json``. A document that is read again has its old file removed first, so the
  claims always belong to the build they are part of.
* Report: the directive ``eld-claims-report`` is replaced, once every document has been read and executed,
  by the table of all claims grouped by work, with a summary.
* Timing: at the end of the build the execution time of every notebook is printed and written to
  ``_build/timings.json``.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


def _build_root(app) -> Path:
    # app.outdir is <root>/_build/html; claims and timings live next to it.
    return Path(app.outdir).parent


def _claims_dir(app) -> Path:
    return _build_root(app) / "claims"


def _claims_file(app, docname: str) -> Path:
    return _claims_dir(app) / (docname.replace("/", "__") + ".json")


class claims_report_node(nodes.General, nodes.Element):
    pass


class ClaimsReportDirective(SphinxDirective):
    has_content = False

    def run(self):
        # The report depends on every other document: re-read it on every build.
        self.env.note_reread()
        return [claims_report_node()]


def on_builder_inited(app):
    _claims_dir(app).mkdir(parents=True, exist_ok=True)
    os.environ["ELD_CLAIMS_DIR"] = str(_claims_dir(app))


def on_env_purge_doc(app, env, docname):
    path = _claims_file(app, docname)
    if path.exists():
        path.unlink()


def on_source_read(app, docname, source):
    # The kernel started for this document inherits the variable.
    os.environ["ELD_DOCNAME"] = docname


def on_page_dedup_js(app, pagename, templatename, context, doctree):
    """sphinx-thebe's set-up runs twice under jupyter-book, so every page declared ``THEBE_JS_URL`` twice (a
    console error in the browser); keep the first copy of each script tag."""
    files = context.get("script_files")
    if not files:
        return
    seen, kept = set(), []
    for js in files:
        # an inline script is added once with filename None and once with '': treat them as the same
        key = (getattr(js, "filename", str(js)) or "", repr(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    context["script_files"] = kept


def load_claims(claims_dir: Path, docnames=None) -> list[dict]:
    """All claims in ``claims_dir`` (only of ``docnames`` when given), each dict with its ``docname``."""
    out = []
    for path in sorted(claims_dir.glob("*.json")):
        docname = path.stem.replace("__", "/")
        if docnames is not None and docname not in docnames:
            continue
        payload = json.loads(path.read_text())
        for claim in payload.get("claims", []):
            out.append(dict(claim, docname=docname, chapter_title=payload.get("title", "")))
    return out


def _report_html(app, fromdocname: str) -> str:
    import sys

    sys.path.insert(0, str(Path(app.srcdir)))
    from lib.claims import WORKS, badge, table_html

    claims = load_claims(_claims_dir(app), set(app.env.found_docs))
    if not claims:
        return "<p><em>No claims were recorded in this build.</em></p>"
    counts = Counter(c["status"] for c in claims)
    unexpected = [c for c in claims if c["status"] != c["expect"]]
    mode = sorted({c.get("mode", "full") for c in claims})
    parts = [
        f"<p>This build ({', '.join(mode)} mode) checked <strong>{len(claims)}</strong> claims: "
        + ", ".join(f"{badge(s)} {counts.get(s, 0)}" for s in ("reproduced", "partly reproduced", "not reproduced"))
        + f". Claims whose status differs from what their chapter expects: <strong>{len(unexpected)}</strong>.</p>"
    ]
    by_work = defaultdict(list)
    for c in claims:
        by_work[c["work"]].append(c)
    for work in [w for w in WORKS if w in by_work] + sorted(set(by_work) - set(WORKS)):
        items = by_work[work]
        wc = Counter(c["status"] for c in items)
        parts.append(f"<h2>{WORKS.get(work, work)}</h2>")
        parts.append(
            "<p>" + ", ".join(f"{s}: {wc.get(s, 0)}" for s in ("reproduced", "partly reproduced", "not reproduced"))
            + "</p>"
        )
        by_chapter = defaultdict(list)
        for c in items:
            by_chapter[c["docname"]].append(c)
        for docname, chapter_claims in by_chapter.items():
            uri = app.builder.get_relative_uri(fromdocname, docname)
            title = chapter_claims[0].get("chapter_title") or docname
            parts.append(f'<h3><a href="{uri}">{title}</a></h3>')
            parts.append(table_html(chapter_claims))
    return "\n".join(parts)


def on_doctree_resolved(app, doctree, fromdocname):
    for node in list(doctree.findall(claims_report_node)):
        if app.builder.format == "html":
            node.replace_self(nodes.raw("", _report_html(app, fromdocname), format="html"))
        else:
            node.replace_self(nodes.paragraph(text="See the HTML book for the claims report."))


def on_build_finished(app, exception):
    if exception is not None:
        return
    data = getattr(app.env, "nb_metadata", {})
    timings = {}
    for docname, meta in sorted(data.items()):
        exec_data = meta.get("exec_data") if isinstance(meta, dict) else None
        if exec_data and exec_data.get("runtime") is not None:
            timings[docname] = {"runtime_s": round(float(exec_data["runtime"]), 1),
                                "succeeded": bool(exec_data.get("succeeded"))}
    if not timings:
        return
    (_build_root(app) / "timings.json").write_text(json.dumps(timings, indent=1))
    mode = os.environ.get("BOOK_MODE", "full")
    lines = [f"Notebook execution times ({mode} mode):"]
    for docname, t in timings.items():
        lines.append(f"  {t['runtime_s']:8.1f} s  {docname}{'' if t['succeeded'] else '  (FAILED)'}")
    lines.append(f"  {sum(t['runtime_s'] for t in timings.values()):8.1f} s  total")
    logger.info("\n".join(lines), color="green")


def setup(app):
    app.add_node(claims_report_node)
    app.add_directive("eld-claims-report", ClaimsReportDirective)
    app.connect("builder-inited", on_builder_inited)
    app.connect("env-purge-doc", on_env_purge_doc)
    app.connect("source-read", on_source_read)
    app.connect("html-page-context", on_page_dedup_js, priority=999)
    app.connect("doctree-resolved", on_doctree_resolved)
    app.connect("build-finished", on_build_finished)
    return {"version": "0.1", "parallel_read_safe": False, "parallel_write_safe": True}
