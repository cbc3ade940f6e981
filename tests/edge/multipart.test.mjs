// Multipart uploads by meaning (SPEC §2): the production proxy in front of
// a Node HTTP origin, in workerd. A form resent with a new boundary — as
// every FormData send picks one — is the same request and gets the stored
// answer; a changed file byte under the same key is another request (422).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { newKey, problemOf, start, uniqueItem } from "./harness.mjs";
import { serve } from "./origin/server.mjs";

// What the origin ran: POST /v1/uploads stores the form and counts each
// execution by its `title` field.
function createUploads() {
  const runs = new Map();
  let seq = 0;
  const handle = async (request) => {
    const url = new URL(request.url);
    if (request.method !== "POST" || url.pathname !== "/v1/uploads") return new Response("not found", { status: 404 });
    const form = await request.formData();
    const title = form.get("title");
    const file = form.get("file");
    runs.set(title, (runs.get(title) ?? 0) + 1);
    const bytes = new Uint8Array(await file.arrayBuffer());
    return Response.json(
      {
        uploadId: `u${++seq}`,
        title,
        fileName: file.name,
        type: file.type,
        sha256: createHash("sha256").update(bytes).digest("hex"),
      },
      { status: 201 },
    );
  };
  return { handle, runs: (title) => runs.get(title) ?? 0 };
}

const FILE_BYTES = [0x25, 0x50, 0x44, 0x46, 0x2d, 0x0d, 0x0a, 0x00, 0xff, 0x2d, 0x2d];

/** The form as an app builds it: a text field and a small file. */
function formOf(title, bytes = FILE_BYTES) {
  const form = new FormData();
  form.append("title", title);
  form.append("file", new Blob([new Uint8Array(bytes)], { type: "application/pdf" }), "scan.pdf");
  return form;
}

/**
 * The same fields written by hand as another client would: its own
 * boundary (the npm `form-data` package's 26 dashes and 24 hex digits),
 * lower-case header names, parameters in another order, the part's media
 * type in capitals.
 */
function handEncoded(title, bytes = FILE_BYTES) {
  const boundary = `--------------------------${"0123456789abcdef01234567"}`;
  const head = (text) => Buffer.from(text, "latin1");
  const body = Buffer.concat([
    head(`--${boundary}\r\ncontent-disposition: form-data;name="title"\r\n\r\n${title}\r\n`),
    head(
      `--${boundary}\r\nCONTENT-TYPE: Application/PDF\r\ncontent-disposition: form-data; filename="scan.pdf"; name="file"\r\n\r\n`,
    ),
    Buffer.from(bytes),
    head(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `Multipart/Form-Data; boundary="${boundary}"` };
}

describe("multipart uploads through the proxy (a Node HTTP origin)", () => {
  let origin;
  let server;
  let worker;
  before(async () => {
    origin = createUploads();
    server = await serve(origin.handle);
    worker = await start({ worker: "proxy", vars: { ORIGIN_URL: server.url } });
  });
  after(async () => {
    await worker?.dispose();
    await server?.close();
  });

  // Node's own fetch over a real socket: undici encodes the FormData anew on
  // every send, with a fresh random boundary.
  const upload = (key, body, headers = {}) =>
    fetch(new URL("/v1/uploads", worker.url), {
      method: "POST",
      headers: { "idempotency-key": key, ...headers },
      body,
    });

  test("each encoding of a FormData picks a new boundary (the premise)", async () => {
    const form = formOf("premise");
    const [a, b] = [new Response(form), new Response(form)];
    assert.match(a.headers.get("content-type"), /^multipart\/form-data; boundary=/);
    assert.notEqual(a.headers.get("content-type"), b.headers.get("content-type"));
    assert.notDeepEqual(Buffer.from(await a.arrayBuffer()), Buffer.from(await b.arrayBuffer()));
  });

  test("the same form sent twice with one key runs once; the resend is the replay", async () => {
    const title = uniqueItem("resend");
    const key = newKey();
    const first = await upload(key, formOf(title));
    assert.equal(first.status, 201);
    const created = await first.json();
    assert.deepEqual([created.title, created.fileName, created.type], [title, "scan.pdf", "application/pdf"]);
    const again = await upload(key, formOf(title));
    assert.equal(again.status, 201, "a new boundary is not a new request");
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(await again.json(), created);
    assert.equal(origin.runs(title), 1);
  });

  test("the same fields encoded by hand (another boundary, header casing and order) → the replay", async () => {
    const title = uniqueItem("by-hand");
    const key = newKey();
    const first = await upload(key, formOf(title));
    assert.equal(first.status, 201);
    const created = await first.json();
    const { body, contentType } = handEncoded(title);
    const again = await upload(key, body, { "content-type": contentType });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(await again.json(), created);
    assert.equal(origin.runs(title), 1);
  });

  test("one file byte changed under the same key → 422 key-reused, nothing run", async () => {
    const title = uniqueItem("changed");
    const key = newKey();
    assert.equal((await upload(key, formOf(title))).status, 201);
    const changed = FILE_BYTES.with(-1, 0x2e);
    for (const body of [formOf(title, changed), handEncoded(title, changed)]) {
      const res =
        body instanceof FormData
          ? await upload(key, body)
          : await upload(key, body.body, { "content-type": body.contentType });
      assert.equal(res.status, 422);
      assert.equal((await problemOf(res)).code, "key-reused");
    }
    assert.equal(origin.runs(title), 1);
  });
});
