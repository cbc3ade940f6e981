// The demo worker (SPEC §7) on the JavaScript host, for the workerd suite
// (tests/edge, `make test-edge-js`): `withIdempotency` from the npm package
// protecting a JavaScript port of the embedded demo shop (shop.js, orders.js:
// workers/demo/src/shop.rs and orders.rs), with the variables of
// workers/demo/wrangler.toml, and the loyalty consumer (loyalty.js:
// workers/demo/src/loyalty.rs) on `withQueueIdempotency`. Built by `make
// build-demo-js` into build/demo-js/.
import { IdempotencyCoordinator, withIdempotency } from "oncekey/worker";
import { consume } from "./loyalty.js";
import { serve } from "./shop.js";

export { IdempotencyCoordinator };
export { Orders } from "./orders.js";

export default {
  fetch: withIdempotency((request, env) => serve(request, env)),
  queue: consume,
};
