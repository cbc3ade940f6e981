// CORS preflights over a raw socket, with request-header names no browser
// would send: the answer allows only names that can be headers (RFC 9110
// tokens), as sent, and never echoes other bytes back. Then the CORS a
// replay carries (SPEC §3, §5): an API's own, kept with the Origin it
// answered; the layer's, with credentials.
import assert from "node:assert/strict";
import http from "node:http";
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

describe("an API that answers CORS itself, IDEMPOTENCY_CORS_ORIGINS unset (the usual setup)", () => {
  const A = "https://shop.example";
  const B = "https://evil.example";
  let api;
  let proxy;
  const runs = new Map();
  before(async () => {
    // A real Node API, doing CORS as such APIs do: the caller's Origin
    // echoed, Location exposed, Vary: Origin.
    api = http.createServer((req, res) => {
      const cors = {
        "access-control-allow-origin": req.headers.origin ?? "*",
        "access-control-expose-headers": "Location",
        vary: "Origin",
      };
      req.resume();
      req.on("end", () => {
        const key = req.headers["idempotency-key"];
        runs.set(key, (runs.get(key) ?? 0) + 1);
        res.writeHead(201, { ...cors, "content-type": "application/json", location: "/orders/1" });
        res.end('{"orderId":"o1"}');
      });
    });
    await new Promise((resolve) => api.listen(0, "127.0.0.1", resolve));
    proxy = await start({ worker: "proxy", vars: { ORIGIN_URL: `http://127.0.0.1:${api.address().port}` } });
  });
  after(async () => {
    await proxy?.dispose();
    api?.close();
  });

  const send = (key, origin) =>
    proxy.fetch("/v1/orders", {
      method: "POST",
      headers: { ...(origin ? { origin } : {}), "content-type": "application/json", "idempotency-key": key },
      body: "{}",
    });

  test("the replay to the same Origin carries the API's CORS, so a browser can read it; the API ran once", async () => {
    const key = crypto.randomUUID();
    const first = await send(key, A);
    assert.equal(first.status, 201);
    assert.equal(first.headers.get("access-control-allow-origin"), A);
    for (let i = 0; i < 3; i++) {
      const replay = await send(key, A);
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.equal(replay.headers.get("access-control-allow-origin"), A, "readable by the page that sent it");
      assert.equal(replay.headers.get("access-control-expose-headers"), "Location");
      assert.equal(replay.headers.get("location"), "/orders/1");
      assert.deepEqual(await replay.json(), { orderId: "o1" });
    }
    assert.equal(runs.get(key), 1);
  });

  test("a replay to another Origin, or to a caller with none, carries no CORS at all", async () => {
    const key = crypto.randomUUID();
    assert.equal((await send(key, A)).status, 201);
    for (const origin of [B, undefined]) {
      const replay = await send(key, origin);
      assert.equal(replay.headers.get("idempotent-replayed"), "true", `${origin}`);
      const cors = [...replay.headers.keys()].filter((name) => name.startsWith("access-control-"));
      assert.deepEqual(cors, [], `${origin}: no other site gets the first caller's permission`);
      assert.ok(![...replay.headers.keys()].some((name) => name.startsWith(":")), "the stored marker is never sent");
    }
    assert.equal(runs.get(key), 1);
  });
});

describe("answers the layer only passes through (SPEC §5)", () => {
  test("an uncovered GET and a keyless POST from an allowed origin get no CORS from the layer", async () => {
    const get = await worker.fetch("/api/orders?item=none", { headers: { origin: ALLOWED } });
    const keyless = await worker.fetch("/api/orders", {
      method: "POST",
      headers: { origin: ALLOWED, "content-type": "application/json" },
      body: JSON.stringify({ item: "tea", quantity: 1, amountCents: 500 }),
    });
    for (const res of [get, keyless]) {
      assert.ok(res.status < 300, `${res.status}`);
      const cors = [...res.headers.keys()].filter((name) => name.startsWith("access-control-"));
      assert.deepEqual(cors, [], "the layer never widens the API's own CORS");
      await res.arrayBuffer();
    }
    const keyed = await worker.fetch("/api/orders", {
      method: "POST",
      headers: { origin: ALLOWED, "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
      body: JSON.stringify({ item: "tea", quantity: 1, amountCents: 500 }),
    });
    assert.equal(keyed.headers.get("access-control-allow-origin"), ALLOWED, "a covered keyed request's answer has it");
    await keyed.arrayBuffer();
  });
});

describe("CORS settings that could never be safe or never match are misconfigured (SPEC §5)", () => {
  const cases = [
    [
      "* with credentials: every site could read every signed-in answer",
      { IDEMPOTENCY_CORS_ORIGINS: "*", IDEMPOTENCY_CORS_CREDENTIALS: "true" },
      "IDEMPOTENCY_CORS_CREDENTIALS",
    ],
    ["credentials with no origin listed", { IDEMPOTENCY_CORS_CREDENTIALS: "true" }, "IDEMPOTENCY_CORS_CREDENTIALS"],
    [
      "a listed origin with a trailing slash",
      { IDEMPOTENCY_CORS_ORIGINS: "https://a.example/" },
      "IDEMPOTENCY_CORS_ORIGINS",
    ],
    ["a listed origin with capitals", { IDEMPOTENCY_CORS_ORIGINS: "https://A.example" }, "IDEMPOTENCY_CORS_ORIGINS"],
  ];
  for (const [what, vars, variable] of cases) {
    test(`${what} → every request 500 misconfigured naming ${variable}, never the value`, async () => {
      const misconfigured = await start({ vars });
      try {
        const res = await misconfigured.fetch("/api/orders", {
          method: "POST",
          headers: { origin: "https://a.example", "idempotency-key": crypto.randomUUID() },
          body: "{}",
        });
        assert.equal(res.status, 500);
        const problem = await res.json();
        assert.equal(problem.type, "urn:oncekey:problem:misconfigured");
        assert.match(problem.detail, new RegExp(variable));
        assert.ok(!problem.detail.includes("a.example") && !problem.detail.includes("A.example"), problem.detail);
        assert.equal(res.headers.get("access-control-allow-credentials"), null);
      } finally {
        await misconfigured.dispose();
      }
    });
  }
});

describe("IDEMPOTENCY_CORS_CREDENTIALS=true", () => {
  const A = "https://app.example";
  let worker;
  before(async () => {
    worker = await start({ vars: { IDEMPOTENCY_CORS_ORIGINS: A, IDEMPOTENCY_CORS_CREDENTIALS: "true" } });
  });
  after(() => worker?.dispose());

  test("preflights, first answers and replays allow credentials, for the caller's own origin", async () => {
    const preflight = await worker.fetch("/api/orders", {
      method: "OPTIONS",
      headers: {
        origin: A,
        "access-control-request-method": "POST",
        "access-control-request-headers": "idempotency-key",
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get("access-control-allow-credentials"), "true");
    assert.equal(preflight.headers.get("access-control-allow-origin"), A);
    const key = crypto.randomUUID();
    const post = () =>
      worker.fetch("/api/orders", {
        method: "POST",
        headers: { origin: A, "content-type": "application/json", "idempotency-key": key, cookie: "session=1" },
        body: JSON.stringify({ item: "tea", quantity: 1, amountCents: 500 }),
      });
    for (const res of [await post(), await post()]) {
      assert.equal(res.headers.get("access-control-allow-credentials"), "true");
      assert.equal(res.headers.get("access-control-allow-origin"), A, "never `*` with credentials");
      await res.arrayBuffer();
    }
    // Another site with the victim's cookies gets no permission to read.
    const other = await worker.fetch("/api/orders", {
      method: "POST",
      headers: { origin: "https://evil.example", "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ item: "tea", quantity: 1, amountCents: 500 }),
    });
    assert.equal(other.headers.get("access-control-allow-origin"), null);
    assert.equal(other.headers.get("access-control-allow-credentials"), null);
    await other.arrayBuffer();
  });
});
