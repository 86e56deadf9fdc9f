# The README's two commands: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run setup test lint bench system-deps clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): requirements.txt | $(PY)
	$(PIP) install --quiet -r requirements.txt
	touch $(STAMP)

$(DEV_STAMP): requirements.txt requirements-dev.txt | $(PY)
	$(PIP) install --quiet -r requirements-dev.txt
	touch $(STAMP) $(DEV_STAMP)

# bubblewrap isolates sandboxed tool processes; install it when we can (root + apt).
system-deps:
	@bash scripts/system_deps.sh

setup: $(STAMP) system-deps
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo

run: setup
	@bash scripts/run_dev.sh

test: $(DEV_STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(PY) bench/validate_bench.py
	$(PY) bench/engine_bench.py

clean:
	rm -rf var
