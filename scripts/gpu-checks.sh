#!/usr/bin/env bash
# The CUDA target's checks on a machine with an NVIDIA GPU, run from the
# folder scripts/cuda-device-bundle.py made: every tensor-core product,
# model and node test with `tessel-run --device cuda` against its expected
# outputs (float64 products of the rounded inputs for the products,
# onnxruntime's for the models, ONNX's own for the node tests), then
# compute-sanitizer's memcheck and racecheck on the products and models,
# then the latency of the bench models. Ends with `N passed, N failed`.
#
# Tolerances: fp32 rtol 1e-3, atol 1e-4. The products, whatever their
# precision, the same: their references round the inputs as the kernels do.
# Models at fp16 and bf16 are compared relative to each output's scale
# (compare-outputs.py: max |error| / max |expected|), at most 1e-3 for fp16
# and 1e-2 for bf16, about two units of their rounding (2^-11, 2^-8): each
# product rounds its operands relative to their own magnitude, so the
# errors follow the activations' scale, not each output element's.
# A model at fp32 whose expected outputs exceed 100 in magnitude is
# compared by scale too, at most 1e-5: its outputs near zero come out of
# sums of terms in the hundreds or thousands, rounded to float32 (2^-24 of
# each) in another order than onnxruntime's, and may miss atol 1e-4 by
# rounding alone (ResNet-50 with two-level weights: outputs up to 1.6e3,
# one of 1000 off by 0.0022 on the CPU as on the GPU, 1.4e-6 by scale).
# 1e-5 is about 170 units of float32 rounding, seven times that error; a
# kernel that computes the wrong thing errs by a good part of the scale.
# 100 lies well between the bundled models: ResNet-50's outputs reach
# 1.6e3, all the others' stay under 5, where the elementwise bound holds.
#
#   ./gpu-checks.sh [JOBS] [SECTIONS]   (SECTIONS: products,models,sanitizer,node,bench)
#   SANITIZE='products/*.fp16/ models/mlp.fp16/' ./gpu-checks.sh 8 sanitizer
set -u
cd "$(dirname "$0")" || exit
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RUN="$PWD/bin/tessel-run"
JOBS="${1:-8}"
SECTIONS="${2:-products,models,sanitizer,node,bench}"
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

section() { [[ ",$SECTIONS," == *",$1,"* ]] && [ -d "${2:-.}" ]; }


normwise() { # model folder: the bound of compare-outputs.py if compared by scale
  local folder="${1%/}"
  case "$folder" in
    *.fp16) echo 1e-3 ;;
    *.bf16) echo 1e-2 ;;
    *.fp32) python3 ./compare-outputs.py "$folder/data" --larger-than 100 && echo 1e-5 ;;
  esac
}

inputs_only() { # folder: a copy of its data's inputs alone, so that tessel-run only runs
  local work
  work="/tmp/gpu-checks.$(basename "$1")"
  rm -rf "$work" && mkdir -p "$work/inputs" "$work/outputs" &&
    cp "$1"/data/input_*.pb "$work/inputs" && echo "$work"
}

check_model() { # folder: elementwise by tessel-run or by scale (above)
  local folder="$1" bound work
  bound=$(normwise "$folder")
  if [ -z "$bound" ]; then
    "$RUN" --device cuda "$folder/model.tsl" --test-data "$folder/data" --rtol 1e-3 --atol 1e-4
    return
  fi
  work=$(inputs_only "$folder") &&
    "$RUN" --device cuda "$folder/model.tsl" --test-data "$work/inputs" \
      --output-dir "$work/outputs" &&
    python3 ./compare-outputs.py "$folder/data" "$work/outputs" --normwise "$bound"
}

if section products products; then
  for product in products/*/; do
    name=$(basename "$product")
    check "product $name" "$RUN" --device cuda "$product/model.tsl" --test-data "$product/data" \
      --rtol 1e-3 --atol 1e-4
  done
fi

if section models models; then
  for model in models/*/; do
    name=$(basename "$model")
    check "model $name" check_model "$model"
  done
fi

if section sanitizer && command -v compute-sanitizer >/dev/null; then
  # $SANITIZE narrows the folders (racecheck on a large model takes long).
  for folder in ${SANITIZE:-products/*.fp16/ models/*/}; do
    [ -d "$folder" ] || continue
    name=$(basename "$folder")
    # A model compared by scale runs on its inputs alone: its outputs are
    # checked in the models section, not elementwise.
    data="$folder/data" compare="--rtol 1e-3 --atol 1e-4"
    if [[ "$folder" == models/* ]] && [ -n "$(normwise "$folder")" ]; then
      data="$(inputs_only "$folder")/inputs" compare=""
    fi
    for tool in memcheck racecheck; do
      # shellcheck disable=SC2086
      check "$tool $name" timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "$RUN" --device cuda "$folder/model.tsl" --test-data "$data" $compare
    done
  done
elif section sanitizer; then
  echo "compute-sanitizer: not installed here"
fi

# Node tests, several at once: each run starts the driver and JITs its PTX.
if section node node; then
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

# Latency: medians of 30 runs after 5, every model of models/ and bench/
# (bench/*.tsl.xz: older bundles, which xz-packed each bench artifact
# alone).
if section bench; then
  for artifact in models/*/model.tsl bench/*.tsl bench/*.tsl.xz; do
    [ -f "$artifact" ] || continue
    if [[ "$artifact" == *.xz ]]; then
      # Unpacked by an earlier run, it was timed as bench/*.tsl.
      [ -f "${artifact%.xz}" ] && continue
      xz -dkf "$artifact" && artifact="${artifact%.xz}"
    fi
    name=$(basename "$(dirname "$artifact")")
    [[ "$artifact" == bench/* ]] && name=$(basename "$artifact" .tsl)
    echo "latency $name: $("$RUN" --device cuda "$artifact" --bench 30 --warmup 5 2>&1 |
      grep -E 'latency|error' | tr '\n' ' ')"
  done
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
