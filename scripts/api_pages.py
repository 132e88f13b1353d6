"""Write the API page of each part, ``book/api_<part>.md``, from the modules of ``lib/parts/<part>/``.

    python scripts/api_pages.py          # rewrite the pages
    python scripts/api_pages.py --check  # exit 1 if a page is out of date (tests/test_layout.py runs this)

The package comes first, then the chapter modules in the order of the package's chapter table, then any other
module, then ``settings``.
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
    for mod in modules(part):
        out += [f"## `{mod}`", "", "```{eval-rst}", f".. automodule:: {mod}", "   :members:", "```", ""]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for part in TITLES:
        path = ROOT / "book" / f"api_{part}.md"
        text = page(part)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print("out of date (run python scripts/api_pages.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
