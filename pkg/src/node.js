// Entry for Node (>= 20), built as ESM and as CommonJS (`require`).
// Importing it loads nothing: the core's wasm, beside this file, is read
// and compiled on first use (at once, so `newKey()` needs no `await`).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { useWasm } from "./load.js";

useWasm({ bytes: wasmBytes });

// Not `new URL("./oncekey_bg.wasm", import.meta.url)`: bundlers rewrite
// that form into an asset URL a server cannot read (webpack in Next.js).
// When the bundle no longer sits beside the package (a server bundle
// deployed elsewhere), the package is looked up from the working directory.
function wasmBytes() {
  try {
    return readFileSync(new URL("oncekey_bg.wasm", `${import.meta.url}`));
  } catch (error) {
    try {
      return readFileSync(createRequire(join(process.cwd(), "index.js")).resolve("oncekey/oncekey_bg.wasm"));
    } catch {
      throw error;
    }
  }
}

export * from "./api.js";
