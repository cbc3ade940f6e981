#!/usr/bin/env bash
# Runs the core's unit tests compiled to wasm32-unknown-unknown under Node
# (wasm-bindgen-test) and checks that they all ran: the count must equal the
# native run's, less the property tests (proptest does not run on wasm32).
set -euo pipefail
cd "$(dirname "$0")/.."

native=$(cargo test --lib -q -- --list 2>/dev/null | grep -c '^core::.*: test$' || true)
props=$(cargo test --lib -q -- --list 2>/dev/null | grep -c '^core::.*::prop_.*: test$' || true)
expected=$((native - props))

out=$(CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --lib --target wasm32-unknown-unknown 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -E '^test result' || true
ran=$(echo "$out" | sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' | head -1)
if [ -z "$ran" ] || [ "$ran" -ne "$expected" ]; then
  echo "core on wasm32: ran ${ran:-0} tests, expected $expected ($native native less $props property tests)" >&2
  echo "$out" | tail -30 >&2
  exit 1
fi
echo "core on wasm32 under Node: $ran tests ran, as expected"
