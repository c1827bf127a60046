#!/usr/bin/env bash
#===- scripts/fuzz.sh - Run every fuzz target under ASan and UBSan ---------===#
#
# `make fuzz`: each libFuzzer target of the sanitizer build runs for SECONDS
# (all at once, one process each), starting from the checked-in corpus
# (test/Fuzz/corpus) and the regression inputs of past findings. New
# corpus entries stay in BUILD/fuzz/TARGET/corpus; a finding is written to
# BUILD/fuzz/TARGET/findings and ends the script with status 1. Fix it, then
# keep the input in test/Fuzz/regressions/TARGET so that `make test`
# replays it.
#
#   scripts/fuzz.sh [BUILD [SECONDS]]
#
#===----------------------------------------------------------------------===#
set -uo pipefail

repo_root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$repo_root/build-sanitize}
seconds=${2:-3600}
targets=(onnx-import artifact tensor-files npu-stream)

# A model may legitimately fold up to 1 GiB at compile time: the RSS limit
# leaves room for that and flags anything beyond.
fuzz_options=(-max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1)

pids=()
for target in "${targets[@]}"; do
  work=$build_dir/fuzz/$target
  mkdir -p "$work/corpus" "$work/findings"
  echo "fuzz: $target for $seconds s (log: $work/log)"
  inputs=("$work/corpus" "$repo_root/test/Fuzz/corpus/$target")
  regressions=$repo_root/test/Fuzz/regressions/$target
  if [[ -d $regressions ]]; then inputs+=("$regressions"); fi
  "$build_dir/bin/tessel-fuzz-$target" "${fuzz_options[@]}" -artifact_prefix="$work/findings/" \
    "${inputs[@]}" > "$work/log" 2>&1 &
  pids+=($!)
done

status=0
for i in "${!targets[@]}"; do
  target=${targets[$i]}
  wait "${pids[$i]}"
  code=$?
  work=$build_dir/fuzz/$target
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$')
  findings=$(find "$work/findings" -type f | wc -l)
  echo "fuzz: $target: ${runs:-?} inputs run, $findings findings, exit $code"
  # 72: libFuzzer's status for a run interrupted (Ctrl-C) before its time.
  if ((findings != 0 || (code != 0 && code != 72))); then status=1; fi
done
exit $status
