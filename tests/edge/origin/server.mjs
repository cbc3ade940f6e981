// The origin app behind a real Node HTTP server on loopback, for the
// ORIGIN_URL tests: what the proxy reaches is a socket, not a function. A
// handler that throws breaks the connection (the origin's answer never comes).
import http from "node:http";

export async function serve(handle) {
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) headers.set(name, [value].flat().join(", "));
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body: body.length > 0 ? body : undefined,
    });
    let response;
    try {
      response = await handle(request);
    } catch {
      // A handler that throws stands for a connection that breaks: no answer.
      req.socket.destroy();
      return;
    }
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}
