// The Durable Object that makes each reservation atomic (SPEC §4), in
// JavaScript so that the layer reaches it over RPC: one object per record
// name, holding at most one record under the core's storage key (the same
// key and encoding as the Rust host's class, so either reads the other's).
//
// Every decision is the core's (`CoordinatorCore`, the coordinator's
// protocol): this class loads the record once, hands each call in, and
// performs what comes back — the write, the alarm, the replies, and one
// timer per parked call. Each step is one synchronous call into the core:
// no `await` sits between the record it reads and the write it returns, so
// two calls can never decide on one reading (the Rust host's class does the
// same). A duplicate parked here awaits no storage, so the input gate stays
// open for other calls and the first attempt's `finish`.
import { DurableObject } from "cloudflare:workers";
import { addCounts, CoordinatorCore } from "oncekey-worker-wasm";

export class IdempotencyCoordinator extends DurableObject {
  /** The core's state for this object: the record, the parked calls. */
  #core = new CoordinatorCore();
  /** The storage key of the record, the Rust host's class's too. */
  #record = CoordinatorCore.recordKey;
  /** Store calls this instance has served (for tests, through `fetch`). */
  #calls = 0;
  #nextId = 1;
  /** Each call handed to the core and not yet answered: id → resolve. */
  #pending = new Map();

  /**
   * One store call (the bytes the layer's `begin`, `finish`, `abandon`,
   * `inspect` or `release` action carries): the reply's bytes, once the
   * core has answered it — at once, or after it waited — and its write is
   * stored.
   */
  async call(call) {
    this.#calls += 1;
    await this.#loaded();
    const id = this.#nextId++;
    const reply = new Promise((resolve) => this.#pending.set(id, resolve));
    let effects;
    try {
      effects = this.#core.call(id, call, Date.now());
    } catch (error) {
      this.#pending.delete(id);
      throw error;
    }
    await this.#perform(effects).alarm;
    // Parked: sleep until the core's deadline for this call, unless a
    // write answers it first; then let the core look again.
    for (let at = this.#core.deadlineOf(id); at !== undefined; at = this.#core.deadlineOf(id)) {
      let timer;
      const fired = new Promise((resolve) => {
        timer = setTimeout(resolve, Math.max(0, at - Date.now()), true);
      });
      const woken = await Promise.race([
        reply.then(
          () => false,
          () => false,
        ),
        fired,
      ]);
      clearTimeout(timer);
      if (!woken) break;
      await this.#loaded();
      await this.#perform(this.#core.wake(Date.now())).alarm;
    }
    return reply;
  }

  /**
   * The expiry alarm: deletes an expired record, or re-arms for a record
   * that now lives longer (the core decides which).
   */
  async alarm() {
    await this.#loaded();
    const done = this.#perform(this.#core.alarm(Date.now()));
    await Promise.all([done.written, done.alarm]);
  }

  /**
   * The same over `fetch`, as the Rust host's class answers it: `POST` a
   * store call (its bytes in, the reply's out); `GET` what tests look at,
   * `{calls, stored, alarm}`.
   */
  async fetch(request) {
    if (request.method === "POST") {
      return new Response(await this.call(new Uint8Array(await request.arrayBuffer())));
    }
    const storage = this.ctx.storage;
    const stored = (await storage.get(this.#record)) !== undefined;
    return Response.json({ calls: this.#calls, stored, alarm: await storage.getAlarm() });
  }

  /**
   * A queue consumer's counters, in the object named
   * `consumer-counters:<name>` (never a record's): adds `delta` (the
   * encoded counts of a batch) when given, and answers the total. No await
   * comes between the read and the write but the storage's own, so
   * concurrent batches never lose a count.
   */
  async counters(delta) {
    const storage = this.ctx.storage;
    // The counters' storage key, the Rust host's class's too.
    const key = CoordinatorCore.countsKey;
    const stored = await storage.get(key);
    const total = stored instanceof Uint8Array ? stored : undefined;
    if (delta === undefined) return total;
    const sum = addCounts(total, delta);
    if (sum === undefined) throw new TypeError("oncekey: not a set of consumer counts");
    await storage.put(key, sum);
    return sum;
  }

  /** Reads the record into the core, the first time only. */
  async #loaded() {
    if (!this.#core.needsLoad) return;
    const found = await this.ctx.storage.get(this.#record);
    this.#core.load(found instanceof Uint8Array ? found : undefined);
  }

  /**
   * Performs a step's effects: the write, the alarm, and each reply, given
   * only once the write is stored (a failed write fails the calls it
   * answers, and the core reads the record again). A failed alarm is
   * logged and set again on the next write; it holds no reply back.
   * Returns the write's and the alarm's promises.
   */
  #perform({ put, deleteAll, alarmAt, replies }) {
    const storage = this.ctx.storage;
    let written = deleteAll ? storage.deleteAll() : put ? storage.put(this.#record, put) : undefined;
    written = written?.catch((error) => {
      this.#core.forget();
      throw error;
    });
    const alarm =
      alarmAt === undefined
        ? undefined
        : storage.setAlarm(alarmAt).catch((error) => {
            this.#core.alarmFailed();
            console.error("oncekey: setting the expiry alarm failed; the next write sets it again", error);
          });
    for (const [to, bytes] of replies) {
      const answer = written ? written.then(() => bytes) : bytes;
      for (const id of to) {
        this.#pending.get(id)?.(answer);
        this.#pending.delete(id);
      }
    }
    // A write nobody awaits must not be an unhandled rejection.
    written?.catch(() => {});
    return { written, alarm };
  }
}
