// A CPU profile of the worker's isolate under load (not part of
// `make bench`), through workerd's inspector: Profiler.start, N requests
// on one path with 4 in flight, Profiler.stop. Writes
// build/<path>.cpuprofile (open it in Chrome DevTools), prints where the
// isolate's time went by kind (wasm, the worker's JavaScript by source
// module, runtime APIs by the module that called them, GC, outside JS) and
// the functions with the most inclusive time per request.
//
//   node bench/profile.mjs first     # or replay, baseline; PROFILE_REQUESTS=1000
//   node bench/profile.mjs cold      # a fresh isolate's first request (a new key) alone
//   PROFILE_SHOW=writeKv,storeCall   # also these functions' inclusive time
//   PROFILE_RESULTS=<label>          # also write the tables to bench/RESULTS.md,
//                                    # section profile-<label>-<path> (`make bench-profile`)
//
// PROFILE_BUILD picks the worker (the isolate holds its Durable Object
// class too, so the coordinator's time is in the same profile):
//   build/demo        (the default) the demo, its embedded origin. For Rust names, build without stripping:
//                     CARGO_PROFILE_RELEASE_STRIP=false worker-build --no-opt --release workers/demo --out-dir ../../build/demo
//   build/proxy       the production proxy, Rust host (`make build-proxy`), in front of the edge
//   build/proxy-js    benchmark's origin worker (build/bench/origin-worker.js, `make bench-peers`),
//                     reached through ORIGIN_URL as `make bench-edge` does; the JS host (`make build-proxy-js`)
//   build/bench/do-only.js  a peer's bundle (`make bench-peers`), in front of the same origin, for comparison
//   build/profile-js  the JS host as build/proxy-js, but unminified and its wasm keeping function names,
//                     built here from pkg/src and the worker-wasm crate (`make build-worker-js` first),
//                     so JavaScript time splits by source module (host.js, coordinator.js, the wasm-bindgen glue)
import { execSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { cpus, loadavg } from "node:os";
import WebSocket from "ws";
import { writeSection } from "./results.mjs";

const PATH = process.argv[2] ?? "first";
// A cold profile is one request: the isolate's first, on a new key.
const COLD = PATH === "cold";
const N = COLD ? 1 : Number(process.env.PROFILE_REQUESTS ?? 1000);
const BUILD = (process.env.PROFILE_BUILD ?? "build/demo").replace(/\/$/, "");
const DEMO = BUILD.endsWith("demo");
// A peer's bundle (a .js file, e.g. build/bench/do-only.js from `make bench-peers`):
// its `Coordinator` class as IDEMPOTENCY_DO, no KV, in front of the same origin.
const PEER = BUILD.endsWith(".js");
const SCRIPT = PEER ? BUILD : join(BUILD, "index.js");
const PORT = 9339;
const varsOf = (file) => {
  const toml = readFileSync(file, "utf8");
  return Object.fromEntries(
    [
      ...toml
        .split(/^\[vars\]$/m)[1]
        .split(/^\[/m)[0]
        .matchAll(/^([A-Z_]+) = "([^"]*)"$/gm),
    ].map((m) => [m[1], m[2]]),
  );
};
const compatibilityDate = /^compatibility_date = "([^"]+)"/m.exec(readFileSync("wrangler.toml", "utf8"))[1];

if (BUILD === "build/profile-js") buildProfileJs();

const ORIGIN_URL = "http://origin.bench";
const oncekey = {
  name: "oncekey",
  modules: true,
  modulesRoot: BUILD,
  scriptPath: join(BUILD, "index.js"),
  modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
  compatibilityDate,
  kvNamespaces: ["IDEMPOTENCY_KV"],
};
const workers = DEMO
  ? [
      {
        ...oncekey,
        bindings: varsOf("workers/demo/wrangler.toml"),
        durableObjects: {
          IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true },
          ORDERS: { className: "Orders", useSQLite: true },
        },
      },
    ]
  : [
      PEER
        ? {
            name: "oncekey",
            modules: true,
            scriptPath: BUILD,
            compatibilityDate,
            bindings: { ORIGIN_URL },
            durableObjects: { IDEMPOTENCY_DO: { className: "Coordinator", useSQLite: true } },
            outboundService: "origin",
          }
        : {
            ...oncekey,
            bindings: { ...varsOf("wrangler.toml"), ORIGIN_URL },
            durableObjects: { IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true } },
            outboundService: "origin",
          },
      {
        name: "origin",
        modules: true,
        scriptPath: "build/bench/origin-worker.js",
        compatibilityDate,
        durableObjects: { ORDERS: { className: "Orders", useSQLite: true } },
      },
    ];
const mf = new Miniflare({
  inspectorPort: PORT,
  workers,
  handleRuntimeStdio: (out, err) => {
    out.resume();
    err.pipe(process.stderr);
  },
});
const url = await mf.ready;
const post = async (item, key) => {
  const headers = { "content-type": "application/json" };
  if (key) headers["idempotency-key"] = key;
  const res = await fetch(new URL("/api/orders", url), {
    method: "POST",
    headers,
    body: JSON.stringify({ item, quantity: 1, amountCents: 1200 }),
  });
  await res.text();
  if (res.status !== 201) throw new Error(`answered ${res.status}`);
};
const items = Array.from({ length: 16 }, (_, i) => `profile-${i}-${randomUUID().slice(0, 6)}`);
const replayKeys = Array.from({ length: 50 }, () => randomUUID());
if (!COLD) for (const key of replayKeys) await post("profile-replay", key);
const request = (i) =>
  PATH === "replay"
    ? post("profile-replay", replayKeys[i % 50])
    : post(items[i % items.length], PATH === "first" || COLD ? randomUUID() : null);
const load = async (count) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < count) await request(next++);
    }),
  );
};
if (!COLD) await load(200);

const targets = await (await fetch(`http://127.0.0.1:${PORT}/json`)).json();
const target = targets.find((t) => t.webSocketDebuggerUrl.endsWith("core:user:oncekey"));
const ws = new WebSocket(target.webSocketDebuggerUrl);
await new Promise((r) => ws.on("open", r));
let id = 0;
const pending = new Map();
ws.on("message", (data) => {
  const msg = JSON.parse(data);
  pending.get(msg.id)?.(msg);
  pending.delete(msg.id);
});
const send = (method, params = {}) =>
  new Promise((r) => {
    pending.set(++id, r);
    ws.send(JSON.stringify({ id, method, params }));
  });
await send("Profiler.enable");
await send("Profiler.setSamplingInterval", { interval: COLD ? 25 : 100 });
await send("Profiler.start");
await load(N);
const { result } = await send("Profiler.stop");
ws.close();
await mf.dispose();
const out = join("build", `${PATH}.cpuprofile`);
writeFileSync(out, JSON.stringify(result.profile));

const { nodes, samples, timeDeltas } = result.profile;
const byId = new Map(nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const self = new Map();
for (const [i, s] of samples.entries()) self.set(s, (self.get(s) ?? 0) + (timeDeltas[i] ?? 0));
const name = (f) => (f.functionName || "(anonymous)").replace(/::h[0-9a-f]{16}/g, "").slice(0, 110);

// The worker script's source modules, where esbuild left its `// path`
// markers (an unminified bundle: build/profile-js): line → module.
const script = readFileSync(SCRIPT, "utf8").split("\n");
const markers = [];
script.forEach((line, i) => {
  const m = /^\/\/ (\S+\.(?:m?js|ts))$/.exec(line);
  if (m) markers.push([i, m[1].replace(/^.*\/(pkg\/src\/|workers\/|bindgen\/)/, "$1")]);
});
const moduleAt = (line) => {
  let found = "worker script";
  for (const [at, mod] of markers) if (at <= line) found = mod;
  return found;
};
const isScript = (f) => f.url.endsWith(PEER ? BUILD.split("/").pop() : "index.js");
const isWasm = (f) => f.url.startsWith("wasm://") || /^(\$|wasm-function)/.test(f.functionName);
/** What a sample's own frame was: wasm, the worker's JavaScript (by module), a runtime API (by caller), or V8's own. */
function kindOf(nodeId) {
  const f = byId.get(nodeId).callFrame;
  if (isWasm(f)) return "wasm";
  // The JS host's call to its coordinator: `stub.call(bytes)` is RPC through
  // a proxy the profiler shows no frame for, so its native work — the call,
  // and on a new key the object's creation (its SQLite database) — lands on
  // storeCall's own time.
  if (isScript(f) && f.functionName === "storeCall") return "DO stub call (storeCall: RPC; a new key's object created)";
  if (isScript(f)) return `JS: ${moduleAt(f.lineNumber)}`;
  if (/^\(.*\)$/.test(f.functionName)) return f.functionName;
  // A runtime API (storage, fetch, Headers, crypto, …) or a builtin: charged
  // to the nearest frame of the worker that called it.
  for (let at = parent.get(nodeId); at !== undefined; at = parent.get(at)) {
    const g = byId.get(at).callFrame;
    if (isWasm(g)) return `runtime API from wasm (${name(f)}…)`;
    if (isScript(g)) return `runtime API from ${moduleAt(g.lineNumber)}`;
  }
  return `runtime, no worker frame (${name(f)})`;
}
const kinds = new Map();
const apiNames = new Map();
// Inclusive time per function (each function counted once per sample).
const inclusive = new Map();
let total = 0;
for (const [nodeId, us] of self) {
  const kind = kindOf(nodeId);
  if (kind === "(idle)") continue;
  total += us;
  kinds.set(kind, (kinds.get(kind) ?? 0) + us);
  if (kind.startsWith("runtime API")) {
    const key = `${kind.replace(/ \(.*/, "")}: ${name(byId.get(nodeId).callFrame)}`;
    apiNames.set(key, (apiNames.get(key) ?? 0) + us);
  }
  const seen = new Set();
  for (let at = nodeId; at !== undefined; at = parent.get(at)) {
    const n = name(byId.get(at).callFrame);
    if (!seen.has(n)) {
      seen.add(n);
      inclusive.set(n, (inclusive.get(n) ?? 0) + us);
    }
  }
}
const perReq = (us) => `${(us / N).toFixed(0).padStart(6)} µs/req`;
// What is printed, kept for bench/RESULTS.md when PROFILE_RESULTS names the run.
const printed = [];
const print = (line) => {
  printed.push(line);
  console.log(line);
};
print(
  `${PATH} (${BUILD}): ${N} requests, ${(total / N / 1000).toFixed(2)} ms of isolate time per request (idle excluded); ${out}`,
);
print("\nself time by kind:");
for (const [k, us] of [...kinds].sort((a, b) => b[1] - a[1]))
  print(`${perReq(us)}  ${((100 * us) / total).toFixed(1).padStart(5)} %  ${k}`);
print("\nruntime APIs, top 15:");
for (const [k, us] of [...apiNames].sort((a, b) => b[1] - a[1]).slice(0, 15)) print(`${perReq(us)}  ${k}`);
print("\ninclusive, top 40:");
for (const [n, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 40)) print(`${perReq(us)}  ${n}`);
// PROFILE_SHOW=writeKv,storeCall: these functions' inclusive time, wherever they rank
// (writeKv: what the isolate itself spends on a KV copy).
for (const n of (process.env.PROFILE_SHOW ?? "").split(",").filter(Boolean)) {
  console.log(`${perReq(inclusive.get(n) ?? 0)}  ${n} (PROFILE_SHOW)`);
}

if (process.env.PROFILE_RESULTS) {
  const label = process.env.PROFILE_RESULTS;
  const name = `profile-${label}-${PATH}`;
  writeSection(
    name,
    `<!-- ${name}:start -->
### CPU profile: ${label}, ${PATH === "first" ? "first executions" : PATH === "replay" ? "replays" : PATH}

Command: \`make bench-profile\` (\`PROFILE_BUILD=${BUILD} node bench/profile.mjs ${PATH}\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC,
${cpus().length} cores, load average ${loadavg()
      .map((n) => n.toFixed(1))
      .join(
        " ",
      )}. The isolate's CPU through workerd's inspector (sampling every ${COLD ? 25 : 100} µs), ${N} requests with 4
in flight after 200 to warm up; the worker and its Durable Object class share the isolate, so the object's work is
in it too. "By kind": each sample's own frame — the core (wasm), the host's JavaScript by source file, a runtime API
charged to the file or wasm that called it, V8's own.

\`\`\`text
${printed.join("\n").trim()}
\`\`\`
<!-- ${name}:end -->`,
  );
}

/**
 * build/profile-js: the JS host's proxy (workers/proxy-js/index.js, on
 * `oncekey/proxy`) bundled from pkg/src without minifying, over the
 * worker-wasm crate's release wasm without the queue feature and with its
 * function names kept (wasm-bindgen without --remove-name-section, wasm-opt
 * -Oz -g), otherwise as scripts/build-worker-js.sh builds it.
 */
function buildProfileJs() {
  const tools = process.env.TOOLS ?? ".tools";
  const target = "target/worker-js";
  const env = {
    ...process.env,
    CARGO_TARGET_DIR: join(process.cwd(), target),
    RUSTFLAGS: '--cfg sha2_backend_soft="compact"',
    CARGO_PROFILE_RELEASE_STRIP: "false",
  };
  const run = (cmd) => execSync(cmd, { stdio: "inherit", env });
  run("cargo build --quiet --release --target wasm32-unknown-unknown -p oncekey-worker-wasm --no-default-features");
  const out = "build/profile-js";
  mkdirSync(`${out}/bindgen`, { recursive: true });
  run(
    `${tools}/bin/wasm-bindgen --target web --omit-default-module-path --out-dir ${out}/bindgen --out-name oncekey_worker_wasm ${target}/wasm32-unknown-unknown/release/oncekey_worker_wasm.wasm`,
  );
  run(`node_modules/.bin/wasm-opt -Oz -g ${out}/bindgen/oncekey_worker_wasm_bg.wasm -o ${out}/oncekey_proxy_bg.wasm`);
  run(
    `node_modules/.bin/esbuild workers/proxy-js/index.js --bundle --format=esm --target=es2022 --platform=neutral --log-level=warning --alias:oncekey/proxy=./pkg/src/proxy.js --alias:oncekey-worker-wasm=./${out}/bindgen/oncekey_worker_wasm.js --external:cloudflare:workers --external:./oncekey_proxy_bg.wasm --outfile=${out}/index.js`,
  );
  if (!existsSync(`${out}/index.js`)) throw new Error("profile-js: no bundle");
}
