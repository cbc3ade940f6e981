// The same shop behind other options, one per path prefix.
import { withIdempotency, IdempotencyCoordinator, type IdempotencyOptions } from "oncekey/worker";
import { shop } from "./shop";

export { IdempotencyCoordinator };

interface VariantEnv {
  LOCKS: DurableObjectNamespace<IdempotencyCoordinator>;
  ANSWERS: KVNamespace;
  IDEMPOTENCY_PATHS: string;
}

const bindings = { coordinator: "LOCKS", kv: "ANSWERS" };
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
  // Covered paths from [vars] (IDEMPOTENCY_PATHS = "/vars/*"), bindings renamed.
  ["/", withIdempotency<VariantEnv>(shop, { required: true, bindings })],
];

export default {
  fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    const variant = variants.find(([prefix]) => path.startsWith(prefix));
    if (!variant) return new Response("no such variant", { status: 404 });
    return variant[1](request, env, ctx);
  },
} satisfies ExportedHandler<VariantEnv>;
