// A/B of two worker builds in one workerd (not part of `make bench`): the
// demo build in build/demo/ ("new") against another build directory ("old"), each as
// its own worker with its own KV and Durable Objects, the series
// interleaved, compared on latency and on workerd CPU per request.
//
//   git worktree add /tmp/oncekey-old <commit> && (cd /tmp/oncekey-old && make build-demo)
//   node bench/ab.mjs /tmp/oncekey-old/build/demo      # AB_REQUESTS=500 AB_ROUNDS=6
import { execSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { COMPATIBILITY_DATE, start } from "../tests/edge/harness.mjs";

const OLD = resolve(process.argv[2] ?? "/tmp/oncekey-old/build/demo");
const N = Number(process.env.AB_REQUESTS ?? 500);
const ROUNDS = Number(process.env.AB_ROUNDS ?? 6);
const CONCURRENCY = 4;

const toml = readFileSync("workers/demo/wrangler.toml", "utf8");
const vars = Object.fromEntries(
  [
    ...toml
      .split(/^\[vars\]$/m)[1]
      .split(/^\[/m)[0]
      .matchAll(/^([A-Z_]+) = "([^"]*)"$/gm),
  ].map((m) => [m[1], m[2]]),
);
const worker = await start({
  extraWorkers: [
    {
      name: "old",
      routes: ["old.bench/*"],
      modules: true,
      modulesRoot: OLD,
      scriptPath: join(OLD, "index.js"),
      modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
      compatibilityDate: COMPATIBILITY_DATE,
      bindings: vars,
      kvNamespaces: ["IDEMPOTENCY_KV"],
      durableObjects: {
        IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true },
        ORDERS: { className: "Orders", useSQLite: true },
      },
    },
  ],
});
const HOST = { new: "oncekey.test", old: "old.bench" };
const children = execSync(`pgrep -P ${process.pid}`).toString().trim().split("\n");
const tickMs = 1000 / Number(execSync("getconf CLK_TCK").toString().trim());
const cpuMs = () =>
  children.reduce((sum, pid) => {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      return sum + (Number(f[11]) + Number(f[12])) * tickMs;
    } catch {
      return sum;
    }
  }, 0);

async function post(build, item, key) {
  const headers = { "content-type": "application/json", "mf-original-url": `http://${HOST[build]}/api/orders` };
  if (key) headers["idempotency-key"] = key;
  const started = process.hrtime.bigint();
  const res = await fetch(new URL("/api/orders", worker.url), {
    method: "POST",
    headers,
    body: JSON.stringify({ item, quantity: 1, amountCents: 1200 }),
  });
  await res.text();
  if (res.status !== 201) throw new Error(`${build}: ${res.status}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

const replayKeys = { new: [], old: [] };
for (const build of ["new", "old"]) {
  for (let i = 0; i < 50; i++) {
    const key = randomUUID();
    replayKeys[build].push(key);
    await post(build, "ab-replay", key);
  }
}
await new Promise((r) => setTimeout(r, 300));
const PATHS = {
  baseline: (build, item) => post(build, item),
  replay: (build, _item, i) => post(build, "ab-replay", replayKeys[build][i % 50]),
  first: (build, item) => post(build, item, randomUUID()),
};
const latency = {};
const cpu = {};
const loadStart = loadavg()[0];
for (let round = 0; round < ROUNDS; round++) {
  for (const path of Object.keys(PATHS)) {
    for (const build of round % 2 ? ["old", "new"] : ["new", "old"]) {
      const items = Array.from({ length: 16 }, (_, i) => `ab-${i}-${randomUUID().slice(0, 6)}`);
      latency[`${build} ${path}`] ??= [];
      const out = latency[`${build} ${path}`];
      let next = 0;
      const before = cpuMs();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < N) {
            const i = next++;
            out.push(await PATHS[path](build, items[i % items.length], i));
          }
        }),
      );
      cpu[`${build} ${path}`] = (cpu[`${build} ${path}`] ?? 0) + cpuMs() - before;
    }
  }
}
await worker.dispose();
const p50 = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const path of Object.keys(PATHS)) {
  const cells = ["new", "old"].map((build) => {
    const all = latency[`${build} ${path}`];
    return `${build}: CPU ${(cpu[`${build} ${path}`] / all.length).toFixed(2)} ms/req, p50 ${p50(all).toFixed(2)} ms`;
  });
  console.log(path.padEnd(9), cells.join(" | "));
}
console.log(`load average ${loadStart.toFixed(1)} → ${loadavg()[0].toFixed(1)}`);
