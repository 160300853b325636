# The README's two commands. Both create .venv and install the project into it first.
#   make repro   run the whole pipeline on the offline default (dvc repro)
#   make test    run the test suite
VENV := .venv
BIN := $(abspath $(VENV))/bin
# Stage commands in dvc.yaml call `python`: it must be this environment's.
export PATH := $(BIN):$(PATH)
# litellm must not fetch its price map at import: no network is assumed anywhere.
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install repro test

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --constraint constraints.txt --editable '.[dev]'
	touch $@

repro: install
	dvc repro

test: install
	pytest
