#!/usr/bin/env bash
# Installs what the build and tests need, from the package registries only
# (see ../shared/TOOLCHAIN.md). Each step is skipped when already done, so a
# second run costs a few checks.
#
#   scripts/install.sh rust       wasm32 target, rustfmt and clippy
#   scripts/install.sh tools      pinned cargo tools into $TOOLS (default .tools/)
#   scripts/install.sh node       npm packages from the lockfile
#   scripts/install.sh chromium   Debian chromium + chromium-driver
#   scripts/install.sh fuzz       cargo-fuzz into $TOOLS (only for `make fuzz`)
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${TOOLS:-$PWD/.tools}

WASM_BINDGEN_VERSION=0.2.130
WORKER_BUILD_VERSION=0.8.7
CARGO_FUZZ_VERSION=0.13.1

say() { echo "install: $*" >&2; }

rust() {
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
  # `make lint`: the formatter and the linter, when the profile left them out.
  local missing
  missing=$(for c in rustfmt clippy; do rustup component list --installed | grep -q "^$c" || echo "$c"; done)
  if [ -n "$missing" ]; then
    say "adding rustup components: $missing"
    # shellcheck disable=SC2086
    rustup component add $missing
  fi
}

# cargo_tool <crate> <version> <binary> [extra cargo install flags]
cargo_tool() {
  local crate=$1 version=$2 bin=$3; shift 3
  if [ -x "$TOOLS/bin/$bin" ] && grep -q "\"$crate $version " "$TOOLS/.crates.toml" 2>/dev/null; then
    return
  fi
  say "cargo install $crate $version into $TOOLS (several minutes, once)"
  cargo install "$crate" --version "=$version" --root "$TOOLS" --force "$@"
}

tools() {
  rust
  # Without --locked: the locked tree wants a patch this registry lacks.
  cargo_tool wasm-bindgen-cli "$WASM_BINDGEN_VERSION" wasm-bindgen
  cargo_tool worker-build "$WORKER_BUILD_VERSION" worker-build --locked
}

# Not part of `tools`: only `make fuzz` needs it (about 2 minutes, once).
fuzz() {
  cargo_tool cargo-fuzz "$CARGO_FUZZ_VERSION" cargo-fuzz --locked
}

node() {
  local stamp=node_modules/.oncekey-lock
  if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then
    return
  fi
  say "npm ci"
  npm ci --no-audit --no-fund
  cp package-lock.json "$stamp"
}

chromium() {
  if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    return
  fi
  say "apt-get install chromium chromium-driver"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver
}

[ $# -gt 0 ] || set -- rust tools node chromium
for step in "$@"; do "$step"; done
