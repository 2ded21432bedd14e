# Two entry points that work on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
EXTRAS ?= judges,train,perturb,metrics,asr,report,serve,ray,datajuicer,curator,test,dev
BIN := $(VENV)/bin
export HF_HUB_OFFLINE ?= 1
export WANDB_MODE ?= offline
export NO_MKDOCS_2_WARNING ?= 1

.PHONY: install demo test test-all test-slow test-research lint docs wheel-smoke lock clean

$(BIN)/.installed: pyproject.toml constraints.txt Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e ".[$(EXTRAS)]"
	# the official NISQA package, the reference of a parity test; its own pins (torch 2.2) are not wanted
	$(BIN)/pip install -q --no-deps nisqa==2.0.post2
	# Meta's Audiobox aesthetics model code; without its deps, which pull torchaudio for file reading only
	$(BIN)/pip install -q --no-deps audiobox-aesthetics==0.0.4
	# openai-whisper, the second speech-content backend, without triton (~1 GB; only its GPU word timings use it)
	$(BIN)/pip install -q -c constraints.txt tiktoken more-itertools
	$(BIN)/pip install -q --no-deps openai-whisper==20250625
	# verl's own reward managers and GRPO advantage, what the reward tests run; without its GPU stack (vLLM, flash-attn)
	# (omegaconf 2.4.0 replaces the 2.3.1 that NeMo Curator's hydra-core pin resolves to; both run on it, tested)
	$(BIN)/pip install -q --no-deps verl==0.9.1 tensordict==0.10.0 pyvers==0.2.3 torchdata==0.11.0 \
		omegaconf==2.4.0 hydra-core==1.3.8 antlr4-python3-runtime==4.9.3 codetiming==1.4.0 pylatexenc==2.11 orjson==3.13.0
	# PANNs' own network (panns_inference), the reference of the Cnn14 parity test; its __init__ downloads a label
	# list at import, so the test imports its models module alone
	$(BIN)/pip install -q --no-deps panns-inference==0.1.1
	# FastVideo ships av-benchmark's Synchformer files verbatim: the reference of the DeSync parity test, which
	# imports them without FastVideo's own stack (omegaconf and einops come with verl and the base install)
	$(BIN)/pip install -q --no-deps fastvideo==0.2.1
	# LAION-CLAP's own model and audio preparation, the reference of the CLAP parity test (its pins: numpy<2, and
	# torchvision and webdataset for its training data code, which the test leaves out)
	$(BIN)/pip install -q --no-deps laion-clap==1.1.7
	# MS-CLAP's own model, the reference of the MS-CLAP parity test (it pins transformers<5 and numpy<2)
	$(BIN)/pip install -q --no-deps msclap==1.3.4
	# PaSST's own network and front end (hear21passt), the reference of the PaSST parity test; its front end needs
	# torchaudio, which avjudge keeps out: the test gives it Kaldi's mel banks
	$(BIN)/pip install -q --no-deps hear21passt==0.0.26
	touch $@

install: $(BIN)/.installed

# the Debian packages the demo or the tests use, installed when missing and the machine allows it, else named
# with what goes without them (scripts/system_packages.sh; .ci/run runs the same step)
demo: install
	bash scripts/system_packages.sh demo
	$(BIN)/avjudge demo --out demo_out

test: install
	bash scripts/system_packages.sh test
	$(BIN)/python -m pytest -q

test-all: install
	bash scripts/system_packages.sh test
	$(BIN)/python -m pytest -q -m "not gpu"

test-slow: install
	bash scripts/system_packages.sh test
	$(BIN)/python -m pytest -q -m slow

test-research: install
	$(BIN)/python -m pytest -q -m research research/tests

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

docs: install
	$(BIN)/mkdocs build --strict

# the built wheel in a clean virtual environment outside the checkout: what a user's `pip install` gets
wheel-smoke: install
	bash scripts/wheel_smoke.sh $(BIN)/python

lock: install
	(grep "^#" constraints.txt; $(BIN)/pip freeze --exclude-editable | sed -E "s/^torch==([0-9.]+)\+cpu/torch==\1/") > constraints.tmp && mv constraints.tmp constraints.txt

clean:
	rm -rf $(VENV) demo_out site dist build .pytest_cache
