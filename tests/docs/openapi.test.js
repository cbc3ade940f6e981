// docs/openapi/oncekey.yaml is what an API behind oncekey refers to from
// its own OpenAPI description. It must be valid OpenAPI 3.1, and it must say
// what the core does: every problem the core answers (printed by
// `cargo run --example problems`) matches its schema and response there,
// headers included, and the yaml describes no problem the core does not
// answer. The key's schema accepts what the core's key parser accepts
// (`cargo run --example keys`). docs/openapi/example.yaml, which refers to
// it, must be valid too, and docs/http.md's table of the layer's answers
// must list the core's problems.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse } from "yaml";

const ROOT = join(dirname(new URL(import.meta.url).pathname), "..", "..");
const SPEC_PATH = join(ROOT, "docs/openapi/oncekey.yaml");
const EXAMPLE_PATH = join(ROOT, "docs/openapi/example.yaml");
const spec = parse(readFileSync(SPEC_PATH, "utf8"));
const example = parse(readFileSync(EXAMPLE_PATH, "utf8"));
const { schemas, responses, headers } = spec.components;

/** Schemas in oncekey.yaml that describe no single problem. */
const SHARED_SCHEMAS = ["IdempotencyKey", "Problem", "ProblemError"];

/** What one of the crate's examples prints for `input`. */
function cargoExample(name, input = "") {
  return execFileSync("cargo", ["run", "--quiet", "--example", name], {
    cwd: ROOT,
    input,
    encoding: "utf8",
    maxBuffer: 16 << 20,
  });
}

/** Every problem the core answers, as its exchange sends it: `{status, headers, body}`. */
function coreProblems() {
  const lines = cargoExample("problems").trim().split("\n");
  return lines.map((line) => JSON.parse(line));
}

/** A problem's code, the last part of its `type` URN. */
function codeOf(body) {
  return body.type.replace(/^urn:oncekey:problem:/, "");
}

/** `key-in-flight` → `KeyInFlight`: a problem's name in oncekey.yaml. */
function nameOf(code) {
  return code.replace(/(^|-)([a-z])/g, (_, _dash, letter) => letter.toUpperCase());
}

/**
 * A JSON Schema 2020-12 validator for the schema at `pointer` in
 * oncekey.yaml, its `$ref`s resolved in the document. Strict: an unknown
 * keyword, or one that does not apply to the schema's type, fails to compile.
 */
const schemaAt = (() => {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  // The OpenAPI document around the schemas.
  ajv.addVocabulary(["openapi", "info", "servers", "components"]);
  const id = pathToFileURL(SPEC_PATH).href;
  ajv.addSchema(spec, id);
  return (pointer) => {
    const validate = ajv.getSchema(`${id}#${pointer}`);
    assert.ok(validate, `oncekey.yaml has no schema at ${pointer}`);
    return validate;
  };
})();

/** Asserts `value` is valid by `validate`, naming what it is. */
function assertValid(validate, value, what) {
  assert.ok(validate(value), `${what}: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(value)}`);
}

test("oncekey.yaml is a valid OpenAPI 3.1 description", async () => {
  const validator = new Validator();
  const result = await validator.validate(SPEC_PATH);
  assert.ok(result.valid, JSON.stringify(result.errors, null, 1));
  assert.equal(validator.version, "3.1");
});

test("example.yaml, which refers to oncekey.yaml, is a valid OpenAPI 3.1 description", async () => {
  const validator = new Validator();
  // Its `$ref`s name the file as a sibling: "oncekey.yaml#/components/…".
  await validator.addSpecRef(SPEC_PATH, "oncekey.yaml");
  const result = await validator.validate(EXAMPLE_PATH);
  assert.ok(result.valid, JSON.stringify(result.errors, null, 1));
  assert.equal(validator.version, "3.1");
});

test("every schema in oncekey.yaml compiles as strict JSON Schema 2020-12, and its examples fit it", () => {
  const pointers = [
    ...Object.keys(schemas).map((name) => `/components/schemas/${name}`),
    ...Object.keys(spec.components.parameters).map((name) => `/components/parameters/${name}/schema`),
    ...Object.keys(headers).map((name) => `/components/headers/${name}/schema`),
  ];
  for (const pointer of pointers) {
    const validate = schemaAt(pointer);
    for (const value of validate.schema.examples ?? []) assertValid(validate, value, `an example of ${pointer}`);
  }
  for (const [name, { examples = {} }] of Object.entries(spec.components.parameters)) {
    const validate = schemaAt(`/components/parameters/${name}/schema`);
    for (const { value } of Object.values(examples)) assertValid(validate, value, `an example of parameter ${name}`);
  }
});

test("every problem the core answers fits its schema and response in oncekey.yaml, status and headers", () => {
  const problems = coreProblems();
  assert.ok(problems.length >= 16, `only ${problems.length} problems printed`);
  for (const { status, headers: sent, body } of problems) {
    const name = nameOf(codeOf(body));
    assertValid(schemaAt(`/components/schemas/${name}Problem`), body, `${name}Problem`);
    assert.equal(status, body.status, `${name}: the answer's status is the body's`);

    const response = responses[name];
    assert.ok(response, `oncekey.yaml has no response ${name}`);
    const content = response.content?.["application/problem+json"];
    assert.equal(content?.schema?.$ref, `#/components/schemas/${name}Problem`, `response ${name}'s body`);
    assert.equal(sent["content-type"], "application/problem+json", name);

    // Each header the core sends besides the media type is documented on
    // the response, by a reference to its component, and its value fits
    // that component's schema; and no other header is documented.
    const documented = Object.keys(response.headers ?? {});
    const sentNames = Object.keys(sent).filter((h) => h !== "content-type");
    assert.deepEqual(
      documented.map((h) => h.toLowerCase()).sort(),
      sentNames.sort(),
      `response ${name}: headers documented vs sent by the core`,
    );
    assert.equal(
      "Retry-After" in (response.headers ?? {}),
      "retry-after" in sent,
      `response ${name} documents Retry-After exactly when the core sends it`,
    );
    for (const header of documented) {
      assert.equal(response.headers[header].$ref, `#/components/headers/${header}`, `${name}: ${header}`);
      const validate = schemaAt(`/components/headers/${header}/schema`);
      const value = sent[header.toLowerCase()];
      assertValid(validate, validate.schema.type === "integer" ? Number(value) : value, `${name}: ${header}`);
    }
  }
});

test("oncekey.yaml describes no problem the core does not answer", () => {
  const names = [...new Set(coreProblems().map(({ body }) => nameOf(codeOf(body))))].sort();
  const described = Object.keys(schemas).filter((s) => !SHARED_SCHEMAS.includes(s));
  assert.deepEqual(described.sort(), names.map((n) => `${n}Problem`).sort(), "problem schemas vs the core's");
  assert.deepEqual(Object.keys(responses).sort(), names, "responses vs the core's problems");
  for (const name of names) {
    const pinned = schemas[`${name}Problem`].properties;
    assert.equal(nameOf(codeOf({ type: pinned.type.const })), name, `${name}Problem pins its own type`);
  }
});

test("docs/http.md's table of the layer's answers is the core's: each code once, its status, Retry-After where the core sends it", () => {
  const page = readFileSync(join(ROOT, "docs/http.md"), "utf8");
  const rows = [...page.matchAll(/^\| `([a-z-]+)` \| (\d{3}) \|.*\|([^|]*)\|$/gm)].map(([, code, status, retry]) => ({
    code,
    status: Number(status),
    retryAfter: retry.trim() !== "",
  }));
  const core = new Map();
  for (const { status, headers: sent, body } of coreProblems())
    core.set(codeOf(body), { code: codeOf(body), status, retryAfter: "retry-after" in sent });
  const byCode = (a, b) => a.code.localeCompare(b.code);
  assert.deepEqual(rows.sort(byCode), [...core.values()].sort(byCode), "docs/http.md's table vs the core's problems");
});

test("the Idempotency-Key schema accepts exactly the values the core takes for a key", () => {
  const ascii = Array.from({ length: 128 }, (_, i) => String.fromCharCode(i));
  const candidates = [
    ...ascii.flatMap((c) => [c, `k${c}y`, `"${c}"`, `"k${c}y"`, `"\\${c}"`]),
    ...[254, 255, 256].flatMap((n) => ["a".repeat(n), `"${"a".repeat(n)}"`, `"${'\\"'.repeat(n)}"`]),
    ...["", '""', '"abc', 'abc"', '"a"b', '"a";p=1', "a, b", '"a", "b"', '"a,b"', "é", '"é"', "ключ"],
    "0190b1f6-6f1e-7c4a-9a53-1f4e9c2d8b7e",
    '"0190b1f6-6f1e-7c4a-9a53-1f4e9c2d8b7e"',
  ]
    // A field value never starts or ends with spaces or tabs: HTTP strips them (RFC 9110 §5.5).
    .filter((value) => !/^[ \t]|[ \t]$/.test(value));
  const verdicts = cargoExample("keys", candidates.map((c) => `${JSON.stringify(c)}\n`).join(""))
    .trim()
    .split("\n");
  assert.equal(verdicts.length, candidates.length);
  const validate = schemaAt("/components/schemas/IdempotencyKey");
  const disagreements = candidates.filter((value, i) => validate(value) !== (verdicts[i] === "true"));
  assert.deepEqual(disagreements, [], "values the schema and the core's key parser judge differently");
  assert.ok(verdicts.includes("true") && verdicts.includes("false"));
});

test("example.yaml puts each of oncekey's problems under the status it carries", () => {
  const statusOf = (ref) => {
    const [, kind, name] = ref.match(/^oncekey\.yaml#\/components\/(schemas|responses)\/(\w+)$/) ?? [];
    if (!kind) return undefined;
    const schema = kind === "schemas" ? name : responses[name].content["application/problem+json"].schema.$ref;
    return schemas[schema.split("/").pop()].properties.status?.const;
  };
  const refsIn = (node) =>
    typeof node !== "object" || node === null
      ? []
      : Object.entries(node).flatMap(([key, value]) => (key === "$ref" ? [value] : refsIn(value)));
  let checked = 0;
  for (const operation of Object.values(example.paths).flatMap(Object.values)) {
    for (const [status, response] of Object.entries(operation.responses)) {
      for (const ref of refsIn(response)) {
        const carried = statusOf(ref);
        if (carried === undefined) continue;
        assert.equal(carried, Number(status), `${ref} under ${status}`);
        checked++;
      }
    }
  }
  assert.ok(checked >= 10, `only ${checked} references to oncekey's problems checked`);
});

test("both descriptions pass `redocly lint`: Redocly's recommended rules, as docs/openapi/redocly.yaml applies them", () => {
  const run = spawnSync(join(ROOT, "node_modules", ".bin", "redocly"), ["lint"], {
    cwd: join(ROOT, "docs", "openapi"),
    // No telemetry, no update check: nothing leaves the machine.
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
    encoding: "utf8",
  });
  const output = run.stdout + run.stderr;
  assert.equal(run.status, 0, output);
  assert.match(output, /oncekey\.yaml: validated/);
  assert.match(output, /example\.yaml: validated/);
  assert.match(output, /Your API descriptions are valid/);
  // Problems are counted ("You have 2 warnings"); the Node.js version notice is not one.
  assert.doesNotMatch(output, /You have \d+ warnings?|Validation failed/, output);
});
