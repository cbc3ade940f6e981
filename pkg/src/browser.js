// Entry for browsers and bundlers: fetch and compile the wasm next to this file.
import init from "../dist/bindgen/oncekey_wasm.js";

await init({ module_or_path: new URL("./oncekey_bg.wasm", import.meta.url) });

export * from "./api.js";
