// The production proxy (SPEC §10) on the JavaScript host: the npm package's
// `proxy()` and its coordinator class, exactly the entry docs/deploying.md's "Deploy
// from npm" gives users. Built by `make build-proxy-js` into build/proxy-js/.
import { IdempotencyCoordinator, proxy } from "oncekey/proxy";

export { IdempotencyCoordinator };
export default { fetch: proxy() };
