// The worker wasm (`oncekey/worker`'s, as `make build-worker-js` built it)
// under Node, for unit tests of the JavaScript host's files and of the
// boundary: import this first, then the host's files with `import()`.
import { readFileSync } from "node:fs";
import { register } from "node:module";

register("./wasm-hooks.mjs", import.meta.url);

/** The bindings (`oncekey-worker-wasm`), instantiated. */
export const wasm = await import("oncekey-worker-wasm");
wasm.initSync({
  module: readFileSync(new URL("../../target/worker-js/bindgen/oncekey_worker_wasm_bg.wasm", import.meta.url)),
});
