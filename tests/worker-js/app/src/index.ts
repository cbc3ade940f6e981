// The worker exactly as SPEC §11 shows it: three lines around the handler.
import { withIdempotency, IdempotencyCoordinator } from "oncekey/worker";
import { shop } from "./shop";

export { IdempotencyCoordinator };

export default {
  fetch: withIdempotency(async (request, env: Env, ctx) => shop(request), { ttlSeconds: 3600, leaseSeconds: 30 }),
} satisfies ExportedHandler<Env>;
