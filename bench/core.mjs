// Writes the criterion results of `cargo bench --bench core` (benches/core.rs)
// into bench/RESULTS.md, between <!-- core:start --> and <!-- core:end -->.
import { execSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { writeSection } from "./results.mjs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const CRITERION = join(process.env.CARGO_TARGET_DIR ?? join(ROOT, "target"), "criterion");

/** Every benchmark criterion saved this run: {id, median ns, throughput}. */
function collect(dir, out = []) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (!statSync(path).isDirectory()) continue;
    if (entry === "new" && existsSync(join(path, "estimates.json"))) {
      const meta = JSON.parse(readFileSync(join(path, "benchmark.json"), "utf8"));
      const est = JSON.parse(readFileSync(join(path, "estimates.json"), "utf8"));
      out.push({
        id: meta.full_id,
        ns: est.median.point_estimate,
        lo: est.median.confidence_interval.lower_bound,
        hi: est.median.confidence_interval.upper_bound,
        throughput: meta.throughput,
      });
    } else if (entry !== "report" && entry !== "base" && entry !== "change") collect(path, out);
  }
  return out;
}

const time = (ns) =>
  ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(2)} µs` : `${ns.toFixed(0)} ns`;
function rate(b) {
  if (b.throughput?.Bytes) return `${((b.throughput.Bytes / b.ns / 1.048576) * 1e3).toFixed(0)} MiB/s`;
  if (b.throughput?.Elements) return `${((b.throughput.Elements / b.ns) * 1e3).toFixed(2)} M/s`;
  return "";
}
const ORDER = [
  "decision+fingerprint/first execution/1KB",
  "decision+fingerprint/replay/1KB",
  "decision+fingerprint/first execution/64KB",
  "decision+fingerprint/replay/64KB",
];
const rank = (id) => (ORDER.includes(id) ? ORDER.indexOf(id) : 100);
const benches = collect(CRITERION).sort((a, b) => rank(a.id) - rank(b.id) || a.id.localeCompare(b.id));
const rows = benches.map((b) => `| ${b.id} | ${time(b.ns)} | ${time(b.lo)} – ${time(b.hi)} | ${rate(b)} |`);
const section = `<!-- core:start -->
## Core microbenchmarks (native)

Command: \`make bench-core\` (\`cargo bench --bench core\`, criterion ${"0.8.2"}, part of \`make bench\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.
Machine: ${execSync("nproc").toString().trim()} cores (\`nproc\`), ${cpus()[0]?.model ?? "unknown"}; load average ${loadavg()
  .map((l) => l.toFixed(1))
  .join(" ")} when it ended.
Built with the release profile the worker ships with (\`opt-level = "z"\`, LTO). "decision+fingerprint" is all the core
does for one keyed request before any I/O: parse the key, fingerprint method, target, media type and body
(SHA-256), name the record (SHA-256 over host, \`Authorization\` and key) and run \`begin\` on the record found
(none: first execution; a matching \`Completed\`: replay). Throughput counts request-body bytes for those and
encoded bytes for the record rows.

| benchmark | median | 95% interval | throughput |
|---|---:|---:|---:|
${rows.join("\n")}
<!-- core:end -->
`;
writeSection("core", section);
console.log(section);
