// A user's TypeScript worker in a fresh project (tests/worker-js/app): the
// packed package installed from its tarball, bundled by `wrangler deploy
// --dry-run`, run in workerd through Miniflare with local KV and Durable
// Objects.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const BIN = join(ROOT, "node_modules", ".bin");
const WORK = join(ROOT, "build", "worker-js");
/** The copy of the app the tests build and run. */
export const APP = join(WORK, "app");
export const BASE = "http://shop.test";

/**
 * The app's workers: its config, where wrangler writes its bundle, and
 * what Miniflare binds. `index` is the worker as SPEC §11 shows it; `variants` the
 * same shop behind other options (bindings LOCKS and ANSWERS, paths and
 * no in-flight wait from its [vars]); `hono` the shop as a Hono app.
 */
const DEFAULT_BINDINGS = { kv: "IDEMPOTENCY_KV", coordinator: "IDEMPOTENCY_DO", vars: {} };
export const ENTRIES = {
  index: { config: "wrangler.toml", dir: "dist", ...DEFAULT_BINDINGS },
  variants: {
    config: "wrangler.variants.toml",
    dir: "dist-variants",
    kv: "ANSWERS",
    coordinator: "LOCKS",
    vars: { IDEMPOTENCY_PATHS: "/vars/*", IDEMPOTENCY_IN_FLIGHT_WAIT_MS: "0" },
  },
  hono: { config: "wrangler.hono.toml", dir: "dist-hono", ...DEFAULT_BINDINGS },
};

const quietEnv = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_SEND_ERROR_REPORTS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
};

function run(command, args, cwd) {
  return execFileSync(command, args, { cwd, env: quietEnv, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/**
 * Packs pkg/ (`npm pack`), copies the app to build/worker-js/app, installs
 * the tarball there (offline: it has no dependencies), generates the
 * runtime types (`wrangler types`) and bundles both entries with wrangler:
 * one bundle per entry of ENTRIES.
 */
export function buildApp() {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const tarball = run("npm", ["pack", "--silent", "--pack-destination", WORK], join(ROOT, "pkg"))
    .trim()
    .split("\n")
    .pop();
  cpSync(join(ROOT, "tests", "worker-js", "app"), APP, { recursive: true });
  // The app's own dependency (hono) comes from the registry, or npm's cache.
  run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--silent", join(WORK, tarball)], APP);
  run(join(BIN, "wrangler"), ["types"], APP);
  for (const [entry, { config, dir }] of Object.entries(ENTRIES)) {
    run(join(BIN, "wrangler"), ["deploy", "--dry-run", "--config", config, "--outdir", dir], APP);
    if (!existsSync(join(APP, dir, `${entry}.js`))) throw new Error(`wrangler did not write ${dir}/${entry}.js`);
  }
  return tarball;
}

const COMPATIBILITY_DATE = /^compatibility_date = "([^"]+)"/m.exec(
  readFileSync(join(ROOT, "tests", "worker-js", "app", "wrangler.toml"), "utf8"),
)[1];

/** How the metrics double marks a data point on stdout. */
export const DATA_POINT_MARK = "oncekey-test-data-point ";

// In place of a Workers Analytics Engine dataset bound as IDEMPOTENCY_METRICS:
// Miniflare's own (`analyticsEngineDatasets`) drops every point and cannot
// read them back, so this test double (a wrapped binding, as Miniflare's
// is) prints each point on stdout, into `logs`.
const METRICS_DOUBLE = `
export default function () {
  return {
    writeDataPoint(point) {
      console.log("${DATA_POINT_MARK}" + JSON.stringify(point));
    },
  };
}
`;

/**
 * Runs one of the app's bundles (an entry of ENTRIES) in workerd. `logs`
 * collects the runtime's stdout and stderr lines; `vars` are added to the
 * entry's (secrets arrive the same way); `metrics` binds the test double
 * above as IDEMPOTENCY_METRICS.
 */
export async function startApp(entry = "index", { logs, vars: extraVars = {}, metrics = false } = {}) {
  const { dir, kv, coordinator, vars } = ENTRIES[entry];
  const root = join(APP, dir);
  const partial = { stdout: "", stderr: "" };
  const mf = new Miniflare({
    workers: [
      {
        name: entry,
        modules: true,
        modulesRoot: root,
        scriptPath: join(root, `${entry}.js`),
        modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
        compatibilityDate: COMPATIBILITY_DATE,
        kvNamespaces: [kv],
        durableObjects: { [coordinator]: { className: "IdempotencyCoordinator", useSQLite: true } },
        bindings: { ...vars, ...extraVars },
        ...(metrics ? { wrappedBindings: { IDEMPOTENCY_METRICS: "metrics-double" } } : {}),
      },
      ...(metrics ? [{ name: "metrics-double", modules: true, script: METRICS_DOUBLE }] : []),
    ],
    ...(logs
      ? {
          handleRuntimeStdio(stdout, stderr) {
            for (const [name, stream] of [
              ["stdout", stdout],
              ["stderr", stderr],
            ]) {
              stream.setEncoding("utf8");
              stream.on("data", (text) => {
                // Whole lines only: a chunk may end mid-line.
                const lines = (partial[name] + text).split("\n");
                partial[name] = lines.pop();
                logs.push(...lines.filter(Boolean));
              });
            }
          },
        }
      : {}),
  });
  const url = await mf.ready;
  return {
    mf,
    url,
    fetch: (path, init) => mf.dispatchFetch(BASE + path, init),
    /** Executions of the handler that created an order for `item`. */
    async orders(item, prefix = "") {
      const res = await mf.dispatchFetch(`${BASE}${prefix}/orders?item=${encodeURIComponent(item)}`);
      return res.json();
    },
    dispose: () => mf.dispose(),
  };
}

/** A keyed order: POST /orders with `{"item": item}`. */
export function order(item, key, { headers = {}, query = "", prefix = "", body } = {}) {
  return [
    `${prefix}/orders${query}`,
    {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(key === undefined ? {} : { "idempotency-key": key }),
        ...headers,
      },
      body: body ?? JSON.stringify({ item }),
    },
  ];
}
