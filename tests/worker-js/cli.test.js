// The operator's command, `oncekey` (pkg/dist/cli.js, SPEC §10, §13): what
// it refuses it names by its place and option, never by its text (a secret
// pasted where a name belongs must not reach a terminal, a CI log or a
// ticket), and `oncekey check` sees the secrets `wrangler dev` sees — the
// names in the `.dev.vars` file beside the config — quoting no value. Run
// by scripts/test-node-counted.sh (every top-level test must run and pass)
// after `make build-worker-js`.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ROOT } from "./app.mjs";

const CLI = join(ROOT, "pkg", "dist", "cli.js");
const DIR = mkdtempSync(join(tmpdir(), "oncekey-cli-"));
after(() => rmSync(DIR, { recursive: true, force: true }));

/** Every secret below carries this mark: none may be printed. */
const MARK = "TOPSECRET";

/** `oncekey ...args` in `cwd`: its exit code and everything it printed. */
function oncekey(args, { cwd = DIR, input = "", env = {} } = {}) {
  const run = spawnSync("node", [CLI, ...args], {
    cwd,
    input,
    encoding: "utf8",
    env: { ...process.env, ONCEKEY_IDENTITY: "", ...env },
  });
  return { code: run.status, out: `${run.stdout}${run.stderr}`, stdout: run.stdout };
}

/** Asserts that `run` printed none of the secrets (nothing carrying MARK). */
function quotesNoSecret(run, what) {
  assert.ok(!run.out.includes(MARK), `${what}: a secret printed back:\n${run.out}`);
}

const SEAL_KEY = Buffer.alloc(32, 7).toString("base64");

/**
 * A project directory `name` holding the root config with an origin and a
 * Stripe webhook route whose secret is STRIPE_WEBHOOK_SECRET (`routes`
 * replaces the routes), and `files` beside it.
 */
function project(name, files = {}, routes = undefined, vars = "") {
  const dir = join(DIR, name);
  mkdirSync(dir, { recursive: true });
  const route = routes ?? [{ match: "POST /hooks/stripe", webhook: "stripe", secret: "STRIPE_WEBHOOK_SECRET" }];
  const config = readFileSync(join(ROOT, "wrangler.toml"), "utf8")
    .replace(/^ORIGIN_URL = ""$/m, 'ORIGIN_URL = "https://api.example.com"')
    .concat(`IDEMPOTENCY_ROUTES = '${JSON.stringify(route)}'\n${vars}`);
  writeFileSync(join(dir, "wrangler.toml"), config);
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

test("oncekey check never prints back an argument it refuses: a secret's value given as --secret, or anywhere else", () => {
  const dir = project("refusals");
  const stripe = `whsec_${MARK}c2VjcmV0LXZhbHVl`;
  const refused = [
    // The value beside the name, or in its place: named by --secret's place.
    [["--secret", `STRIPE_WEBHOOK_SECRET=${stripe}`], /--secret \(argument 3\) takes a secret's name/],
    [[`--secret=IDEMPOTENCY_ADMIN_TOKEN=tok_${MARK}`], /--secret \(argument 2\) takes a secret's name/],
    [["--secret", stripe], /--secret \(argument 3\) takes a secret's name/],
    [["--secret", `${MARK}+base64/value==`], /--secret \(argument 3\) takes a secret's name/],
    // Anything else refused is named by its place.
    [[`--token=${MARK}`], /argument 2 is not an option of check/],
    [["wrangler.toml", `${MARK}-second-file.toml`], /argument 3: check takes one wrangler.toml/],
    [[`${MARK}.toml`], /argument 2 \(the config\): no such file/],
    [["--env", `${MARK}_ENV`], /--env: the config has no such environment \(it has none\)/],
    [[`--proxy=${MARK}`], /--proxy \(argument 2\) takes no value/],
    [["--env", `--${MARK}`], /--env needs a value: argument 3 begins with -/],
  ];
  for (const [args, message] of refused) {
    const run = oncekey(["check", ...args], { cwd: dir });
    assert.equal(run.code, 2, `check ${args.length} argument(s):\n${run.out}`);
    assert.match(run.out, message);
    quotesNoSecret(run, message.source);
  }
  const command = oncekey([`${MARK}-command`]);
  assert.equal(command.code, 2);
  assert.match(command.out, /argument 1 is not a command: `check` or `record`/);
  quotesNoSecret(command, "an unknown command");
  // A config that is not TOML, a secret on the line it breaks at: where, not what.
  writeFileSync(join(dir, "broken.toml"), `name = "x"\n[vars]\nIDEMPOTENCY_ADMIN_TOKEN = ${MARK}_unquoted\n`);
  const broken = oncekey(["check", "broken.toml"], { cwd: dir });
  assert.equal(broken.code, 2, broken.out);
  assert.match(broken.out, /argument 2 \(the config\): not TOML \(line 3, column \d+\)/);
  quotesNoSecret(broken, "a config that is not TOML");
  // The name alone is what --secret takes: the same config is then sound.
  assert.equal(oncekey(["check", "--secret", "STRIPE_WEBHOOK_SECRET"], { cwd: dir }).code, 0);
});

test("oncekey record never prints back an argument it refuses: an Authorization header on the command line, a bad host, an unknown option", () => {
  const bearer = `Authorization: Bearer ${MARK}`;
  const refused = [
    // The identity pasted as an argument, where shell history keeps it.
    [["--host", "a.example", "--key", "k", bearer], /argument 6: record takes no argument but its options/],
    [[bearer, "--host", "a.example", "--key", "k"], /argument 2: record takes no argument but its options/],
    [["--host", "a.example", "--key", "k", "--", bearer], /argument 7: record takes no argument but its options/],
    [["--host", "a.example", "--key", "k", `--Authorization=Bearer ${MARK}`], /--authorization would put a secret/],
    [["--host", "a.example", "--key", "k", `--token=Bearer ${MARK}`], /argument 6 is not an option of record/],
    [["--host", "a.example", "--key", "k", `-${MARK}`], /argument 6 is not an option of record/],
    [["--host", bearer, "--key", "k"], /--host is not a host name/],
    [["--host", "a.example", "--key", bearer], /not a valid Idempotency-Key/],
    [
      ["--host", "a.example", "--key", "k", `--identity-stdin=${MARK}`],
      /--identity-stdin \(argument 6\) takes no value/,
    ],
    [["--host", "a.example", "--key", `-${MARK}`], /--key needs a value: argument 5 begins with -/],
  ];
  for (const [args, message] of refused) {
    const run = oncekey(["record", ...args]);
    assert.equal(run.code, 2, `record ${args.length} argument(s):\n${run.out}`);
    assert.match(run.out, message);
    quotesNoSecret(run, message.source);
  }
  // An identity line that is no header, on standard input: named by its line.
  const line = oncekey(["record", "--host", "a.example", "--key", "k", "--identity-stdin"], {
    input: `Authorization: Bearer a\nBearer ${MARK}\n`,
  });
  assert.equal(line.code, 2);
  assert.match(line.out, /identity line 2 is not "Name: value"/);
  quotesNoSecret(line, "an identity line");
  // The identity where it belongs: a record name.
  const named = oncekey(["record", "--host", "a.example", "--key", "k", "--identity-stdin"], { input: `${bearer}\n` });
  assert.equal(named.code, 0, named.out);
  assert.match(named.stdout, /^[0-9a-f]{64}\n$/);
});

test("oncekey check takes the names in .dev.vars beside the config as bound secrets, says so, and quotes no value", () => {
  const devVars = [
    "# wrangler dev's secrets",
    `STRIPE_WEBHOOK_SECRET="whsec_${MARK}c2VjcmV0"`,
    "",
    `export IDEMPOTENCY_ADMIN_TOKEN='${MARK}-admin-token'  # the admin paths`,
    `IDEMPOTENCY_SEAL_KEYS=${SEAL_KEY}`,
    `ORIGIN_URL=http://127.0.0.1:3000/${MARK}`,
  ].join("\n");
  const dir = project("dev-vars", { ".dev.vars": `${devVars}\n` });
  const sound = oncekey(["check"], { cwd: dir });
  assert.equal(sound.code, 0, sound.out);
  assert.match(sound.stdout, /wrangler\.toml: sound \(/);
  assert.match(
    sound.stdout,
    /secrets from \.dev\.vars: STRIPE_WEBHOOK_SECRET, IDEMPOTENCY_ADMIN_TOKEN, IDEMPOTENCY_SEAL_KEYS \(/,
  );
  assert.match(sound.stdout, /\.dev\.vars also sets ORIGIN_URL, which \[vars\] sets: the \[vars\] value/);
  quotesNoSecret(sound, "a sound check with .dev.vars");
  // The same config with no .dev.vars: the route's secret is not bound.
  const bare = project("no-dev-vars");
  const unbound = oncekey(["check"], { cwd: bare });
  assert.equal(unbound.code, 1, unbound.out);
  assert.match(unbound.out, /route 1 \(POST \/hooks\/stripe\): its webhook secret is not bound/);
  assert.doesNotMatch(unbound.out, /secrets from/);
  // Checked from elsewhere: the .dev.vars beside the config, not in the working directory.
  assert.equal(oncekey(["check", join(dir, "wrangler.toml")], { cwd: bare }).code, 0);
  // Its values are checked as wrangler dev would run them, never shown.
  const wrong = project("dev-vars-wrong", {
    ".dev.vars": `STRIPE_WEBHOOK_SECRET=sk_live_${MARK}\nIDEMPOTENCY_SEAL_KEYS="${SEAL_KEY},${MARK}"\n`,
  });
  const checked = oncekey(["check"], { cwd: wrong });
  assert.equal(checked.code, 1, checked.out);
  assert.match(checked.out, /secrets from \.dev\.vars: STRIPE_WEBHOOK_SECRET, IDEMPOTENCY_SEAL_KEYS/);
  assert.match(
    checked.out,
    /its webhook secret \(the one its `secret` names\): the secret is not a Stripe signing secret/,
  );
  assert.match(checked.out, /IDEMPOTENCY_SEAL_KEYS: key 2 /);
  quotesNoSecret(checked, "values of the wrong form in .dev.vars");
  // With --env NAME, wrangler dev reads .dev.vars.NAME first.
  const staged = project("dev-vars-env", { ".dev.vars.staging": "STRIPE_WEBHOOK_SECRET=whsec_c2VjcmV0\n" });
  writeFileSync(
    join(staged, "wrangler.toml"),
    readFileSync(join(staged, "wrangler.toml"), "utf8")
      .replace(/^\[vars\]$/m, "[env.staging.vars]")
      .concat(
        '\n[[env.staging.durable_objects.bindings]]\nname = "IDEMPOTENCY_DO"\nclass_name = "IdempotencyCoordinator"\n' +
          '\n[[env.staging.kv_namespaces]]\nbinding = "IDEMPOTENCY_KV"\n',
      ),
  );
  const staging = oncekey(["check", "--env", "staging"], { cwd: staged });
  assert.equal(staging.code, 0, staging.out);
  assert.match(staging.stdout, /secrets from \.dev\.vars\.staging: STRIPE_WEBHOOK_SECRET/);
});

test("a secret's value pasted in place of its name in a route's `secret` is named by the route's place, never shown", () => {
  const pasted = `whsec_${MARK}c2VjcmV0LXZhbHVl`;
  for (const secret of [pasted, `${MARK}c2VjcmV0+/==`, `${MARK} with spaces`]) {
    const dir = project("pasted", {}, [{ match: "POST /hooks/stripe", webhook: "stripe", secret }]);
    const run = oncekey(["check"], { cwd: dir });
    assert.equal(run.code, 1, run.out);
    assert.match(
      run.out,
      /IDEMPOTENCY_ROUTES: route 1 \(POST \/hooks\/stripe\): `secret` must be the name of a wrangler secret \(letters, digits, `_`\), not its value/,
    );
    quotesNoSecret(run, "a value in a route's `secret`");
  }
});

test("a webhook secret in [vars] is a problem, kv mode with webhooks a warning; neither shows a value", () => {
  // The eighth red team: `secret` naming a [vars] entry passed as sound, its
  // signing key in the committed config; kv mode ran 8 copies of one delivery 8 times.
  const inVars = project("secret-in-vars", {}, undefined, `STRIPE_WEBHOOK_SECRET = "whsec_${MARK}c2VjcmV0"\n`);
  const run = oncekey(["check"], { cwd: inVars });
  assert.equal(run.code, 1, run.out);
  assert.match(run.out, /route 1: its secret STRIPE_WEBHOOK_SECRET is a \[vars\] entry/);
  quotesNoSecret(run, "a webhook secret in [vars]");
  const kv = project("kv-webhooks", { ".dev.vars": `STRIPE_WEBHOOK_SECRET=whsec_${MARK}c2VjcmV0\n` });
  const config = join(kv, "wrangler.toml");
  writeFileSync(
    config,
    readFileSync(config, "utf8").replace(/^IDEMPOTENCY_CONSISTENCY = .*$/m, 'IDEMPOTENCY_CONSISTENCY = "kv"'),
  );
  const warned = oncekey(["check"], { cwd: kv });
  assert.equal(warned.code, 0, warned.out);
  assert.match(
    warned.out,
    /warning: IDEMPOTENCY_CONSISTENCY=kv keeps no reservation: concurrent copies of one webhook delivery/,
  );
  quotesNoSecret(warned, "kv mode with webhooks");
});
