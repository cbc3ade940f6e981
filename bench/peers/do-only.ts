// The peer with no KV: the lightest correct design a Workers user would
// write, in TypeScript. One Durable Object per key, called over JS RPC:
// `begin` takes the lock (or answers a replay, a conflict, a mismatch), the
// worker calls the origin, `finish` stores the answer. No KV read, no KV
// copy: every keyed request makes one `begin` round trip, a first execution
// also a `finish`. Same rules as plain.ts (key validation, fingerprint,
// lease, 409 in flight, 422 on a different request, replay, release on
// 408/425/429/503, every other answer stored), same JSON records, one log
// line per decision.
import { DurableObject } from "cloudflare:workers";
import { toOrigin, type ProxyEnv } from "./proxy";

export interface Env extends ProxyEnv {
  IDEMPOTENCY_DO: DurableObjectNamespace<Coordinator>;
}

const LEASE_MS = 120_000;
const TTL_MS = 86_400_000;
const RELEASE_ON = [408, 425, 429, 503];
export const NOT_STORED = [
  "connection",
  "content-length",
  "keep-alive",
  "set-cookie",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
];
export const KEY = /^[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]{1,255}$/;

export type Stored = { status: number; headers: [string, string][]; body: string };
type Rec =
  | { state: "in-flight"; fp: string; attempt: number; leaseUntil: number; expiresAt: number }
  | { state: "completed"; fp: string; attempt: number; response: Stored; expiresAt: number }
  | { state: "released"; lastAttempt: number; expiresAt: number };
type Decision =
  | { kind: "execute"; attempt: number }
  | { kind: "in-flight" }
  | { kind: "mismatch" }
  | { kind: "replay"; response: Stored };

/** One object per record name: decides and writes with no other await between. */
export class Coordinator extends DurableObject {
  async begin(fp: string): Promise<Decision> {
    const now = Date.now();
    let rec = await this.ctx.storage.get<Rec>("r");
    if (rec && rec.expiresAt <= now) rec = undefined;
    if (rec?.state === "completed")
      return rec.fp === fp ? { kind: "replay", response: rec.response } : { kind: "mismatch" };
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

  /** `response` null: the request was never sent (release). Only the attempt holding the lease lands. */
  async finish(attempt: number, response: Stored | null): Promise<void> {
    const now = Date.now();
    const rec = await this.ctx.storage.get<Rec>("r");
    if (rec?.state !== "in-flight" || rec.attempt !== attempt || now >= rec.leaseUntil) return;
    const next: Rec =
      response === null || RELEASE_ON.includes(response.status)
        ? { state: "released", lastAttempt: attempt, expiresAt: now + TTL_MS }
        : { state: "completed", fp: rec.fp, attempt, response, expiresAt: now + TTL_MS };
    this.ctx.storage.put("r", next);
  }

  async alarm() {
    const rec = await this.ctx.storage.get<Rec>("r");
    if (rec && rec.expiresAt > Date.now()) this.ctx.storage.setAlarm(rec.expiresAt);
    else await this.ctx.storage.deleteAll();
  }
}

const enc = new TextEncoder();
export async function sha256Hex(parts: (string | ArrayBuffer | Uint8Array)[]): Promise<string> {
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

export function problem(status: number, code: string, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ type: `urn:oncekey:problem:${code}`, title: code, status, detail: code }), {
    status,
    headers: { "content-type": "application/problem+json", "cache-control": "no-store", ...extra },
  });
}

export function replay(stored: Stored): Response {
  const headers = new Headers(stored.headers);
  headers.set("idempotent-replayed", "true");
  headers.set("cache-control", "no-store");
  return new Response(stored.body || null, { status: stored.status, headers });
}

export const log = (line: Record<string, unknown>) => console.log(JSON.stringify(line));

/** A keyed request, read: its key, body, fingerprint and record name. */
export type Keyed = { key: string; body: ArrayBuffer | Uint8Array; fp: string; name: string };

/**
 * `req` up to its store call: passed through to the origin when it is not
 * a keyed POST or PATCH, refused for a bad key or a body over 1 MB, else
 * read (the body by `read`) and fingerprinted.
 */
export async function keyedRequest(
  req: Request,
  env: ProxyEnv,
  read: (req: Request) => Promise<ArrayBuffer | Uint8Array> = (r) => r.arrayBuffer(),
): Promise<Keyed | Response> {
  const raw = req.headers.get("idempotency-key");
  if ((req.method !== "POST" && req.method !== "PATCH") || raw === null) {
    const headers = new Headers(req.headers);
    headers.delete("idempotency-attempt");
    return toOrigin(new Request(req, { headers }), env);
  }
  const key = raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw;
  if (!KEY.test(key)) return problem(400, "invalid-key");
  const body = await read(req);
  if (body.byteLength > 1_048_576) return problem(413, "body-too-large");
  const url = new URL(req.url);
  const mediaType = (req.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  const [fp, name] = await Promise.all([
    sha256Hex([req.method, url.pathname + url.search, mediaType, body]),
    sha256Hex([url.host, req.headers.get("authorization") ?? "", key]),
  ]);
  return { key, body, fp, name };
}

/** The answer to a `begin` that does not execute: 409, 422 or the replay. */
export function answerOf(decision: Exclude<Decision, { kind: "execute" }>): Response {
  switch (decision.kind) {
    case "in-flight":
      return problem(409, "key-in-flight", { "retry-after": "1" });
    case "mismatch":
      return problem(422, "key-reused");
    case "replay":
      return replay(decision.response);
  }
}

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const keyed = await keyedRequest(req, env);
    if (keyed instanceof Response) return keyed;
    const { key, body, fp, name } = keyed;
    const stub = env.IDEMPOTENCY_DO.get(env.IDEMPOTENCY_DO.idFromName(name));
    const decision = await stub.begin(fp);
    log({ oncekey: decision.kind, tier: "do" });
    if (decision.kind !== "execute") return answerOf(decision);
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
      await stub.finish(decision.attempt, stored);
      return new Response(text || null, { status: res.status, headers: res.headers });
    })();
    ctx.waitUntil(answer);
    return answer;
  },
};
