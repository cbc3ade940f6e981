// What V8 compiles of each oncekey host's wasm (and of do-only in Rust, the
// Rust host's control) on a fresh isolate's first request (not a test; part
// of `make bench-edge`). workerd runs with V8's
// --trace-wasm-compilation-times, which prints a line per function compiled
// (its time and body size): the functions compiled while the module loads,
// then those compiled for the first request (a first execution on a new
// key, with the work after its answer). A function compiled at load and
// again for the request was flushed in between; a second run with
// --no-flush-liftoff-code shows whether V8's flush of Liftoff code is why.
//
// Miniflare has no option for V8 flags, so this runs a copy of its package
// that takes them (bench/miniflare-v8-flags.mjs).
//
//   node bench/wasm-compile.mjs      # writes the edge-wasm-compile section of bench/RESULTS.md
import { randomUUID } from "node:crypto";
import { WORKERS } from "../tests/edge/harness.mjs";
import { miniflareWithV8Flags } from "./miniflare-v8-flags.mjs";
import { writeSection } from "./results.mjs";
import { doOnlyRsWorker, median, oncekeyWorker, originWorker } from "./workers.mjs";

const RUNS = Number(process.env.BENCH_COMPILE_RUNS ?? 3);
const QUIET_MS = 300;

const { Miniflare } = await import(miniflareWithV8Flags());

/** A worker reached on proxy.bench (from `WORKERS`), and the bench's origin worker. */
const workers = (worker) => [
  { ...worker(), routes: ["proxy.bench/*"] },
  { ...originWorker, routes: ["origin.bench/*"] },
];

const settle = () => new Promise((resolve) => setTimeout(resolve, QUIET_MS));
const COMPILED = /#(\d+) using (\w+), took (\d+) μs .*bodysize (\d+)/;

/**
 * One fresh workerd: the compile lines printed while the module loads
 * (and the origin's first order, which has no wasm), then those printed
 * for the proxy's first request. Each: functions, µs, body bytes, and how
 * many of the request's were compiled at load already.
 */
async function sample(worker, flags) {
  process.env.MINIFLARE_V8_FLAGS = ["--trace-wasm-compilation-times", ...flags].join(" ");
  const lines = [];
  const mf = new Miniflare({
    workers: workers(worker),
    handleRuntimeStdio: (out, err) => {
      for (const stream of [out, err]) stream.on("data", (d) => lines.push(...d.toString().split("\n")));
    },
  });
  try {
    const url = await mf.ready;
    const post = async (host, key) => {
      const headers = { "content-type": "application/json", "mf-original-url": `http://${host}/api/orders` };
      if (key) headers["idempotency-key"] = key;
      const body = JSON.stringify({ item: `compile-${randomUUID().slice(0, 8)}`, quantity: 1, amountCents: 1200 });
      const res = await fetch(new URL("/api/orders", url), { method: "POST", headers, body });
      await res.text();
      if (res.status !== 201) throw new Error(`${host} answered ${res.status}`);
    };
    await post("origin.bench");
    await settle();
    const atLoad = lines.length;
    await post("proxy.bench", randomUUID());
    await settle();
    const compiled = (from, to) =>
      lines
        .slice(from, to)
        .map((line) => COMPILED.exec(line))
        .filter(Boolean)
        .map((m) => ({ fn: m[1], us: Number(m[3]), bytes: Number(m[4]) }));
    const load = compiled(0, atLoad);
    const first = compiled(atLoad);
    const loaded = new Set(load.map((c) => c.fn));
    const total = (list) => ({
      functions: list.length,
      ms: list.reduce((a, c) => a + c.us, 0) / 1000,
      kb: list.reduce((a, c) => a + c.bytes, 0) / 1024,
    });
    return { load: total(load), first: total(first), again: total(first.filter((c) => loaded.has(c.fn))) };
  } finally {
    await mf.dispose();
  }
}

// Each host's production proxy as the harness configures it, and do-only
// written with workers-rs: what that framework's first request compiles.
const WORKERS_RUN = {
  "oncekey-js": () => oncekeyWorker("proxy", WORKERS["proxy-js"]),
  "oncekey-rust": () => oncekeyWorker("proxy", WORKERS.proxy),
  "do-only-rs": () => doOnlyRsWorker("proxy"),
};
const SETTINGS = { "V8's defaults": [], "--no-flush-liftoff-code": ["--no-flush-liftoff-code"] };
const rows = [];
for (const [name, worker] of Object.entries(WORKERS_RUN))
  for (const [setting, flags] of Object.entries(SETTINGS)) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await sample(worker, flags));
    const m = (part, k) => median(runs.map((r) => r[part][k]));
    const cell = (part) => `${m(part, "functions")} / ${m(part, "kb").toFixed(1)} / ${m(part, "ms").toFixed(2)}`;
    rows.push(`| ${name} | ${setting} | ${cell("load")} | ${cell("first")} | ${cell("again")} |`);
  }

const section = `<!-- edge-wasm-compile:start -->
### Edge: the wasm V8 compiles for a fresh isolate's first request

Command: \`node bench/wasm-compile.mjs\` (part of \`make bench-edge\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.
Each host's production proxy, and do-only-rs (do-only written with workers-rs, the Rust host's control), in a
fresh workerd (${RUNS} runs, medians) with V8's \`--trace-wasm-compilation-times\`
(through a copy of Miniflare whose workerd config takes V8 flags): the wasm functions compiled while the module
loads (the JavaScript host makes its layer then), and those compiled for the isolate's first request, a first
execution on a new key with the work after its answer. Each cell: functions / KB of their bodies / ms of compiling.

| worker | V8 flags | at load | for the first request | of those, compiled at load already |
|---|---|---:|---:|---:|
${rows.join("\n")}

V8 compiles a wasm function (with Liftoff) when it is first called, and the first request pays for every
function it is the first to run, in CPU and, for those before its answer, in latency. With V8's defaults, the
functions the module load compiled are compiled again when the first request uses them: workerd's V8 drops
Liftoff code between the load and the first request, which \`--no-flush-liftoff-code\` stops. So running the
layer's code while the script loads cannot pay for its compiling in advance.
<!-- edge-wasm-compile:end -->`;
writeSection("edge-wasm-compile", section);
console.log(section);
