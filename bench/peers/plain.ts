// The peer: SPEC §3–4 written the plain way a competent Workers user
// would, in TypeScript. KV read first; on a miss one Durable Object `begin`,
// the origin under waitUntil, `finish`, then a KV copy. Records are JSON;
// bodies are stored as text (the origin speaks JSON). One log line per
// decision, like oncekey's. The object is called over JS RPC (what the docs
// recommend today), or with `TRANSPORT = "fetch"` through its fetch handler
// with JSON bodies, the transport oncekey uses.
import { DurableObject } from "cloudflare:workers";
import { toOrigin, type ProxyEnv } from "./proxy";

interface Env extends ProxyEnv {
  IDEMPOTENCY_KV: KVNamespace;
  IDEMPOTENCY_DO: DurableObjectNamespace<Coordinator>;
  TRANSPORT?: "rpc" | "fetch";
}

const LEASE_MS = 120_000;
const TTL_MS = 86_400_000;
const RELEASE_ON = [408, 425, 429, 503];
const NOT_STORED = [
  "connection",
  "content-length",
  "keep-alive",
  "set-cookie",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
];
const KEY = /^[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]{1,255}$/;

type Stored = { status: number; headers: [string, string][]; body: string };
type Rec =
  | { state: "in-flight"; fp: string; attempt: number; leaseUntil: number; expiresAt: number }
  | { state: "completed"; fp: string; attempt: number; response: Stored; expiresAt: number }
  | { state: "released"; lastAttempt: number; expiresAt: number };
type Decision =
  | { kind: "execute"; attempt: number }
  | { kind: "in-flight" }
  | { kind: "mismatch" }
  | { kind: "replay"; record: Extract<Rec, { state: "completed" }> };

/** One object per record name: decides and writes with no other await between. */
export class Coordinator extends DurableObject {
  async begin(fp: string): Promise<Decision> {
    const now = Date.now();
    let rec = await this.ctx.storage.get<Rec>("r");
    if (rec && rec.expiresAt <= now) rec = undefined;
    if (rec?.state === "completed") return rec.fp === fp ? { kind: "replay", record: rec } : { kind: "mismatch" };
    if (rec?.state === "in-flight") {
      if (rec.fp !== fp) return { kind: "mismatch" };
      if (now < rec.leaseUntil) return { kind: "in-flight" };
    }
    const attempt = rec ? (rec.state === "released" ? rec.lastAttempt : rec.attempt) + 1 : 1;
    const expiresAt = now + LEASE_MS + TTL_MS;
    this.ctx.storage.put<Rec>("r", { state: "in-flight", fp, attempt, leaseUntil: now + LEASE_MS, expiresAt });
    if ((await this.ctx.storage.getAlarm()) === null) this.ctx.storage.setAlarm(expiresAt);
    return { kind: "execute", attempt };
  }

  /** `response` null: the request was never sent (release). */
  async finish(attempt: number, response: Stored | null): Promise<Rec | null> {
    const now = Date.now();
    const rec = await this.ctx.storage.get<Rec>("r");
    if (rec?.state !== "in-flight" || rec.attempt !== attempt || now >= rec.leaseUntil) return null;
    const next: Rec =
      response === null || RELEASE_ON.includes(response.status)
        ? { state: "released", lastAttempt: attempt, expiresAt: now + TTL_MS }
        : { state: "completed", fp: rec.fp, attempt, response, expiresAt: now + TTL_MS };
    this.ctx.storage.put("r", next);
    return next;
  }

  /** The same two calls for callers that use fetch: `{op, ...}` in, JSON out. */
  async fetch(req: Request): Promise<Response> {
    const call = await req.json<{ op: string; fp: string; attempt: number; response: Stored | null }>();
    const result = call.op === "begin" ? await this.begin(call.fp) : await this.finish(call.attempt, call.response);
    return Response.json(result);
  }

  async alarm() {
    const rec = await this.ctx.storage.get<Rec>("r");
    if (rec && rec.expiresAt > Date.now()) this.ctx.storage.setAlarm(rec.expiresAt);
    else await this.ctx.storage.deleteAll();
  }
}

const enc = new TextEncoder();
async function sha256Hex(parts: (string | ArrayBuffer)[]): Promise<string> {
  const chunks = parts.map((p) => (typeof p === "string" ? enc.encode(p) : new Uint8Array(p)));
  const all = new Uint8Array(chunks.reduce((n, c) => n + 8 + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    new DataView(all.buffer).setBigUint64(at, BigInt(c.length));
    all.set(c, at + 8);
    at += 8 + c.length;
  }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function problem(status: number, code: string, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ type: `urn:oncekey:problem:${code}`, title: code, status, detail: code }), {
    status,
    headers: { "content-type": "application/problem+json", "cache-control": "no-store", ...extra },
  });
}

function replay(rec: Extract<Rec, { state: "completed" }>): Response {
  const headers = new Headers(rec.response.headers);
  headers.set("idempotent-replayed", "true");
  headers.set("cache-control", "no-store");
  return new Response(rec.response.body || null, { status: rec.response.status, headers });
}

const log = (line: Record<string, unknown>) => console.log(JSON.stringify(line));

type Stub = DurableObjectStub<Coordinator>;
async function callDo<T>(env: Env, stub: Stub, call: Record<string, unknown>, rpc: () => Promise<T>): Promise<T> {
  if (env.TRANSPORT !== "fetch") return rpc();
  const res = await stub.fetch("https://coordinator/", { method: "POST", body: JSON.stringify(call) });
  return res.json<T>();
}

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const raw = req.headers.get("idempotency-key");
    if ((req.method !== "POST" && req.method !== "PATCH") || raw === null) {
      const headers = new Headers(req.headers);
      headers.delete("idempotency-attempt");
      return toOrigin(new Request(req, { headers }), env);
    }
    const key = raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw;
    if (!KEY.test(key)) return problem(400, "invalid-key");
    const body = await req.arrayBuffer();
    if (body.byteLength > 1_048_576) return problem(413, "body-too-large");
    const url = new URL(req.url);
    const mediaType = (req.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
    const [fp, name] = await Promise.all([
      sha256Hex([req.method, url.pathname + url.search, mediaType, body]),
      sha256Hex([url.host, req.headers.get("authorization") ?? "", key]),
    ]);

    const copy = await env.IDEMPOTENCY_KV.get<Rec>(name, "json").catch(() => null);
    if (copy?.state === "completed" && copy.fp === fp && copy.expiresAt > Date.now()) {
      log({ oncekey: "replay", tier: "kv", attempt: copy.attempt });
      return replay(copy);
    }

    const stub = env.IDEMPOTENCY_DO.get(env.IDEMPOTENCY_DO.idFromName(name));
    const decision = await callDo<Decision>(env, stub, { op: "begin", fp }, () => stub.begin(fp));
    log({ oncekey: decision.kind, tier: "do" });
    switch (decision.kind) {
      case "in-flight":
        return problem(409, "key-in-flight", { "retry-after": "1" });
      case "mismatch":
        return problem(422, "key-reused");
      case "replay":
        ctx.waitUntil(env.IDEMPOTENCY_KV.put(name, JSON.stringify(decision.record), { expirationTtl: 86_400 }));
        return replay(decision.record);
    }
    const headers = new Headers(req.headers);
    headers.set("idempotency-key", key);
    headers.set("idempotency-attempt", String(decision.attempt));
    const forward = new Request(req.url, { method: req.method, headers, body });
    // The origin and finish run under waitUntil: a client that goes away
    // does not leave the key in flight.
    const answer = (async () => {
      let res: Response;
      try {
        res = await toOrigin(forward, env);
      } catch {
        // No answer: the outcome is unknown, the lease stays until it ends.
        return problem(502, "origin-unreachable");
      }
      const text = await res.text();
      const stored: Stored = {
        status: res.status,
        headers: [...res.headers].filter(([n]) => !NOT_STORED.includes(n)),
        body: text,
      };
      const attempt = decision.attempt;
      const rec = await callDo<Rec | null>(env, stub, { op: "finish", attempt, response: stored }, () =>
        stub.finish(attempt, stored),
      );
      if (rec?.state === "completed") {
        ctx.waitUntil(env.IDEMPOTENCY_KV.put(name, JSON.stringify(rec), { expirationTtl: 86_400 }));
      }
      return new Response(text || null, { status: res.status, headers: res.headers });
    })();
    ctx.waitUntil(answer);
    return answer;
  },
};
