// A small API that stands for the user's origin behind the production
// proxy, the same code in Node (a real HTTP server, or Miniflare's
// outbound routing) and in workerd (a second Worker behind a service
// binding). Every answer says who answered and what it received:
//   POST /v1/orders       {item}: creates an order (counted per item), 201;
//                         ?delay_ms=N waits first
//   GET  /__count?item=X  how many orders were created for X
//   any  /moved           302 to /elsewhere: a proxy hands it back, never follows it
//   anything else         200 {origin, method, path} — so a test can see that
//                         `/`, `/app.js` or `/index.html` reached the origin
export function createOrigin(name) {
  const orders = new Map();
  let seq = 0;
  return async function handle(request) {
    const url = new URL(request.url);
    const json = (status, body) =>
      new Response(JSON.stringify({ origin: name, ...body }), {
        status,
        headers: { "content-type": "application/json" },
      });
    if (url.pathname === "/__count") return json(200, { count: orders.get(url.searchParams.get("item")) ?? 0 });
    if (url.pathname === "/moved") return new Response(null, { status: 302, headers: { location: "/elsewhere" } });
    if (request.method === "POST" && url.pathname === "/v1/orders") {
      const delay = Number(url.searchParams.get("delay_ms") ?? 0);
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      const { item } = await request.json();
      orders.set(item, (orders.get(item) ?? 0) + 1);
      return json(201, {
        orderId: `o${++seq}`,
        item,
        key: request.headers.get("idempotency-key"),
        attempt: request.headers.get("idempotency-attempt"),
      });
    }
    // `colo`: from the client's `cf`, when the request carried it (a Worker origin's does).
    const colo = request.cf?.colo ?? null;
    return json(200, { method: request.method, path: url.pathname + url.search, url: request.url, colo });
  };
}

export const count = (handle, item) =>
  handle(new Request(`http://origin/__count?item=${encodeURIComponent(item)}`))
    .then((r) => r.json())
    .then((b) => b.count);
