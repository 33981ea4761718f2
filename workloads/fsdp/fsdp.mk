# FSDP2 trainer (workloads/fsdp): its own venv (torch, transformers, peft, datasets; no Pulumi), tests, local run.
# Included by the top-level Makefile, which sets PYTHON (python3.12) and collects TEST_TARGETS.
# torch stays out of every other venv: only targets in this file install or import it.

FSDP_VENV := .venv-fsdp
FSDP_PY := $(FSDP_VENV)/bin/python
FSDP_LOCAL := .cache/fsdp-local
# torchrun restarts are flaky when workers share the rendezvous TCP store; one thread per worker on a laptop.
FSDP_ENV := TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1

.PHONY: test-fsdp test-fsdp-slow train-local-fsdp

$(FSDP_VENV)/.installed: workloads/fsdp/requirements.txt workloads/fsdp/requirements-local.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else "the FSDP trainer venv needs Python 3.12 (set PYTHON=python3.12)")'
	$(PYTHON) -m venv $(FSDP_VENV)
	$(FSDP_VENV)/bin/pip install --quiet --upgrade pip
	$(FSDP_VENV)/bin/pip install --quiet -r workloads/fsdp/requirements-local.txt pytest==9.2.0
	touch $@

# About 3-4 minutes on 2 cores: unit tests plus five short torchrun runs (2 processes, gloo).
test-fsdp: $(FSDP_VENV)/.installed
	$(FSDP_PY) -m pytest tests/workloads/fsdp -q

test-fsdp-slow: $(FSDP_VENV)/.installed
	$(FSDP_PY) -m pytest tests/workloads/fsdp -q -m slow

# A tiny Llama fine-tuned on generated text-to-SQL by 2 CPU processes: progress bar, MaxText-style step
# lines every 10 steps, evaluation, checkpoints and the final export under $(FSDP_LOCAL)/run.
# Rebuilt when the code that generates it changes.
$(FSDP_LOCAL)/tiny/model/config.json: $(FSDP_VENV)/.installed workloads/fsdp/tiny.py workloads/fsdp/sample_data.py workloads/fsdp/llama3_vocab.py
	rm -rf $(FSDP_LOCAL)/tiny
	$(FSDP_PY) -m workloads.fsdp.tiny --out $(FSDP_LOCAL)/tiny --samples 1200

train-local-fsdp: $(FSDP_LOCAL)/tiny/model/config.json
	rm -rf $(FSDP_LOCAL)/run
	$(FSDP_ENV) $(FSDP_VENV)/bin/torchrun --standalone --nproc_per_node=2 -m workloads.fsdp.train \
		--model-id $(FSDP_LOCAL)/tiny/model --dataset-id $(FSDP_LOCAL)/tiny/dataset --output-dir $(FSDP_LOCAL)/run \
		--max-steps 60 --per-device-train-batch-size 2 --gradient-accumulation-steps 2 --learning-rate 3e-3 \
		--warmup-ratio 0.05 --compile false --mixed-precision fp32 --param-dtype fp32 --checkpoint-steps 20 --eval-steps 20 \
		--log-every 10 --metrics-jsonl $(FSDP_LOCAL)/run/metrics.jsonl --dist-timeout-s 120

TEST_TARGETS += test-fsdp
