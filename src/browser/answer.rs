//! What a server's answer says, for the glue: the core's [`AnswerKind`]
//! read from the answer's status, replay headers and (for a 409) body.

use wasm_bindgen::prelude::*;

use crate::core::{AnswerKind, is_replayed, reads_body};

/// The core's [`AnswerKind`], as JavaScript sees it.
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Made for this attempt; its status decides what follows.
    Fresh = 0,
    /// A stored answer: final.
    Replayed = 1,
    /// The key's first request is still running.
    InFlight = 2,
    /// The key's last attempt ended without an answer (`outcome-unknown`).
    OutcomeUnknown = 3,
}

impl From<AnswerKind> for Answer {
    fn from(kind: AnswerKind) -> Self {
        match kind {
            AnswerKind::Fresh => Answer::Fresh,
            AnswerKind::Replayed => Answer::Replayed,
            AnswerKind::InFlight => Answer::InFlight,
            AnswerKind::OutcomeUnknown => Answer::OutcomeUnknown,
        }
    }
}

impl From<Answer> for AnswerKind {
    fn from(answer: Answer) -> Self {
        match answer {
            Answer::Fresh => AnswerKind::Fresh,
            Answer::Replayed => AnswerKind::Replayed,
            Answer::InFlight => AnswerKind::InFlight,
            Answer::OutcomeUnknown => AnswerKind::OutcomeUnknown,
        }
    }
}

/// Whether the `Idempotent-Replayed` or `Idempotency-Replayed` header
/// value (`null` when absent) says the answer is a replay.
#[wasm_bindgen(js_name = answerReplayed)]
pub fn answer_replayed(idempotent_replayed: Option<String>, idempotency_replayed: Option<String>) -> bool {
    is_replayed(idempotent_replayed.as_deref(), idempotency_replayed.as_deref())
}

/// Whether to read an answer's body (from a clone) before
/// [`answer_kind`]; `content_length` is its `Content-Length` header, if any.
#[wasm_bindgen(js_name = answerReadsBody)]
pub fn answer_reads_body(status: u16, content_length: Option<String>) -> bool {
    reads_body(status, content_length.and_then(|n| n.trim().parse().ok()))
}

/// What an answer is, from its status, whether it is a replay
/// ([`answer_replayed`]) and its body text when [`answer_reads_body`] asked
/// for it.
#[wasm_bindgen(js_name = answerKind)]
pub fn answer_kind(status: u16, replayed: bool, body: Option<String>) -> Answer {
    AnswerKind::of(status, replayed, body.as_deref()).into()
}
