// Workerd CPU per queue message (issue 22, `make bench-queue`): the demo's
// loyalty consumer on each host — `Consumer` (Rust, build/demo) and
// `withQueueIdempotency` (JavaScript, build/demo-js), the same handler
// work — beside a consumer that does that work with no dedup
// (`none`: parse, award into the same Orders object, ack). One workerd
// holds all three; each delivers the same number of new events (first
// runs) and then the same events again (duplicates: acknowledged without
// running), in batches of 10, the workers interleaved in a fresh order each
// round. CPU is workerd's, all threads, from /proc/<pid>/task/*/schedstat.
// Writes the `queue` section of bench/RESULTS.md.
import { randomUUID } from "node:crypto";
import { writeSection } from "./results.mjs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { COMPATIBILITY_DATE, COMPATIBILITY_FLAGS, defaultVars, QUEUE, WORKERS } from "../tests/edge/harness.mjs";
import { threadsCpuMs, workerdPid } from "./workerd-cpu.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 1000);
const BATCH = 10;

/** The consumer with no dedup: the demo handler's work, then ack. */
const NONE = `
export default {
  async queue(batch, env) {
    for (const message of batch.messages) {
      const { orderId, customerId, amountCents } = message.body;
      const stub = env.ORDERS.get(env.ORDERS.idFromName("customer:" + customerId));
      const award = { orderId, points: Math.floor(amountCents / 100), amountCents, attempt: 1, awardedAt: new Date().toISOString() };
      const res = await stub.fetch("https://loyalty.demo/", {
        method: "POST",
        headers: { "content-type": "application/json", "unique-by": "orderId" },
        body: JSON.stringify(award),
      });
      if (res.status !== 200) throw new Error("loyalty answered " + res.status);
      await res.arrayBuffer();
      message.ack();
    }
  },
};`;

function demo(name, host) {
  const { build, config } = WORKERS[host];
  return {
    name,
    modules: true,
    modulesRoot: build,
    scriptPath: join(build, "index.js"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: COMPATIBILITY_FLAGS,
    bindings: defaultVars(config),
    kvNamespaces: ["IDEMPOTENCY_KV"],
    durableObjects: {
      IDEMPOTENCY_DO: { className: "IdempotencyCoordinator", useSQLite: true },
      ORDERS: { className: "Orders", useSQLite: true },
    },
    queueProducers: { ORDER_EVENTS: { queueName: `${QUEUE}-${name}` } },
  };
}

const shuffle = (list) =>
  list
    .map((item) => [Math.random(), item])
    .sort((a, b) => a[0] - b[0])
    .map(([, item]) => item);

const mf = new Miniflare({
  workers: [
    demo("rust", "demo"),
    demo("js", "demo-js"),
    {
      name: "none",
      modules: true,
      script: NONE,
      compatibilityDate: COMPATIBILITY_DATE,
      durableObjects: { ORDERS: { className: "Orders", scriptName: "js" } },
    },
  ],
});
await mf.ready;
const pid = workerdPid();
const NAMES = ["rust", "js", "none"];
const workers = Object.fromEntries(await Promise.all(NAMES.map(async (n) => [n, await mf.getWorker(n)])));
const cpu = Object.fromEntries(NAMES.map((n) => [n, { first: 0, duplicate: 0 }]));

/** Delivers `messages` to `name` in batches; the workerd CPU it took, ms. */
async function deliver(name, messages) {
  const before = threadsCpuMs(pid);
  for (let i = 0; i < messages.length; i += BATCH) {
    const result = await workers[name].queue(`${QUEUE}-${name}`, messages.slice(i, i + BATCH));
    const acked = new Set(result.explicitAcks ?? []);
    if (result.outcome !== "ok" || !messages.slice(i, i + BATCH).every((m) => acked.has(m.id))) {
      throw new Error(`${name}: a message was not acknowledged: ${JSON.stringify(result)}`);
    }
  }
  return threadsCpuMs(pid) - before;
}

const events = (n) =>
  Array.from({ length: n }, () => {
    const orderId = randomUUID();
    return {
      id: randomUUID(),
      timestamp: new Date(),
      attempts: 1,
      body: {
        type: "OrderPlaced",
        eventId: orderId,
        orderId,
        customerId: `c-${orderId.slice(0, 2)}`,
        amountCents: 1234,
        publishedAt: new Date().toISOString(),
      },
    };
  });

// Warm-up: every worker's isolate, classes and objects.
for (const name of NAMES) await deliver(name, events(20));
const start = loadavg();
for (let round = 0; round < ROUNDS; round++) {
  for (const name of shuffle(NAMES)) {
    const messages = events(MESSAGES / ROUNDS);
    cpu[name].first += await deliver(name, messages);
    // The same messages again: redeliveries (none acks them all again, running the work).
    cpu[name].duplicate += await deliver(name, messages);
  }
}
const end = loadavg();
await mf.dispose();

const per = (ms) => ms / MESSAGES;
const row = (name, label) =>
  `| ${label} | ${per(cpu[name].first).toFixed(2)} | ${(cpu[name].first / cpu.none.first).toFixed(2)}× | ${per(cpu[name].duplicate).toFixed(2)} | ${(cpu[name].duplicate / cpu.none.duplicate).toFixed(2)}× |`;
const section = `<!-- queue:start -->
## Queue consumers: workerd CPU per message

Command: \`make bench-queue\` (part of \`make bench\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.
Machine: ${cpus().length} cores, load average ${start.map((n) => n.toFixed(1)).join(" ")} → ${end.map((n) => n.toFixed(1)).join(" ")}.
One workerd holding the demo's loyalty consumer on each host and a consumer with no dedup doing the same
handler work (award the order into the customer's \`Orders\` object, \`Unique-By: orderId\`, then ack).
Each delivered ${MESSAGES} new events (first runs) and then the same ${MESSAGES} again (redeliveries), in batches
of ${BATCH}, over ${ROUNDS} interleaved rounds. CPU: workerd's, all threads (the consumer's isolate, its Durable
Objects and SQLite), from \`/proc/<pid>/task/*/schedstat\`, per message.

| consumer | first run, CPU ms | / no dedup | redelivery, CPU ms | / no dedup |
|---|---:|---:|---:|---:|
${row("rust", "oncekey, Rust host (`Consumer`)")}
${row("js", "oncekey, JavaScript host (`withQueueIdempotency`)")}
${row("none", "no dedup (the handler's work alone)")}

A first run adds the key's \`begin\` and \`finish\` (one new coordinator object, its writes and alarm) and the
counters' object to the handler's work; a redelivery is one \`begin\` that finds the key done, in place of the
handler (which, with no dedup, runs again: here its own \`Unique-By\` check keeps the points right).
<!-- queue:end -->`;

writeSection("queue", section);
console.log(section);
