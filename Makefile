# Tessel: the two commands of a fresh machine are `make demo` and `make test`.
# Both install what is missing (scripts/setup.sh) and build first.

BUILD_DIR ?= build
JOBS ?= $(shell nproc)
# AddressSanitizer + UndefinedBehaviorSanitizer build with libFuzzer's
# coverage (make sanitize, make fuzz) and ThreadSanitizer build (make tsan).
SANITIZE_DIR ?= build-sanitize
TSAN_DIR ?= build-tsan
# Seconds each fuzz target runs in `make fuzz`.
FUZZ_SECONDS ?= 3600

# Where `make install` puts the tools and the runtime package.
PREFIX ?= /usr/local

.PHONY: all setup configure build install wheel demo test conformance cuda-emulate bench \
  scalesim-compare random-qlinear sanitize fuzz tsan clean

all: build

setup:
	@./scripts/setup.sh

configure: setup
	@cmake -G Ninja -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

install: build
	@cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# The `tessel` Python package as a wheel in $(BUILD_DIR)/wheels (pip install
# ./python installs the same).
wheel: build
	@TESSEL_BUILD_DIR=$(abspath $(BUILD_DIR)) .venv/bin/pip wheel --quiet \
	  --disable-pip-version-check --no-deps -w $(BUILD_DIR)/wheels ./python

demo: build
	@./scripts/demo.sh $(BUILD_DIR)

test: build
	@./scripts/run-tests.sh $(BUILD_DIR)

# ONNX backend node tests of both pinned releases -> docs/conformance.md.
conformance: build
	@.venv/bin/python scripts/conformance.py

# The CUDA target's kernels of every ONNX node test, run on the host block by
# block and thread by thread on the test's inputs: each kernel against
# upstream linalg's loops, the outputs against the test's expected ones
# (`make test` runs the reductions' and normalizations' alone).
cuda-emulate: build
	@.venv/bin/python scripts/emulate-node-tests.py

# Tessel next to onnxruntime on the benchmark models -> docs/performance.md,
# their INT8 quantizations -> docs/performance-int8.md, and the cost of
# run-time index checks -> docs/performance-index-checks.md, one dynamic-batch
# artifact against fixed-batch ones -> docs/performance-dynamic-batch.md, one
# varying-length LSTM and GRU at several lengths -> docs/performance-varying-length.md,
# and the Python package's call overhead -> docs/performance-python.md.
bench: build
	@.venv/bin/python scripts/bench.py
	@.venv/bin/python scripts/bench-int8.py
	@.venv/bin/python scripts/bench-index-checks.py
	@.venv/bin/python scripts/bench-dynamic-batch.py
	@.venv/bin/python scripts/bench-varying-length.py
	@.venv/bin/python scripts/bench-python.py --build $(BUILD_DIR)

# The NPU simulator's SCALE-Sim timing mode against SCALE-Sim 3.0.0 itself,
# layer by layer, on several arrays and both dataflows
# (scripts/compare-scalesim.py; docs/npu/target.md). SCALE-Sim lives in its
# own virtual environment, .venv-scalesim, as it needs numpy < 2.4.
scalesim-compare: build .venv-scalesim/bin/python
	@.venv/bin/python scripts/compare-scalesim.py --tools $(BUILD_DIR)/bin

.venv-scalesim/bin/python:
	@python3 -m venv .venv-scalesim && .venv-scalesim/bin/pip install --quiet \
	  --disable-pip-version-check scalesim==3.0.0 'numpy<2.4' || { rm -rf .venv-scalesim; exit 1; }

# The tests that feed Tessel malformed input, under ASan and UBSan: the
# runtime's unit tests, the malformed-model suite, bit flips, .npy errors
# and every fuzz corpus and regression input.
sanitize: setup
	@cmake -G Ninja -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=Release \
	  "-DTESSEL_SANITIZERS=address;undefined" -DTESSEL_LIBFUZZER=ON > /dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS)
	@./scripts/run-sanitized-tests.sh $(SANITIZE_DIR)

# Random QLinearConv and QLinearMatMul configurations compiled for x86 and
# for the NPU, each bit for bit against onnx.reference: QLINEAR_COUNT of
# each from QLINEAR_SEED (by default the 1,000 of each that docs/quantization.md
# and docs/npu/target.md describe; `make test` runs the first 400).
QLINEAR_COUNT ?= 1000
QLINEAR_SEED ?=
random-qlinear: build
	@.venv/bin/python test/lib/random_qlinear.py --seed $(or $(QLINEAR_SEED),20261124) \
	  --count $(QLINEAR_COUNT) --work $(BUILD_DIR)/random-qlinear/x86 --tools $(BUILD_DIR)/bin
	@.venv/bin/python test/lib/random_qlinear.py --space npu --seed $(or $(QLINEAR_SEED),20261125) \
	  --count $(QLINEAR_COUNT) --work $(BUILD_DIR)/random-qlinear/npu --tools $(BUILD_DIR)/bin

# Each fuzz target for FUZZ_SECONDS under ASan and UBSan, from the
# checked-in corpus (scripts/fuzz.sh).
fuzz: setup
	@cmake -G Ninja -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=Release \
	  "-DTESSEL_SANITIZERS=address;undefined" -DTESSEL_LIBFUZZER=ON > /dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS) --target tessel-fuzz-onnx-import \
	  tessel-fuzz-artifact tessel-fuzz-tensor-files tessel-fuzz-npu-stream
	@./scripts/fuzz.sh $(SANITIZE_DIR) $(FUZZ_SECONDS)

# The runtime under ThreadSanitizer: its unit tests (threads, sessions, the
# thread pool) and a compiled model run 200 times on 2 threads.
tsan: build
	@cmake -G Ninja -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=Release \
	  -DTESSEL_SANITIZERS=thread > /dev/null
	@cmake --build $(TSAN_DIR) -j $(JOBS) --target RuntimeTests tessel-run
	@TSAN_OPTIONS=halt_on_error=1 $(TSAN_DIR)/test/Unit/Runtime/RuntimeTests --gtest_brief=1
	@$(BUILD_DIR)/bin/tessel-compile examples/lenet/model.onnx -q -o $(TSAN_DIR)/lenet.tsl
	@TSAN_OPTIONS=halt_on_error=1 $(TSAN_DIR)/bin/tessel-run $(TSAN_DIR)/lenet.tsl \
	  --bench 200 --threads 2 --test-data examples/lenet/test_data_set_0

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(TSAN_DIR)
