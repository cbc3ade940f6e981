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
// The secrets are the ones named with `--secret` and, as `wrangler dev`
// sees them, the names in the `.dev.vars` file beside the config.
//
// Neither command ever echoes an argument it refuses: an argument is named
// by its place (`argument 3`) and its option (`--secret`), never by its
// text, which may be a secret pasted where a name belongs.
//
// `oncekey record` prints the name of a key's record — the 64 hex digits
// that every decision's log line carries and the admin paths take — from
// the request's host, the caller's identity and the key, for an operator
// who has the key from a support ticket. The name is computed by the
// core's own function (the worker's wasm), never re-implemented.
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
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
       npx --no-install oncekey record --path PATH --delivery ID [--body-file FILE]

check: the worker's configuration, with the core's rules; exits 1 naming each problem.
  wrangler.toml      the config (default: ./wrangler.toml)
  --env NAME         check [env.NAME] (its vars and bindings), as wrangler deploy --env NAME does
  --secret NAME      a secret the worker has (wrangler secret put NAME; repeatable): its name,
                     never its value; the value, if set in this shell's environment, is checked too
  .dev.vars          beside the config (.dev.vars.NAME first with --env NAME), as wrangler dev
                     reads it: each name in it is a bound secret, its value checked too
  --proxy, --handler whether the worker is the proxy (it then needs an origin) or a
                     withIdempotency handler (default: the proxy if its main imports oncekey/proxy)

record:
  --host HOST        the host the request was sent to (shop.example, or a URL)
  --key KEY          the Idempotency-Key as the client sent it
  --scope SCOPE      the worker's IDEMPOTENCY_SCOPE, if not header:authorization
  --identity-stdin   read the caller's identity from standard input
  --path PATH        with --delivery: the webhook route's path as the sender calls it (/hooks/stripe)
  --delivery ID      a webhook delivery's id (Stripe's event id, GitHub's X-GitHub-Delivery, ...),
                     instead of --key: its record is named by the path (in any spelling) and the id,
                     not by a caller nor the host
  --body-file FILE   with --delivery, for a GitHub or Shopify route: the delivery's body as sent
                     (their signature leaves the id out, so the body names the record too)
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

/**
 * How secrets' values begin, not their names (Standard Webhooks' and
 * Stripe's signing secrets, Shopify's app secrets, Stripe's API keys,
 * GitHub's tokens): the core's rule for a route's `secret`
 * (src/core/config/routes.rs, `is_secret_name`), kept the same here.
 */
const SECRET_VALUE_PREFIXES = [
  "whsec_",
  "shpss_",
  "sk_live_",
  "sk_test_",
  "rk_live_",
  "rk_test_",
  "ghp_",
  "github_pat_",
];

/**
 * Whether `name` is a secret's name and not its value: a binding name
 * (letters, digits, `_`, not starting with a digit: so no base64 `+`, `/`
 * or `=`, no space, no `NAME=value`) that begins with none of
 * {@link SECRET_VALUE_PREFIXES}.
 */
function isSecretName(name) {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !SECRET_VALUE_PREFIXES.some((prefix) => name.startsWith(prefix));
}

function fail(message) {
  process.stderr.write(`oncekey: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

/**
 * An argument named by its place on the command line (the command is
 * argument 1), never by its text: what was refused may be a secret.
 */
function place(index) {
  return `argument ${index + 2}`;
}

/**
 * `args` read as parseArgs's strict mode reads them (`options` its option
 * specs; at most `most` positionals), each refusal naming the argument by
 * its place and, when it has one, its option's name — never its text,
 * which parseArgs's own errors quote. Returns parseArgs's `values` and
 * `positionals`, and its `tokens` (with each argument's place).
 */
function readArgs(command, args, options, { most = 0, positional = "" } = {}) {
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const values = {};
  const positionals = [];
  for (const token of tokens) {
    if (token.kind === "option-terminator") continue;
    if (token.kind === "positional") {
      if (positionals.length === most) fail(`${place(token.index)}: ${command} ${positional}`);
      positionals.push(token.value);
      continue;
    }
    const option = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (option === undefined) fail(`${place(token.index)} is not an option of ${command}`);
    const name = `--${token.name}`;
    if (option.type === "string") {
      // The value's own place: after its option, or in it (`--key=value`).
      const at = place(token.inlineValue ? token.index : token.index + 1);
      if (token.value === undefined) fail(`${name} needs a value`);
      if (!token.inlineValue && token.value.startsWith("-")) {
        fail(`${name} needs a value: ${at} begins with - (write ${name}=… for a value that does)`);
      }
    } else if (token.value !== undefined) fail(`${name} (${place(token.index)}) takes no value`);
    const value = token.value ?? true;
    values[token.name] = option.multiple ? [...(values[token.name] ?? []), value] : value;
  }
  return { values, positionals, tokens };
}

const [command, ...rest] = process.argv.slice(2);
if (command === "-h" || command === "--help" || command === "help") {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (command === "check") check(rest);
if (command !== "record")
  fail(command === undefined ? "no command given" : "argument 1 is not a command: `check` or `record`");

for (const arg of rest) {
  const name = arg.replace(/^--/, "").split("=")[0].toLowerCase();
  if (arg.startsWith("--") && ON_THE_COMMAND_LINE.includes(name)) {
    fail(
      `--${name} would put a secret on the command line: give the identity on standard input (--identity-stdin) or in ONCEKEY_IDENTITY`,
    );
  }
}

const { values } = readArgs(
  "record",
  rest,
  {
    host: { type: "string" },
    key: { type: "string" },
    scope: { type: "string" },
    "identity-stdin": { type: "boolean" },
    path: { type: "string" },
    delivery: { type: "string" },
    "body-file": { type: "string" },
    help: { type: "boolean", short: "h" },
  },
  {
    positional:
      'takes no argument but its options: the caller\'s identity ("Authorization: Bearer ...") goes on standard input (--identity-stdin) or in ONCEKEY_IDENTITY, never on the command line',
  },
);
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (values.delivery !== undefined) {
  if (values.key !== undefined) fail("--key and --delivery name different records: give one");
  if (values.path === undefined) fail("--delivery needs --path, the webhook route's path");
  if (values.host !== undefined) fail("--host goes with --key: a delivery's record is not named by its host");
} else if (values.key === undefined) fail("--key (or --delivery) is required");
else if (values.path !== undefined)
  fail("--path goes with --delivery: a keyed request's record is not named by its path");
else if (values["body-file"] !== undefined) fail("--body-file goes with --delivery");
else if (values.host === undefined) fail("--host is required with --key");

if (values.delivery !== undefined) {
  let body;
  if (values["body-file"] !== undefined) {
    try {
      body = readFileSync(values["body-file"]);
    } catch {
      fail("--body-file: no such file");
    }
  }
  printName(() => deliveryRecordName(values.path, values.delivery, body));
} else {
  printName(() => recordName(hostOf(values.host), values.scope, identityHeaders(), values.key));
}

/** The host as the runtime hands it to the layer: lower-case, punycode, no port. */
function hostOf(written) {
  try {
    return new URL(written.includes("://") ? written : `https://${written}`).hostname;
  } catch {
    fail("--host is not a host name (shop.example, or a URL)");
  }
}

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
  const { values, tokens } = readArgs(
    "check",
    args,
    {
      env: { type: "string" },
      secret: { type: "string", multiple: true },
      proxy: { type: "boolean" },
      handler: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    { most: 1, positional: "takes one wrangler.toml" },
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  // A secret's name, never its value (`--secret NAME=value`, or the value
  // alone): named by its place, not shown.
  for (const token of tokens) {
    if (token.kind === "option" && token.name === "secret" && !isSecretName(token.value)) {
      fail(
        `--secret (${place(token.inlineValue ? token.index : token.index + 1)}) takes a secret's name (letters, digits, \`_\`), never its value: the value is read from this shell's environment or .dev.vars`,
      );
    }
  }
  const given = tokens.find((token) => token.kind === "positional");
  const path = resolve(given?.value ?? "wrangler.toml");
  // The default path is the command's own; a given one is named by its place.
  const named = given === undefined ? path : `${place(given.index)} (the config)`;
  if (!existsSync(path) || !statSync(path).isFile()) fail(`${named}: no such file`);
  let config;
  try {
    config = parseToml(readFileSync(path, "utf8"));
  } catch (error) {
    // smol-toml's message quotes the line: say where, not what.
    const at = Number.isInteger(error?.line) ? ` (line ${error.line}, column ${error.column})` : "";
    fail(`${named}: not TOML${at}`);
  }
  // A named environment has its own vars and bindings: wrangler does not
  // inherit them from the top level.
  const scope = values.env === undefined ? config : config.env?.[values.env];
  if (scope === undefined || scope === null || typeof scope !== "object") {
    const envs = Object.keys(config.env ?? {});
    fail(
      `--env: the config has no such environment (${envs.length ? `its environments: ${envs.join(", ")}` : "it has none"})`,
    );
  }
  const proxy = values.proxy ?? (values.handler ? false : importsProxy(path, config.main));
  const dev = devVars(path, values.env);
  core();
  const env = workerEnv(scope, values.secret ?? [], dev);
  const webhooks = webhookNotes(scope);
  const problems = [...configProblems(env, proxy), ...webhooks.problems];
  const where = values.env === undefined ? path : `${path} [env.${values.env}]`;
  const kind = proxy ? "the proxy" : "a handler's worker";
  const notes = [...(dev === undefined ? [] : devVarsNotes(dev, scope)), ...webhooks.warnings];
  if (problems.length === 0) {
    process.stdout.write(`oncekey check: ${where}: sound (${kind})\n`);
    for (const note of notes) process.stdout.write(`  ${note}\n`);
    process.exit(0);
  }
  const count = `${problems.length} problem${problems.length === 1 ? "" : "s"}`;
  process.stderr.write(`oncekey check: ${where} (${kind}): ${count}\n`);
  for (const note of notes) process.stderr.write(`  ${note}\n`);
  for (const problem of problems) process.stderr.write(`  - ${problem}\n`);
  process.exit(1);
}

/**
 * What the webhook routes of `scope` (a config or one of its
 * environments) risk beyond the core's rules: `problems`, a route whose
 * `secret` names a `[vars]` entry (its signing key would sit in the
 * committed config, and anyone reading it could sign deliveries); and
 * `warnings`, webhook routes under `IDEMPOTENCY_CONSISTENCY=kv`, where
 * concurrent copies of one delivery may each run. Names only, never values.
 */
function webhookNotes(scope) {
  const vars = scope.vars ?? {};
  let routes = [];
  try {
    routes = JSON.parse(vars.IDEMPOTENCY_ROUTES ?? "[]");
  } catch {
    // Unreadable routes are the core's problem to name.
  }
  const hooks = (Array.isArray(routes) ? routes : []).map((route, at) => [route, at + 1]).filter(([r]) => r?.webhook);
  const problems = hooks
    .filter(([route]) => typeof route.secret === "string" && Object.hasOwn(vars, route.secret))
    .map(
      ([route, n]) =>
        `IDEMPOTENCY_ROUTES: route ${n}: its secret ${route.secret} is a [vars] entry, in the config in plain text: put it with \`wrangler secret put ${route.secret}\` and remove it from [vars]`,
    );
  const warnings =
    hooks.length > 0 && vars.IDEMPOTENCY_CONSISTENCY === "kv"
      ? [
          "warning: IDEMPOTENCY_CONSISTENCY=kv keeps no reservation: concurrent copies of one webhook delivery may each run the receiver (docs/configuration.md)",
        ]
      : [];
  return { problems, warnings };
}

/**
 * The `.dev.vars` file `wrangler dev` reads beside the config at `path` —
 * `.dev.vars.<env>` first when `--env <env>` is given — as `{ file,
 * entries }` (`entries`: `[name, value, line]` in the file's order, a name
 * given twice keeping its last value, as wrangler does), or undefined when
 * there is none. Read as wrangler reads it (dotenv's `parse`): `NAME=value`
 * (or `NAME: value`) lines, `export ` allowed before the name; a value bare
 * (up to a `#` comment, trimmed) or in '…', "…" or `…` quotes, which may
 * span lines (in "…", `\n` and `\r` are a newline and a return); `#`
 * comment lines; any other line skipped.
 */
function devVars(path, envName) {
  const base = resolve(dirname(path), ".dev.vars");
  const file = [envName === undefined ? undefined : `${base}.${envName}`, base].find(
    (candidate) => candidate !== undefined && existsSync(candidate) && statSync(candidate).isFile(),
  );
  if (file === undefined) return undefined;
  const text = readFileSync(file, "utf8").replace(/\r\n?/g, "\n");
  const line =
    /^\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\n]+)?\s*(?:#.*)?$/gm;
  const found = new Map();
  for (const match of text.matchAll(line)) {
    const quote = (match[2] ?? "").trim()[0];
    let value = (match[2] ?? "").trim().replace(/^(['"`])([\s\S]*)\1$/, "$2");
    if (quote === '"') value = value.replace(/\\n/g, "\n").replace(/\\r/g, "\r");
    const at = match.index + match[0].indexOf(match[1]);
    found.delete(match[1]);
    found.set(match[1], [match[1], value, text.slice(0, at).split("\n").length]);
  }
  return { file: basename(file), entries: [...found.values()] };
}

/**
 * What `oncekey check` says of the `.dev.vars` file `dev`: the names it
 * binds as secrets (a name that looks like a value — a line pasted whole —
 * by its line only), never a value; and those it leaves to `[vars]`.
 */
function devVarsNotes({ file, entries }, scope) {
  const shown = ([name, , line]) => (isSecretName(name) ? name : `the name on line ${line}`);
  const vars = scope.vars ?? {};
  const secrets = entries.filter(([name]) => !Object.hasOwn(vars, name)).map(shown);
  const notes = [
    secrets.length === 0
      ? `secrets from ${file}: none`
      : `secrets from ${file}: ${secrets.join(", ")} (bound as wrangler dev binds them; a deploy needs each put with \`wrangler secret put\`)`,
  ];
  const shadowed = entries.filter(([name]) => Object.hasOwn(vars, name)).map(shown);
  if (shadowed.length > 0) {
    notes.push(
      `${file} also sets ${shadowed.join(", ")}, which [vars] sets: the [vars] value, which deploys, is checked`,
    );
  }
  return notes;
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
 * for the kinds it checks), the secrets of `.dev.vars` (`dev`) that
 * `[vars]` does not set, with their values, and each secret named with
 * `--secret` — its value from this shell's environment, else from
 * `.dev.vars`, else a stand-in (only its name is known).
 */
function workerEnv(scope, secrets, dev) {
  const env = { ...(scope.vars ?? {}) };
  for (const [name, value] of dev?.entries ?? []) {
    if (!Object.hasOwn(env, name)) env[name] = value;
  }
  const fromDev = new Map((dev?.entries ?? []).map(([name, value]) => [name, value]));
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
  for (const name of secrets) env[name] = process.env[name] ?? fromDev.get(name) ?? standIn(name);
  return env;
}
