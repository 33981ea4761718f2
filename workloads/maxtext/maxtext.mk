# MaxText trainer (workloads/maxtext): its own venv (no Pulumi, no torch), tests, local run, and the fit check
# (tools/maxtext_fit: a workstation tool in no image, so editing it rolls no job; it runs in this venv).
# Included by the top-level Makefile, which sets PYTHON (python3.12) and collects TEST_TARGETS.

MAXTEXT_VENV := .venv-maxtext
MAXTEXT_PY := $(MAXTEXT_VENV)/bin/python
MAXTEXT_REQUIREMENTS := workloads/maxtext/requirements.txt workloads/maxtext/constraints.txt

# The seed's Llama 3 8B job on 2 x v6e-16 (ray-maxtext-multislice-gke): the facts the stack would pass.
MAXTEXT_SEED_8B_SLICES := --accelerator-type TPU-V6E --topology 4x4 --slices 2 --hosts-per-slice 4 --chips-per-host 4
MAXTEXT_SEED_8B_ARGS := model_name=llama3-8b dataset_type=synthetic steps=100 per_device_batch_size=4 \
	max_target_length=4096 ici_fsdp_parallelism=4 ici_tensor_parallelism=4

.PHONY: test-maxtext train-local-maxtext fit-check fit-check-seed

$(MAXTEXT_VENV)/.installed: $(MAXTEXT_REQUIREMENTS)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else "maxtext 0.2.5 needs Python 3.12 (set PYTHON=python3.12)")'
	$(PYTHON) -m venv $(MAXTEXT_VENV)
	$(MAXTEXT_VENV)/bin/pip install --quiet --upgrade pip
	@echo "make: installing MaxText, JAX and Ray into $(MAXTEXT_VENV) (minutes the first time)"
	$(PIP_PROGRESS) $(MAXTEXT_VENV)/bin/pip install $$progress -r workloads/maxtext/requirements.txt \
		-c workloads/maxtext/constraints.txt pytest==9.2.0
	touch $@

# -m "" also runs the tests marked slow (the local Ray runs, 1-2 minutes each; about 6 minutes in all),
# which pyproject's addopts leave out of a bare `pytest`. The big compiles are not tests: see fit-check.
test-maxtext: $(MAXTEXT_VENV)/.installed
	$(MAXTEXT_PY) -m pytest tests/workloads/maxtext tests/tools/maxtext_fit -q -m ""

# Two CPU workers train a tiny model for 20 steps; MaxText's step lines show the loss falling.
train-local-maxtext: $(MAXTEXT_VENV)/.installed
	$(MAXTEXT_PY) -m workloads.maxtext.local --workers 2 --steps 20

# Compiles every enabled MaxText job of a stack for its TPU slices on this CPU, one at a time, and refuses a job
# that does not fit HBM (`make fit-check STACK=dev`: the 8B seed job, about 3 minutes and 2 GB of RAM). Each
# verdict is cached in .cache/fit-check/; the stack's forecast follows, whatever the verdicts.
FIT_PLAN := .cache/plan-$(STACK).json
fit-check: $(MAXTEXT_VENV)/.installed $(VENV)/.preflight
	@mkdir -p .cache && rm -f $(FIT_PLAN)
	$(VENV)/bin/python -m preflight --stack $(STACK) --json $(FIT_PLAN) > /dev/null || test -f $(FIT_PLAN)
	$(WITH_SPINNER) --step "fit-check: compiling" --noise-log .cache/fit-check.log -- \
		$(MAXTEXT_PY) -m tools.maxtext_fit.fit_plan $(FIT_PLAN); status=$$?; \
		$(VENV)/bin/python -m preflight forecast --stack $(STACK); exit $$status

# The seed's 8B job for 2 x v6e-16, stated by hand (no stack needed).
fit-check-seed: $(MAXTEXT_VENV)/.installed
	$(MAXTEXT_PY) -m tools.maxtext_fit.fit $(MAXTEXT_SEED_8B_SLICES) --name seed-llama3-8b \
		-- $(MAXTEXT_SEED_8B_ARGS)

TEST_TARGETS += test-maxtext
