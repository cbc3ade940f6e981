#!/usr/bin/env bash
# Builds the npm package's `oncekey/worker` entry (SPEC §11) into pkg/dist/
# from pkg/worker-wasm (the library's JavaScript host bindings), offline:
# cargo → wasm-bindgen (TOOLS) → wasm-opt (npm binaryen) → esbuild.
#
#   pkg/dist/worker.js               the entry (ESM); imports the wasm beside it
#   pkg/dist/oncekey_worker_bg.wasm  the core, its exchange and coordinator steps
#   pkg/dist/worker.d.ts             the types
#   pkg/dist/cli.js                  the operator's command (npx --no-install oncekey), Node
#   pkg/dist/proxy.js                `oncekey/proxy`: the HTTP side alone
#   pkg/dist/oncekey_proxy_bg.wasm   its wasm: the same bindings without the queue consumer's
#   pkg/dist/proxy.d.ts              its types
#
# The wasm stays an import (`import wasm from "./oncekey_worker_bg.wasm"`):
# wrangler's bundler turns it into a WebAssembly.Module with no user config.
# The browser entry (pkg/dist/oncekey.*) is neither read nor written.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS:-$PWD/.tools}
BIN=node_modules/.bin
OUT=pkg/dist
# shellcheck source=scripts/wasm-glue.sh
. scripts/wasm-glue.sh

# Own target dir, and the same size settings as the browser build: the
# compact SHA-256, and unstripped output (wasm-bindgen needs the
# target_features section; it strips names itself).
export CARGO_TARGET_DIR=$PWD/target/worker-js
export RUSTFLAGS='--cfg sha2_backend_soft="compact"'
export CARGO_PROFILE_RELEASE_STRIP=false
# One entry: the bindings built with cargo's `$1` (the crate's features),
# into `$2` (the bindgen output's directory, under the target dir), its wasm
# optimised into pkg/dist/`$3`, and the entry `$4` bundled into pkg/dist/`$5`
# with `oncekey-worker-wasm` resolved to those bindings' JS; `cloudflare:workers`
# and the wasm are the runtime's and the user's bundler's to provide.
entry() {
  local features=$1 bindgen=$CARGO_TARGET_DIR/$2 wasm=$3 source=$4 out=$5
  # shellcheck disable=SC2086 # `features` is cargo flags, or none
  cargo build --quiet --release --target wasm32-unknown-unknown -p oncekey-worker-wasm $features
  wasm_glue "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/oncekey_worker_wasm.wasm" \
    "$bindgen" oncekey_worker_wasm "$OUT/$wasm"
  "$BIN/esbuild" "$source" --bundle --format=esm --minify --target=es2022 --platform=neutral \
    --legal-comments=none --log-level=warning \
    --alias:oncekey-worker-wasm="$bindgen/oncekey_worker_wasm.js" \
    --external:cloudflare:workers --external:"./$wasm" \
    --outfile="$OUT/$out"
}

mkdir -p "$OUT"
rm -f "$OUT/worker.js" "$OUT/oncekey_worker_bg.wasm" "$OUT/worker.d.ts" "$OUT/cli.js" "$OUT/oncekey-record.js" \
  "$OUT/proxy.js" "$OUT/oncekey_proxy_bg.wasm" "$OUT/proxy.d.ts"

# `oncekey/proxy`: the bindings without the queue consumer's (pkg/worker-wasm
# without its default `queue` feature), the same HTTP glue.
entry --no-default-features bindgen-proxy oncekey_proxy_bg.wasm pkg/src/proxy.js proxy.js
cp pkg/src/proxy.d.ts "$OUT/proxy.d.ts"

# `oncekey/worker`, with the queue consumer.
entry "" bindgen oncekey_worker_bg.wasm pkg/src/worker.js worker.js
cp pkg/src/worker.d.ts "$OUT/worker.d.ts"
# The same bindings under Node, reading the wasm beside it.
"$BIN/esbuild" pkg/src/cli.js --bundle --format=esm --minify --target=node20 --platform=node \
  --legal-comments=none --log-level=warning --banner:js='#!/usr/bin/env node' \
  --alias:oncekey-worker-wasm="$CARGO_TARGET_DIR/bindgen/oncekey_worker_wasm.js" \
  --outfile="$OUT/cli.js"
chmod +x "$OUT/cli.js"
if [ -f pkg/src/hono.js ]; then
  "$BIN/esbuild" pkg/src/hono.js --bundle --format=esm --minify --target=es2022 --platform=neutral \
    --legal-comments=none --log-level=warning --external:./proxy.js --outfile="$OUT/hono.js"
  cp pkg/src/hono.d.ts "$OUT/hono.d.ts"
fi
echo "built $OUT/proxy.js: $(cd "$OUT" && cat proxy.js oncekey_proxy_bg.wasm | gzip -9 | wc -c) bytes gzip (proxy JS + wasm)"
echo "built $OUT/worker.js: $(cd "$OUT" && cat worker.js oncekey_worker_bg.wasm | gzip -9 | wc -c) bytes gzip (worker JS + wasm)"
