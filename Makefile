# Executable Learning Dynamics: two commands do everything.
#   make book   set up .venv (pinned packages) and build the whole book, executing every notebook (full mode)
#   make test   same set-up, then ruff, the unit tests, a clean quick-mode build with warnings as errors,
#               and the checks that read that build (claims, widgets, timings, determinism)
#   make notebooks   write .ipynb twins of the chapters (generated, never committed)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
JB     := $(VENV)/bin/jupyter-book
STAMP  := $(VENV)/.installed
export PYTHONHASHSEED := 0
# Builds start from an empty sweep cache (lib.sweep) unless KEEP_CACHE=1 (e.g. `make test KEEP_CACHE=1`).
CLEAR_CACHE = $(if $(filter 1 yes true,$(KEEP_CACHE)),@echo "KEEP_CACHE=$(KEEP_CACHE): keeping the sweep cache",$(PY) -m lib.sweep clear)

.PHONY: book test notebooks lint unit clean setup benchmark

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

book: $(STAMP)
	$(JB) clean --all .
	$(CLEAR_CACHE)
	BOOK_MODE=$${BOOK_MODE:-full} $(JB) build . --keep-going
	@echo "The book: $(CURDIR)/_build/html/index.html"

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests scripts benchmarks book/_ext

unit: $(STAMP)
	$(VENV)/bin/pytest -q

test: $(STAMP) lint unit
	$(JB) clean --all .
	$(CLEAR_CACHE)
	BOOK_MODE=quick $(JB) build . -W --keep-going
	BOOK_MODE=quick $(VENV)/bin/pytest -q -m book

notebooks: $(STAMP)
	$(VENV)/bin/jupytext --to ipynb notebooks/*/[0-9]*.md

benchmark: $(STAMP)
	$(PY) benchmarks/bench_curvature.py

clean:
	rm -rf _build .cache
