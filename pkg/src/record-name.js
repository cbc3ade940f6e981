// `oncekey-record` (SPEC §12): prints the name of a key's record — the
// 64 hex digits that every decision's log line carries and the admin paths
// take — from the request's host, the caller's identity and the key, for
// an operator who has the key from a support ticket. The name is computed
// by the core's own function (the worker's wasm), never re-implemented.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { initSync, recordName } from "oncekey-worker-wasm";

const USAGE = `usage: oncekey-record --host HOST --key KEY [identity]

  --host HOST            the host the request was sent to (shop.example, or a URL)
  --key KEY              the Idempotency-Key as the client sent it
identity, as the layer's IDEMPOTENCY_SCOPE reads it (none: the anonymous scope):
  --authorization VALUE  the request's Authorization header ("Bearer ...")
  --cookie VALUE         the request's Cookie header
  --header "NAME: VALUE" any other header (repeatable)
  --scope SCOPE          the worker's IDEMPOTENCY_SCOPE, if not header:authorization

Prints the record's name (64 hex digits), e.g. for
  curl -H "Authorization: Bearer $IDEMPOTENCY_ADMIN_TOKEN" \\
    https://HOST/.well-known/oncekey/records/$(npx oncekey-record ...)`;

function fail(message) {
  process.stderr.write(`oncekey-record: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      host: { type: "string" },
      key: { type: "string" },
      authorization: { type: "string" },
      cookie: { type: "string" },
      header: { type: "string", multiple: true },
      scope: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  }));
} catch (error) {
  fail(error.message);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (values.host === undefined) fail("--host is required");
if (values.key === undefined) fail("--key is required");

// The host as the runtime hands it to the layer: lower-case, punycode, no port.
let host;
try {
  host = new URL(values.host.includes("://") ? values.host : `https://${values.host}`).hostname;
} catch {
  fail(`--host ${JSON.stringify(values.host)} is not a host name`);
}
const headers = [];
for (const line of values.header ?? []) {
  const colon = line.indexOf(":");
  if (colon < 1) fail(`--header ${JSON.stringify(line)} is not "NAME: VALUE"`);
  headers.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]);
}
if (values.authorization !== undefined) headers.push(["authorization", values.authorization]);
if (values.cookie !== undefined) headers.push(["cookie", values.cookie]);

initSync({ module: readFileSync(new URL("./oncekey_worker_bg.wasm", import.meta.url)) });
try {
  process.stdout.write(`${recordName(host, values.scope, headers, values.key)}\n`);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
