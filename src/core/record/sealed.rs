//! Stored answers sealed at rest (SPEC §4): with `IDEMPOTENCY_SEAL_KEYS`
//! set, an answer leaves the Worker — for the object or for KV — as
//! AES-256-GCM ciphertext bound to its record's name, and is opened only in
//! the Worker. The cipher itself is the runtime's Web Crypto, run by the
//! host as an [`Action::Cipher`](crate::core::Action::Cipher)
//! (docs/performance.md: native AES, where the same cipher compiled into
//! the wasm ran 25 times slower and added 12 KB); this file decides what is
//! sealed, in which parts, and bound to what.
//!
//! An answer is sealed in two parts: the answer without its cookies
//! (status, headers, body), and, when it kept any, its `set-cookie`
//! headers with their jar (SPEC §3). A KV copy, which never holds cookies,
//! is then the sealed answer without its second part: no cipher runs to
//! write one.

use crate::core::record::codec::{DecodeError, Reader, Writer, read_response, write_response};
use crate::core::record::response::StoredResponse;
use crate::core::request::digest::{PartHasher, hex};
use crate::core::request::scope::RecordName;

/// A seal key's id: the first 4 bytes of a domain-tagged SHA-256 of the key.
/// It names the key in a sealed record, a log line and the admin paths;
/// it cannot be turned back into the key.
///
/// ```
/// use oncekey::core::KeyId;
/// assert_eq!(KeyId::of(&[0; 32]).to_hex().len(), 8);
/// assert_ne!(KeyId::of(&[0; 32]), KeyId::of(&[1; 32]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyId(pub [u8; 4]);

impl KeyId {
    /// The id of `key`.
    pub fn of(key: &[u8; 32]) -> Self {
        let mut hasher = PartHasher::new("oncekey/seal-key-id/1");
        hasher.part(key);
        let digest = hasher.finish();
        Self([digest[0], digest[1], digest[2], digest[3]])
    }

    /// Lower-case hex, as logs and the admin paths show it.
    pub fn to_hex(self) -> String {
        hex(&self.0)
    }
}

/// The bytes a host's seal adds to a part: the 12-byte nonce it drew,
/// before the ciphertext, and GCM's 16-byte tag after it.
pub const SEAL_OVERHEAD: usize = 12 + 16;

/// An answer as a `Completed` record keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoredAnswer {
    /// As the origin gave it (sealing off, or a record from before it).
    Plain(StoredResponse),
    /// Sealed: only a Worker holding its key can read it.
    Sealed(SealedAnswer),
}

/// An answer sealed with the key `key_id`. Each part is what the host's
/// seal returned: nonce, ciphertext, tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedAnswer {
    /// The key that sealed it.
    pub key_id: KeyId,
    /// The answer without its cookies.
    pub answer: Vec<u8>,
    /// Its kept `set-cookie` headers and their jar, if it kept any.
    pub cookies: Option<Vec<u8>>,
}

/// Which part of an answer a sealed part is; bound into its associated
/// data, so one part never opens as the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SealedPart {
    /// Status, headers and body.
    Answer,
    /// The kept `set-cookie` headers and their jar.
    Cookies,
}

impl From<StoredResponse> for StoredAnswer {
    fn from(response: StoredResponse) -> Self {
        Self::Plain(response)
    }
}

impl StoredAnswer {
    /// The answer as it may be copied to KV: without the cookies only the
    /// object may keep (SPEC §3) — for a sealed answer, without its cookies
    /// part.
    pub fn without_cookies(&self) -> Self {
        match self {
            Self::Plain(response) => Self::Plain(response.without_cookies()),
            Self::Sealed(sealed) => Self::Sealed(SealedAnswer { cookies: None, ..sealed.clone() }),
        }
    }

    /// Whether it keeps a browser's cookies.
    pub fn keeps_cookies(&self) -> bool {
        match self {
            Self::Plain(response) => response.keeps_cookies(),
            Self::Sealed(sealed) => sealed.cookies.is_some(),
        }
    }

    /// The answer, when it is not sealed.
    pub fn plain(&self) -> Option<&StoredResponse> {
        match self {
            Self::Plain(response) => Some(response),
            Self::Sealed(_) => None,
        }
    }

    /// The key that sealed it, if it is sealed.
    pub fn sealed_by(&self) -> Option<KeyId> {
        match self {
            Self::Plain(_) => None,
            Self::Sealed(sealed) => Some(sealed.key_id),
        }
    }
}

impl SealedPart {
    /// The associated data a part of record `name` is sealed with: a
    /// domain tag, the part, the record's name. A part moved to another
    /// record (or put in the other part's place) does not open.
    pub fn associated_data(self, name: &RecordName) -> Vec<u8> {
        let mut aad = b"oncekey/sealed/1/".to_vec();
        aad.push(match self {
            Self::Answer => b'a',
            Self::Cookies => b'c',
        });
        aad.extend_from_slice(&name.0);
        aad
    }
}

/// The plaintext parts of `response`, in order, to seal: the answer
/// without its cookies, then (if it kept any) its cookies.
pub fn plaintext_parts(response: &StoredResponse) -> Vec<(SealedPart, Vec<u8>)> {
    let without = response.without_cookies();
    let mut parts = vec![(SealedPart::Answer, encode(&without))];
    if response.keeps_cookies() {
        parts.push((SealedPart::Cookies, encode(&response.cookies_only())));
    }
    parts
}

/// The answer whose parts were opened into `answer` and `cookies`.
///
/// # Errors
/// A [`DecodeError`] when a part is not what [`plaintext_parts`] wrote.
pub fn opened(answer: &[u8], cookies: Option<&[u8]>) -> Result<StoredResponse, DecodeError> {
    let mut response = decode(answer)?;
    if let Some(cookies) = cookies {
        response.headers.extend(decode(cookies)?.headers);
    }
    Ok(response)
}

fn encode(response: &StoredResponse) -> Vec<u8> {
    let mut out = Writer(Vec::with_capacity(response.body.as_ref().map_or(0, Vec::len) + 64));
    write_response(&mut out, response);
    out.0
}

fn decode(bytes: &[u8]) -> Result<StoredResponse, DecodeError> {
    let mut r = Reader(bytes);
    let response = read_response(&mut r)?;
    match r.0.len() {
        0 => Ok(response),
        n => Err(DecodeError::TrailingBytes(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::cookie_jar;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn signed_in() -> StoredResponse {
        let headers = vec![
            ("Location".to_owned(), "/home".to_owned()),
            ("Set-Cookie".to_owned(), "sid=s1; HttpOnly".to_owned()),
            ("Content-Type".to_owned(), "text/plain".to_owned()),
        ];
        StoredResponse::capture(303, headers, b"welcome".to_vec(), 100, None, Some(&cookie_jar(Some("c=1"))))
    }

    #[test]
    fn the_parts_open_into_the_answer_cookies_last() {
        let response = signed_in();
        let parts = plaintext_parts(&response);
        assert_eq!(parts.iter().map(|(part, _)| *part).collect::<Vec<_>>(), [SealedPart::Answer, SealedPart::Cookies]);
        let back = opened(&parts[0].1, Some(&parts[1].1)).unwrap();
        assert_eq!(back.status, 303);
        assert_eq!(back.body.as_deref(), Some(&b"welcome"[..]));
        let mut want = response.headers.clone();
        want.sort();
        let mut got = back.headers.clone();
        got.sort();
        assert_eq!(got, want, "every header, the cookies and their jar included");
        assert!(back.keeps_cookies());
        // The answer part alone is the answer without its cookies: what a KV copy holds.
        assert_eq!(opened(&parts[0].1, None).unwrap(), response.without_cookies());
        let answer_part = String::from_utf8_lossy(&parts[0].1);
        assert!(!answer_part.contains("sid=s1"), "no cookie in the answer part");
    }

    #[test]
    fn an_answer_without_cookies_is_one_part() {
        let response = StoredResponse { status: 201, headers: vec![], body: None };
        let parts = plaintext_parts(&response);
        assert_eq!(parts.len(), 1);
        assert_eq!(opened(&parts[0].1, None).unwrap(), response, "an omitted body stays omitted");
    }

    #[test]
    fn associated_data_binds_the_part_and_the_record() {
        let (a, b) = (RecordName([1; 32]), RecordName([2; 32]));
        assert_ne!(SealedPart::Answer.associated_data(&a), SealedPart::Answer.associated_data(&b));
        assert_ne!(SealedPart::Answer.associated_data(&a), SealedPart::Cookies.associated_data(&a));
    }

    #[test]
    fn a_sealed_copy_drops_the_cookies_part() {
        let sealed = StoredAnswer::Sealed(SealedAnswer {
            key_id: KeyId([1, 2, 3, 4]),
            answer: vec![1; 40],
            cookies: Some(vec![2; 40]),
        });
        assert!(sealed.keeps_cookies());
        let copy = sealed.without_cookies();
        assert!(!copy.keeps_cookies());
        assert_eq!(copy.sealed_by(), Some(KeyId([1, 2, 3, 4])));
        assert_eq!(copy.plain(), None);
    }

    #[test]
    fn garbage_never_opens_as_an_answer() {
        assert!(opened(b"", None).is_err());
        assert!(opened(&[0; 5], None).is_err());
        let mut part = plaintext_parts(&signed_in()).remove(0).1;
        part.push(0);
        assert_eq!(opened(&part, None), Err(DecodeError::TrailingBytes(1)));
    }
}
