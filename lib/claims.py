"""Claims are code: record each paper claim a chapter reproduces, with what was measured and a status.

A chapter calls :func:`chapter` once, :func:`record` for each claim (the status computed from the measurement
with :func:`status`), and :func:`show` to display its table. Every record is also written, atomically, to
``$ELD_CLAIMS_DIR/<document>.json``; the book's Sphinx extension sets that directory for the build and turns the
files into the reproduction report, and the tests check each claim's status against the one the chapter expects.
"""

from __future__ import annotations

import html
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .config import check_finite, check_in, check_range

#: A claim's status. ``inconclusive``: the experiment could not decide (a precondition of its rule failed: the model
#: did not learn, the data break the theorem's hypotheses, too few points or seeds, an exponent interval too wide to
#: tell the predicted law from its nearest competitor); it always carries a reason and is never read as a failure.
STATUSES = ("reproduced", "partly reproduced", "not reproduced", "inconclusive")
#: the status of a claim its experiment could not decide (one of :data:`STATUSES`)
INCONCLUSIVE = "inconclusive"
#: status of a claim whose evidence only full mode can afford, in a quick build
FULL_ONLY = "checked in full mode"
#: what a claim is: ``paper`` (the paper says it; the check could fail at the paper's strictness), ``book`` (the
#: book's own derivation, extension or stand-in finding), ``illustration`` (holds by construction)
KINDS = ("paper", "book", "illustration")

#: The works of the book, by bibtex key (see ``book/references.bib``), in the order of the book's parts: Part I
#: (Chen & Bruna), II (Wang et al.), III (Yang et al.), IV-V (L. Chen's thesis, ch. 2 and 4), VI (H. Li's thesis).
WORKS = {
    "chen2023eos": "Chen & Bruna, Beyond the Edge of Stability via Two-step Gradient Updates (ICML 2023)",
    "wang2024induction": "Wang, Yu, E & Wu, How Transformers Implement Induction Heads (2024)",
    "yang2025sim": "Yang et al., Dynamics of Concept Learning and Compositional Generalization (ICLR 2025)",
    "chen2025thesis": "L. Chen, Simple Structures in Neural Networks (PhD thesis, NYU, 2025)",
    "li2024thesis": ("H. Li, Optimization and Generalization Analysis of Advanced Neural Networks "
                     "(PhD thesis, RPI, 2024)"),
}
#: Short names of the works, for narrow tables.
WORK_SHORT = {
    "chen2023eos": "Chen & Bruna 2023",
    "wang2024induction": "Wang et al. 2024",
    "yang2025sim": "Yang et al. 2025",
    "chen2025thesis": "L. Chen 2025 (thesis)",
    "li2024thesis": "H. Li 2024 (thesis)",
}


@dataclass
class Claim:
    """One checked claim of a paper."""

    work: str
    source: str
    statement: str
    expected: str
    measured: str
    tolerance: str
    status: str
    expect: str = "reproduced"
    note: str = ""
    chapter: str = ""
    mode: str = field(default_factory=lambda: os.environ.get("BOOK_MODE", "full"))
    kind: str = "paper"
    deviation: str = ""
    reason: str = ""
    preconditions: list = field(default_factory=list)
    rule_after_run: str = ""

    @property
    def as_expected(self) -> bool:
        return self.status == self.expect or self.status == FULL_ONLY


_state: dict = {"slug": None, "title": None, "work": None, "claims": [], "shown": 0}


def claims_dir() -> Path | None:
    """Directory the claims are written to (``ELD_CLAIMS_DIR``), or None when unset."""
    value = os.environ.get("ELD_CLAIMS_DIR")
    return Path(value) if value else None


def chapter(slug: str, title: str, work: str | None = None) -> None:
    """Start the claim list of a chapter (call once at the top of its notebook, or through
    :func:`lib.chapter.setup`); ``work`` is the default work of its claims."""
    if not slug or not isinstance(slug, str) or any(c in slug for c in "/\\ "):
        raise ValueError(f"slug must be a non-empty string without slashes or spaces, got {slug!r}")
    if not isinstance(title, str) or not title.strip():
        raise ValueError(f"title must be a non-empty string, got {title!r}")
    if work is not None:
        check_in("work", work, WORKS)
    _state.update(slug=slug, title=title, work=work, claims=[], shown=0)
    _write()


def status(ok: bool, partly: bool = False) -> str:
    """``"reproduced"`` if ``ok``, else ``"partly reproduced"`` if ``partly``, else ``"not reproduced"``."""
    return STATUSES[0] if bool(ok) else (STATUSES[1] if bool(partly) else STATUSES[2])


def _competing(predicted: float, competing) -> tuple[float, list[float]]:
    """``predicted`` as a float and the competing exponents (default 0 and twice it), checked."""
    predicted = float(predicted)
    if not np.isfinite(predicted):
        raise ValueError(f"predicted must be a finite number, got {predicted!r}")
    competing = [0.0, 2.0 * predicted] if competing is None else [float(c) for c in np.atleast_1d(competing)]
    competing = [c for c in competing if c != predicted]
    if not competing or not np.all(np.isfinite(competing)):
        raise ValueError(f"competing must hold finite exponents other than the predicted one, got {competing!r}")
    return predicted, competing


def exponent_rule(predicted: float, *, competing=None, level: float = 0.95) -> str:
    """The decision rule of :func:`exponent_status` in words, for a claim's ``tolerance`` (also when no exponent
    could be fitted and the claim is inconclusive for another reason)."""
    check_finite("predicted", predicted)
    check_range("level", level, 0, 1, lo_open=True, hi_open=True)
    predicted, competing = _competing(predicted, competing)
    gap = min(abs(c - predicted) for c in competing)
    names = ", ".join(f"{c:.3g}" for c in competing)
    return (f"the {level:.0%} interval of the fitted exponent covers {predicted:.3g}; inconclusive "
            f"when it is wider than {gap:.3g}, the gap to the nearest competing exponent ({names})")


def exponent_status(fit, predicted: float, *, competing=None) -> tuple[str, str, str]:
    """Decide a rate, exponent or scaling law by a fitted exponent's interval (:func:`lib.stats.power_law_exponent`).

    ``competing`` are the exponents of the laws the experiment must tell the predicted one from; by default no
    dependence (0) and twice the predicted exponent. Returns ``(status, reason, rule)``: ``"inconclusive"`` (with the
    reason) when the interval is wider than the gap from ``predicted`` to the nearest competing exponent, since the
    grid cannot tell the laws apart; otherwise ``"reproduced"`` when the interval covers ``predicted`` and ``"not
    reproduced"`` when it does not. ``rule`` states this (:func:`exponent_rule`), for the claim's ``tolerance``.
    """
    for name in ("exponent", "lo", "hi", "level"):
        if not hasattr(fit, name):
            raise ValueError(f"fit must be a fitted exponent (lib.stats.power_law_exponent), got {fit!r}")
    check_finite("predicted", predicted)
    predicted, competing = _competing(predicted, competing)
    gap = min(abs(c - predicted) for c in competing)
    rule = exponent_rule(predicted, competing=competing, level=fit.level)
    width = fit.hi - fit.lo
    if width > gap:
        return INCONCLUSIVE, (f"the exponent's interval ({fit.lo:.2f} to {fit.hi:.2f}, width {width:.2f}) is wider "
                              f"than the gap {gap:.3g} between the predicted {predicted:.3g} and the nearest competing "
                              f"exponent: the grid cannot tell the laws apart"), rule
    return status(fit.lo <= predicted <= fit.hi), "", rule


def failed_preconditions(preconditions) -> list[str]:
    """The descriptions of the preconditions that failed, from a mapping ``{description: held}`` (in order)."""
    if preconditions is None:
        return []
    if not hasattr(preconditions, "items") or isinstance(preconditions, (str, bytes)):
        raise ValueError(f"preconditions must be a mapping {{description: bool}}, got {preconditions!r}")
    out = []
    for what, held in preconditions.items():
        if not isinstance(what, str) or not what.strip():
            raise ValueError(f"preconditions: every key must be a non-empty description, got {what!r}")
        if not isinstance(held, (bool, np.bool_)):
            raise ValueError(f"preconditions: {what!r} must map to a bool, got {held!r}")
        if not bool(held):
            out.append(what)
    return out


def record(
    *,
    source: str,
    statement: str,
    expected: str,
    measured,
    tolerance: str,
    status: str,
    kind: str,
    expect: str = "reproduced",
    deviation: str = "",
    note: str = "",
    work: str | None = None,
    full_mode_only: bool = False,
    preconditions=None,
    reason: str = "",
    rule_after_run: str = "",
) -> Claim:
    """Record one claim of the current chapter and return it.

    Args:
        source: where the claim is made, e.g. ``"Fig 2"``, ``"Thm 4.1"``, ``"Eq. (4)"``.
        statement: the claim in one sentence (the paper's claim in our words).
        expected: what the paper (or its theory) predicts.
        measured: what this build measured (formatted by the chapter from computed numbers).
        tolerance: the decision rule, fixed before running.
        status: one of :data:`STATUSES`, computed from the measurement (see :func:`status`).
        kind: one of :data:`KINDS`: ``"paper"`` (a claim the paper makes, checked by a test that could fail at the
            paper's strictness), ``"book"`` (the book's own derivation, extension or stand-in finding) or
            ``"illustration"`` (a demonstration that holds by construction).
        expect: the status the chapter expects; the tests fail when ``status`` differs. A ``paper`` claim expects
            what the paper predicts, ``"reproduced"``, unless the book knows it does not hold.
        deviation: why the chapter expects something other than ``"reproduced"``; required exactly then.
        note: any other caveat.
        work: bibtex key of the work (one of :data:`WORKS`); defaults to the chapter's work.
        full_mode_only: the evidence needed to decide (seeds, grid) is affordable only in full mode: in a quick
            build the claim is recorded with status :data:`FULL_ONLY`, its quick measurement kept for information.
        preconditions: ``{description: held}``, checked by the chapter's code before its rule: the model learned
            (beats a stated baseline), the data satisfy the theorem's checkable hypotheses, enough points or seeds.
            Write each description as the condition that must hold, with its numbers. If any fails, the claim is
            recorded :data:`INCONCLUSIVE` whatever ``status`` says, the failed ones being its reason.
        reason: why the claim is :data:`INCONCLUSIVE`; required when ``status`` is ``"inconclusive"`` (e.g. an
            exponent interval too wide to tell the laws apart), added to the failed preconditions otherwise.
        rule_after_run: how the rule or tolerance was set after a first run ("the 5 % bound was written after a
            quick run drifted by 2 %"), or ``""`` when it was fixed before running; the report lists these.
    """
    if _state["slug"] is None:
        raise ValueError("call lib.chapter.setup(...) or lib.claims.chapter(slug, title) before record()")
    work = _state["work"] if work is None else work
    if work is None:
        raise ValueError("work must be given (or set by lib.chapter.setup / claims.chapter(..., work=...))")
    check_in("work", work, WORKS)
    check_in("kind", kind, KINDS)
    check_in("status", status, STATUSES)
    check_in("expect", expect, STATUSES)
    for name, value in (("source", source), ("statement", statement), ("expected", expected)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if not isinstance(deviation, str) or not isinstance(note, str):
        raise ValueError("deviation and note must be strings")
    if expect != STATUSES[0] and not deviation.strip():
        raise ValueError(f"deviation must say why the chapter expects {expect!r} rather than 'reproduced'")
    if expect == STATUSES[0] and deviation.strip():
        raise ValueError("deviation is only for claims expected not to reproduce fully; use note for caveats")
    if not isinstance(full_mode_only, bool):
        raise ValueError(f"full_mode_only must be a bool, got {full_mode_only!r}")
    for name, value in (("reason", reason), ("rule_after_run", rule_after_run)):
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a string, got {value!r}")
    failed = failed_preconditions(preconditions)
    checked = [{"what": w, "held": bool(h)} for w, h in (preconditions or {}).items()]
    if status == INCONCLUSIVE and not (reason.strip() or failed):
        raise ValueError("reason must say why the claim is inconclusive")
    if status != INCONCLUSIVE and reason.strip() and not failed:
        raise ValueError("reason is only for inconclusive claims; use note for caveats")
    if failed or status == INCONCLUSIVE:
        status = INCONCLUSIVE
        reason = "; ".join([*(f"precondition failed: {w}" for w in failed), *([reason.strip()] if reason.strip()
                                                                               else [])])
    else:
        reason = ""
    mode = os.environ.get("BOOK_MODE", "full").strip().lower() or "full"
    if full_mode_only and mode == "quick":
        status = FULL_ONLY
    claim = Claim(
        work=work,
        source=source,
        statement=statement,
        expected=str(expected),
        measured=str(measured),
        tolerance=str(tolerance),
        status=status,
        expect=expect,
        note=note,
        chapter=_state["slug"],
        mode=mode,
        kind=kind,
        deviation=deviation,
        reason=reason,
        preconditions=checked,
        rule_after_run=rule_after_run.strip(),
    )
    _state["claims"].append(claim)
    _write()
    return claim


def current() -> list[Claim]:
    """The claims recorded so far in the current chapter."""
    return list(_state["claims"])


def _write() -> None:
    directory = claims_dir()
    if directory is None or _state["slug"] is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    payload = {
        "chapter": _state["slug"],
        "title": _state["title"],
        "claims": [asdict(c) for c in _state["claims"]],
    }
    docname = os.environ.get("ELD_DOCNAME")
    stem = docname.replace("/", "__") if docname else _state["slug"]
    target = directory / f"{stem}.json"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(payload, fh, indent=1, sort_keys=True)
    os.replace(tmp, target)


_BADGE = {
    FULL_ONLY: ("#57606a", "checked in full mode"),
    "reproduced": ("#1a7f37", "reproduced"),
    "partly reproduced": ("#9a6700", "partly reproduced"),
    "not reproduced": ("#cf222e", "not reproduced"),
    INCONCLUSIVE: ("#6639ba", "inconclusive"),
}


def badge(state: str) -> str:
    """HTML badge for a status."""
    check_in("state", state, tuple(_BADGE))
    colour, text = _BADGE[state]
    return (
        f'<span style="background:{colour};color:white;border-radius:4px;padding:1px 6px;'
        f'font-size:85%;white-space:nowrap">{text}</span>'
    )


_INLINE_MATH = re.compile(r"\$([^$\n]+)\$")


def tex_html(text: str) -> str:
    """``text`` escaped for HTML, with inline math ``$...$`` turned into MathJax's ``\\(...\\)``: the book
    typesets it inside an element of class ``mathjax_process`` (claims tables have it)."""
    return _INLINE_MATH.sub(lambda m: "\\(" + m.group(1) + "\\)", html.escape(str(text)))


def table_html(claims: list[dict] | list[Claim], *, show_chapter: bool = False, anchors: bool = False,
               start: int = 0, anchor_from: int = 0) -> str:
    """An HTML table of claims (dicts or :class:`Claim` objects), the status first so it is never cut off.

    With ``anchors`` row ``i`` gets the id ``claim-<chapter>-<start + i>`` (its position in the chapter; the report
    links to it), for the rows whose position is at least ``anchor_from`` (so that no id appears twice on a page).
    """
    rows = []
    e = tex_html
    for i, c in enumerate(claims):
        c = asdict(c) if isinstance(c, Claim) else c
        mismatch = c["status"] not in (c["expect"], FULL_ONLY)
        expect_note = f"<br><em>chapter expects: {e(c['expect'])}</em>" if mismatch else ""
        chap = f"<td>{e(c.get('chapter_title') or c['chapter'])}</td>" if show_chapter else ""
        extra = ""
        if c.get("reason"):
            extra += f'<div class="eld-claim-note"><strong>Could not decide:</strong> {e(c["reason"])}</div>'
        if c.get("deviation"):
            extra += f'<div class="eld-claim-note"><strong>Known deviation:</strong> {e(c["deviation"])}</div>'
        if c.get("rule_after_run"):
            extra += (f'<div class="eld-claim-note"><strong>Rule written after a run:</strong> '
                      f'{e(c["rule_after_run"])}</div>')
        if c.get("note"):
            extra += f'<div class="eld-claim-note">{e(c["note"])}</div>'
        kind = c.get("kind", "paper")
        n = start + i
        row_id = f' id="claim-{e(c["chapter"])}-{n}"' if anchors and n >= anchor_from else ""
        rows.append(
            f"<tr{row_id}><td>{badge(c['status'])}{expect_note}</td>{chap}"
            f'<td><span class="eld-kind eld-kind-{e(kind)}">{e(kind)}</span><br>{e(c["source"])}</td>'
            f"<td>{e(c['statement'])}{extra}</td><td>{e(c['expected'])}</td>"
            f"<td>{e(c['measured'])}</td><td>{e(c['tolerance'])}</td></tr>"
        )
    head_chap = "<th>chapter</th>" if show_chapter else ""
    return (
        f"<style>{_TABLE_CSS}</style>"
        '<div class="eld-claims-wrap mathjax_process"><table class="eld-claims">'
        f"<thead><tr><th>status</th>{head_chap}<th>kind, source</th><th>claim</th><th>expected</th>"
        "<th>measured</th><th>rule</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


#: compact, readable claims tables in the narrow text column of the book (and in Jupyter)
_TABLE_CSS = (
    ".eld-claims-wrap{overflow-x:auto;margin:0.5em 0}"
    ".eld-claims{font-size:0.8em;border-collapse:collapse;width:100%;line-height:1.35}"
    ".eld-claims th,.eld-claims td{vertical-align:top;padding:3px 6px;border-bottom:1px solid #e3e3e3;"
    "text-align:left}"
    ".eld-claims td:nth-child(3){min-width:14em}"
    ".eld-claims td:first-child{white-space:nowrap}"
    ".eld-claim-note{color:#666;font-style:italic;margin-top:0.3em}"
    ".eld-kind{font-size:0.85em;border:1px solid #bbb;border-radius:3px;padding:0 4px;color:#555}"
    ".eld-kind-paper{border-color:#0969da;color:#0969da}"
)


class ClaimsTable:
    """Displays as an HTML table in Jupyter and in the book, as plain text elsewhere."""

    def __init__(self, claims: list[Claim], *, start: int = 0, anchor_from: int = 0):
        self.claims, self.start, self.anchor_from = claims, start, anchor_from

    def _repr_html_(self) -> str:
        return table_html(self.claims, anchors=True, start=self.start, anchor_from=self.anchor_from)

    def __repr__(self) -> str:
        lines = [f"[{c.status}] ({c.kind}) {c.source}: {c.statement} | expected {c.expected} | measured {c.measured}"
                 + (f" | could not decide: {c.reason}" if c.reason else "") for c in self.claims]
        return "\n".join(lines) or "(no claims recorded)"


def show() -> ClaimsTable:
    """Return the current chapter's claims as a displayable table (make it the last expression of a cell).

    Rows already shown under their figures by :func:`show_new` carry no anchor here: the report links there.
    """
    return ClaimsTable(current(), anchor_from=_state["shown"])


def show_new() -> ClaimsTable:
    """The claims recorded since the last call, as a table to show right under the figure they check (make it the
    last expression of the claim cell)."""
    start = _state["shown"]
    _state["shown"] = len(_state["claims"])
    return ClaimsTable(current()[start:], start=start)


# --------------------------------------------------------------------------------------------------------------
# Coverage manifests: every numbered figure, table and theorem of a work, covered by claims or explained.
# --------------------------------------------------------------------------------------------------------------

_ALIASES = [
    (r"\bFigures?\b|\bFigs?\b\.?", "Fig"),
    (r"\bTables?\b|\bTab\b\.?", "Table"),
    (r"\bTheorems?\b|\bThms?\b\.?", "Thm"),
    (r"\bPropositions?\b|\bProps?\b\.?", "Prop"),
    (r"\bCorollar(?:y|ies)\b|\bCors?\b\.?", "Cor"),
    (r"\bLemmas?\b|\bLemmata\b", "Lemma"),
    (r"\bEquations?\b|\bEqs?\b\.?", "Eq"),
    (r"\bSections?\b|\bSecs?\b\.?", "Sec"),
    (r"\bAppendix\b|\bApp\b\.?", "App"),
    (r"\bDefinitions?\b|\bDefs?\b\.?", "Def"),
    (r"\bAssumptions?\b", "Assumption"),
]
_NUMBER = r"[A-Z]?\d+(?:\.\d+)*"


def normalise_source(text: str) -> str:
    """A claim source or manifest item in canonical form: ``"Figs. 8-10(c)"`` -> ``"Fig 8 Fig 9 Fig 10(c)"``.

    Long and abbreviated names become one abbreviation (Fig, Table, Thm, Prop, Cor, Lemma, Eq, Sec, App, Def),
    parentheses around equation numbers go, and ranges ``a-b`` and lists ``a/b``, ``a, b`` of integers after a
    name are spelled out, so that :func:`source_mentions` can match whole item numbers.
    """
    import re

    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {text!r}")
    s = text
    for pattern, canon in _ALIASES:
        s = re.sub(pattern, canon, s)
    s = re.sub(r"\bEq\s*\((" + _NUMBER + r")\)", r"Eq \1", s)
    names = "|".join(canon for _, canon in _ALIASES)

    def expand(m):
        name, body = m.group(1), m.group(2)
        out = []
        for piece in re.split(r"\s*(?:/|,|\band\b|&)\s*", body):
            r = re.fullmatch(r"(\d+)\s*[-\u2013]\s*(\d+)", piece)
            if r and int(r.group(1)) < int(r.group(2)) <= int(r.group(1)) + 20:
                out += [f"{name} {k}" for k in range(int(r.group(1)), int(r.group(2)) + 1)]
            else:
                out.append(f"{name} {piece}")
        return " ".join(out)

    piece = _NUMBER + r"(?:\s*[-\u2013]\s*\d+)?"
    s = re.sub(rf"\b({names})\s*({piece}(?:\s*(?:/|,|\band\b|&)\s*{piece})*)", expand, s)
    return re.sub(r"\s+", " ", s).strip()


def source_mentions(source: str, item: str) -> bool:
    """True when the claim ``source`` names the manifest ``item`` (e.g. ``"Fig 2"``), as a whole number:
    ``"Fig 2(c)"`` and ``"Figs 1-3"`` mention ``"Fig 2"``; ``"Fig 12"`` and ``"Fig 2.1"`` do not."""
    import re

    src, it = normalise_source(source), normalise_source(item)
    if not it:
        raise ValueError(f"item must be a non-empty string, got {item!r}")
    return re.search(r"(?<![\w.])" + re.escape(it) + r"(?![\w]|\.\d)", src) is not None


def load_manifest(path) -> dict:
    """Read a coverage manifest (YAML: ``work``, ``items`` of ``{id, what, match?, explained?}``) and check it."""
    import yaml

    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict) or "work" not in data or not isinstance(data.get("items"), list):
        raise ValueError(f"{path}: a manifest needs 'work' and a list 'items'")
    check_in("work", data["work"], WORKS)
    seen = set()
    for item in data["items"]:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"].strip():
            raise ValueError(f"{path}: every item needs an 'id' string, got {item!r}")
        if item["id"] in seen:
            raise ValueError(f"{path}: item {item['id']!r} listed twice")
        seen.add(item["id"])
        match = item.get("match", [item["id"]])
        if isinstance(match, str) or not all(isinstance(m, str) and m.strip() for m in match):
            raise ValueError(f"{path}: 'match' of {item['id']!r} must be a list of strings")
    return data


def load_manifests(directory) -> dict:
    """All manifests of ``directory`` (``*.yml``), one per work: a work's items may be split over several files
    (``<work>.yml``, ``<work>_ch2.yml``, ...), which are merged in file-name order; an id listed twice is an error."""
    out: dict = {}
    for path in sorted(Path(directory).glob("*.yml")):
        data = load_manifest(path)
        if data["work"] not in out:
            out[data["work"]] = {**data, "items": list(data["items"])}
            continue
        merged = out[data["work"]]
        ids = {item["id"] for item in merged["items"]}
        dup = [item["id"] for item in data["items"] if item["id"] in ids]
        if dup:
            raise ValueError(f"{path}: items {dup} already listed in another manifest of {data['work']}")
        merged["items"] += data["items"]
        if "title" not in merged and "title" in data:
            merged["title"] = data["title"]
    return out


#: How an item of a coverage manifest is covered, strongest first: by a paper claim that decides (reproduced, partly,
#: not reproduced, or decided in full mode), by paper claims that could not decide, only by the book's own results or
#: illustrations, by none (the manifest says why), or not at all.
COVERAGE = ("paper", "inconclusive", "illustrated", "explained", "gap")


def _strength(c: dict) -> tuple:
    """Sort key of a claim's evidence: a deciding paper claim first, then inconclusive paper, book, illustration."""
    kind_rank = {"paper": 0, "book": 1, "illustration": 2}.get(c.get("kind", "paper"), 3)
    state = c.get("status", "")
    return (kind_rank, state == INCONCLUSIVE, STATUSES.index(state) if state in STATUSES else 0)


def coverage(manifest: dict, claims_list) -> list[dict]:
    """For every item of ``manifest``: the claims of its work whose source mentions it, strongest first, and how the
    item is covered (one of :data:`COVERAGE`).

    Returns dicts ``{id, what, claims, explained, covered, by, strongest}``: ``by`` is ``"paper"`` when a paper
    claim decides the item (or decides it in full mode), ``"inconclusive"`` when its paper claims could not decide,
    ``"illustrated"`` when only book results or illustrations name it, ``"explained"`` when no claim names it but the
    manifest says why, ``"gap"`` otherwise; ``strongest`` is the first claim (or None); ``covered`` is True when any
    claim names the item.
    """
    claims_list = [asdict(c) if isinstance(c, Claim) else c for c in claims_list]
    mine = [c for c in claims_list if c["work"] == manifest["work"]]
    rows = []
    for item in manifest["items"]:
        match = item.get("match", [item["id"]])
        hits = sorted((c for c in mine if any(source_mentions(c["source"], m) for m in match)), key=_strength)
        paper = [c for c in hits if c.get("kind", "paper") == "paper"]
        if any(c.get("status") != INCONCLUSIVE for c in paper):
            by = "paper"
        elif paper:
            by = "inconclusive"
        elif hits:
            by = "illustrated"
        else:
            by = "explained" if item.get("explained") else "gap"
        rows.append({"id": item["id"], "what": item.get("what", ""), "claims": hits,
                     "explained": item.get("explained", ""), "covered": bool(hits), "by": by,
                     "strongest": hits[0] if hits else None})
    return rows
