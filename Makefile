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
	@echo "make dev    serve the worker, demo origin and demo page on 127.0.0.1:$(PORT)"
	@echo "make test   run every test (installs what it needs first)"
	@echo "make bench  run the benchmarks, results in bench/RESULTS.md"

install:
	scripts/install.sh rust tools node

## The core: native unit, property and doc tests, then the same unit tests
## compiled to wasm32 under Node.
test-core:
	cargo test
	@# The core alone must never pull in the adapters' runtime crates.
	@if cargo tree -e normal --prefix none | grep -E '^(worker|wasm-bindgen|js-sys|web-sys) '; then \
	  echo "the core's native dependency tree holds an adapter crate" >&2; exit 1; fi

test-core-wasm: install
	scripts/test-core-wasm.sh

test: install test-core test-core-wasm
