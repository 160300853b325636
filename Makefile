# The README's two commands. Both create .venv and install the project into it first.
#   make repro   run the whole pipeline on the offline default (dvc repro)
#   make test    run the test suite
VENV := .venv
BIN := $(abspath $(VENV))/bin
# Stage commands in dvc.yaml call `python`: it must be this environment's.
export PATH := $(BIN):$(PATH)
# litellm must not fetch its price map at import: no network is assumed anywhere.
export LITELLM_LOCAL_MODEL_COST_MAP := True
# llama.cpp builds for every instruction the build machine's CPU lists. Some list AMX that
# the kernel does not grant a process unasked, and the embedded model then dies of SIGILL
# (exit -4) at its first call; so on x86-64 it is built for AVX2, which every machine here has.
# Its multimodal library (mtmd, for image input) is not built: nothing here sends an image,
# and it is about a sixth of the compile, the longest step of the install.
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS += -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
endif
export CMAKE_ARGS ?= $(LLAMA_CMAKE_ARGS)

.PHONY: install repro test

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --constraint constraints.txt --editable '.[dev]'
	touch $@

repro: install
	dvc repro

# In parallel, one worker per core (pytest-xdist). loadgroup keeps a module whose tests share
# an expensive module fixture (a full run, a server) on one worker, so it is built once; the
# rest is dealt out test by test. --durations keeps the slowest tests in CI's log.
PYTEST_OPTIONS ?= -n auto --dist loadgroup --durations=25

test: install
	pytest $(PYTEST_OPTIONS)
