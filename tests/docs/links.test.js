// Every relative link and anchor in the project's Markdown resolves: a
// link to a file names one that exists, and `#anchor` names a heading of
// the page it points to (GitHub's heading ids). Code blocks and inline code
// are not links, but a repository path named in inline code must exist
// too: pages drift when code moves.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { test } from "node:test";
import { pages, ROOT } from "../support/docs.mjs";

/** The text outside fenced code blocks. */
function unfenced(markdown) {
  return markdown.replace(/^```[\s\S]*?^```/gm, "");
}

/** The text outside fenced code blocks and inline code. */
function prose(markdown) {
  return unfenced(markdown).replace(/`[^`\n]*`/g, "");
}

/** GitHub's id for each heading of `markdown`, duplicates numbered. */
function headingIds(markdown) {
  const ids = new Set();
  const seen = new Map();
  // Inline code keeps its text in the id (its backticks go, as punctuation).
  for (const [, text] of unfenced(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  return ids;
}

/** The relative links of `markdown`: `[text](target)`, not http(s) or mailto. */
function links(markdown) {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1])
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

test("every relative link and anchor in the Markdown pages resolves", () => {
  const all = pages().map((path) => join(ROOT, path));
  assert.ok(all.length >= 10, `the READMEs and the docs/ pages: ${all}`);
  const broken = [];
  for (const page of all) {
    const markdown = readFileSync(page, "utf8");
    for (const target of links(markdown)) {
      const [path, anchor] = target.split("#");
      const file = path === "" ? page : join(dirname(page), decodeURI(path));
      const where = `${relative(ROOT, page)}: ${target}`;
      if (!existsSync(file)) {
        broken.push(`${where}: no such file`);
      } else if (anchor !== undefined && file.endsWith(".md") && !headingIds(readFileSync(file, "utf8")).has(anchor)) {
        broken.push(`${where}: no such heading`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test("every repository path the Markdown pages name in code (`src/…`, `tests/…`, `workers/…`) exists", () => {
  // What git tracks, files and the directories that hold them: a path a
  // page names must be in every clone, not only in a built one.
  const tracked = new Set(execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).trim().split("\n"));
  for (const file of [...tracked]) for (let d = dirname(file); d !== "."; d = dirname(d)) tracked.add(d);
  // Build outputs the pages point at by name.
  const built = /^(pkg\/dist|www\/vendor|build|target)(\/|$)/;
  const top = /^(src|tests|workers|pkg|bench|benches|scripts|docs|www|fuzz|examples|\.github|\.ci|\.cargo)\//;
  const missing = [];
  let named = 0;
  for (const page of pages()) {
    for (const [, code] of unfenced(readFileSync(join(ROOT, page), "utf8")).matchAll(/`([^`\n]+)`/g)) {
      const path = code.replace(/^\.\//, "");
      // Only bare paths: not globs, placeholders, commands or anchors.
      if (!top.test(path) || /[*<>…{}\s]/.test(path)) continue;
      const file = path.replace(/[#:].*$/, "").replace(/\/$/, "");
      if (built.test(file)) continue;
      named++;
      if (!tracked.has(file)) missing.push(`${page}: ${code}`);
    }
  }
  assert.ok(named >= 50, `the pages name ${named} repository paths`);
  assert.deepEqual(missing, [], "paths the pages name that the repository does not hold");
});

test("local secrets files are git-ignored", () => {
  // docs/operations.md puts the admin token in .dev.vars for `wrangler dev`.
  for (const file of [".dev.vars", "workers/demo/.dev.vars", ".dev.vars.staging"]) {
    const ignored = spawnSync("git", ["check-ignore", "-q", file], { cwd: ROOT });
    assert.equal(ignored.status, 0, `${file} is not ignored`);
  }
});
