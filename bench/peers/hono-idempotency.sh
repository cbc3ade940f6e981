#!/usr/bin/env bash
# Brings hono-idempotency's source (github.com/paveg/hono-idempotency, MIT)
# to build/bench/hono-idempotency for the hono-do peer (bench/peers/hono-do.ts).
# The package is not on the npm registry this machine reaches, so the source
# comes from a local copy of its repository: $HONO_IDEMPOTENCY_SRC (a
# checkout or a bare git directory), else the mirror the tool library
# fetches to. Without one it says so and exits 0: the edge benchmark then
# runs without this peer. Nothing of the package is kept in this repository.
set -euo pipefail
out=build/bench/hono-idempotency
src=${HONO_IDEMPOTENCY_SRC:-/work/.mirror/paveg+hono-idempotency/repo}
if [ ! -e "$src" ]; then
  rm -rf "$out"
  echo "hono-idempotency: no source at $src (set HONO_IDEMPOTENCY_SRC to a checkout); the bench runs without hono-do" >&2
  exit 0
fi
rm -rf "$out" && mkdir -p "$out"
if git --git-dir="$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  git --git-dir="$src" archive HEAD src LICENSE package.json | tar -x -C "$out"
  git --git-dir="$src" rev-parse HEAD > "$out/COMMIT"
else
  cp -r "$src/src" "$src/LICENSE" "$src/package.json" "$out/"
  (git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown) > "$out/COMMIT"
fi
# Its optional peer dependency, hono-problem-details, is left out as an
# install without it would be: importing it fails, and the package answers
# with its own problem+json.
echo 'throw new Error("hono-problem-details is not installed");' > "$out/not-installed.js"
echo "hono-idempotency $(node -p "require('./$out/package.json').version") at $(cat "$out/COMMIT")"
