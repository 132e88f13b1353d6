"""The example script of "Using lib from a script" (book/using.md) runs as written and prints what the page says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "book" / "using.md"


def _section_blocks(language: str) -> list[str]:
    text = PAGE.read_text()
    section = text.split("## Using lib from a script", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def test_the_script_runs_as_written(tmp_path):
    (script,) = _section_blocks("python")
    (printed,) = _section_blocks("text")
    env = dict(os.environ, BOOK_MODE="quick", ELD_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT),
               CUDA_VISIBLE_DEVICES="")  # the page shows a CPU run
    env.pop("ELD_CLAIMS_DIR", None)
    (tmp_path / "my_script.py").write_text(script)
    out = subprocess.run([sys.executable, "my_script.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines, expected = out.stdout.strip().splitlines(), printed.strip().splitlines()
    assert len(lines) == len(expected), out.stdout
    assert lines[-1].strip() == expected[-1].strip() == "reproduced", out.stdout
    for got, shown in zip(lines[:-1], expected[:-1]):  # the same lines; the numbers may differ in round-off
        assert re.sub(r"[-\d.]+", "#", got) == re.sub(r"[-\d.]+", "#", shown), (got, shown)
    assert "DeprecationWarning" not in out.stderr
