# kafkalab: two commands, `make lab` and `make test`. Both set up .venv first (Python >= 3.11 and git only).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# extra `jupyter lab` flags, e.g. LAB_FLAGS="--no-browser --port=8899" (tests/browser starts `make lab` with them)
LAB_FLAGS ?=
SETUP  := $(VENV)/.kafkalab-setup

.PHONY: lab test lint broker setup check-python clean

## lab: set everything up and start JupyterLab on labs/ (each notebook starts its own embedded broker)
lab: setup
	@$(VENV)/bin/jupyter trust labs/*.ipynb >/dev/null   # stored pictures and hex dumps render before a cell runs
	$(VENV)/bin/jupyter lab --notebook-dir=labs $(LAB_FLAGS)

## test: set everything up, run `lint`, then the whole suite: pytest (unit, interop, scenarios) + nbval (every lab)
test: lint
	$(PY) -m pytest -p no:cacheprovider --nbval --nbval-current-env --nbval-sanitize-with labs/sanitize.cfg tests labs

## lint: ruff (pyflakes, bugbear, complexity) and the import contracts of pyproject.toml (docs/DEVELOPING.md)
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

## broker: a standalone lab broker on 127.0.0.1:9092 (logs in ./kafka-logs), for kcat and scripts; Ctrl-C stops it
broker: setup
	$(VENV)/bin/kafkalab broker

setup: $(SETUP)

$(SETUP): pyproject.toml constraints.txt | check-python
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,spark]"
	@touch $@

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kafkalab needs Python >= 3.11; run: make PYTHON=python3.11 ...")'

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache .import_linter_cache build *.egg-info
