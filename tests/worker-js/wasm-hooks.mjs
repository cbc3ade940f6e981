// Module hooks (node:module's register) for unit tests of the JavaScript
// host's files: `oncekey-worker-wasm`, the name the package's build aliases
// to its wasm-bindgen glue, resolves to the glue `make build-worker-js`
// built, so those files are imported as they are written.
const GLUE = new URL("../../target/worker-js/bindgen/oncekey_worker_wasm.js", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "oncekey-worker-wasm") return { url: GLUE, shortCircuit: true };
  return nextResolve(specifier, context);
}
