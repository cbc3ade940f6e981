// How the peers reach their origin: like any proxy in front of one, a
// fetch to ORIGIN_URL with the request's path and query (Miniflare's
// outboundService routes it to bench/peers/origin-worker.ts, as it does
// oncekey's own fetch to its ORIGIN_URL).
export interface ProxyEnv {
  ORIGIN_URL: string;
}

export function toOrigin(req: Request, env: ProxyEnv): Promise<Response> {
  const url = new URL(req.url);
  return fetch(new Request(env.ORIGIN_URL + url.pathname + url.search, req));
}
