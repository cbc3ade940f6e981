//! The properties every state of the world must hold, each named as the
//! checker reports it (SPEC §3, §4, §11):
//!
//! - `no-attempt-twice`: no attempt number of a record runs twice;
//! - `one-attempt-per-lease`: no attempt starts while another attempt of
//!   the record runs within its lease (an operator's release of an attempt
//!   in flight ends its lease: it says that attempt is dead);
//! - `replay-is-the-stored-answer`: every replay is an answer the store held
//!   for the record, and the one it holds now if it holds one;
//! - `stored-answer-never-changes`: once the store holds an answer for a
//!   record, it holds that answer until the alarm deletes it or an operator
//!   releases it;
//! - `finish-keeps-later-attempts`: a `finish` of one attempt never changes
//!   a record that holds another;
//! - `unreadable-fails-closed`: while the record's bytes cannot be read,
//!   every caller gets a 503, never a run or an "absent";
//! - `every-waiter-ends`: when nothing more can happen, every caller has its
//!   answer and every delivery has settled (or its Worker died).

use std::fmt;

use super::state::Run;
use crate::core::{Record, RecordName, Reply, ReplyBody, SealKeys, StoredAnswer};

/// A property broken, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The property's name.
    pub property: &'static str,
    /// What happened.
    pub detail: String,
}

impl Violation {
    /// `property` broken as `detail` says.
    pub fn new(property: &'static str, detail: String) -> Self {
        Self { property, detail }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.property, self.detail)
    }
}

/// `no-attempt-twice` and `one-attempt-per-lease`, as `run` starts.
pub fn run_may_start(runs: &[Run], run: &Run) -> Result<(), Violation> {
    let of_record = || runs.iter().filter(|r| r.name == run.name && !r.forgotten);
    if of_record().any(|r| r.attempt == run.attempt) {
        return Err(Violation::new("no-attempt-twice", format!("attempt {} runs a second time", run.attempt)));
    }
    if let Some(other) = of_record().find(|r| !r.ended && r.lease_end.is_some_and(|end| run.started < end)) {
        return Err(Violation::new(
            "one-attempt-per-lease",
            format!("attempt {} starts while attempt {} runs within its lease", run.attempt, other.attempt),
        ));
    }
    Ok(())
}

/// `finish-keeps-later-attempts`: a `finish` of `attempt` on a record that
/// held another attempt — another number, or the same number in a later
/// life of the key (`earlier_life`: it expired and began again since) —
/// left it as it was.
pub fn finish_keeps_later_attempts(
    attempt: u32,
    earlier_life: bool,
    before: Option<&[u8]>,
    after: Option<&[u8]>,
) -> Result<(), Violation> {
    let held = match before.map(Record::decode) {
        Some(Ok(Record::InFlight(r))) => r.attempt,
        Some(Ok(Record::Completed(c))) => c.attempt,
        Some(Ok(Record::Released(r))) => r.last_attempt,
        _ => return Ok(()),
    };
    if (held != attempt || earlier_life) && before != after {
        let life = if earlier_life { " of an earlier life of the key" } else { "" };
        return Err(Violation::new(
            "finish-keeps-later-attempts",
            format!("the finish of attempt {attempt}{life} changed the record of attempt {held}"),
        ));
    }
    Ok(())
}

/// `unreadable-fails-closed`: a caller answered while the record's bytes
/// (`stored`) do not decode gets a 503.
pub fn unreadable_fails_closed(stored: Option<&[u8]>, reply: &Reply) -> Result<(), Violation> {
    if stored.is_some_and(|bytes| Record::decode(bytes).is_err()) && reply.status != 503 {
        return Err(Violation::new(
            "unreadable-fails-closed",
            format!("a caller got {} while the record could not be read", reply.status),
        ));
    }
    Ok(())
}

/// The answers the store has held, per record.
#[derive(Clone, Debug, Default)]
pub struct Answers {
    /// The world's seal keys: a sealed answer is compared opened.
    keys: SealKeys,
    /// Each answer ever held, with its record and attempt.
    ever: Vec<(RecordName, u32, StoredAnswer)>,
    /// The answer each record holds now, as last seen.
    now: Vec<(RecordName, u32, StoredAnswer)>,
}

impl Answers {
    /// No answer yet; sealed ones open with `keys`.
    pub fn new(keys: SealKeys) -> Self {
        Self { keys, ..Self::default() }
    }

    /// An operator's release or the alarm may end the record's answer.
    pub fn forget(&mut self, name: RecordName) {
        self.now.retain(|(n, ..)| *n != name);
    }

    /// `stored-answer-never-changes`, after a move: each object's record.
    pub fn check<'a>(
        &mut self,
        objects: impl Iterator<Item = (RecordName, Option<&'a [u8]>)>,
    ) -> Result<(), Violation> {
        for (name, stored) in objects {
            let held = match stored.map(Record::decode) {
                Some(Ok(Record::Completed(c))) => Some((c.attempt, c.response)),
                _ => None,
            };
            let known = self.now.iter().position(|(n, ..)| *n == name);
            match (known, held) {
                (Some(at), Some((attempt, response))) => {
                    let (_, was_attempt, was) = &self.now[at];
                    if (*was_attempt, was) != (attempt, &response) {
                        return Err(Violation::new(
                            "stored-answer-never-changes",
                            format!("the answer of attempt {was_attempt} became attempt {attempt}'s"),
                        ));
                    }
                }
                (Some(at), None) => {
                    let (_, was_attempt, _) = self.now[at];
                    return Err(Violation::new(
                        "stored-answer-never-changes",
                        format!("the answer of attempt {was_attempt} is gone (the record: {stored:?})"),
                    ));
                }
                (None, Some((attempt, response))) => {
                    self.ever.push((name, attempt, response.clone()));
                    self.now.push((name, attempt, response));
                }
                (None, None) => {}
            }
        }
        Ok(())
    }

    /// `replay-is-the-stored-answer`, for a replay of `name`.
    pub fn replay_is_stored(&self, name: RecordName, reply: &Reply) -> Result<(), Violation> {
        let body = match &reply.body {
            ReplyBody::Bytes(bytes) => bytes.clone(),
            ReplyBody::Origin => Vec::new(),
        };
        // A sealed answer is compared opened, as a replay opens it.
        let same = |r: &StoredAnswer| {
            super::cipher::opened(r, &self.keys, &name)
                .is_some_and(|r| r.status == reply.status && r.body.clone().unwrap_or_default() == body)
        };
        let held_now = self.now.iter().find(|(n, ..)| *n == name);
        let ok = match held_now {
            Some((_, _, response)) => same(response),
            None => self.ever.iter().any(|(n, _, response)| *n == name && same(response)),
        };
        if ok {
            return Ok(());
        }
        Err(Violation::new(
            "replay-is-the-stored-answer",
            format!(
                "a replay answered {} {:?}, which the store never held",
                reply.status,
                String::from_utf8_lossy(&body)
            ),
        ))
    }
}
