// The README is the front door: each path it shows is the first step of a
// page under docs/, and the tests run the pages' snippets as written
// (tests/deploy, tests/worker-js). So every code block of the README must
// appear, byte for byte, on the page it leads to — a README snippet edited
// alone would be one no test runs.
import assert from "node:assert/strict";
import { test } from "node:test";
import { blocksOf, page, pages } from "../support/docs.mjs";

/** Every fenced block of `markdown`, with its language. */
function fenced(markdown) {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map(([, lang, text]) => ({ lang, text }));
}

test("every code block of the README is on a docs/ page, byte for byte", () => {
  const readme = fenced(page("README.md")).filter(({ text }) => !text.startsWith("make dev "));
  assert.ok(readme.length >= 5, `the README shows each path's first step: ${readme.length} blocks`);
  const docs = pages().filter((path) => path.startsWith("docs/"));
  const missing = readme
    .filter(({ lang, text }) => !docs.some((path) => blocksOf(page(path), lang).includes(text)))
    .map(({ lang, text }) => `\`\`\`${lang}\n${text}`);
  assert.deepEqual(missing, [], "README blocks that no docs/ page holds");
});

test("every docs/ page leads somewhere: it is linked from the README", () => {
  const readme = page("README.md");
  const unlinked = pages()
    .filter((path) => path.startsWith("docs/"))
    .filter((path) => !readme.includes(`](${path})`) && !readme.includes(`](${path}#`));
  assert.deepEqual(unlinked, [], "docs/ pages the README's first screen cannot reach");
});
