// Entry for browsers and bundlers. Importing it loads nothing: the core's
// wasm, beside this file, is fetched and compiled on first use or by
// `ready()`. The `new URL(…, import.meta.url)` is the form bundlers (Vite,
// webpack, Next.js) read to emit the wasm as an asset.
import { useWasm } from "./load.js";

useWasm({ url: () => new URL("./oncekey_bg.wasm", import.meta.url) });

export * from "./api.js";
