#!/usr/bin/env bash
# Runs the core's unit tests compiled to wasm32-unknown-unknown under Node
# (wasm-bindgen-test) and checks that they all ran: the count must equal the
# native run's, less the property tests (proptest does not run on wasm32).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/expect-ran.sh

native=$(cargo test --lib -q -- --list 2>/dev/null | grep -c '^core::.*: test$' || true)
props=$(cargo test --lib -q -- --list 2>/dev/null | grep -c '^core::.*::prop_.*: test$' || true)
expected=$((native - props))

out=$(CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --lib --target wasm32-unknown-unknown 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -E '^test result' || true
expect_ran "$expected" "$out" "core on wasm32 ($native native less $props property tests)"
echo "core on wasm32 under Node: $expected tests ran, as expected"
