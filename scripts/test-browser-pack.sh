#!/usr/bin/env bash
# The packed package in fresh projects: `npm pack` → install the tarball
# (offline: it has no dependencies) → import it under Node, and build a
# minimal Vite app with it. The built app is left in build/browser/vite-app/dist
# for the Playwright run to load in Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$ROOT/build/browser/pack
rm -rf "$WORK" build/browser/vite-app
mkdir -p "$WORK"

tarball=$(cd pkg && npm pack --silent --pack-destination "$WORK")
echo "packed $tarball: $(tar tzf "$WORK/$tarball" | sed 's|^package/||' | sort | tr '\n' ' ')"

# Node: a fresh project imports it.
mkdir -p "$WORK/node-app"
(cd "$WORK/node-app" && echo '{"name":"n","private":true,"type":"module"}' > package.json \
  && npm install --offline --no-audit --no-fund --silent "$WORK/$tarball" \
  && node -e "
    const m = await import('oncekey');
    const k = m.newKey();
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\$/.test(k)) throw new Error('bad key ' + k);
    for (const n of ['idempotentFetch', 'isReplayed', 'protectForm', 'OnceKeyError', 'NetworkError', 'HTTPError']) if (!m[n]) throw new Error('missing ' + n);
    console.log('node: imported the packed package, key', k);
  " --input-type=module)

# Vite: a minimal app builds with it.
cp -r tests/browser/vite-app build/browser/vite-app
(cd build/browser/vite-app && npm install --offline --no-audit --no-fund --silent "$WORK/$tarball" \
  && "$ROOT/node_modules/.bin/vite" build --logLevel warn)
wasm=$(ls build/browser/vite-app/dist/assets/*.wasm 2>/dev/null | head -1)
[ -n "$wasm" ] || { echo "vite: the wasm was not emitted as an asset" >&2; exit 1; }
echo "vite: built build/browser/vite-app/dist ($(ls build/browser/vite-app/dist/assets | tr '\n' ' '))"
