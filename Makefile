# Tessel: the two commands of a fresh machine are `make demo` and `make test`.
# Both install what is missing (scripts/setup.sh) and build first.

BUILD_DIR ?= build
JOBS ?= $(shell nproc)

.PHONY: all setup configure build demo test conformance bench clean

all: build

setup:
	@./scripts/setup.sh

configure: setup
	@cmake -G Ninja -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@./scripts/demo.sh $(BUILD_DIR)

test: build
	@./scripts/run-tests.sh $(BUILD_DIR)

# ONNX backend node tests of both pinned releases -> docs/conformance.md.
conformance: build
	@.venv/bin/python scripts/conformance.py

# Tessel next to onnxruntime on the benchmark models -> docs/performance.md,
# and their INT8 quantizations -> docs/performance-int8.md.
bench: build
	@.venv/bin/python scripts/bench.py
	@.venv/bin/python scripts/bench-int8.py

clean:
	rm -rf $(BUILD_DIR)
