#!/usr/bin/env bash
# The packed package in fresh projects (SPEC §8, "Loads anywhere, breaks
# nothing"): `npm pack` of pkg/, then every fixture under
# tests/browser/fixtures/ built with it, unchanged: Next.js (Turbopack and
# webpack), Vite 5 and 8, webpack 5, Rollup, esbuild, Node import and require,
# and TypeScript reading the types through the exports (ESM and CommonJS).
#
# A fixture's dependencies come from the npm registry by its lockfile, once:
# they are kept in $ONCEKEY_CACHE/fixtures/ (default ~/.cache/oncekey),
# outside the clone like the cargo tools, and reinstalled only when the
# lockfile changes. The tarball is unpacked into node_modules/oncekey each
# run (what `npm install <tarball>` does for a package with no dependencies).
# The bundler fixtures share one page, tests/browser/fixtures/shared/,
# copied under each fixture's own files. Each `build` or `build:<variant>` script
# of a fixture is one build, in its own folder (`next`, `next-webpack`).
#
# Where each build is, for the Chromium run (tests/browser/fixtures.test.js):
# build/browser/fixtures.json (a run of some fixtures updates theirs).
#
#   scripts/test-browser-pack.sh [FIXTURE...]   (default: all)
#   ONCEKEY_TARBALL=oncekey-0.1.0.tgz scripts/test-browser-pack.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FIXTURES=$ROOT/tests/browser/fixtures
CACHE=${ONCEKEY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oncekey}/fixtures
WORK=$ROOT/build/browser/pack
rm -rf "$WORK"
mkdir -p "$WORK" "$CACHE"

# ONCEKEY_TARBALL: test that tarball instead (a published version, an older build).
if [ -n "${ONCEKEY_TARBALL:-}" ]; then
  tarball=$(realpath "$ONCEKEY_TARBALL")
else
  tarball=$WORK/$(cd pkg && npm pack --silent --pack-destination "$WORK")
fi
echo "packed $(basename "$tarball"): $(tar tzf "$tarball" | sed 's|^package/||' | sort | tr '\n' ' ')"

if [ $# -eq 0 ]; then
  set -- $(cd "$FIXTURES" && ls -d */ | tr -d / | grep -vx shared)
fi

# deps DIR FIXTURE: the fixture's locked dependencies in DIR, installed
# unless DIR already holds this lockfile's.
deps() {
  local dir=$1 fixture=$2 stamp=$1/node_modules/.oncekey-lock
  if [ ! -f "$fixture/package-lock.json" ]; then
    rm -rf "$dir/node_modules" && mkdir -p "$dir/node_modules"
  elif ! cmp -s "$fixture/package-lock.json" "$stamp"; then
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$fixture/package.json" "$fixture/package-lock.json" "$dir/"
    local started=$SECONDS
    (cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
    cp "$fixture/package-lock.json" "$stamp"
    echo "$(basename "$dir"): npm ci in $((SECONDS - started)) s"
  fi
}

# record VARIANT [DIR]: where VARIANT was built (none: it failed), kept
# beside the other fixtures' builds of earlier runs.
BUILT=$ROOT/build/browser/fixtures.json
record() {
  node -e '
    const fs = require("node:fs");
    const [file, variant, dir] = process.argv.slice(1);
    const built = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {};
    if (dir) built[variant] = dir;
    else delete built[variant];
    fs.writeFileSync(file, JSON.stringify(built, null, 2));
  ' "$BUILT" "$@"
}

failed=0
for name in "$@"; do
  fixture=$FIXTURES/$name
  [ -f "$fixture/package.json" ] || { echo "no fixture $name" >&2; exit 2; }
  for script in $(node -e "console.log(Object.keys(require('$fixture/package.json').scripts).filter((s) => /^build(:|\$)/.test(s)).join(' '))"); do
    variant=$name${script#build}
    variant=${variant/:/-}
    dir=$CACHE/$variant
    deps "$dir" "$fixture"
    # This run's sources and package; nothing from the last build (keeping
    # Next.js's .next/cache did not make its webpack build faster).
    find "$dir" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
    cp -r "$FIXTURES/shared/." "$dir/"
    (cd "$fixture" && find . -mindepth 1 -maxdepth 1 ! -name node_modules -exec cp -r {} "$dir/" \;)
    rm -rf "$dir/node_modules/oncekey" && mkdir -p "$dir/node_modules/oncekey"
    tar xzf "$tarball" --strip-components=1 -C "$dir/node_modules/oncekey"
    started=$SECONDS
    if (cd "$dir" && NEXT_TELEMETRY_DISABLED=1 npm run --silent "$script") >"$WORK/$variant.log" 2>&1; then
      echo "$variant: built in $((SECONDS - started)) s ($dir)"
      record "$variant" "$dir"
    else
      record "$variant"
      echo "$variant: FAILED after $((SECONDS - started)) s:" >&2
      tail -30 "$WORK/$variant.log" >&2
      failed=1
    fi
  done
done
[ "$failed" -eq 0 ] || exit 1

# What a bundler that handles `new URL(…, import.meta.url)` must emit: the
# wasm, as an asset beside the app.
for variant in vite5 vite8 webpack; do
  dir=$(node -e "console.log(require('$BUILT')['$variant'] ?? '')")
  [ -n "$dir" ] || continue
  find "$dir/dist" -name '*.wasm' | grep -q . \
    || { echo "$variant: the wasm was not emitted as an asset" >&2; exit 1; }
done
echo "every fixture built with the packed package"
