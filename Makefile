# One command each for a fresh clone:  `make demo` (install + replay the demo),  `make test`.
# Needs Python >= 3.11, and Node 20 + npm for the Node client the tests drive.
VENV := .venv
PYTHON ?= python3
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install demo test lint

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[test]'
	touch $@

# The Node client the end-to-end tests drive (npm `openai`), installed from its lockfile.
NODE_AGENTS := tests/agents/node
NODE_STAMP := $(NODE_AGENTS)/node_modules/.package-lock.json

$(NODE_STAMP): $(NODE_AGENTS)/package-lock.json
	npm ci --prefix $(NODE_AGENTS) --no-audit --no-fund

install: $(VENV)/.installed $(NODE_STAMP)

demo: install
	flowproof run examples/agent-demo/specs/

lint: install
	ruff check .
	mypy --strict flowproof

test: install lint
	pytest -q -rs -n auto
