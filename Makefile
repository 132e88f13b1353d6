# Executable Learning Dynamics: two commands do everything.
#   make book   set up .venv (pinned packages) and build the whole book, executing every notebook (full mode)
#   make test   same set-up, then ruff, the unit tests, a clean quick-mode build with warnings as errors,
#               and the checks that read that build (claims, widgets, timings, determinism)
#   make notebooks   write .ipynb twins of the chapters (generated, never committed)
#   make lint        ruff on lib, tests, scripts, benchmarks and on the chapters' code (make format-chapters fixes)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
JB     := $(VENV)/bin/jupyter-book
STAMP  := $(VENV)/.installed
export PYTHONHASHSEED := 0

.PHONY: book test notebooks lint format-chapters unit clean setup benchmark

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

book: $(STAMP)
	$(JB) clean --all .
	BOOK_MODE=$${BOOK_MODE:-full} $(JB) build . --keep-going
	@echo "The book: $(CURDIR)/_build/html/index.html"

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests scripts benchmarks book/_ext
	$(PY) scripts/lint_chapters.py

format-chapters: $(STAMP)
	$(PY) scripts/lint_chapters.py --fix

unit: $(STAMP)
	$(VENV)/bin/pytest -q

test: $(STAMP) lint unit
	$(JB) clean --all .
	BOOK_MODE=quick $(JB) build . -W --keep-going
	BOOK_MODE=quick $(VENV)/bin/pytest -q -m book

notebooks: $(STAMP)
	$(VENV)/bin/jupytext --to ipynb notebooks/*/[0-9]*.md

benchmark: $(STAMP)
	$(PY) benchmarks/bench_curvature.py
	$(PY) benchmarks/bench_sharpness.py
	$(PY) benchmarks/bench_train.py

clean:
	rm -rf _build .cache
