# One command each for a fresh clone:  `make demo` (install + replay the demo),  `make test`.
VENV := .venv
PYTHON ?= python3
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install demo test lint

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: install
	flowproof run examples/agent-demo/specs/

lint: install
	ruff check .

test: install lint
	pytest -q
