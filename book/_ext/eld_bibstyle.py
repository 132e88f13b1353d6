"""Local Sphinx extension: the bibliography's labels in author-year form.

The chapters cite in author-year form (``bibtex_reference_style: author_year``): "Chen and Bruna, 2023". The
bibliography's own labels came from pybtex's ``plain`` style, numbers [1]-[N], which no citation in the text uses.
This extension registers the pybtex style ``eld_author_year``: ``plain`` (entries sorted by author, year, title),
labelled "Chen and Bruna, 2023", "Yang et al., 2025", with a, b, ... after the year where two labels would be the
same. ``_config.yml`` selects it with ``bibtex_default_style: eld_author_year``.
"""

from __future__ import annotations

from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle

NAME = "eld_author_year"


def _surnames(entry) -> list[str]:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    return [" ".join(p.prelast_names + p.last_names).replace("{", "").replace("}", "") for p in people]


def author_year(entry) -> str:
    """``Chen, 2025``, ``Chen and Bruna, 2023`` or ``Yang et al., 2025`` (the key when the entry has no author)."""
    names = _surnames(entry)
    year = entry.fields.get("year", "n.d.")
    if not names:
        who = entry.key
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {year}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        entries = list(sorted_entries)
        labels = [author_year(e) for e in entries]
        repeated = Counter(labels)
        seen: Counter = Counter()
        for label in labels:
            if repeated[label] > 1:
                yield f"{label}{chr(ord('a') + seen[label])}"
                seen[label] += 1
            else:
                yield label


class AuthorYearStyle(PlainStyle):
    default_label_style = NAME


def setup(app):
    register_plugin("pybtex.style.labels", NAME, AuthorYearLabels)
    register_plugin("pybtex.style.formatting", NAME, AuthorYearStyle)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
