#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for FUZZ_SECONDS each (default 60),
# one after the other on one core, and prints a Markdown table of the
# executions. Seeds come from fuzz/seeds/<target> (committed); what the
# fuzzer finds goes to fuzz/corpus/<target> (ignored by git), so later runs
# start from it. A crash stops the run with libFuzzer's report and leaves
# the input in fuzz/artifacts/<target>/.
#
# cargo-fuzz passes -Z flags to rustc; only the stable toolchain exists
# here, so the build runs with RUSTC_BOOTSTRAP=1. No sanitizer (the core is
# safe Rust), debug assertions on (integer overflow panics).
#
#   scripts/fuzz.sh [target...]      FUZZ_SECONDS=600 scripts/fuzz.sh key
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(key record retry_after config multipart)
export RUSTC_BOOTSTRAP=1
FLAGS=(--sanitizer none --debug-assertions)

cargo fuzz build "${FLAGS[@]}" >&2

mkdir -p build
summary=build/fuzz-summary.md
{
  echo "| target | executions | seconds | exec/s | corpus | crashes |"
  echo "|---|---:|---:|---:|---:|---:|"
} > "$summary"
total=0
for target in "${TARGETS[@]}"; do
  mkdir -p "fuzz/corpus/$target"
  log="build/fuzz-$target.log"
  echo "fuzz: $target for ${SECONDS_EACH}s" >&2
  started=$(date +%s)
  if ! cargo fuzz run "${FLAGS[@]}" "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
      -max_total_time="$SECONDS_EACH" -print_final_stats=1 > "$log" 2>&1; then
    tail -40 "$log" >&2
    echo "fuzz: $target crashed; the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
  elapsed=$(( $(date +%s) - started ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "fuzz/corpus/$target" -type f | wc -l)
  total=$(( total + runs ))
  echo "| \`$target\` | $runs | $elapsed | $(( runs / (elapsed > 0 ? elapsed : 1) )) | $corpus | 0 |" >> "$summary"
done
echo "| **total** | **$total** | | | | **0** |" >> "$summary"
cat "$summary"
