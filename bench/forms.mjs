// What IDEMPOTENCY_FORMS=inject costs per HTML answer: the production proxy
// on each host, with forms on and off, in front of one Node server's 64 KB
// page holding 10 post forms. Each (host, forms) pair runs in its own
// workerd, in interleaved rounds; CPU is workerd's (all threads), from
// /proc, per page, and latency the p50 of sequential GETs.
// Writes the `forms` section of bench/RESULTS.md.
import { writeSection } from "./results.mjs";
import http from "node:http";
import { cpus, loadavg } from "node:os";
import { start } from "../tests/edge/harness.mjs";
import { threadsCpuMs, workerdPid } from "./workerd-cpu.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 4);
const PAGES = Number(process.env.PAGES ?? 200);

const form = '<form method="post" action="/orders"><input name="item"><button>Buy</button></form>';
const filler = `<p>${"Coffee, tea and cake. ".repeat(280)}</p>`;
const PAGE = `<!doctype html><html><body>${(filler + form).repeat(10)}</body></html>`;
const origin = http.createServer((_req, res) => {
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  res.end(PAGE);
});
await new Promise((resolve) => origin.listen(0, "127.0.0.1", resolve));
const ORIGIN_URL = `http://127.0.0.1:${origin.address().port}`;

const RUNS = [
  ["rust", "off"],
  ["rust", "inject"],
  ["js", "off"],
  ["js", "inject"],
];
const cpu = Object.fromEntries(RUNS.map(([h, f]) => [`${h}-${f}`, 0]));
const latencies = Object.fromEntries(RUNS.map(([h, f]) => [`${h}-${f}`, []]));
const before = loadavg();
for (let round = 0; round < ROUNDS; round++) {
  for (const [host, forms] of RUNS) {
    const proxy = await start({ worker: "proxy", host, quiet: true, vars: { ORIGIN_URL, IDEMPOTENCY_FORMS: forms } });
    const get = async () => {
      const res = await proxy.fetch("/page", { headers: { "accept-encoding": "identity" } });
      const html = await res.text();
      if (forms === "inject" && (html.match(/name="idempotency_key"/g) ?? []).length !== 10) throw new Error("no keys");
    };
    for (let i = 0; i < 20; i++) await get();
    const pid = workerdPid();
    const cpuBefore = threadsCpuMs(pid);
    for (let i = 0; i < PAGES; i++) {
      const t0 = performance.now();
      await get();
      latencies[`${host}-${forms}`].push(performance.now() - t0);
    }
    cpu[`${host}-${forms}`] += threadsCpuMs(pid) - cpuBefore;
    await proxy.dispose();
  }
}
const after = loadavg();
origin.close();

const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const perPage = (name) => cpu[name] / (ROUNDS * PAGES);
const row = (host) => {
  const [off, on] = [`${host}-off`, `${host}-inject`];
  return `| ${host === "js" ? "JavaScript" : "Rust"} | ${perPage(off).toFixed(3)} | ${perPage(on).toFixed(3)} | ${(perPage(on) / perPage(off)).toFixed(2)}× | ${p50(latencies[off]).toFixed(2)} | ${p50(latencies[on]).toFixed(2)} |`;
};
const section = `<!-- forms:start -->
## Forms with no JavaScript: the cost of \`IDEMPOTENCY_FORMS=inject\` per HTML answer

Command: \`make bench-forms\` (part of \`make bench\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.
Machine: ${cpus().length} cores, load average ${before.map((n) => n.toFixed(1)).join(" ")} → ${after.map((n) => n.toFixed(1)).join(" ")}.
The production proxy on each host in front of one Node server's ${(PAGE.length / 1024).toFixed(0)} KB HTML page with 10 post
forms, \`IDEMPOTENCY_FORMS\` off and on, each in its own workerd, ${ROUNDS} interleaved rounds of ${PAGES} sequential GETs
(after 20 to warm up). CPU: workerd's, all threads, per page; latency: p50 of the GET, whole body read.

| host | CPU ms, off | CPU ms, inject | inject / off | p50 ms, off | p50 ms, inject |
|---|---:|---:|---:|---:|---:|
${row("rust")}
${row("js")}

With \`inject\`, the page streams through the runtime's \`HTMLRewriter\` (lol_html inside workerd, outside the
wasm), and each form costs one call of the core's \`page_form_keys\` (its rule and a UUIDv7; forms with an \`id\` one call at the page's end). Answers that are not HTML are
not rewritten and cost nothing more.
<!-- forms:end -->`;
writeSection("forms", section);
console.log(section);
