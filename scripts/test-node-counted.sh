#!/usr/bin/env bash
# Runs one node:test file and fails unless every test in it ran and passed:
# as many passes as the file has top-level `test(` calls, and no failure.
# A file that loads no test still counts as one passing test to the runner,
# so a suite that quietly stops registering its tests must not read green.
set -euo pipefail
cd "$(dirname "$0")/.."
file=$1
mkdir -p build
tap=build/$(basename "$file" .js).tap
expected=$(grep -c '^test(' "$file" || true)
[ "$expected" -gt 0 ] || { echo "$file: no top-level test( calls to count" >&2; exit 1; }

status=0
node --test --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" "$file" || status=$?
# A file that registered no test is reported as one test named after it.
if grep -qE "^(not )?ok [0-9]+ - .*$(basename "$file")\$" "$tap"; then
  echo "$file: no test registered" >&2
  exit 1
fi
pass=$(sed -n 's/^# pass //p' "$tap" | tail -1)
fail=$(sed -n 's/^# fail //p' "$tap" | tail -1)
if [ "$status" -ne 0 ] || [ "${fail:-1}" -ne 0 ] || [ "${pass:-0}" -ne "$expected" ]; then
  echo "$file: ${pass:-0} of $expected tests passed, ${fail:-?} failed (exit $status)" >&2
  exit 1
fi
echo "$file: $pass of $expected tests passed"
