"""Every dict a public function of lib returns has its keys documented: each key the source spells out is named in
the function's docstring, in its ``Returns:`` block. The keys are read from the source with ``ast``, so the test
follows the code and cannot go stale.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import lib

LIB = Path(lib.__file__).resolve().parent


def _literal_keys(fn: ast.FunctionDef) -> set[str]:
    """The string keys of the dicts ``fn`` returns that the source spells out: ``return {...}``,
    ``return dict(k=...)``, and for ``return name``: ``name = {...}`` / ``dict(...)``, ``name["k"] = ...`` and
    ``name.update(k=...)``/``name.update({...})`` in the function's own body (nested functions excluded)."""

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                yield child
                yield from walk(child)

    def dict_keys(value):
        if isinstance(value, ast.Dict):
            return {k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
            return {k.arg for k in value.keywords if k.arg}
        return None

    nodes = list(walk(fn))
    keys, names = set(), set()
    for node in nodes:
        if isinstance(node, ast.Return) and node.value is not None:
            found = dict_keys(node.value)
            if found is not None:
                keys |= found
            elif isinstance(node.value, ast.Name):
                names.add(node.value.id)
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in names:
                    keys |= dict_keys(node.value) or set()
                elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                      and target.value.id in names and isinstance(target.slice, ast.Constant)
                      and isinstance(target.slice.value, str)):
                    keys.add(target.slice.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update"
              and isinstance(node.func.value, ast.Name) and node.func.value.id in names):
            keys |= {k.arg for k in node.keywords if k.arg}
            for arg in node.args:
                keys |= dict_keys(arg) or set()
    return keys


def _returns_block(doc: str) -> str | None:
    """The text of a docstring's ``Returns:`` section (up to the next section or the end), or None."""
    match = re.search(r"^\s*Returns?:[ \t]*\n(.*?)(?=^\s*(?:Raises|Args|Examples?|Notes?|Yields|Attributes):"
                      r"[ \t]*$|\Z)", doc, re.M | re.S)
    return match.group(1) if match else None


def _dict_returning_functions() -> list:
    out = []
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(LIB.parent)
        if any(part.startswith("_") for part in rel.with_suffix("").parts[1:]):
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                keys = _literal_keys(node)
                if keys:
                    out.append(pytest.param(node, sorted(keys), id=f"{rel.with_suffix('')}.{node.name}"))
    return out


DICT_FUNCTIONS = _dict_returning_functions()


def test_dict_returning_functions_are_found():
    assert len(DICT_FUNCTIONS) >= 50


@pytest.mark.parametrize("node,keys", DICT_FUNCTIONS)
def test_returned_dict_keys_are_documented(node, keys):
    """Each key a public function's returned dict spells out is named in its docstring's ``Returns:`` block."""
    doc = ast.get_docstring(node) or ""
    block = _returns_block(doc)
    assert block is not None, f"{node.name} returns a dict with keys {keys} but its docstring has no 'Returns:'"
    missing = [k for k in keys if not re.search(rf"(?<![\w]){re.escape(k)}(?![\w])", block)]
    assert not missing, f"{node.name}'s 'Returns:' block does not name the keys {missing}"
