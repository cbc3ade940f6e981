// The shared origin of the edge benchmark as a worker of its own: every
// implementation reaches it the way a proxy reaches a real origin, with a
// fetch to its ORIGIN_URL (oncekey's proxy mode, as deployed; the peers
// through bench/peers/proxy.ts), which Miniflare's `outboundService` routes
// here. So each pays the same origin and the same hop, and the differences
// left are the layers'.
import { origin, Orders, type OriginEnv } from "./origin";

export { Orders };

export default {
  fetch: (req: Request, env: OriginEnv): Promise<Response> => origin(req, env),
};
