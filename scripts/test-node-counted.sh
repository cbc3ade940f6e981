#!/usr/bin/env bash
# Runs node:test files, one at a time, and fails unless every test in each
# ran and passed: as many passes as the file has top-level `test(` calls,
# and no failure. A file that loads no test still counts as one passing
# test to the runner, so a suite that quietly stops registering its tests
# must not read green. A file still running after 10 minutes fails (a dead
# workerd or browser must not hang CI): the runner's limit counts each
# file as one test too, and a file of many workerd runs (tests/worker-js)
# took over 3 minutes on a loaded machine.
#
#   scripts/test-node-counted.sh FILE|DIR...   (a DIR stands for its *.test.js)
set -euo pipefail
cd "$(dirname "$0")/.."

run_counted() {
  local file=$1 tap expected pass fail status=0
  tap=build/$(basename "$file" .js).tap
  expected=$(grep -c '^test(' "$file" || true)
  [ "$expected" -gt 0 ] || { echo "$file: no top-level test( calls to count" >&2; return 1; }
  node --test --test-timeout=600000 --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "$file" || status=$?
  # A file that registered no test is reported as one test named after it.
  if grep -qE "^(not )?ok [0-9]+ - .*$(basename "$file")\$" "$tap"; then
    echo "$file: no test registered" >&2
    return 1
  fi
  pass=$(sed -n 's/^# pass //p' "$tap" | tail -1)
  fail=$(sed -n 's/^# fail //p' "$tap" | tail -1)
  if [ "$status" -ne 0 ] || [ "${fail:-1}" -ne 0 ] || [ "${pass:-0}" -ne "$expected" ]; then
    echo "$file: ${pass:-0} of $expected tests passed, ${fail:-?} failed (exit $status)" >&2
    return 1
  fi
  echo "$file: $pass of $expected tests passed"
}

files=()
for arg in "$@"; do
  if [ -d "$arg" ]; then
    files+=("${arg%/}"/*.test.js)
  else
    files+=("$arg")
  fi
done
[ "${#files[@]}" -gt 0 ] || { echo "usage: $0 FILE|DIR..." >&2; exit 2; }
mkdir -p build
failed=0
for file in "${files[@]}"; do
  # An empty directory leaves its pattern as it was: no file, so no test ran.
  [ -f "$file" ] || { echo "$file: no such test file" >&2; failed=1; continue; }
  run_counted "$file" || failed=1
done
exit "$failed"
