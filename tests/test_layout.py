"""The layout rules of lib (AST only, no imports): see CONTRIBUTING.md.

* the top of lib is generic: only the modules listed in GENERIC; lib.models, lib.data and lib.graphs are shared
  layers; everything that belongs to one part lives in lib/parts/<part>/, named like notebooks/<part>/;
* a part imports the generic layer and the shared layers, never another part; the shared layers never import a part;
* every chapter notebooks/<part>/NN_name.md has its module lib/parts/<part>/name.py;
* public names (module-level functions, classes and constants not starting with "_") are unique across lib,
  except the PAPER_* / named configurations of each part's settings.py, which are read through the module;
* no module is longer than 600 lines, and every module is listed in CONTRIBUTING.md.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERIC = {"__init__", "config", "chapter", "claims", "widgets", "curvature", "sweep", "_cache_format", "train",
           "_optim", "_stacking", "plots", "maps", "flows", "curves", "stats", "success", "paper_scale"}
SHARED = ("models", "data", "graphs")
MAX_LINES = 600


def _modules(root: Path):
    return sorted(p for p in (root / "lib").rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(root: Path, path: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level:
            out.add("<relative>")
    return out


def _part_of(dotted: str) -> str | None:
    bits = dotted.split(".")
    return bits[2] if len(bits) > 2 and bits[1] == "parts" else None


def layout_violations(root: Path) -> list[str]:
    """Every broken import rule under ``root/lib`` (empty when the layout is clean)."""
    bad = []
    for path in _modules(root):
        mod = _dotted(root, path)
        own = _part_of(mod)
        for imp in _imports(path):
            if imp == "<relative>" and own is not None:
                bad.append(f"{mod} uses a relative import: parts import lib by absolute names")
                continue
            other = _part_of(imp)
            if other is None:
                continue
            if own is None:
                bad.append(f"{mod} (generic or shared layer) imports the part {imp}")
            elif other != own:
                bad.append(f"{mod} (part {own}) imports another part: {imp}")
        top = path.relative_to(root / "lib").parts
        if len(top) == 1 and path.stem not in GENERIC:
            bad.append(f"lib/{path.name} is not a generic module: move it into lib/parts/<part>/ or a shared layer")
        if len(top) > 1 and top[0] not in (*SHARED, "parts"):
            bad.append(f"lib/{top[0]}/ is neither a shared layer {SHARED} nor lib/parts")
    return bad


def test_layout_rules_hold():
    assert layout_violations(ROOT) == []


def test_layout_check_catches_a_cross_part_import(tmp_path):
    for part in ("alpha", "beta"):
        (tmp_path / "lib" / "parts" / part).mkdir(parents=True)
        (tmp_path / "lib" / "parts" / part / "__init__.py").write_text("")
    (tmp_path / "lib" / "config.py").write_text("X = 1\n")
    (tmp_path / "lib" / "parts" / "alpha" / "ch.py").write_text("from lib.parts.beta import ch2\n")
    (tmp_path / "lib" / "parts" / "beta" / "ch2.py").write_text("from lib import config\n")
    (tmp_path / "lib" / "diffusion.py").write_text("from lib.parts.beta.ch2 import f\n")
    bad = layout_violations(tmp_path)
    assert any("imports another part" in b for b in bad)
    assert any("lib/diffusion.py is not a generic module" in b for b in bad)
    assert any("generic or shared layer" in b for b in bad)


def test_every_part_has_a_package_and_every_chapter_a_module():
    parts = sorted(p.name for p in (ROOT / "notebooks").iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    assert parts, "no parts found"
    for part in parts:
        pkg = ROOT / "lib" / "parts" / part
        assert (pkg / "__init__.py").exists(), f"notebooks/{part}/ has no lib/parts/{part}/"
        assert (pkg / "settings.py").exists(), f"lib/parts/{part}/ has no settings.py"
        for chapter in sorted((ROOT / "notebooks" / part).glob("[0-9]*.md")):
            name = chapter.stem.split("_", 1)[1]
            assert (pkg / f"{name}.py").exists(), f"{chapter.relative_to(ROOT)} has no lib/parts/{part}/{name}.py"
            assert (ROOT / "tests" / "parts" / part / f"test_{name}.py").exists(), \
                f"{chapter.relative_to(ROOT)} has no tests/parts/{part}/test_{name}.py"
    for pkg in (ROOT / "lib" / "parts").iterdir():
        if pkg.is_dir() and not pkg.name.startswith("_"):
            assert pkg.name in parts, f"lib/parts/{pkg.name}/ has no notebooks/{pkg.name}/"


def _public_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and not isinstance(node.value, (ast.Name, ast.Attribute)):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}  # (a re-export is not a definition)
    return {n for n in names if not n.startswith("_") and n != "__all__"}


def test_public_names_are_unique():
    seen: dict[str, str] = {}
    clashes = []
    for path in _modules(ROOT):
        if path.name == "settings.py":
            continue
        for name in _public_names(path):
            where = str(path.relative_to(ROOT))
            if name in seen:
                clashes.append(f"{name}: {seen[name]} and {where}")
            seen.setdefault(name, where)
    assert not clashes, "one concept, one name:\n" + "\n".join(clashes)


@pytest.mark.parametrize("path", _modules(ROOT), ids=lambda p: str(p.relative_to(ROOT / "lib")))
def test_module_is_short_and_documented(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(ROOT)} has {n} lines: split it along chapter or topic lines"
    listed = (ROOT / "CONTRIBUTING.md").read_text()
    rel = str(path.relative_to(ROOT))
    folder = str(path.parent.relative_to(ROOT)) + "/"
    in_part_row = folder in listed and (path.name == "__init__.py" or f"`{path.name}`" in listed)
    if path.parent != ROOT / "lib" and path.parent.name not in ("models", "data", "parts", "graphs") or \
            path.name != "__init__.py":
        assert rel in listed or in_part_row, f"{rel} is not described in CONTRIBUTING.md"


def test_chapter_titles_in_the_ledger_match_the_headings():
    """The title given to lib.chapter.setup heads the chapter's claims in the report: it is the chapter's H1."""
    import re

    for chapter in sorted((ROOT / "notebooks").glob("*/[0-9]*.md")):
        text = chapter.read_text()
        h1 = re.search(r"^# (.+)$", text, re.M).group(1).strip()
        call = re.search(r"chapter\.setup\((.*?)\)\n", text, re.S).group(1)
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', call)
        title = "".join(strings[1:-1]) if len(strings) > 3 else strings[1]
        assert title == h1, f"{chapter.relative_to(ROOT)}: setup title {title!r} differs from the heading {h1!r}"


def test_api_pages_list_every_module_of_their_part():
    """``book/api_<part>.md`` is generated by ``scripts/api_pages.py`` from the part's modules."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "api_pages.py"), "--check"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout + out.stderr
