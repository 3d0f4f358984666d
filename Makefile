# Kit — set-up and checks. `make demo` and `make test` work on a fresh machine
# with only Python, pip and apt: they create .venv and install what they need.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kit-installed
EXTRAS ?= dev,docs,jobqueue,notebook,asr,lhotse,hf,rl,search,mlflow,tensorboard
# lhotse needs PyTorch: this CPU build (a file the machine keeps) is installed first,
# so lhotse's plain `torch` does not pull a CUDA build of several GB.
TORCH ?= torch==2.13.0

.PHONY: demo quickstart lab check test test-dist system-deps lint typecheck unit docs notebook-outputs screenshots bench dist clean

$(STAMP): pyproject.toml setup.py kit/asr/_align.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet '$(TORCH)'
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $@

# The main job: the decoding check (Whisper and PocketSphinx on speech made with
# flite and espeak-ng) on a local Dask cluster; WER by voice and engine, and
# runs/asr/*/report.html.
demo: $(STAMP)
	bash .ci/system-deps.sh demo
	$(BIN)/python -m kit.examples.asr

quickstart: $(STAMP)
	$(BIN)/python -m kit.examples.quickstart

# JupyterLab on the notebooks (as root too, as in most workshop containers), without
# the "get notified about Jupyter news?" prompt over every attendee's first notebook,
# saving widget state with each notebook (reopened, a dashboard shows its last picture)
# and with Kit's server extension (BokehJS served once, not stored in every output).
# Its terminals open in notebooks/ with the venv first on PATH, so the commands the
# notebooks print (`kit submit ...`, `python -m kit.examples...`) run there as printed.
# It speaks notebook 02's corpus first (once), so a cold kernel gets to the WER table
# in seconds. LAB_ARGS adds options (e.g. --no-browser --port=8890); LAB_CORPUS= skips
# the corpus.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings
LAB_ARGS ?=
LAB_CORPUS ?= notebooks/runs/asr-data
lab: $(STAMP)
	@if [ -n "$(LAB_CORPUS)" ]; then \
	  bash .ci/system-deps.sh demo && \
	  echo "lab: speaking notebook 02's corpus once, into $(LAB_CORPUS) (reused afterwards)" && \
	  $(BIN)/python -m kit.examples.asr.corpus $(LAB_CORPUS); fi
	mkdir -p $(LAB_SETTINGS)
	$(BIN)/python notebooks/.kit-lab/settings.py $(LAB_SETTINGS)/overrides.json
	cd notebooks && KIT_VENV="$(abspath $(VENV))" PATH="$(abspath $(BIN)):$$PATH" \
	  "$(abspath $(BIN))/jupyter" lab --ip=127.0.0.1 \
	  $$(test "$$(id -u)" = 0 && echo --allow-root) \
	  --config=.kit-lab/jupyter_server_config.py $(LAB_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check kit tests benchmarks docs
	$(BIN)/ruff format --check kit tests benchmarks docs

typecheck: $(STAMP)
	$(BIN)/mypy

# Python keeps what it compiles (__pycache__, and pytest's rewritten asserts) even where the
# environment says not to (PYTHONDONTWRITEBYTECODE, as CI machines often set): the suite
# starts a few hundred Python processes (workers, kernels, `kit` commands), and each would
# compile Kit's modules and the tests again.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest

# Test files run side by side in JOBS processes (pytest-xdist): most tests wait on a
# cluster, a browser or a subprocess, so three keep two cores busy. A file's tests stay
# on one process (its fixtures start once), and every test that uses the SLURM on one
# (tests/conftest.py); JOBS=0 runs everything in this process, one test at a time.
JOBS ?= 3

# The suite but the dist tier; its wall time goes to $(VENV)/.suite-seconds, which
# `make bench` records beside the last recorded one.
unit: $(STAMP)
	@start=$$(date +%s); $(PYTEST) -m "not dist" -n $(JOBS) --durations=30 && \
	  echo $$(( $$(date +%s) - start )) > $(VENV)/.suite-seconds

# The dist tier (tests/dist): the wheel built from this checkout, installed with pip's
# own resolver from the package index into a fresh venv per extra (the core alone, then
# asr, lhotse, rl, notebook, search, mlflow, tensorboard, jobqueue, gateway), and each
# extra's smallest real use run there. The system packages: flite and sox speak the asr
# venv's utterances; a running SLURM takes the jobqueue venv's job.
test-dist: system-deps
	KIT_TORCH='$(TORCH)' $(BIN)/python -m pytest -m dist -p no:randomly --durations=15 tests/dist

# The manual, offline, into docs/_build/html: warnings are errors and every reference
# to Kit's own names must resolve (make test builds it too, in tests/test_docs.py).
docs: $(STAMP)
	$(BIN)/sphinx-build -W -n -q -b html docs docs/_build/html
	@echo "docs: open docs/_build/html/index.html"

# The outputs the manual shows for notebooks 02 and 03, which need the spoken corpus and
# a SLURM (the build only checks them against the notebooks' code): run after changing
# either notebook, and commit docs/stored/. Needs `make system-deps` and .ci/slurm-up.sh.
notebook-outputs: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python docs/stored_outputs.py

# The manual's pictures (and the README's), taken in JupyterLab by the browser tests that
# check those screens, into docs/_static/: look at them before committing.
FLOWS := tests/widgets/test_flows_in_browser.py
screenshots: $(STAMP)
	mkdir -p docs/_static
	KIT_DOCS_PICTURES="$(abspath docs/_static)" $(BIN)/python -m pytest -q -p no:cacheprovider \
	  "$(FLOWS)::test_edit_run_and_watch[lab]" \
	  "$(FLOWS)::test_a_typo_shows_the_config_error_and_run_works_again[lab]" \
	  "$(FLOWS)::test_the_cluster_panel_is_the_cluster_runs_use[lab]" \
	  "$(FLOWS)::test_the_decoding_check_reaches_its_wer_table[lab]"
	@ls -l docs/_static/*.png

# System packages (SLURM, munge, openssl) via apt, and a single-node SLURM (as root).
# The hub test's proxy, configurable-http-proxy, from the npm registry into the venv.
HUB_PROXY := $(VENV)/node/node_modules/.bin/configurable-http-proxy
# A machine that got gcc only from system-deps.sh builds the compiled alignment
# (kit/asr/_align.c) then.
system-deps: $(STAMP)
	bash .ci/system-deps.sh
	ls kit/asr/_align.*.so >/dev/null 2>&1 || ! command -v gcc >/dev/null || \
	  $(BIN)/python -m pip install --quiet --no-deps -e .
	test -x $(HUB_PROXY) || ! command -v npm >/dev/null || \
	  npm install --silent --no-audit --no-fund --prefix $(VENV)/node configurable-http-proxy@5

test: system-deps lint typecheck unit

# The quick loop while coding: lint, types, and the tests and doctests that are not
# `slow` (no browser, Jupyter or other server, SLURM or spoken corpus: tests/conftest.py
# reads it from what each test uses); `make test` runs everything.
check: lint typecheck
	$(PYTEST) -q -m "not slow and not dist" -n $(JOBS) --durations=10

# Side-by-side benchmarks; results (with the machine description) go to benchmarks/results/.
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_import.py
	$(BIN)/python benchmarks/bench_engine.py
	$(BIN)/python benchmarks/bench_scale.py
	$(BIN)/python benchmarks/bench_class.py
	$(BIN)/python benchmarks/bench_dashboard.py
	$(BIN)/python benchmarks/bench_asr.py
	$(BIN)/python benchmarks/bench_check.py
	$(BIN)/python benchmarks/bench_score.py
	$(BIN)/python benchmarks/bench_explore.py
	$(BIN)/python benchmarks/bench_sweep.py
	$(BIN)/python benchmarks/bench_tracking.py
	$(BIN)/python benchmarks/bench_notebooks.py
	$(BIN)/python benchmarks/bench_rl.py
	$(BIN)/python benchmarks/bench_tls.py
	$(BIN)/python benchmarks/reliability.py

# The sdist and the wheel of kit-lab in dist/, checked as the package index would
# (twine check --strict); `make test-dist` installs the wheel into fresh venvs.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis docs/_build docs/_api dist
