// A cold-start control, not a peer: do-only (bench/peers/do-only.ts, whose
// coordinator and helpers it uses) with the runtime machinery a layer with
// deadlines uses on each request, as oncekey does: store calls and the
// origin call raced against timers, the origin call on its own
// AbortController cut when the caller's signal aborts, bodies read through
// their readers, the answer sent before finish as a stream, finish and the
// log line under waitUntil. What a fresh isolate's first request costs for
// those APIs, apart from any layer's own code.
import { answerOf, type Env, keyedRequest, log, NOT_STORED, problem, type Stored } from "./do-only";
import { toOrigin } from "./proxy";

export { Coordinator } from "./do-only";

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const keyed = await keyedRequest(req, env, (r) => readAll(r.body));
    if (keyed instanceof Response) return keyed;
    const { key, body, fp, name } = keyed;
    const stub = env.IDEMPOTENCY_DO.get(env.IDEMPOTENCY_DO.idFromName(name));
    const decision = await within(stub.begin(fp), STORE_MS);
    if (decision.kind !== "execute") return answerOf(decision);
    const headers = new Headers(req.headers);
    headers.set("idempotency-key", key);
    headers.set("idempotency-attempt", String(decision.attempt));
    // The origin call as a layer with deadlines makes it: its own abort
    // signal, cut when the caller goes away, raced against a time limit.
    const cut = new AbortController();
    const gone = () => setTimeout(() => cut.abort(new Error("caller gone")), 30_000);
    req.signal?.addEventListener("abort", gone, { once: true });
    let res: Response;
    let text: Uint8Array;
    try {
      const call = toOrigin(new Request(req.url, { method: req.method, headers, body, signal: cut.signal }), env);
      res = await within(call, ORIGIN_MS);
      text = await readAll(res.body);
    } catch {
      return problem(502, "origin-unreachable");
    } finally {
      req.signal?.removeEventListener("abort", gone);
    }
    const stored: Stored = {
      status: res.status,
      headers: [...res.headers].filter(([n]) => !NOT_STORED.includes(n)),
      body: new TextDecoder().decode(text),
    };
    // The answer first, then finish and the log line under waitUntil.
    ctx.waitUntil(
      within(stub.finish(decision.attempt, stored), STORE_MS).then(() => log({ oncekey: "execute", tier: "do" })),
    );
    let sent = false;
    const stream = new ReadableStream({
      pull(controller) {
        if (sent) return controller.close();
        sent = true;
        controller.enqueue(text);
      },
    });
    return new Response(stream, { status: res.status, headers: res.headers });
  },
};

const STORE_MS = 5_000;
const ORIGIN_MS = 100_000;

/** `promise`, or a rejection once `ms` pass. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** A body read chunk by chunk through its reader. */
async function readAll(body: ReadableStream<Uint8Array> | null): Promise<Uint8Array> {
  if (body === null) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return all;
}
