// CORS preflights over a raw socket, with request-header names no browser
// would send: the answer allows only names that can be headers (RFC 9110
// tokens), as sent, and never echoes other bytes back.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { start } from "./harness.mjs";
import { rawRequest } from "./rawhttp.mjs";

const ALLOWED = "https://shop.example";
const DEFAULT = "Idempotency-Key, Content-Type, Authorization";
const TOKEN_LIST = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+(, [!#$%&'*+\-.^_`|~0-9A-Za-z]+)*$/;

let worker;
let host;
before(async () => {
  worker = await start({ vars: { IDEMPOTENCY_CORS_ORIGINS: ALLOWED } });
  host = new URL(worker.url).host;
});
after(() => worker?.dispose());

/** A preflight for POST /api/orders whose Access-Control-Request-Headers is `requested` (bytes as given). */
async function preflight(requested) {
  const res = await rawRequest(
    worker.url,
    [
      `OPTIONS /api/orders HTTP/1.1\r\nHost: ${host}\r\nOrigin: ${ALLOWED}\r\nAccess-Control-Request-Method: POST\r\n`,
      "Access-Control-Request-Headers: ",
      requested,
      "\r\nConnection: close\r\n\r\n",
    ],
    { end: "half" },
  );
  assert.equal(res.status, 204, `${res.status} ${res.body}`);
  assert.equal(res.headers["access-control-allow-origin"], ALLOWED);
  // rawhttp reads the head as latin1: one character per byte.
  return res.headers["access-control-allow-headers"];
}

describe("a preflight's Access-Control-Allow-Headers", () => {
  const cases = [
    ["valid names, as sent", "idempotency-key, content-type,X-Trace-Id", "idempotency-key, content-type, X-Trace-Id"],
    [
      "a UTF-8 name beside valid ones",
      Buffer.from("idempotency-key, x-clé, content-type", "utf8"),
      "idempotency-key, content-type",
    ],
    [
      "bytes that are not UTF-8",
      Buffer.concat([Buffer.from("x-"), Buffer.from([0xe9, 0xff]), Buffer.from(", idempotency-key")]),
      "idempotency-key",
    ],
    ["a 4-byte UTF-8 character", Buffer.from("x-😀, content-type", "utf8"), "content-type"],
    ["names with spaces and separators", "a b, c(d), e/f, g=h, idempotency-key", "idempotency-key"],
    ["every token character", "x-a!#$%&'*+.^_`|~1", "x-a!#$%&'*+.^_`|~1"],
    ["empty items", " , ,idempotency-key,, ", "idempotency-key"],
    ["only names that cannot be headers", Buffer.from("x-clé, a b", "utf8"), DEFAULT],
    ["nothing requested", "", DEFAULT],
  ];
  for (const [what, requested, expected] of cases) {
    test(what, async () => {
      const allowed = await preflight(requested);
      assert.equal(allowed, expected);
      assert.match(allowed, TOKEN_LIST, "ASCII field names only");
    });
  }
});

describe("with IDEMPOTENCY_CORS_ORIGINS=*", () => {
  let any;
  let anyHost;
  before(async () => {
    any = await start({ vars: { IDEMPOTENCY_CORS_ORIGINS: "*" } });
    anyHost = new URL(any.url).host;
  });
  after(() => any?.dispose());

  /** The Access-Control-Allow-Origin a preflight from `origin` (bytes as given) gets. */
  async function allowOrigin(origin) {
    const res = await rawRequest(
      any.url,
      [
        `OPTIONS /api/orders HTTP/1.1\r\nHost: ${anyHost}\r\nOrigin: `,
        origin,
        "\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n",
      ],
      { end: "half" },
    );
    assert.ok(res.status < 500, `${res.status} ${res.body}`);
    return res.headers["access-control-allow-origin"];
  }

  test("a serialized origin is echoed", async () => {
    assert.equal(await allowOrigin("https://any.example:8443"), "https://any.example:8443");
  });
  const refused = [
    ["null (a sandboxed or opaque caller)", "null"],
    [
      "bytes that are not UTF-8",
      Buffer.concat([Buffer.from("https://h"), Buffer.from([0xe9, 0xff]), Buffer.from(".example")]),
    ],
    ["a list of origins", "https://a.example, https://b.example"],
    ["a path", "https://a.example/app"],
  ];
  for (const [what, origin] of refused) {
    test(`${what} is not echoed`, async () => {
      assert.equal(await allowOrigin(origin), undefined);
    });
  }
});

describe("CORS headers of an origin that does its own (the production proxy)", () => {
  const A = "https://a.example";
  const B = "https://b.example";
  let proxy;
  before(async () => {
    proxy = await start({
      worker: "proxy",
      vars: { ORIGIN_URL: "http://origin.test", IDEMPOTENCY_CORS_ORIGINS: `${A},${B}` },
      // The origin answers for the caller it saw, and exposes Location.
      outboundService: (request) =>
        new Response('{"orderId":"o1"}', {
          status: 201,
          headers: {
            "content-type": "application/json",
            location: "/orders/1",
            "access-control-allow-origin": request.headers.get("origin") ?? "*",
            "access-control-expose-headers": "Location",
          },
        }),
    });
  });
  after(() => proxy?.dispose());

  test("the origin's exposed headers are merged with the layer's; a replay to another origin is allowed for it", async () => {
    const key = crypto.randomUUID();
    const send = (origin) =>
      proxy.fetch("/v1/orders", {
        method: "POST",
        headers: { origin, "content-type": "application/json", "idempotency-key": key },
        body: "{}",
      });
    const first = await send(A);
    assert.equal(first.status, 201);
    const exposed = first.headers.get("access-control-expose-headers").split(", ");
    assert.ok(exposed.includes("Location"), `the origin's Location stays readable: ${exposed}`);
    assert.ok(exposed.includes("Idempotent-Replayed") && exposed.includes("Retry-After"), `${exposed}`);
    assert.equal(first.headers.get("access-control-allow-origin"), A);
    const replay = await send(B);
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.equal(
      replay.headers.get("access-control-allow-origin"),
      B,
      "allowed for the caller at hand, not the first one",
    );
    assert.equal(replay.headers.get("location"), "/orders/1");
  });
});
