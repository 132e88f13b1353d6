"""The local environment and Binder's agree with what the book imports.

* every third-party package that ``lib`` or a chapter imports is pinned, at the same version, in requirements.txt
  (local set-up, CI) and binder/requirements.txt (Binder), so no chapter fails at its first cell on Binder;
* the two files pin the same version of every package they share, and Binder pins nothing the local set-up lacks;
* both read the lock constraints.txt, which pins every package the direct pins pull in (scripts/constraints.py),
  and the lock is the environment the tests run in.
"""

import ast
import importlib.util
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("constraints", ROOT / "scripts" / "constraints.py")
constraints = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(constraints)

LOCAL = constraints.read_pins(constraints.REQUIREMENTS)
BINDER = constraints.read_pins(constraints.BINDER)
LOCK = constraints.read_pins(constraints.CONSTRAINTS)


def _top_level_imports(code: str) -> set[str]:
    """The top-level module names ``code`` imports (absolute imports only); IPython magics and shell lines are
    dropped before parsing."""
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
    out = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def third_party_imports() -> dict[str, list[str]]:
    """``{module: [files importing it]}`` for every module outside the standard library and ``lib`` that ``lib`` or
    a chapter (its code cells) imports."""
    import jupytext

    found: dict[str, list[str]] = {}
    sources = [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted((ROOT / "lib").rglob("*.py"))]
    chapters = sorted(ROOT.glob("notebooks/*/[0-9]*.md")) + [ROOT / "notebooks" / "_template.md"]
    for md in chapters:
        code = "\n".join(c.source for c in jupytext.read(md).cells if c.cell_type == "code")
        sources.append((str(md.relative_to(ROOT)), code))
    for where, code in sources:
        for module in _top_level_imports(code):
            if module not in sys.stdlib_module_names and module != "lib":
                found.setdefault(module, []).append(where)
    return found


def test_import_scanner_sees_lib_and_the_chapters():
    found = third_party_imports()
    assert {"torch", "numpy", "matplotlib", "transformers"} <= set(found)
    assert any(w.startswith("notebooks/") for w in found["numpy"])
    assert _top_level_imports("%matplotlib inline\nimport os.path\nfrom a.b import c\nfrom . import d\n") == {
        "os", "a"}


def test_every_third_party_import_is_pinned_in_both_requirement_files():
    owners = metadata.packages_distributions()
    missing = []
    for module, where in sorted(third_party_imports().items()):
        dists = {constraints.canonical(d) for d in owners.get(module, [])}
        if not dists:
            missing.append(f"{module} (imported by {where[0]}) is not installed: pin it in both requirement files")
            continue
        for name, pins in (("requirements.txt", LOCAL), ("binder/requirements.txt", BINDER)):
            if not dists & set(pins):
                missing.append(f"{module} ({'/'.join(sorted(dists))}, imported by {where[0]}) is not pinned in {name}")
    assert not missing, "\n".join(missing)


def test_binder_pins_the_same_versions_as_the_local_set_up():
    assert set(BINDER) <= set(LOCAL), f"pinned only for Binder: {sorted(set(BINDER) - set(LOCAL))}"
    differ = {n: (LOCAL[n], v) for n, v in BINDER.items() if LOCAL[n] != v}
    assert not differ, f"local and Binder pin different versions: {differ}"


def test_both_requirement_files_read_the_lock():
    for path, line in ((constraints.REQUIREMENTS, "-c constraints.txt"), (constraints.BINDER, "-c ../constraints.txt")):
        lines = [raw.strip() for raw in path.read_text().splitlines()]
        assert line in lines, f"{path.name} does not read the lock ({line})"
        # the path is relative to the requirement file (pip's rule for nested -r/-c)
        assert (path.parent / line.split()[1]).resolve() == constraints.CONSTRAINTS


def test_the_lock_pins_only_what_the_direct_pins_do_not():
    assert LOCK, "constraints.txt is empty"
    assert not set(LOCK) & set(LOCAL), f"pinned twice: {sorted(set(LOCK) & set(LOCAL))}"
    assert all("+" not in v for v in LOCK.values()), "local version labels (+cpu) do not exist on PyPI"
    assert constraints.CONSTRAINTS.read_text().startswith(constraints.HEADER)


def test_the_lock_is_the_environment_the_tests_run_in():
    """constraints.txt is what scripts/constraints.py derives from this environment (made by `make setup`). A pin
    changed without re-deriving the lock fails here."""
    for name, version in LOCAL.items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{name} is not installed here: the lock cannot be compared with this environment")
        if installed.split("+", 1)[0] != version:
            pytest.skip(f"{name} {installed} is installed, {version} pinned: this is not an environment of make setup")
    assert constraints.render(constraints.lock()) == constraints.CONSTRAINTS.read_text(), (
        "constraints.txt is out of date: run python scripts/constraints.py")


def test_read_pins_rejects_a_loose_requirement(tmp_path):
    path = tmp_path / "req.txt"
    path.write_text("# comment\n-c other.txt\n--extra-index-url https://x\nnumpy==2.0 # pinned\ntorch>=2\n")
    with pytest.raises(ValueError, match="path"):
        constraints.read_pins(path)
    path.write_text("NumPy==2.0\nPy_YAML[x]==6\n")
    assert constraints.read_pins(path) == {"numpy": "2.0", "py-yaml": "6"}
