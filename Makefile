# Set-up lives here: `make demo` and `make test` each create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/soak demo

test: $(STAMP)
	bash scripts/system-deps.sh
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest

# For iterating: lint and the tests not marked slow, with a fifth of the hypothesis examples
# (tests/conftest.py), on two pytest-xdist processes (aim: about 2 minutes on 2 idle cores).
# `make test` runs them all, in one process. PYTEST_ARGS passes more, e.g.
# `make test-fast PYTEST_ARGS="-x tests/split"`, or "-n 0" for one process.
test-fast: $(STAMP)
	$(VENV)/bin/ruff check .
	HYPOTHESIS_PROFILE=fast $(VENV)/bin/python -m pytest -m "not slow" -q -n 2 $(PYTEST_ARGS)

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) site soak_demo_output
