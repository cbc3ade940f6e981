#!/usr/bin/env bash
# Builds the npm package into pkg/dist/ from pkg/wasm (the library's
# browser bindings and a small allocator),
# offline: cargo → wasm-bindgen (.tools) → wasm-opt (npm binaryen) → esbuild.
#
#   pkg/dist/oncekey.js         browsers and bundlers (fetches the wasm beside it)
#   pkg/dist/oncekey.node.js    Node >= 20, `import` (reads the wasm beside it)
#   pkg/dist/oncekey.node.cjs   Node >= 20, `require` (the same, as CommonJS)
#   pkg/dist/oncekey_bg.wasm    the core and its bindings
#   pkg/dist/oncekey.d.ts       the types (and oncekey.d.cts, the same for `require`)
#
# None awaits anything at top level: the wasm loads on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS:-$PWD/.tools}
BIN=node_modules/.bin
OUT=pkg/dist
# shellcheck source=scripts/wasm-glue.sh
. scripts/wasm-glue.sh

# Own target dir: the edge build writes a different oncekey.wasm into target/.
# The compact SHA-256 and unstripped output (wasm-bindgen needs the
# target_features section; it strips names itself) keep the module small.
export CARGO_TARGET_DIR=$PWD/target/browser
export RUSTFLAGS='--cfg sha2_backend_soft="compact"'
export CARGO_PROFILE_RELEASE_STRIP=false
cargo build --quiet --release --target wasm32-unknown-unknown -p oncekey-browser-wasm

# Only this entry's files: the worker entry (scripts/build-worker-js.sh)
# writes beside them.
rm -rf "$OUT"/oncekey.{js,node.js,node.cjs,d.ts,d.cts} "$OUT/oncekey_bg.wasm"
mkdir -p "$OUT"
wasm_glue "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/oncekey_browser_wasm.wasm" \
  "$OUT/bindgen" oncekey_wasm "$OUT/oncekey_bg.wasm"

common=(--bundle --format=esm --minify --target=es2022 --legal-comments=none --log-level=warning)
"$BIN/esbuild" pkg/src/browser.js "${common[@]}" --platform=browser --outfile="$OUT/oncekey.js"
"$BIN/esbuild" pkg/src/node.js "${common[@]}" --platform=node --outfile="$OUT/oncekey.node.js"
# CommonJS has no import.meta: the file's own URL comes from __filename.
"$BIN/esbuild" pkg/src/node.js "${common[@]}" --platform=node --format=cjs --outfile="$OUT/oncekey.node.cjs" \
  --define:import.meta.url=import_meta_url \
  --banner:js="var import_meta_url=require('node:url').pathToFileURL(__filename).href;"
cp pkg/src/oncekey.d.ts "$OUT/oncekey.d.ts"
cp pkg/src/oncekey.d.ts "$OUT/oncekey.d.cts"
rm -rf "$OUT/bindgen"
size=$(cd "$OUT" && cat oncekey.js oncekey_bg.wasm | gzip -9 | wc -c)
echo "built $OUT: $size bytes gzip (browser JS + wasm)"
# The budget (SPEC §8, issue 50): 25 KB gzip, wasm included.
[ "$size" -le $((25 * 1024)) ] || { echo "over the browser bundle's 25 KB gzip budget" >&2; exit 1; }
