// The peer issue 35 names: hono-idempotency (github.com/paveg/hono-idempotency,
// MIT) on a Durable Object, written the way its README shows a Workers
// user: a Hono app with the `idempotency()` middleware, whose store is one
// Durable Object per store key holding the package's `durableObjectStore`
// over the object's storage, reached over JS RPC. A first execution makes
// three calls to the object (`get`, a miss; `lock`; `complete` after the
// origin), a replay one (`get`). The package's own rules apply: POST and
// PATCH, a non-2xx answer deletes the record, a duplicate in flight gets
// 409 at once. The package is not on the registry this machine reaches;
// `bench/peers/hono-idempotency.sh` brings its source from a local
// checkout, and without one the benchmark runs without this peer.
import { DurableObject } from "cloudflare:workers";
import { Hono } from "hono";
import { idempotency, type IdempotencyRecord, type IdempotencyStore, type StoredResponse } from "hono-idempotency";
import { durableObjectStore } from "hono-idempotency/stores/durable-objects";
import { toOrigin, type ProxyEnv } from "./proxy";

interface Env extends ProxyEnv {
  IDEMPOTENCY_DO: DurableObjectNamespace<Coordinator>;
  /** Set (a control, hono-do-expiry): each lock also sets the expiry alarm SPEC §4 asks for. */
  EXPIRY?: string;
  /** The records' TTL in seconds (the package's default, 24 h, unless set): `make bench-cost` waits out a short one. */
  TTL_SECONDS?: string;
}

/** The package's default TTL. */
const TTL_MS = 24 * 60 * 60 * 1000;
/** The TTL the environment sets, else the package's default. */
const ttlMs = (env: Env) => (env.TTL_SECONDS ? Number(env.TTL_SECONDS) * 1000 : TTL_MS);

/**
 * One object per store key: the package's store over the object's storage,
 * its methods over RPC. The package deletes an expired record only when
 * its key is asked for again; with EXPIRY set, a lock also sets an alarm
 * that deletes the object's records when they expire, as oncekey's and
 * do-only's objects do — the control that does that part of oncekey's
 * storage work.
 */
export class Coordinator extends DurableObject<Env> {
  #store = durableObjectStore({ storage: this.ctx.storage, ttl: ttlMs(this.env) });
  get(key: string) {
    return this.#store.get(key);
  }
  async lock(key: string, record: IdempotencyRecord) {
    const locked = await this.#store.lock(key, record);
    if (locked && this.env.EXPIRY) this.ctx.storage.setAlarm(Date.now() + ttlMs(this.env));
    return locked;
  }
  async alarm() {
    await this.ctx.storage.deleteAll();
  }
  complete(key: string, response: StoredResponse) {
    return this.#store.complete(key, response);
  }
  delete(key: string) {
    return this.#store.delete(key);
  }
}

/** The middleware's store: each call goes to the store key's object. */
const objectStore = (env: Env): IdempotencyStore => {
  const object = (key: string) => env.IDEMPOTENCY_DO.get(env.IDEMPOTENCY_DO.idFromName(key));
  return {
    get: (key) => object(key).get(key),
    lock: (key, record) => object(key).lock(key, record),
    complete: (key, response) => object(key).complete(key, response),
    delete: (key) => object(key).delete(key),
    purge: async () => 0,
  };
};

const app = new Hono<{ Bindings: Env }>();
// Made once, with the first request's env.
let guard: ReturnType<typeof idempotency> | undefined;
app.use("*", (c, next) => {
  guard ??= idempotency({ store: objectStore(c.env), dangerouslyAllowGlobalKeys: true });
  return guard(c, next);
});
// The middleware has read the body for its fingerprint; the handler forwards what it read.
app.all("*", async (c) => {
  const req = c.req.raw;
  const body = req.method === "GET" || req.method === "HEAD" ? null : await c.req.arrayBuffer();
  return toOrigin(new Request(req.url, { method: req.method, headers: req.headers, body }), c.env);
});

export default app;
