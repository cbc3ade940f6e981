//! Records (SPEC §3) and their versioned binary encoding.
//!
//! Layout, all integers big-endian: `b"OK"`, version (1 byte), kind (1 byte),
//! then the kind's fields. Bytes and strings are a u32 length and the bytes.
//! Bodies are stored as raw bytes, never as JSON arrays.

use crate::core::record::response::StoredResponse;
use crate::core::record::sealed::KeyId;
use crate::core::record::sealed::{SealedAnswer, StoredAnswer};
use crate::core::request::fingerprint::Fingerprint;

const MAGIC: &[u8; 2] = b"OK";
const VERSION: u8 = 1;
const IN_FLIGHT: u8 = 1;
const COMPLETED: u8 = 2;
const RELEASED: u8 = 3;
/// An in-flight record with its flags (outcome unknown) and reservation.
/// Records of the earlier layout (kind 1: running, no reservation) still
/// decode.
const IN_FLIGHT_V2: u8 = 4;
/// A completed record that keeps a browser's `set-cookie` headers: laid out
/// as [`COMPLETED`], under a kind earlier code cannot read, so a rollback
/// fails closed rather than replay a session to anyone.
const COMPLETED_KEEPING_COOKIES: u8 = 5;
/// A completed record with a flags byte before kind 2's fields (bit 0: its
/// KV copy was asked for). Written only once a flag is set; earlier code
/// fails closed on it.
const COMPLETED_FLAGGED: u8 = 6;
/// A completed record whose answer is sealed (SPEC §4): a flags byte, kind
/// 2's fields up to `expires_at`, then the [`SealedAnswer`]. Earlier code
/// fails closed on it.
const COMPLETED_SEALED: u8 = 7;

/// An attempt holds the key until its lease ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// The fingerprint of the request that holds the key.
    pub fingerprint: Fingerprint,
    /// The attempt number sent to the origin as `Idempotency-Attempt`.
    pub attempt: u32,
    /// When the lease ends (ms since the Unix epoch); after it a retry may
    /// reclaim the key with the next attempt number.
    pub lease_expires_at: u64,
    /// When the record itself may be forgotten (ms). Kept after the lease so
    /// attempt numbers keep rising for a retry that comes late.
    pub expires_at: u64,
    /// Whether the attempt ended without an answer (reset, time limit): the
    /// work may or may not be done, and only the lease's end frees the key.
    /// `false` while it runs.
    pub outcome_unknown: bool,
    /// The number the `begin` that made this reservation carried (0: none),
    /// so that call's caller can abandon it when the reply was lost
    /// ([`abandon`](crate::core::abandon)).
    pub reservation: u64,
}

/// The origin answered and the answer is kept for replays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completed {
    /// The fingerprint of the request that was executed.
    pub fingerprint: Fingerprint,
    /// The attempt that produced the answer.
    pub attempt: u32,
    /// The stored answer, plain or sealed.
    pub response: StoredAnswer,
    /// When the record is forgotten (ms since the Unix epoch).
    pub expires_at: u64,
    /// Whether a replay has already asked for its Workers KV copy (SPEC §4:
    /// a copy is written once the key is asked for again, not at completion).
    pub copied: bool,
}

/// A tombstone: the last attempt released the key, and the next one must
/// carry a higher number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Released {
    /// The attempt that released the key.
    pub last_attempt: u32,
    /// When the tombstone is forgotten (ms since the Unix epoch).
    pub expires_at: u64,
}

/// What the store holds for one record name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// An attempt is running, or ran and never reported back.
    InFlight(InFlight),
    /// The answer is stored.
    Completed(Completed),
    /// The key was released and may run again.
    Released(Released),
}

/// Why bytes are not a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes end before the record does.
    #[error("the record is truncated")]
    Truncated,
    /// The bytes do not start with the record magic.
    #[error("not an oncekey record")]
    BadMagic,
    /// Written by a version this build does not read.
    #[error("record version {0} is not supported")]
    UnsupportedVersion(u8),
    /// An unknown record kind.
    #[error("unknown record kind {0}")]
    UnknownKind(u8),
    /// A header name or value that is not UTF-8.
    #[error("a stored header is not UTF-8")]
    BadHeader,
    /// Bytes left over after the record.
    #[error("{0} bytes follow the record")]
    TrailingBytes(usize),
}

impl Record {
    /// The fingerprint of the request the record is for; a released key's
    /// tombstone has none.
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        match self {
            Self::InFlight(r) => Some(r.fingerprint),
            Self::Completed(c) => Some(c.fingerprint),
            Self::Released(_) => None,
        }
    }

    /// When the store may forget the record. Past this instant the record
    /// reads as absent, whether or not an alarm has deleted it yet.
    pub fn expires_at(&self) -> u64 {
        match self {
            Self::InFlight(r) => r.expires_at,
            Self::Completed(r) => r.expires_at,
            Self::Released(r) => r.expires_at,
        }
    }

    /// Whether the record still counts at `now_ms` (it expires at
    /// `expires_at` exactly).
    pub fn is_live(&self, now_ms: u64) -> bool {
        now_ms < self.expires_at()
    }

    /// The record as seen at `now_ms`: `None` once it has expired.
    pub fn live(self, now_ms: u64) -> Option<Self> {
        self.is_live(now_ms).then_some(self)
    }

    /// Encodes the record.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Writer(Vec::with_capacity(64));
        out.0.extend_from_slice(MAGIC);
        out.0.push(VERSION);
        match self {
            Self::InFlight(r) => {
                out.0.push(IN_FLIGHT_V2);
                out.0.extend_from_slice(&r.fingerprint.0);
                out.u32(r.attempt);
                out.u64(r.lease_expires_at);
                out.u64(r.expires_at);
                out.0.push(u8::from(r.outcome_unknown));
                out.u64(r.reservation);
            }
            Self::Completed(r) => {
                match &r.response {
                    StoredAnswer::Sealed(_) => {
                        out.0.push(COMPLETED_SEALED);
                        out.0.push(u8::from(r.copied));
                    }
                    StoredAnswer::Plain(_) if r.copied => {
                        out.0.push(COMPLETED_FLAGGED);
                        out.0.push(1);
                    }
                    StoredAnswer::Plain(response) => {
                        out.0.push(if response.keeps_cookies() { COMPLETED_KEEPING_COOKIES } else { COMPLETED });
                    }
                }
                out.0.extend_from_slice(&r.fingerprint.0);
                out.u32(r.attempt);
                out.u64(r.expires_at);
                match &r.response {
                    StoredAnswer::Plain(response) => write_response(&mut out, response),
                    StoredAnswer::Sealed(sealed) => {
                        out.0.extend_from_slice(&sealed.key_id.0);
                        out.bytes(&sealed.answer);
                        match &sealed.cookies {
                            Some(cookies) => {
                                out.0.push(1);
                                out.bytes(cookies);
                            }
                            None => out.0.push(0),
                        }
                    }
                }
            }
            Self::Released(r) => {
                out.0.push(RELEASED);
                out.u32(r.last_attempt);
                out.u64(r.expires_at);
            }
        }
        out.0
    }

    /// Decodes a record written by [`Record::encode`].
    ///
    /// # Errors
    /// A [`DecodeError`] for anything that is not exactly one record of a
    /// known version. Never panics, whatever the input.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader(bytes);
        if r.take(2)? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let version = r.u8()?;
        if version != VERSION {
            return Err(DecodeError::UnsupportedVersion(version));
        }
        let record = match r.u8()? {
            kind @ (IN_FLIGHT | IN_FLIGHT_V2) => {
                let (fingerprint, attempt, lease_expires_at, expires_at) =
                    (r.fingerprint()?, r.u32()?, r.u64()?, r.u64()?);
                let (outcome_unknown, reservation) = match kind {
                    IN_FLIGHT => (false, 0),
                    _ => (r.u8()? & 1 == 1, r.u64()?),
                };
                Self::InFlight(InFlight {
                    fingerprint,
                    attempt,
                    lease_expires_at,
                    expires_at,
                    outcome_unknown,
                    reservation,
                })
            }
            kind @ (COMPLETED | COMPLETED_KEEPING_COOKIES | COMPLETED_FLAGGED | COMPLETED_SEALED) => {
                let flags = match kind {
                    COMPLETED_FLAGGED | COMPLETED_SEALED => r.u8()?,
                    _ => 0,
                };
                let fingerprint = r.fingerprint()?;
                let attempt = r.u32()?;
                let expires_at = r.u64()?;
                let response = match kind {
                    COMPLETED_SEALED => StoredAnswer::Sealed(SealedAnswer {
                        key_id: KeyId(r.array()?),
                        answer: r.bytes()?.to_vec(),
                        cookies: match r.u8()? {
                            0 => None,
                            _ => Some(r.bytes()?.to_vec()),
                        },
                    }),
                    _ => StoredAnswer::Plain(read_response(&mut r)?),
                };
                Self::Completed(Completed { fingerprint, attempt, response, expires_at, copied: flags & 1 == 1 })
            }
            RELEASED => Self::Released(Released { last_attempt: r.u32()?, expires_at: r.u64()? }),
            kind => return Err(DecodeError::UnknownKind(kind)),
        };
        match r.0.len() {
            0 => Ok(record),
            n => Err(DecodeError::TrailingBytes(n)),
        }
    }
}

/// Writes a stored answer's status, headers and body (kind 2's layout,
/// and a sealed part's plaintext).
pub(crate) fn write_response(out: &mut Writer, response: &StoredResponse) {
    out.0.extend_from_slice(&response.status.to_be_bytes());
    out.u32(response.headers.len() as u32);
    for (name, value) in &response.headers {
        out.bytes(name.as_bytes());
        out.bytes(value.as_bytes());
    }
    match &response.body {
        Some(body) => {
            out.0.push(1);
            out.bytes(body);
        }
        None => out.0.push(0),
    }
}

/// Reads what [`write_response`] wrote.
pub(crate) fn read_response(r: &mut Reader<'_>) -> Result<StoredResponse, DecodeError> {
    let status = u16::from_be_bytes(r.array()?);
    let count = r.u32()?;
    let mut headers = Vec::new();
    for _ in 0..count {
        headers.push((r.string()?, r.string()?));
    }
    let body = match r.u8()? {
        0 => None,
        _ => Some(r.bytes()?.to_vec()),
    };
    Ok(StoredResponse { status, headers, body })
}

/// Big-endian writer shared with the store wire format.
pub(crate) struct Writer(pub(crate) Vec<u8>);

impl Writer {
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
}

/// Big-endian reader shared with the store wire format.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array()?))
    }
    pub(crate) fn fingerprint(&mut self) -> Result<Fingerprint, DecodeError> {
        Ok(Fingerprint(self.array()?))
    }
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.u32()? as usize;
        self.take(len)
    }
    pub(crate) fn string(&mut self) -> Result<String, DecodeError> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::BadHeader)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn completed(body: Option<Vec<u8>>) -> Record {
        Record::Completed(Completed {
            fingerprint: Fingerprint([7; 32]),
            attempt: 3,
            response: StoredResponse {
                status: 201,
                headers: vec![("content-type".into(), "application/json".into())],
                body,
            }
            .into(),
            expires_at: 99,
            copied: false,
        })
    }

    #[test]
    fn an_in_flight_record_of_the_previous_version_decodes_as_running() {
        // Bytes as the code before `outcome_unknown` wrote them: kind 1.
        let mut bytes = b"OK\x01\x01".to_vec();
        bytes.extend_from_slice(&[7; 32]);
        bytes.extend_from_slice(&2u32.to_be_bytes());
        bytes.extend_from_slice(&5u64.to_be_bytes());
        bytes.extend_from_slice(&10u64.to_be_bytes());
        let expected = InFlight {
            fingerprint: Fingerprint([7; 32]),
            attempt: 2,
            lease_expires_at: 5,
            expires_at: 10,
            outcome_unknown: false,
            reservation: 0,
        };
        assert_eq!(Record::decode(&bytes), Ok(Record::InFlight(expected)));
    }

    /// Every layout this code has ever written, as bytes written out by
    /// hand from the layout (not by `encode`): each must go on decoding to
    /// the same record after any change, or a rollback-and-forward would
    /// read stored keys as unreadable (SPEC §3).
    #[test]
    fn every_layout_ever_written_decodes() {
        let be32 = |v: u32| v.to_be_bytes().to_vec();
        let be64 = |v: u64| v.to_be_bytes().to_vec();
        let layout = |kind: u8, parts: &[Vec<u8>]| [b"OK\x01".to_vec(), vec![kind], parts.concat()].concat();
        let fp = vec![7u8; 32];
        let in_flight_v2 = layout(4, &[fp.clone(), be32(2), be64(5), be64(10), vec![1], be64(0xABCD)]);
        let completed = layout(
            2,
            &[
                fp.clone(),
                be32(3),
                be64(99),
                vec![0, 201],
                be32(1),
                be32(12),
                b"content-type".to_vec(),
                be32(2),
                b"{}".to_vec(),
                vec![1],
                be32(2),
                b"ok".to_vec(),
            ],
        );
        let omitted = layout(2, &[fp.clone(), be32(3), be64(99), vec![1, 244], be32(0), vec![0]]);
        let released = layout(3, &[be32(4), be64(77)]);
        let header = |name: &str, value: &str| {
            [be32(name.len() as u32), name.as_bytes().to_vec(), be32(value.len() as u32), value.as_bytes().to_vec()]
                .concat()
        };
        let flagged = layout(6, &[vec![1], fp.clone(), be32(1), be64(99), vec![0, 201], be32(0), vec![0]]);
        let keeping_cookies = layout(
            5,
            &[
                fp.clone(),
                be32(1),
                be64(99),
                vec![1, 47],
                be32(2),
                header("set-cookie", "sid=1"),
                header(":cookie-jar", "ab"),
                vec![0],
            ],
        );
        // A sealed answer (kind 7): flags, the fields up to the expiry, the
        // key id, the answer part, and the cookies part or none.
        let sealed = layout(
            7,
            &[
                vec![1],
                fp.clone(),
                be32(2),
                be64(99),
                vec![1, 2, 3, 4],
                be32(3),
                vec![9; 3],
                vec![1],
                be32(2),
                vec![8; 2],
            ],
        );
        let sealed_plain =
            layout(7, &[vec![0], fp.clone(), be32(2), be64(99), vec![1, 2, 3, 4], be32(1), vec![9], vec![0]]);
        let rows = [
            (
                sealed,
                Record::Completed(Completed {
                    fingerprint: Fingerprint([7; 32]),
                    attempt: 2,
                    response: StoredAnswer::Sealed(SealedAnswer {
                        key_id: KeyId([1, 2, 3, 4]),
                        answer: vec![9; 3],
                        cookies: Some(vec![8; 2]),
                    }),
                    expires_at: 99,
                    copied: true,
                }),
            ),
            (
                sealed_plain,
                Record::Completed(Completed {
                    fingerprint: Fingerprint([7; 32]),
                    attempt: 2,
                    response: StoredAnswer::Sealed(SealedAnswer {
                        key_id: KeyId([1, 2, 3, 4]),
                        answer: vec![9],
                        cookies: None,
                    }),
                    expires_at: 99,
                    copied: false,
                }),
            ),
            (
                in_flight_v2,
                Record::InFlight(InFlight {
                    fingerprint: Fingerprint([7; 32]),
                    attempt: 2,
                    lease_expires_at: 5,
                    expires_at: 10,
                    outcome_unknown: true,
                    reservation: 0xABCD,
                }),
            ),
            (
                completed,
                Record::Completed(Completed {
                    fingerprint: Fingerprint([7; 32]),
                    attempt: 3,
                    response: StoredResponse {
                        status: 201,
                        headers: vec![("content-type".into(), "{}".into())],
                        body: Some(b"ok".to_vec()),
                    }
                    .into(),
                    expires_at: 99,
                    copied: false,
                }),
            ),
            (
                omitted,
                Record::Completed(Completed {
                    fingerprint: Fingerprint([7; 32]),
                    attempt: 3,
                    response: StoredResponse { status: 500, headers: vec![], body: None }.into(),
                    expires_at: 99,
                    copied: false,
                }),
            ),
            (released, Record::Released(Released { last_attempt: 4, expires_at: 77 })),
            (
                flagged,
                Record::Completed(Completed {
                    fingerprint: Fingerprint([7; 32]),
                    attempt: 1,
                    response: StoredResponse { status: 201, headers: vec![], body: None }.into(),
                    expires_at: 99,
                    copied: true,
                }),
            ),
            (
                keeping_cookies,
                Record::Completed(Completed {
                    fingerprint: Fingerprint([7; 32]),
                    attempt: 1,
                    response: StoredResponse {
                        status: 303,
                        headers: vec![("set-cookie".into(), "sid=1".into()), (":cookie-jar".into(), "ab".into())],
                        body: None,
                    }
                    .into(),
                    expires_at: 99,
                    copied: false,
                }),
            ),
        ];
        for (bytes, record) in rows {
            assert_eq!(Record::decode(&bytes), Ok(record.clone()));
            assert_eq!(record.encode(), bytes, "today's encoder still writes this layout");
        }
        // A newer layout (a rollback) does not decode: the coordinator holds
        // it as unreadable, never as absent.
        assert_eq!(Record::decode(b"OK\x02\x03"), Err(DecodeError::UnsupportedVersion(2)));
    }

    #[test]
    fn round_trips_every_kind() {
        let records = [
            Record::InFlight(InFlight {
                fingerprint: Fingerprint([1; 32]),
                attempt: 1,
                lease_expires_at: 5,
                expires_at: 10,
                outcome_unknown: false,
                reservation: 0,
            }),
            Record::InFlight(InFlight {
                fingerprint: Fingerprint([2; 32]),
                attempt: 3,
                lease_expires_at: 5,
                expires_at: 10,
                outcome_unknown: true,
                reservation: u64::MAX,
            }),
            completed(Some(b"{\"ok\":true}".to_vec())),
            completed(Some(vec![])),
            completed(None),
            Record::Released(Released { last_attempt: u32::MAX, expires_at: u64::MAX }),
        ];
        for record in records {
            assert_eq!(Record::decode(&record.encode()), Ok(record));
        }
    }

    #[test]
    fn bodies_are_raw_bytes() {
        let body = vec![0xde, 0xad, 0xbe, 0xef];
        let encoded = completed(Some(body.clone())).encode();
        assert!(encoded.ends_with(&body));
        assert!(encoded.len() < 100);
    }

    #[test]
    fn rejects_foreign_and_damaged_bytes() {
        let good = completed(Some(b"x".to_vec())).encode();
        assert_eq!(Record::decode(b""), Err(DecodeError::Truncated));
        assert_eq!(Record::decode(b"NO\x01\x01"), Err(DecodeError::BadMagic));
        assert_eq!(Record::decode(b"OK\x02\x01"), Err(DecodeError::UnsupportedVersion(2)));
        assert_eq!(Record::decode(b"OK\x01\x09"), Err(DecodeError::UnknownKind(9)));
        assert_eq!(Record::decode(&good[..good.len() - 1]), Err(DecodeError::Truncated));
        let mut long = good.clone();
        long.push(0);
        assert_eq!(Record::decode(&long), Err(DecodeError::TrailingBytes(1)));
    }

    #[test]
    fn expiry_reads_as_absent() {
        let r = Record::Released(Released { last_attempt: 1, expires_at: 100 });
        assert_eq!(r.clone().live(99), Some(r.clone()));
        assert_eq!(r.live(100), None);
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        #[test]
        fn prop_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Record::decode(&bytes);
        }

        #[test]
        fn prop_decode_of_a_mutated_record_never_panics(
            flip in 0usize..80, to in any::<u8>(), cut in 0usize..80,
        ) {
            let mut bytes = completed(Some(b"body".to_vec())).encode();
            let i = flip % bytes.len();
            bytes[i] = to;
            bytes.truncate(cut.max(1).min(bytes.len()));
            let _ = Record::decode(&bytes);
        }

        #[test]
        fn prop_round_trips_any_completed(
            status in 100u16..600,
            headers in proptest::collection::vec(("[a-z-]{1,10}", "[ -~]{0,20}"), 0..5),
            body in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..100)),
            attempt in any::<u32>(), expires_at in any::<u64>(),
        ) {
            let record = Record::Completed(Completed {
                fingerprint: Fingerprint([9; 32]), attempt, expires_at,
                response: StoredResponse { status, headers, body }.into(),
                copied: false,
            });
            prop_assert_eq!(Record::decode(&record.encode()), Ok(record));
        }
    }
}
