// make load: the load and fault runs of tests/edge/load.mjs at full size,
// against the release worker in workerd (Miniflare) on loopback. Writes
// the "Load and faults" section of bench/RESULTS.md and exits non-zero if
// any check failed.
//
//   LOAD_KEYS (10000)   keys in the clean run, each sent by 5 clients
//   FAULT_KEYS (10000)  keys in the run with faults
//   CONCURRENCY (64)    requests in flight
import { writeSection } from "./results.mjs";
import { cpus, loadavg } from "node:os";
import { runLoad } from "../tests/edge/load.mjs";

const LOAD_KEYS = Number(process.env.LOAD_KEYS ?? 10_000);
const FAULT_KEYS = Number(process.env.FAULT_KEYS ?? 10_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 64);
const FAULTS = { unavailable: 0.05, error: 0.05, drop: 0.03 };
const STORE_FAIL_RATE = 0.05;
const KILLS = 1; // per wave of 1,000 keys
const LEASE = {
  IDEMPOTENCY_LEASE_SECONDS: "3",
  IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "2",
  IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0",
};
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
const fmt = (n) => n.toLocaleString("en-US");
const statuses = (o) =>
  Object.entries(o)
    .map(([k, v]) => `${k}: ${fmt(v)}`)
    .join(", ") || "none";

const loadAtStart = load();
console.error(`load: clean run, ${LOAD_KEYS} keys × 5, ${CONCURRENCY} in flight`);
const clean = await runLoad({ keys: LOAD_KEYS, duplicates: 5, concurrency: CONCURRENCY, log: console.error });
function render(faulty, loadAtEnd) {
  const causes = !faulty
    ? ""
    : Object.entries(faulty.extraByCause)
        .map(([k, v]) => `${k}: ${v}`)
        .join(", ") || "none";
  const unknownHist = !faulty
    ? ""
    : Object.entries(faulty.orderCountOfUnknown)
        .map(([k, v]) => `${fmt(v)} with ${k} order${k === "1" ? "" : "s"}`)
        .join(", ");
  const section = `<!-- load:start -->
## Load and faults

Command: \`make load\` (\`node bench/load.mjs\`; sizes from \`LOAD_KEYS\`, \`FAULT_KEYS\`,
\`CONCURRENCY\`), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC. Machine: ${cpus().length} cores,
shared; load average ${loadAtStart} at start, ${loadAtEnd} at the end. The release worker in workerd through
Miniflare (\`tests/edge/harness.mjs\`), loopback only, in waves of 1,000 keys,
each on a fresh workerd (${clean.waves} waves; why below). Each key is one order
(its own item); ${clean.duplicates} clients send it: two at once (a double submit),
three later by a random lag of up to 8, 64 and 512 keys (a retry, a reload).
Clients retry like \`idempotentFetch\`: a 409 is polled every 100–250 ms (shorter
than its \`Retry-After: 1\`, to keep the run short), a 502, 503 or network
error backs off with full jitter; a 201, the stored 500 or another 4xx is final.
Orders are counted afterwards from the demo origin's strongly consistent store.

Why waves: workerd (1.20260426) caps SQLite's heap at 512 MiB for the whole
process (\`sqlite3_hard_heap_limit64\`), and a Durable Object keeps its database
open, about 170 KB of that heap, until 10 s after its last call. Past about 3,000
open objects, calls fail with \`SQLITE_NOMEM\` ("internal error" to the worker):
in single waves of 4,000 and 6,000 keys, during the final count, which opens every
item's \`Orders\` object within seconds. A wave of 1,000 keys holds about 2,000.
It is not the open-file limit (20,000 here): at the failure workerd held about
9,200 descriptors, three per open database (the file, \`-wal\`, \`-shm\`). With the
heap limit lifted (\`WORKERD_ALL_AUTOGATES=1\` turns on its
\`increase-sqlite-hard-heap-limit\`, 8 GiB), 8,000 keys ran in one wave without a
failure, peaking at 5,500 open objects and 16,400 descriptors: the open-file limit
comes next, at about 6,600 open objects. A limit of one local process, not of the
layer. A count that fails is retried and, if it never succeeds, reported as
unreadable; it used to be read as zero orders, which is why the failure first
looked like lost orders.

### ${fmt(clean.keys)} keys × ${clean.duplicates}, no faults

| figure | value |
|---|---:|
| clients / HTTP requests sent | ${fmt(clean.clients)} / ${fmt(clean.sends)} |
| requests/s, p50, p99 | ${fmt(clean.requestsPerSecond)}/s, ${clean.p50Ms} ms, ${clean.p99Ms} ms |
| wall time | ${(clean.loadMs / 1000).toFixed(1)} s |
| **orders created** | **${fmt(clean.orders)}** (keys: ${fmt(clean.keys)}) |
| fresh 201s (one per execution) | ${fmt(clean.freshAnswers)} |
| replayed 201s (the stored answer, same \`orderId\`) | ${fmt(clean.replayedAnswers)} |
| 409 \`key-in-flight\` (then polled) | ${fmt(clean.inFlightAnswers)} |
| answers by status | ${statuses(clean.byStatus)} |
| clients without a final answer / 2xx whose order is missing | ${clean.unsettled} / ${clean.lost2xx} |
| failed checks | **${clean.problems.length}** |

${faulty ? faultSection(faulty, causes, unknownHist) : "The run with faults has not finished.\n"}
${[...clean.problems, ...(faulty?.problems ?? [])]
  .slice(0, 20)
  .map((p) => `\n- ${p}`)
  .join("")}
<!-- load:end -->
`;

  return section;
}

function faultSection(faulty, causes, unknownHist) {
  return `### ${fmt(faulty.keys)} keys × ${faulty.duplicates} with faults while the load runs

Faults: each send carries \`Demo-Fault: unavailable\` (503, nothing created) with
p = ${FAULTS.unavailable}, \`error\` (order created, then a 500) with p = ${FAULTS.error}, \`drop\` (order created,
no answer) with p = ${FAULTS.drop}; the coordinator sits behind a store that fails ${STORE_FAIL_RATE * 100} % of calls
(half before reaching it, half after it committed, answer lost); the runtime
is stopped once per wave, mid-wave (${faulty.waves} times), and restarted on its persisted DO and KV state.
Lease 3 s, origin timeout 2 s, so unknown outcomes settle within the run.

| figure | value |
|---|---:|
| clients / HTTP requests sent | ${fmt(faulty.clients)} / ${fmt(faulty.sends)} |
| requests/s, p50, p99 | ${fmt(faulty.requestsPerSecond)}/s, ${faulty.p50Ms} ms, ${faulty.p99Ms} ms |
| wall time | ${(faulty.loadMs / 1000).toFixed(1)} s |
| answers by status | ${statuses(faulty.byStatus)}; network errors ${fmt(faulty.networkErrors)} |
| failures other than the stored 500 | ${statuses(faulty.otherFailures)} |
| final answers | ${statuses(faulty.finalByStatus)} |
| sends in flight when the runtime was stopped | ${fmt(faulty.killedInFlight)} |
| store calls failed (begin before/after, finish before/after) | ${faulty.storeFaults.begin["failed-before"]}/${faulty.storeFaults.begin["failed-after"]}, ${faulty.storeFaults.finish["failed-before"]}/${faulty.storeFaults.finish["failed-after"]} |
| orders created | ${fmt(faulty.orders)} |
| **keys whose outcome was known: exactly one order** | **${fmt(faulty.knownKeys)}** (violations: ${faulty.problems.filter((p) => p.includes("outcome known") || p.includes("fresh final")).length}) |
| keys with an unknown outcome (SPEC §3: \`drop\`, a stop mid-flight, or a finish never recorded) | ${fmt(faulty.unknownKeys)}: ${unknownHist || "none"} |
| **extra orders, where the origin's own fencing is needed** | **${fmt(faulty.extraOrders)}** (by cause: ${causes}); every one carries a higher \`Idempotency-Attempt\` than the order before it |
| 2xx answers whose order is missing | ${faulty.lost2xx} |
| clients without a final answer | ${faulty.unsettled} |
| failed checks (attempts not rising, lost 2xx, known keys ≠ 1 order) | **${faulty.problems.length}** |

Reading the run with faults: a key's outcome is known when none of its
attempts ended without an answer. Extra orders come only from \`drop\` (the
origin acted, its answer was lost), a runtime stopped while an attempt was
at the origin, or a finish whose three tries (the layer repeats a failed
finish twice) all failed before reaching the coordinator — at 2.5 % of calls
failing that way, about one finish in 64,000. Each extra order carries the
next \`Idempotency-Attempt\`: that number is what the origin has to fence on.
`;
}

function write(section) {
  writeSection("load", section);
}

write(render(null, load()));
console.error(`load: fault run, ${FAULT_KEYS} keys × 5`);
const faulty = await runLoad({
  keys: FAULT_KEYS,
  duplicates: 5,
  concurrency: CONCURRENCY,
  faults: FAULTS,
  storeFailRate: STORE_FAIL_RATE,
  kills: KILLS,
  vars: LEASE,
  deadlineMs: 180_000,
  log: console.error,
});
const section = render(faulty, load());
write(section);
console.log(section);
if (
  clean.problems.length ||
  faulty.problems.length ||
  clean.orders !== clean.keys ||
  clean.unsettled ||
  faulty.unsettled
) {
  console.error("load: checks failed");
  process.exit(1);
}
