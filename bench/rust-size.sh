#!/usr/bin/env bash
# What oncekey adds to a user's Rust Worker (issue 55): docs/rust.md's
# Worker (tests/consumer) against the same Worker without oncekey
# (bench/peers/bare-rs: the same workers-rs version, features and handler),
# each built as `wrangler dev` and `wrangler deploy` build it (worker-build
# --release, with the wasm-bindgen and wasm-opt the Makefile points it at),
# measured as the upload is: build/index.js and build/index_bg.wasm, gzip -9.
#
# Two profiles: the one a new crate has (cargo's release defaults), and a
# size profile a user can set in their Cargo.toml (opt-level "z", LTO, one
# codegen unit), given here through CARGO_PROFILE_RELEASE_* so neither
# crate's manifest changes. Writes a section to bench/RESULTS.md
# (BENCH_RESULTS elsewhere).
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
RESULTS=${BENCH_RESULTS:-bench/RESULTS.md}
OUT=build/bench/rust-size
mkdir -p "$OUT" target/rust-size

# `name dir profile`: builds dir with worker-build into $OUT/name-profile and
# prints its gzip size in bytes.
measure() {
  local name=$1 dir=$2 profile=$3
  local target=$PWD/target/rust-size/$name-$profile
  (
    cd "$dir"
    export CARGO_TARGET_DIR=$target
    if [ "$profile" = size ]; then
      export CARGO_PROFILE_RELEASE_OPT_LEVEL=z CARGO_PROFILE_RELEASE_LTO=true CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1
    fi
    worker-build --release >/dev/null 2>"$target.log" || {
      cat "$target.log" >&2
      exit 1
    }
  )
  rm -rf "${OUT:?}/$name-$profile"
  cp -r "$dir/build" "$OUT/$name-$profile"
  cat "$OUT/$name-$profile/index.js" "$OUT/$name-$profile/index_bg.wasm" | gzip -9 | wc -c
}

kb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1024 }'; }

rows=()
for profile in default size; do
  bare=$(measure bare bench/peers/bare-rs "$profile")
  with=$(measure oncekey tests/consumer "$profile")
  rows+=("| $profile | $(kb "$bare") KB | $(kb "$with") KB | **$(kb $((with - bare))) KB** |")
  echo "rust-size: $profile profile: bare $bare bytes, with oncekey $with bytes gzip (+$((with - bare)))"
done

{
  echo
  echo "## A Rust Worker's size with oncekey (make bench-rust-size)"
  echo
  echo "$(date -u +'%Y-%m-%d %H:%M UTC'), \`bash bench/rust-size.sh\` on $(nproc) cores"
  echo "($(uname -m)), workers-rs $(grep -A1 '^name = "worker"$' tests/consumer/Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p'),"
  echo "oncekey at $(git rev-parse --short HEAD). worker-build --release output (index.js +"
  echo "index_bg.wasm), gzip -9; KB of 1,024 bytes. \`default\`: cargo's release"
  echo "profile, as a new crate has it; \`size\`: opt-level \"z\", LTO, one codegen unit."
  echo
  echo "| profile | bare workers-rs Worker | docs/rust.md's Worker | oncekey adds |"
  echo "|---|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
} >>"$RESULTS"
echo "rust-size: written to $RESULTS"
