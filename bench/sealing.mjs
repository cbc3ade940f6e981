// What IDEMPOTENCY_SEAL_KEYS costs (SPEC §4): the production proxy on each
// host, with and without a seal key, in front of one Node server's JSON
// answer (1 KB, and 256 KB), each (host, sealing, size) in its own workerd,
// in interleaved rounds. First executions: sequential POSTs with new keys
// (the seal runs after the answer, under waitUntil, so the CPU is read once
// that work has settled); replays: the same key again (each replay opens).
// CPU is workerd's (all threads), from /proc, per request; latency the p50.
// Writes the `sealing` section of bench/RESULTS.md.
import { randomBytes, randomUUID } from "node:crypto";
import http from "node:http";
import { cpus, loadavg } from "node:os";
import { sleep, start } from "../tests/edge/harness.mjs";
import { writeSection } from "./results.mjs";
import { threadsCpuMs, workerdPid } from "./workerd-cpu.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const REQUESTS = Number(process.env.REQUESTS ?? 150);
const SEAL_KEY = randomBytes(32).toString("base64");
const SIZES = { "1 KB": 1024, "256 KB": 256 * 1024 };

const origin = http.createServer((req, res) => {
  const size = Number(new URL(req.url, "http://x").searchParams.get("size"));
  req.resume();
  req.on("end", () => {
    res.writeHead(201, { "content-type": "application/json" });
    res.end(JSON.stringify({ order: randomUUID(), note: "x".repeat(Math.max(0, size - 60)) }));
  });
});
await new Promise((resolve) => origin.listen(0, "127.0.0.1", resolve));
const ORIGIN_URL = `http://127.0.0.1:${origin.address().port}`;

const RUNS = [];
for (const size of Object.keys(SIZES))
  for (const host of ["rust", "js"]) for (const sealed of [false, true]) RUNS.push({ size, host, sealed });
const name = ({ size, host, sealed }) => `${host}-${sealed ? "sealed" : "plain"}-${size}`;
const cpu = {};
const latencies = {};
for (const run of RUNS)
  for (const path of ["first", "replay"]) {
    cpu[`${name(run)}-${path}`] = 0;
    latencies[`${name(run)}-${path}`] = [];
  }

const before = loadavg();
for (let round = 0; round < ROUNDS; round++) {
  // A fresh order each round, so no run always follows the same one.
  const order = RUNS.map((run, i) => ({ run, at: (i * 7 + round * 3) % RUNS.length })).sort((a, b) => a.at - b.at);
  for (const { run } of order) {
    const vars = { ORIGIN_URL, ...(run.sealed ? { IDEMPOTENCY_SEAL_KEYS: SEAL_KEY } : {}) };
    const proxy = await start({ worker: "proxy", host: run.host, quiet: true, vars });
    const post = async (key) => {
      const res = await proxy.fetch(`/orders?size=${SIZES[run.size]}`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: '{"item":"tea"}',
      });
      const body = await res.text();
      if (res.status !== 201 || body.length < SIZES[run.size] - 100) throw new Error(`${name(run)}: ${res.status}`);
      return res;
    };
    for (let i = 0; i < 20; i++) await post(randomUUID());
    const replayKey = randomUUID();
    await post(replayKey);
    await post(replayKey); // its first retry writes the KV copy: not measured
    await sleep(300);
    const pid = workerdPid();
    for (const path of ["first", "replay"]) {
      const cpuBefore = threadsCpuMs(pid);
      for (let i = 0; i < REQUESTS; i++) {
        const t0 = performance.now();
        const res = await post(path === "first" ? randomUUID() : replayKey);
        latencies[`${name(run)}-${path}`].push(performance.now() - t0);
        if ((path === "replay") !== (res.headers.get("idempotent-replayed") === "true")) throw new Error("wrong path");
      }
      // What runs after the answer (the seal, `finish`) settles before the reading.
      await sleep(300);
      cpu[`${name(run)}-${path}`] += threadsCpuMs(pid) - cpuBefore;
    }
    await proxy.dispose();
  }
}
const after = loadavg();
origin.close();

const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const per = (key) => cpu[key] / (ROUNDS * REQUESTS);
const rows = [];
for (const size of Object.keys(SIZES)) {
  for (const host of ["rust", "js"]) {
    for (const path of ["first", "replay"]) {
      const plain = `${host}-plain-${size}-${path}`;
      const sealed = `${host}-sealed-${size}-${path}`;
      rows.push(
        `| ${host === "js" ? "JavaScript" : "Rust"} | ${size} | ${path === "first" ? "first execution" : "replay"} | ${per(plain).toFixed(3)} | ${per(sealed).toFixed(3)} | ${(per(sealed) / per(plain)).toFixed(2)}× | ${p50(latencies[plain]).toFixed(2)} | ${p50(latencies[sealed]).toFixed(2)} |`,
      );
    }
  }
}
const section = `<!-- sealing:start -->
## Sealing at rest: the cost of \`IDEMPOTENCY_SEAL_KEYS\`

Command: \`make bench-sealing\` (part of \`make bench\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.
Machine: ${cpus().length} cores, load average ${before.map((n) => n.toFixed(1)).join(" ")} → ${after.map((n) => n.toFixed(1)).join(" ")}.
The production proxy on each host in front of one Node server's JSON answer, with and without a seal key, each
(host, sealing, size) in its own workerd, ${ROUNDS} interleaved rounds of ${REQUESTS} sequential first executions (new
keys) then ${REQUESTS} replays of one key. CPU: workerd's, all threads, per request, read after the work that runs
after the answer (the seal, \`finish\`) has settled; latency: p50, whole body read.

| host | answer | path | CPU ms, plain | CPU ms, sealed | sealed / plain | p50 ms, plain | p50 ms, sealed |
|---|---|---|---:|---:|---:|---:|---:|
${rows.join("\n")}

A first execution seals after the caller has its answer (one Web Crypto \`encrypt\` per part: the answer, and its
cookies when it kept any); a replay opens before it answers (one \`decrypt\`; the cookies part only for their
browser). AES-GCM runs natively in the runtime, outside the wasm.
<!-- sealing:end -->`;
writeSection("sealing", section);
console.log(section);
