#!/usr/bin/env bash
#===- scripts/run-tests.sh - Run the whole test suite ---------------------===#
#
# Every test goes through lit: FileCheck tests of each pass, importer and
# end-to-end tests, ONNX backend node tests, whole models against
# onnxruntime, and the GoogleTest unit tests. Ends with one summary line.
#
#===----------------------------------------------------------------------===#
set -uo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$repo_root/build}
results=$build_dir/test-results.xml
lit=/usr/lib/llvm-22/bin/lit

"$lit" -sv --xunit-xml-output "$results" "$build_dir/test" "$build_dir/test/Unit"
status=$?

"$repo_root/.venv/bin/python" - "$results" <<'PY'
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
cases = root.iter("testcase")
passed = failed = unsupported = 0
for case in cases:
    if case.find("failure") is not None or case.find("error") is not None:
        failed += 1
    elif case.find("skipped") is not None:
        unsupported += 1
    else:
        passed += 1
print(f"{passed} passed, {failed} failed, {unsupported} unsupported")
PY
exit $status
