// The edge benchmark (not a test): the built worker in workerd through
// Miniflare, real local KV and Durable Objects, requests over loopback HTTP.
// Three paths on the same route, POST /api/orders:
//   baseline  no key: the layer passes the request through to the origin
//   replay    a key already completed: answered from the KV copy
//   first     a new key each time: KV read, DO begin, origin, DO finish
// Writes bench/RESULTS.md (the browser part of the file is left alone).
import { execSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { start } from "../tests/edge/harness.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const RESULTS = join(ROOT, "bench", "RESULTS.md");
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const WARMUP = 200;

const worker = await start();
const items = Array.from({ length: 64 }, (_, i) => `bench-${i}-${randomUUID().slice(0, 6)}`);

async function post(i, key) {
  const body = JSON.stringify({ item: items[i % items.length], quantity: 1, amountCents: 1200 });
  const headers = { "content-type": "application/json" };
  if (key) headers["idempotency-key"] = key;
  const started = process.hrtime.bigint();
  const res = await fetch(new URL("/api/orders", worker.url), { method: "POST", headers, body });
  await res.arrayBuffer();
  return { status: res.status, ms: Number(process.hrtime.bigint() - started) / 1e6, replayed: res.headers.get("idempotent-replayed") };
}

/** Runs `count` requests with CONCURRENCY in flight; returns latencies and req/s. */
async function run(count, request) {
  const latencies = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++;
        const res = await request(i);
        latencies.push(res);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const sorted = latencies.map((r) => r.ms).sort((a, b) => a - b);
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  const statuses = {};
  for (const r of latencies) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  return { rps: count / seconds, p50: pct(50), p99: pct(99), statuses, all: latencies };
}

// Keys for the replay path, completed once before measuring.
const replayKeys = Array.from({ length: 100 }, () => randomUUID());
for (let i = 0; i < replayKeys.length; i++) await post(i, replayKeys[i]);
await new Promise((r) => setTimeout(r, 300)); // KV copies land after the answers

await run(WARMUP, (i) => post(i));
await run(WARMUP, (i) => post(i % replayKeys.length, replayKeys[i % replayKeys.length]));
await run(WARMUP, (i) => post(i, randomUUID()));

const baseline = await run(REQUESTS, (i) => post(i));
const replay = await run(REQUESTS, (i) => post(i % replayKeys.length, replayKeys[i % replayKeys.length]));
const first = await run(REQUESTS, (i) => post(i, randomUUID()));
await worker.dispose();

const notReplayed = replay.all.filter((r) => r.replayed !== "true").length;
if (notReplayed) throw new Error(`${notReplayed} replay-path answers were not replays`);
for (const [name, r] of Object.entries({ baseline, replay, first })) {
  const bad = Object.keys(r.statuses).filter((s) => s !== "201");
  if (bad.length) throw new Error(`${name}: unexpected statuses ${JSON.stringify(r.statuses)}`);
}

// The deployable bundle, as `wrangler deploy --dry-run` writes it.
execSync("make --no-print-directory deploy-dry-run", { cwd: ROOT, stdio: "ignore" });
const deployDir = join(ROOT, "build", "deploy");
const files = readdirSync(deployDir).filter((f) => f.endsWith(".wasm") || f.endsWith(".js"));
const raw = files.reduce((n, f) => n + readFileSync(join(deployDir, f)).length, 0);
const gz = gzipSync(Buffer.concat(files.map((f) => readFileSync(join(deployDir, f)))), { level: 9 }).length;

const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
const cpu = cpus()[0]?.model ?? "unknown";
const nproc = execSync("nproc").toString().trim();
const replayRatio = replay.p50 / baseline.p50;
const firstRatio = first.p50 / baseline.p50;
const check = (ok) => (ok ? "met" : "**missed**");
const section = `<!-- edge:start -->
## Edge worker

Command: \`make bench-edge\` (part of \`make bench\`), ${new Date().toISOString().slice(0, 10)}.
Machine: ${nproc} cores (\`nproc\`), ${cpu}; Node ${process.version}; load average ${loadavg().map((l) => l.toFixed(1)).join(" ")} when the run ended (the machine is shared with other builds).
Runtime: the release build in workerd through Miniflare ${JSON.parse(readFileSync(join(ROOT, "node_modules", "miniflare", "package.json"), "utf8")).version},
local KV and SQLite-backed Durable Objects, Node's fetch (undici, keep-alive) over loopback,
${CONCURRENCY} requests in flight, ${REQUESTS} requests per path after ${WARMUP} warm-up requests.
Route: \`POST /api/orders\` on the embedded demo origin (each execution writes an
order to an Orders Durable Object).

| path | what it does | req/s | p50 ms | p99 ms | p50 / baseline |
|---|---|---:|---:|---:|---:|
| baseline | no key: passed through to the origin | ${f1(baseline.rps)} | ${f2(baseline.p50)} | ${f2(baseline.p99)} | 1.00 |
| replay | completed key: answered from the KV copy | ${f1(replay.rps)} | ${f2(replay.p50)} | ${f2(replay.p99)} | ${f2(replayRatio)} |
| first execution | new key: KV read, DO begin, origin, DO finish | ${f1(first.rps)} | ${f2(first.p50)} | ${f2(first.p99)} | ${f2(firstRatio)} |

Targets: replay p50 ≤ 1.5× baseline: ${check(replayRatio <= 1.5)} (${f2(replayRatio)}×);
first execution p50 ≤ 3× baseline: ${check(firstRatio <= 3)} (${f2(firstRatio)}×).

Bundle (\`make deploy-dry-run\`: \`wrangler deploy --dry-run --outdir build/deploy\`):
${files.join(", ")}: ${(raw / 1024).toFixed(1)} KB raw, **${(gz / 1024).toFixed(1)} KB gzip**
(target ≤ 250 KB: ${check(gz <= 250 * 1024)}).

Local figures: workerd on loopback has no network latency, so the ratios show
the layer's own cost, not what a deployed worker sees (there a KV hit is
served from the colo, a DO call may cross regions).
<!-- edge:end -->
`;

let doc = existsSync(RESULTS) ? readFileSync(RESULTS, "utf8") : "# Benchmark results\n\n";
if (doc.includes("<!-- edge:start -->")) {
  doc = doc.replace(/<!-- edge:start -->[\s\S]*<!-- edge:end -->\n?/, section);
} else {
  doc = doc.trimEnd() + "\n\n" + section;
}
writeFileSync(RESULTS, doc);
console.log(section);
