# shellcheck shell=bash
# Sourced by scripts/build-browser.sh and scripts/build-worker-js.sh (which
# set TOOLS and BIN): one crate's wasm made into an npm entry's module.
#
#   wasm_glue WASM DIR NAME OPTIMISED
#
# wasm-bindgen (`--target web`, no default module path, names and producers
# section removed) of the cargo output WASM into DIR as NAME (its JS glue is
# DIR/NAME.js), then wasm-opt -Oz of its wasm into OPTIMISED.
wasm_glue() {
  local wasm=$1 dir=$2 name=$3 optimised=$4
  rm -rf "$dir"
  "$TOOLS/bin/wasm-bindgen" --target web --omit-default-module-path \
    --remove-name-section --remove-producers-section \
    --out-dir "$dir" --out-name "$name" "$wasm"
  "$BIN/wasm-opt" -Oz "$dir/${name}_bg.wasm" -o "$optimised"
}
