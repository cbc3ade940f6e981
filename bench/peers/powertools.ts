// A published library as the peer: @aws-lambda-powertools/idempotency with
// its own defaults (MD5 key hashing, one hour expiry, no payload
// validation, no local cache), keyed on the Idempotency-Key header through
// its JMESPath option, over a small Workers KV persistence layer
// (kv-persistence.ts). Powertools has no Durable Object integration: its
// "put if absent" is a KV read then a KV write, so concurrent duplicates
// can both run; this peer measures speed, not the same guarantee.
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { IdempotencyAlreadyInProgressError } from "@aws-lambda-powertools/idempotency";
import { KvPersistenceLayer } from "./kv-persistence";
import { toOrigin, type ProxyEnv } from "./proxy";
interface Env extends ProxyEnv {
  IDEMPOTENCY_KV: KVNamespace;
}

/** What the idempotent function receives and what Powertools stores. */
interface Event {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}
interface Answer {
  status: number;
  headers: [string, string][];
  body: string;
}

let env: Env;
const persistenceStore = new KvPersistenceLayer(() => env.IDEMPOTENCY_KV);
const config = new IdempotencyConfig({ eventKeyJmesPath: 'headers."idempotency-key"' });
// Powertools takes its in-progress lease from the Lambda context; give it
// the same 120 s lease oncekey uses (without one it warns on every call).
config.registerLambdaContext({ getRemainingTimeInMillis: () => 120_000 } as never);

const handle = makeIdempotent(
  async (event: Event): Promise<Answer> => {
    const req = new Request(event.url, { method: event.method, headers: event.headers, body: event.body });
    const res = await toOrigin(req, env);
    return { status: res.status, headers: [...res.headers], body: await res.text() };
  },
  { persistenceStore, config },
);

export default {
  async fetch(req: Request, bindings: Env): Promise<Response> {
    env = bindings;
    const event: Event = {
      method: req.method,
      url: req.url,
      headers: Object.fromEntries(req.headers),
      body: await req.text(),
    };
    try {
      // A replay returns the stored answer; Powertools does not mark it.
      const answer = await handle(event);
      return new Response(answer.body || null, { status: answer.status, headers: answer.headers });
    } catch (e) {
      if (e instanceof IdempotencyAlreadyInProgressError) {
        return new Response("in flight", { status: 409, headers: { "retry-after": "1" } });
      }
      throw e;
    }
  },
};
