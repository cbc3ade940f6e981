# Sourced by the scripts that run cargo tests on wasm32: a misconfigured
# wasm-bindgen run passes with zero tests, so each checks the count.

# expect_ran EXPECTED OUTPUT LABEL: exits non-zero (showing the output's
# tail) unless `cargo test` OUTPUT reports exactly EXPECTED passed tests.
expect_ran() {
  local expected=$1 out=$2 label=$3 ran
  ran=$(echo "$out" | sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' | head -1)
  if [ -z "$ran" ] || [ "$ran" -ne "$expected" ]; then
    echo "$label: ran ${ran:-0} tests, expected $expected" >&2
    echo "$out" | tail -30 >&2
    exit 1
  fi
}
