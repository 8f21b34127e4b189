# One command each for a fresh clone:  `make demo` (install + replay the demo),  `make test`.
# Needs Python >= 3.11, and Node 20 + npm for the Node client the tests drive.
VENV := .venv
PYTHON ?= python3
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install demo test lint freeze release-archive

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

# The frozen engine every channel ships (PyInstaller onedir, dist/flowproof/flowproof), then its
# selftest: --version, help-matchers and a record -> replay of one real flow through it.
DIST_STAMP := $(VENV)/.dist-installed
$(DIST_STAMP): $(VENV)/.installed
	$(VENV)/bin/python -m pip install --quiet -e '.[dist]'
	touch $@

freeze: install $(DIST_STAMP)
	python installer/build.py freeze
	pytest -q tests/e2e/test_frozen.py

# dist/release/flowproof-<version>-<target>.tar.gz and SHA256SUMS, from the frozen engine.
# On Linux the glibc gate runs first: no bundled ELF may need a glibc above GLIBC_MAX (this
# machine's Debian 12 build needs 2.36; release builds are gated at the floor, 2.31).
GLIBC_MAX ?= 2.36
release-archive: $(DIST_STAMP)
ifeq ($(shell uname -s),Linux)
	python installer/glibc_gate.py --max $(GLIBC_MAX) dist/flowproof
endif
	python installer/build.py archive
