//! Which requests are covered, and which must carry a key (SPEC §1):
//! `IDEMPOTENCY_PATHS` and `IDEMPOTENCY_REQUIRED_PATHS` patterns, and the
//! [`KeyRule`] a request falls under.

use std::fmt;
use std::str::FromStr;

use crate::core::request::key::{IdempotencyKey, KeyRefusal};
use crate::core::request::target::CanonicalPath;

/// One entry of `IDEMPOTENCY_PATHS` or `IDEMPOTENCY_REQUIRED_PATHS`, or a
/// route's path: an exact path, or a prefix ending in `*`.
///
/// A pattern matches a request's [`CanonicalPath`], and is itself read in
/// canonical form (SPEC §13): `/v1/Charges/` and `/v1/charges` are one
/// pattern, and each matches `/v1/charges`, `/V1//charges/` and every other
/// spelling of that path. A prefix that ends in `/*` also matches the path
/// without its trailing slash, so `/v1/payments/*` covers `/v1/payments`
/// itself; `/*` matches every path.
///
/// ```
/// use oncekey::core::{CanonicalPath, PathPattern};
/// let path = |p: &str| CanonicalPath::of(p);
/// let payments: PathPattern = "/v1/payments/*".parse().unwrap();
/// assert!(payments.matches(&path("/v1/payments")) && payments.matches(&path("/v1/payments/pi_1")));
/// assert!(!payments.matches(&path("/v1/paymentsX")));
/// let charges: PathPattern = "/v1/charges".parse().unwrap();
/// assert!(charges.matches(&path("/v1/charges")) && !charges.matches(&path("/v1/charges/ch_1")));
/// assert!(charges.matches(&path("/V1//charges/")), "any spelling of the path");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathPattern {
    /// The entry as written (trimmed): how errors and logs name it.
    written: String,
    /// What it matches, in canonical form: the path, or the prefix
    /// (ending in `/` when the entry's prefix did, `/` alone for `/*`).
    canonical: String,
    /// Whether it is a prefix (written with a last `*`).
    prefix: bool,
}

/// Why a path pattern is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path pattern \"{pattern}\" {reason}")]
pub struct PathPatternError {
    /// The entry as written (trimmed).
    pub pattern: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FromStr for PathPattern {
    type Err = PathPatternError;

    /// Parses one entry, trimmed.
    ///
    /// # Errors
    /// An empty entry, one that does not start with `/`, has `*` anywhere but
    /// last, or holds `?`, `#`, whitespace, control or non-ASCII characters
    /// (a received path has none of those, so the pattern could never match).
    fn from_str(entry: &str) -> Result<Self, Self::Err> {
        let pattern = entry.trim();
        let bad = |reason| Err(PathPatternError { pattern: pattern.to_owned(), reason });
        if pattern.is_empty() {
            return bad("is empty");
        }
        if !pattern.starts_with('/') {
            return bad("must start with `/`");
        }
        if !pattern.bytes().all(|b| b.is_ascii_graphic()) {
            return bad("must be visible ASCII (percent-encode the rest, as in the request's path)");
        }
        if pattern.contains(['?', '#']) {
            return bad("must be a path only, without `?` or `#`");
        }
        let (path, prefix) = match pattern.strip_suffix('*') {
            Some(prefix) if prefix.contains('*') => return bad("may have `*` only as its last character"),
            Some(prefix) => (prefix, true),
            None if pattern.contains('*') => return bad("may have `*` only as its last character"),
            None => (pattern, false),
        };
        let mut canonical = CanonicalPath::of(path).as_str().to_owned();
        if prefix && path.ends_with('/') && canonical != "/" {
            canonical.push('/');
        }
        Ok(Self { written: pattern.to_owned(), canonical, prefix })
    }
}

impl fmt::Display for PathPattern {
    /// The entry as written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

impl PathPattern {
    /// Whether the request's path matches, in whatever spelling it came.
    pub fn matches(&self, path: &CanonicalPath) -> bool {
        self.matches_canonical(path.as_str())
    }

    fn matches_canonical(&self, path: &str) -> bool {
        let pattern = self.canonical.as_str();
        match self.prefix {
            false => path == pattern,
            true => path.starts_with(pattern) || pattern.strip_suffix('/').is_some_and(|dir| path == dir),
        }
    }

    /// Whether every path `inner` matches, this one matches too: a route
    /// that comes after one that covers it can never match (SPEC §13).
    pub(crate) fn covers(&self, inner: &Self) -> bool {
        match (self.prefix, inner.prefix) {
            (_, false) => self.matches_canonical(&inner.canonical),
            (false, true) => false,
            // `q*` also matches `q` less its trailing slash.
            (true, true) => {
                inner.canonical.starts_with(self.canonical.as_str())
                    && inner.canonical.strip_suffix('/').is_none_or(|dir| self.matches_canonical(dir))
            }
        }
    }

    /// Parses a comma-separated list of patterns, each trimmed.
    ///
    /// ```
    /// use oncekey::core::PathPattern;
    /// assert_eq!(PathPattern::parse_list(" /v1/charges , /v1/payments/* ").unwrap().len(), 2);
    /// assert!(PathPattern::parse_list("/v1/charges,,/v1/refunds").is_err());
    /// ```
    ///
    /// # Errors
    /// The first entry that is not a pattern; an empty entry (`/a,,/b`, a
    /// trailing comma, or an empty list) is one.
    pub fn parse_list(list: &str) -> Result<Vec<Self>, PathPatternError> {
        list.split(',').map(str::parse).collect()
    }
}

/// What a request needs, from its method and path (SPEC §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRule {
    /// Not covered: passed through untouched, key or not.
    Uncovered,
    /// Covered: protected when it has a key, passed through without one.
    Optional,
    /// Covered, and a key is required: without one, 400 `missing-key`.
    Required,
}

impl KeyRule {
    /// The key this request is protected under, from its `Idempotency-Key`
    /// header (`None` when absent): `Ok(None)` passes it through.
    ///
    /// ```
    /// use oncekey::core::{KeyRefusal, KeyRule};
    /// assert_eq!(KeyRule::Uncovered.key(Some(b"not a key")), Ok(None));
    /// assert_eq!(KeyRule::Optional.key(None), Ok(None));
    /// assert_eq!(KeyRule::Required.key(None), Err(KeyRefusal::Missing));
    /// assert_eq!(KeyRule::Optional.key(Some(b"k-1")).unwrap().unwrap().as_str(), "k-1");
    /// ```
    ///
    /// # Errors
    /// [`KeyRefusal::Missing`] when a required key is absent,
    /// [`KeyRefusal::Invalid`] when a covered request's key is malformed.
    pub fn key(self, header: Option<&[u8]>) -> Result<Option<IdempotencyKey>, KeyRefusal> {
        match (self, header) {
            (Self::Uncovered, _) | (Self::Optional, None) => Ok(None),
            (Self::Required, None) => Err(KeyRefusal::Missing),
            (_, Some(raw)) => {
                IdempotencyKey::parse_bytes(raw).map(Some).map_err(|e| KeyRefusal::Invalid(e.to_string()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn pattern(p: &str) -> PathPattern {
        p.parse().unwrap_or_else(|e| panic!("{p:?}: {e}"))
    }

    #[test]
    fn parses_patterns_in_canonical_form() {
        // (written, canonical, prefix)
        let rows = [
            ("/v1/charges", "/v1/charges", false),
            (" /v1/charges ", "/v1/charges", false),
            ("/V1//Charges/", "/v1/charges", false),
            ("/", "/", false),
            ("/*", "/", true),
            ("/v1/payments/*", "/v1/payments/", true),
            ("/v1/Payments//*", "/v1/payments/", true),
            ("/v1/pay*", "/v1/pay", true),
            ("/caf%C3%A9", "/caf%c3%a9", false),
            ("/%73hop/orders", "/shop/orders", false),
        ];
        for (raw, canonical, prefix) in rows {
            let parsed = pattern(raw);
            assert_eq!((parsed.canonical.as_str(), parsed.prefix), (canonical, prefix), "{raw:?}");
            assert_eq!(parsed.to_string(), raw.trim(), "written back as written");
        }
    }

    #[test]
    fn refuses_what_could_never_match() {
        let rows = [
            ("", "is empty"),
            ("   ", "is empty"),
            ("v1/charges", "must start with `/`"),
            ("*", "must start with `/`"),
            ("https://api.example/v1", "must start with `/`"),
            ("/v1/*/charges", "may have `*` only as its last character"),
            ("/v1/**", "may have `*` only as its last character"),
            ("/v1/charges?x=1", "must be a path only, without `?` or `#`"),
            ("/v1/charges#top", "must be a path only, without `?` or `#`"),
            ("/v1/my charges", "must be visible ASCII (percent-encode the rest, as in the request's path)"),
            ("/v1/\tcharges", "must be visible ASCII (percent-encode the rest, as in the request's path)"),
            ("/v1/\u{7f}", "must be visible ASCII (percent-encode the rest, as in the request's path)"),
            ("/café", "must be visible ASCII (percent-encode the rest, as in the request's path)"),
        ];
        for (raw, reason) in rows {
            let err = raw.parse::<PathPattern>().expect_err(raw);
            assert_eq!(err.reason, reason, "{raw:?}");
            assert_eq!(err.pattern, raw.trim());
        }
    }

    #[test]
    fn matches_every_spelling_of_the_path() {
        // (pattern, path as received, matches)
        let rows = [
            ("/*", "/", true),
            ("/*", "/v1/anything/at/all", true),
            ("/*", "", true),
            ("/v1/charges", "/v1/charges", true),
            ("/v1/charges", "/v1/charges/", true),
            ("/v1/charges", "/v1//charges", true),
            ("/v1/charges", "/v1/Charges", true),
            ("/v1/charges", "/v1/%63harges", true),
            ("/v1/charges", "/v1/charges;x", true),
            ("/v1/charges", "/v1/x/../charges", true),
            ("/v1/charges", "/v1/charges/ch_1", false),
            ("/v1/charges", "/v1/charge", false),
            ("/v1/charges", "/v1/charges%2F", true),
            ("/v1/charges", "/v1%2Fcharges", true),
            ("/v1/payments/*", "/v1/payments", true),
            ("/v1/payments/*", "/v1/payments/", true),
            ("/v1/payments/*", "/v1/payments/pi_1", true),
            ("/v1/payments/*", "/v1/payments/pi_1/capture", true),
            ("/v1/payments/*", "/V1/Payments//pi_1", true),
            ("/v1/payments/*", "/v1/paymentsX", false),
            ("/v1/payments/*", "/v1/payment", false),
            ("/v1/payments/*", "/v2/payments/pi_1", false),
            ("/v1/payments/*", "/v1/payments/../refunds", false),
            ("/v1/pay*", "/v1/pay", true),
            ("/v1/pay*", "/v1/payments", true),
            ("/v1/pay*", "/v1/pa", false),
            ("/caf%C3%A9", "/caf%C3%A9", true),
            ("/caf%C3%A9", "/caf%c3%a9", true),
        ];
        for (raw, path, expected) in rows {
            assert_eq!(pattern(raw).matches(&CanonicalPath::of(path)), expected, "{raw:?} on {path:?}");
        }
    }

    #[test]
    fn a_pattern_covers_what_it_matches() {
        // (outer, inner, covers)
        let rows = [
            ("/*", "/v1/charges", true),
            ("/*", "/v1/*", true),
            ("/v1/*", "/v1", true),
            ("/v1/*", "/V1/Charges/", true),
            ("/v1/*", "/v1/charges/*", true),
            ("/v1/*", "/v2/*", false),
            ("/v1/charges", "/v1/charges/*", false),
            ("/v1/charges", "/V1/CHARGES", true),
            ("/v1/pay*", "/v1/payments/*", true),
            ("/v1/payments/*", "/v1/pay*", false),
        ];
        for (outer, inner, expected) in rows {
            assert_eq!(pattern(outer).covers(&pattern(inner)), expected, "{outer:?} over {inner:?}");
        }
    }

    #[test]
    fn lists_refuse_empty_entries() {
        assert_eq!(
            PathPattern::parse_list("/v1/charges, /v1/payments/*").unwrap(),
            vec![pattern("/v1/charges"), pattern("/v1/payments/*")]
        );
        for bad in ["", " ", "/a,,/b", "/a,", ",/a", "/a, b"] {
            assert!(PathPattern::parse_list(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_rule_decides_the_key() {
        let valid: Option<&[u8]> = Some(b"k-1");
        let invalid: Option<&[u8]> = Some(b"a b");
        let key = |k: &str| Ok(Some(IdempotencyKey::parse(k).unwrap()));
        let invalid_key = IdempotencyKey::parse_bytes(b"a b").unwrap_err().to_string();
        // (rule, header, result)
        let rows = [
            (KeyRule::Uncovered, None, Ok(None)),
            (KeyRule::Uncovered, valid, Ok(None)),
            (KeyRule::Uncovered, invalid, Ok(None)),
            (KeyRule::Optional, None, Ok(None)),
            (KeyRule::Optional, valid, key("k-1")),
            (KeyRule::Optional, invalid, Err(KeyRefusal::Invalid(invalid_key.clone()))),
            (KeyRule::Required, None, Err(KeyRefusal::Missing)),
            (KeyRule::Required, valid, key("k-1")),
            (KeyRule::Required, invalid, Err(KeyRefusal::Invalid(invalid_key))),
        ];
        for (rule, header, expected) in rows {
            assert_eq!(rule.key(header), expected, "{rule:?} {header:?}");
        }
    }
}
