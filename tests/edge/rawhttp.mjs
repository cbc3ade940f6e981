// HTTP/1.1 over a bare socket, for requests no HTTP client will send:
// bytes outside ByteString rules, lying Content-Length, broken chunking.
import net from "node:net";

/**
 * Opens a socket to `url`, writes `parts` (strings are latin1, Buffers as
 * they are) and reads one response. `end`: "half" sends FIN after the
 * last part and keeps reading, "destroy" closes the socket after
 * `destroyAfterMs` without waiting for an answer, "open" only writes.
 * Resolves with { status, headers, body, closed, timedOut }: status 0 when
 * no complete head came back.
 */
export function rawRequest(url, parts, { end = "open", timeoutMs = 10_000, destroyAfterMs = 100 } = {}) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    const received = [];
    let settled = false;
    const settle = (extra = {}) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...(parseResponse(Buffer.concat(received)) ?? { status: 0, headers: {}, body: "" }), ...extra });
    };
    const timer = setTimeout(() => settle({ timedOut: true }), timeoutMs);
    socket.on("data", (data) => {
      received.push(data);
      const parsed = parseResponse(Buffer.concat(received));
      if (parsed?.complete) settle();
    });
    socket.on("close", () => settle({ closed: true }));
    socket.on("error", () => settle({ closed: true }));
    socket.on("connect", () => {
      for (const part of parts) socket.write(typeof part === "string" ? Buffer.from(part, "latin1") : part);
      if (end === "half") socket.end();
      if (end === "destroy") setTimeout(() => settle({ destroyed: true }), destroyAfterMs);
    });
  });
}

/** A request head: request line, then header lines, then the blank line. */
export function head(requestLine, headers) {
  return `${requestLine}\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join("")}\r\n`;
}

function parseResponse(bytes) {
  const end = bytes.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const lines = bytes.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(lines[0].split(" ")[1]);
  const headers = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let rest = bytes.subarray(end + 4);
  let complete = false;
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    const chunks = [];
    for (;;) {
      const nl = rest.indexOf("\r\n");
      if (nl < 0) break;
      const size = parseInt(rest.subarray(0, nl).toString("latin1"), 16);
      if (size === 0) {
        complete = true;
        break;
      }
      if (rest.length < nl + 2 + size + 2) break;
      chunks.push(rest.subarray(nl + 2, nl + 2 + size));
      rest = rest.subarray(nl + 4 + size);
    }
    rest = Buffer.concat(chunks);
  } else {
    const length = Number(headers["content-length"] ?? 0);
    complete = rest.length >= length;
    rest = rest.subarray(0, length);
  }
  return { status, headers, body: rest.toString("utf8"), complete };
}
