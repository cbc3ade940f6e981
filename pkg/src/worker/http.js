// The runtime's request and response, and the core's values for them, as
// src/edge/http.rs does for the Rust host: the request's head, its body read
// as the exchange asks, the origin's answer read within a limit, and the
// caller's response built from a reply.
//
// What crosses the wasm boundary packed is packed and unpacked here only
// (src/js/packed.rs is the other side): the request's head with its
// HeadFlag bits, headers `name\nvalue\n...`, header edits
// `op\nname\nvalue\n...` with `op` an EditOp. One string crosses instead
// of one crossing per field.
import { EditOp, HeadFlag } from "oncekey-worker-wasm";

/** The head's optional headers, in the order their fields come, each with its flag. */
const OPTIONAL = [
  ["idempotency-key", HeadFlag.Key],
  ["origin", HeadFlag.Origin],
  ["access-control-request-method", HeadFlag.PreflightMethod],
  ["access-control-request-headers", HeadFlag.PreflightHeaders],
];

/**
 * Starts the exchange for `request` on `layer`, from the request's head;
 * `headersRead`: the headers the layer reads; `metrics`: whether an
 * Analytics Engine dataset is bound.
 */
export function start(layer, request, headersRead, metrics) {
  const headers = request.headers;
  // The URL as the runtime serialised it (the core splits it); a field for
  // each optional header, empty when its flag is not set.
  let head = `${request.method}\n${request.url}\n`;
  let flags = (headers.has("idempotency-attempt") ? HeadFlag.Attempt : 0) | (metrics ? HeadFlag.Metrics : 0);
  for (const [name, flag] of OPTIONAL) {
    const field = headers.get(name);
    if (field !== null) {
      flags |= flag;
      head += field;
    }
    head += "\n";
  }
  for (const name of headersRead) {
    const value = headers.get(name);
    if (value !== null) head += `${name}\n${value}\n`;
  }
  return layer.start(head, flags, Date.now());
}

/** Headers packed, `name\nvalue\n...`, for the exchange. */
export function packHeaders(headers) {
  let out = "";
  for (const [name, value] of headers) out += `${name}\n${value}\n`;
  return out;
}

/** The exchange's packed `name\nvalue\n...` as Headers. */
function unpackHeaders(packed) {
  const headers = new Headers();
  const fields = packed.split("\n");
  for (let i = 0; i + 1 < fields.length; i += 2) headers.append(fields[i], fields[i + 1]);
  return headers;
}

/**
 * Applies the exchange's packed header edits (`op\nname\nvalue\n...`;
 * undefined: none) to `headers`. An op that is no EditOp is a host bug,
 * refused loudly.
 */
export function applyEdits(headers, packed) {
  if (packed === undefined) return;
  const fields = packed.split("\n");
  for (let i = 0; i + 2 < fields.length; i += 3) {
    const op = Number(fields[i]);
    if (op === EditOp.Set) headers.set(fields[i + 1], fields[i + 2]);
    else if (op === EditOp.Remove) headers.delete(fields[i + 1]);
    else throw new Error(`oncekey: ${fields[i]} is not a header edit`);
  }
}

/**
 * Reads the request body into `exchange` as its `readBody` action asks: in
 * one call when `wholeBody` (the runtime frames a declared length), else
 * chunk by chunk until the exchange says to stop. Whether the reading broke
 * off. The rule (limit, drain) is the exchange's; this only moves bytes.
 */
export async function readBody(request, exchange) {
  if (request.body === null) return false;
  if (exchange.wholeBody) {
    try {
      exchange.bodyChunk(new Uint8Array(await request.arrayBuffer()));
      return false;
    } catch {
      return true;
    }
  }
  const reader = request.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return false;
      if (!exchange.bodyChunk(value)) {
        reader.cancel().catch(() => {});
        return false;
      }
    }
  } catch {
    return true;
  }
}

/** The runtime's response for a `respond` action; `kept`: the response whose body it streams when it names none. */
export function replyResponse(exchange, kept) {
  const status = exchange.status;
  const headers = unpackHeaders(exchange.headers);
  const body = exchange.body;
  if (body !== undefined) return new Response(body.length > 0 ? body : null, { status, headers });
  if (kept === undefined) return new Response(null, { status, headers });
  // The kept response's own body, streamed; a WebSocket upgrade stays one.
  return new Response(kept.body, { status, statusText: kept.statusText, headers, webSocket: kept.webSocket ?? null });
}

/**
 * The origin's answer read as the exchange takes it (`callOrigin`): a body
 * whose declared length fits is read whole, in one call; any other part by
 * part, until it ends or the exchange says it streams — then a response
 * whose body streams the bytes read so far and then the rest as the caller
 * pulls it (undefined: the exchange holds it all).
 */
export async function readAnswer(response, exchange) {
  const whole = exchange.answerHead(response.status, packHeaders(response.headers));
  if (response.body === null) return undefined;
  if (whole) {
    const body = new Uint8Array(await response.arrayBuffer());
    return exchange.answerChunk(body) ? undefined : streamed(response, [exchange.answerStreams(), body]);
  }
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return undefined;
    if (!exchange.answerChunk(value)) return streamed(response, [exchange.answerStreams(), value], reader);
  }
}

/** `response` with a body of `first`, then what is left in `reader`. */
function streamed(response, first, reader) {
  const body = new ReadableStream({
    pull(controller) {
      if (first.length > 0) return controller.enqueue(first.shift());
      if (reader === undefined) return controller.close();
      return reader.read().then(({ done, value }) => (done ? controller.close() : controller.enqueue(value)));
    },
    cancel(reason) {
      return reader?.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
