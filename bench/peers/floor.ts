// Not a peer: the platform's floor. The least any design pays that keeps
// SPEC §3's promise with a Durable Object per key — reserve durably before
// the origin runs, store the answer durably before the caller has it, and
// let the record expire — and nothing else: no key validation, no
// fingerprint (a different request under the same key replays the first
// one's answer), no headers kept, no lease, no log line. The bench runs it
// beside the peers to show what the platform itself charges for a first
// execution and a replay: a new object and its SQLite database, a storage
// read, two writes and an alarm, two RPC round trips. With `KV_COPY` set
// (the bench's floor-kv), a first execution also writes the answer to KV
// after the caller has it: the platform's charge for SPEC §4's default copy.
import { DurableObject } from "cloudflare:workers";
import { toOrigin, type ProxyEnv } from "./proxy";

interface Env extends ProxyEnv {
  IDEMPOTENCY_DO: DurableObjectNamespace<Coordinator>;
  IDEMPOTENCY_KV?: KVNamespace;
  KV_COPY?: string;
}

const TTL_MS = 86_400_000;
/** The record while the first attempt runs. */
const RUNNING = 0;

export class Coordinator extends DurableObject {
  /** null: reserved for the caller; RUNNING: another attempt runs; a string: the stored answer. */
  async begin(): Promise<string | typeof RUNNING | null> {
    const found = await this.ctx.storage.get<string | typeof RUNNING>("r");
    if (found !== undefined) return found;
    this.ctx.storage.put("r", RUNNING);
    this.ctx.storage.setAlarm(Date.now() + TTL_MS);
    return null;
  }

  async finish(answer: string): Promise<void> {
    this.ctx.storage.put("r", answer);
  }

  async alarm() {
    await this.ctx.storage.deleteAll();
  }
}

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const key = req.headers.get("idempotency-key");
    if (key === null) return toOrigin(req, env);
    const stub = env.IDEMPOTENCY_DO.get(env.IDEMPOTENCY_DO.idFromName(key));
    const found = await stub.begin();
    if (found === RUNNING) return new Response(null, { status: 409 });
    if (found !== null) return new Response(found, { status: 201 });
    // Read whole, as every correct design reads it (to fingerprint it):
    // streaming it on to the origin costs workerd more than sending bytes.
    const body = await req.arrayBuffer();
    const res = await toOrigin(new Request(req, { body }), env);
    const text = await res.text();
    await stub.finish(text);
    if (env.KV_COPY && env.IDEMPOTENCY_KV)
      ctx.waitUntil(env.IDEMPOTENCY_KV.put(key, text, { expirationTtl: TTL_MS / 1000 }));
    return new Response(text, { status: res.status, headers: res.headers });
  },
};
