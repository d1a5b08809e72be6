# Set-up lives here: `make demo` and `make test` each create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast test-notebooks lint docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e ".[dev]"
	# numba's kernels, compiled once into its disk cache (about a minute on two cores): else
	# every fresh process (Dask workers, test processes) compiles its own on first use, which
	# cost a clean clone's test suite 812 s against 589 s with the cache.
	$(VENV)/bin/python -m soak_dask.compiled
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/soak demo

# Lint (ruff's rules, and its format of the Python sources: the docs' examples keep their own
# layout), then every test, on two pytest-xdist processes (CI's command, via .ci/run; aim:
# under 6 minutes on 2 idle cores). `--dist worksteal`: each process starts with half of the tests and
# takes over half of the other's remaining ones when it runs out, so the long tests (notebooks,
# subprocess resumes) do not pile up at the end of one process. (`--dist loadgroup` would keep a
# module on one process, but with pytest 9.2 and pytest-xdist 3.8 it silently ignores the
# `xdist_group` marks: pytest-dev/pytest-xdist#1386.) PYTEST_ARGS passes more, e.g. "-n 0".
PYTEST_XDIST := -n 2 --dist worksteal
# One BLAS thread per test process: two pytest processes and their clusters' workers share the
# two cores, and BLAS threads of their own oversubscribe them (Dask's nanny gives its workers
# one already). Measured on a clean clone: 673 s with the default threads, 589 s with one.
ONE_THREAD := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
# Bytecode cached: with PYTHONDONTWRITEBYTECODE set (some containers set it), pytest rewrites
# and compiles all ~290 test modules again in each process (collection: 12.9 CPU s, 7.1 s with
# the cache of an earlier run).
unexport PYTHONDONTWRITEBYTECODE
# `-rs` lists every skipped test with its reason. The notebooks run in the same session (one
# collection, and the two processes share out the notebooks with the rest: tests/conftest.py
# starts the modules with the most slow tests first, so no long test is left to the end).
NOTEBOOK_TESTS := tests/test_notebooks.py
test: $(STAMP)
	bash scripts/system-deps.sh
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check --quiet soak_dask tests benchmarks scripts
	$(ONE_THREAD) $(VENV)/bin/python -m pytest -rs --durations=25 $(PYTEST_XDIST) $(PYTEST_ARGS)

# The notebooks alone, executed top to bottom with their claims checked (each walks an engine
# path the suite tests already, as a user would): part of `make test` and so of CI, not of
# test-fast.
test-notebooks: $(STAMP)
	$(ONE_THREAD) $(VENV)/bin/python -m pytest -rs $(PYTEST_XDIST) $(NOTEBOOK_TESTS)

# For iterating: lint and the tests not marked slow, with a fifth of the hypothesis examples
# (tests/conftest.py), on the same two processes (aim: under 2 minutes on 2 idle cores; a test
# function whose ids take over ~0.7 s each in `--durations=0` is marked slow to keep it so).
# PYTEST_ARGS passes more, e.g. `make test-fast PYTEST_ARGS="-x tests/split"`.
test-fast: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check --quiet soak_dask tests benchmarks scripts
	HYPOTHESIS_PROFILE=fast $(ONE_THREAD) $(VENV)/bin/python -m pytest -m "not slow" -q $(PYTEST_XDIST) $(PYTEST_ARGS)

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) site soak_demo_output
