//! Scope (SPEC §2): whose key is it? The record's name is a hash of the
//! host, the caller's identity and the key, never the raw key.

use std::fmt;
use std::str::FromStr;

use crate::core::request::digest::{PartHasher, hex};
use crate::core::request::key::IdempotencyKey;
use crate::core::request::target::CanonicalPath;

/// Where a caller's identity is read from: `header:<name>` or
/// `cookie:<name>` in `IDEMPOTENCY_SCOPE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScopeSource {
    /// A request header, such as `authorization`. Names are lower-case.
    Header(String),
    /// A cookie from the `Cookie` header, such as `session`.
    Cookie(String),
}

/// Why an `IDEMPOTENCY_SCOPE` entry is not a source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scope entry \"{0}\" is not `header:<name>` or `cookie:<name>`")]
pub struct ScopeSourceError(pub String);

impl FromStr for ScopeSource {
    type Err = ScopeSourceError;

    fn from_str(entry: &str) -> Result<Self, Self::Err> {
        let bad = || ScopeSourceError(entry.to_owned());
        let (kind, name) = entry.trim().split_once(':').ok_or_else(bad)?;
        let name = name.trim();
        if !is_token(name) {
            return Err(bad());
        }
        match kind.trim().to_ascii_lowercase().as_str() {
            "header" => Ok(Self::Header(name.to_ascii_lowercase())),
            "cookie" => Ok(Self::Cookie(name.to_owned())),
            _ => Err(bad()),
        }
    }
}

/// Whether `name` is an RFC 9110 token, the syntax of a field name.
pub(crate) fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl fmt::Display for ScopeSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Header(name) => write!(f, "header:{name}"),
            Self::Cookie(name) => write!(f, "cookie:{name}"),
        }
    }
}

impl ScopeSource {
    /// The request header this source reads: its own, or `cookie`.
    pub fn header(&self) -> &str {
        match self {
            Self::Header(name) => name,
            Self::Cookie(_) => "cookie",
        }
    }

    /// Every occurrence of this source's value in a request, in order and
    /// as sent (quotes kept), given a header lookup (case-insensitive
    /// names): a repeated header arrives joined by the runtime, as one; a
    /// cookie tossed in beside the real one (`session=tossed;
    /// session=victim`) is one more occurrence (SPEC §2), so no two
    /// different sets of credentials read alike, whichever one the app
    /// reads. None: the header or cookie is missing.
    ///
    /// ```
    /// use oncekey::core::ScopeSource;
    /// let session = ScopeSource::Cookie("session".into());
    /// let cookies = |value: &'static str| move |_: &str| Some(value);
    /// assert_eq!(session.occurrences(cookies("theme=dark; session=abc")), ["abc"]);
    /// assert_eq!(session.occurrences(cookies("session=tossed; session=victim")), ["tossed", "victim"]);
    /// assert_eq!(session.occurrences(cookies(r#"session="abc""#)), [r#""abc""#]);
    /// ```
    pub fn occurrences<'a>(&self, header: impl Fn(&str) -> Option<&'a str>) -> Vec<&'a str> {
        let Some(value) = header(self.header()) else { return Vec::new() };
        match self {
            Self::Header(_) => vec![value],
            Self::Cookie(name) => value
                .split(';')
                .filter_map(|pair| pair.trim().split_once('='))
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.trim())
                .collect(),
        }
    }
}

/// The name of a key's record: SHA-256 over the length-prefixed host, each
/// scope source with its value (or its absence), and the key. Two callers
/// with different identities get different names for the same key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordName(pub [u8; 32]);

impl RecordName {
    /// Names the record for `key` sent to `host` by the caller whose identity
    /// `header` reveals through `sources`.
    ///
    /// ```
    /// use oncekey::core::{IdempotencyKey, RecordName, ScopeSource};
    /// let key = IdempotencyKey::parse("k1").unwrap();
    /// let sources = [ScopeSource::Header("authorization".into())];
    /// let alice = RecordName::new("shop.example", &sources, |_| Some("Bearer alice"), &key);
    /// let bob = RecordName::new("shop.example", &sources, |_| Some("Bearer bob"), &key);
    /// assert_ne!(alice, bob);
    /// ```
    pub fn new<'a>(
        host: &str,
        sources: &[ScopeSource],
        header: impl Fn(&str) -> Option<&'a str>,
        key: &IdempotencyKey,
    ) -> Self {
        let mut hasher = PartHasher::new("oncekey/record/1");
        hasher.part(host.to_ascii_lowercase().as_bytes());
        for source in sources {
            hasher.part(source.to_string().as_bytes());
            let occurrences = source.occurrences(&header);
            // A tag byte keeps "absent" apart from every present value; one
            // occurrence names the record as it always has.
            if occurrences.is_empty() {
                hasher.part(&[0]);
            }
            for value in occurrences {
                hasher.part(&[1]).part(value.as_bytes());
            }
        }
        hasher.part(key.as_str().as_bytes());
        Self(hasher.finish())
    }

    /// Names the record of a webhook delivery (SPEC §13): the delivery id
    /// `key` at the endpoint whose canonical path is `path` (less a format
    /// suffix: [`CanonicalPath::endpoint`]) — never the
    /// `Host`, since one worker answers on several hostnames (its own
    /// `workers.dev` name among them) and a delivery resent under another
    /// must find the same record. Each endpoint has its own records: a
    /// sender that delivers one event to two endpoints (Stripe sends the
    /// same event `id` to every endpoint subscribed to it) has each run
    /// once, neither answered with the other's result. No caller identity
    /// counts: the signature, checked before, says who sent it.
    ///
    /// `unsigned_id_body` is the delivery's body when its sender's signature
    /// does not cover the id (GitHub, Shopify: [`Sender::signs_id`]): its
    /// digest names the record too, so a captured delivery resent under a
    /// future delivery's id lands in a record of its own and can never
    /// block that delivery.
    ///
    /// [`Sender::signs_id`]: crate::core::Sender::signs_id
    ///
    /// ```
    /// use oncekey::core::{CanonicalPath, IdempotencyKey, RecordName};
    /// let event = IdempotencyKey::parse("evt_1").unwrap();
    /// let billing = RecordName::of_delivery(&CanonicalPath::of("/hooks/billing"), &event, None);
    /// assert_eq!(billing, RecordName::of_delivery(&CanonicalPath::of("/Hooks//billing/"), &event, None));
    /// assert_ne!(billing, RecordName::of_delivery(&CanonicalPath::of("/hooks/analytics"), &event, None));
    /// assert_ne!(billing, RecordName::new("api.example", &[], |_| None, &event));
    /// let github = |body: &[u8]| RecordName::of_delivery(&CanonicalPath::of("/hooks/github"), &event, Some(body));
    /// assert_ne!(github(b"{\"a\":1}"), github(b"{\"a\":2}"));
    /// ```
    pub fn of_delivery(path: &CanonicalPath, key: &IdempotencyKey, unsigned_id_body: Option<&[u8]>) -> Self {
        let mut hasher = PartHasher::new("oncekey/record/webhook/2");
        hasher.part(path.endpoint().as_bytes()).part(key.as_str().as_bytes());
        if let Some(body) = unsigned_id_body {
            let mut digest = PartHasher::new("oncekey/webhook/body/1");
            digest.part(body);
            hasher.part(&digest.finish());
        }
        Self(hasher.finish())
    }

    /// Lower-case hex: the Durable Object's name and the KV key.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

impl fmt::Debug for RecordName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordName({})", self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn key(k: &str) -> IdempotencyKey {
        IdempotencyKey::parse(k).unwrap()
    }

    #[test]
    fn parses_sources() {
        assert_eq!("header:Authorization".parse(), Ok(ScopeSource::Header("authorization".into())));
        assert_eq!(" cookie:session ".parse(), Ok(ScopeSource::Cookie("session".into())));
        for bad in ["", "authorization", "header:", "query:x", "header:a b", "cookie:é"] {
            assert!(bad.parse::<ScopeSource>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn reads_cookies() {
        let cookie = ScopeSource::Cookie("session".into());
        let headers = |name: &str| (name == "cookie").then_some("theme=dark; session=abc; x=1");
        assert_eq!(cookie.occurrences(headers), ["abc"]);
        assert!(cookie.occurrences(|_| Some("sessionx=1")).is_empty());
        assert!(cookie.occurrences(|_| None).is_empty());
        assert_eq!(cookie.header(), "cookie");
        assert_eq!(ScopeSource::Header("x-api-key".into()).header(), "x-api-key");
    }

    #[test]
    fn each_part_of_the_scope_counts() {
        let sources = [ScopeSource::Header("authorization".into()), ScopeSource::Cookie("session".into())];
        let name = |host: &str, auth: Option<&'static str>, cookie: Option<&'static str>, k: &str| {
            RecordName::new(host, &sources, |h| if h == "authorization" { auth } else { cookie }, &key(k))
        };
        let base = name("a.example", Some("Bearer 1"), Some("session=s"), "k");
        assert_eq!(base, name("A.example", Some("Bearer 1"), Some("session=s"), "k"));
        assert_ne!(base, name("b.example", Some("Bearer 1"), Some("session=s"), "k"));
        assert_ne!(base, name("a.example", Some("Bearer 2"), Some("session=s"), "k"));
        assert_ne!(base, name("a.example", None, Some("session=s"), "k"));
        assert_ne!(base, name("a.example", Some("Bearer 1"), Some("session=t"), "k"));
        assert_ne!(base, name("a.example", Some("Bearer 1"), Some("session=s"), "k2"));
        // Absent and empty are different identities.
        assert_ne!(name("a", None, None, "k"), name("a", Some(""), None, "k"));
    }

    #[test]
    fn a_tossed_cookie_never_shares_the_victim_s_record() {
        // SPEC §2: every occurrence counts, in order and as sent.
        let sources = [ScopeSource::Cookie("session".into())];
        let name = |cookie: &'static str| RecordName::new("shop.example", &sources, |_| Some(cookie), &key("k"));
        let victim = name("session=victim");
        for other in [
            "session=tossed; session=victim",
            "session=victim; session=tossed",
            "session=tossed",
            r#"session="victim""#,
            "session=victim; session=victim",
        ] {
            assert_ne!(name(other), victim, "{other}");
        }
        assert_eq!(name(" theme=dark ;session=victim"), victim, "other cookies and spacing do not count");
        assert_ne!(name("session=a; session=b"), name("session=b; session=a"), "in order");
    }

    #[test]
    fn known_value_is_stable() {
        // Checked with Python's hashlib over the same length-prefixed parts.
        let sources = [ScopeSource::Header("authorization".into())];
        let name = RecordName::new("shop.example", &sources, |_| Some("Bearer alice"), &key("k1"));
        assert_eq!(name.to_hex(), "1248b6522e56491cacf51939e0318971cfeaf9ffd049bc70db7e51679451bf03");
    }

    #[test]
    fn name_never_holds_the_raw_key() {
        let n = RecordName::new("h", &[], |_| None, &key("abcdef"));
        assert!(!n.to_hex().contains("abcdef"));
        assert_eq!(format!("{n:?}"), format!("RecordName({})", n.to_hex()));
        assert_eq!(n.to_hex().len(), 64);
    }
}
