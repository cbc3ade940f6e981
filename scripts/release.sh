#!/usr/bin/env bash
# The release steps (docs/releasing.md), each checking before it acts. The
# crate and the npm package share one version and are published together
# (docs/versioning.md).
#
#   scripts/release.sh check
#       every manifest and lockfile carries one version, CHANGELOG.md keeps
#       Keep a Changelog's format and agrees with it, the npm package's
#       `files` hold what it names, and a tag vVERSION has its section.
#   scripts/release.sh dry-run [--built]
#       check; build the npm package (`make pkg`; --built: the caller just
#       did, as `make test-release` does); `cargo publish --dry-run` of the
#       crate and `npm publish --dry-run` of pkg/, whose tarball must hold
#       exactly its `files`. Publishes, tags and pushes nothing.
#   scripts/release.sh prepare VERSION [DATE]
#       VERSION into every manifest and lockfile, and CHANGELOG.md's
#       Unreleased changes under `## [VERSION] - DATE` (DATE: today, UTC).
#       Commits nothing.
#   scripts/release.sh publish
#       on a clean tree whose CHANGELOG.md has the version's section and an
#       empty Unreleased: the dry run, then tag vVERSION, `cargo publish`,
#       `npm publish` from pkg/, and push the tag to $RELEASE_REMOTE
#       (default origin).
#   scripts/release.sh self-test
#       the checks catch each kind of break (scripts/release-check.mjs
#       --self-test).
#
# Needs cargo, node and npm; `dry-run` and `publish` also what `make pkg`
# needs (scripts/install.sh) and the registries; `publish` an npm login and
# a crates.io token (`cargo login`).
set -Eeuo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "release: FAIL: $*" >&2
  exit 1
}

usage() {
  sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p;}' "$0" >&2
  exit 2
}

# The library crate's version: the one every manifest must carry.
version() {
  cargo pkgid --offline -p oncekey | sed 's/.*[#@]//'
}

# npm publishes a pre-release (1.2.0-rc.1) only under a tag other than latest.
npm_tag_args() {
  case $1 in
  *-*) echo "--tag next" ;;
  *) echo "" ;;
  esac
}

check() {
  node scripts/release-check.mjs "$@"
  local v
  v=$(version)
  # A tagged version is a released one, and a release has its section.
  if git rev-parse -q --verify "refs/tags/v$v" >/dev/null && ! grep -qE "^## \[${v//./\\.}\] - " CHANGELOG.md; then
    fail "tag v$v exists, but CHANGELOG.md has no \"## [$v] - YYYY-MM-DD\" section"
  fi
}

# The dry runs. $1: 1 when pkg/ is already built; $2: --allow-dirty or "".
dry_run() {
  local built=$1 dirty=$2 v
  check
  v=$(version)
  if [ "$built" != 1 ]; then
    echo "== make pkg"
    make pkg
  fi
  node scripts/release-check.mjs --dist

  # The same target dir as scripts/test-crate.sh: after `make test-crate`
  # the packaged copy is already built and this takes seconds.
  echo "== cargo publish --dry-run -p oncekey ($v)"
  # shellcheck disable=SC2086 # $dirty is one flag or none
  CARGO_TARGET_DIR=$PWD/target/package-check cargo publish --dry-run --locked --quiet -p oncekey $dirty ||
    fail "cargo publish --dry-run refused the crate (output above)"

  echo "== npm publish --dry-run (pkg/, oncekey@$v)"
  mkdir -p build/release
  # shellcheck disable=SC2046 # the tag arguments are words or none
  if ! (cd pkg && npm publish --dry-run --json $(npm_tag_args "$v")) \
    >build/release/npm-publish.json 2>build/release/npm-publish.log; then
    cat build/release/npm-publish.log >&2
    fail "npm publish --dry-run failed (its log above)"
  fi
  node scripts/release-check.mjs --npm-json build/release/npm-publish.json --npm-log build/release/npm-publish.log
  echo "release: the dry runs of oncekey $v passed (npm's report: build/release/npm-publish.json)"
}

prepare() {
  local v=${1:-} date=${2:-}
  [ -n "$v" ] || usage
  date=${date:-$(date -u +%F)}
  node scripts/release-check.mjs --prepare "$v" --date "$date"
  # The lockfiles record the workspace's versions; cargo rewrites those
  # entries and nothing else (no dependency moves without `cargo update`).
  cargo metadata --offline --format-version 1 >/dev/null
  cargo metadata --offline --format-version 1 --manifest-path tests/consumer/Cargo.toml >/dev/null
  check
  git status --short
  cat <<EOF
release: oncekey $v prepared, dated $date. Next (docs/releasing.md):
  git diff                          # the versions and CHANGELOG.md's new section
  make test
  git add CHANGELOG.md Cargo.toml Cargo.lock workers/*/Cargo.toml pkg/*/Cargo.toml bench/peers/*/Cargo.toml \\
    pkg/package.json tests/consumer/Cargo.lock
  git commit -m "Release $v"
  scripts/release.sh publish
EOF
}

publish() {
  local v remote=${RELEASE_REMOTE:-origin} stage="the checks"
  v=$(version)
  trap 'echo "release: stopped at: $stage (docs/releasing.md, \"If a step fails\")" >&2' ERR
  [ -z "$(git status --porcelain)" ] || fail "the working tree has changes; a release publishes what is committed"
  check --release
  if git rev-parse -q --verify "refs/tags/v$v" >/dev/null; then fail "tag v$v exists already"; fi
  git remote get-url "$remote" >/dev/null || fail "no git remote $remote (set RELEASE_REMOTE)"
  npm whoami >/dev/null || fail "npm: not logged in (npm login)"

  stage="the dry runs"
  dry_run 0 ""

  stage="git tag v$v"
  git tag -a "v$v" -m "oncekey $v"
  stage="cargo publish -p oncekey (tag v$v is made, not pushed)"
  CARGO_TARGET_DIR=$PWD/target/package-check cargo publish --locked -p oncekey
  stage="npm publish (the crate is published; tag v$v not pushed)"
  # shellcheck disable=SC2046 # the tag arguments are words or none
  (cd pkg && npm publish $(npm_tag_args "$v"))
  stage="git push $remote v$v (both packages are published)"
  git push "$remote" "v$v"
  trap - ERR
  echo "release: oncekey $v published to crates.io and npm, tag v$v pushed to $remote"
}

case ${1:-} in
check) check ;;
dry-run)
  case ${2:-} in
  --built) dry_run 1 --allow-dirty ;;
  "") dry_run 0 --allow-dirty ;;
  *) usage ;;
  esac
  ;;
prepare) prepare "${2:-}" "${3:-}" ;;
publish) publish ;;
self-test) node scripts/release-check.mjs --self-test ;;
*) usage ;;
esac
