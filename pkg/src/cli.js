// `oncekey`, the operator's command of the installed package (SPEC §10, §12),
// run as `npx --no-install oncekey …` so npx never fetches a package by
// name from the registry. Secrets (a caller's Authorization, cookies) come
// from standard input or the environment, never the command line, where
// shell history and `ps` keep them.
//
// `oncekey check [wrangler.toml]` checks a worker's configuration with the
// core's own rules (its `[vars]` — routes included —, its bindings, and the
// names of its secrets: each webhook route's must be one), so a bad value
// fails in CI instead of answering the first caller `500 misconfigured`.
//
// `oncekey record` prints the name of a key's record — the 64 hex digits
// that every decision's log line carries and the admin paths take — from
// the request's host, the caller's identity and the key, for an operator
// who has the key from a support ticket. The name is computed by the
// core's own function (the worker's wasm), never re-implemented.
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  BindingKind,
  bindingMethod,
  configProblems,
  deliveryRecordName,
  initSync,
  recordName,
} from "oncekey-worker-wasm";
import { parse as parseToml } from "smol-toml";

const USAGE = `usage: npx --no-install oncekey check [wrangler.toml] [--env NAME] [--secret NAME]... [--proxy | --handler]
       npx --no-install oncekey record --host HOST --key KEY [--scope SCOPE] [--identity-stdin]
       npx --no-install oncekey record --host HOST --path PATH --delivery ID

check: the worker's configuration, with the core's rules; exits 1 naming each problem.
  wrangler.toml      the config (default: ./wrangler.toml)
  --env NAME         check [env.NAME] (its vars and bindings), as wrangler deploy --env NAME does
  --secret NAME      a secret the worker has (wrangler secret put NAME; repeatable): its value,
                     if set in this shell's environment, is checked too
  --proxy, --handler whether the worker is the proxy (it then needs an origin) or a
                     withIdempotency handler (default: the proxy if its main imports oncekey/proxy)

record:
  --host HOST        the host the request was sent to (shop.example, or a URL)
  --key KEY          the Idempotency-Key as the client sent it
  --scope SCOPE      the worker's IDEMPOTENCY_SCOPE, if not header:authorization
  --identity-stdin   read the caller's identity from standard input
  --path PATH        with --delivery: the webhook route's path as the sender calls it (/hooks/stripe)
  --delivery ID      a webhook delivery's id (Stripe's event id, GitHub's X-GitHub-Delivery, ...),
                     instead of --key: its record is named by host, path and id, not by a caller
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
if (command === "check") check(rest);
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
      path: { type: "string" },
      delivery: { type: "string" },
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
if (values.delivery !== undefined) {
  if (values.key !== undefined) fail("--key and --delivery name different records: give one");
  if (values.path === undefined) fail("--delivery needs --path, the webhook route's path");
} else if (values.key === undefined) fail("--key (or --delivery) is required");
else if (values.path !== undefined)
  fail("--path goes with --delivery: a keyed request's record is not named by its path");

// The host as the runtime hands it to the layer: lower-case, punycode, no port.
let host;
try {
  host = new URL(values.host.includes("://") ? values.host : `https://${values.host}`).hostname;
} catch {
  fail(`--host ${JSON.stringify(values.host)} is not a host name`);
}

if (values.delivery !== undefined) printName(() => deliveryRecordName(host, values.path, values.delivery));
else printName(() => recordName(host, values.scope, identityHeaders(), values.key));

/**
 * The caller's identity as `[[name, value], ...]`: from standard input
 * with --identity-stdin, else ONCEKEY_IDENTITY; none, the anonymous scope.
 */
function identityHeaders() {
  const identity = values["identity-stdin"] ? readFileSync(0, "utf8") : (process.env.ONCEKEY_IDENTITY ?? "");
  const headers = [];
  for (const [i, line] of identity.split(/\r?\n/).entries()) {
    if (line.trim() === "") continue;
    const colon = line.indexOf(":");
    // Never echo the line: it holds a secret.
    if (colon < 1) fail(`identity line ${i + 1} is not "Name: value"`);
    headers.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]);
  }
  return headers;
}

/** Prints the record name `name()` computes with the core's wasm; its error is the command's. */
function printName(name) {
  core();
  let printed;
  try {
    printed = name();
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  process.stdout.write(`${printed}\n`);
}

/** The core's wasm, loaded once. */
function core() {
  initSync({ module: readFileSync(new URL("./oncekey_worker_bg.wasm", import.meta.url)) });
}

/** `oncekey check`: exits 0 when the configuration is sound, else 1 naming each problem. */
function check(args) {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        env: { type: "string" },
        secret: { type: "string", multiple: true },
        proxy: { type: "boolean" },
        handler: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    fail(String(error.message).split("\n")[0]);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const path = resolve(positionals[0] ?? "wrangler.toml");
  if (!existsSync(path)) fail(`${path}: no such file`);
  let config;
  try {
    config = parseToml(readFileSync(path, "utf8"));
  } catch (error) {
    fail(`${path}: not TOML: ${String(error.message).split("\n")[0]}`);
  }
  // A named environment has its own vars and bindings: wrangler does not
  // inherit them from the top level.
  const scope = values.env === undefined ? config : config.env?.[values.env];
  if (scope === undefined) fail(`${path}: no [env.${values.env}]`);
  const proxy = values.proxy ?? (values.handler ? false : importsProxy(path, config.main));
  core();
  const env = workerEnv(scope, values.secret ?? []);
  const problems = configProblems(env, proxy);
  const where = values.env === undefined ? path : `${path} [env.${values.env}]`;
  const kind = proxy ? "the proxy" : "a handler's worker";
  if (problems.length === 0) {
    process.stdout.write(`oncekey check: ${where}: sound (${kind})\n`);
    process.exit(0);
  }
  const count = `${problems.length} problem${problems.length === 1 ? "" : "s"}`;
  process.stderr.write(`oncekey check: ${where} (${kind}): ${count}\n`);
  for (const problem of problems) process.stderr.write(`  - ${problem}\n`);
  process.exit(1);
}

/** Whether the worker's `main` (beside the config) imports `oncekey/proxy`. */
function importsProxy(path, main) {
  if (typeof main !== "string") return false;
  const file = resolve(dirname(path), main);
  return existsSync(file) && /["']oncekey\/proxy["']/.test(readFileSync(file, "utf8"));
}

/**
 * What a secret whose value this shell does not have stands in as: a value
 * its variable's rules accept, so only its name is checked — a seal key is
 * 32 bytes of base64; any other secret gets one every webhook sender's form
 * accepts (`whsec_` and base64, for Standard Webhooks and Stripe), which is
 * an admin token too. A function, so that `check`, which runs before this
 * module's later statements, can use it.
 */
function standIn(name) {
  if (name === "IDEMPOTENCY_SEAL_KEYS") return `${"A".repeat(43)}=`;
  return "whsec_c2VjcmV0LXNldC13aXRoLXdyYW5nbGVy";
}

/**
 * The worker's `env` as the runtime would hand it over: its vars, each
 * binding as an object with its kind's method (the one the core looks for,
 * for the kinds it checks), and each secret — its value from this shell's
 * environment, else a stand-in (only its name is known).
 */
function workerEnv(scope, secrets) {
  const env = { ...(scope.vars ?? {}) };
  const bind = (list, key, method) => {
    for (const binding of list ?? []) {
      if (typeof binding?.[key] === "string") env[binding[key]] = { [method]() {} };
    }
  };
  bind(scope.durable_objects?.bindings, "name", bindingMethod(BindingKind.DurableObjects));
  bind(scope.kv_namespaces, "binding", bindingMethod(BindingKind.Kv));
  bind(scope.services, "binding", bindingMethod(BindingKind.Service));
  bind(scope.analytics_engine_datasets, "binding", "writeDataPoint");
  bind(scope.queues?.producers, "binding", "send");
  for (const name of secrets) env[name] = process.env[name] ?? standIn(name);
  return env;
}
