//! `docs/configuration.md` held to the core, so the page cannot drift from
//! the code: its table lists each of the core's [`VARIABLES`] once and no
//! other, every default it shows is the one the core applies, every
//! variable has its section, the derived time limits it tabulates are the
//! core's, and its JavaScript options are those `oncekey/worker` reads.
//!
//! A default is compared by meaning, through the core's own reader: the
//! value the page shows, written into `[vars]`, must give exactly
//! [`Config::default`], the configuration of every variable unset. So no
//! default is written twice, and a default that depends on another
//! variable (the origin time limit on the lease) is checked as the core
//! derives it.

use std::path::Path;

use oncekey::core::{Config, METRICS_BINDING, ORIGIN_BINDING, VARIABLES};

/// A file of the repository, read at test time.
fn repository_file(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

fn page() -> String {
    repository_file("docs/configuration.md")
}

/// A Markdown table: its column names and its rows of cells, trimmed.
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// The first table after the heading `heading` (its whole line), before
    /// the next heading of any level.
    fn under(page: &str, heading: &str) -> Self {
        let after = page
            .split_once(&format!("\n{heading}\n"))
            .unwrap_or_else(|| panic!("docs/configuration.md has no heading `{heading}`"))
            .1;
        let section = after.lines().take_while(|line| !line.starts_with('#'));
        let mut lines = section.skip_while(|line| !line.starts_with('|')).take_while(|line| line.starts_with('|'));
        let cells = |line: &str| -> Vec<String> {
            line.trim().trim_matches('|').split('|').map(|cell| cell.trim().to_owned()).collect()
        };
        let columns = cells(lines.next().unwrap_or_else(|| panic!("no table under `{heading}`")));
        let rows: Vec<Vec<String>> = lines.skip(1).map(cells).collect();
        assert!(!rows.is_empty(), "the table under `{heading}` has no rows");
        for row in &rows {
            assert_eq!(row.len(), columns.len(), "under `{heading}`: {row:?}");
        }
        Self { columns, rows }
    }

    /// The cells of the column named `name`, one per row.
    fn column(&self, name: &str) -> Vec<&str> {
        let at = self.columns.iter().position(|c| c == name).unwrap_or_else(|| {
            panic!("no column `{name}` in {:?}", self.columns);
        });
        self.rows.iter().map(|row| row[at].as_str()).collect()
    }
}

/// The text of the first code span in `cell`: `ORIGIN_URL` in
/// ``[`ORIGIN_URL`](#origin_url)``.
fn first_code(cell: &str) -> Option<&str> {
    let (_, rest) = cell.split_once('`')?;
    Some(rest.split_once('`')?.0)
}

/// The table of every variable, as (variable, row) pairs.
fn variables_table(page: &str) -> (Table, Vec<String>) {
    let table = Table::under(page, "## Every variable at a glance");
    let names = table
        .column("variable")
        .iter()
        .map(|cell| first_code(cell).unwrap_or_else(|| panic!("no variable name in `{cell}`")).to_owned())
        .collect();
    (table, names)
}

/// The default a cell shows, as a value of `[vars]`: the code span it opens
/// with, or the empty value for *unset*.
fn shown_default(cell: &str) -> Option<String> {
    if cell.starts_with("*unset*") {
        Some(String::new())
    } else if cell.starts_with('`') {
        first_code(cell).map(str::to_owned)
    } else {
        None
    }
}

/// The core's configuration with `variable` set to `value`, and every other
/// variable unset.
fn config_with(variable: &str, value: &str) -> Result<Config, String> {
    Config::from_vars(|name| (name == variable).then(|| value.to_owned())).map_err(|e| e.to_string())
}

#[test]
fn the_table_lists_every_variable_once_and_no_other() {
    let (_, listed) = variables_table(&page());
    let mut problems = Vec::new();
    for variable in VARIABLES {
        match listed.iter().filter(|name| *name == variable).count() {
            1 => {}
            0 => problems.push(format!("{variable} is read by the core but missing from the table")),
            n => problems.push(format!("{variable} is in the table {n} times")),
        }
    }
    for name in &listed {
        if !VARIABLES.contains(&name.as_str()) {
            problems.push(format!("{name} is in the table but the core reads no such variable"));
        }
    }
    assert!(problems.is_empty(), "docs/configuration.md:\n{}", problems.join("\n"));
}

#[test]
fn every_default_shown_is_the_one_the_core_applies() {
    let page = page();
    let (table, names) = variables_table(&page);
    let unset = Config::default();
    let mut problems = Vec::new();
    for (variable, cell) in names.iter().zip(table.column("default")) {
        let Some(value) = shown_default(cell) else {
            problems.push(format!("{variable}: the default `{cell}` opens with neither a value in code nor *unset*"));
            continue;
        };
        match config_with(variable, &value) {
            Ok(config) if config == unset => {}
            Ok(_) => problems.push(format!("{variable}: the page shows {value:?}, which is not the core's default")),
            Err(e) => problems.push(format!("{variable}: the page shows {value:?}, which the core refuses: {e}")),
        }
    }
    assert!(problems.is_empty(), "docs/configuration.md:\n{}", problems.join("\n"));
}

#[test]
fn every_variable_links_to_its_own_section() {
    let page = page();
    let (table, names) = variables_table(&page);
    for (variable, cell) in names.iter().zip(table.column("variable")) {
        let anchor = variable.to_ascii_lowercase();
        assert!(cell.contains(&format!("(#{anchor})")), "{variable}'s row links to #{anchor}: `{cell}`");
        let headings = page.lines().filter(|line| *line == format!("### `{variable}`")).count();
        assert_eq!(headings, 1, "docs/configuration.md has one section `### `{variable}``");
    }
}

/// The `(option, variable)` pairs of the array `name` in `source`: the
/// options table of `src/js/options.rs`, the one list `oncekey/worker`
/// reads. It is crate-private behind the `js` feature (wasm-bindgen), so
/// this native test reads its source; if its layout changes so that no
/// pair is found, the test fails rather than passing on nothing.
fn option_pairs(source: &str, name: &str) -> Vec<(String, String)> {
    let start = source.find(&format!("const {name}:")).unwrap_or_else(|| panic!("src/js/options.rs has no {name}"));
    let body = &source[start..];
    let body = &body[body.find('=').expect("an initialiser")..body.find("];").expect("the array's end")];
    let strings: Vec<String> = body.split('"').skip(1).step_by(2).map(str::to_owned).collect();
    assert!(
        strings.len() >= 2 && strings.len().is_multiple_of(2),
        "{name}: no (option, variable) pairs found in {body}"
    );
    strings.chunks(2).map(|pair| (pair[0].clone(), pair[1].clone())).collect()
}

/// Fails naming every `(option, variable)` pair the page and the source do
/// not share.
fn assert_same_options(shown: &[(String, String)], read: &[(String, String)], what: &str) {
    let only = |a: &[(String, String)], b: &[(String, String)]| -> Vec<String> {
        a.iter().filter(|pair| !b.contains(pair)).map(|(o, v)| format!("{o} ({v})")).collect()
    };
    let (page_only, source_only) = (only(shown, read), only(read, shown));
    assert!(
        page_only.is_empty() && source_only.is_empty() && shown.len() == read.len(),
        "{what}: on the page only: {page_only:?}; in src/js/options.rs only: {source_only:?}; \
         {} rows on the page, {} options read",
        shown.len(),
        read.len(),
    );
}

#[test]
fn the_javascript_options_are_those_oncekey_worker_reads() {
    let page = page();
    let source = repository_file("src/js/options.rs");

    let (table, names) = variables_table(&page);
    let shown: Vec<(String, String)> = table
        .column("JavaScript option")
        .iter()
        .zip(&names)
        .map(|(cell, variable)| {
            let option = first_code(cell).unwrap_or_else(|| panic!("{variable}: no option in `{cell}`"));
            (option.to_owned(), variable.clone())
        })
        .collect();
    assert_same_options(&shown, &option_pairs(&source, "OPTIONS"), "withIdempotency's options");

    let queue = Table::under(&page, "## Queue consumers");
    let shown: Vec<(String, String)> = queue
        .column("option")
        .iter()
        .zip(queue.column("variable"))
        .map(|(option, variable)| (first_code(option).unwrap().to_owned(), first_code(variable).unwrap().to_owned()))
        .collect();
    assert_same_options(&shown, &option_pairs(&source, "CONSUMER_OPTIONS"), "withQueueIdempotency's options");
}

/// A duration in the lease table, in ms: `44.5 s` or `5000 ms`.
fn duration_ms(cell: &str) -> u64 {
    let (number, unit) = cell.split_once(' ').unwrap_or_else(|| panic!("not a duration: `{cell}`"));
    let number: f64 = number.parse().unwrap_or_else(|_| panic!("not a duration: `{cell}`"));
    let scale = match unit {
        "s" => 1000.0,
        "ms" => 1.0,
        _ => panic!("not a duration: `{cell}`"),
    };
    (number * scale).round() as u64
}

#[test]
fn the_time_limits_under_each_lease_are_the_ones_the_core_derives() {
    let table = Table::under(&page(), "## How long things last");
    let leases = table.column("`IDEMPOTENCY_LEASE_SECONDS`");
    let origin = table.column("origin time limit");
    let store = table.column("store time limit");
    let wait = table.column("in-flight wait");
    for row in 0..leases.len() {
        let lease = first_code(leases[row]).unwrap_or_else(|| panic!("no lease in `{}`", leases[row]));
        let config = config_with("IDEMPOTENCY_LEASE_SECONDS", lease).unwrap();
        let shown = (duration_ms(origin[row]), duration_ms(store[row]), duration_ms(wait[row]));
        let derived =
            (config.policy.origin_timeout_ms, config.policy.store_timeout_ms, config.policy.in_flight_wait_ms);
        assert_eq!(shown, derived, "lease {lease}: (origin, store, wait) in ms");
    }
}

#[test]
fn the_bindings_table_names_the_cores_bindings() {
    let table = Table::under(&page(), "## Bindings");
    let bindings: Vec<&str> = table.column("binding").iter().filter_map(|cell| first_code(cell)).collect();
    for binding in [ORIGIN_BINDING, METRICS_BINDING] {
        assert!(bindings.contains(&binding), "{binding} is in the bindings table: {bindings:?}");
    }
}
