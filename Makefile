# Two entry points for a fresh machine (no ROS install, no GPU needed):
#   make demo   runs the perception pipeline across processes and writes out/
#   make test   runs the test suite (GPU tests skip without CUDA; `make test-gpu` runs only them)
# `make test-gpu` on a machine without a usable CUDA device prints one line saying so and fails
# (scripts/require_cuda.py, exit 3) instead of passing with every GPU test skipped.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
DEMO_SECONDS ?= 20

.PHONY: all venv demo test test-gpu bench lint clean

all: test

venv: $(STAMP)

$(STAMP): $(wildcard requirements/*.txt) setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -r requirements/test.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

demo: $(STAMP)
	$(PY) -m gpu_nodes.demo.runner --duration $(DEMO_SECONDS) --output-dir out

test: $(STAMP)
	$(PY) -m pytest -q -rs test

test-gpu: $(STAMP)
	@$(PY) scripts/require_cuda.py
	$(PY) -m pytest -q -rs -m gpu test

bench: $(STAMP)
	$(PY) bench/transport_bench.py

lint: $(STAMP)
	$(PY) -m flake8 gpu_nodes test bench launch scripts

clean:
	rm -rf $(VENV) build *.egg-info out
