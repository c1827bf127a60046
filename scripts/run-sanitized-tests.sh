#!/usr/bin/env bash
#===- scripts/run-sanitized-tests.sh - The hostile-input tests under ASan ---===#
#
# `make sanitize`: in the AddressSanitizer + UndefinedBehaviorSanitizer
# build, the tests that feed Tessel malformed input (models, artifacts,
# tensor files, every fuzz corpus and regression input) and the runtime's
# unit tests. A sanitizer report ends its process with a non-zero status,
# which fails the test. Ends with lit's summary.
#
#===----------------------------------------------------------------------===#
set -uo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$repo_root/build-sanitize}
lit=/usr/lib/llvm-22/bin/lit

# Leaks are reported too; what MLIR and LLVM keep in globals until exit is
# not a leak.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# The long-run memory test is left out: ASan's quarantine keeps freed
# memory on purpose, and LeakSanitizer reports real leaks at every exit.
tests='Onnx/malformed-models|Onnx/bit-flips|Onnx/external-data|Tools/tessel-run-errors'
tests+='|Tools/tessel-compile-errors|Tools/signed-artifacts|Fuzz/|Runtime/./RuntimeTests'
"$lit" -sv --filter "$tests" "$build_dir/test" "$build_dir/test/Unit"
