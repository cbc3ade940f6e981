// The demo worker (SPEC §7) on the JavaScript host, for the workerd suite
// (tests/edge, `make test-edge-js`): `withIdempotency` from the npm package
// protecting a JavaScript port of the embedded demo shop (shop.js, orders.js:
// workers/demo/src/shop.rs and orders.rs), with the variables of
// workers/demo/wrangler.toml. Built by `make build-demo-js` into
// build/demo-js/. No queue consumer: the JavaScript host has none.
import { IdempotencyCoordinator, withIdempotency } from "oncekey/worker";
import { serve } from "./shop.js";

export { IdempotencyCoordinator };
export { Orders } from "./orders.js";

export default {
  fetch: withIdempotency((request, env) => serve(request, env)),
};
