// The release's consistency checks (docs/releasing.md), on the files alone:
// scripts/release.sh runs them before every dry run and publish, and
// `make test-release` runs them with --self-test.
//
//   node scripts/release-check.mjs [--root DIR] [--release] [--dist]
//       every manifest and lockfile carries one version; CHANGELOG.md keeps
//       Keep a Changelog's format and agrees with that version; the npm
//       package's `files` hold every file its `exports`, `main`, `module`,
//       `types` and `bin` name. --release: the version has its dated
//       CHANGELOG section and nothing is left under Unreleased (what a
//       publish needs). --dist: every `files` entry is built in pkg/.
//   node scripts/release-check.mjs --npm-json FILE --npm-log FILE [--root DIR]
//       what `npm publish --dry-run --json` printed (FILE) and logged: the
//       tarball holds exactly `files` (the license texts among them, copied
//       into pkg/ by `make pkg`), package.json and README.md, and npm
//       corrected nothing in package.json on the way.
//   node scripts/release-check.mjs --prepare VERSION --date YYYY-MM-DD [--root DIR]
//       writes VERSION into every manifest and moves CHANGELOG.md's
//       Unreleased section under `## [VERSION] - DATE` (the lockfiles are
//       release.sh's to refresh, with cargo).
//   node scripts/release-check.mjs --self-test
//       breaks copies of the files one way at a time and fails unless each
//       check catches its break and the unbroken copy passes.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";

const REPO = join(dirname(new URL(import.meta.url).pathname), "..");
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/;
// Keep a Changelog 1.1.0's types of changes.
const GROUPS = ["Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"];
// The lockfile of the crate outside the workspace that depends on the library
// (scripts/test-crate.sh); it records the library's version too.
const CONSUMER_LOCK = "tests/consumer/Cargo.lock";

const read = (root, path) => readFileSync(join(root, path), "utf8");

/** The `[package]` table of a Cargo manifest, as text. */
function packageTable(toml) {
  const start = toml.search(/^\[package\]\s*$/m);
  if (start < 0) return undefined;
  const rest = toml.slice(start).split("\n").slice(1);
  const end = rest.findIndex((line) => /^\s*\[/.test(line));
  return rest.slice(0, end < 0 ? undefined : end).join("\n");
}

/** A string field of a manifest's `[package]` table. */
function packageField(toml, field) {
  return packageTable(toml)?.match(new RegExp(`^${field}\\s*=\\s*"([^"]*)"`, "m"))?.[1];
}

/** The workspace's member directories, from the root manifest. */
function members(root) {
  const list = read(root, "Cargo.toml").match(/^members\s*=\s*\[([^\]]*)\]/m)?.[1] ?? "";
  return [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
}

/** The version each named package has in a Cargo.lock. */
function lockedVersions(lock) {
  const found = new Map();
  for (const [, name, version] of lock.matchAll(/^\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"/gm)) {
    found.set(name, version);
  }
  return found;
}

/** Orders two versions as SemVer 2.0.0 does (build metadata aside). */
function compareVersions(a, b) {
  const [pa, pb] = [a.match(SEMVER), b.match(SEMVER)];
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return Math.sign(d);
  }
  if (pa[4] === pb[4]) return 0;
  if (pa[4] === undefined) return 1;
  if (pb[4] === undefined) return -1;
  const [xa, xb] = [pa[4].split("."), pb[4].split(".")];
  for (let i = 0; i < Math.max(xa.length, xb.length); i++) {
    if (xa[i] === undefined) return -1;
    if (xb[i] === undefined) return 1;
    const [na, nb] = [/^\d+$/.test(xa[i]), /^\d+$/.test(xb[i])];
    const d = na && nb ? Number(xa[i]) - Number(xb[i]) : na ? -1 : nb ? 1 : xa[i] < xb[i] ? -1 : xa[i] > xb[i] ? 1 : 0;
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/**
 * Every version the release carries, by where it is written: the members'
 * manifests, the npm package, the workspace's lockfile and the consumer's.
 */
function versionsOf(root) {
  const where = new Map();
  const lock = lockedVersions(read(root, "Cargo.lock"));
  for (const dir of members(root)) {
    const path = dir === "." ? "Cargo.toml" : `${dir}/Cargo.toml`;
    const toml = read(root, path);
    const name = packageField(toml, "name");
    where.set(`${path} (${name})`, packageField(toml, "version"));
    where.set(`Cargo.lock (${name})`, lock.get(name));
  }
  where.set("pkg/package.json", JSON.parse(read(root, "pkg/package.json")).version);
  where.set(`${CONSUMER_LOCK} (oncekey)`, lockedVersions(read(root, CONSUMER_LOCK)).get("oncekey"));
  return where;
}

/** The problems with the versions; `version` is the library crate's. */
function checkVersions(root) {
  const problems = [];
  const where = versionsOf(root);
  const version = where.get("Cargo.toml (oncekey)");
  if (version === undefined || !SEMVER.test(version)) {
    problems.push(`Cargo.toml: the oncekey crate's version ${JSON.stringify(version)} is not a SemVer version`);
    return { problems, version };
  }
  for (const [place, found] of where) {
    if (found !== version) {
      problems.push(`${place} carries version ${found ?? "(none)"}, not ${version} as Cargo.toml's oncekey crate does`);
    }
  }
  return { problems, version };
}

/**
 * CHANGELOG.md, read: its version sections in order, each with its heading
 * line, version, date and body lines.
 */
function parseChangelog(text) {
  const sections = [];
  const preamble = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line.startsWith("## ")) {
      sections.push({ heading: line, line: i + 1, body: [] });
    } else if (sections.length > 0) {
      sections.at(-1).body.push({ text: line, line: i + 1 });
    } else {
      preamble.push(line);
    }
  }
  return { preamble, sections };
}

/** Whether `date` is a real calendar date written YYYY-MM-DD. */
function isDate(date) {
  const parsed = new Date(`${date}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === date;
}

/** The problems with CHANGELOG.md, against the manifests' `version`. */
function checkChangelog(root, version, release) {
  const problems = [];
  if (!existsSync(join(root, "CHANGELOG.md"))) return ["CHANGELOG.md: missing"];
  const text = read(root, "CHANGELOG.md");
  const at = (line, message) => problems.push(`CHANGELOG.md:${line}: ${message}`);
  const { preamble, sections } = parseChangelog(text);
  if (preamble[0] !== "# Changelog") at(1, 'the first line must be "# Changelog"');
  for (const link of ["https://keepachangelog.com/en/1.1.0/", "https://semver.org/spec/v2.0.0.html"]) {
    if (!preamble.join("\n").includes(link)) at(1, `the introduction must link ${link}`);
  }
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const path = target.split("#")[0];
    if (path && !/^[a-z][a-z0-9+.-]*:/i.test(target) && !existsSync(join(root, path))) {
      problems.push(`CHANGELOG.md: the link ${target} names no file`);
    }
  }
  if (sections[0]?.heading !== "## [Unreleased]") {
    at(sections[0]?.line ?? 1, 'the first version heading must be "## [Unreleased]"');
  }
  const dated = [];
  for (const [i, section] of sections.entries()) {
    if (i > 0 || section.heading !== "## [Unreleased]") {
      const m = section.heading.match(/^## \[([^\]]+)\] - (\d{4}-\d{2}-\d{2})( \[YANKED\])?$/);
      if (!m || !SEMVER.test(m[1]) || !isDate(m[2])) {
        at(section.line, `"${section.heading}" is not "## [Unreleased]" first or "## [X.Y.Z] - YYYY-MM-DD"`);
        continue;
      }
      const previous = dated.at(-1);
      if (previous && compareVersions(previous.version, m[1]) <= 0) {
        at(section.line, `${m[1]} comes after ${previous.version}: newest first, each version once`);
      }
      if (previous && previous.date < m[2]) at(section.line, `${m[1]} is dated after the newer ${previous.version}`);
      dated.push({ version: m[1], date: m[2], section });
    }
    const seen = new Set();
    for (const { text: line, line: n } of section.body) {
      if (/^\[[^\]]+\]:\s/.test(line)) break; // the link references close the file
      if (!line.startsWith("### ")) continue;
      const group = line.slice(4).trim();
      if (!GROUPS.includes(group)) at(n, `"${line}": Keep a Changelog's groups are ${GROUPS.join(", ")}`);
      else if (seen.has(group)) at(n, `"${line}" appears twice in one version`);
      seen.add(group);
    }
  }
  const references = new Map([...text.matchAll(/^\[([^\]]+)\]:\s*(\S+)\s*$/gm)].map((m) => [m[1], m[2]]));
  const named = ["Unreleased", ...dated.map((d) => d.version)];
  if (named.some((n) => references.has(n))) {
    for (const n of named) if (!references.has(n)) problems.push(`CHANGELOG.md: no link reference "[${n}]: …"`);
  }
  if (version === undefined) return problems;
  const newest = dated[0];
  if (dated.some((d) => d.version === version) && newest.version !== version) {
    problems.push(`CHANGELOG.md: the manifests carry ${version}, but ${newest.version} is newer`);
  }
  if (newest && compareVersions(version, newest.version) < 0) {
    problems.push(`CHANGELOG.md: the manifests carry ${version}, older than the newest release, ${newest.version}`);
  }
  if (release) {
    if (newest?.version !== version) {
      problems.push(
        `CHANGELOG.md: no "## [${version}] - YYYY-MM-DD" section on top to publish (scripts/release.sh prepare)`,
      );
    } else if (!newest.section.body.some(({ text: line }) => /^\s*[-*] \S/.test(line))) {
      at(newest.section.line, `the ${version} section lists no change`);
    }
    const unreleased = sections[0]?.heading === "## [Unreleased]" ? sections[0] : undefined;
    const left = unreleased?.body.find(({ text: line }) => line.trim() !== "" && !/^\[[^\]]+\]:\s/.test(line));
    if (left) at(left.line, "Unreleased must be empty when a version is published: its changes belong to that version");
  }
  return problems;
}

/** Every file path a package.json field names, with where it is named. */
function namedFiles(manifest) {
  const named = [];
  const walk = (value, where) => {
    if (typeof value === "string") named.push([value, where]);
    else if (value && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) walk(v, `${where}[${JSON.stringify(k)}]`);
    }
  };
  walk(manifest.exports, "exports");
  for (const field of ["main", "module", "types", "bin"]) walk(manifest[field], field);
  return named;
}

/** Whether the package's `files` list holds `path` (an entry or a folder of one). */
function filesHold(files, path) {
  return files.some((entry) => {
    const e = entry.replace(/^\.\//, "").replace(/\/$/, "");
    if (!/[*?]/.test(e)) return path === e || path.startsWith(`${e}/`);
    const re = e
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*\*/g, "\0")
      .replace(/\*/g, "[^/]*");
    return new RegExp(`^${re.replace(/\0/g, ".*").replace(/\?/g, "[^/]")}(/.*)?$`).test(path);
  });
}

/** The problems with the npm package's manifest (and, with `dist`, its build). */
function checkPackage(root, dist) {
  const problems = [];
  const manifest = JSON.parse(read(root, "pkg/package.json"));
  const files = manifest.files ?? [];
  if (manifest.name !== "oncekey") problems.push(`pkg/package.json: name is ${manifest.name}, not oncekey`);
  if (files.length === 0) problems.push("pkg/package.json: no `files` list (npm would pack the sources and tests)");
  for (const [target, where] of namedFiles(manifest)) {
    const path = target.replace(/^\.\//, "");
    if (path === "package.json") continue;
    if (!filesHold(files, path))
      problems.push(`pkg/package.json: ${where} names ${target}, which \`files\` does not hold`);
    if (where.startsWith("bin") && target !== path) {
      problems.push(`pkg/package.json: ${where} is ${target}; npm publish rewrites it to ${path} (write it so)`);
    }
  }
  const crateLicense = packageField(read(root, "Cargo.toml"), "license");
  if (manifest.license !== crateLicense) {
    problems.push(`pkg/package.json: license ${manifest.license}, but the crate's is ${crateLicense}`);
  }
  if (dist) {
    for (const entry of files) {
      if (!/[*?]/.test(entry) && !existsSync(join(root, "pkg", entry))) {
        problems.push(`pkg/${entry}: in \`files\` but not built (make pkg)`);
      }
    }
  }
  return problems;
}

/** The problems with what `npm publish --dry-run --json` printed and logged. */
function checkNpmDryRun(root, json, log) {
  const problems = [];
  const manifest = JSON.parse(read(root, "pkg/package.json"));
  let report;
  try {
    const parsed = JSON.parse(json);
    report = parsed.files ? parsed : parsed[manifest.name]; // npm 10 prints the report, npm 11 keys it by name
  } catch (error) {
    return [`npm publish --dry-run --json printed no JSON report: ${error.message}`];
  }
  if (!report?.files) return ["npm publish --dry-run --json: no file list in its report"];
  if (report.name !== manifest.name || report.version !== manifest.version) {
    problems.push(`npm would publish ${report.name}@${report.version}, not ${manifest.name}@${manifest.version}`);
  }
  const packed = report.files.map((f) => f.path).sort();
  const wanted = [...manifest.files, "package.json", "README.md"].sort();
  const missing = wanted.filter((f) => !packed.includes(f));
  const extra = packed.filter((f) => !wanted.includes(f));
  if (missing.length) problems.push(`the npm tarball lacks ${missing.join(", ")} (not built? make pkg)`);
  if (extra.length) problems.push(`the npm tarball holds files \`files\` does not list: ${extra.join(", ")}`);
  const corrected = log
    .split("\n")
    .filter((line) => /auto-corrected|errors corrected|was invalid|was renamed/.test(line));
  if (corrected.length) {
    problems.push(`npm corrected pkg/package.json on the way (run npm pkg fix in pkg/):\n  ${corrected.join("\n  ")}`);
  }
  return problems;
}

/** Every check on the files under `root`. */
function checkAll(root, { release = false, dist = false } = {}) {
  const { problems, version } = checkVersions(root);
  return { version, problems: [...problems, ...checkChangelog(root, version, release), ...checkPackage(root, dist)] };
}

/**
 * Writes `version` into every manifest and opens its CHANGELOG section with
 * what Unreleased held; link references of the compare form follow.
 */
function prepare(root, version, date) {
  if (!SEMVER.test(version)) throw new Error(`${version} is not a SemVer version (X.Y.Z)`);
  if (!isDate(date)) throw new Error(`${date} is not a date (YYYY-MM-DD)`);
  const current = checkVersions(root);
  if (current.problems.length) throw new Error(`the versions disagree already:\n  ${current.problems.join("\n  ")}`);
  if (compareVersions(version, current.version) < 0) throw new Error(`${version} is older than ${current.version}`);
  const changelog = read(root, "CHANGELOG.md");
  const { sections } = parseChangelog(changelog);
  if (sections[0]?.heading !== "## [Unreleased]") throw new Error('CHANGELOG.md has no "## [Unreleased]" on top');
  if (!sections[0].body.some(({ text }) => /^\s*[-*] \S/.test(text))) {
    throw new Error("CHANGELOG.md: Unreleased lists no change, so there is nothing to release");
  }
  const newest = sections[1]?.heading.match(/^## \[([^\]]+)\]/)?.[1];
  if (newest && SEMVER.test(newest) && compareVersions(version, newest) <= 0) {
    throw new Error(`${version} is not newer than the CHANGELOG's ${newest}`);
  }
  for (const dir of members(root)) {
    const path = dir === "." ? "Cargo.toml" : `${dir}/Cargo.toml`;
    const toml = read(root, path);
    const table = packageTable(toml);
    const bumped = table.replace(/^version\s*=\s*"[^"]*"/m, `version = "${version}"`);
    writeFileSync(join(root, path), toml.replace(table, bumped));
  }
  const pkg = read(root, "pkg/package.json");
  writeFileSync(join(root, "pkg/package.json"), pkg.replace(/^ {2}"version": "[^"]*"/m, `  "version": "${version}"`));
  let text = changelog.replace(/^## \[Unreleased\]\n/m, `## [Unreleased]\n\n## [${version}] - ${date}\n`);
  const compare = text.match(/^\[Unreleased\]:\s*(\S+)\/compare\/(\S+)\.\.\.HEAD\s*$/m);
  if (compare) {
    const [line, base, since] = compare;
    text = text.replace(
      line,
      `[Unreleased]: ${base}/compare/v${version}...HEAD\n[${version}]: ${base}/compare/${since}...v${version}`,
    );
  }
  writeFileSync(join(root, "CHANGELOG.md"), text);
}

/** The files the checks read, copied from the repository into a new folder. */
function copyOfFiles() {
  const dir = mkdtempSync(join(tmpdir(), "oncekey-release-check-"));
  const paths = [
    "CHANGELOG.md",
    "Cargo.toml",
    "Cargo.lock",
    CONSUMER_LOCK,
    "pkg/package.json",
    ...members(REPO).map((m) => (m === "." ? "Cargo.toml" : `${m}/Cargo.toml`)),
  ];
  for (const path of new Set(paths)) cpSync(join(REPO, path), join(dir, path), { recursive: true });
  // The CHANGELOG's relative links (docs/) must resolve in the copy too.
  if (existsSync(join(REPO, "docs"))) cpSync(join(REPO, "docs"), join(dir, "docs"), { recursive: true });
  return dir;
}

/** Edits one file of a copy. */
function edit(root, path, change) {
  const before = read(root, path);
  const after = change(before);
  if (after === before) throw new Error(`self-test: the break of ${path} changed nothing (a stale pattern?)`);
  writeFileSync(join(root, path), after);
}

/** Each way a release can be inconsistent, applied to a copy, and what the checks must say. */
function selfTest() {
  const version = checkVersions(REPO).version;
  const other = version.replace(/\d+$/, (n) => String(Number(n) + 1));
  const setVersion = (text) => text.replace(`"version": "${version}"`, `"version": "${other}"`);
  const setTomlVersion = (text) => text.replace(`version = "${version}"`, `version = "${other}"`);
  const underUnreleased = (extra) => (text) => text.replace("## [Unreleased]\n", `## [Unreleased]\n${extra}`);
  const breaks = [
    ["pkg/package.json carries another version", "pkg/package.json", setVersion, /pkg\/package\.json carries version/],
    [
      "a deployable crate carries another version",
      "workers/proxy/Cargo.toml",
      setTomlVersion,
      /workers\/proxy\/Cargo\.toml .* carries/,
    ],
    [
      "the consumer's lockfile is stale",
      CONSUMER_LOCK,
      (t) => t.replace(/(name = "oncekey"\nversion = ")[^"]+/, `$1${other}`),
      /tests\/consumer\/Cargo\.lock/,
    ],
    [
      "the workspace lockfile is stale",
      "Cargo.lock",
      (t) => t.replace(/(name = "oncekey-demo"\nversion = ")[^"]+/, `$1${other}`),
      /Cargo\.lock \(oncekey-demo\)/,
    ],
    [
      "no Unreleased section on top",
      "CHANGELOG.md",
      (t) => t.replace("## [Unreleased]", "## Unreleased"),
      /must be "## \[Unreleased\]"/,
    ],
    [
      "a version heading without a date",
      "CHANGELOG.md",
      (t) => `${t.trimEnd()}\n\n## [0.0.1]\n\n### Added\n\n- x\n`,
      /is not "## \[Unreleased\]" first/,
    ],
    ["a date that is no date", "CHANGELOG.md", (t) => `${t.trimEnd()}\n\n## [0.0.1] - 2026-02-30\n`, /YYYY-MM-DD/],
    [
      "a group Keep a Changelog has not",
      "CHANGELOG.md",
      underUnreleased("\n### Improved\n\n- x\n"),
      /Keep a Changelog's groups/,
    ],
    [
      "a group twice in a version",
      "CHANGELOG.md",
      underUnreleased("\n### Fixed\n\n- x\n\n### Fixed\n\n- y\n"),
      /appears twice/,
    ],
    [
      "manifests behind the newest release",
      "CHANGELOG.md",
      underUnreleased("\n## [99.0.0] - 2026-01-01\n\n### Fixed\n\n- x\n"),
      /older than the newest release/,
    ],
    [
      "releases out of order",
      "CHANGELOG.md",
      (t) => `${t.trimEnd()}\n\n## [0.0.1] - 2026-01-01\n\n## [0.0.2] - 2025-01-01\n`,
      /comes after 0\.0\.1/,
    ],
    [
      "a relative link to no file",
      "CHANGELOG.md",
      (t) => `${t.trimEnd()}\n\nSee [the policy](docs/no-such-page.md).\n`,
      /docs\/no-such-page\.md names no file/,
    ],
    [
      "exports name a file `files` lacks",
      "pkg/package.json",
      (t) => t.replace(/\n\s*"dist\/worker\.d\.ts",/, ""),
      /exports\["\.\/worker"\]\["types"\] names/,
    ],
    [
      "a bin path npm rewrites",
      "pkg/package.json",
      (t) => t.replace(/"(dist\/cli\.js)"/, '"./$1"'),
      /npm publish rewrites it/,
    ],
    [
      "licenses that differ",
      "pkg/package.json",
      (t) => t.replace(/"license": "[^"]*"/, '"license": "MIT"'),
      /license MIT, but the crate's/,
    ],
  ];
  const failures = [];
  const clean = copyOfFiles();
  try {
    const { problems } = checkAll(clean);
    if (problems.length) failures.push(`the unbroken copy fails:\n    ${problems.join("\n    ")}`);
    // Publishing needs the version's own section and an empty Unreleased.
    const gate = checkAll(clean, { release: true }).problems.find((p) =>
      /no "## \[.*\] - YYYY-MM-DD" section|Unreleased must be empty/.test(p),
    );
    if (gate) console.log(`   ok  --release with changes under Unreleased: ${gate}`);
    else failures.push("--release passes with changes left under Unreleased");
    // npm's dry-run report: exactly `files`, package.json and README.md, nothing corrected.
    const manifest = JSON.parse(read(clean, "pkg/package.json"));
    const report = (files) =>
      JSON.stringify({ [manifest.name]: { ...manifest, files: files.map((path) => ({ path })) } });
    const all = [...manifest.files, "package.json", "README.md"];
    const npmCases = [
      ["npm's report as it should be", report(all), "", null],
      [
        "a file missing from the tarball",
        report(all.filter((f) => f !== "dist/proxy.js")),
        "",
        /lacks dist\/proxy\.js/,
      ],
      ["a stray file in the tarball", report([...all, "dist/stray.js"]), "", /does not list: dist\/stray\.js/],
      ["npm correcting package.json", report(all), "npm warn publish npm auto-corrected some errors", /npm pkg fix/],
    ];
    for (const [what, json, log, expected] of npmCases) {
      const found = checkNpmDryRun(clean, json, log);
      if (expected === null ? found.length > 0 : !found.some((p) => expected.test(p))) {
        failures.push(`${what}: ${found.length ? found.join("; ") : "no problem found"}`);
      } else {
        console.log(`   ok  ${what}${expected ? `: ${found.find((p) => expected.test(p)).split("\n")[0]}` : ""}`);
      }
    }
  } finally {
    rmSync(clean, { recursive: true, force: true });
  }
  for (const [what, path, change, expected] of breaks) {
    const dir = copyOfFiles();
    try {
      edit(dir, path, change);
      const { problems } = checkAll(dir);
      const caught = problems.find((p) => expected.test(p));
      if (caught) console.log(`   ok  ${what}: ${caught}`);
      else failures.push(`${what} (${path}): not caught; the checks said ${problems.join("; ") || "nothing"}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (failures.length) {
    console.error(`release-check --self-test: FAIL\n  ${failures.join("\n  ")}`);
    process.exit(1);
  }
  console.log(`release-check --self-test: each of ${breaks.length + 4} breaks was caught; the unbroken copy passed`);
}

const { values } = parseArgs({
  options: {
    root: { type: "string", default: REPO },
    release: { type: "boolean", default: false },
    dist: { type: "boolean", default: false },
    "npm-json": { type: "string" },
    "npm-log": { type: "string" },
    prepare: { type: "string" },
    date: { type: "string" },
    "self-test": { type: "boolean", default: false },
  },
});

if (values["self-test"]) {
  selfTest();
} else if (values.prepare !== undefined) {
  try {
    prepare(values.root, values.prepare, values.date ?? new Date().toISOString().slice(0, 10));
  } catch (error) {
    console.error(`release-check --prepare: ${error.message}`);
    process.exit(1);
  }
} else {
  const { version, problems } =
    values["npm-json"] !== undefined
      ? {
          version: JSON.parse(read(values.root, "pkg/package.json")).version,
          problems: checkNpmDryRun(
            values.root,
            readFileSync(values["npm-json"], "utf8"),
            values["npm-log"] ? readFileSync(values["npm-log"], "utf8") : "",
          ),
        }
      : checkAll(values.root, { release: values.release, dist: values.dist });
  if (problems.length) {
    console.error(`release-check: ${problems.length} problem(s):\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }
  console.log(
    values["npm-json"] !== undefined
      ? `release-check: npm would publish oncekey@${version} with exactly its \`files\`, correcting nothing`
      : `release-check: the manifests, lockfiles and CHANGELOG.md agree on ${version}${values.dist ? "; pkg/ is built" : ""}`,
  );
}
