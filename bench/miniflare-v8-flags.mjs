// Miniflare has no option for V8 flags: this makes a copy of its package in
// build/miniflare-v8-flags/ whose workerd config takes them from
// MINIFLARE_V8_FLAGS (one line added); its dependencies resolve from the
// repository's node_modules as the original's do. Used by
// bench/wasm-compile.mjs, bench/native-profile.mjs, bench/v8-trace.mjs and
// bench/paired.mjs (with PAIRED_V8_FLAGS).
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The entry of the copy of Miniflare whose workerd config carries MINIFLARE_V8_FLAGS, made when missing or stale. */
export function miniflareWithV8Flags() {
  const from = join(ROOT, "node_modules", "miniflare");
  const to = join(ROOT, "build", "miniflare-v8-flags");
  const version = JSON.parse(readFileSync(join(from, "package.json"), "utf8")).version;
  const entry = join(to, "dist", "src", "index.js");
  const stamp = join(to, ".version");
  if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== version) {
    rmSync(to, { recursive: true, force: true });
    cpSync(from, to, { recursive: true, dereference: true });
    const source = readFileSync(entry, "utf8");
    const config = "      extensions,\n      structuredLogging: this.#structuredWorkerdLogs\n";
    if (!source.includes(config))
      throw new Error(`miniflare ${version}: its workerd config is not where this expects it`);
    const flags = '      v8Flags: process.env.MINIFLARE_V8_FLAGS?.split(" ").filter(Boolean) ?? [],\n';
    writeFileSync(
      entry,
      source.replace(config, `      extensions,\n${flags}      structuredLogging: this.#structuredWorkerdLogs\n`),
    );
    writeFileSync(stamp, version);
  }
  return entry;
}
