//! Every text a Worker host writes in its own words, as the core renders
//! it (`HostText`) for the Rust host: each line of tests/support/host-texts.tsv,
//! which tests/worker-js/boundary.test.js holds the JavaScript host's files to.

use oncekey::core::HostText;

/// The kind's name in the table.
fn kind(text: &HostText) -> &'static str {
    match text {
        HostText::NoAnswerWithin { .. } => "NoAnswerWithin",
        HostText::CallerGone { .. } => "CallerGone",
        HostText::NoKvBound { .. } => "NoKvBound",
        HostText::Unanswered => "Unanswered",
        HostText::DataPointNotWritten { .. } => "DataPointNotWritten",
        HostText::CountersNotSaved { .. } => "CountersNotSaved",
        HostText::ConsumerDataPointNotWritten { .. } => "ConsumerDataPointNotWritten",
    }
}

/// The text of kind `name` with `subject` and `error` in their places.
fn text<'a>(name: &str, subject: &'a str, error: &'a str) -> HostText<'a> {
    let ms = || subject.parse().expect("a number of ms");
    let text = match name {
        "NoAnswerWithin" => HostText::NoAnswerWithin { ms: ms() },
        "CallerGone" => HostText::CallerGone { left_ms: ms() },
        "NoKvBound" => HostText::NoKvBound { binding: subject },
        "Unanswered" => HostText::Unanswered,
        "DataPointNotWritten" => HostText::DataPointNotWritten { error },
        "CountersNotSaved" => HostText::CountersNotSaved { consumer: subject, error },
        "ConsumerDataPointNotWritten" => HostText::ConsumerDataPointNotWritten { consumer: subject, error },
        other => panic!("no HostText {other}"),
    };
    assert_eq!(kind(&text), name);
    text
}

#[test]
fn every_host_text_as_the_table_writes_it() {
    let rows: Vec<Vec<&str>> = include_str!("support/host-texts.tsv")
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split('\t').collect())
        .collect();
    let mut kinds: Vec<&str> = rows.iter().map(|row| row[0]).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!((rows.len(), kinds.len()), (7, 7), "one line for each of HostText's kinds: {kinds:?}");
    for row in rows {
        let [name, subject, error, line] = row[..] else { panic!("four fields: {row:?}") };
        assert_eq!(text(name, subject, error).to_string(), line, "{name}");
    }
}
