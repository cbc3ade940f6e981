// `oncekey`, the operator's command of the installed package (SPEC §10, §12),
// run as `npx --no-install oncekey …` so npx never fetches a package by
// name from the registry. Secrets (a caller's Authorization, cookies) come
// from standard input or the environment, never the command line, where
// shell history and `ps` keep them.
//
// `oncekey record` prints the name of a key's record — the 64 hex digits
// that every decision's log line carries and the admin paths take — from
// the request's host, the caller's identity and the key, for an operator
// who has the key from a support ticket. The name is computed by the
// core's own function (the worker's wasm), never re-implemented.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { initSync, recordName } from "oncekey-worker-wasm";

const USAGE = `usage: npx --no-install oncekey record --host HOST --key KEY [--scope SCOPE] [--identity-stdin]

  --host HOST        the host the request was sent to (shop.example, or a URL)
  --key KEY          the Idempotency-Key as the client sent it
  --scope SCOPE      the worker's IDEMPOTENCY_SCOPE, if not header:authorization
  --identity-stdin   read the caller's identity from standard input
The caller's identity, as the worker's IDEMPOTENCY_SCOPE reads it, is the
headers it names ("Authorization: Bearer ...", "Cookie: session=...", one
"Name: value" per line), read from standard input with --identity-stdin or
from the ONCEKEY_IDENTITY environment variable; none: the anonymous scope.
Never on the command line, where shell history keeps it.

Prints the record's name (64 hex digits), e.g. for
  curl -H "Authorization: Bearer $IDEMPOTENCY_ADMIN_TOKEN" \\
    https://HOST/.well-known/oncekey/records/$(npx --no-install oncekey record ...)`;

/** Options that once took a secret on the command line: refused, without echoing it. */
const ON_THE_COMMAND_LINE = ["authorization", "cookie", "header"];

function fail(message) {
  process.stderr.write(`oncekey: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

const [command, ...rest] = process.argv.slice(2);
if (command === "-h" || command === "--help" || command === "help") {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (command !== "record")
  fail(command === undefined ? "no command given" : `unknown command ${JSON.stringify(command)}`);

for (const arg of rest) {
  const name = arg.replace(/^--/, "").split("=")[0];
  if (arg.startsWith("--") && ON_THE_COMMAND_LINE.includes(name)) {
    fail(
      `--${name} would put a secret on the command line: give the identity on standard input (--identity-stdin) or in ONCEKEY_IDENTITY`,
    );
  }
}

let values;
try {
  ({ values } = parseArgs({
    args: rest,
    options: {
      host: { type: "string" },
      key: { type: "string" },
      scope: { type: "string" },
      "identity-stdin": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  }));
} catch (error) {
  // parseArgs quotes what it did not expect: say which option, not its value.
  fail(
    String(error.message)
      .split("\n")[0]
      .replace(/'[^']*'$/, "")
      .trim(),
  );
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

const identity = values["identity-stdin"] ? readFileSync(0, "utf8") : (process.env.ONCEKEY_IDENTITY ?? "");
const headers = [];
for (const [i, line] of identity.split(/\r?\n/).entries()) {
  if (line.trim() === "") continue;
  const colon = line.indexOf(":");
  // Never echo the line: it holds a secret.
  if (colon < 1) fail(`identity line ${i + 1} is not "Name: value"`);
  headers.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]);
}

initSync({ module: readFileSync(new URL("./oncekey_worker_bg.wasm", import.meta.url)) });
try {
  process.stdout.write(`${recordName(host, values.scope, headers, values.key)}\n`);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
