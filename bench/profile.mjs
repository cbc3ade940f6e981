// A CPU profile of the worker's isolate under load (not part of
// `make bench`), through workerd's inspector: Profiler.start, N requests
// on one path with 4 in flight, Profiler.stop. Writes
// build/<path>.cpuprofile (open it in Chrome DevTools) and prints the
// functions with the most inclusive time per request. For Rust names, build
// without stripping: CARGO_PROFILE_RELEASE_STRIP=false worker-build --no-opt --release workers/demo --out-dir ../../build/demo
//
//   node bench/profile.mjs first     # or replay, baseline; PROFILE_REQUESTS=1000 PROFILE_BUILD=build/demo
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import WebSocket from "ws";

const PATH = process.argv[2] ?? "first";
const N = Number(process.env.PROFILE_REQUESTS ?? 1000);
const BUILD = process.env.PROFILE_BUILD ?? "build/demo";
const PORT = 9339;
const toml = readFileSync("workers/demo/wrangler.toml", "utf8");
const vars = Object.fromEntries(
  [...toml.split(/^\[vars\]$/m)[1].split(/^\[/m)[0].matchAll(/^([A-Z_]+) = "([^"]*)"$/gm)].map((m) => [m[1], m[2]]),
);
const mf = new Miniflare({
  inspectorPort: PORT,
  workers: [{
    name: "oncekey",
    modules: true,
    modulesRoot: BUILD,
    scriptPath: join(BUILD, "index.js"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: /^compatibility_date = "([^"]+)"/m.exec(toml)[1],
    bindings: vars,
    kvNamespaces: ["IDEMPOTENCY_KV"],
    durableObjects: {
      IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true },
      ORDERS: { className: "Orders", useSQLite: true },
    },
  }],
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
};
const items = Array.from({ length: 16 }, (_, i) => `profile-${i}-${randomUUID().slice(0, 6)}`);
const replayKeys = Array.from({ length: 50 }, () => randomUUID());
for (const key of replayKeys) await post("profile-replay", key);
const request = (i) =>
  PATH === "replay" ? post("profile-replay", replayKeys[i % 50])
  : post(items[i % items.length], PATH === "first" ? randomUUID() : null);
const load = async (count) => {
  let next = 0;
  await Promise.all(Array.from({ length: 4 }, async () => { while (next < count) await request(next++); }));
};
await load(200);

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
await send("Profiler.setSamplingInterval", { interval: 100 });
await send("Profiler.start");
await load(N);
const { result } = await send("Profiler.stop");
ws.close();
await mf.dispose();
const out = join("build", `${PATH}.cpuprofile`);
writeFileSync(out, JSON.stringify(result.profile));

// Inclusive time per function (each function counted once per sample).
const { nodes, samples, timeDeltas } = result.profile;
const byId = new Map(nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const self = new Map();
samples.forEach((s, i) => self.set(s, (self.get(s) ?? 0) + (timeDeltas[i] ?? 0)));
const name = (f) => (f.functionName || "(anonymous)").replace(/::h[0-9a-f]{16}/g, "").slice(0, 110);
const inclusive = new Map();
let total = 0;
for (const [nodeId, us] of self) {
  total += us;
  const seen = new Set();
  for (let at = nodeId; at !== undefined; at = parent.get(at)) {
    const n = name(byId.get(at).callFrame);
    if (!seen.has(n)) {
      seen.add(n);
      inclusive.set(n, (inclusive.get(n) ?? 0) + us);
    }
  }
}
console.log(`${PATH}: ${N} requests, ${(total / N / 1000).toFixed(2)} ms of isolate time per request; ${out}`);
for (const [n, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
  console.log(`${(us / N).toFixed(0).padStart(6)} µs/req  ${n}`);
}
