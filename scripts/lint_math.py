"""Lint the book's Markdown for math that MyST pairs wrongly (run by scripts/lint_chapters.py and the unit tests).

    python scripts/lint_math.py      # every chapter and book page; exit 1 on any problem

A display ``$$...$$`` must be a paragraph of its own, with a blank line (or a fence or directive option) before and
after it. Inside a paragraph MyST's dollarmath does not see it as a display: it pairs the ``$`` signs across the
paragraph, so the display eats the next words and the following inline formulas come out as raw TeX, with the text
between them typeset as italic math (this garbled Theorem 6.7 of chapter VI.5). Two checks:

* ``display_math_problems``: the rule above, on the source lines (code fences skipped);
* ``misparsed_math``: the book's own MyST parser, and any inline formula that begins or ends with white space, the
  mark of ``$`` signs paired across text.

And ``control_characters``: no TAB or other control character, the trace of a ``\\t`` typed in a string that
turned ``\\top`` into a TAB and ``op``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_FENCE = re.compile(r"^(`{3,}|~{3,})")
_LIST = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_LABEL = re.compile(r"\(\s*[\w:.-]+\s*\)")  # an equation label after the closing $$


def pages(root: Path = ROOT) -> list[Path]:
    """The Markdown of the book: the chapters, the template and the pages under ``book/``."""
    return sorted(root.glob("notebooks/*/*.md")) + sorted((root / "book").glob("*.md"))


def _boundary(line: str) -> bool:
    s = line.strip()
    return not s or s.startswith((":::", "```", "~~~")) or re.match(r"^:[\w-]+:", s) is not None


def display_math_problems(text: str, where: str = "<text>") -> list[str]:
    """``where:line: problem`` for every display ``$$`` in ``text`` that is not a paragraph of its own."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, not {type(text).__name__}")
    lines = text.splitlines()
    bad: list[str] = []
    fence = None
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        m = _FENCE.match(s)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None:
            if s.startswith(fence) and not s.strip(fence[0]):
                fence = None
        elif "$$" in s:
            body = _LIST.sub("", s)
            if not body.startswith("$$"):
                bad.append(f"{where}:{i + 1}: display math ($$) inside a paragraph: give it lines of its own")
                i += 1
                continue
            j = i
            if body.count("$$") < 2:
                j = i + 1
                while j < len(lines) and "$$" not in lines[j]:
                    j += 1
                if j == len(lines):
                    bad.append(f"{where}:{i + 1}: a display $$ that is never closed")
                    break
            end = lines[j].strip()
            after = end[end.rfind("$$") + 2 :].strip()
            if after and not _LABEL.fullmatch(after):
                bad.append(f"{where}:{j + 1}: text after a display's closing $$: start a new paragraph")
            if i > 0 and not _boundary(lines[i - 1]) and body == s:
                bad.append(f"{where}:{i + 1}: display math ($$) without a blank line before it")
            if j + 1 < len(lines) and not _boundary(lines[j + 1]):
                bad.append(f"{where}:{j + 2}: display math ($$) without a blank line after it")
            i = j
        i += 1
    return bad


def _parser():
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    # the extensions of _config.yml that change how math and blocks parse
    return create_md_parser(MdParserConfig(enable_extensions={"dollarmath", "amsmath", "colon_fence"}), RendererHTML)


def misparsed_math(text: str, where: str = "<text>", parser=None) -> list[str]:
    """``where: problem`` for every inline formula MyST parses out of ``text`` that begins or ends with white space
    (``$`` signs paired across words), inside directives (colon fences) too."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, not {type(text).__name__}")
    md = parser or _parser()
    bad: list[str] = []

    def walk(source: str, offset: int) -> None:
        for tok in md.parse(source):
            line = offset + (tok.map[0] if tok.map else 0)
            if tok.type == "colon_fence":
                walk(tok.content, line + 1)
            for child in tok.children or []:
                if child.type.startswith("math_inline") and child.content != child.content.strip():
                    bad.append(f"{where}:{line + 1}: inline math {child.content[:40]!r} begins or ends with white "
                               "space: $ signs paired across text (a display $$ inside a paragraph?)")

    walk(text, 0)
    return bad


_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def control_characters(text: str, where: str = "<text>") -> list[str]:
    """``where:line`` of every control character (a TAB included) in ``text``: in TeX a TAB typed for ``\\t`` turns
    ``R^\\top`` into ``R^<TAB>op``, which MathJax sets as ``R^op``."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, not {type(text).__name__}")
    return [f"{where}:{i}: control character {m.group()!r} (a TAB where a backslash sequence was meant?)"
            for i, line in enumerate(text.splitlines(), 1) for m in _CONTROL.finditer(line)]


def math_violations(root: Path = ROOT) -> list[str]:
    """The checks on every page of the book."""
    md = _parser()
    bad = []
    for path in pages(root):
        text = path.read_text()
        where = str(path.relative_to(root))
        bad += display_math_problems(text, where) + misparsed_math(text, where, md) + control_characters(text, where)
    return bad


def main() -> int:
    bad = math_violations()
    for line in bad:
        print(line)
    return int(bool(bad))


if __name__ == "__main__":
    sys.exit(main())
