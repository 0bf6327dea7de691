# kafkalab: two commands, `make lab` and `make test`. Both set up .venv first (Python >= 3.11 and git only).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# extra `jupyter lab` flags, e.g. LAB_FLAGS="--no-browser --port=8899" (tests/browser starts `make lab` with them)
LAB_FLAGS ?=
SETUP  := $(VENV)/.kafkalab-setup

.PHONY: lab lab-instructor test lint broker setup check-python clean

# The notebook `make lab` opens first: lab 00 when it exists, else the first lab there is.
FIRST_LAB := $(firstword $(notdir $(wildcard labs/00_tour.ipynb) $(sort $(wildcard labs/[0-9][0-9]_*.ipynb))))

## lab: set everything up, write the participant versions (no solutions) into participant/, trust their stored
## outputs, and start JupyterLab there with the first lab open (each notebook starts its own embedded broker)
lab: setup
	$(PY) scripts/build_labs.py --participant participant
	$(VENV)/bin/jupyter trust participant/*.ipynb >/dev/null
	$(VENV)/bin/jupyter lab --notebook-dir=participant $(LAB_FLAGS) $(addprefix participant/,$(FIRST_LAB))

## lab-instructor: the same on labs/, the instructors' versions with every solution (collapsed)
lab-instructor: setup
	$(VENV)/bin/jupyter trust labs/[0-9]*.ipynb >/dev/null
	$(VENV)/bin/jupyter lab --notebook-dir=labs $(LAB_FLAGS) $(addprefix labs/,$(FIRST_LAB))

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
