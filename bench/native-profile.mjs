// Where workerd's CPU goes, native frames included (issue 35): Linux perf
// samples the whole workerd process (every thread, user and kernel mode)
// while one worker at a time serves a series of one path, beside its peers
// in the same workerd. V8 writes a map of its generated code
// (--perf-basic-prof, through bench/miniflare-v8-flags.mjs), so a sample in
// JavaScript or wasm is named too. Each sample is put in one bucket by its
// own frame (runtime API, V8, storage, kernel...), summed over the rounds,
// and given per request.
//
// The inspector's profile (bench/profile.mjs) sees only the isolate's own
// thread and charges time blocked in a runtime call to the line that made
// it; this sees what the process spends, where, whoever asked for it —
// the figures bench/edge.mjs measures, taken apart.
//
//   node bench/native-profile.mjs      # writes the edge-native-profile section of bench/RESULTS.md
//
// PROFILE_N (requests per series, 750), PROFILE_ROUNDS (4),
// PROFILE_HZ (samples a second, 4000), PROFILE_V8_FLAGS (more V8 flags, for
// a diagnosis), PROFILE_IMPLS (the workers, comma-separated; all by default),
// PROFILE_BUILDS (name=dir,...: more builds of the JavaScript proxy, for an
// A/B, `rust:dir` for the Rust host's; added to the workers); TMPDIR, as
// for bench/edge.mjs, chooses where the objects' files go. Needs `perf` (Debian's linux-perf)
// and the right to record a process (root, or perf_event_paranoid ≤ 1);
// without them it says so and writes nothing.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { WORKERS } from "../tests/edge/harness.mjs";
import { miniflareWithV8Flags } from "./miniflare-v8-flags.mjs";
import { writeSection } from "./results.mjs";
import { threadsCpuMs, workerdPid } from "./workerd-cpu.mjs";
import {
  benchOncekey,
  DO_ONLY_RS,
  drainStdio,
  doOnlyRsWorker,
  HONO_DO,
  honoDoWorker,
  namedBuild,
  objectFiles,
  originWorker,
  peer,
  seriesOn,
  shuffled,
} from "./workers.mjs";

const N = Number(process.env.PROFILE_N ?? 750);
const ROUNDS = Number(process.env.PROFILE_ROUNDS ?? 4);
const HZ = Number(process.env.PROFILE_HZ ?? 4000);
/** More V8 flags for workerd, for a diagnosis (PROFILE_V8_FLAGS, space-separated). */
const EXTRA_FLAGS = process.env.PROFILE_V8_FLAGS?.split(" ").filter(Boolean) ?? [];
const IN_FLIGHT = 4;
const SETTLE_MS = 300;

/** Why perf cannot record here, or undefined when it can. */
function perfMissing() {
  const dir = mkdtempSync(join(tmpdir(), "oncekey-perf-"));
  try {
    execFileSync("perf", ["record", "-q", "-e", "cpu-clock", "-o", join(dir, "probe.data"), "true"], {
      stdio: "pipe",
    });
    return undefined;
  } catch (error) {
    return error.code === "ENOENT" ? "no perf (Debian's linux-perf)" : `perf cannot record: ${error.message}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const missing = perfMissing();
if (missing !== undefined) {
  console.log(`bench/native-profile.mjs: skipped, ${missing}`);
  process.exit(0);
}

// The workers, each on its own route: both hosts' production proxies, the
// peer and the controls bench/edge.mjs sets them beside.
const IMPLS = {
  "oncekey-js": () => benchOncekey("oncekey-js", WORKERS["proxy-js"]),
  "oncekey-rust": () => benchOncekey("oncekey-rust", WORKERS.proxy),
  ...(existsSync(HONO_DO)
    ? {
        "hono-do": () => honoDoWorker("hono-do"),
        "hono-do-expiry": () => honoDoWorker("hono-do-expiry", { expiry: true }),
      }
    : {}),
  "do-only": () => peer("do-only", { kv: false }),
  ...(existsSync(DO_ONLY_RS) ? { "do-only-rs": () => doOnlyRsWorker("do-only-rs") } : {}),
};
const BUILDS = process.env.PROFILE_BUILDS?.split(",").filter(Boolean) ?? [];
for (const pair of BUILDS) {
  const { name, worker } = namedBuild(pair);
  IMPLS[name] = worker;
}
// oncekey-js always, as every table is read against it.
const CHOSEN = [
  ...(process.env.PROFILE_IMPLS?.split(",").filter((name) => name in IMPLS) ?? Object.keys(IMPLS)),
  ...BUILDS.map((pair) => pair.split("=")[0]),
];
const NAMES = ["oncekey-js", ...new Set(CHOSEN.filter((name) => name !== "oncekey-js"))];
const PATHS = ["first", "replay", "baseline"];
const PATH_NAMES = { first: "first execution", replay: "replay", baseline: "pass-through" };

/**
 * The bucket of one sample, by its own frame's symbol as `perf report`
 * prints it (`[k]` kernel, `[.]` user; V8's map names JavaScript
 * `JS:<kind>name file:line:col` and wasm `JS:name-<index>-<tier>`).
 */
function bucketOf(symbol) {
  if (symbol.startsWith("[k]")) return "kernel: files, fsync, sockets, scheduling";
  const s = symbol.slice(4);
  const rules = [
    [/^JS:.*\.js:\d+/, "JavaScript (the workers' own code)"],
    [/^JS:.*-(turbofan|liftoff|maglev)$|^JS:wasm-/, "wasm (the workers' own code)"],
    [/^Stub:(js-to-wasm|wasm-to-js)|^JS:wasm-to-js|^Builtins_(Wasm|JSToWasm)/, "crossing into and out of wasm"],
    [/^(JS|Stub|Builtin):|^0x/, "V8 generated code, other"],
    [/^Builtins_/, "V8 builtins (promises, property access, calls)"],
    [/Json/, "V8 JSON (cf copies, log lines)"],
    [/ValueSerializer|ValueDeserializer|jsg::Serializer|jsg::Deserializer/, "V8 serializer (RPC, storage values)"],
    [/Scaveng|Mark(ing|Compact)|Sweep|Heap::|Evacuat|GCTracer|HeapTracer|IsUnmodifiedApiObject/, "garbage collection"],
    [/v8::internal::(compiler|maglev|baseline|wasm::)|Compile|Turbofan|Liftoff/, "V8 compilers"],
    [/^v8::/, "V8 runtime, other"],
    [/sqlite|Sqlite|unixOpen|yy_reduce/, "SQLite (local object storage)"],
    [/tcmalloc|TCMalloc/, "memory allocator"],
    [/^workerd::api::/, "workerd runtime APIs"],
    [/^workerd::jsg::/, "workerd's V8 bindings (jsg)"],
    [/^capnp::/, "Cap'n Proto RPC"],
    [/^kj::/, "KJ event loop, promises and I/O"],
    [/^workerd::/, "workerd, other"],
    [/^__mem|^__str|memcpy|memmove|memset/, "libc memory and strings"],
  ];
  for (const [pattern, bucket] of rules) if (pattern.test(s)) return bucket;
  return "other native code";
}

/** Samples by symbol in one `perf record` file. */
function samplesOf(file) {
  const out = execFileSync(
    "perf",
    ["report", "-i", file, "--no-children", "--sort", "sym", "-F", "sample,sym", "--stdio", "-g", "none"],
    { maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "ignore"] },
  ).toString();
  const found = new Map();
  for (const line of out.split("\n")) {
    const m = /^\s*(\d+)\s+(\[[.k]\] .*?)\s*$/.exec(line);
    if (m) found.set(m[2], (found.get(m[2]) ?? 0) + Number(m[1]));
  }
  return found;
}

async function main() {
  const loadStart = loadavg();
  const { Miniflare } = await import(miniflareWithV8Flags());
  const dir = mkdtempSync(join(tmpdir(), "oncekey-native-profile-"));
  // V8's log, which its map of generated code comes with: one file, in the
  // directory removed at the end (else a file per isolate in the working
  // directory).
  const log = ["--no-logfile-per-isolate", `--logfile=${join(dir, "v8.log")}`];
  process.env.MINIFLARE_V8_FLAGS = ["--perf-basic-prof", ...log, ...EXTRA_FLAGS].join(" ");
  const mf = new Miniflare({
    workers: [...NAMES.map((name) => IMPLS[name]()), originWorker],
    handleRuntimeStdio: drainStdio,
  });
  const url = await mf.ready;
  const pid = workerdPid();
  try {
    const { run, warm } = seriesOn(url, IN_FLIGHT);
    const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    await warm(NAMES, PATHS);
    // Each series: perf attached to workerd while one worker serves N
    // requests of one path; the series interleaved, in a fresh order each
    // round (a first execution costs more as the objects' files pile up,
    // so no worker may always come first).
    const series = PATHS.flatMap((path) => NAMES.map((impl) => ({ impl, path, files: [], cpuMs: 0 })));
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of shuffled(series, round)) {
        await settle();
        const file = join(dir, `${s.impl}-${s.path}-${round}.data`);
        const perf = spawn(
          "perf",
          ["record", "-q", "-e", "cpu-clock", "-F", String(HZ), "-p", String(pid), "-o", file],
          {
            stdio: "ignore",
          },
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        const before = threadsCpuMs(pid);
        await run(s.impl, s.path, N);
        await settle();
        s.cpuMs += threadsCpuMs(pid) - before;
        perf.kill("SIGINT");
        await new Promise((resolve) => perf.on("exit", resolve));
        s.files.push(file);
      }
    }
    await mf.dispose();
    // The map V8 wrote is read by `perf report`: the reports come first.
    const usPerSample = 1e6 / HZ;
    const table = {};
    for (const s of series) {
      const buckets = new Map();
      const symbols = new Map();
      for (const file of s.files)
        for (const [symbol, count] of samplesOf(file)) {
          const bucket = bucketOf(symbol);
          buckets.set(bucket, (buckets.get(bucket) ?? 0) + count);
          symbols.set(symbol, (symbols.get(symbol) ?? 0) + count);
        }
      const requests = N * ROUNDS;
      const per = (count) => (count * usPerSample) / requests;
      table[s.path] ??= {};
      table[s.path][s.impl] = {
        buckets: new Map([...buckets].map(([b, c]) => [b, per(c)])),
        symbols: new Map([...symbols].map(([b, c]) => [b, per(c)])),
        measuredUs: (s.cpuMs * 1000) / requests,
      };
    }
    const section = render(table, loadStart, loadavg());
    writeSection("edge-native-profile", section);
    console.log(section);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(`/tmp/perf-${pid}.map`, { force: true });
  }
}

/** The section: a table of buckets per path, and where oncekey-js spends most beyond hono-do-expiry. */
function render(table, loadStart, loadEnd) {
  const f0 = (x) => (x === undefined ? "" : x.toFixed(0));
  const load = (l) => l.map((x) => x.toFixed(1)).join(" ");
  // The peer each table is read against: the closest design held.
  const peer =
    ["hono-do-expiry", "hono-do", "do-only", ...NAMES].find((name) => NAMES.includes(name) && name !== "oncekey-js") ??
    "oncekey-js";
  const sections = PATHS.map((path) => {
    const rows = table[path];
    const all = [...new Set(NAMES.flatMap((impl) => [...rows[impl].buckets.keys()]))];
    const sum = (impl, keep) =>
      [...rows[impl].buckets].filter(([bucket]) => keep(bucket)).reduce((total, [, us]) => total + us, 0);
    const user = (bucket) => !bucket.startsWith("kernel");
    // Largest first by oncekey-js's excess over the peer.
    all.sort(
      (a, b) =>
        (rows["oncekey-js"].buckets.get(b) ?? 0) -
        (rows[peer].buckets.get(b) ?? 0) -
        ((rows["oncekey-js"].buckets.get(a) ?? 0) - (rows[peer].buckets.get(a) ?? 0)),
    );
    const line = (label, cell) => `| ${label} | ${NAMES.map(cell).join(" | ")} |`;
    const top = [...rows["oncekey-js"].symbols]
      .map(([symbol, us]) => [symbol, us - (rows[peer].symbols.get(symbol) ?? 0)])
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([symbol, us]) => `${us.toFixed(1).padStart(6)} µs  ${symbol.slice(4, 130)}`);
    return `#### ${PATH_NAMES[path]}

${line("µs per request", (impl) => impl)}
|---|${NAMES.map(() => "---:").join("|")}|
${line("**all samples**", (impl) => `**${f0(sum(impl, () => true))}**`)}
${line("workerd's CPU for the same series, from /proc", (impl) => f0(rows[impl].measuredUs))}
${line("user mode (all but the kernel)", (impl) => f0(sum(impl, user)))}
${all.map((bucket) => line(bucket, (impl) => f0(rows[impl].buckets.get(bucket)))).join("\n")}

The symbols where oncekey-js spends most beyond ${peer} (µs per request, its figure less the peer's):

\`\`\`text
${top.join("\n")}
\`\`\``;
  });
  return `<!-- edge-native-profile:start -->
### Edge, native profile: where workerd's CPU goes, by kind of work

Command: \`${EXTRA_FLAGS.length > 0 ? `PROFILE_V8_FLAGS="${EXTRA_FLAGS.join(" ")}" ` : ""}${BUILDS.length > 0 ? `PROFILE_BUILDS=${BUILDS.join(",")} ` : ""}node bench/native-profile.mjs\` (part of \`make bench-edge\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC,
load average ${load(loadStart)} → ${load(loadEnd)}. One workerd (V8's \`--perf-basic-prof\`) holding ${NAMES.join(", ")} and the
origin; for each worker and path a series of ${N} requests, ${IN_FLIGHT} in flight, the series interleaved in ${ROUNDS}
rounds, while \`perf record -e cpu-clock -F ${HZ} -p <workerd>\` samples every thread of the process, user and
kernel mode. A sample goes in one row by its own frame (the function running, not who called it); JavaScript and wasm
are named by V8's map. Rows are µs per request (samples × ${(1e6 / HZ).toFixed(0)} µs ÷ requests), in order of what
oncekey-js spends beyond ${peer}. Sampling costs the process some time of its own: each figure is higher than
bench/edge.mjs's for the same path, and a comparison holds within one table.
Local workerd keeps each Durable Object in a SQLite file of its own (here under ${objectFiles()}; \`TMPDIR\`
chooses): the kernel row of a first execution is mostly creating those files, and on a disk syncing them, work that is
this machine's and not the platform's.

${sections.join("\n\n")}
<!-- edge-native-profile:end -->
`;
}

await main();
