// A control for the cold start, not a peer: do-only with oncekey/proxy's
// wasm (copied beside the bundle) instantiated when the script loads, and
// never called. Its first answer, set beside do-only's, is what the
// platform charges a fresh isolate for holding a module of that size —
// apart from compiling and running any of its functions, which V8 does
// lazily, on each function's first call.
import wasm from "./oncekey_proxy_bg.wasm";

export { Coordinator, default } from "./do-only";

const imports: Record<string, Record<string, () => undefined>> = {};
for (const { module, name, kind } of WebAssembly.Module.imports(wasm)) {
  imports[module] ??= {};
  if (kind === "function") imports[module][name] = () => undefined;
}
/** Kept, as the package keeps its instance. */
export const instance = new WebAssembly.Instance(wasm, imports);
