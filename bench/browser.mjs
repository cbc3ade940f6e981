// The browser package's benchmark (`make bench-browser`): key rate against
// npm `uuid` v7 and `crypto.randomUUID()` in one Node process, package size
// (gzip), and time from import to first key in headless Chromium. Writes its
// section of bench/RESULTS.md.
import { readFileSync, existsSync } from "node:fs";
import { writeSection } from "./results.mjs";
import { createServer } from "node:http";
import { cpus, platform, release } from "node:os";
import { join, extname } from "node:path";
import { gzipSync } from "node:zlib";
import { v7 } from "uuid";
import { chromium } from "playwright-core";
import { newKey } from "../pkg/dist/oncekey.node.js";

const ROOT = new URL("../", import.meta.url).pathname;
const DIST = join(ROOT, "pkg/dist");
const N = 1_000_000;
const ROUNDS = 5;

function rate(make) {
  let last = "";
  let increasing = true;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const k = make();
    if (k <= last) increasing = false;
    last = k;
  }
  return { perSec: N / ((performance.now() - t0) / 1000), increasing };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Interleaved rounds, so no contender gets the warm or the cold machine.
const contenders = {
  "oncekey newKey()": newKey,
  "uuid v7()": () => v7(),
  "crypto.randomUUID() (v4)": () => crypto.randomUUID(),
};
const runs = Object.fromEntries(Object.keys(contenders).map((k) => [k, []]));
const increasing = {};
for (const make of Object.values(contenders)) rate(make); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, make] of Object.entries(contenders)) {
    const { perSec, increasing: inc } = rate(make);
    runs[name].push(perSec);
    increasing[name] = (increasing[name] ?? true) && inc;
  }
}
const rates = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)]));
const ratio = rates["oncekey newKey()"] / rates["uuid v7()"];

const gz = (f) => gzipSync(readFileSync(join(DIST, f)), { level: 9 }).length;
const raw = (f) => readFileSync(join(DIST, f)).length;
const size = {
  wasm: [raw("oncekey_bg.wasm"), gz("oncekey_bg.wasm")],
  js: [raw("oncekey.js"), gz("oncekey.js")],
  nodeJs: [raw("oncekey.node.js"), gz("oncekey.node.js")],
};
const browserGzip = size.wasm[1] + size.js[1];

// Import to first key in Chromium: a fresh page per sample, the package
// served from loopback (no cache between samples: a new context each time).
const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
const page = `<!doctype html><script type="module">
const t0 = performance.now();
const { newKey, ready } = await import('/oncekey.js?' + Math.random());
await ready(); // importing loads nothing: the wasm loads here
const key = newKey();
window.result = { ms: performance.now() - t0, key };
</script>`;
const server = createServer((req, res) => {
  const path = req.url.split("?")[0];
  if (path === "/") return res.writeHead(200, { "content-type": "text/html" }).end(page);
  const file = join(DIST, path);
  if (!file.startsWith(DIST) || !existsSync(file)) return res.writeHead(404).end();
  res
    .writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" })
    .end(readFileSync(file));
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
  ], // playwright gives launch() a fresh user-data-dir
});
const samples = [];
for (let i = 0; i < 15; i++) {
  const context = await browser.newContext();
  const p = await context.newPage();
  await p.goto(`http://127.0.0.1:${server.address().port}/`);
  const { ms } = await (await p.waitForFunction(() => window.result)).jsonValue();
  samples.push(ms);
  await context.close();
}
const chromiumVersion = browser.version();
await browser.close();
server.close();
const firstKey = { median: median(samples), min: Math.min(...samples), max: Math.max(...samples) };

const f = (n) => n.toLocaleString("en-US", { maximumFractionDigits: 2 });
const M = (n) => `${f(n / 1e6)} M/s`;
const section = `<!-- browser:start -->
## Browser package

Command: \`make bench-browser\` (\`node bench/browser.mjs\`), ${new Date().toISOString().slice(0, 10)}.
Machine: ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, ${platform()} ${release()}, Node ${process.version}, Chromium ${chromiumVersion}.

**Keys in one Node process** (${f(N)} keys per run, median of ${ROUNDS} interleaved runs, each key checked greater than the last):

| generator | rate | strictly increasing |
|---|---|---|
${Object.keys(contenders)
  .map(
    (k) =>
      `| ${k} | ${M(rates[k])} | ${k.includes("randomUUID") ? "no (v4, random)" : increasing[k] ? "yes" : "**no**"} |`,
  )
  .join("\n")}

\`newKey()\` / \`uuid\` \`v7()\`: **${f(ratio)}×** (target ≥ 3×).

**Package size** (gzip -9, as shipped in \`pkg/dist/\`):

| file | bytes | gzip |
|---|---|---|
| oncekey_bg.wasm | ${f(size.wasm[0])} | ${f(size.wasm[1])} |
| oncekey.js (browsers, bundlers) | ${f(size.js[0])} | ${f(size.js[1])} |
| oncekey.node.js (Node) | ${f(size.nodeJs[0])} | ${f(size.nodeJs[1])} |

Browser build, wasm + JavaScript: **${f(browserGzip)} bytes gzip** (target ≤ 25 KB = 25,600).

**Import to first key in headless Chromium** (fresh context per sample, served from loopback, ${samples.length} samples):
median **${f(firstKey.median)} ms**, min ${f(firstKey.min)} ms, max ${f(firstKey.max)} ms.
<!-- browser:end -->`;

writeSection("browser", section);
console.log(section);
