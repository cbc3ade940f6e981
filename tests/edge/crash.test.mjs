// Crashes (SPEC §3–4, issue 34): the runtime is killed (workerd, SIGKILL
// through Miniflare's dispose) with attempts in flight, and restarted on the
// same persisted Durable Object and KV state, twice in one test, on the
// production proxy in front of a real Node HTTP origin that outlives the
// kills and counts, per key, every attempt number it is sent.
//
// Each round sends fresh keys, every key by DUPLICATES callers at once:
// - answered: the origin answers at once; the round waits until each
//   record is completed (the admin path) before the kill;
// - in flight: the origin holds attempt 1 past the kill (its answer never
//   reaches the dead runtime);
// - answered, finish lost: the origin answers and the caller has the
//   answer, but every `finish` is held HOLD_MS on its way to the object
//   (store "hold-finish"), and the kill comes first: the record stays
//   running, as for an attempt the origin never answered;
// - carried (round 2): in-flight keys of round 1 whose lease ended, retried
//   now and held at the origin again: in flight at the second kill too.
// After each restart: every answered key replays (same body, the origin not
// called); every key in flight at the kill is still held (409, the origin
// not called) until its lease ends; then DUPLICATES callers at once run it
// exactly once more, as the next attempt, and the others replay that.
// At the end, the origin has seen each key's attempts 1..n exactly once
// each, n being 1 + the kills it was in flight for.
import assert from "node:assert/strict";
import { test } from "node:test";
import { BASE, HOST, newKey, problemOf, recordName, start, tempDir, until } from "./harness.mjs";
import { serve } from "./origin/server.mjs";

const TOKEN = "operator-secret";
const DUPLICATES = 3;
const ROUNDS = 2;
/** How long every finish is held on its way to the object. */
const HOLD_MS = 1000;
/** How long a duplicate waits inside the object for a running attempt. */
const WAIT_MS = 2500;
const LEASE_SECONDS = 8;
/** After a lease ends by the record's own clock, before a retry is sent. */
const LEASE_MARGIN_MS = 400;
const VARS = {
  IDEMPOTENCY_ADMIN_TOKEN: TOKEN,
  IDEMPOTENCY_LEASE_SECONDS: String(LEASE_SECONDS),
  // Below the lease, with room for a whole finish try (the store limit, 5 s).
  IDEMPOTENCY_ORIGIN_TIMEOUT_SECONDS: "3",
  IDEMPOTENCY_IN_FLIGHT_WAIT_MS: String(WAIT_MS),
};
/** New keys per round, by what happens to them at the kill. */
const PER_ROUND = { answered: 5, inFlight: 4, finishLost: 3 };
/** Round-1 keys (in flight, finish lost) whose retry is in flight at the next kill. */
const CARRIED = { inFlight: 2, finishLost: 1 };

/**
 * The origin: records every attempt number it is sent per key (on arrival,
 * before answering), answers at once unless the test holds that attempt,
 * and answers 201 with the key, the attempt and a serial of its own.
 */
function countingOrigin() {
  const arrivals = new Map();
  const holds = new Map();
  let serial = 0;
  const handle = async (request) => {
    const key = request.headers.get("idempotency-key");
    const attempt = Number(request.headers.get("idempotency-attempt"));
    const { item } = await request.json();
    if (request.method !== "POST" || new URL(request.url).pathname !== "/v1/orders" || item !== key) {
      return new Response("unexpected request", { status: 400 });
    }
    arrivals.set(key, [...(arrivals.get(key) ?? []), attempt]);
    await holds.get(`${key}#${attempt}`)?.promise;
    const body = JSON.stringify({ key, attempt, serial: ++serial });
    return new Response(body, { status: 201, headers: { "content-type": "application/json" } });
  };
  return {
    handle,
    /** Every attempt number the origin was sent for `key`, in arrival order. */
    attempts: (key) => [...(arrivals.get(key) ?? [])],
    /** Holds attempt `attempt` of `key` until release(key, attempt). */
    hold(key, attempt) {
      let release;
      const promise = new Promise((resolve) => {
        release = resolve;
      });
      holds.set(`${key}#${attempt}`, { promise, release });
    },
    release(key, attempt) {
      holds.get(`${key}#${attempt}`)?.release();
    },
    releaseAll() {
      for (const { release } of holds.values()) release();
    },
  };
}

/** POST the key's one request: what the caller got, or `{error}` if it got nothing. */
async function post(worker, key) {
  try {
    const res = await worker.fetch("/v1/orders", {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ item: key }),
    });
    const status = res.status;
    const replayed = res.headers.get("idempotent-replayed") === "true";
    const retryAfter = res.headers.get("retry-after");
    const problem = res.headers.get("content-type") === "application/problem+json" ? await problemOf(res) : null;
    const text = problem ? JSON.stringify(problem) : await res.text();
    return { status, replayed, retryAfter, problem, text };
  } catch (error) {
    return { error: String(error) };
  }
}

/** `copies` callers of each key at once: [{key, done, result}], `result` set once settled. */
function launch(worker, keys, copies = DUPLICATES) {
  return keys.flatMap((key) =>
    Array.from({ length: copies }, () => {
      const call = { key, result: undefined };
      call.done = post(worker, key).then((result) => {
        call.result = result;
        return result;
      });
      return call;
    }),
  );
}

/** `copies` callers of each key at once, all settled: key → their results. */
async function burst(worker, keys, copies = DUPLICATES) {
  const calls = launch(worker, keys, copies);
  await Promise.all(calls.map((c) => c.done));
  return byKey(calls);
}

const byKey = (calls) => {
  const map = new Map();
  for (const { key, result } of calls) map.set(key, [...(map.get(key) ?? []), result]);
  return map;
};
const fresh = (results) => results.filter((r) => r.status === 201 && !r.replayed);
const show = (results) => JSON.stringify(results.map((r) => r.error ?? [r.status, r.replayed, r.problem?.code]));
const oneTo = (n) => Array.from({ length: n }, (_, i) => i + 1);

/** The key's record as the admin path states it ({kind, attempt, leaseExpiresAt, outcomeUnknown, ...}). */
async function recordOf(worker, key) {
  const record = recordName(new URL(BASE).hostname, undefined, key);
  const res = await worker.fetch(`/.well-known/oncekey/records/${record}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(res.status, 200, `inspect answered ${res.status}: ${await res.clone().text()}`);
  return res.json();
}

test(`crashes on the ${HOST} host: ${ROUNDS} kills mid-attempt, each restart on the same persisted state`, async (t) => {
  const started = Date.now();
  const persist = tempDir();
  const origin = countingOrigin();
  const server = await serve(origin.handle);
  const boot = () =>
    start({
      worker: "proxy",
      store: "hold-finish",
      storeDelayMs: HOLD_MS,
      persist,
      quiet: true,
      vars: { ORIGIN_URL: server.url, ...VARS },
    });
  /**
   * Every key so far: how many attempts it has run at the origin, and the
   * answer it replays once completed (`body`, null while in flight).
   */
  const expected = new Map();
  /** Keys in flight at the last kill, retried only in this round (held again at the origin). */
  let carried = [];
  let worker;
  try {
    worker = await boot();
    for (let round = 1; round <= ROUNDS; round++) {
      const at = `round ${round}`;
      const fresher = (n) => Array.from({ length: n }, () => newKey());
      const answered = fresher(PER_ROUND.answered);
      const inFlight = fresher(PER_ROUND.inFlight);
      const finishLost = fresher(PER_ROUND.finishLost);

      // Answered before the kill: one caller of each key runs it, the
      // others wait in the object and replay it once its finish lands.
      for (const [key, results] of await burst(worker, answered)) {
        assert.ok(
          results.every((r) => r.status === 201),
          `${at}: ${show(results)}`,
        );
        assert.equal(
          fresh(results).length,
          1,
          `${at}: one caller ran the key, the others replayed it: ${show(results)}`,
        );
        assert.equal(new Set(results.map((r) => r.text)).size, 1, `${at}: every caller got the same answer`);
        assert.equal(JSON.parse(results[0].text).attempt, 1);
        assert.deepEqual(origin.attempts(key), [1], `${at}: the origin ran the key once`);
        expected.set(key, { attempts: 1, body: results[0].text });
      }
      for (const key of answered) {
        const state = await recordOf(worker, key);
        assert.deepEqual([state.kind, state.attempt], ["completed", 1], `${at}: ${JSON.stringify(state)}`);
      }

      // In flight at the kill: the new keys' attempt 1 and the carried keys'
      // next attempt, held at the origin; the finish-lost keys' attempt 1,
      // answered just before the kill.
      const held = [...inFlight, ...finishLost, ...carried];
      const attemptAtKill = new Map(held.map((key) => [key, (expected.get(key)?.attempts ?? 0) + 1]));
      for (const [key, attempt] of attemptAtKill) origin.hold(key, attempt);
      const calls = launch(worker, held);
      await until(
        () => held.map((key) => origin.attempts(key).length),
        (counts) => counts.every((n, i) => n >= attemptAtKill.get(held[i])),
        { what: `${at}: every held key's attempt at the origin`, everyMs: 20 },
      );
      for (const key of held) assert.deepEqual(origin.attempts(key), oneTo(attemptAtKill.get(key)), `${at}: ${key}`);
      // The finish-lost keys answer: their callers have the answer, and
      // their finish is held HOLD_MS on its way to the object. The kill
      // comes first (the restarted records say so, below).
      for (const key of finishLost) origin.release(key, 1);
      await until(
        () => finishLost.filter((key) => calls.some((c) => c.key === key && c.result !== undefined)).length,
        (n) => n === finishLost.length,
        { what: `${at}: the finish-lost keys' answers`, everyMs: 5 },
      );
      const killedAt = Date.now();
      await worker.dispose();
      worker = undefined;
      t.diagnostic(`${at}: killed ${Date.now() - killedAt} ms after the finish-lost answers`);
      await Promise.all(calls.map((c) => c.done));
      const lost = new Set(
        calls.filter((c) => !fresh([c.result]).length).map((c) => c.result.error ?? c.result.status),
      );
      t.diagnostic(`${at}: what the callers cut off by the kill got: ${[...lost].join("; ")}`);
      for (const [key, results] of byKey(calls)) {
        if (finishLost.includes(key)) {
          // The one caller that ran it has the origin's answer; the others
          // were waiting for its finish when the runtime died.
          const winners = fresh(results);
          assert.equal(winners.length, 1, `${at}: ${show(results)}`);
          assert.equal(JSON.parse(winners[0].text).attempt, 1);
          const rest = results.filter((r) => r !== winners[0]);
          assert.ok(
            rest.every((r) => r.error || r.status >= 500),
            `${at}: ${show(results)}`,
          );
        } else {
          assert.ok(
            results.every((r) => r.error || r.status >= 500),
            `${at}: no caller of a key in flight got an answer: ${show(results)}`,
          );
        }
        expected.set(key, { attempts: attemptAtKill.get(key), body: null });
      }

      // Restart on the same state.
      const bootAt = Date.now();
      worker = await boot();
      t.diagnostic(`${at}: restarted in ${Date.now() - bootAt} ms`);
      const leaseEnds = [];
      for (const key of held) {
        const state = await recordOf(worker, key);
        // The crashed attempt still holds the key: running as far as the
        // object knows, since nothing ever ended it.
        assert.deepEqual(
          [state.kind, state.attempt, state.outcomeUnknown],
          ["in-flight", attemptAtKill.get(key), false],
          `${at}: ${JSON.stringify(state)}`,
        );
        leaseEnds.push(Date.parse(state.leaseExpiresAt));
      }
      // Room for a duplicate's whole wait before the first lease ends: else
      // the check below could not tell a held key from a reclaimed one.
      assert.ok(
        Math.min(...leaseEnds) - Date.now() > WAIT_MS + 1000,
        `${at}: the restart left ${Math.min(...leaseEnds) - Date.now()} ms of the lease`,
      );

      // Every completed key replays (the origin is not called); every key
      // in flight at the kill is refused while its lease lives.
      const completed = [...expected].filter(([, e]) => e.body !== null).map(([key]) => key);
      const before = new Map([...expected.keys()].map((key) => [key, origin.attempts(key)]));
      const earlyAt = Date.now();
      const [replays, early] = await Promise.all([
        burst(worker, completed),
        burst(worker, held, 2).finally(() => t.diagnostic(`${at}: the 409s came ${Date.now() - earlyAt} ms after`)),
      ]);
      for (const [key, results] of replays) {
        for (const r of results) {
          assert.deepEqual([r.status, r.replayed], [201, true], `${at}: ${show(results)}`);
          assert.equal(r.text, expected.get(key).body, `${at}: the stored answer`);
        }
      }
      for (const [, results] of early) {
        for (const r of results) {
          assert.equal(r.status, 409, `${at}: the crashed attempt's lease still holds the key: ${show(results)}`);
          assert.equal(r.problem.code, "key-in-flight", `${at}: ${r.text}`);
          assert.equal(r.retryAfter, "1");
        }
      }
      for (const [key, attempts] of before) assert.deepEqual(origin.attempts(key), attempts, `${at}: not run again`);

      // Once the leases have ended, DUPLICATES callers of each key at once:
      // exactly one runs the next attempt, the others replay it. Keys
      // carried to the next round wait for it.
      const lastLeaseEnd = Math.max(...leaseEnds);
      await until(
        () => Date.now(),
        (now) => now > lastLeaseEnd + LEASE_MARGIN_MS,
        { timeoutMs: LEASE_SECONDS * 1000 + 5000, what: `${at}: the end of the leases` },
      );
      carried =
        round < ROUNDS ? [...inFlight.slice(0, CARRIED.inFlight), ...finishLost.slice(0, CARRIED.finishLost)] : [];
      const retried = held.filter((key) => !carried.includes(key));
      for (const [key, results] of await burst(worker, retried)) {
        const next = attemptAtKill.get(key) + 1;
        assert.ok(
          results.every((r) => r.status === 201),
          `${at}: ${show(results)}`,
        );
        assert.equal(fresh(results).length, 1, `${at}: one caller ran attempt ${next}: ${show(results)}`);
        assert.equal(new Set(results.map((r) => r.text)).size, 1, `${at}: the others replayed it`);
        assert.equal(JSON.parse(results[0].text).attempt, next);
        assert.deepEqual(origin.attempts(key), oneTo(next), `${at}: each attempt once, at the origin`);
        expected.set(key, { attempts: next, body: results[0].text });
      }
      t.diagnostic(`${at}: done at ${Date.now() - started} ms`);
    }

    // After both kills, every key replays its last answer, and the origin
    // saw each attempt number once: 1 for a key answered before a kill, one
    // more per kill a key was in flight for.
    const all = [...expected.keys()];
    for (const [key, results] of await burst(worker, all)) {
      for (const r of results) {
        assert.deepEqual([r.status, r.replayed, r.text], [201, true, expected.get(key).body], show(results));
      }
    }
    const histories = all.map((key) => origin.attempts(key));
    assert.deepEqual(
      histories,
      all.map((key) => oneTo(expected.get(key).attempts)),
    );
    const byRuns = {};
    for (const h of histories) byRuns[h.length] = (byRuns[h.length] ?? 0) + 1;
    // Answered before a kill: 1 attempt; in flight at one kill: 2; carried
    // over to the next kill: 3. Never a third attempt for a single kill.
    const carriedKeys = (ROUNDS - 1) * (CARRIED.inFlight + CARRIED.finishLost);
    assert.deepEqual(byRuns, {
      1: ROUNDS * PER_ROUND.answered,
      2: ROUNDS * (PER_ROUND.inFlight + PER_ROUND.finishLost) - carriedKeys,
      3: carriedKeys,
    });
    t.diagnostic(`${all.length} keys, ${JSON.stringify(byRuns)} by attempts run, ${Date.now() - started} ms`);
  } finally {
    await worker?.dispose();
    origin.releaseAll();
    await server.close();
  }
});
