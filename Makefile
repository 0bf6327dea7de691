# kafkalab: two commands, `make lab` and `make test`. Both set up .venv first (Python >= 3.11 and git only).
# For instructors: `make slides` (every deck, offline, in build/slides) and `make student` (docs/INSTRUCTOR.md).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# extra `jupyter lab` flags, e.g. LAB_FLAGS="--no-browser --port=8899" (tests/browser starts `make lab` with them)
LAB_FLAGS ?=
SETUP  := $(VENV)/.kafkalab-setup
# node_modules from package-lock.json (reveal.js for `make slides`; kafkajs for the interop tests)
NPM_SETUP := node_modules/.kafkalab-npm-ci

.PHONY: lab lab-instructor student slides test lint broker setup check-python clean

# The notebook `make lab` opens first: lab 00 when it exists, else the first lab there is.
FIRST_LAB := $(firstword $(notdir $(wildcard labs/00_tour.ipynb) $(sort $(wildcard labs/[0-9][0-9]_*.ipynb))))

## lab: set everything up, write the participant versions (`student`), and start JupyterLab on them with the
## first lab open (each notebook starts its own embedded broker)
lab: student
	$(VENV)/bin/jupyter lab --notebook-dir=participant $(LAB_FLAGS) $(addprefix participant/,$(FIRST_LAB))

## lab-instructor: the same on labs/, the instructors' versions with every solution (collapsed)
lab-instructor: setup
	$(VENV)/bin/jupyter trust labs/[0-9]*.ipynb >/dev/null
	$(VENV)/bin/jupyter lab --notebook-dir=labs $(LAB_FLAGS) $(addprefix labs/,$(FIRST_LAB))

## student: write the participant versions of the labs (no solutions, stored pictures kept) into participant/ and
## trust them; a notebook changed there is never overwritten (delete it for a fresh copy)
student: setup
	$(PY) scripts/build_labs.py --participant participant
	$(VENV)/bin/jupyter trust participant/*.ipynb >/dev/null

## slides: every deck for presenting offline in build/slides (open build/slides/index.html): the Markdown decks of
## slides/ and the notebooks' participant versions as slides, with reveal.js from package-lock.json (`npm ci`,
## the one step that needs a network; after it nothing is fetched)
slides: setup $(NPM_SETUP)
	$(PY) scripts/export_figures.py
	$(PY) scripts/build_slides.py --out build/slides

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

$(NPM_SETUP): package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make slides needs Node.js and npm (Debian/Ubuntu: sudo apt-get install nodejs npm)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kafkalab needs Python >= 3.11; run: make PYTHON=python3.11 ...")'

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache .import_linter_cache build *.egg-info
