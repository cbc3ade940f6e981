// Load and faults against the worker in workerd (loopback only, bounded):
// many keys, each sent several times by clients that retry like the
// browser package, optionally with origin faults, a flaky store and
// runtime restarts mid-flight. `runLoad` drives it and checks the orders
// the demo origin recorded; `bench/load.mjs` and the edge tests call it.
import { randomUUID } from "node:crypto";
import { recordName, sleep, start, tempDir } from "./harness.mjs";

const HOST = "oncekey.test";

/**
 * Options:
 * - keys, duplicates: how many keys, and how many clients send each one;
 * - wave: keys per runtime. Each wave starts a fresh workerd, so one
 *   process holds about 2 × wave SQLite-backed objects (a key's
 *   coordinator, its item's orders). workerd caps SQLite's heap at 512 MiB
 *   for the whole process, about 3,000 open objects (one stays open until
 *   10 s after its last call); past that, calls fail with SQLITE_NOMEM
 *   ("internal error"), first in the final count, which opens every item's
 *   orders within seconds. A limit of one local process, not of the layer;
 * - concurrency: requests in flight at once;
 * - faults: { unavailable, error, drop } — the fraction of sends that carry
 *   that `Demo-Fault` (chosen per send, as an origin failing at random would);
 * - storeFailRate: the fraction of store calls that fail (0 = the real store);
 * - kills: how many times the runtime is stopped mid-run (spread evenly
 *   over the clients) and restarted on its persisted state;
 * - vars: worker variables (a short lease makes unknown outcomes settle);
 * - deadlineMs: a client gives up on a key after this long;
 * - quiet: drop the runtime's log lines (one per decision).
 */
export async function runLoad({ keys = 1000, wave = 1000, ...options } = {}) {
  const parts = [];
  for (let done = 0; done < keys; done += wave) {
    const size = Math.min(wave, keys - done);
    (options.log ?? (() => {}))(`wave ${parts.length + 1}: keys ${done + 1}–${done + size}`);
    parts.push(await runWave({ ...options, keys: size }));
  }
  const sum = (a, b) => {
    for (const [k, v] of Object.entries(b)) a[k] = typeof v === "object" ? sum(a[k] ?? {}, v) : (a[k] ?? 0) + v;
    return a;
  };
  return report({
    items: parts.flatMap((p) => p.items),
    results: parts.flatMap((p) => p.results),
    latencies: parts.flatMap((p) => p.latencies),
    counts: parts.reduce((a, p) => sum(a, p.counts), {}),
    loadMs: parts.reduce((a, p) => a + p.loadMs, 0),
    storeFaults: parts.reduce((a, p) => sum(a, p.storeFaults), {}),
    keys,
    duplicates: options.duplicates ?? 5,
    concurrency: options.concurrency ?? 64,
    waves: parts.length,
  });
}

/** One wave of keys on a runtime of its own. */
async function runWave({
  keys = 1000,
  duplicates = 5,
  concurrency = 64,
  faults = {},
  storeFailRate = 0,
  kills = 0,
  vars = {},
  deadlineMs = 120_000,
  quiet = true,
  log = () => {},
} = {}) {
  const withFaults = storeFailRate > 0 || kills > 0;
  const persist = withFaults ? tempDir() : undefined;
  const options = { vars, persist, quiet, ...(storeFailRate > 0 ? { store: "flaky", storeFailRate } : {}) };
  const runtime = { worker: await start(options), generation: 0, inFlight: new Set() };
  const run = randomUUID().slice(0, 8);
  const items = Array.from({ length: keys }, (_, i) => ({
    index: i,
    key: randomUUID(),
    item: `load-${run}-${i}`,
    sends: [],
    unknownBy: new Set(),
  }));

  // Duplicates arrive together (a double submit) and later (a retry, a
  // reload): each client's send slot is its key's slot plus a random lag.
  const lags = [0, 0, 8, 64, 512];
  const tasks = [];
  for (const entry of items) {
    for (let d = 0; d < duplicates; d++) {
      const lag = lags[d % lags.length];
      tasks.push({ entry, slot: entry.index + (lag ? Math.floor(Math.random() * lag) : 0) });
    }
  }
  tasks.sort((a, b) => a.slot - b.slot);

  const started = Date.now();
  const latencies = [];
  const counts = { sends: 0, networkErrors: 0, byStatus: {}, killedInFlight: 0, otherFailures: {} };
  let next = 0;
  let stopKills = false;

  const killer = (async () => {
    for (let k = 0; k < kills && !stopKills; k++) {
      // Spread the kills over the run: the k-th when that share of the
      // clients has started.
      const at = Math.floor(((k + 1) / (kills + 1)) * tasks.length);
      while (next < at && !stopKills) await sleep(50);
      if (stopKills) break;
      const dying = runtime.worker;
      for (const send of runtime.inFlight) {
        send.entry.unknownBy.add("kill");
        counts.killedInFlight++;
      }
      log(`kill ${k + 1}: ${runtime.inFlight.size} sends in flight`);
      runtime.generation++;
      await dying.dispose();
      runtime.worker = await start(options);
    }
  })();

  async function send(entry) {
    const roll = Math.random();
    let fault = null;
    if (roll < (faults.unavailable ?? 0)) fault = "unavailable";
    else if (roll < (faults.unavailable ?? 0) + (faults.error ?? 0)) fault = "error";
    else if (roll < (faults.unavailable ?? 0) + (faults.error ?? 0) + (faults.drop ?? 0)) fault = "drop";
    const headers = { "content-type": "application/json", "idempotency-key": entry.key };
    if (fault) headers["demo-fault"] = fault;
    const handle = { entry };
    runtime.inFlight.add(handle);
    const t0 = performance.now();
    counts.sends++;
    try {
      const res = await runtime.worker.fetch("/api/orders", {
        method: "POST",
        headers,
        body: JSON.stringify({ item: entry.item, quantity: 1, amountCents: 500 }),
      });
      const text = await res.text();
      latencies.push(performance.now() - t0);
      counts.byStatus[res.status] = (counts.byStatus[res.status] ?? 0) + 1;
      let body = null;
      try {
        body = JSON.parse(text);
      } catch {}
      const replayed = res.headers.get("idempotent-replayed") === "true";
      if (res.status >= 500 && !(res.status === 500 && body?.type === "urn:oncekey:demo:charge-failed")) {
        const kind = `${res.status} ${body?.type ?? text.slice(0, 40)}`;
        counts.otherFailures[kind] = (counts.otherFailures[kind] ?? 0) + 1;
      }
      if (fault === "drop" && res.status === 502) entry.unknownBy.add("drop");
      return { status: res.status, body, replayed, fault, retryAfter: res.headers.get("retry-after") };
    } catch (error) {
      counts.networkErrors++;
      return { status: 0, error: String(error), fault };
    } finally {
      runtime.inFlight.delete(handle);
    }
  }

  /** One client: sends until it gets a final answer, like idempotentFetch. */
  async function client(entry) {
    const deadline = Date.now() + deadlineMs;
    const answers = [];
    for (let tries = 0; Date.now() < deadline; tries++) {
      const answer = await send(entry);
      answers.push(answer);
      const code = answer.body?.type;
      const final =
        answer.status === 201 ||
        (answer.status === 500 && code === "urn:oncekey:demo:charge-failed") ||
        (answer.status >= 400 && answer.status < 500 && answer.status !== 409 && answer.status !== 408);
      if (final) return { answers, final: answer };
      // 409 key-in-flight is polled; 502, 503 and network errors back off
      // (full jitter, capped). Waits are shorter than a browser's 1 s
      // Retry-After so the run stays short; the lease decides, not the wait.
      const wait = answer.status === 409 ? 100 + Math.random() * 150 : Math.random() * Math.min(1000, 50 * 2 ** tries);
      await sleep(wait);
    }
    return { answers, final: null };
  }

  const results = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < tasks.length) {
        const task = tasks[next++];
        const outcome = await client(task.entry);
        task.entry.sends.push(outcome);
        results.push(outcome);
      }
    }),
  );
  stopKills = true;
  await killer;
  const loadMs = Date.now() - started;

  // Let finishes under waitUntil land, then read every item's orders.
  await sleep(500);
  const worker = runtime.worker;
  let cursor = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (cursor < items.length) {
        const entry = items[cursor++];
        // A count that does not come back is a failed read, never zero orders.
        try {
          entry.orders = await retrying(async () => {
            const res = await worker.fetch(`/api/orders?item=${encodeURIComponent(entry.item)}`);
            const text = await res.text();
            const orders = res.status === 200 ? JSON.parse(text).orders : undefined;
            if (!Array.isArray(orders)) throw new Error(`${res.status} ${text.slice(0, 120)}`);
            return orders;
          }, log);
        } catch (error) {
          entry.unreadable = String(error);
        }
      }
    }),
  );
  // Store faults, read from the flaky store: a finish whose every try
  // failed before reaching the coordinator left its outcome unrecorded.
  const storeFaults = {
    begin: { "failed-before": 0, "failed-after": 0 },
    finish: { "failed-before": 0, "failed-after": 0 },
  };
  if (storeFailRate > 0) {
    const faultsWorker = await worker.mf.getWorker("faults");
    const notes = await retrying(async () => (await faultsWorker.fetch("http://faults/?notes")).json(), log);
    const byRecord = new Map();
    for (const note of notes) {
      if (note.result !== "ok") storeFaults[note.kind][note.result]++;
      if (note.kind !== "finish") continue;
      const finishes = byRecord.get(note.record) ?? new Map();
      finishes.set(note.attempt, [...(finishes.get(note.attempt) ?? []), note.result]);
      byRecord.set(note.record, finishes);
    }
    for (const entry of items) {
      const finishes = byRecord.get(recordName(HOST, undefined, entry.key)) ?? new Map();
      for (const [, seen] of finishes) {
        if (seen.every((r) => r === "failed-before")) entry.unknownBy.add("finish-lost");
      }
      // The answer goes before the finish (SPEC §4): a runtime stopped in
      // between leaves an attempt the origin ran, whose client got its
      // answer, with no finish at all — its outcome unrecorded, as for a
      // crash, and the key reclaimed after its lease. The kill's own count
      // (sends still waiting for an answer) does not see it.
      if (kills > 0) {
        for (const order of entry.orders ?? []) {
          if (order.attempt !== null && !finishes.has(order.attempt)) entry.unknownBy.add("finish-never-sent");
        }
      }
    }
  }
  await worker.dispose();
  return { items, results, latencies, counts, loadMs, storeFaults };
}

/** Reads through a runtime that may hiccup once in thousands of calls. */
async function retrying(read, log) {
  for (let tries = 1; ; tries++) {
    try {
      return await read();
    } catch (error) {
      if (tries >= 6) throw error;
      log(`read failed (try ${tries}): ${error}`);
      await sleep(200 * tries);
    }
  }
}

function report({ items, results, latencies, counts, loadMs, keys, duplicates, concurrency, storeFaults, waves }) {
  const problems = [];
  let orders = 0;
  let knownKeys = 0;
  let unknownKeys = 0;
  let extraOrders = 0;
  const extraByCause = {};
  const orderCountOfUnknown = {};
  let freshAnswers = 0;
  let replayedAnswers = 0;
  let inFlightAnswers = 0;
  let unsettled = 0;
  let lost2xx = 0;
  let unreadable = 0;
  const finalByStatus = {};
  for (const entry of items) {
    // An unreadable count is its own failed check; the checks on orders skip it.
    const readable = entry.unreadable === undefined;
    if (!readable) {
      unreadable++;
      problems.push(`${entry.item}: its orders could not be read (${entry.unreadable})`);
    }
    const list = entry.orders ?? [];
    orders += list.length;
    const ids = new Set(list.map((o) => o.orderId));
    for (const send of entry.sends) {
      if (!send.final) unsettled++;
      else finalByStatus[send.final.status] = (finalByStatus[send.final.status] ?? 0) + 1;
      for (const a of send.answers) {
        if (a.status === 409) inFlightAnswers++;
        if (a.status === 201) {
          if (a.replayed) replayedAnswers++;
          else freshAnswers++;
          if (readable && !ids.has(a.body?.orderId)) {
            lost2xx++;
            problems.push(`${entry.item}: a 201 for order ${a.body?.orderId} that the origin does not have`);
          }
        }
      }
    }
    const attempts = list.map((o) => o.attempt);
    const rising = attempts.every((a, i) => i === 0 || (a !== null && a > attempts[i - 1]));
    if (!rising) problems.push(`${entry.item}: attempts not rising: ${attempts.join(",")}`);
    if (entry.unknownBy.size === 0) {
      knownKeys++;
      if (readable && list.length !== 1)
        problems.push(`${entry.item}: outcome known but ${list.length} orders (attempts ${attempts.join(",")})`);
      // One execution answered fresh; every other final answer is its replay.
      const fresh = entry.sends.filter((s) => s.final && !s.final.replayed).length;
      if (fresh !== 1) problems.push(`${entry.item}: ${fresh} fresh final answers for one execution`);
    } else {
      unknownKeys++;
      if (!readable) continue;
      orderCountOfUnknown[list.length] = (orderCountOfUnknown[list.length] ?? 0) + 1;
      if (list.length > 1) {
        extraOrders += list.length - 1;
        const cause = [...entry.unknownBy].sort().join("+");
        extraByCause[cause] = (extraByCause[cause] ?? 0) + list.length - 1;
      }
    }
  }
  const sorted = latencies.slice().sort((a, b) => a - b);
  const pct = (p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0);
  return {
    keys,
    duplicates,
    concurrency,
    waves,
    clients: results.length,
    sends: counts.sends,
    networkErrors: counts.networkErrors,
    byStatus: counts.byStatus,
    otherFailures: counts.otherFailures,
    finalByStatus,
    killedInFlight: counts.killedInFlight,
    storeFaults,
    loadMs,
    requestsPerSecond: Math.round((counts.sends / loadMs) * 1000),
    p50Ms: Math.round(pct(50) * 10) / 10,
    p99Ms: Math.round(pct(99) * 10) / 10,
    orders,
    knownKeys,
    unknownKeys,
    orderCountOfUnknown,
    extraOrders,
    extraByCause,
    freshAnswers,
    replayedAnswers,
    inFlightAnswers,
    unsettled,
    lost2xx,
    unreadable,
    problems,
  };
}
