# Executable Learning Dynamics: two commands do everything.
#   make book   set up .venv (pinned packages) and build the whole book, executing every notebook (full mode)
#   make test   same set-up, then ruff, the unit tests, a clean quick-mode build with warnings as errors,
#               and the checks that read that build (claims, widgets, timings, determinism)
#   make notebooks   write .ipynb twins of the chapters (generated, never committed)
#   make test-full   the same checks on the full build (not in CI)
#   make lint        ruff on lib, tests, scripts, benchmarks and on the chapters' code (make format-chapters fixes)
#   make lab         set up .venv and start JupyterLab on the notebooks (the .md chapters open as notebooks)
#   make test-browser   the browser test of the built book (_build/html) in headless Chromium, network blocked
#   make pdf         the whole book as one PDF (_build/pdf/book.pdf), printed by Chromium from _build/html
#   make paper-scale NAME=...   a named paper-scale run (lib.paper_scale) on the best device, resumable;
#                    NAME=list lists them with their cost; SMOKE=1 its tiny configuration; JOBS=2 two pieces at once
#   make student     the student edition: the HTML with solutions hidden (_build/student/_build/html) and .ipynb
#                    copies of the chapters without their solutions (_build/student/notebooks); quick mode by default

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
JB     := $(VENV)/bin/jupyter-book
STAMP  := $(VENV)/.installed
# JavaScript pinned in package.json/package-lock.json: MathJax served by the book, playwright-core for the browser
NPM    ?= npm
NODE_STAMP := node_modules/.installed
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings
CHROMIUM ?= $(or $(shell command -v chromium 2>/dev/null),/usr/bin/chromium)
export CHROMIUM
export PYTHONHASHSEED := 0
# Builds start from an empty sweep cache (lib.sweep) unless KEEP_CACHE=1 (e.g. `make test KEEP_CACHE=1`).
CLEAR_CACHE = $(if $(filter 1 yes true,$(KEEP_CACHE)),@echo "KEEP_CACHE=$(KEEP_CACHE): keeping the sweep cache",$(PY) -m lib.sweep clear)

.PHONY: book test test-full notebooks lint format-chapters unit clean setup benchmark lab test-browser pdf student \
	paper-scale

setup: $(STAMP) $(NODE_STAMP)

$(STAMP): requirements.txt constraints.txt pyproject.toml binder/overrides.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	mkdir -p $(LAB_SETTINGS) && cp binder/overrides.json $(LAB_SETTINGS)/overrides.json
	touch $(STAMP)

$(NODE_STAMP): package.json package-lock.json
	$(NPM) ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

book: $(STAMP) $(NODE_STAMP)
	$(JB) clean --all .
	$(CLEAR_CACHE)
	BOOK_MODE=$${BOOK_MODE:-full} $(JB) build . --keep-going
	@echo "The book: $(CURDIR)/_build/html/index.html"

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests scripts benchmarks book/_ext
	$(PY) scripts/lint_chapters.py

format-chapters: $(STAMP)
	$(PY) scripts/lint_chapters.py --fix

# the unit tests in two processes side by side, one per core (on an idle 2-core machine 132 s one after the other,
# 85 s side by side): the parts' tests, the fuzz table and three slow files in one, the rest in the other
UNIT_A = tests/parts tests/test_fuzz.py tests/test_eld_execute.py tests/test_template.py tests/test_eld_refs.py
unit: $(STAMP)
	@log=$$(mktemp); echo "pytest -q $(UNIT_A) (beside the other unit tests; its output follows theirs)"; \
	$(VENV)/bin/pytest -q $(UNIT_A) > $$log 2>&1 & a=$$!; \
	$(VENV)/bin/pytest -q $(foreach f,$(UNIT_A),--ignore=$(f)); b=$$?; \
	wait $$a; s=$$?; cat $$log; rm -f $$log; \
	if [ $$s != 0 ] || [ $$b != 0 ]; then echo "unit tests failed"; exit 1; fi

test: $(STAMP) $(NODE_STAMP) lint unit
	$(JB) clean --all .
	$(CLEAR_CACHE)
	BOOK_MODE=quick $(JB) build . -W --keep-going
	@# the post-build checks and the browser test read the build and nothing else: run side by side (two cores)
	@echo "BOOK_MODE=quick pytest -q -m book (beside the browser test; its output follows it)"
	@BOOK_MODE=quick $(VENV)/bin/pytest -q -m book > _build/book-checks.log 2>&1 & checks=$$!; browser=0; \
	if [ -x "$(CHROMIUM)" ]; then $(MAKE) --no-print-directory test-browser || browser=1; \
	else echo "Browser test skipped: no Chromium at $(CHROMIUM) (Debian: apt-get install chromium)"; fi; \
	wait $$checks; status=$$?; cat _build/book-checks.log; \
	if [ $$status != 0 ]; then echo "post-build checks failed"; fi; \
	test $$status = 0 && test $$browser = 0

# the full book with warnings as errors and the post-build checks at full-mode budgets (not part of CI: run it before
# resolving an issue that changes a chapter)
test-full: $(STAMP) $(NODE_STAMP) lint unit
	$(JB) clean --all .
	BOOK_MODE=full $(JB) build . -W --keep-going
	BOOK_MODE=full $(VENV)/bin/pytest -q -m book

notebooks: $(STAMP)
	$(VENV)/bin/jupytext --to ipynb notebooks/*/[0-9]*.md

# a course's edition: exercises kept, solutions out (sphinx-exercise's hide_solutions in the HTML, the {solution}
# blocks removed from the notebooks); scripts/student.py writes the notebooks and the config, tests/test_student.py
student: $(STAMP) $(NODE_STAMP)
	rm -rf _build/student
	$(PY) scripts/student.py notebooks --out _build/student/notebooks
	$(PY) scripts/student.py config --out _build/student/_config.yml
	BOOK_MODE=$${BOOK_MODE:-quick} $(JB) build . --config _build/student/_config.yml --path-output _build/student --keep-going
	@echo "Student edition: $(CURDIR)/_build/student/_build/html/index.html and $(CURDIR)/_build/student/notebooks"

# as root (a container) JupyterLab refuses to start without --allow-root
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks \
		$$(test "$$(id -u)" = 0 && echo --allow-root)

test-browser: $(NODE_STAMP)
	node tests/browser/check_book.mjs --html _build/html

pdf: $(NODE_STAMP)
	test -f _build/html/index.html || $(MAKE) --no-print-directory book
	node tests/browser/print_book.mjs --html _build/html --out _build/pdf/book.pdf

benchmark: $(STAMP)
	$(PY) benchmarks/bench_curvature.py
	$(PY) benchmarks/bench_sharpness.py
	$(PY) benchmarks/bench_train.py
	$(PY) benchmarks/bench_growth.py
	$(PY) benchmarks/book_table.py

paper-scale: $(STAMP)
	@test -n "$(NAME)" || { echo "make paper-scale NAME=<run> (NAME=list lists them)"; exit 2; }
	$(if $(filter list,$(NAME)),$(PY) -m lib.paper_scale --list,$(PY) -m lib.paper_scale $(NAME) $(if $(SMOKE),--smoke) $(if $(JOBS),--jobs $(JOBS)))

clean:
	rm -rf _build .cache
