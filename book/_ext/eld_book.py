"""Local Sphinx extension of the book.

* Claims: before each notebook is executed, the environment variables ``ELD_CLAIMS_DIR`` (``_build/claims``) and
  ``ELD_DOCNAME`` are set; the kernel inherits them and ``lib.claims`` writes the chapter's claims to
  ``_build/claims/<docname>.json``. A document that is read again has its old file removed first, so the
  claims always belong to the build they are part of.
* Report: the directive ``eld-claims-report`` is replaced, once every document has been read and executed,
  by the reproduction report: the claims of the papers counted per work (the book's own results and the
  illustrations apart), every claim that did not fully reproduce and every known deviation linked to its row, a
  coverage table per work from its manifest ``book/coverage/<work>.yml``, and every chapter's table. The whole
  ledger is written next to the pages as ``claims.json`` and ``claims.csv``.
* Execution: the notebooks about to be read are first executed several at a time (``eld_execute``) and handed
  to MyST-NB through its jupyter-cache; a document read again has its old claims removed before that.
* References: an unresolved ``py:`` cross-reference (a chapter's ``{py:func}``, a docstring's ``:func:``) is a
  warning, so the ``-W`` builds fail on it (``on_missing_reference`` says which are exempt and why).
* Timing: at the end of the build the execution time of every notebook, wall clock and the CPU time of its kernel,
  is printed and written to ``_build/timings.json``.
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


def _resources_file(app, docname: str) -> Path:
    # written by the chapter's kernel (lib.chapter): peak memory and widget callback times
    return _build_root(app) / "resources" / (docname.replace("/", "__") + ".json")


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
    os.environ["ELD_RESOURCES_DIR"] = str(_build_root(app) / "resources")


def on_env_purge_doc(app, env, docname):
    getattr(env, "eld_cpu", {}).pop(docname, None)
    if docname in _fresh(app):  # executed for this build a moment ago (eld_execute): its files are current
        return
    for path in (_claims_file(app, docname), _resources_file(app, docname)):
        if path.exists():
            path.unlink()


def _fresh(app) -> dict:
    """``{docname: record}`` of the notebooks executed side by side for this build that ran through."""
    return {d: r for d, r in getattr(app, "eld_executed", {}).items() if r.get("error") is None}


def on_env_before_read_docs(app, env, docnames):
    """Execute the notebooks about to be read, several at a time (``eld_execute``), after removing their old
    claims and resource records."""
    from eld_execute import pre_execute

    for docname in docnames:
        for path in (_claims_file(app, docname), _resources_file(app, docname)):
            if path.exists():
                path.unlink()
    app.eld_executed = pre_execute(app, docnames)


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: a notebook's kernel counts once it exits."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def on_source_read(app, docname, source):
    # The kernel started for this document inherits the variable.
    os.environ["ELD_DOCNAME"] = docname
    app.env.eld_cpu_start = (docname, _children_cpu())


def on_doctree_read(app, doctree):
    """The CPU time of the kernel that executed this document (it exits before the doctree is read): a budget
    measure that a busy machine barely moves, unlike wall time."""
    start = getattr(app.env, "eld_cpu_start", None)
    if start and start[0] == app.env.docname:
        if not hasattr(app.env, "eld_cpu"):
            app.env.eld_cpu = {}
        spent = _children_cpu() - start[1]
        record = _fresh(app).get(app.env.docname)
        if record is not None and record.get("cpu_s") is not None:
            if spent > 1.0:  # MyST-NB did not find the executed copy and ran the kernel again: slower, not wrong
                logger.warning(f"{app.env.docname} was executed twice (its cached copy did not match)")
            spent = record["cpu_s"]
            _keep_executed_notebook(app, app.env.docname, record)
        app.env.eld_cpu[app.env.docname] = spent


def _keep_executed_notebook(app, docname: str, record: dict) -> None:
    """MyST-NB writes the notebook it read to its output folder (``_build/jupyter_execute``), which holds outputs
    only when it executed the notebook itself; put the executed copy there, as a serial build leaves it."""
    executed = Path(record["notebook"])
    target = Path(app.env.mystnb_config.output_folder).joinpath(*docname.split("/")).with_suffix(".ipynb")
    if executed.exists() and target.parent.exists():
        target.write_bytes(executed.read_bytes())


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


STATUS_ORDER = ("reproduced", "partly reproduced", "not reproduced", "inconclusive", "checked in full mode")
KIND_LABEL = {"paper": "claims of the papers", "book": "results of the book's own", "illustration": "illustrations"}


def _counts_html(items, badge) -> str:
    """Badges with the number of claims of each status that occurs (a dash when there are none)."""
    counts = Counter(c["status"] for c in items)
    return ", ".join(f"{badge(s)} {counts[s]}" for s in STATUS_ORDER if counts.get(s)) or "&ndash;"


def _export(app, claims: list[dict]) -> None:
    """Write the whole ledger next to the HTML pages as claims.json and claims.csv."""
    import csv
    import io

    fields = ["work", "kind", "chapter", "docname", "source", "statement", "expected", "measured", "tolerance",
              "status", "expect", "deviation", "reason", "rule_after_run", "note", "mode"]
    out = Path(app.outdir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "claims.json").write_text(json.dumps([{k: c.get(k, "") for k in fields} for c in claims], indent=1))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(claims)
    (out / "claims.csv").write_text(buf.getvalue())


def _manifests(app) -> dict:
    from lib.claims import load_manifests

    return load_manifests(Path(app.srcdir) / "book" / "coverage")


def _report_html(app, fromdocname: str) -> str:
    import html
    import sys

    sys.path.insert(0, str(Path(app.srcdir)))
    from lib.claims import WORK_SHORT, WORKS, badge, coverage, table_html

    e = html.escape
    claims = load_claims(_claims_dir(app), set(app.env.found_docs))
    if not claims:
        return "<p><em>No claims were recorded in this build.</em></p>"
    for c in claims:
        c.setdefault("kind", "paper")
        c.setdefault("deviation", "")
    _export(app, claims)
    root = "../" * fromdocname.count("/")
    uri = {d: app.builder.get_relative_uri(fromdocname, d) for d in {c["docname"] for c in claims}}
    index = {}
    for c in claims:  # the row anchors of table_html(..., anchors=True): claim-<chapter>-<position in chapter>
        index.setdefault(c["docname"], []).append(c)
    anchor = {id(c): f"claim-{c['chapter']}-{i}" for cs in index.values() for i, c in enumerate(cs)}
    mode = sorted({c.get("mode", "full") for c in claims})
    paper = [c for c in claims if c["kind"] == "paper"]
    decided = [c for c in paper if c["status"] in STATUS_ORDER[:3]]
    undecided = [c for c in paper if c["status"] == "inconclusive"]
    later = [c for c in paper if c["status"] == "checked in full mode"]
    unexpected = [c for c in claims if c["status"] not in (c["expect"], "checked in full mode")]
    works = [w for w in WORKS if any(c["work"] == w for c in claims)]
    works += sorted({c["work"] for c in claims} - set(works))
    parts = [
        f"<p>This build ({', '.join(mode)} mode) recorded <strong>{len(paper)}</strong> claims made by the papers. "
        f"It decided <strong>{len(decided)}</strong> of them: " + _counts_html(decided, badge) + "; "
        f'it could not decide <a href="#could-not-decide">{len(undecided)}</a> (inconclusive: a precondition of the '
        "test failed, or the data cannot tell the laws apart)"
        + (f"; {len(later)} are decided only by the full build" if later else "") + ". Besides these it recorded "
        + ", ".join(f"{sum(c['kind'] == k for c in claims)} {KIND_LABEL[k]}" for k in ("book", "illustration"))
        + f". Claims whose status differs from what their chapter expects: <strong>{len(unexpected)}</strong>. "
        f'Rules written after a first run: <a href="#rules-after-a-run">'
        f"{sum(bool(c.get('rule_after_run')) for c in claims)}</a>. "
        f'The whole ledger: <a href="{root}claims.json" download>claims.json</a>, '
        f'<a href="{root}claims.csv" download>claims.csv</a>.</p>',
        '<div class="eld-claims-wrap"><table class="eld-claims"><thead><tr><th>work</th><th>claims of the paper</th>'
        "<th>book results</th><th>illustrations</th></tr></thead><tbody>",
    ]
    for w in works:
        row = [c for c in claims if c["work"] == w]
        cells = [_counts_html([c for c in row if c["kind"] == k], badge) for k in ("paper", "book", "illustration")]
        parts.append(f'<tr><td title="{e(WORKS.get(w, w))}">{e(WORK_SHORT.get(w, w))}</td>'
                     + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    parts.append("</tbody></table></div>")
    # what did not fully reproduce, and every known deviation, each linked to its row
    short = [c for c in claims if c["status"] in STATUS_ORDER[1:3] or c.get("deviation")]
    parts += _listing(claims, "could-not-decide", "Could not decide (inconclusive)", "why not",
                      lambda c: c["status"] == "inconclusive" or bool(c.get("reason")), lambda c: c.get("reason", ""),
                      uri, anchor, badge)
    parts += _listing(claims, "rules-after-a-run", "Rules written after a first run", "how the rule was set",
                      lambda c: bool(c.get("rule_after_run")), lambda c: c["rule_after_run"], uri, anchor, badge)
    parts.append('<h2 id="known-deviations">Not fully reproduced, and known deviations</h2>')
    if short:
        parts.append('<div class="eld-claims-wrap"><table class="eld-claims"><thead><tr><th>status</th>'
                     "<th>kind, source</th><th>claim</th><th>why</th></tr></thead><tbody>")
        for c in short:
            link = f'{uri[c["docname"]]}#{anchor[id(c)]}'
            parts.append(f"<tr><td>{badge(c['status'])}</td><td>{e(c['kind'])}<br>"
                         f'<a href="{link}">{e(c["source"])}</a> ({e(c.get("chapter_title") or c["chapter"])})</td>'
                         f"<td>{e(c['statement'])}</td><td>{e(c.get('deviation') or c.get('note', ''))}</td></tr>")
        parts.append("</tbody></table></div>")
    else:
        parts.append("<p>None.</p>")
    manifests = _manifests(app)
    for work in works:
        items = [c for c in claims if c["work"] == work]
        parts.append(f"<h2>{e(WORKS.get(work, work))}</h2>")
        parts.append("<p>Claims of the paper: " + _counts_html([c for c in items if c["kind"] == "paper"], badge)
                     + "</p>")
        if work in manifests:
            parts += _coverage_html(coverage(manifests[work], items), uri, anchor, badge)
        by_chapter = defaultdict(list)
        for c in items:
            by_chapter[c["docname"]].append(c)
        for docname, chapter_claims in by_chapter.items():
            title = chapter_claims[0].get("chapter_title") or docname
            parts.append(f'<h3><a href="{uri[docname]}">{e(title)}</a></h3>')
            parts.append(_table_with_anchors(chapter_claims, anchor, table_html))
    return "\n".join(parts)


def _listing(claims, anchor_id, title, why_head, select, why, uri, anchor, badge) -> list[str]:
    """A section listing the claims that ``select`` picks, each linked to its row, with ``why(claim)``."""
    import html

    e = html.escape
    rows = [c for c in claims if select(c)]
    out = [f'<h2 id="{anchor_id}">{e(title)}</h2>']
    if not rows:
        return out + ["<p>None.</p>"]
    out.append('<div class="eld-claims-wrap"><table class="eld-claims"><thead><tr><th>status</th>'
               f"<th>kind, source</th><th>claim</th><th>{e(why_head)}</th></tr></thead><tbody>")
    for c in rows:
        link = f'{uri[c["docname"]]}#{anchor[id(c)]}'
        out.append(f"<tr><td>{badge(c['status'])}</td><td>{e(c['kind'])}<br>"
                   f'<a href="{link}">{e(c["source"])}</a> ({e(c.get("chapter_title") or c["chapter"])})</td>'
                   f"<td>{e(c['statement'])}</td><td>{e(why(c))}</td></tr>")
    return out + ["</tbody></table></div>"]


#: what each coverage class of lib.claims.COVERAGE means on the report
COVERAGE_LABEL = {
    "paper": "decided by a claim of the paper",
    "inconclusive": "only inconclusive claims of the paper",
    "illustrated": "only the book's own results or illustrations",
    "explained": "not covered (the reason is given)",
    "gap": "not covered, no reason given",
}


def _coverage_html(rows, uri, anchor, badge) -> list[str]:
    """A work's coverage: the headline counts by class, and per item its strongest claim's kind and status."""
    import html

    e = html.escape
    counts = Counter(r["by"] for r in rows)
    head = "; ".join(f"{counts[k]} {COVERAGE_LABEL[k]}" for k in COVERAGE_LABEL if counts.get(k))
    out = [f"<p><strong>Coverage of the {len(rows)} numbered items</strong> (figures, tables, results, algorithms, "
           f"remarks): {head}.</p>",
           f"<details><summary>Coverage, item by item ({counts.get('paper', 0)} of {len(rows)} decided by a claim "
           "of the paper)</summary>",
           '<div class="eld-claims-wrap"><table class="eld-claims"><thead><tr><th>item</th><th>what</th>'
           "<th>strongest evidence</th><th>all claims, or why none</th></tr></thead><tbody>"]
    for r in rows:
        best = r["strongest"]
        if best is not None:
            strongest = f"{badge(best['status'])}<br>{e(best.get('kind', 'paper'))}"
            cov = ", ".join(f'<a href="{uri[c["docname"]]}#{anchor[id(c)]}">{e(c["source"])}</a> '
                            f"({e(c.get('kind', 'paper'))}, {e(c['status'])})" for c in r["claims"])
            if r["explained"] and r["by"] != "paper":
                cov += f"<br><em>why no deciding claim of the paper: {e(r['explained'])}</em>"
        else:
            strongest = "&ndash;"
            cov = f"<em>not covered: {e(r['explained'])}</em>" if r["explained"] else "<strong>gap</strong>"
        out.append(f"<tr><td>{e(r['id'])}</td><td>{e(r['what'])}</td><td>{strongest}</td><td>{cov}</td></tr>")
    return out + ["</tbody></table></div></details>"]


def _table_with_anchors(chapter_claims, anchor, table_html) -> str:
    """The chapter's claims table; each row carries the anchor the chapter page gives it."""
    import re

    html_text = table_html(chapter_claims)
    ids = iter(anchor[id(c)] for c in chapter_claims)
    return re.sub(r"<tr><td>", lambda m: f'<tr id="report-{next(ids)}"><td>', html_text, count=len(chapter_claims))


def on_doctree_resolved(app, doctree, fromdocname):
    for node in list(doctree.findall(claims_report_node)):
        if app.builder.format == "html":
            node.replace_self(nodes.raw("", _report_html(app, fromdocname), format="html"))
        else:
            node.replace_self(nodes.paragraph(text="See the HTML book for the claims report."))


def _png_description(path: Path) -> str:
    """The ``Description`` text chunk of a PNG (written by the book's inline figures), or ``""``."""
    try:
        from PIL import Image

        with Image.open(path) as im:
            return str(getattr(im, "text", {}).get("Description", ""))
    except Exception:  # noqa: BLE001 - a figure without a description keeps its default alt text
        return ""


def on_doctree_resolved_figures(app, doctree, fromdocname):
    """Every figure a chapter draws gets its description (see ``lib.plots.figure_description``) as alt text."""
    for node in doctree.findall(nodes.image):
        uri = node.get("uri", "")
        if node.get("alt") or not uri.endswith(".png"):
            continue
        # MyST-NB writes output images flat into <build>/jupyter_execute/<hash>.png
        candidates = (Path(app.env.relfn2path(uri, fromdocname)[1]),
                      _build_root(app) / "jupyter_execute" / Path(uri).name)
        path = next((c for c in candidates if c.exists()), None)
        text = _png_description(path) if path is not None else ""
        if text:
            node["alt"] = text


def _lib_class_names() -> set[str]:
    """The names of the classes defined in the modules of ``lib`` imported so far (by autodoc)."""
    import sys

    return {name for mod, module in list(sys.modules.items()) if mod == "lib" or mod.startswith("lib.")
            for name, value in vars(module).items()
            if isinstance(value, type) and getattr(value, "__module__", "").startswith("lib")}


def on_missing_reference(app, env, node, contnode):
    """An unresolved ``py:`` cross-reference is a warning (an error in the ``-W`` builds), as Sphinx's ``nitpicky``
    would make it, but for the Python domain only (``nitpicky`` with every other domain ignored would also silence the
    ``std`` references that warn today). Exempt, with reason: ``py:class`` references to classes outside ``lib``.
    Napoleon turns the type names of ``Args``/``Returns`` fields (``numpy.ndarray``, ``torch.Tensor``) into such
    references, and a docstring inherited from torch (``forward``) names torch's ``Module``; without an intersphinx
    inventory (the build is offline) none of them can resolve, and napoleon also reads some ``Returns`` prose as type
    names (about 200 warnings in all when checked). A ``py:class`` reference to a class of ``lib`` must resolve, and
    so must every ``py:func``, ``py:meth``, ``py:data``, ``py:attr``, ``py:mod``, ``py:obj`` and ``py:exc`` one:
    refer to an object outside ``lib`` as literal text (````scipy.integrate.solve_ivp````). Switched off by
    ``eld_check_py_refs = False`` (``scripts/check_page.py``, whose one-page build has no API pages to link to)."""
    if not app.config.eld_check_py_refs or node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if node.get("reftype") == "class" and not target.startswith("lib.") and \
            target.rsplit(".", 1)[-1] not in _lib_class_names():
        return None
    node["refwarn"] = True  # Sphinx then warns "py:<type> reference target not found: <target>"
    return None


#: Each figure of a chapter opens at full size when clicked (the column shows wide figures scaled down).
FIGURE_LINKS_JS = """
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".cell_output img").forEach(function (img) {
    if (img.closest("a") || img.closest(".eld-static-widget") || img.src.startsWith("data:")) { return; }
    var a = document.createElement("a");
    a.href = img.src; a.target = "_blank"; a.className = "eld-figure-link";
    a.title = "Open the figure at full size";
    img.parentNode.insertBefore(a, img); a.appendChild(img);
  });
});
"""


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
            cpu = getattr(app.env, "eld_cpu", {}).get(docname)
            if cpu is not None:
                timings[docname]["cpu_s"] = round(float(cpu), 1)
            res = _resources_file(app, docname)
            if res.exists():
                try:
                    record = json.loads(res.read_text())
                    timings[docname]["peak_rss_mb"] = float(record["peak_rss_mb"])
                    widgets = record.get("widgets", [])
                    if widgets:  # the slowest widget of the chapter: its median and slowest frame
                        timings[docname]["widget_median_s"] = round(max(w["median_s"] for w in widgets), 3)
                        timings[docname]["widget_max_s"] = round(max(w["max_s"] for w in widgets), 3)
                except (ValueError, KeyError, TypeError):
                    logger.info(f"unreadable resource record {res.name}: ignored")
    if not timings:
        return
    (_build_root(app) / "timings.json").write_text(json.dumps(timings, indent=1))
    mode = os.environ.get("BOOK_MODE", "full")
    lines = [f"Notebook execution times ({mode} mode): wall, kernel CPU, kernel peak memory, widget callback "
             "(median frame of the chapter's slowest widget):"]
    nan = float("nan")
    for docname, t in timings.items():
        lines.append(f"  {t['runtime_s']:8.1f} s {t.get('cpu_s', nan):8.1f} s {t.get('peak_rss_mb', nan):7.0f} MiB "
                     f"{t.get('widget_median_s', nan):6.2f} s  {docname}{'' if t['succeeded'] else '  (FAILED)'}")
    lines.append(f"  {sum(t['runtime_s'] for t in timings.values()):8.1f} s "
                 f"{sum(t.get('cpu_s', 0.0) for t in timings.values()):8.1f} s  total")
    logger.info("\n".join(lines), color="green")


#: Cell timeout of full-mode builds (seconds of wall time). Budgets are checked on CPU time after the build; the
#: timeout only stops a hung cell, and a full-mode chapter on a busy 2-core machine can take far longer in wall time
#: than its CPU time (the quick builds of CI keep the configured 1200 s).
FULL_MODE_TIMEOUT = 3600


def on_config_inited(app, config):
    if os.environ.get("BOOK_MODE", "full") == "full" and config.nb_execution_timeout < FULL_MODE_TIMEOUT:
        config.nb_execution_timeout = FULL_MODE_TIMEOUT


def setup(app):
    app.add_node(claims_report_node)
    app.connect("config-inited", on_config_inited)
    app.add_directive("eld-claims-report", ClaimsReportDirective)
    app.connect("builder-inited", on_builder_inited)
    app.connect("env-purge-doc", on_env_purge_doc)
    app.connect("env-before-read-docs", on_env_before_read_docs)
    app.connect("source-read", on_source_read)
    app.connect("doctree-read", on_doctree_read)
    app.connect("html-page-context", on_page_dedup_js, priority=999)
    app.connect("doctree-resolved", on_doctree_resolved)
    app.connect("doctree-resolved", on_doctree_resolved_figures)
    app.add_js_file(None, body=FIGURE_LINKS_JS)
    app.connect("build-finished", on_build_finished)
    app.add_config_value("eld_check_py_refs", True, "env")
    app.connect("missing-reference", on_missing_reference, priority=900)  # after any handler that resolves it
    return {"version": "0.1", "parallel_read_safe": False, "parallel_write_safe": True}
