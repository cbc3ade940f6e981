//! The coordinator's expiry alarm (SPEC §4): what it does with the record
//! it finds when it runs.

use crate::core::Record;

/// What the expiry alarm does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// The record lives on (a later write gave it a later expiry): run
    /// again at `at_ms`, milliseconds since the epoch.
    Rearm {
        /// When the record expires.
        at_ms: u64,
    },
    /// The record has expired: delete it.
    Delete,
    /// Nothing is stored.
    Idle,
}

/// The alarm's step for `record` at `now_ms` ([`Record::is_live`]
/// decides).
///
/// ```
/// use oncekey::core::{Expiry, Record, Released, on_alarm};
/// let record = Record::Released(Released { last_attempt: 1, expires_at: 1_000 });
/// assert_eq!(on_alarm(Some(&record), 999), Expiry::Rearm { at_ms: 1_000 });
/// assert_eq!(on_alarm(Some(&record), 1_000), Expiry::Delete);
/// assert_eq!(on_alarm(None, 1_000), Expiry::Idle);
/// ```
pub fn on_alarm(record: Option<&Record>, now_ms: u64) -> Expiry {
    match record {
        None => Expiry::Idle,
        Some(record) if record.is_live(now_ms) => Expiry::Rearm { at_ms: record.expires_at() },
        Some(_) => Expiry::Delete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Fingerprint, InFlight};
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn an_alarm_deletes_only_what_has_expired() {
        let in_flight = Record::InFlight(InFlight {
            fingerprint: Fingerprint::of("POST", "/", None, b""),
            attempt: 2,
            lease_expires_at: 500,
            expires_at: 2_000,
            outcome_unknown: false,
            reservation: 0,
        });
        let cases = [
            (0, Expiry::Rearm { at_ms: 2_000 }),
            (1_999, Expiry::Rearm { at_ms: 2_000 }),
            (2_000, Expiry::Delete),
            (u64::MAX, Expiry::Delete),
        ];
        for (now, step) in cases {
            assert_eq!(on_alarm(Some(&in_flight), now), step, "at {now}");
        }
        assert_eq!(on_alarm(None, 0), Expiry::Idle);
    }
}
