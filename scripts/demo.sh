#!/usr/bin/env bash
#===- scripts/demo.sh - Compile and run the bundled example model ---------===#
#
# Compiles examples/lenet/model.onnx for this machine's x86 CPU, runs the
# artifact on the bundled input, prints the outputs, checks them against
# onnxruntime's and prints the latency.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$repo_root/build}
example=$repo_root/examples/lenet
artifact=$build_dir/examples/lenet.tsl
mkdir -p "$(dirname "$artifact")"

echo "== tessel-compile $example/model.onnx -o $artifact"
"$build_dir/bin/tessel-compile" "$example/model.onnx" -o "$artifact"
echo
echo "== tessel-run $artifact --test-data $example/test_data_set_0 --print --bench 200"
"$build_dir/bin/tessel-run" "$artifact" --test-data "$example/test_data_set_0" \
  --print --bench 200
