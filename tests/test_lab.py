"""The local Jupyter route: `make lab` opens the MyST-markdown chapters as notebooks.

A real JupyterLab server is started from the project's environment (with empty user directories, so that only
the environment's own configuration counts) and asked what a reader's browser would ask:

* the settings of the document manager, whose default viewer for markdown must be "Jupytext Notebook"
  (set by `binder/overrides.json`, which `make setup` copies into the environment);
* the contents of a chapter as a notebook (served by Jupytext's contents manager), with its code cells.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OVERRIDES = ROOT / "binder" / "overrides.json"
CHAPTER = "notebooks/edge_of_stability/01_one_dimensional.md"
DOCMANAGER = "@jupyterlab/docmanager-extension:plugin"
VIEWER = "Jupytext Notebook"
TOKEN = "eld-test-token"


def _venv_settings() -> Path:
    return Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def test_overrides_make_jupytext_the_default_viewer():
    viewers = json.loads(OVERRIDES.read_text())[DOCMANAGER]["defaultViewers"]
    assert viewers == {"markdown": VIEWER, "myst": VIEWER}


def test_overrides_are_installed_in_the_environment():
    installed = _venv_settings()
    assert installed.exists(), f"{installed} is missing: run `make setup` (or `make lab`)"
    assert json.loads(installed.read_text()) == json.loads(OVERRIDES.read_text()), "run `make setup` again"


def test_jupytext_reads_a_chapter_as_a_notebook():
    import jupytext

    nb = jupytext.read(ROOT / CHAPTER)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert len(code) >= 3
    assert nb.metadata["kernelspec"]["name"] == "python3"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    req = urllib.request.Request(url, headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    jupyter = Path(sys.executable).parent / "jupyter-lab"
    if not jupyter.exists() and shutil.which("jupyter-lab") is None:
        pytest.fail("JupyterLab is not installed in this environment: run `make setup`")
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ, HOME=str(home), JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_DATA_DIR=str(home / "data"), JUPYTER_RUNTIME_DIR=str(home / "runtime"))
    env.pop("JUPYTERLAB_SETTINGS_DIR", None)
    env.pop("JUPYTERLAB_DIR", None)
    port = _free_port()
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={ROOT}", "--ServerApp.open_browser=False",
           "--allow-root"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            if proc.poll() is not None:
                pytest.fail("JupyterLab did not start: " + proc.stderr.read()[-2000:])
            try:
                _get(f"{base}/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not answer within 60 s")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_lab_opens_markdown_chapters_with_jupytext(lab_server):
    settings = _get(f"{lab_server}/lab/api/settings/{DOCMANAGER}")
    default = settings["schema"]["properties"]["defaultViewers"]["default"]
    assert default.get("markdown") == VIEWER and default.get("myst") == VIEWER, default


def test_lab_serves_a_chapter_as_a_notebook(lab_server):
    model = _get(f"{lab_server}/api/contents/{CHAPTER}?type=notebook&content=1")
    assert model["type"] == "notebook"
    code = [c for c in model["content"]["cells"] if c["cell_type"] == "code"]
    assert len(code) >= 3


def test_chapters_carry_the_kernel_metadata_jupyterlab_writes():
    """JupyterLab marks a notebook changed when its kernel metadata differs from the running kernel's, and saves
    it two minutes later: a reader who only opened a chapter would find its file rewritten. The chapters carry
    exactly what that save writes (checked by hand with JupyterLab 4.6 and Jupytext 1.19: the file stays
    byte-identical)."""
    want = "kernelspec:\n  name: python3\n  display_name: Python 3 (ipykernel)\n  language: python\n"
    chapters = sorted(ROOT.glob("notebooks/*/[0-9]*.md")) + [ROOT / "notebooks" / "_template.md"]
    bad = [str(p.relative_to(ROOT)) for p in chapters if want not in p.read_text().split("\n---\n", 1)[0] + "\n"]
    assert not bad, f"kernel metadata differs from what JupyterLab writes in {bad}"
