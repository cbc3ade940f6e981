// Both hosts beside hono-idempotency on a Durable Object, in short
// paired series, over several fresh workerd runs (issue 35; part of `make
// bench-edge`). bench/edge.mjs runs each worker for thousands of requests a
// series, and its rounds' CPU ratios spread wider than the gaps it
// measures: whatever drifts in workerd over a series (its objects' files,
// its heap) falls unevenly on workers that do not run at the same time.
// Here each pair is one short series of every worker, back to back in a
// fresh order, and a ratio is taken within a pair. What V8 decides for one
// isolate (what it compiles, and when) lasts the whole run, so one run's
// pairs can agree on a figure the next run's do not: the runs are fresh
// workerd processes, and each run's median is shown beside the overall one.
//
//   node bench/paired.mjs      # writes the edge-paired section of bench/RESULTS.md
//
// Both hosts run, with do-only-rs (do-only in Rust: what workers-rs itself
// costs) as the Rust host's control, and two A/A controls: oncekey-js-twin
// and hono-do-twin, the same scripts under other names. How far a twin
// lands from its original is the least difference this bench resolves
// (a few hundredths, 2026-11-28).
//
// PAIRED_RUNS (fresh workerd runs, 4), PAIRED_PAIRS (pairs per path in a
// run, 12), PAIRED_N (requests per series, 100), PAIRED_ONLY (name,...:
// only these of oncekey-js, oncekey-rust, do-only-rs and the twins; the
// PAIRED_BUILDS, hono-do and hono-do-expiry always run),
// PAIRED_BUILDS (name=dir,...: more builds of the JavaScript proxy, beside
// the others, for an A/B), PAIRED_V8_FLAGS (V8 flags for workerd, for a
// diagnosis). TMPDIR chooses where the objects' files go, as
// for bench/edge.mjs.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { WORKERS } from "../tests/edge/harness.mjs";
import { miniflareWithV8Flags } from "./miniflare-v8-flags.mjs";
import { writeSection } from "./results.mjs";
import { threadsCpuMs, workerdPid } from "./workerd-cpu.mjs";
import {
  benchOncekey,
  doOnlyRsWorker,
  drainStdio,
  HONO_DO,
  honoDoWorker,
  median,
  namedBuild,
  objectFiles,
  originWorker,
  seriesOn,
  shuffled,
} from "./workers.mjs";

// PAIRED_V8_FLAGS: V8 flags for workerd, for a diagnosis (a deployment cannot set them).
const V8_FLAGS = process.env.PAIRED_V8_FLAGS?.split(" ").filter(Boolean) ?? [];
process.env.MINIFLARE_V8_FLAGS = V8_FLAGS.join(" ");
const { Miniflare } = V8_FLAGS.length > 0 ? await import(miniflareWithV8Flags()) : await import("miniflare");
const RUNS = Number(process.env.PAIRED_RUNS ?? 4);
const PAIRS = Number(process.env.PAIRED_PAIRS ?? 12);
const N = Number(process.env.PAIRED_N ?? 100);
const IN_FLIGHT = 4;
// Long enough for the work a series leaves under `waitUntil` (each first
// execution's `finish`) to end inside the series that made it.
const SETTLE_MS = 150;
// Before each path's pairs: long enough for workerd to evict the objects
// the last path made (some seconds after their last call; with 15 s the
// replays' figures came back to bench/edge.mjs's).
const EVICTED_MS = 15_000;

if (!existsSync(HONO_DO)) {
  console.log("bench/paired.mjs: skipped, no hono-do build (`make bench-peers` builds it from a local checkout)");
  process.exit(0);
}

// Each oncekey worker's build directory: the section names what ran by its
// script's hash, so that a build left over from an A/B cannot pass for the
// root config's.
const SCRIPTS = {};
/** oncekey's proxy from `host` as `name`, its build noted in SCRIPTS. */
const oncekey = (name, host) => {
  SCRIPTS[name] = host.build;
  return () => benchOncekey(name, host);
};
const IMPLS = {
  "oncekey-js": oncekey("oncekey-js", WORKERS["proxy-js"]),
  "oncekey-rust": oncekey("oncekey-rust", WORKERS.proxy),
  "hono-do": () => honoDoWorker("hono-do"),
  "hono-do-expiry": () => honoDoWorker("hono-do-expiry", { expiry: true }),
  // The control for the Rust host: what workers-rs itself costs a design as light as hono-do's.
  "do-only-rs": () => doOnlyRsWorker("do-only-rs"),
  // A/A controls: the same scripts under other names. How far a twin lands
  // from its original is how far apart two identical workers land here: a
  // difference smaller than that is not resolved.
  "oncekey-js-twin": oncekey("oncekey-js-twin", WORKERS["proxy-js"]),
  "hono-do-twin": () => honoDoWorker("hono-do-twin"),
};
// PAIRED_ONLY=name,...: only these workers, and the two every ratio is to.
const ONLY = process.env.PAIRED_ONLY?.split(",").filter(Boolean);
const ALWAYS = ["hono-do", "hono-do-expiry"];
if (ONLY) {
  for (const name of Object.keys(IMPLS)) if (!ALWAYS.includes(name) && !ONLY.includes(name)) delete IMPLS[name];
}
const BUILDS = process.env.PAIRED_BUILDS?.split(",").filter(Boolean) ?? [];
for (const pair of BUILDS) {
  const { name, worker, build } = namedBuild(pair);
  IMPLS[name] = worker;
  SCRIPTS[name] = build;
}
const NAMES = Object.keys(IMPLS);
const PATHS = ["first", "replay"];
const PATH_NAMES = { first: "first execution", replay: "replay" };

/**
 * One run: a fresh workerd holding every worker in `order` (fresh
 * isolates: V8 makes its compiling decisions anew), `PAIRS` pairs per
 * path, each in an order from `seed`. Returns
 * figures[path][impl], one {cpu, p50} per pair: workerd CPU ms per request
 * and the series' p50 ms.
 */
async function oneRun(order, seed) {
  const mf = new Miniflare({
    workers: [...order.map((name) => IMPLS[name]()), originWorker],
    handleRuntimeStdio: drainStdio,
  });
  const url = await mf.ready;
  const pid = workerdPid();
  const figures = Object.fromEntries(PATHS.map((path) => [path, Object.fromEntries(NAMES.map((impl) => [impl, []]))]));
  try {
    const { run, warm } = seriesOn(url, IN_FLIGHT);
    const settle = () => new Promise((done) => setTimeout(done, SETTLE_MS));
    // Warm-up: every worker's isolate, classes and objects, and the keys replays ask for.
    await warm(NAMES, PATHS);
    // One path at a time: workerd evicts an idle object some seconds after
    // its last call, and the first executions' thousands of objects would
    // be evicted during the replays' series, which cost far less each.
    for (const path of PATHS) {
      await new Promise((done) => setTimeout(done, EVICTED_MS));
      for (let pair = 0; pair < PAIRS; pair++) {
        for (const impl of shuffled(NAMES, seed * PAIRS + pair)) {
          await settle();
          const before = threadsCpuMs(pid);
          const latencies = await run(impl, path, N);
          await settle();
          figures[path][impl].push({ cpu: (threadsCpuMs(pid) - before) / N, p50: median(latencies) });
        }
      }
    }
  } finally {
    await mf.dispose();
  }
  return figures;
}

async function main() {
  const loadStart = loadavg();
  const runs = [];
  // Each run lists the workers in another order (Miniflare's order is workerd's).
  for (let run = 0; run < RUNS; run++) runs.push(await oneRun(shuffled(NAMES, 1000 + run), run));
  const section = render(runs, loadStart, loadavg());
  writeSection("edge-paired", section);
  console.log(section);
}

/** Each oncekey worker that ran, with its script's hash. */
function scripts() {
  const hash = (dir) =>
    createHash("sha256")
      .update(readFileSync(join(dir, "index.js")))
      .digest("hex")
      .slice(0, 12);
  return NAMES.filter((name) => name in SCRIPTS)
    .map((name) => `${name} \`${hash(SCRIPTS[name])}\``)
    .join(", ");
}

/** The section: each worker's median figures, and its pairs' ratios to each peer's. */
function render(runs, loadStart, loadEnd) {
  const load = (l) => l.map((x) => x.toFixed(1)).join(" ");
  const f2 = (x) => x.toFixed(2);
  // A run's ratios of `impl`'s figure to `peer`'s, pair by pair.
  const ratios = (run, path, impl, peer, of) => run[path][impl].map((mine, i) => mine[of] / run[path][peer][i][of]);
  const ratio = (path, impl, peer, of) => {
    const all = runs.flatMap((run) => ratios(run, path, impl, peer, of));
    const each = runs.map((run) => f2(median(ratios(run, path, impl, peer, of))));
    return `${f2(median(all))}× (${each.join(", ")})`;
  };
  const tables = PATHS.map((path) => {
    const rows = NAMES.map((impl) => {
      const mid = (of) => f2(median(runs.flatMap((run) => run[path][impl].map((figure) => figure[of]))));
      const cells = [
        mid("cpu"),
        ratio(path, impl, "hono-do", "cpu"),
        ratio(path, impl, "hono-do-expiry", "cpu"),
        mid("p50"),
        ratio(path, impl, "hono-do", "p50"),
      ];
      return `| ${impl} | ${cells.join(" | ")} |`;
    });
    return `#### ${PATH_NAMES[path]}

| worker | CPU ms per request | CPU ÷ hono-do's (each run's) | CPU ÷ hono-do-expiry's (each run's) | p50 ms | p50 ÷ hono-do's (each run's) |
|---|---:|---:|---:|---:|---:|
${rows.join("\n")}`;
  });
  return `<!-- edge-paired:start -->
### Edge, paired: both hosts beside hono-idempotency, pair by pair, run by run

Command: \`${V8_FLAGS.length > 0 ? `PAIRED_V8_FLAGS="${V8_FLAGS.join(" ")}" ` : ""}${ONLY ? `PAIRED_ONLY=${ONLY.join(",")} ` : ""}${BUILDS.length > 0 ? `PAIRED_BUILDS=${BUILDS.join(",")} ` : ""}node bench/paired.mjs\` (part of \`make bench-edge\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC,
load average ${load(loadStart)} → ${load(loadEnd)}. ${RUNS} runs, each a fresh workerd holding ${NAMES.join(", ")} and the
origin, listed in another order (as in bench/edge.mjs: oncekey-js is the root config's proxy at its defaults, with its
\`enable_request_signal\` flag; oncekey-rust the same proxy on the Rust host; hono-do-expiry is hono-do with the expiry
alarm SPEC §4 asks for; do-only-rs, do-only in Rust, measures what workers-rs itself costs; oncekey-js-twin and
hono-do-twin are A/A controls, the same scripts under other names: how far a twin lands from its original is how
far apart two identical workers land in this bench, and a smaller difference is not resolved). The objects' SQLite
files are under ${objectFiles()}. Scripts (SHA-256 of each build's index.js, its first 12 hex digits): ${scripts()}. In a run, one path at a time, ${EVICTED_MS / 1000} s apart (so that the objects one path
made are not evicted during the next one's series), ${PAIRS} pairs: in each pair every worker serves a series of ${N}
requests, ${IN_FLIGHT} in flight, back to back in a fresh order, each between ${SETTLE_MS} ms pauses (the work it leaves
under \`waitUntil\` ends inside it). A series' figures: workerd's CPU (all threads, from /proc) per request, and its p50.
A worker's figure is their median over every pair of every run. A ratio is taken within each pair; the table gives the
median over every pair, then each run's median. Drift in workerd over a run (its objects' files, its heap) falls on
the series of one pair alike. What V8 decided for one isolate does not: it lasts the run, so runs can disagree where
pairs agree, and a difference is resolved only when the runs' figures agree on it. Targets (issue 35): the JavaScript
host ≤ 1.0× hono-do's CPU and p50; the Rust host ≤ 1.3× hono-do's CPU.

${tables.join("\n\n")}
<!-- edge-paired:end -->
`;
}

await main();
