"""The math lint (scripts/lint_math.py): display math inside a paragraph, which MyST pairs with the inline formulas
around it (the garbled Theorem 6.7 of VI.5), is caught, and no page of the book has any."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("lint_math", ROOT / "scripts" / "lint_math.py")
lint_math = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lint_math)

# Theorem 6.7 as it was: the display sits inside the paragraph
GARBLED = """Under the condition, batch $B\\gtrsim M$, context lengths
$$l_{tr}\\gtrsim\\frac{1}{\\alpha},\\qquad l_{ts}\\ge1,$$
step $\\eta\\le1$ and $T=\\Theta(\\eta^{-1})$ iterations, the loss is $O(\\epsilon)$.
"""
FIXED = GARBLED.replace("lengths\n$$", "lengths\n\n$$").replace("$$\nstep", "$$\n\nstep")


def test_a_display_inside_a_paragraph_is_caught_by_both_checks():
    lines = lint_math.display_math_problems(GARBLED, "thm")
    assert any("thm:2:" in b and "before" in b for b in lines) and any("thm:3:" in b and "after" in b for b in lines)
    assert lint_math.misparsed_math(GARBLED, "thm")


def test_the_fixed_theorem_passes_both_checks():
    assert lint_math.display_math_problems(FIXED) == []
    assert lint_math.misparsed_math(FIXED) == []


@pytest.mark.parametrize("text", [
    "Text\n\n$$\nx = 1\n$$ (eq-x)\n\nMore.\n",
    ":::{prf:theorem}\n:label: t\n$$x$$\n:::\n",
    "1. item\n\n   $$x$$\n\n2. next\n",
    "```{code-cell} ipython3\ns = f'{a}$$'\nprint(s)\n```\n",
    "Inline $x$ and $y$ only.\n",
])
def test_displays_on_their_own_and_code_are_left_alone(text):
    assert lint_math.display_math_problems(text) == []
    assert lint_math.misparsed_math(text) == []


def test_inline_display_and_text_after_closing_are_caught():
    assert "inside a paragraph" in lint_math.display_math_problems("We have $$x=1$$ here.\n")[0]
    assert "after a display" in lint_math.display_math_problems("Text\n\n$$\nx\n$$ so that\n")[0]
    assert "never closed" in lint_math.display_math_problems("Text\n\n$$\nx\n")[0]
    with pytest.raises(ValueError, match="text"):
        lint_math.display_math_problems(None)


def test_no_page_of_the_book_has_misplaced_display_math():
    assert len(lint_math.pages()) > 22
    bad = lint_math.math_violations()
    assert not bad, "\n".join(bad)


def test_a_tab_for_backslash_t_is_caught():
    bad = lint_math.control_characters("covariance $R\\Sigma R^\top$\nfine line\n", "p")
    assert len(bad) == 1 and bad[0].startswith("p:1:")
    assert lint_math.control_characters("$R^\\top$ and\nnew lines\r\n") == []
