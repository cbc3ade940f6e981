//! What a Worker host writes in its own words — a line of its own in the
//! log, or why a step failed, handed back to the core — written once for
//! both hosts, so a log reads the same whichever host wrote it. The Rust
//! host writes these; the JavaScript host's files hold copies (an export
//! would cost `oncekey/proxy` bytes), which tests/worker-js/boundary.test.js
//! holds to the same table as tests/host_texts.rs holds these
//! (tests/support/host-texts.tsv).

use std::fmt;

/// A text a host writes. Each renders as the line or reason it is
/// (`Display`).
///
/// ```
/// use oncekey::core::HostText;
/// assert_eq!(HostText::NoAnswerWithin { ms: 5_000 }.to_string(), "no answer within 5000 ms");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostText<'a> {
    /// A step's time limit passed (a store call, a KV read, the origin).
    NoAnswerWithin {
        /// The limit, in ms.
        ms: u64,
    },
    /// The caller went away during the origin call, and what Workers
    /// allows after a disconnect ran out before the origin answered.
    CallerGone {
        /// What was left, in ms ([`Exchange::caller_gone`](crate::core::Exchange::caller_gone)).
        left_ms: u64,
    },
    /// No KV namespace is bound under the name the layer reads.
    NoKvBound {
        /// The binding's name.
        binding: &'a str,
    },
    /// The exchange ended without an answer for the caller: a host bug (a
    /// result reported out of turn), never dressed as one of the layer's
    /// answers.
    Unanswered,
    /// An Analytics Engine data point could not be written.
    DataPointNotWritten {
        /// Why.
        error: &'a str,
    },
    /// A queue consumer's batch counts could not be added to its counters.
    CountersNotSaved {
        /// The consumer's name.
        consumer: &'a str,
        /// Why.
        error: &'a str,
    },
    /// A queue consumer's batch data point could not be written.
    ConsumerDataPointNotWritten {
        /// The consumer's name.
        consumer: &'a str,
        /// Why.
        error: &'a str,
    },
}

impl fmt::Display for HostText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAnswerWithin { ms } => write!(f, "no answer within {ms} ms"),
            Self::CallerGone { left_ms } => write!(
                f,
                "the caller went away; no answer within the {left_ms} ms left of what Workers allows after a disconnect"
            ),
            Self::NoKvBound { binding } => write!(f, "no KV namespace bound as {binding}"),
            Self::Unanswered => f.write_str("oncekey: the exchange ended without an answer"),
            Self::DataPointNotWritten { error } => write!(f, "oncekey: data point not written: {error}"),
            Self::CountersNotSaved { consumer, error } => {
                write!(f, "oncekey: consumer {consumer} counters not saved: {error}")
            }
            Self::ConsumerDataPointNotWritten { consumer, error } => {
                write!(f, "oncekey: consumer {consumer} data point not written: {error}")
            }
        }
    }
}
