"""The paper-scale ledger of book/paper_scale.md (directive ``eld-paper-scale-ledger``).

At build time it reads the committed result files in ``book/paper_scale/results`` and the CPU claims this build
recorded (``_build/claims/*.json``, written while the chapters execute), and renders one row per claim of every
named run of :mod:`lib.paper_scale`: the chapter's CPU status beside the paper-scale status, decided by the
chapter's own rule functions, with the device and date of the run. A stale result (its configuration or code no
longer the present one) is shown as stale, never as current; a smoke result is not shown as a result at all.
No GPU is needed to build it.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


class paper_scale_ledger_node(nodes.General, nodes.Element):
    pass


class PaperScaleLedgerDirective(SphinxDirective):
    has_content = False

    def run(self):
        self.env.note_reread()  # it reads the other chapters' claims: re-read on every build
        return [paper_scale_ledger_node()]


def _cpu_claims(app) -> list[dict]:
    """The claims this build recorded, each with its ``docname`` (as eld_book writes them)."""
    out = []
    for path in sorted((Path(app.outdir).parent / "claims").glob("*.json")):
        docname = path.stem.replace("__", "/")
        for claim in json.loads(path.read_text()).get("claims", []):
            out.append(dict(claim, docname=docname))
    return out


def ledger_html(rows: list[dict], uri) -> str:
    """The ledger table; ``uri(docname)`` links a chapter."""
    e = html.escape
    if not rows:
        return "<p><em>No paper-scale runs are registered.</em></p>"
    current = [r for r in rows if r["state"] == "current"]
    parts = []
    if not current:
        parts.append("<p><strong>No paper-scale results are committed yet.</strong> Run "
                     "<code>scripts/gpu_runs.sh</code> on a machine with a CUDA GPU (or "
                     "<code>make paper-scale NAME=...</code> for one run) and commit "
                     "<code>book/paper_scale/results/</code>; the table below then fills in. Until then it lists "
                     "the claims each run would decide, with the chapter's rule and this build's CPU status.</p>")
    parts.append('<div class="table-wrapper"><table class="docutils align-default eld-paper-scale">'
                 "<thead><tr><th>run</th><th>claim</th><th>CPU (this build)</th><th>paper scale</th>"
                 "<th>measured at paper scale</th><th>device, date</th><th>rule (the chapter's)</th></tr></thead>"
                 "<tbody>")
    # the runs with a current result first, then stale ones, then those not run yet (each group in registry order)
    for r in sorted(rows, key=lambda r: (r["state"] != "current", r["state"] == "none")):
        if r["state"] == "current":
            ps = f"<strong>{e(r['status'])}</strong>"
        elif r["state"] == "none":
            ps = "<em>not run yet</em>"
        else:
            ps = f"<em>{e(r['state'])}</em> (not current; rerun it)"
        cpu = ", ".join(e(s) for s in r["cpu"]) or "&ndash;"
        where = e(", ".join(x for x in (r["device"], r["date"]) if x)) or "&ndash;"
        parts.append(
            f"<tr><td><code>{e(r['run'])}</code><br><a href=\"{e(uri(r['chapter']))}\">{e(r['title'])}</a></td>"
            f"<td>{e(r['source'])}: {e(r['statement'])}</td><td>{cpu}</td><td>{ps}</td>"
            f"<td>{e(r['measured']) or '&ndash;'}</td><td>{where}</td><td>{e(r['rule'])}</td></tr>")
    parts.append("</tbody></table></div>")
    return "\n".join(parts)


def on_doctree_resolved(app, doctree, fromdocname):
    for node in list(doctree.findall(paper_scale_ledger_node)):
        if app.builder.format != "html":
            node.replace_self(nodes.paragraph(text="See the HTML book for the paper-scale ledger."))
            continue
        sys.path.insert(0, str(Path(app.srcdir)))
        from lib.paper_scale import ledger

        rows = ledger(cpu_claims=_cpu_claims(app))
        for r in rows:
            if r["state"].startswith("stale"):
                logger.info(f"paper-scale result {r['run']} is {r['state']}")

        def uri(docname):
            return app.builder.get_relative_uri(fromdocname, docname)

        node.replace_self(nodes.raw("", ledger_html(rows, uri), format="html"))


def setup(app):
    app.add_node(paper_scale_ledger_node)
    app.add_directive("eld-paper-scale-ledger", PaperScaleLedgerDirective)
    app.connect("doctree-resolved", on_doctree_resolved)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
