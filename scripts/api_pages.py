"""Write the API pages: each part's ``book/api_<part>.md`` from the modules of ``lib/parts/<part>/``, and the
module list of ``book/api.md`` from the generic top level of ``lib`` and its shared layers.

    python scripts/api_pages.py          # rewrite the pages
    python scripts/api_pages.py --check  # exit 1 if a page is out of date (tests/test_layout.py runs this)

On a part's page the package comes first, then the chapter modules in the order of the package's chapter table,
then any other module, then ``settings``. On ``book/api.md`` only the part between the two marker comments is
written (the links to the part pages and one section per module: the generic modules in the order of
:data:`GENERIC_ORDER`, any other after them by name, then each shared layer's package where it says more than a line,
and its modules by name); the prose around it is the page's own.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TITLES = {
    "edge_of_stability": "Part I: edge of stability",
    "induction_heads": "Part II: induction heads",
    "concept_learning": "Part III: concept learning",
    "graph_networks": "Part IV: graph networks",
    "memorisation": "Part V: memorisation",
    "generalisation": "Part VI: generalisation",
}


#: the reading order of the generic modules on book/api.md; a public module of lib/ not named here follows them
GENERIC_ORDER = ("config", "chapter", "claims", "train", "curvature", "maps", "flows", "curves", "stats", "success",
                 "sweep", "paper_scale", "widgets", "plots")
SHARED = ("models", "data", "graphs")
ROMAN = ("I", "II", "III", "IV", "V", "VI")
BEGIN = "% The links and the module list below are written by scripts/api_pages.py: do not edit them by hand."
END = "% End of the part written by scripts/api_pages.py."


def _says_more_than_its_name(init: Path) -> bool:
    """Whether a package's ``__init__.py`` holds more than a one-line docstring (code, or an overview)."""
    import ast

    tree = ast.parse(init.read_text())
    doc = ast.get_docstring(tree) or ""
    return len(tree.body) > (1 if doc else 0) or len(doc.strip().splitlines()) > 1


def shared_modules() -> list[str]:
    """The modules of ``book/api.md``: the generic top level of ``lib``, then its shared layers."""
    lib = ROOT / "lib"
    generic = {p.stem for p in lib.glob("*.py") if not p.stem.startswith("_")}
    order = [m for m in GENERIC_ORDER if m in generic] + sorted(generic - set(GENERIC_ORDER))
    out = [f"lib.{m}" for m in order]
    for layer in SHARED:
        if _says_more_than_its_name(lib / layer / "__init__.py"):
            out.append(f"lib.{layer}")
        out += [f"lib.{layer}.{p.stem}" for p in sorted((lib / layer).glob("*.py")) if not p.stem.startswith("_")]
    return out


def _sections(mods: list[str]) -> list[str]:
    out = []
    for mod in mods:
        out += [f"## `{mod}`", "", "```{eval-rst}", f".. automodule:: {mod}", "   :members:", "```", ""]
    return out


def shared_page(text: str) -> str:
    """``text`` (``book/api.md``) with the part between :data:`BEGIN` and :data:`END` written anew."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError("book/api.md must hold the two marker comments of scripts/api_pages.py once each, in order")
    links = ", ".join(f"[Part {ROMAN[i]}](api_{part}.md)" for i, part in enumerate(TITLES))
    body = [BEGIN, "", f"Each part's own code is on its own page: {links}.", "", *_sections(shared_modules())]
    return text[:text.index(BEGIN)] + "\n".join(body) + text[text.index(END):]


def modules(part: str) -> list[str]:
    folder = ROOT / "lib" / "parts" / part
    names = sorted(p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "settings"))
    table = (folder / "__init__.py").read_text()
    listed = re.findall(rf"lib\.parts\.{part}\.(\w+)`", table)
    order = [n for n in dict.fromkeys(listed) if n in names] + [n for n in names if n not in listed]
    return [f"lib.parts.{part}"] + [f"lib.parts.{part}.{n}" for n in order] + [f"lib.parts.{part}.settings"]


def page(part: str) -> str:
    out = [f"# API: {TITLES[part]}", "",
           f"The code of `lib/parts/{part}/`: one module per chapter (and topic modules), and `settings.py` with the "
           "work's values and named configurations.", ""]
    out += _sections(modules(part))
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    api = ROOT / "book" / "api.md"
    pages = [(ROOT / "book" / f"api_{part}.md", page(part)) for part in TITLES]
    pages.append((api, shared_page(api.read_text())))
    for path, text in pages:
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        elif not path.exists() or path.read_text() != text:
            path.write_text(text)
    if stale:
        print("out of date (run python scripts/api_pages.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
