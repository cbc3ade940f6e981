// The Durable Object that makes each reservation atomic (SPEC §4), in
// JavaScript so that the layer reaches it over RPC: one object per record
// name, holding at most one record under the storage key "record" (the same
// key and encoding as the Rust host's class, so either reads the other's).
//
// A duplicate of a running attempt waits here (SPEC §3) when the core says
// so: parked on a timer or the next write of the record, whichever comes
// first, awaiting no storage, so the input gate stays open for other calls
// and the first attempt's `finish`. No storage is polled.
import { DurableObject } from 'cloudflare:workers';
import { alarmStep, coordinatorCall } from 'oncekey-worker-wasm';

const RECORD = 'record';

export class IdempotencyCoordinator extends DurableObject {
  /** The record as last read or written: undefined until loaded, null for none. */
  #record = undefined;
  /** Whether this instance has set the expiry alarm. */
  #alarmSet = false;
  /** Store calls this instance has served (for tests, through `fetch`). */
  #calls = 0;
  /** Wakes each parked call; called on the record's next write. */
  #waiters = new Set();

  /**
   * One store call (the bytes the layer's `begin`, `finish`, `abandon`,
   * `inspect` or `release` action carries): the core's step on the record,
   * its write applied, the reply's bytes returned. Nothing but storage is awaited between the read and the
   * write, and the runtime's input gate holds other calls during storage
   * operations, so the step is atomic. Before it, the call may wait for
   * the record to change, as long as the core says.
   */
  async call(call) {
    this.#calls += 1;
    const calledAt = Date.now();
    let step;
    for (;;) {
      const found = await this.#load();
      const now = Date.now();
      // A deadline to wait until, or the reply (with the record to put).
      step = coordinatorCall(call, found, now, calledAt);
      if (typeof step !== 'number') break;
      await this.#changeOrTimeout(step - now);
    }
    if (step instanceof Uint8Array) return step;
    const [reply, record, expiresAt] = step;
    await this.#save(record, expiresAt);
    // Every parked call looks again at the record as it is now.
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
    return reply;
  }

  /**
   * The expiry alarm: deletes an expired record, or re-arms for a record
   * that now lives longer.
   */
  async alarm() {
    this.#alarmSet = false;
    const next = alarmStep(await this.#load(), Date.now());
    if (next.kind === 'rearm') {
      this.#alarmSet = true;
      await this.ctx.storage.setAlarm(next.at);
    } else if (next.kind === 'delete') {
      this.#record = null;
      await this.ctx.storage.deleteAll();
    }
  }

  /**
   * The same over `fetch`, as the Rust host's class answers it: `POST` a
   * store call (its bytes in, the reply's out); `GET` what tests look at,
   * `{calls, stored, alarm}`.
   */
  async fetch(request) {
    if (request.method === 'POST') {
      return new Response(await this.call(new Uint8Array(await request.arrayBuffer())));
    }
    const storage = this.ctx.storage;
    const stored = (await storage.get(RECORD)) !== undefined;
    return Response.json({ calls: this.#calls, stored, alarm: await storage.getAlarm() });
  }

  /** Parks until the record is next written or `ms` pass. */
  #changeOrTimeout(ms) {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#waiters.add(wake);
    });
  }

  async #load() {
    if (this.#record === undefined) {
      const found = await this.ctx.storage.get(RECORD);
      this.#record = found instanceof Uint8Array ? found : null;
    }
    return this.#record ?? undefined;
  }

  /**
   * Writes the record, and sets the expiry alarm if this instance has not.
   * The alarm is not moved on every write: it re-arms itself for a record
   * that lives longer, and one that expired earlier already reads as absent.
   */
  async #save(record, expiresAt) {
    this.#record = record;
    const storage = this.ctx.storage;
    if (this.#alarmSet) return storage.put(RECORD, record);
    this.#alarmSet = true;
    await Promise.all([storage.put(RECORD, record), storage.setAlarm(expiresAt)]);
  }
}
