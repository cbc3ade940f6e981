// The edge benchmark (not a test): oncekey's production proxy on both of its
// hosts, default settings — oncekey-js (the root wrangler.toml: the npm
// package's `proxy()` and its IdempotencyCoordinator over the core's wasm;
// build/proxy-js, `make build-proxy-js`, what `wrangler deploy` uploads) and
// oncekey-rust (workers-rs, workers/proxy/wrangler.toml; build/proxy, `make
// build-proxy`) — and its peers in one workerd through Miniflare, each
// with its own local KV namespace and SQLite-backed Durable Objects,
// requests over loopback HTTP. Peers (bench/peers/, built by `make bench-peers`):
//   plain       SPEC §3–4 in TypeScript, the plain way (KV read first, DO RPC, origin, KV copy)
//   plain-fetch the same, calling the object through its fetch handler
//   do-only     one Durable Object per key over RPC, no KV: lock, origin, store
//   powertools  @aws-lambda-powertools/idempotency, its defaults, a KV persistence layer
// All call one origin worker (bench/peers/origin-worker.ts: POST
// /api/orders writing to an Orders Durable Object) the way a proxy calls a
// real origin, a fetch to ORIGIN_URL (oncekey in its proxy mode), routed to
// the origin worker by Miniflare's outboundService. Same origin, same hop:
// what differs is the layer.
// Three paths per implementation, on the same route:
//   baseline  no key: passed through to the origin
//   replay    a key already completed. oncekey (IDEMPOTENCY_KV_REPLAY=
//             fallback, the default) and do-only: answered by the key's
//             object (one `begin` round trip, no KV read); plain and
//             plain-fetch: from their KV copy, read first; powertools: from KV
//   first     a new key each time. oncekey and do-only: DO begin, origin,
//             DO finish, no KV operation before the answer (oncekey then
//             writes its KV copy, read only when the object fails); plain:
//             KV read (a miss), DO begin, origin, DO finish, KV copy;
//             powertools: KV read, KV write, origin, KV write
// Five controls run beside them, not peers: oncekey-js-kv-off (the
// production proxy with IDEMPOTENCY_KV_REPLAY=off: do-only's storage work),
// do-only-twin (do-only's script again: the run's noise), floor
// (bench/peers/floor.ts: what the platform charges any design), floor-kv
// (the floor and a KV copy after the answer: the platform's charge for
// oncekey's default storage work) and do-only-rs (bench/peers/do-only-rs:
// do-only written with workers-rs, what the Rust host's framework charges).
// BENCH_QUIET=1 (oncekey-js) and BENCH_QUIET=rust (oncekey-rust beside
// do-only-rs) run a handful of these alone in one workerd.
// The series run interleaved in rounds, in a fresh order each round, so
// load from other processes on the machine falls on all of them alike.
// Besides latency, each series records the CPU time workerd spent on it
// (all its threads, from /proc): far less sensitive to other processes than
// latency is. Then the pass-through and first execution once more, one
// request in flight.
// Then cold start: per implementation, BENCH_COLD_RUNS times (interleaved),
// a fresh workerd holding just that worker and the origin; `mf.ready` and
// the first request's latency timed apart (see coldStart below).
// BENCH_COLD_ONLY=1 runs only the cold start and prints its table, for an
// A/B: BENCH_COLD_IMPLS=a,b limits it to those implementations, and
// BENCH_COLD_KEYLESS=1 sends its requests with no key (each layer's
// pass-through), and BENCH_COLD_BUILDS=name=dir,... adds builds of either
// host to compare (see buildOf).
// The objects' SQLite files go under the temporary directory: `TMPDIR` on a
// tmpfs (`mount -t tmpfs tmpfs /mnt/mf`, then `TMPDIR=/mnt/mf`) takes the
// disk's syncs, and most of their noise, out of every first execution; each
// section says where they were. (Here, with five workers' objects on a
// tmpfs, a series once failed with SQLITE_NOMEM: run fewer workers then.)
// Writes bench/RESULTS.md (the other sections of the file are left alone).
import { execSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { writeSection } from "./results.mjs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { WORKERS } from "../tests/edge/harness.mjs";
import { threadsCpuMs, workerdPid } from "./workerd-cpu.mjs";
import {
  benchOncekey,
  DO_ONLY_RS,
  doOnlyRsWorker,
  HONO_DO,
  honoDoWorker,
  median,
  namedBuild,
  objectFiles,
  oncekeyWorker,
  originWorker,
  peer,
  postTo,
  shuffled,
} from "./workers.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 7);
const COLD_ONLY = process.env.BENCH_COLD_ONLY === "1";
// (the quiet run reports no one-in-flight figures, so it runs none)
const SEQ_REQUESTS = ["1", "rust"].includes(process.env.BENCH_QUIET)
  ? 0
  : Number(process.env.BENCH_SEQ_REQUESTS ?? 300);
const SEQ_ROUNDS = Number(process.env.BENCH_SEQ_ROUNDS ?? 3);
const SETTLE_MS = 250;
const WARMUP = 200;

const RUST = WORKERS.proxy;
const JS = WORKERS["proxy-js"];
/** A build directory's JavaScript and wasm modules (not its source map or README). */
const modulesOf = (dir) =>
  readdirSync(dir)
    .filter((f) => /\.(m?js|wasm)$/.test(f))
    .sort()
    .map((f) => join(dir, f));
/** An oncekey host's build with `IDEMPOTENCY_KV_REPLAY=off` (no KV copies), reached as `${name}-kv-off`. */
const kvOff = (name, host) => ({
  host: `${name}-kv-off.bench`,
  worker: () =>
    oncekeyWorker(`${name}-kv-off`, host, {
      routes: [`${name}-kv-off.bench/*`],
      vars: { IDEMPOTENCY_KV_REPLAY: "off" },
    }),
  files: () => modulesOf(host.build),
});
/**
 * Each implementation: the host name it is reached on, its worker options,
 * the files workerd loads; `control`: not a peer, no target is taken against
 * it; `sameScriptAs`: it runs that implementation's script (no cold start of
 * its own).
 */
const IMPLS = {
  "oncekey-rust": {
    host: "oncekey-rust.bench",
    worker: () => benchOncekey("oncekey-rust", RUST),
    files: () => [join(RUST.build, "index.js"), join(RUST.build, "index_bg.wasm")],
  },
  "oncekey-js": {
    host: "oncekey-js.bench",
    worker: () => benchOncekey("oncekey-js", JS),
    files: () => modulesOf(JS.build),
  },
  plain: { host: "plain.bench", worker: () => peer("plain"), files: () => [join(ROOT, "build", "bench", "plain.js")] },
  "plain-fetch": {
    host: "plain-fetch.bench",
    worker: () => peer("plain-fetch", { script: "plain", bindings: { TRANSPORT: "fetch" } }),
    files: () => [join(ROOT, "build", "bench", "plain.js")],
  },
  "do-only": {
    host: "do-only.bench",
    worker: () => peer("do-only", { kv: false }),
    files: () => [join(ROOT, "build", "bench", "do-only.js")],
  },
  powertools: {
    host: "powertools.bench",
    worker: () => peer("powertools", { flags: ["nodejs_compat"], coordinator: false }),
    files: () => [join(ROOT, "build", "bench", "powertools.js")],
  },
  // hono-idempotency on a Durable Object (bench/peers/hono-do.ts), the peer
  // issue 35 names; present only when `make bench-peers` could build it.
  ...(existsSync(HONO_DO)
    ? {
        "hono-do": {
          host: "hono-do.bench",
          worker: () => honoDoWorker("hono-do"),
          files: () => [HONO_DO],
        },
        // hono-do with the expiry alarm SPEC §4 asks for (set in `lock`):
        // hono-do doing that part of oncekey's storage work.
        "hono-do-expiry": {
          host: "hono-do-expiry.bench",
          worker: () => honoDoWorker("hono-do-expiry", { expiry: true }),
          files: () => [HONO_DO],
          control: true,
          sameScriptAs: "hono-do",
        },
      }
    : {}),
  // The JavaScript host as a user without KV copies configures it: the same
  // storage work as do-only, so the two compare like for like.
  "oncekey-js-kv-off": { ...kvOff("oncekey-js", JS), control: true, sameScriptAs: "oncekey-js" },
  // The Rust host without KV copies (only in BENCH_QUIET=rust): do-only-rs's
  // storage work.
  "oncekey-rust-kv-off": { ...kvOff("oncekey-rust", RUST), control: true, sameScriptAs: "oncekey-rust" },
  // Controls, not peers. A second do-only worker, the same script under
  // another name: how far two identical workers' figures differ in one
  // run, the noise every ratio here carries.
  "do-only-twin": {
    host: "do-only-twin.bench",
    worker: () => peer("do-only-twin", { kv: false, script: "do-only" }),
    files: () => [join(ROOT, "build", "bench", "do-only.js")],
    control: true,
    sameScriptAs: "do-only",
  },
  // do-only written with workers-rs (bench/peers/do-only-rs): the Rust
  // host's like-for-like control, what the framework charges for the same
  // work (its wasm, its glue, an object reached through fetch).
  "do-only-rs": {
    host: "do-only-rs.bench",
    worker: () => doOnlyRsWorker("do-only-rs"),
    files: () => modulesOf(DO_ONLY_RS),
    control: true,
  },
  // The platform's floor (bench/peers/floor.ts): only what any design
  // with a Durable Object per key pays.
  floor: {
    host: "floor.bench",
    worker: () => peer("floor", { kv: false }),
    files: () => [join(ROOT, "build", "bench", "floor.js")],
    control: true,
  },
  // The floor and a KV copy of each first execution's answer after the
  // caller has it: what the platform charges for the copy SPEC §4 keeps by
  // default, to set beside oncekey-js as the floor is set beside kv-off.
  "floor-kv": {
    host: "floor-kv.bench",
    worker: () => peer("floor-kv", { script: "floor", bindings: { KV_COPY: "1" } }),
    files: () => [join(ROOT, "build", "bench", "floor.js")],
    control: true,
    sameScriptAs: "floor",
  },
};
/**
 * Controls of the cold start alone. do-only-wasm: do-only holding
 * oncekey/proxy's wasm, instantiated at load and never called
 * (bench/peers/do-only-wasm.ts): the platform's charge for a module of that
 * size, apart from running it.
 */
const COLD_CONTROLS = {
  // The JavaScript host with KV copies off: its first request without the
  // first KV write an isolate makes (which runs after the answer).
  "oncekey-js-kv-off": kvOff("oncekey-js", JS),
  // do-only with the runtime machinery a layer with deadlines uses
  // (bench/peers/do-only-deadlines.ts): timers raced against the store and
  // origin calls, an AbortController cut by the caller's signal, bodies read
  // through readers, the answer streamed before finish.
  "do-only-deadlines": {
    worker: () => peer("do-only-deadlines", { kv: false }),
    host: "do-only-deadlines.bench",
    files: () => [join(ROOT, "build", "bench", "do-only-deadlines.js")],
  },
  "do-only-wasm": {
    worker: () => ({
      ...peer("do-only-wasm", { kv: false }),
      modulesRoot: join(ROOT, "build", "bench"),
      modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    }),
    host: "do-only-wasm.bench",
    files: () => [
      join(ROOT, "build", "bench", "do-only-wasm.js"),
      join(ROOT, "build", "bench", "oncekey_proxy_bg.wasm"),
    ],
  },
};
/**
 * A build of one of the hosts named on the command line (`name=dir`: the
 * JavaScript host's settings over another build directory, an index.js and
 * its wasm as build/proxy-js holds them; `name=rust:dir`: the Rust host's,
 * over a worker-build output), as an implementation: an A/B of a change.
 */
const buildOf = (pair) => {
  const { name, build, worker } = namedBuild(pair);
  return [name, { host: `${name}.bench`, worker, files: () => modulesOf(build) }];
};
// BENCH_COLD_BUILDS=name=dir,...: more cold-start controls.
for (const pair of process.env.BENCH_COLD_BUILDS?.split(",") ?? []) {
  const [name, impl] = buildOf(pair);
  COLD_CONTROLS[name] = impl;
}
// BENCH_BUILDS=name=dir,...: more steady-state controls, in every run
// including the quiet ones, beside the peers.
const EXTRA_BUILDS = [];
for (const pair of process.env.BENCH_BUILDS?.split(",") ?? []) {
  const [name, impl] = buildOf(pair);
  IMPLS[name] = { ...impl, control: true };
  EXTRA_BUILDS.push(name);
}
/** A cold start's implementation or control, by name. */
const coldImpl = (name) => IMPLS[name] ?? COLD_CONTROLS[name];
// BENCH_QUIET=1: the production proxy (default, and KV copies off) and
// do-only alone in one workerd. Nine workers busy in one process blur the
// smaller differences (the twin shows how much); three blur them less.
// BENCH_QUIET=rust: the same for the Rust host, beside do-only in Rust.
// BENCH_QUIET=peer: both hosts beside hono-do and the do-only controls, the
// side-by-side issue 35 sets its targets in. BENCH_QUIET=peer-js: the
// JavaScript host beside hono-do and hono-do-expiry alone, three workers,
// for the least noise on the JavaScript host's targets.
const PEER_JS = process.env.BENCH_QUIET === "peer-js";
const QUIET_PEER = process.env.BENCH_QUIET === "peer" || PEER_JS;
const QUIET = process.env.BENCH_QUIET === "1" || process.env.BENCH_QUIET === "rust" || QUIET_PEER;
const QUIET_RUST = process.env.BENCH_QUIET === "rust";
if (QUIET_PEER && !IMPLS["hono-do"]) {
  console.log(
    `BENCH_QUIET=${process.env.BENCH_QUIET}: skipped, no ${HONO_DO} (bench/peers/hono-idempotency.sh found no source)`,
  );
  process.exit(0);
}
const QUIET_IMPLS = PEER_JS
  ? ["oncekey-js", "hono-do", "hono-do-expiry"]
  : QUIET_PEER
    ? ["oncekey-js", "oncekey-js-kv-off", "oncekey-rust", "hono-do", "hono-do-expiry", "do-only", "do-only-rs"]
    : QUIET_RUST
      ? ["oncekey-rust", "oncekey-rust-kv-off", "do-only-rs", "do-only", "floor", "floor-kv"]
      : ["oncekey-js", "oncekey-js-kv-off", "do-only", "floor", "floor-kv"];
QUIET_IMPLS.push(...EXTRA_BUILDS);
// Only the Rust quiet run holds the Rust host without KV copies.
if (!QUIET_RUST) delete IMPLS["oncekey-rust-kv-off"];
const ALL_IMPLS_COUNT = Object.keys(IMPLS).length;
if (QUIET) for (const impl of Object.keys(IMPLS)) if (!QUIET_IMPLS.includes(impl)) delete IMPLS[impl];
const HOSTS = ["oncekey-rust", "oncekey-js"].filter((host) => host in IMPLS);
/** The peers of the CPU target: every correct design that is not oncekey, and not a control. */
const PEERS = Object.keys(IMPLS).filter((impl) => !HOSTS.includes(impl) && !IMPLS[impl].control);

const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
const load = (l) => l.map((x) => x.toFixed(1)).join(" ");
const check = (ok) => (ok ? "met" : "**missed**");
const PATH_NAMES = { baseline: "pass-through", first: "first execution", replay: "replay" };

// ---- Steady state: every implementation in one workerd ----------------------

async function steady() {
  const loadStart = loadavg();
  // Every worker reached by its route (MF-Original-URL); the runtime's
  // stdout (a log line per decision) printed as it comes.
  const mf = new Miniflare({ workers: [...Object.values(IMPLS).map((impl) => impl.worker()), originWorker] });
  const worker = { url: await mf.ready, dispose: () => mf.dispose() };

  // workerd's CPU time (ms) in user and in system (kernel) mode, summed
  // over Miniflare's children.
  const children = execSync(`pgrep -P ${process.pid}`).toString().trim().split("\n");
  const TICK_MS = 1000 / Number(execSync("getconf CLK_TCK").toString().trim());
  function workerdCpuMs() {
    let user = 0;
    let system = 0;
    for (const pid of children) {
      try {
        const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
        user += Number(fields[11]) * TICK_MS;
        system += Number(fields[12]) * TICK_MS;
      } catch {
        // not running any more
      }
    }
    return { user, system };
  }
  const post = (impl, item, key) => postTo(worker.url, IMPLS[impl].host, item, key);

  /** Runs `count` requests with `inFlight` at a time; returns latencies, wall and CPU time. */
  async function run(count, request, inFlight = CONCURRENCY) {
    const results = [];
    let next = 0;
    const cpuStarted = workerdCpuMs();
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < count) results.push(await request(next++));
      }),
    );
    const cpuEnded = workerdCpuMs();
    const userMs = cpuEnded.user - cpuStarted.user;
    const cpuMs = userMs + cpuEnded.system - cpuStarted.system;
    return { results, seconds: Number(process.hrtime.bigint() - started) / 1e9, cpuMs, userMs };
  }

  // Completed keys for the replay paths: the answer of each is kept, so the
  // check below can tell a replay from a new execution on every peer.
  const replayKeys = {};
  const firstAnswer = {};
  for (const impl of Object.keys(IMPLS)) {
    replayKeys[impl] = Array.from({ length: 100 }, () => randomUUID());
    for (const key of replayKeys[impl]) firstAnswer[key] = (await post(impl, `replay-${randomUUID()}`, key)).text;
  }
  // The KV copies land after the answers: plain's and powertools' replays
  // read them; oncekey's and do-only's replays ask the object.
  await new Promise((r) => setTimeout(r, 300));

  const PATHS = {
    baseline: (impl, item) => post(impl, item),
    // The same body as the request that completed the key.
    replay: (impl, _item, i) => {
      const key = replayKeys[impl][i % replayKeys[impl].length];
      return post(impl, JSON.parse(firstAnswer[key]).item, key).then((r) => ({ ...r, key }));
    },
    first: (impl, item) => post(impl, item, randomUUID()),
  };

  const series = [];
  for (const impl of Object.keys(IMPLS)) for (const path of Object.keys(PATHS)) series.push({ impl, path, parts: [] });

  // Items are fresh per round and series: each Orders object stays small, so
  // the origin costs the same in every round.
  const itemsFor = (tag) => Array.from({ length: 16 }, (_, i) => `${tag}-${i}-${randomUUID().slice(0, 6)}`);
  for (const s of series) {
    const items = itemsFor(`warm-${s.impl}-${s.path}`);
    await run(WARMUP, (i) => PATHS[s.path](s.impl, items[i % items.length], i));
  }
  const perRound = Math.ceil(REQUESTS / ROUNDS);
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of shuffled(series, round)) {
      const items = itemsFor(`${s.impl}-${s.path}-${round}`);
      await settle();
      s.parts.push(await run(perRound, (i) => PATHS[s.path](s.impl, items[i % items.length], i)));
    }
  }
  const loadEnd = loadavg();
  // Then one request at a time: nothing queues for the machine's two cores,
  // so a p50 is the path's own latency rather than its CPU cost shared out
  // over the cores (with 4 in flight, Little's law makes p50 follow req/s).
  const sequential = [];
  for (const impl of Object.keys(IMPLS))
    for (const path of ["baseline", "first"]) sequential.push({ impl, path, parts: [] });
  const seqPerRound = Math.ceil(SEQ_REQUESTS / SEQ_ROUNDS);
  for (let round = 0; SEQ_REQUESTS > 0 && round < SEQ_ROUNDS; round++) {
    for (const s of shuffled(sequential, round)) {
      const items = itemsFor(`seq-${s.impl}-${s.path}-${round}`);
      await settle();
      s.parts.push(await run(seqPerRound, (i) => PATHS[s.path](s.impl, items[i % items.length], i), 1));
    }
  }
  await worker.dispose();

  const byImpl = (all, into) => {
    for (const s of all) {
      into[s.impl] ??= {};
      into[s.impl][s.path] = summary(s.parts);
    }
    return into;
  };
  const results = byImpl(series, {});
  const oneInFlight = byImpl(sequential, {});

  for (const [impl, paths] of Object.entries(results)) {
    for (const [path, r] of Object.entries(paths)) {
      const bad = Object.keys(r.statuses).filter((s) => s !== "201");
      if (bad.length) throw new Error(`${impl} ${path}: unexpected statuses ${JSON.stringify(r.statuses)}`);
    }
    const notReplayed = paths.replay.all.filter((r) => r.text !== firstAnswer[r.key]).length;
    if (notReplayed) throw new Error(`${impl}: ${notReplayed} replay-path answers were new executions`);
  }
  for (const [impl, paths] of Object.entries(oneInFlight)) {
    for (const [path, r] of Object.entries(paths)) {
      const bad = Object.keys(r.statuses).filter((s) => s !== "201");
      if (bad.length)
        throw new Error(`${impl} ${path}, one in flight: unexpected statuses ${JSON.stringify(r.statuses)}`);
    }
  }
  for (const host of HOSTS) {
    const unmarked = results[host].replay.all.filter((r) => r.replayed !== "true").length;
    if (unmarked) throw new Error(`${unmarked} ${host} replays lack Idempotent-Replayed`);
  }
  return { results, oneInFlight, loadStart, loadEnd, seriesCount: series.length };
}

function summary(parts) {
  const all = parts.flatMap((p) => p.results);
  const seconds = parts.reduce((s, p) => s + p.seconds, 0);
  const cpuPerRequest = parts.reduce((s, p) => s + p.cpuMs, 0) / all.length;
  const sorted = all.map((r) => r.ms).sort((a, b) => a - b);
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  const statuses = {};
  for (const r of all) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  // Each round's CPU per request: ratios between series are taken round by
  // round too, so their spread shows how far one run's ratio can be trusted.
  const roundCpu = parts.map((p) => p.cpuMs / p.results.length);
  // The same in user mode only: without the kernel's file work for the
  // SQLite file local workerd makes for each new object (see peerSection).
  const user = { cpu: parts.reduce((s, p) => s + p.userMs, 0) / all.length };
  user.roundCpu = parts.map((p) => p.userMs / p.results.length);
  return { rps: all.length / seconds, p50: pct(50), p99: pct(99), cpu: cpuPerRequest, roundCpu, user, statuses, all };
}

/**
 * A pause before each series, so the work the last one left under
 * `waitUntil` (KV copies, finishes) and its storage flushes are not
 * counted against the next.
 */
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

/** `a`'s CPU per request over `b`'s, overall and the lowest and highest round's. */
function cpuRatio(a, b) {
  const rounds = a.roundCpu.map((x, i) => x / b.roundCpu[i]);
  return { all: a.cpu / b.cpu, low: Math.min(...rounds), high: Math.max(...rounds) };
}
const ratioText = ({ all, low, high }) => `${f2(all)}× (rounds ${f2(low)}–${f2(high)})`;

// ---- Cold start: a fresh workerd per sample ------------------------------------
//
// For each implementation, COLD_RUNS times (the implementations interleaved,
// the order rotated each run): a new Miniflare holding just that worker and
// the origin worker; `mf.ready` timed (workerd spawned, its config loaded:
// every script compiled and its top-level code run, the wasm modules
// compiled); then one request straight to the origin worker, so the origin's
// own first-request cost is not counted against the layer; then the first
// request to the implementation, a first execution on a new key (its isolate
// has served nothing yet: the handler's code, the wasm functions V8 compiles
// lazily, the coordinator class's first object, the first KV and SQLite
// access all land on it), then a second one, also a new key (warm, for
// comparison). Latency is wall time at the client over loopback; CPU is
// workerd's, all threads, from /proc/<pid>/task/*/schedstat (nanoseconds;
// /proc's tick counts are too coarse for one request). "origin alone" is the
// same fresh workerd with the origin worker only: the share of `mf.ready`
// that is not the layer's, and the origin's own cold first request.

async function coldSample(impl) {
  const workers =
    impl === null
      ? [{ ...originWorker, routes: ["origin.bench/*"] }]
      : [coldImpl(impl).worker(), { ...originWorker, routes: ["origin.bench/*"] }];
  const started = process.hrtime.bigint();
  const mf = new Miniflare({
    workers,
    handleRuntimeStdio: (out, err) => {
      out.resume();
      err.on("data", (d) => process.stderr.write(d));
    },
  });
  try {
    const url = await mf.ready;
    const readyMs = Number(process.hrtime.bigint() - started) / 1e6;
    const pid = workerdPid();
    const startupCpu = threadsCpuMs(pid);
    const item = () => `cold-${randomUUID().slice(0, 8)}`;
    let cpu = threadsCpuMs(pid);
    const originFirst = await postTo(url, "origin.bench", item());
    const originCpu = threadsCpuMs(pid) - cpu;
    const sample = { readyMs, startupCpu, originFirstMs: originFirst.ms, originFirstCpu: originCpu };
    if (originFirst.status !== 201) throw new Error(`cold start: origin answered ${originFirst.status}`);
    if (impl === null) return sample;
    cpu = threadsCpuMs(pid);
    // BENCH_COLD_KEYLESS=1: requests with no key (each layer's pass-through), for an A/B.
    const key = () => (process.env.BENCH_COLD_KEYLESS === "1" ? undefined : randomUUID());
    // Each request's CPU to its answer, then with what it runs after the
    // answer (`finish`, the KV copy, the log line: SETTLE_MS later), so the
    // second request starts on a quiet isolate and no layer's work after
    // its answer is left uncounted.
    const timed = async () => {
      const started = threadsCpuMs(pid);
      const answer = await postTo(url, coldImpl(impl).host, item(), key());
      const cpu = threadsCpuMs(pid) - started;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      if (answer.status !== 201) throw new Error(`cold start: ${impl} answered ${answer.status}: ${answer.text}`);
      return { ms: answer.ms, cpu, allCpu: threadsCpuMs(pid) - started };
    };
    const first = await timed();
    const second = await timed();
    return {
      ...sample,
      firstMs: first.ms,
      firstCpu: first.cpu,
      firstAllCpu: first.allCpu,
      secondMs: second.ms,
      secondCpu: second.cpu,
      secondAllCpu: second.allCpu,
    };
  } finally {
    await mf.dispose();
  }
}

async function coldStart() {
  const loadStart = loadavg();
  // The controls that run another worker's script have no cold start of their own.
  // BENCH_COLD_IMPLS=a,b: only those (and "origin alone"), for an A/B.
  const only = process.env.BENCH_COLD_IMPLS?.split(",");
  const names = [...Object.keys(IMPLS).filter((impl) => !IMPLS[impl].sameScriptAs), ...Object.keys(COLD_CONTROLS)]
    .filter((impl) => !only || only.includes(impl))
    .concat([null]);
  const samples = new Map(names.map((n) => [n, []]));
  for (let run = 0; run < COLD_RUNS; run++) {
    const order = names.map((_, i) => names[(i + run) % names.length]);
    for (const impl of order) samples.get(impl).push(await coldSample(impl));
  }
  return { samples, loadStart, loadEnd: loadavg() };
}

/** Raw and gzip -9 size of `files` concatenated. */
function sizes(files) {
  const bytes = Buffer.concat(files.map((f) => readFileSync(f)));
  return { raw: bytes.length, gz: gzipSync(bytes, { level: 9 }).length };
}

/**
 * Each oncekey host's first answer and first-request CPU as multiples of
 * do-only's (medians); the Rust host's also of do-only-rs's, the same
 * design in the same framework, and do-only-rs's of do-only's: what
 * workers-rs alone charges.
 */
function coldRatios({ samples }) {
  const of = (list, k) => median(list.map((s) => s[k]));
  const pairs = [
    ["oncekey-js", "do-only"],
    ["oncekey-rust", "do-only"],
    ["oncekey-rust", "do-only-rs"],
    ["do-only-rs", "do-only"],
  ].filter(([impl, base]) => samples.has(impl) && samples.has(base));
  if (pairs.length === 0) return "";
  const lines = pairs.map(([impl, base]) => {
    const ratio = (k) => `${(of(samples.get(impl), k) / of(samples.get(base), k)).toFixed(2)}×`;
    return `- **${impl}** ÷ ${base}: first answer ${ratio("firstMs")}, its CPU to the answer ${ratio("firstCpu")}, with the work after it ${ratio("firstAllCpu")}.`;
  });
  return `First request against do-only's (target: first answer ≤ 1.5×), and the Rust host against do-only in Rust:\n${lines.join("\n")}`;
}

function coldTable({ samples }) {
  const stat = (xs, f = f1) => `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
  const rows = [];
  for (const [impl, list] of samples) {
    const pick = (k) => list.map((s) => s[k]);
    if (impl === null) {
      rows.push(
        `| origin alone (reference) | — | ${stat(pick("readyMs"), (x) => x.toFixed(0))} | ${stat(pick("startupCpu"), (x) => x.toFixed(0))} | origin's own: ${stat(pick("originFirstMs"))} | ${stat(pick("originFirstCpu"))} | — | — | — | — |`,
      );
      continue;
    }
    const { raw, gz } = sizes(coldImpl(impl).files());
    rows.push(
      `| ${impl} | ${f1(raw / 1024)} / ${f1(gz / 1024)} | ${stat(pick("readyMs"), (x) => x.toFixed(0))} | ${stat(pick("startupCpu"), (x) => x.toFixed(0))} | ${stat(pick("firstMs"))} | ${stat(pick("firstCpu"))} | ${stat(pick("firstAllCpu"))} | ${stat(pick("secondMs"))} | ${stat(pick("secondCpu"))} | ${stat(pick("secondAllCpu"))} |`,
    );
  }
  return `| worker | script KB raw / gzip | \`mf.ready\` ms | workerd CPU to ready, ms | first request ms | its workerd CPU to the answer, ms | with the work after it, ms | second request ms | its CPU to the answer, ms | with the work after it, ms |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}`;
}

// ---- Run ---------------------------------------------------------------------

if (COLD_ONLY) {
  const cold = await coldStart();
  console.log(
    `cold start, ${COLD_RUNS} runs, load ${load(cold.loadStart)} → ${load(cold.loadEnd)}\n${coldTable(cold)}\n\n${coldRatios(cold)}`,
  );
  process.exit(0);
}

const { results, oneInFlight, loadStart, loadEnd, seriesCount } = await steady();
if (QUIET) {
  const [name, quiet] = QUIET_PEER
    ? [PEER_JS ? "edge-peer-js" : "edge-peer", peerSection()]
    : QUIET_RUST
      ? ["edge-quiet-rust", quietRustSection()]
      : ["edge-quiet", quietSection()];
  writeSection(name, quiet);
  if (EXTRA_BUILDS.length > 0) console.log(everyWorkerTable());
  console.log(quiet);
  process.exit(0);
}
const cold = COLD_RUNS > 0 ? await coldStart() : null;

// The deployable bundles, as `wrangler deploy --dry-run` writes them: the
// root config (the JavaScript host; `make deploy-dry-run`, also what `make
// build-proxy-js` puts in build/proxy-js) and the Rust host's config.
execSync("make --no-print-directory deploy-dry-run", { cwd: ROOT, stdio: "ignore" });
// (an --outdir relative to the cwd would be read from the config's folder)
execSync(
  `rm -rf build/deploy-rust && wrangler deploy --dry-run --config workers/proxy/wrangler.toml --outdir ${join(ROOT, "build", "deploy-rust")}`,
  {
    cwd: ROOT,
    stdio: "ignore",
  },
);
const jsFiles = modulesOf(join(ROOT, "build", "deploy"));
const rustFiles = modulesOf(join(ROOT, "build", "deploy-rust"));
const jsBundle = sizes(jsFiles);
if (jsFiles.length === 0 || rustFiles.length === 0)
  throw new Error("a dry-run bundle is empty (build/deploy, build/deploy-rust)");
const rustBundle = sizes(rustFiles);
const baseName = (f) => f.split("/").pop();
const doOnlyRsBundle = sizes(IMPLS["do-only-rs"].files());

const cpu = cpus()[0]?.model ?? "unknown";
const nproc = execSync("nproc").toString().trim();
const rust = results["oncekey-rust"];
// Targets per oncekey host: replay and first execution p50 against its own
// pass-through; issue 11's CPU target, workerd CPU per request at or below
// every peer's on each path (ratios from this run).
const targetLines = HOSTS.map((host) => {
  const ours = results[host];
  const replayRatio = ours.replay.p50 / ours.baseline.p50;
  const firstRatio = ours.first.p50 / ours.baseline.p50;
  const seqRatio = oneInFlight[host].first.p50 / oneInFlight[host].baseline.p50;
  const cpuLines = ["baseline", "first", "replay"].map((path) => {
    const ratios = PEERS.map((impl) => `${impl} ${ratioText(cpuRatio(ours[path], results[impl][path]))}`);
    const ok = PEERS.every((impl) => ours[path].cpu <= results[impl][path].cpu);
    return `${PATH_NAMES[path]}: ${check(ok)} (${host} / ${ratios.join(", ")})`;
  });
  return `- **${host}**: replay p50 ≤ 1.5× its pass-through: ${check(replayRatio <= 1.5)} (${f2(replayRatio)}×); first execution p50 ≤ 3×: ${check(firstRatio <= 3)} with ${CONCURRENCY} in flight (${f2(firstRatio)}×), ${check(seqRatio <= 3)} with one (${f2(seqRatio)}×).
  Workerd CPU per request at or below every peer's: ${cpuLines.join("; ")}.`;
});
// What the ratios can be trusted to: the twin against do-only (the same
// script); oncekey without KV copies against do-only (the same storage
// work); and everything against the platform's floor.
const twinRows = ["baseline", "replay", "first"].map((path) => {
  const twin = results["do-only-twin"][path];
  const base = results["do-only"][path];
  const ratio = (a, b) => ratioText(cpuRatio(results[a][path], results[b][path]));
  return `| ${PATH_NAMES[path]} | ${ratioText(cpuRatio(twin, base))} | ${f2(twin.p50 / base.p50)} | ${ratio("oncekey-js-kv-off", "do-only")} | ${ratio("oncekey-js", "oncekey-js-kv-off")} | ${ratio("floor-kv", "floor")} | ${ratio("oncekey-js-kv-off", "floor")} | ${ratio("oncekey-js", "floor-kv")} |`;
});
const floorRows = Object.keys(IMPLS).map((impl) => {
  const r = results[impl];
  const floor = results.floor;
  const above = (path) => f2(r[path].cpu - floor[path].cpu);
  const seq = oneInFlight[impl];
  return `| ${impl} | ${above("baseline")} | ${above("replay")} | ${above("first")} | ${f2(r.first.cpu / r.baseline.cpu)} | ${f2(r.baseline.rps / r.first.rps)} | ${f2(r.first.p50 / r.baseline.p50)} | ${f2(seq.baseline.p50)} | ${f2(seq.first.p50)} | ${f2(seq.first.p50 / seq.baseline.p50)} | ${f2(seq.first.p50 - seq.baseline.p50)} |`;
});
// The two hosts against each other, per path.
const hostRows = ["baseline", "replay", "first"].map((path) => {
  const r = results["oncekey-rust"][path];
  const j = results["oncekey-js"][path];
  const cpuRatio = j.cpu / r.cpu;
  const faster =
    cpuRatio < 1
      ? `oncekey-js, ${f1((1 - cpuRatio) * 100)} % less CPU`
      : `oncekey-rust, ${f1((1 - 1 / cpuRatio) * 100)} % less CPU`;
  return `| ${PATH_NAMES[path]} | ${f2(r.cpu)} | ${f2(j.cpu)} | ${f2(cpuRatio)} | ${f2(r.p50)} | ${f2(j.p50)} | ${f2(j.p50 / r.p50)} | ${faster} |`;
});
// The Rust host beside do-only in Rust (a control): the same framework
// doing do-only's work, so what is left is the layer's own.
const rustRows = ["baseline", "replay", "first"].map((path) => {
  const ours = results["oncekey-rust"][path];
  const control = results["do-only-rs"][path];
  return `| ${PATH_NAMES[path]} | ${f2(ours.cpu)} | ${f2(control.cpu)} | ${ratioText(cpuRatio(ours, control))} | ${ratioText(cpuRatio(control, results["do-only"][path]))} | ${f2(ours.p50 / control.p50)} |`;
});
const BUNDLE_TARGET_KB = 100;
const rows = [];
for (const [impl, paths] of Object.entries(results)) {
  for (const [path, r] of Object.entries(paths)) {
    const own = r.p50 / paths.baseline.p50;
    rows.push(
      `| ${impl} | ${path === "first" ? "first execution" : path} | ${f1(r.rps)} | ${f2(r.p50)} | ${f2(r.p99)} | ${f2(own)} | ${f2(r.p50 / rust[path].p50)} | ${f2(r.p50 / results["oncekey-js"][path].p50)} | ${f2(r.cpu)} | ${f2(r.cpu / paths.baseline.cpu)} | ${f2(r.cpu - paths.baseline.cpu)} |`,
    );
  }
}
const miniflareVersion = JSON.parse(
  readFileSync(join(ROOT, "node_modules", "miniflare", "package.json"), "utf8"),
).version;
const powertoolsVersion = JSON.parse(
  readFileSync(join(ROOT, "node_modules", "@aws-lambda-powertools", "idempotency", "package.json"), "utf8"),
).version;
const coldSection =
  cold === null
    ? "Cold start: not measured (`BENCH_COLD_RUNS=0`).\n"
    : `### Cold start

${COLD_RUNS} fresh workerd processes per implementation (the implementations interleaved, the order rotated per run),
load average ${load(cold.loadStart)} → ${load(cold.loadEnd)}. Each: a new Miniflare holding just that worker and the
origin worker; \`mf.ready\` timed (Miniflare spawns workerd, which loads its config: compiles every script, runs its
top-level code, compiles the wasm module); one order straight to the origin worker, so its own first request is not
counted against the layer; then the implementation's **first request** (a first execution on a new key, in an
isolate that has served nothing: its handler's first run, the wasm functions V8 compiles on their first call, the first
coordinator object, the first KV and SQLite access), then, ${SETTLE_MS} ms later, a second one (also a new key: warm, for
comparison). Each request's CPU is taken twice: when its answer is in, and ${SETTLE_MS} ms later, with what the layer
runs after the answer (oncekey's \`finish\`, KV copy and log line; do-only and the floor finish before answering).
Median (min–max). Latency is wall time at the client over loopback; CPU is workerd's, all threads, from
\`/proc/<pid>/task/*/schedstat\`. Script: what workerd loads for the worker (oncekey-js: \`build/proxy-js\`'s
\`index.js\` and wasm; oncekey-rust: \`build/proxy\`'s \`index.js\` + \`index_bg.wasm\`; peers: their esbuild bundle).

${coldTable(cold)}

${coldRatios(cold)}

Local workerd, not Cloudflare's edge: there the platform loads the script (from a cache) and runs its top level
while the TLS handshake is under way, so a client mostly sees the first-request column, not \`mf.ready\`; and
Miniflare's own start-up (a Node-side config, a workerd spawn, its entry worker) is in every \`mf.ready\` here, as the
"origin alone" row shows.
`;

const section = `<!-- edge:start -->
## Edge worker, against peers

Command: \`make bench-edge\` (part of \`make bench\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.
Machine: ${nproc} cores (\`nproc\`), ${cpu}; Node ${process.version}; load average (1, 5, 15 min)
${load(loadStart)} at the start and ${load(loadEnd)} at the end of the steady-state run (the machine is shared with other builds and
tests, so absolute figures move from run to run; compare the ratios, which come from one run).
Runtime: one workerd through Miniflare ${miniflareVersion} holding the ${Object.keys(IMPLS).length} workers and their origin, each
with its own local KV namespace (do-only: none) and SQLite-backed Durable Objects; Node's fetch (undici, keep-alive) over loopback;
${CONCURRENCY} requests in flight; ${REQUESTS} measured requests per series after ${WARMUP} warm-up requests,
the ${seriesCount} series interleaved in ${ROUNDS} rounds, in a fresh (seeded) order each round, each after a ${SETTLE_MS} ms pause
so that what the last series left under \`waitUntil\` is not counted against it.
Route: \`POST /api/orders\` on one origin worker they all share (\`bench/peers/origin-worker.ts\`: the
demo origin of SPEC §7 in TypeScript; every execution writes an order to an Orders Durable Object),
reached the way a proxy reaches a real origin: a fetch to \`ORIGIN_URL\` (oncekey's proxy mode, as
deployed; the peers through \`bench/peers/proxy.ts\`), which Miniflare's \`outboundService\` routes
to the origin worker. Same origin, same hop: the differences are the layers'.

- **oncekey-js**: the production proxy as the root \`wrangler.toml\` deploys it, on the JavaScript host: the npm
  package's \`proxy()\` and its \`IdempotencyCoordinator\` (JavaScript, reached over RPC) over the core's wasm
  (\`make build-proxy-js\`: \`build/proxy-js\`, what \`wrangler deploy\` uploads), default settings
  (\`IDEMPOTENCY_KV_REPLAY=fallback\`: no KV read on a first execution, a replay answered by the object;
  KV copies written after the answer and read only when the object fails), \`ORIGIN_URL\` set.
- **oncekey-rust**: the same proxy on the Rust host (workers-rs, its coordinator reached through \`fetch\`;
  \`make build-proxy\`: \`build/proxy\`, deployed by \`workers/proxy/wrangler.toml\`), the same [vars] and \`ORIGIN_URL\`.
- **plain**: \`bench/peers/plain.ts\`, SPEC §3–4 in TypeScript as a competent user would write it
  (KV read first, one Durable Object \`begin\` over RPC, origin and \`finish\` under \`waitUntil\`, KV copy;
  JSON records; one log line per decision), built with esbuild.
- **plain-fetch**: the same worker calling the object through its \`fetch\` handler with JSON bodies
  (the transport oncekey-rust uses) instead of RPC.
- **do-only**: \`bench/peers/do-only.ts\`, the lightest correct design a user would write: one Durable
  Object per key over RPC (\`begin\` locks or answers, origin, \`finish\` stores), no KV at all; the same
  rules, records and log line as plain, built with esbuild.
- **powertools**: \`@aws-lambda-powertools/idempotency\` ${powertoolsVersion} with its defaults, keyed on the
  \`Idempotency-Key\` header (\`eventKeyJmesPath\`), over a KV persistence layer
  (\`bench/peers/kv-persistence.ts\`; KV has no conditional write, so its "put if absent" is a read and
  a write and two concurrent duplicates can both run: faster, not the same guarantee).

| worker | path | req/s | p50 ms | p99 ms | p50 / own baseline | p50 / oncekey-rust's | p50 / oncekey-js's | workerd CPU ms / req | CPU / own baseline | CPU − own baseline, ms |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}

Paths: **baseline** no key, passed through to the origin (the pass-through); **replay** a key already
completed, sent again with the same body (oncekey and do-only: answered by the key's object, one \`begin\`
round trip; plain and plain-fetch: from the KV copy they read first; powertools: from KV); **first
execution** a new key each time (oncekey and do-only: object \`begin\`, origin, \`finish\`, no KV operation
before the answer, then oncekey's KV copy; plain: KV read, \`begin\`, origin, \`finish\`, KV copy;
powertools: KV read, KV write, origin, KV write). *workerd CPU* is the CPU time of the workerd process
(all threads: the workers, KV, Durable Object storage, Miniflare's entry worker) per request of the series;
its difference from the same worker's baseline is what the layer adds to a pass-through of the same request.

Targets (each oncekey host; p50 against its own baseline, CPU against the four peers):
${targetLines.join("\n")}

### Noise, like for like, and the platform's floor

Five controls ran in the same workerd, interleaved with the rest. They are not peers, and no target is
taken against them:
- **do-only-twin** runs the do-only script again under another name. It is the same code, so its ratios to
  do-only are the run's noise.
- **oncekey-js-kv-off** is the production proxy with \`IDEMPOTENCY_KV_REPLAY=off\`. It does the same storage
  work as do-only: no KV at all.
- **floor** (\`bench/peers/floor.ts\`) does only what any design with a Durable Object per key must pay. A first
  execution makes a new object, one storage read, one write with its expiry alarm, the origin, one more write,
  and two RPC round trips. There is no validation, no fingerprint, no lease and no log line: it is not a correct
  layer, only the platform's share.
- **floor-kv** is the floor plus a KV copy of each first execution's answer, written after the caller has it
  (\`ctx.waitUntil\`), as oncekey writes its copy by default (SPEC §4). It is the platform's charge for that copy,
  so oncekey-js compares to floor-kv as oncekey-js-kv-off compares to the floor.
- **do-only-rs** (\`bench/peers/do-only-rs\`) is do-only written with workers-rs, the framework the Rust host runs
  on: the Rust host's like-for-like control (its own table below).

CPU ratios per path. Each is the whole series' ratio, followed by the lowest and highest round's ratio; the
rounds ran interleaved, so the spread is how far one ratio from this run can be trusted.

| path | do-only-twin / do-only, CPU | its p50 ratio | oncekey-js-kv-off / do-only, CPU | oncekey-js / oncekey-js-kv-off, CPU (the KV copy) | floor-kv / floor, CPU (the platform's KV copy) | oncekey-js-kv-off / floor, CPU | oncekey-js / floor-kv, CPU |
|---|---|---:|---|---|---|---|---|
${twinRows.join("\n")}

Each worker against the floor and its own pass-through. *First / pass-through, req/s* is how many
pass-throughs the runtime serves for each first execution. With ${CONCURRENCY} requests in flight on ${nproc} cores,
workerd is busy throughout, so by Little's law the p50 ratio follows that throughput ratio, and with it the
CPU ratio, more than any round trip. The last three columns are the same two paths with one request in flight
(${SEQ_REQUESTS} requests a series in ${SEQ_ROUNDS} interleaved rounds), where nothing queues: there a first
execution costs its pass-through plus a fixed time (the last column), the objects' share; the ratio only
says how small the origin's own time is next to it (here the origin answers in about a millisecond; in front
of an origin that takes 50 ms, the same fixed time is a ratio near 1.1).

| worker | CPU ms above floor: pass-through | replay | first execution | first / pass-through, CPU | first / pass-through, req/s | first / pass-through, p50 (${CONCURRENCY} in flight) | pass-through p50 ms, 1 in flight | first execution p50 ms, 1 in flight | first / pass-through, p50 (1 in flight) | first − pass-through, p50 ms (1 in flight) |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${floorRows.join("\n")}

The two hosts, this run:

| path | CPU ms, rust | CPU ms, js | js / rust | p50 ms, rust | p50 ms, js | js / rust | less CPU |
|---|---:|---:|---:|---:|---:|---:|---|
${hostRows.join("\n")}

The Rust host beside **do-only-rs** (\`bench/peers/do-only-rs\`: do-only written with workers-rs, its object reached
through \`fetch\`, records through serde; a control, not a peer). What do-only-rs spends above do-only is what
workers-rs charges for the same work; what oncekey-rust spends above do-only-rs is the layer's own.

| path | oncekey-rust CPU ms | do-only-rs CPU ms | oncekey-rust / do-only-rs, CPU | do-only-rs / do-only, CPU | oncekey-rust / do-only-rs, p50 |
|---|---:|---:|---|---|---:|
${rustRows.join("\n")}

Bundle (gzip -9 of the files concatenated; target ≤ ${BUNDLE_TARGET_KB} KB):
- oncekey-js, \`make deploy-dry-run\` (the root \`wrangler.toml\`: \`wrangler deploy --dry-run --outdir build/deploy\`):
  ${jsFiles.map(baseName).join(", ")}: ${f1(jsBundle.raw / 1024)} KB raw, **${f1(jsBundle.gz / 1024)} KB gzip** (${check(jsBundle.gz <= BUNDLE_TARGET_KB * 1024)}).
- oncekey-rust, \`wrangler deploy --dry-run --config workers/proxy/wrangler.toml --outdir build/deploy-rust\`:
  ${rustFiles.map(baseName).join(", ")}: ${f1(rustBundle.raw / 1024)} KB raw, **${f1(rustBundle.gz / 1024)} KB gzip** (${check(rustBundle.gz <= BUNDLE_TARGET_KB * 1024)}).
- do-only-rs, for comparison (\`make bench-peers\`: \`build/bench/do-only-rs\`, worker-build with the proxy's size settings):
  ${f1(doOnlyRsBundle.raw / 1024)} KB raw, ${f1(doOnlyRsBundle.gz / 1024)} KB gzip.

${coldSection}
Local figures: workerd on loopback has no network latency, so the ratios show
each layer's own cost, not what a deployed worker sees (there a KV hit is
served from the colo, a DO call may cross regions).
<!-- edge:end -->
`;

writeSection("edge", section);
console.log(section);

/**
 * The BENCH_QUIET run's report: CPU per request and p50 per path, against
 * do-only and against the floor doing the same storage work (oncekey-js
 * against floor-kv, kv-off against floor).
 */
function quietSection() {
  const rows = ["baseline", "replay", "first"].map((path) => {
    const base = results["do-only"][path];
    const cells = [
      ["oncekey-js", "floor-kv"],
      ["oncekey-js-kv-off", "floor"],
    ].map(([impl, floor]) => {
      const r = results[impl][path];
      return `${f2(r.cpu)} | ${ratioText(cpuRatio(r, base))} | ${ratioText(cpuRatio(r, results[floor][path]))} | ${f2(r.p50)}`;
    });
    const cpuOf = (impl) => f2(results[impl][path].cpu);
    return `| ${PATH_NAMES[path]} | ${cells.join(" | ")} | ${cpuOf("do-only")} | ${f2(base.p50)} | ${cpuOf("floor")} | ${cpuOf("floor-kv")} |`;
  });
  return `<!-- edge-quiet:start -->
### Edge, quiet: the production proxy beside do-only and the floor

Command: \`BENCH_QUIET=1 node bench/edge.mjs\` (the second half of \`make bench-edge\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC,
load average ${load(loadStart)} → ${load(loadEnd)}. One workerd holding only oncekey-js (default settings),
oncekey-js-kv-off (\`IDEMPOTENCY_KV_REPLAY=off\`), do-only, floor, floor-kv and the origin; otherwise as above
(${CONCURRENCY} in flight, ${REQUESTS} requests a series in ${ROUNDS} rounds, ${seriesCount} series). With ${QUIET_IMPLS.length} workers rather
than ${ALL_IMPLS_COUNT} in the process, less of one series' background work lands on another's. Each oncekey row is set
beside the floor doing its storage work: oncekey-js (which writes the KV copy) beside floor-kv, kv-off beside floor.

| path | oncekey-js CPU ms | / do-only | / floor-kv | p50 ms | kv-off CPU ms | / do-only | / floor | p50 ms | do-only CPU ms | p50 ms | floor CPU ms | floor-kv CPU ms |
|---|---:|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|
${rows.join("\n")}

The KV copy's workerd CPU here is mostly Miniflare's KV simulator writing it to local disk, inside the same
workerd process; \`bench/profile.mjs\` shows what the worker's isolate itself spends on it (\`writeKv\`).
<!-- edge-quiet:end -->
`;
}

function quietRustSection() {
  const rows = ["baseline", "replay", "first"].map((path) => {
    const of = (impl) => results[impl][path];
    const ratio = (a, b) => ratioText(cpuRatio(of(a), of(b)));
    return `| ${PATH_NAMES[path]} | ${f2(of("oncekey-rust").cpu)} | ${ratio("oncekey-rust", "do-only-rs")} | ${ratio("oncekey-rust", "floor-kv")} | ${f2(of("oncekey-rust-kv-off").cpu)} | ${ratio("oncekey-rust-kv-off", "do-only-rs")} | ${f2(of("do-only-rs").cpu)} | ${ratio("do-only-rs", "do-only")} | ${ratio("oncekey-rust", "do-only")} | ${f2(of("oncekey-rust").p50)} | ${f2(of("do-only-rs").p50)} | ${f2(of("do-only").p50)} |`;
  });
  return `<!-- edge-quiet-rust:start -->
### Edge, quiet: the Rust host beside do-only in Rust

Command: \`BENCH_QUIET=rust node bench/edge.mjs\` (part of \`make bench-edge\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC,
load average ${load(loadStart)} → ${load(loadEnd)}. One workerd holding only oncekey-rust (default settings),
oncekey-rust-kv-off (\`IDEMPOTENCY_KV_REPLAY=off\`: do-only's storage work), do-only-rs (\`bench/peers/do-only-rs\`: do-only
written with workers-rs, its object reached through \`fetch\`), do-only, floor, floor-kv and the origin; otherwise as the
quiet run above (${CONCURRENCY} in flight, ${REQUESTS} requests a series in ${ROUNDS} rounds, ${seriesCount} series). do-only-rs ÷ do-only is what
workers-rs charges for the same work; oncekey-rust-kv-off ÷ do-only-rs is the Rust host's own share beside it.

| path | oncekey-rust CPU ms | / do-only-rs | / floor-kv | kv-off CPU ms | kv-off / do-only-rs | do-only-rs CPU ms | do-only-rs / do-only | oncekey-rust / do-only | p50 ms: oncekey-rust | do-only-rs | do-only |
|---|---:|---|---|---:|---|---:|---|---|---:|---:|---:|
${rows.join("\n")}
<!-- edge-quiet-rust:end -->
`;
}

/**
 * The BENCH_QUIET=peer run's report: each oncekey host's CPU and p50 as
 * multiples of hono-do's (issue 35's targets), do-only and do-only-rs as
 * controls.
 */
function peerSection() {
  const hono = results["hono-do"];
  const honoVersion = readFileSync(join(ROOT, "build", "bench", "hono-idempotency", "COMMIT"), "utf8").trim();
  const honoPackage = JSON.parse(
    readFileSync(join(ROOT, "build", "bench", "hono-idempotency", "package.json"), "utf8"),
  );
  const row = (impl, label) => {
    const r = results[impl];
    if (r === undefined) return undefined;
    const seq = oneInFlight[impl];
    const expiry = results["hono-do-expiry"];
    return `| ${label} | ${ratioText(cpuRatio(r.first, hono.first))} | ${ratioText(cpuRatio(r.replay, hono.replay))} | ${f2(r.first.p50 / hono.first.p50)}× | ${f2(r.replay.p50 / hono.replay.p50)}× | ${f2(seq.first.p50 / oneInFlight["hono-do"].first.p50)}× | ${ratioText(cpuRatio(r.first, expiry.first))} |`;
  };
  // The same CPU ratios in user mode only.
  const userRow = (impl, label) => {
    const r = results[impl];
    if (r === undefined) return undefined;
    const [first, replay, expiry] = [hono.first.user, hono.replay.user, results["hono-do-expiry"].first.user];
    return `| ${label} | ${ratioText(cpuRatio(r.first.user, first))} | ${ratioText(cpuRatio(r.replay.user, replay))} | ${ratioText(cpuRatio(r.first.user, expiry))} |`;
  };
  const abs = (impl) => {
    const r = results[impl];
    return `| ${impl} | ${f2(r.baseline.cpu)} | ${f2(r.first.cpu)} (${f2(r.first.user.cpu)} + ${f2(r.first.cpu - r.first.user.cpu)}) | ${f2(r.replay.cpu)} (${f2(r.replay.user.cpu)} + ${f2(r.replay.cpu - r.replay.user.cpu)}) | ${f2(r.first.p50)} | ${f2(r.replay.p50)} | ${f2(oneInFlight[impl].first.p50)} |`;
  };
  const marker = PEER_JS ? "edge-peer-js" : "edge-peer";
  const held = PEER_JS
    ? "oncekey-js (the root config's proxy, default settings: KV copies on retry; its `enable_request_signal` flag), **hono-do**"
    : `oncekey-js (the root config's proxy, default settings:
KV copies on retry; its \`enable_request_signal\` flag, as every oncekey worker here), oncekey-js-kv-off (\`IDEMPOTENCY_KV_REPLAY=off\`), oncekey-rust (default settings), **hono-do**`;
  const controls = PEER_JS ? "hono-do-expiry (a control)" : "do-only and do-only-rs (controls)";
  const rowsOf = (row) =>
    [
      row("oncekey-js", "JavaScript host (root config)"),
      row("oncekey-js-kv-off", "JavaScript host, `IDEMPOTENCY_KV_REPLAY=off`"),
      row("oncekey-rust", "Rust host"),
      row("hono-do-expiry", "(control) hono-do-expiry"),
      row("do-only", "(control) do-only"),
      row("do-only-rs", "(control) do-only-rs"),
      ...EXTRA_BUILDS.map((name) => row(name, `(control) ${name}`)),
    ].filter((line) => line !== undefined);
  const rows = rowsOf(row);
  // The system-mode share of each worker's first-execution CPU, lowest to highest.
  const shares = QUIET_IMPLS.map((impl) => 1 - results[impl].first.user.cpu / results[impl].first.cpu);
  const systemShare = `${f1(100 * Math.min(...shares))}–${f1(100 * Math.max(...shares))}%`;
  return `<!-- ${marker}:start -->
### Edge, side by side: ${PEER_JS ? "the JavaScript host beside hono-idempotency alone" : "oncekey beside hono-idempotency on a Durable Object"}

Command: \`BENCH_QUIET=${process.env.BENCH_QUIET} node bench/edge.mjs\` (part of \`make bench-edge\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC,
load average ${load(loadStart)} → ${load(loadEnd)}. One workerd holding ${held}
(hono-idempotency ${honoPackage.version}, commit ${honoVersion.slice(0, 12)}, on one Durable Object per store key over RPC:
\`bench/peers/hono-do.ts\`), ${controls} and the origin; ${CONCURRENCY} in flight, ${REQUESTS} requests a series
in ${ROUNDS} interleaved rounds (${seriesCount} series), then the first execution with one in flight (${SEQ_REQUESTS} requests in ${SEQ_ROUNDS} rounds).
hono-do makes three object calls per first execution (\`get\`, \`lock\`, then \`complete\` before it answers) and one per
replay; oncekey makes two (\`begin\`; \`finish\` after the answer) and one. hono-do sets no alarm: a record whose key is never
asked for again stays stored. **hono-do-expiry** (a control) is hono-do whose \`lock\` also sets the expiry alarm SPEC §4
asks for, as oncekey's and do-only's objects do: the last column sets each against it.

Multiples of hono-do's figure (target, issue 35: the JavaScript host ≤ 1.0× on every column; the Rust host ≤ 1.3× on CPU):

| oncekey | first execution CPU | replay CPU | first execution p50 | replay p50 | first execution p50, one in flight | first execution CPU ÷ hono-do-expiry's |
|---|---|---|---:|---:|---:|---|
${rows.join("\n")}

The same CPU multiples counting workerd's user-mode time only. Local workerd keeps each Durable Object in a SQLite
file of its own (here under ${objectFiles()}; \`TMPDIR\` chooses), so every first execution creates files. The kernel's time for that (system time: ${systemShare}
of a first execution's CPU in this run, and its largest source of noise) is this machine's, not the platform's:
Cloudflare bills the isolate's CPU time, and its object storage is not a file per object on the Worker's machine.

| oncekey | first execution CPU, user mode | replay CPU, user mode | first execution CPU, user mode, ÷ hono-do-expiry's |
|---|---|---|---|
${rowsOf(userRow).join("\n")}

Workerd CPU ms per request (in brackets: user mode + system) and p50 ms:

| worker | pass-through CPU | first execution CPU | replay CPU | first execution p50 | replay p50 | first execution p50, one in flight |
|---|---:|---:|---:|---:|---:|---:|
${QUIET_IMPLS.map(abs).join("\n")}
<!-- ${marker}:end -->
`;
}

/** Every worker of the run: workerd CPU ms per request and p50 per path (printed with BENCH_BUILDS, for an A/B). */
function everyWorkerTable() {
  const rows = Object.keys(results).map((impl) => {
    const r = results[impl];
    return `| ${impl} | ${["baseline", "first", "replay"].map((path) => `${f2(r[path].cpu)} | ${f2(r[path].p50)}`).join(" | ")} |`;
  });
  return `| worker | pass-through CPU | p50 | first execution CPU | p50 | replay CPU | p50 |
|---|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}`;
}
