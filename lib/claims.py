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
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .config import check_in

STATUSES = ("reproduced", "partly reproduced", "not reproduced")

#: The works of the book, by bibtex key (see ``book/references.bib``).
WORKS = {
    "chen2023eos": "Chen & Bruna, Beyond the Edge of Stability via Two-step Gradient Updates (ICML 2023)",
    "chen2025thesis": "L. Chen, Simple Structures in Neural Networks (PhD thesis, NYU, 2025)",
    "li2024thesis": ("H. Li, Optimization and Generalization Analysis of Advanced Neural Networks "
                     "(PhD thesis, RPI, 2024)"),
    "yang2025sim": "Yang et al., Dynamics of Concept Learning and Compositional Generalization (ICLR 2025)",
    "wang2024induction": "Wang, Yu, E & Wu, How Transformers Implement Induction Heads (2024)",
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

    @property
    def as_expected(self) -> bool:
        return self.status == self.expect


_state: dict = {"slug": None, "title": None, "claims": []}


def claims_dir() -> Path | None:
    """Directory the claims are written to (``ELD_CLAIMS_DIR``), or None when unset."""
    value = os.environ.get("ELD_CLAIMS_DIR")
    return Path(value) if value else None


def chapter(slug: str, title: str) -> None:
    """Start the claim list of a chapter (call once at the top of its notebook)."""
    if not slug or not isinstance(slug, str) or any(c in slug for c in "/\\ "):
        raise ValueError(f"slug must be a non-empty string without slashes or spaces, got {slug!r}")
    _state.update(slug=slug, title=title, claims=[])
    _write()


def status(ok: bool, partly: bool = False) -> str:
    """``"reproduced"`` if ``ok``, else ``"partly reproduced"`` if ``partly``, else ``"not reproduced"``."""
    return STATUSES[0] if bool(ok) else (STATUSES[1] if bool(partly) else STATUSES[2])


def record(
    *,
    work: str,
    source: str,
    statement: str,
    expected: str,
    measured,
    tolerance: str,
    status: str,
    expect: str = "reproduced",
    note: str = "",
) -> Claim:
    """Record one claim of the current chapter and return it.

    Args:
        work: bibtex key of the work (one of :data:`WORKS`).
        source: where the claim is made, e.g. ``"Fig 2"``, ``"Thm 4.1"``, ``"Eq. (4)"``.
        statement: the claim in one sentence.
        expected: what the paper (or its theory) predicts.
        measured: what this build measured (formatted by the chapter from computed numbers).
        tolerance: the tolerance or criterion used to decide.
        status: one of :data:`STATUSES`, computed from the measurement (see :func:`status`).
        expect: the status the chapter expects; tests fail when ``status`` differs.
        note: why a claim is only partly or not reproduced, or any caveat.
    """
    if _state["slug"] is None:
        raise ValueError("call lib.claims.chapter(slug, title) before record()")
    check_in("work", work, WORKS)
    check_in("status", status, STATUSES)
    check_in("expect", expect, STATUSES)
    for name, value in (("source", source), ("statement", statement), ("expected", expected)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
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
    "reproduced": ("#1a7f37", "reproduced"),
    "partly reproduced": ("#9a6700", "partly reproduced"),
    "not reproduced": ("#cf222e", "not reproduced"),
}


def badge(state: str) -> str:
    """HTML badge for a status."""
    colour, text = _BADGE[state]
    return (
        f'<span style="background:{colour};color:white;border-radius:4px;padding:1px 6px;'
        f'font-size:85%;white-space:nowrap">{text}</span>'
    )


def table_html(claims: list[dict] | list[Claim], *, show_chapter: bool = False) -> str:
    """An HTML table of claims (dicts or :class:`Claim` objects)."""
    rows = []
    for c in claims:
        c = asdict(c) if isinstance(c, Claim) else c
        e = html.escape
        expect_note = "" if c["status"] == c["expect"] else f"<br><em>chapter expects: {e(c['expect'])}</em>"
        chap = f"<td>{e(c['chapter'])}</td>" if show_chapter else ""
        note = f'<div class="eld-claim-note">{e(c["note"])}</div>' if c["note"] else ""
        rows.append(
            f"<tr>{chap}<td>{e(c['source'])}</td><td>{e(c['statement'])}{note}</td><td>{e(c['expected'])}</td>"
            f"<td>{e(c['measured'])}</td><td>{e(c['tolerance'])}</td><td>{badge(c['status'])}{expect_note}</td></tr>"
        )
    head_chap = "<th>chapter</th>" if show_chapter else ""
    return (
        f"<style>{_TABLE_CSS}</style>"
        '<div class="eld-claims-wrap"><table class="eld-claims">'
        f"<thead><tr>{head_chap}<th>source</th><th>claim</th><th>expected</th><th>measured</th>"
        "<th>tolerance</th><th>status</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


#: compact, readable claims tables in the narrow text column of the book (and in Jupyter)
_TABLE_CSS = (
    ".eld-claims-wrap{overflow-x:auto;margin:0.5em 0}"
    ".eld-claims{font-size:0.8em;border-collapse:collapse;width:100%;line-height:1.35}"
    ".eld-claims th,.eld-claims td{vertical-align:top;padding:3px 6px;border-bottom:1px solid #e3e3e3;"
    "text-align:left}"
    ".eld-claims td:nth-last-child(5){min-width:16em}.eld-claims td:nth-last-child(3){min-width:11em}"
    ".eld-claims td:last-child{white-space:nowrap}"
    ".eld-claim-note{color:#666;font-style:italic;margin-top:0.3em}"
)


class ClaimsTable:
    """Displays as an HTML table in Jupyter and in the book, as plain text elsewhere."""

    def __init__(self, claims: list[Claim]):
        self.claims = claims

    def _repr_html_(self) -> str:
        return table_html(self.claims)

    def __repr__(self) -> str:
        lines = [f"[{c.status}] {c.source}: {c.statement} | expected {c.expected} | measured {c.measured}"
                 for c in self.claims]
        return "\n".join(lines) or "(no claims recorded)"


def show() -> ClaimsTable:
    """Return the current chapter's claims as a displayable table (make it the last expression of a cell)."""
    return ClaimsTable(current())
