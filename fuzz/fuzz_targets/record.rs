//! `Record::decode` on any bytes: a record or a typed error, never a panic.
//! What decodes encodes back to bytes that decode to the same record, and
//! the state machine accepts it as the record found at any clock reading.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oncekey::core::{Fingerprint, Outcome, Record, RecordPolicy, StoredResponse, begin, finish};

fuzz_target!(|data: &[u8]| {
    let Ok(record) = Record::decode(data) else { return };
    let encoded = record.encode();
    assert_eq!(Record::decode(&encoded).as_ref(), Ok(&record));
    // The encoding is canonical up to the body flag, which reads any
    // non-zero byte as "present": same length, and equal once re-encoded.
    assert_eq!(encoded.len(), data.len());
    assert_eq!(Record::decode(&encoded).map(|r| r.encode()), Ok(encoded.clone()));

    // A stored record drives decisions: none of them may panic, whatever
    // its timestamps and attempt numbers, at clock readings around them.
    let policy = RecordPolicy::default();
    let expires = record.expires_at();
    for now in [0, expires.saturating_sub(1), expires, u64::MAX] {
        for fp in [Fingerprint([0; 32]), Fingerprint([7; 32])] {
            let _ = begin(Some(record.clone()), fp, now, &policy);
        }
        let attempt = match &record {
            Record::InFlight(r) => r.attempt,
            Record::Completed(r) => r.attempt,
            Record::Released(r) => r.last_attempt,
        };
        let answer = StoredResponse { status: 201, headers: vec![], body: None };
        for outcome in [Outcome::Answered(answer), Outcome::NotSent, Outcome::Unknown] {
            let _ = finish(Some(record.clone()), attempt, outcome, now, &policy);
        }
    }
});
