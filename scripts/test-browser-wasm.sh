#!/usr/bin/env bash
# Runs the browser bindings' wasm-bindgen tests under Node and in headless
# Chromium, and fails unless each run ran every test in the file: a
# misconfigured browser run passes with zero tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/expect-ran.sh
TOOLS=${TOOLS:-$PWD/.tools}
export CARGO_TARGET_DIR=$PWD/target/browser
export RUSTFLAGS='--cfg sha2_backend_soft="compact"'
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=$TOOLS/bin/wasm-bindgen-test-runner

expected=$(grep -c '^#\[wasm_bindgen_test\]' tests/browser_wasm.rs)
run() {
  local where=$1; shift
  local out
  out=$(env "$@" cargo test --target wasm32-unknown-unknown --features browser --test browser_wasm 2>&1) \
    || { echo "$out" >&2; exit 1; }
  expect_ran "$expected" "$out" "browser bindings in $where"
  echo "browser bindings in $where: $expected of $expected tests passed"
}
run Node WASM_BINDGEN_TEST_ONLY_NODE=1
run "headless Chromium" WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=/usr/bin/chromedriver
