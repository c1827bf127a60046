#!/usr/bin/env bash
#===- scripts/run-tests.sh - Run the whole test suite ---------------------===#
#
# lit runs FileCheck tests of each pass, importer and end-to-end tests, ONNX
# backend node tests, whole models against onnxruntime, and the GoogleTest
# unit tests; pytest runs the `tessel` Python package's tests against the
# package in the build tree. Ends with one summary line counting both.
#
#===----------------------------------------------------------------------===#
set -uo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$repo_root/build}
results=$build_dir/test-results.xml
python_results=$build_dir/python-test-results.xml
lit=/usr/lib/llvm-22/bin/lit
rm -f "$results" "$python_results"

"$lit" -sv --xunit-xml-output "$results" "$build_dir/test" "$build_dir/test/Unit"
status=$?

PYTHONPATH="$build_dir/python" "$repo_root/.venv/bin/python" -m pytest -q \
  -p no:cacheprovider --junitxml="$python_results" "$repo_root/python/tests"
python_status=$?
if ((status == 0)); then status=$python_status; fi

"$repo_root/.venv/bin/python" - "$results" "$python_results" <<'PY'
import os
import sys
import xml.etree.ElementTree as ET

cases = [case for path in sys.argv[1:] if os.path.exists(path)
         for case in ET.parse(path).getroot().iter("testcase")]
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
