# oncekey — `make dev` serves the demo on 127.0.0.1:8787, `make test` runs
# every test. Both install what they need first (scripts/install.sh).
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

TOOLS ?= $(CURDIR)/.tools
PORT ?= 8787
export TOOLS
export PATH := $(TOOLS)/bin:$(CURDIR)/node_modules/.bin:$(PATH)
# worker-build must not download anything: point it at local tools.
export WASM_BINDGEN_BIN := $(TOOLS)/bin/wasm-bindgen
export WASM_OPT_BIN := $(CURDIR)/node_modules/.bin/wasm-opt
export ESBUILD_BIN := $(CURDIR)/node_modules/.bin/esbuild
export WRANGLER_SEND_METRICS := false
export WRANGLER_SEND_ERROR_REPORTS := false
export CLOUDFLARE_CF_FETCH_ENABLED := false
export CARGO_TERM_COLOR := never

.PHONY: help install test test-core test-core-wasm

help:
	@echo "make dev    serve the demo (worker, demo origin, page) on 127.0.0.1:$(PORT)"
	@echo "make test   run every test (installs what it needs first)"
	@echo "make bench  run the benchmarks, results in bench/RESULTS.md"

install:
	scripts/install.sh rust tools node

## Habits: one format and no lint warnings, Rust (rustfmt.toml; clippy on
## every crate, native and wasm32) and JavaScript/TypeScript (biome.json:
## Biome formats and lints in one dependency-free binary).
.PHONY: lint
lint: install
	cargo fmt --all --check
	cargo clippy --locked --workspace --all-targets --quiet -- -D warnings
	cargo clippy --locked --all-targets --quiet --features model -- -D warnings
	cargo clippy --locked --quiet --target wasm32-unknown-unknown --lib --features edge,js-queue,browser,tracing,tower -- -D warnings
	cargo clippy --locked --quiet --target wasm32-unknown-unknown --lib --features js -- -D warnings
	cargo clippy --locked --quiet --target wasm32-unknown-unknown \
	  -p oncekey-proxy -p oncekey-demo -p oncekey-browser-wasm -p oncekey-worker-wasm -p do-only-rs -- -D warnings
	node_modules/.bin/biome check .

test: lint

## The core: native unit, property and doc tests, then the same unit tests
## compiled to wasm32 under Node.
test-core:
	cargo test
	@# The Worker API's examples compile (no_run: they need the runtime).
	cargo test --locked --quiet --doc --features edge,tower
	@# The core alone must never pull in the adapters' runtime crates.
	@if cargo tree -e normal --prefix none | grep -E '^(worker|wasm-bindgen|js-sys|web-sys) '; then \
	  echo "the core's native dependency tree holds an adapter crate" >&2; exit 1; fi

test-core-wasm: install
	scripts/test-core-wasm.sh

## The one-world model checker (src/core/world/): every interleaving of the
## small worlds, each property checked in every state; prints the states
## explored and the properties held. `make model MUTANT=<name>` runs it on a
## deliberately broken core and must print a counterexample and exit 1.
.PHONY: model test-model
MUTANTS := finish-ignores-attempt waiter-decides-on-stale-record release-wakes-every-waiter \
  tombstone-forgets-attempt reclaim-before-lease-end abandon-ignores-reservation
model: install
	MUTANT=$(MUTANT) cargo test --locked --release --quiet --features model --test model

## In `make test`: the core as written holds every property, and each mutant
## is caught with a counterexample.
test-model:
	@$(MAKE) --no-print-directory model
	@mkdir -p build
	@for m in $(MUTANTS); do \
	  if MUTANT=$$m cargo test --locked --release --quiet --features model --test model > build/model-$$m.log 2>&1; then \
	    cat build/model-$$m.log; echo "test-model: the mutant $$m was not caught" >&2; exit 1; fi; \
	  grep -q '^  COUNTEREXAMPLE' build/model-$$m.log || { cat build/model-$$m.log; echo "test-model: $$m failed without a counterexample" >&2; exit 1; }; \
	  echo "test-model: $$m caught: $$(grep -m1 '^  COUNTEREXAMPLE' build/model-$$m.log | sed 's/.*": //')"; \
	done

test: test-model

## cargo-fuzz on the core's parsers (key, record, Retry-After, config, multipart):
## FUZZ_SECONDS per target (default 60), figures in bench/RESULTS.md. Not in
## `make test`: the property tests cover the same parsers there.
.PHONY: fuzz
fuzz:
	scripts/install.sh fuzz
	scripts/fuzz.sh

## ---- The edge workers ------------------------------------------------------
## Two deployables beside the library (SPEC §10): the production proxy
## (workers/proxy, deployed by the root wrangler.toml, built into
## build/proxy/) and the demo (workers/demo, workers/demo/wrangler.toml, built
## into build/demo/). Each is rebuilt only when a Rust source or manifest
## changed. The root config's [build] runs `make build-proxy`, so
## `npx wrangler deploy` and `npx wrangler dev` build what they need.
## dev: build the demo, then wrangler from its config (no [build]), so it
## starts in seconds.
# src/lib.rs, and src/shared/: what both hosts share (the form-key glue,
# message bodies, variable values).
SHARED_SOURCES := $(wildcard src/*.rs src/shared/*.rs src/shared/*.js)
LIB_SOURCES := $(shell find src/core src/edge -name '*.rs' 2>/dev/null) $(SHARED_SOURCES) Cargo.toml Cargo.lock
PROXY_SOURCES := $(LIB_SOURCES) $(wildcard workers/proxy/src/*.rs) workers/proxy/Cargo.toml
DEMO_SOURCES := $(LIB_SOURCES) $(wildcard workers/demo/src/*.rs) workers/demo/Cargo.toml

.PHONY: build-worker build-proxy build-demo dev proxy-dev deploy-dry-run test-edge bench bench-edge bench-peers bench-core

build-proxy: install build/proxy/index.js
build-demo: install build/demo/index.js
build-worker: build-proxy build-demo

# worker-build takes the crate's path; --out-dir is relative to it.
build/proxy/index.js: $(PROXY_SOURCES)
	worker-build --release workers/proxy --out-dir ../../build/proxy
	@touch $@

build/demo/index.js: $(DEMO_SOURCES)
	worker-build --release workers/demo --out-dir ../../build/demo
	@touch $@

dev: install build-demo
	wrangler dev --config workers/demo/wrangler.toml --ip 127.0.0.1 --port $(PORT) \
	  --persist-to $(CURDIR)/.wrangler/state --show-interactive-dev-session=false

## The production proxy under wrangler dev in front of your own API:
## `make proxy-dev ORIGIN_URL=http://127.0.0.1:3000` is
## `npx wrangler dev --var ORIGIN_URL:…` at the root, on PORT.
proxy-dev: install build-worker-js
	@[ -n "$${ORIGIN_URL:-}" ] || { echo "proxy-dev: set ORIGIN_URL, e.g. make proxy-dev ORIGIN_URL=http://127.0.0.1:3000" >&2; exit 1; }
	wrangler dev --var ORIGIN_URL:$(ORIGIN_URL) --ip 127.0.0.1 --port $(PORT) --show-interactive-dev-session=false

## The root config checked with the core's own rules before it ships
## (`oncekey check`, the npm package's command): exits non-zero naming each
## problem, where a dry run lets an empty ORIGIN_URL through. CONFIG picks
## another config.
CONFIG ?= wrangler.toml
.PHONY: check-config
check-config: install build-worker-js
	node pkg/dist/cli.js check $(CONFIG)

## The bundle wrangler would upload for the root config (the production
## proxy), and its gzip size.
deploy-dry-run: install build-worker-js
	rm -rf build/deploy
	wrangler deploy --dry-run --outdir build/deploy
	@echo "bundle: $$(cat build/deploy/*.wasm build/deploy/*.js | gzip -9 | wc -c) bytes gzip (wasm + js)"

## The edge tests run the built worker in workerd (Miniflare) with real
## local KV and Durable Object bindings (the host-switch test runs both
## proxies). A test or hook stuck for 3 minutes fails instead of hanging
## (say, workerd died under it).
test-edge: install build-worker build-proxy-js
	@mkdir -p build
	node --test --test-concurrency=1 --test-timeout=180000 --test-reporter=tap tests/edge/ | tee build/test-edge.tap | sed '/^# {/d'
	@# A run in which no test ran is a failure, not a pass.
	@pass=$$(sed -n 's/^# pass //p' build/test-edge.tap); [ "$${pass:-0}" -gt 0 ] || { echo "test-edge: no test ran" >&2; exit 1; }

## The peers of the edge benchmark (bench/peers/*.ts), bundled by esbuild
## for workerd.
PEER_SOURCES := $(wildcard bench/peers/*.ts)

build/bench/%.js: bench/peers/%.ts $(PEER_SOURCES) package-lock.json
	esbuild $< --bundle --format=esm --platform=neutral --target=es2022 --main-fields=module,main \
	  --conditions=workerd,worker,import --external:cloudflare:workers --external:'node:*' --external:'*.wasm' \
	  --log-level=warning --outfile=$@

# hono-idempotency on a Durable Object (bench/peers/hono-do.ts), the peer
# issue 35 names: its source comes from a local checkout
# (bench/peers/hono-idempotency.sh); with none, no bundle, and the bench
# runs without it.
build/bench/hono-do.js: bench/peers/hono-do.ts bench/peers/proxy.ts bench/peers/hono-idempotency.sh package-lock.json
	bash bench/peers/hono-idempotency.sh
	if [ -d build/bench/hono-idempotency/src ]; then \
	  esbuild $< --bundle --format=esm --platform=neutral --target=es2022 --main-fields=module,main \
	    --conditions=workerd,worker,import --external:cloudflare:workers --alias:hono-problem-details=./build/bench/hono-idempotency/not-installed.js \
	    --alias:hono-idempotency=./build/bench/hono-idempotency/src --log-level=warning --outfile=$@; \
	else rm -f $@; fi

# The cold-start control holds oncekey/proxy's wasm beside its bundle.
build/bench/do-only-wasm.js: pkg/dist/proxy.js
build/bench/oncekey_proxy_bg.wasm: pkg/dist/proxy.js
	mkdir -p build/bench && cp pkg/dist/oncekey_proxy_bg.wasm $@

# do-only in Rust (bench/peers/do-only-rs): the Rust host's like-for-like
# control, built as the proxy is.
DO_ONLY_RS_SOURCES := $(wildcard bench/peers/do-only-rs/src/*.rs) bench/peers/do-only-rs/Cargo.toml Cargo.lock
build/bench/do-only-rs/index.js: $(DO_ONLY_RS_SOURCES)
	worker-build --release bench/peers/do-only-rs --out-dir ../../../build/bench/do-only-rs
	@touch $@

bench-peers: install build/bench/plain.js build/bench/do-only.js build/bench/floor.js build/bench/powertools.js build/bench/origin-worker.js build/bench/hono-do.js \
  build/bench/do-only-wasm.js build/bench/oncekey_proxy_bg.wasm build/bench/do-only-deadlines.js build/bench/do-only-rs/index.js

## bench-edge: both oncekey hosts (build/proxy, build/proxy-js) against the
## peers in one workerd, then cold start per worker (bench/edge.mjs), then
## what V8 compiles of each host's wasm for a first request (bench/wasm-compile.mjs),
## and where workerd's CPU goes by kind of work, native frames included
## (bench/native-profile.mjs: Linux perf; skipped without it); both hosts
## beside hono-do in short paired series, with A/A twins (bench/paired.mjs).
bench-edge: install build-worker build-proxy-js bench-peers
	node bench/edge.mjs
	BENCH_QUIET=1 node bench/edge.mjs
	BENCH_QUIET=rust node bench/edge.mjs
	BENCH_QUIET=peer node bench/edge.mjs
	BENCH_QUIET=peer-js node bench/edge.mjs
	node bench/paired.mjs
	node bench/wasm-compile.mjs
	node bench/native-profile.mjs

## Native microbenchmarks of the core (criterion, benches/core.rs), written
## into bench/RESULTS.md by bench/core.mjs.
bench-core: install
	cargo bench --bench core
	node bench/core.mjs

bench: bench-core

## Load and faults on loopback (bench/load.mjs): 10,000 keys × 5 clients,
## then the same with origin faults, a flaky store and runtime restarts;
## figures in bench/RESULTS.md. Takes several minutes; not in `make test`.
.PHONY: load
load: install build-worker
	node bench/load.mjs

bench: bench-edge

## Workerd CPU per queue message: the loyalty consumer on each host beside
## a consumer with no dedup doing the same work (bench/queue.mjs).
.PHONY: bench-queue
bench-queue: install build-worker build-demo-js
	node bench/queue.mjs

bench: bench-queue

## Workerd CPU and latency per HTML answer with IDEMPOTENCY_FORMS=inject
## against off, both hosts (bench/forms.mjs).
.PHONY: bench-forms
bench-forms: install build-worker build-proxy-js
	node bench/forms.mjs

bench: bench-forms

.PHONY: bench-sealing
bench-sealing: install build-worker build-proxy-js
	node bench/sealing.mjs

bench: bench-sealing

## What each request class costs (issue 53): every billable operation —
## Worker and object requests, rows written and read, alarms, KV
## operations, log bytes, data points — counted in workerd for both hosts
## and hono-do with its expiry alarm, priced per million (bench/cost.mjs).
## Waits out a 60 s TTL for the alarms: about two minutes.
.PHONY: bench-cost
bench-cost: install build-proxy build-proxy-js build/bench/hono-do.js
	node bench/cost.mjs

bench: bench-cost

## What oncekey adds to a user's Rust Worker (issue 55): docs/rust.md's
## Worker (tests/consumer) against the same Worker without oncekey
## (bench/peers/bare-rs), each built by worker-build, gzip, under cargo's
## default release profile and a size profile (bench/rust-size.sh).
.PHONY: bench-rust-size
bench-rust-size: install
	bash bench/rust-size.sh

bench: bench-rust-size

## Where each host's CPU goes (issue 35): the isolate's profile through
## workerd's inspector, first executions and replays, both hosts, each
## build keeping its function names; the tables go to bench/RESULTS.md.
.PHONY: bench-profile
bench-profile: install build-worker-js build/bench/origin-worker.js build/profile-rs/index.js
	PROFILE_BUILD=build/profile-js PROFILE_RESULTS=javascript node bench/profile.mjs first
	PROFILE_BUILD=build/profile-js PROFILE_RESULTS=javascript node bench/profile.mjs replay
	PROFILE_BUILD=build/profile-rs PROFILE_RESULTS=rust node bench/profile.mjs first
	PROFILE_BUILD=build/profile-rs PROFILE_RESULTS=rust node bench/profile.mjs replay

bench: bench-profile

# The Rust proxy with its wasm's function names (its own target dir, so the
# shipped build's stays as it is).
build/profile-rs/index.js: $(PROXY_SOURCES)
	CARGO_TARGET_DIR=$(CURDIR)/target/profile-rs CARGO_PROFILE_RELEASE_STRIP=false \
	  worker-build --release --no-opt workers/proxy --out-dir ../../build/profile-rs
	@touch $@

## Where sealing's cipher runs (docs/performance.md): the aes-gcm crate in
## wasm against Web Crypto. A decision's measurement, not part of make bench.
.PHONY: bench-cipher-choice
bench-cipher-choice: install
	cd bench/cipher-choice && cargo build --release --target wasm32-unknown-unknown --quiet && \
	  cp target/wasm32-unknown-unknown/release/cipher_choice.wasm target/without.wasm && \
	  cargo build --release --target wasm32-unknown-unknown --quiet --features seal
	node bench/cipher-choice/bench.mjs bench/cipher-choice/target/wasm32-unknown-unknown/release/cipher_choice.wasm bench/cipher-choice/target/without.wasm

## The library as others use it (SPEC §10): `cargo publish --dry-run`, no
## exact pins or global choices in its dependencies, and a crate outside it
## (tests/consumer) that depends on it with feature `edge`, built for wasm32.
.PHONY: test-crate
test-crate: install
	scripts/test-crate.sh

## What a user deploys (tests/deploy): the root config's dry run (only the
## proxy, its bindings, no demo code, its size), the README's origin snippets
## and deploy commands, `wrangler dev` of the root config in front of a local
## API, and `make dev`.
.PHONY: test-deploy
test-deploy: install build-worker build-worker-js www-vendor
	scripts/test-node-counted.sh tests/deploy/deploy.test.js

## The GitHub Actions workflows pass actionlint (tests/workflows).
.PHONY: test-workflows
test-workflows: install
	scripts/test-node-counted.sh tests/workflows/lint.test.js

test: test-workflows

## Every relative link and anchor in the Markdown pages resolves, and every
## code block of the README is on the docs/ page it leads to (tests/docs).
.PHONY: test-docs
test-docs:
	scripts/test-node-counted.sh tests/docs/links.test.js tests/docs/snippets.test.js

test: test-docs

## A release's dry runs and checks (docs/releasing.md): every manifest and
## lockfile carries one version, CHANGELOG.md keeps Keep a Changelog's format,
## the npm package's `files` hold what it names; `cargo publish --dry-run`
## (in test-crate's target dir: cached after it) and `npm publish --dry-run`
## of the built pkg/; then the checks catch each kind of break (self-test).
.PHONY: test-release
test-release: pkg
	scripts/release.sh dry-run --built
	scripts/release.sh self-test

test: test-release

## docs/openapi/oncekey.yaml (and example.yaml) is valid OpenAPI 3.1, and
## says what the core does: every problem it answers fits its schema, status
## and headers there, and the key's schema takes what the key parser takes
## (tests/docs/openapi.test.js).
.PHONY: test-openapi
test-openapi: install
	scripts/test-node-counted.sh tests/docs/openapi.test.js

test: test-openapi

test: install test-core test-core-wasm test-crate test-edge test-deploy

## ---- The browser package and the demo page --------------------------------
## build-browser: the npm package into pkg/dist/ (scripts/build-browser.sh),
## rebuilt only when its sources change. www-vendor: the package's browser
## build copied to www/vendor/oncekey/, where the demo page imports it from;
## `dev` depends on it so the worker serves a current copy.
BROWSER_SOURCES := $(shell find src/core src/browser -name '*.rs' 2>/dev/null) \
  pkg/src/api.js pkg/src/errors.js pkg/src/load.js pkg/src/browser.js pkg/src/node.js pkg/src/oncekey.d.ts pkg/package.json pkg/wasm/Cargo.toml pkg/wasm/src/lib.rs Cargo.toml Cargo.lock scripts/build-browser.sh scripts/wasm-glue.sh

.PHONY: build-browser www-vendor install-browser test-browser test-browser-wasm \
  test-browser-api test-browser-form test-browser-types test-browser-pack test-browser-e2e bench-browser

build-browser: install pkg/dist/oncekey.js

pkg/dist/oncekey.js: $(BROWSER_SOURCES)
	scripts/build-browser.sh

www-vendor: build-browser www/vendor/oncekey/oncekey.js

www/vendor/oncekey/oncekey.js: pkg/dist/oncekey.js
	rm -rf www/vendor/oncekey
	mkdir -p www/vendor/oncekey
	cp pkg/dist/oncekey.js pkg/dist/oncekey_bg.wasm www/vendor/oncekey/

dev: www-vendor

install-browser: install
	scripts/install.sh chromium

## Rust bindings under Node and in headless Chromium, the API under Node and
## protectForm in headless Chromium against local HTTP servers (each run
## fails unless every test in it ran), the types, the packed tarball in the
## fixture projects of tests/browser/fixtures/ (Next.js with Turbopack and
## webpack, Vite 5 and 8, webpack, Rollup, esbuild, Node import and require;
## their npm installs kept in ~/.cache/oncekey/fixtures) and those apps in
## Chromium, and the demo page in Chromium against the worker.
test-browser-wasm: install-browser
	scripts/test-browser-wasm.sh

test-browser-api: build-browser
	scripts/test-node-counted.sh tests/browser/api.test.js

test-browser-form: install-browser build-browser
	scripts/test-node-counted.sh tests/browser/form.test.js

test-browser-types: build-browser
	tsc -p tests/browser/types/tsconfig.json
	@echo "tsc --noEmit: tests/browser/types/usage.ts uses the whole API, types check"
	tsc -p tests/browser/types-node/tsconfig.json
	@echo "tsc --noEmit: tests/browser/types-node/usage.ts, a Node project without the DOM lib, types check"

test-browser-pack: install-browser build-browser
	scripts/test-browser-pack.sh
	scripts/test-node-counted.sh tests/browser/fixtures.test.js

test-browser-e2e: install-browser www-vendor build-demo build-demo-js build-proxy build-proxy-js
	scripts/test-node-counted.sh tests/browser-e2e/

test-browser: test-browser-wasm test-browser-api test-browser-form test-browser-types test-browser-pack test-browser-e2e

test: test-browser

bench-browser: install-browser build-browser
	node bench/browser.mjs

bench: bench-browser

## ---- The JavaScript edge API (`oncekey/worker`, SPEC §11) ------------------
## build-worker-js: the worker entry into pkg/dist/ (scripts/build-worker-js.sh),
## after the browser entry (whose build empties pkg/dist/). test-worker-js: a
## user's TypeScript worker (tests/worker-js/app) with the packed package
## installed, bundled by `wrangler deploy --dry-run`, run in workerd; and tsc.
WORKER_JS_SOURCES := $(shell find src/core src/js -name '*.rs' 2>/dev/null) \
  $(wildcard pkg/src/worker.js pkg/src/worker.d.ts pkg/src/worker/*.js pkg/src/hono.js pkg/src/hono.d.ts pkg/src/cli.js) \
  pkg/src/proxy.js pkg/src/proxy.d.ts $(SHARED_SOURCES) \
  pkg/package.json pkg/worker-wasm/Cargo.toml pkg/worker-wasm/src/lib.rs Cargo.toml Cargo.lock scripts/build-worker-js.sh scripts/wasm-glue.sh

.PHONY: build-worker-js test-worker-js

build-worker-js: install build-browser pkg/dist/worker.js

pkg/dist/worker.js: $(WORKER_JS_SOURCES)
	scripts/build-worker-js.sh

# Built beside worker.js, by the same script.
pkg/dist/proxy.js: pkg/dist/worker.js

## The whole npm package (browser and worker entries) into pkg/dist/, and
## the license texts beside its package.json (npm packs them from there);
## `npm pack` in pkg/ is what users install.
.PHONY: pkg
pkg: build-browser build-worker-js pkg/LICENSE-MIT pkg/LICENSE-APACHE

pkg/LICENSE-%: LICENSE-%
	cp $< $@

test-worker-js: build-worker-js
	scripts/test-node-counted.sh tests/worker-js/

test: test-worker-js

## ---- Real HTTP clients (issue 12) ------------------------------------------
## ky (retry on POST) and axios with axios-retry against the production proxy
## in workerd over real HTTP, with origin faults (500, 503, reset after work,
## slow): one execution per key, no 422 for a resend, the slow first attempt
## ends in its replay.
.PHONY: test-clients
test-clients: build-proxy-js
	scripts/test-node-counted.sh tests/clients/

test: test-clients

## build-proxy-js: the production proxy (the root wrangler.toml: the
## JavaScript host, workers/proxy-js/index.js) bundled exactly as
## `wrangler deploy` uploads it, into build/proxy-js/: index.js and the wasm.
.PHONY: build-proxy-js
build-proxy-js: build-worker-js build/proxy-js/index.js

build/proxy-js/index.js: workers/proxy-js/index.js pkg/dist/worker.js pkg/dist/proxy.js wrangler.toml
	rm -rf build/proxy-js
	WRANGLER_LOG=warn wrangler deploy --dry-run --outdir build/proxy-js > /dev/null

## The whole workerd suite (tests/edge) on the JavaScript host: ONCEKEY_HOST=js
## makes the harness start build/proxy-js for "proxy" and build/demo-js (the
## demo shop behind `withIdempotency`, tests/edge/js-host/) for "demo". Only
## tests of what that host does not have (the queue consumer) are skipped,
## each saying so; any other skip, a failure or no test run fails the target.
.PHONY: build-demo-js test-edge-js
build-demo-js: build-worker-js build/demo-js/index.js

build/demo-js/index.js: $(wildcard tests/edge/js-host/*.js) pkg/dist/worker.js
	mkdir -p build/demo-js
	esbuild tests/edge/js-host/index.js --bundle --format=esm --target=es2022 --platform=neutral \
	  --log-level=warning --alias:oncekey/worker=./pkg/dist/worker.js \
	  --external:cloudflare:workers --external:./oncekey_worker_bg.wasm --outfile=$@
	cp pkg/dist/oncekey_worker_bg.wasm build/demo-js/

test-edge-js: install build-proxy-js build-demo-js
	@mkdir -p build
	ONCEKEY_HOST=js node --test --test-concurrency=1 --test-timeout=180000 --test-reporter=tap tests/edge/ \
	  | tee build/test-edge-js.tap | sed '/^# {/d'
	@pass=$$(sed -n 's/^# pass //p' build/test-edge-js.tap); [ "$${pass:-0}" -gt 0 ] || { echo "test-edge-js: no test ran" >&2; exit 1; }
	@if grep '# SKIP' build/test-edge-js.tap | grep -v '# SKIP the JavaScript host has no '; then \
	  echo "test-edge-js: a test was skipped for another reason (above)" >&2; exit 1; fi
	@echo "skipped on the JavaScript host:"; grep '# SKIP' build/test-edge-js.tap | sed 's/^ *//' || true

test: test-edge-js
