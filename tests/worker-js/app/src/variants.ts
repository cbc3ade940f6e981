// The same shop behind other options, one per path prefix.
import {
  IdempotencyCoordinator,
  type IdempotencyOptions,
  type QueueIdempotencyOptions,
  withIdempotency,
  withQueueIdempotency,
} from "oncekey/worker";
import { shop } from "./shop";

export { IdempotencyCoordinator };

interface VariantEnv {
  LOCKS: DurableObjectNamespace<IdempotencyCoordinator>;
  ANSWERS: KVNamespace;
  IDEMPOTENCY_PATHS: string;
}

const bindings = { coordinator: "LOCKS", kv: "ANSWERS" };
const ownEnv = withIdempotency<VariantEnv>(shop, { required: true, bindings });
const variants: [string, ReturnType<typeof withIdempotency<VariantEnv>>][] = [
  // A TTL under the 60 s floor: every request is 500 misconfigured.
  ["/bad-ttl/", withIdempotency<VariantEnv>(shop, { ttlSeconds: 5, bindings })],
  // A coordinator binding under a name nothing is bound to.
  ["/missing-binding/", withIdempotency<VariantEnv>(shop, { bindings: { coordinator: "NOPE", kv: "ANSWERS" } })],
  // A coordinator binding renamed to a plain variable.
  [
    "/wrong-binding/",
    withIdempotency<VariantEnv>(shop, { bindings: { coordinator: "IDEMPOTENCY_PATHS", kv: "ANSWERS" } }),
  ],
  // A typo in an option's name.
  ["/unknown-option/", withIdempotency<VariantEnv>(shop, { ttlSecond: 3600, bindings } as IdempotencyOptions)],
  // Called with an env of its own, as a harness may call a handler: its
  // IDEMPOTENCY_PATHS covers /own-env/, where the module's does not. The
  // layer made from the module's env at load must give way to it.
  ["/own-env/", (request, env, ctx) => ownEnv(request, { ...env, IDEMPOTENCY_PATHS: "/own-env/*" }, ctx)],
  // Routine decisions unlogged (a number, as TypeScript users write it).
  ["/quiet/", withIdempotency<VariantEnv>(shop, { logSample: 0, paths: ["/quiet/*"], bindings })],
  // Covered paths from [vars] (IDEMPOTENCY_PATHS = "/vars/*"), bindings renamed.
  ["/", withIdempotency<VariantEnv>(shop, { required: true, bindings })],
];

// Queue consumers with bad options, one per queue name: each batch throws,
// naming the option, and no message is handled.
let handled = 0;
const consumers: Record<string, ReturnType<typeof withQueueIdempotency<VariantEnv>>> = {
  "bad-key": withQueueIdempotency<VariantEnv>(
    () => {
      handled++;
    },
    { key: "content", bindings } as unknown as QueueIdempotencyOptions,
  ),
  "unknown-option": withQueueIdempotency<VariantEnv>(
    () => {
      handled++;
    },
    { keyy: "message-id", bindings } as unknown as QueueIdempotencyOptions,
  ),
  "bad-delay": withQueueIdempotency<VariantEnv>(
    () => {
      handled++;
    },
    { maxRetryDelaySeconds: 0, bindings },
  ),
  "short-ttl": withQueueIdempotency<VariantEnv>(
    () => {
      handled++;
    },
    { ttlSeconds: 5, bindings },
  ),
};

export default {
  fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/queue-handled") return Response.json({ handled });
    const variant = variants.find(([prefix]) => path.startsWith(prefix));
    if (!variant) return new Response("no such variant", { status: 404 });
    return variant[1](request, env, ctx);
  },
  queue(batch, env, ctx) {
    const consumer = consumers[batch.queue];
    if (!consumer) throw new Error(`no consumer for ${batch.queue}`);
    return consumer(batch, env, ctx);
  },
} satisfies ExportedHandler<VariantEnv>;
