# Trainyard: one Makefile, one venv per place that installs code (the Pulumi program, each trainer).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.12 2>/dev/null || echo python3)
VENV := .venv
STACK ?= dev
# e.g. --strict-schemas (what CI uses): a custom resource left unchecked for want of its schema fails
PREFLIGHT_FLAGS ?=

# Each workload's .mk appends its own test target here; test-infra runs last, once the trainers' venvs exist
# (tests/components/jobs/test_k8s_runtime.py runs the rendered commands in them).
TEST_TARGETS :=

.PHONY: preflight plan diff forecast catalog stack-schema test test-infra lint schemas train-local docs lock

TRAINYARD := $(VENV)/bin/trainyard
# pip's own progress (each package, download bars) on a terminal; one line per step in logs and CI. The terminal is
# tested by the recipe's own shell: inside $$(...) standard output is the substitution's pipe, never a terminal.
# Use: $(PIP_PROGRESS) pip install $$progress ...
PIP_PROGRESS = if [ -t 1 ]; then progress=; else progress=--quiet; fi;
# A long command's output under a spinner with the time each step has taken (cli/spinner.py; a terminal only).
WITH_SPINNER = $(VENV)/bin/python -m cli.spinner
# CI sets LOCKED=1: each venv installs the hash-locked copy of its requirements file (`make lock` writes them), and
# pip refuses any file whose sha256 the lock does not list. Use: pip install $(call requirements,FILE.txt)
requirements = $(if $(LOCKED),--require-hashes -r $(1:.txt=.lock),-r $(1))

$(VENV)/.preflight: requirements.txt requirements-preflight.txt policies/requirements.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "trainyard needs Python >= 3.12 (set PYTHON=python3.12)")'
	@echo "make: [1/3] creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "make: [2/3] upgrading pip in $(VENV)"
	$(if $(LOCKED),@echo "make: LOCKED: keeping the venv's own pip (an upgrade would fetch a file no lock lists)",$(VENV)/bin/pip install --quiet --upgrade pip)
	@echo "make: [3/3] installing requirements-preflight.txt (Pulumi, providers, checks: 1-2 min the first time)"
	$(PIP_PROGRESS) $(VENV)/bin/pip install $$progress $(call requirements,requirements-preflight.txt)
	touch $@

# The `trainyard` command (pyproject.toml: [project.scripts]), an editable install that copies nothing: it runs
# this checkout's code from any folder, no activation needed. setuptools is already in .venv (pulumi-policy needs it).
$(TRAINYARD): $(VENV)/.preflight pyproject.toml
	PYTHONWARNINGS=ignore $(VENV)/bin/pip install --quiet --no-deps --no-build-isolation --editable .
	touch $@

$(VENV)/.dev: $(TRAINYARD) requirements-dev.txt
	$(VENV)/bin/pip install --quiet $(call requirements,requirements-dev.txt)
	touch $@

# The hash-locked requirements CI installs: every package each file brings, at one version across the four locks
# (the dev lock resolves first and constrains the others), with the sha256 of each of its files on PyPI. Run after
# changing a pin; tests/github/test_requirement_locks.py fails while a lock disagrees with its file. Resolved for
# this machine's Python (3.12, like CI) from PyPI alone: a local pip config (mirrors, wheel folders) is ignored.
LOCK_VENV := .venv-lock
FROM_PYPI := env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null
PIP_COMPILE = $(FROM_PYPI) $(LOCK_VENV)/bin/pip-compile --quiet --allow-unsafe --generate-hashes --strip-extras \
	--no-emit-index-url --no-emit-find-links

$(LOCK_VENV)/.installed:
	$(PYTHON) -m venv $(LOCK_VENV)
	$(FROM_PYPI) $(LOCK_VENV)/bin/pip install --quiet pip==26.3 pip-tools==7.6.2
	touch $@

lock: $(LOCK_VENV)/.installed
	$(PIP_COMPILE) --output-file=requirements-dev.lock requirements-dev.txt
	$(PIP_COMPILE) --constraint=requirements-dev.lock --output-file=requirements-preflight.lock requirements-preflight.txt
	$(PIP_COMPILE) --constraint=requirements-dev.lock --output-file=requirements.lock requirements.txt
	$(PIP_COMPILE) --constraint=requirements-dev.lock --output-file=policies/requirements.lock policies/requirements.txt

# One target per verb (`.venv/bin/trainyard VERB --help` says more): make preflight|plan|forecast [STACK=dev],
# make diff [BASE=<git revision>] [STACK=dev], make catalog.
preflight plan: $(TRAINYARD)
	$(TRAINYARD) plan --stack $(STACK) $(PREFLIGHT_FLAGS)

diff: $(TRAINYARD)
	$(TRAINYARD) diff --stack $(STACK) $(if $(BASE),--base $(BASE))

forecast: $(TRAINYARD)
	$(TRAINYARD) forecast --stack $(STACK)

catalog: $(TRAINYARD)
	$(TRAINYARD) catalog

# docs/stack-schema.json, the stack file's JSON Schema for editors (docs/editor.md), from the config models.
stack-schema: $(TRAINYARD)
	$(TRAINYARD) schema --write

# Re-fetch the pinned CRD schemas from their upstream commits into .cache/ (looked up before the copies
# vendored in preflight/checks/crds/), checking every file's sha256; needs the internet.
schemas: $(VENV)/.preflight
	$(VENV)/bin/python -m preflight.checks.fetch_schemas

# docs/configuration.md's config table, from the config models' field descriptions (a test fails when they disagree).
docs: $(VENV)/.preflight
	$(VENV)/bin/python -m components.config.reference --write

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports  # the import contracts in pyproject.toml (it puts the repo root on sys.path)

test-infra: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports  # the import contracts in pyproject.toml (it puts the repo root on sys.path)
	$(VENV)/bin/python -m pytest tests/preflight tests/components tests/policies tests/github tests/runs -q

-include workloads/fsdp/fsdp.mk
-include workloads/maxtext/maxtext.mk

test: $(TEST_TARGETS)
	$(MAKE) test-infra

# Both trainers at tiny scale on this CPU, with visible progress (docs/trainers.md).
train-local: train-local-fsdp train-local-maxtext
