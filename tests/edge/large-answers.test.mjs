// An origin answer larger than IDEMPOTENCY_MAX_RESPONSE_BYTES (SPEC §3):
// the caller gets all of it, streamed, and the replay has the status and
// headers with an empty body and Idempotent-Body-Omitted. The layer holds
// at most the limit of it, whatever the origin sends.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import http from "node:http";
import { gzipSync } from "node:zlib";
import { after, before, describe, test } from "node:test";
import { newKey, start } from "./harness.mjs";

const SIZE = 20 * 1024 * 1024;
const CHUNK = 64 * 1024;

/** Byte i of the export: a pattern a truncated or reordered body would break. */
function chunkAt(offset, length) {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = ((offset + i) * 31) % 251;
  return bytes;
}

function expectedHash() {
  const hash = createHash("sha256");
  for (let at = 0; at < SIZE; at += CHUNK) hash.update(chunkAt(at, Math.min(CHUNK, SIZE - at)));
  return hash.digest("hex");
}

describe("a 20 MB origin answer through the production proxy", () => {
  let worker;
  let executions = 0;
  before(async () => {
    worker = await start({
      worker: "proxy",
      vars: { ORIGIN_URL: "http://origin.test" },
      outboundService: (request) => {
        executions++;
        const declared = new URL(request.url).searchParams.has("declared");
        let at = 0;
        const body = new ReadableStream({
          pull(controller) {
            if (at >= SIZE) return controller.close();
            const length = Math.min(CHUNK, SIZE - at);
            controller.enqueue(chunkAt(at, length));
            at += length;
          },
        });
        const headers = { "content-type": "text/csv", ...(declared ? { "content-length": String(SIZE) } : {}) };
        return new Response(body, { status: 200, headers });
      },
    });
  });
  after(() => worker?.dispose());

  for (const declared of [false, true]) {
    test(`${declared ? "with" : "without"} Content-Length: delivered whole, stored without its body, run once`, async () => {
      const before = executions;
      const key = newKey();
      const send = () =>
        worker.fetch(`/v1/exports${declared ? "?declared" : ""}`, {
          method: "POST",
          headers: { "idempotency-key": key, "content-type": "application/json" },
          body: "{}",
        });
      const first = await send();
      assert.equal(first.status, 200);
      const bytes = new Uint8Array(await first.arrayBuffer());
      assert.equal(bytes.length, SIZE, "every byte reached the caller");
      assert.equal(createHash("sha256").update(bytes).digest("hex"), expectedHash(), "in order, unchanged");
      const replay = await send();
      assert.equal(replay.status, 200);
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.equal(replay.headers.get("idempotent-body-omitted"), "true");
      assert.equal(replay.headers.get("content-type"), "text/csv");
      assert.equal((await replay.arrayBuffer()).byteLength, 0);
      assert.equal(executions - before, 1, "the origin ran once");
    });
  }
});

// A compressed answer: its Content-Length counts the gzip bytes, the layer
// reads what the runtime decodes. 3 MB of decoded body over a 1 MiB limit
// is streamed, never held whole because its declared length looked small,
// and its replay carries no Content-Encoding for the body it omits.
describe("a gzip'd origin answer that is small on the wire and large decoded", () => {
  const DECODED = 3 * 1024 * 1024;
  let worker;
  let server;
  let executions = 0;
  before(async () => {
    const gz = gzipSync(Buffer.alloc(DECODED, 7));
    server = http.createServer((req, res) => {
      executions++;
      req.resume();
      res.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-encoding": "gzip",
        "content-length": gz.length,
        etag: '"v1"',
      });
      res.end(gz);
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    worker = await start({
      worker: "proxy",
      quiet: true,
      vars: { ORIGIN_URL: `http://127.0.0.1:${server.address().port}` },
    });
  });
  after(async () => {
    await worker?.dispose();
    await new Promise((resolve) => server.close(resolve));
  });

  test("delivered whole and decoded, stored without its body, the replay without content-encoding or etag", async () => {
    const key = newKey();
    const send = () => worker.fetch("/v1/exports", { method: "POST", headers: { "idempotency-key": key }, body: "{}" });
    const first = await send();
    assert.equal(first.status, 200);
    const bytes = new Uint8Array(await first.arrayBuffer());
    assert.equal(bytes.length, DECODED);
    assert.ok(bytes.every((b) => b === 7));
    const replay = await send();
    assert.equal(replay.headers.get("idempotent-body-omitted"), "true");
    assert.equal(replay.headers.get("content-encoding"), null, "no header describes the missing bytes");
    assert.equal(replay.headers.get("etag"), null);
    assert.equal((await replay.arrayBuffer()).byteLength, 0);
    assert.equal(executions, 1);
  });
});
