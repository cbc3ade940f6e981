// Entry for Node (>= 20): read the wasm next to this file.
import { readFile } from "node:fs/promises";
import { initSync } from "../dist/bindgen/oncekey_wasm.js";

initSync({ module: await readFile(new URL("./oncekey_bg.wasm", import.meta.url)) });

export * from "./api.js";
