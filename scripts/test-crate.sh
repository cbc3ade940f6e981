#!/usr/bin/env bash
# The library as others use it (SPEC §10). The root package `oncekey` is a
# library for other people's workers; the crates that deploy live beside it
# (workers/proxy, workers/demo, pkg/wasm). This checks, failing on any miss:
#
#   1. the crate publishes: `cargo publish --dry-run` packages it and builds
#      the packaged copy, and the package holds only the library's sources;
#   2. its dependencies leave the choices to the crate that depends on it:
#      no exact (`=`) requirements, not `publish = false`, no `cdylib`, no
#      IDNA adapter or allocator, no `#[global_allocator]`;
#   3. a crate outside it (tests/consumer, its own workspace, resolved as a
#      user's crate is) wraps its own handler with feature `edge`, builds
#      for wasm32, and its module exports both its `fetch` and the library's
#      `IdempotencyCoordinator` class;
#   4. that crate, built by worker-build with docs/rust.md's wrangler.toml,
#      runs in workerd: one run per key under 8 concurrent callers, and a
#      handler's panic answered at once (tests/crate/rust-worker.test.mjs);
#      so does an axum Worker with the tower layer (tests/consumer-axum).
#
# Needs the wasm32 target and the wasm-bindgen CLI in $TOOLS
# (scripts/install.sh rust tools; `make test-crate` runs it first), Node,
# and the crates registry. Each step prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS:-$PWD/.tools}

fail() {
  echo "test-crate: FAIL: $*" >&2
  exit 1
}

# Wall time of each step, printed as it ends and again in the summary.
TIMINGS=()
step_started=0
begin_step() {
  echo "== $*"
  step_name=$*
  step_started=$(date +%s%N)
}
end_step() {
  local ms=$((($(date +%s%N) - step_started) / 1000000))
  local took
  took=$(printf '%d.%01d s' $((ms / 1000)) $((ms % 1000 / 100)))
  echo "   ok ($took)"
  TIMINGS+=("$(printf '%-48s %s' "$step_name" "$took")")
}

# ---- 1. The crate publishes --------------------------------------------------

# Own target dir: the dry run builds the packaged copy (unpacked under
# <target>/package/) as a second `oncekey` beside the workspace's; apart, it
# stays cached between runs and leaves target/ and its lock to other builds.
begin_step "cargo publish --dry-run -p oncekey"
CARGO_TARGET_DIR=$PWD/target/package-check \
  cargo publish --dry-run --quiet -p oncekey --allow-dirty ||
  fail "cargo publish --dry-run refused the oncekey crate (output above)"
end_step

# The dry run leaves no .crate behind; `cargo package --no-verify` writes the
# same archive (the build was verified just above).
begin_step "the packaged crate"
version=$(cargo pkgid -p oncekey | sed 's/.*[#@]//')
CARGO_TARGET_DIR=$PWD/target/package-check \
  cargo package --quiet --no-verify -p oncekey --allow-dirty || fail "cargo package failed (output above)"
crate=target/package-check/package/oncekey-$version.crate
[ -f "$crate" ] || fail "cargo package wrote no $crate"
files=$(tar tzf "$crate" | sed "s|^oncekey-$version/||" | grep -v '/$')
echo "   $crate: $(wc -c <"$crate") bytes compressed, $(echo "$files" | wc -l) files," \
  "$(tar xzOf "$crate" | wc -c) bytes unpacked"
# Only the library's sources (the Rust, and the HTMLRewriter glue the edge
# host binds: src/shared/form_keys.js, and its Web Crypto glue: src/shared/seal.js), its README and license texts, and what
# cargo adds itself. `include` patterns
# without a slash match at any depth (gitignore rules): "README.md" alone
# also takes node_modules/*/README.md and pkg/README.md; anchor them ("/README.md").
stray=$(echo "$files" |
  grep -Ev '^(src/.+\.rs|src/shared/(form_keys|seal)\.js|README\.md|LICENSE-(MIT|APACHE)|Cargo\.toml|Cargo\.toml\.orig|Cargo\.lock|\.cargo_vcs_info\.json)$' || true)
if [ -n "$stray" ]; then
  echo "$stray" | sed -n '1,20s/^/   stray: /p' >&2
  fail "the packaged crate holds $(echo "$stray" | wc -l) files besides the library's sources" \
    "(anchor the [package] include patterns in Cargo.toml: \"/README.md\", not \"README.md\")"
fi
# Every JavaScript module the edge host binds (`#[wasm_bindgen(module = ...)]`)
# ships with the crate: without it a crate user's build fails.
for module in $(grep -ho 'module = "/src/[^"]*"' src/edge/*.rs | sed 's/module = "\/\(.*\)"/\1/' | sort -u); do
  echo "$files" | grep -qx "$module" || fail "the packaged crate lacks $module, which src/edge binds (add it to include in Cargo.toml)"
done
for license in LICENSE-MIT LICENSE-APACHE; do
  echo "$files" | grep -qx "$license" || fail "the packaged crate lacks $license (the license is MIT OR Apache-2.0)"
done
end_step

# ---- 2. No pins or global choices in the library's dependencies -------------

# Exact requirements a consumer would inherit, allowed on purpose, each with
# its reason. Empty: the crates that deploy pin wasm-bindgen to the CLI they
# run (workers/*/Cargo.toml, pkg/wasm/Cargo.toml); the library takes a range.
ALLOWED_EXACT='{}'

begin_step "the library's dependency requirements"
cargo metadata --format-version 1 --no-deps >target/package-check/metadata.json ||
  fail "cargo metadata failed (output above)"
if ! ALLOWED_EXACT=$ALLOWED_EXACT node - target/package-check/metadata.json <<'EOF'
const meta = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const allowed = JSON.parse(process.env.ALLOWED_EXACT);
const pkg = meta.packages.find((p) => p.name === "oncekey");
if (!pkg) throw new Error("no package oncekey in cargo metadata");
const problems = [];
// Normal and build dependencies reach every crate that depends on this one
// (dev-dependencies do not): an exact requirement there forces that crate's
// whole tree onto one version.
const inherited = pkg.dependencies.filter((d) => d.kind === null || d.kind === "build");
for (const d of inherited) {
  if (d.req.startsWith("=") && !(d.name in allowed)) {
    problems.push(`${d.name} "${d.req}": an exact requirement (use a range; pin in the deployable crates)`);
  }
  // The IDNA adapter and the allocator are choices for one binary's size:
  // the deployable crates make them, a library must not.
  if (d.name === "idna_adapter" || d.name === "lol_alloc") {
    problems.push(`${d.name}: a global choice for the final binary, not the library's`);
  }
}
// `publish = false` reads as `publish: []` in cargo metadata.
if (Array.isArray(pkg.publish) && pkg.publish.length === 0) problems.push("publish = false");
for (const t of pkg.targets) {
  if (t.crate_types.includes("cdylib")) {
    problems.push(`target ${t.name} has crate-type cdylib (the library is an rlib; cdylibs live in workers/, pkg/wasm)`);
  }
}
if (problems.length) {
  for (const p of problems) console.error(`   oncekey: ${p}`);
  process.exit(1);
}
console.log(`   ${inherited.length} normal/build dependencies, none exact: ` +
  inherited.map((d) => `${d.name} ${d.req}`).join(", "));
EOF
then
  fail "the library's manifest makes choices that belong to the crates depending on it (above)"
fi
if grep -rn 'global_allocator' src/; then
  fail "the library sets a global allocator (above); only a final binary may (pkg/wasm does)"
fi
end_step

# ---- 3. A crate outside the library depends on it ---------------------------

# tests/consumer has its own [workspace] and Cargo.lock (derived from the
# root's, so versions match it and the run is repeatable): it resolves
# features and profiles as a user's crate does, not as a member of ours.
CONSUMER=tests/consumer
export CARGO_TARGET_DIR=$PWD/target/consumer
WASM=$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/oncekey_consumer_check.wasm

begin_step "$CONSUMER: Cargo.lock is current"
# A user pins nothing to use the library; neither may this crate (a pin
# here could hide a library that only builds with one version).
if grep -n '"=' "$CONSUMER/Cargo.toml"; then
  fail "$CONSUMER/Cargo.toml pins a version (above); it must build with plain requirements"
fi
if ! cargo metadata --locked --format-version 1 --manifest-path "$CONSUMER/Cargo.toml" >/dev/null; then
  fail "$CONSUMER/Cargo.lock is stale (the library's dependencies changed?). Refresh it from the" \
    "root's: cp Cargo.lock $CONSUMER/ && cargo metadata --manifest-path $CONSUMER/Cargo.toml >/dev/null"
fi
end_step

begin_step "$CONSUMER: cargo build --release (wasm32)"
rm -f "$WASM"
cargo build --locked --quiet --release --target wasm32-unknown-unknown --manifest-path "$CONSUMER/Cargo.toml" ||
  fail "a crate depending on oncekey with feature edge does not build (output above)"
[ -s "$WASM" ] || fail "the build wrote no $WASM"
echo "   $WASM: $(wc -c <"$WASM") bytes"
end_step

# The raw module's exports, as rustc wrote them. wasm-bindgen 0.2.130 suffixes
# each export with a hash of its crate (`fetch_b9c0520c5f637cdf`); the CLI
# below strips it. The class's methods come out of the *library's* crate, so
# their presence shows its #[wasm_bindgen] items reach a dependent's module.
begin_step "$CONSUMER: the module's exports"
if ! node - "$WASM" <<'EOF'
const bytes = require("fs").readFileSync(process.argv[2]);
const names = WebAssembly.Module.exports(new WebAssembly.Module(bytes)).map((e) => e.name);
const wanted = {
  "the user's fetch handler": /^fetch(_[0-9a-f]{16})?$/,
  "IdempotencyCoordinator constructor": /^idempotencycoordinator_new(_[0-9a-f]{16})?$/,
  "IdempotencyCoordinator.fetch": /^idempotencycoordinator_fetch(_[0-9a-f]{16})?$/,
  "IdempotencyCoordinator.alarm": /^idempotencycoordinator_alarm(_[0-9a-f]{16})?$/,
  "IdempotencyCoordinator free": /^__wbg_idempotencycoordinator_free(_[0-9a-f]{16})?$/,
};
let missing = 0;
for (const [what, re] of Object.entries(wanted)) {
  const found = names.filter((n) => re.test(n));
  if (found.length === 1) console.log(`   ${found[0]}  (${what})`);
  else {
    console.error(`   ${what}: ${found.length} exports match ${re}`);
    missing++;
  }
}
if (missing) process.exit(1);
EOF
then
  fail "the consumer's wasm lacks the exports named above"
fi
end_step

# What the runtime sees: the JS glue the wasm-bindgen CLI makes of the module
# (worker-build runs the same CLI). The Durable Object binding names the
# class `IdempotencyCoordinator`; the module entry must be `fetch`.
begin_step "$CONSUMER: the JS glue (wasm-bindgen CLI)"
[ -x "$TOOLS/bin/wasm-bindgen" ] ||
  fail "no $TOOLS/bin/wasm-bindgen: run scripts/install.sh tools (make test-crate does)"
rm -rf "$CARGO_TARGET_DIR/bindgen"
"$TOOLS/bin/wasm-bindgen" --target web --out-dir "$CARGO_TARGET_DIR/bindgen" "$WASM" ||
  fail "the wasm-bindgen CLI refused the consumer's module"
glue=$CARGO_TARGET_DIR/bindgen/oncekey_consumer_check.js
# The class with its constructor and the two methods the runtime calls, and
# the module's fetch handler (the CLI has stripped the hash suffixes).
for line in 'export class IdempotencyCoordinator {' 'wasm.idempotencycoordinator_new(' \
  'wasm.idempotencycoordinator_fetch(' 'wasm.idempotencycoordinator_alarm(' 'export function fetch('; do
  grep -qF "$line" "$glue" || fail "$glue has no \`$line\`"
  echo "   $line"
done
end_step

# Lints as a user would run them on their own crate: the library's public
# API must not push warnings into it.
begin_step "$CONSUMER: cargo clippy (wasm32)"
cargo clippy --locked --quiet --release --target wasm32-unknown-unknown \
  --manifest-path "$CONSUMER/Cargo.toml" -- -D warnings ||
  fail "clippy warns on the consumer crate (output above)"
end_step

# An axum Worker: workers-rs's `http` and `axum` features on, which change
# what `worker`'s own calls return; Cargo unifies them into oncekey's build.
begin_step "tests/consumer-axum: cargo build --release (wasm32, worker features http + axum)"
cargo build --locked --quiet --release --target wasm32-unknown-unknown --manifest-path tests/consumer-axum/Cargo.toml ||
  fail "oncekey does not build beside workers-rs's http and axum features (output above)"
cargo clippy --locked --quiet --release --target wasm32-unknown-unknown \
  --manifest-path tests/consumer-axum/Cargo.toml -- -D warnings ||
  fail "clippy warns on the axum consumer crate (output above)"
end_step

# What `wrangler dev` builds and runs: worker-build (offline, with the tools
# the Makefile points it at) writes tests/consumer/build/, which workerd
# runs with its bindings (tests/crate/rust-worker.test.mjs).
begin_step "$CONSUMER: worker-build, then run in workerd"
(cd "$CONSUMER" && worker-build --release >/dev/null) || fail "worker-build refused $CONSUMER (run it there to see why)"
node --test --test-reporter=dot tests/crate/rust-worker.test.mjs ||
  fail "the Rust Worker built from docs/rust.md misbehaved in workerd (output above)"
end_step

# The axum Worker, oncekey as a tower layer on its Router (feature `tower`),
# built the same way and run in workerd (tests/crate/axum-worker.test.mjs).
begin_step "tests/consumer-axum: worker-build, then run in workerd"
(cd tests/consumer-axum && worker-build --release >/dev/null) ||
  fail "worker-build refused tests/consumer-axum (run it there to see why)"
node --test --test-reporter=dot tests/crate/axum-worker.test.mjs ||
  fail "the axum Worker with IdempotencyLayer misbehaved in workerd (output above)"
end_step

echo "test-crate: all checks passed"
printf '   %s\n' "${TIMINGS[@]}"
