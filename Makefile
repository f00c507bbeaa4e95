# Two commands do all set-up on a fresh machine:  make demo   and   make test
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench generated clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/aapcgen info
	$(BIN)/aapcgen schedule
	$(BIN)/aapcgen verify

lint: $(STAMP)
	$(BIN)/ruff check aapcgen tests tuning
	$(BIN)/ruff format --check aapcgen tests tuning

test: $(STAMP) lint
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python tuning/bench_scheduler.py
	$(BIN)/python tuning/bench_generate.py

generated: $(STAMP)
	$(BIN)/python tuning/regenerate.py

clean:
	rm -rf $(VENV) build dist *.egg-info
