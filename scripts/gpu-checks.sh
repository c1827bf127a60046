#!/usr/bin/env bash
# The CUDA target's checks on a machine with an NVIDIA GPU, run from the
# folder scripts/cuda-device-bundle.py made: every model and node test with
# `tessel-run --device cuda` against its expected outputs (onnxruntime's for
# the models, ONNX's own for the node tests), then compute-sanitizer's
# memcheck and racecheck on the models. Ends with `N passed, N failed`.
#
#   ./gpu-checks.sh [JOBS]
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RUN="$PWD/bin/tessel-run"
JOBS="${1:-8}"
passed=0
failed=0

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

check() { # name, command...: one check, counted
  local name="$1"
  shift
  if output=$("$@" 2>&1); then
    passed=$((passed + 1))
    echo "PASS $name: $(echo "$output" | grep -E 'device:|max abs error|latency' | tr '\n' ' ')"
  else
    failed=$((failed + 1))
    echo "FAIL $name: $(echo "$output" | tail -3 | tr '\n' ' ')"
  fi
}

for model in models/*/; do
  name=$(basename "$model")
  check "model $name" "$RUN" --device cuda "$model/model.tsl" --test-data "$model/data" \
    --rtol 1e-3 --atol 1e-4
done

if command -v compute-sanitizer >/dev/null; then
  for model in models/*/; do
    name=$(basename "$model")
    for tool in memcheck racecheck; do
      check "$tool $name" timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "$RUN" --device cuda "$model/model.tsl" --test-data "$model/data" --rtol 1e-3 --atol 1e-4
    done
  done
else
  echo "compute-sanitizer: not installed here"
fi

# Node tests, several at once: each run starts the driver and JITs its PTX.
if [ -d node ]; then
  node_test() {
    local dir="$1" name status=0
    name=$(basename "$dir")
    for data in "$dir"/test_data_set_*; do
      if ! out=$("$RUN" --device cuda "$dir/$name.tsl" --test-data "$data" --rtol 1e-3 \
        --atol 1e-7 2>&1); then
        echo "FAIL node $name: $(echo "$out" | grep -E 'error|max abs' | head -2 | tr '\n' ' ')"
        return
      fi
    done
    echo "PASS node $name"
  }
  export -f node_test
  export RUN
  results=$(ls -d node/*/ | xargs -P "$JOBS" -I{} bash -c 'node_test {}')
  echo "$results" | grep '^FAIL' || true
  node_passed=$(echo "$results" | grep -c '^PASS')
  node_failed=$(echo "$results" | grep -c '^FAIL')
  echo "node tests on the GPU: $node_passed passed, $node_failed failed"
  passed=$((passed + node_passed))
  failed=$((failed + node_failed))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
