//! The operator's paths (SPEC §12): with `IDEMPOTENCY_ADMIN_TOKEN` set,
//! `GET /.well-known/oncekey/records/{record}` reads a record's state and
//! `POST …/records/{record}/release` releases an in-flight attempt. Which
//! request is one of them, whether its token is right, and which record it
//! names are decided here; without the token the paths are ordinary ones
//! and go to the origin. Paths are read in canonical form (SPEC §13), and
//! a request that carries the token on any other path is refused: the
//! token never leaves the layer.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::core::request::scope::RecordName;
use crate::core::request::target::CanonicalPath;

/// Where the admin paths start.
pub const ADMIN_PREFIX: &str = "/.well-known/oncekey/records";

/// `IDEMPOTENCY_ADMIN_TOKEN`: the bearer token of the admin paths. Its
/// `Debug` never shows it, so a logged configuration does not leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken(String);

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}

impl AdminToken {
    /// The token, if `value` can be sent in an `Authorization: Bearer`
    /// header: one or more visible ASCII characters, no spaces.
    ///
    /// ```
    /// use oncekey::core::AdminToken;
    /// assert!(AdminToken::new("9f8e7d6c").is_some());
    /// assert!(AdminToken::new("two words").is_none() && AdminToken::new("").is_none());
    /// assert_eq!(format!("{:?}", AdminToken::new("s3cret").unwrap()), "AdminToken(<redacted>)");
    /// ```
    pub fn new(value: &str) -> Option<Self> {
        (!value.is_empty() && value.bytes().all(|b| b.is_ascii_graphic())).then(|| Self(value.to_owned()))
    }

    /// Whether an `Authorization` header value is `Bearer <this token>`
    /// (the scheme in any case). The tokens are compared through their
    /// SHA-256 digests, every byte of them, so the time taken says nothing
    /// about how much of a guess was right, nor about the token's length.
    ///
    /// ```
    /// use oncekey::core::AdminToken;
    /// let token = AdminToken::new("s3cret").unwrap();
    /// assert!(token.admits(Some("Bearer s3cret")) && token.admits(Some("bearer  s3cret")));
    /// assert!(!token.admits(Some("Bearer s3cre")) && !token.admits(Some("Basic s3cret")) && !token.admits(None));
    /// ```
    pub fn admits(&self, authorization: Option<&str>) -> bool {
        let Some((scheme, given)) = authorization.and_then(|value| value.trim().split_once(' ')) else { return false };
        let digest = |bytes: &[u8]| -> [u8; 32] { Sha256::digest(bytes).into() };
        let same = constant_time_eq(&digest(given.trim_start().as_bytes()), &digest(self.0.as_bytes()));
        scheme.eq_ignore_ascii_case("bearer") & same
    }

    /// Whether this token is in `text` in any form: anywhere in it as sent
    /// (another scheme, a tab, two `Authorization` headers joined, a query's
    /// `token=…`, a token holding `=` or `&`), percent-decoded (a query's
    /// `%2B`), or inside any run of base64 digits (`Basic` credentials,
    /// padded or not, either alphabet). Each place is
    /// compared byte for byte whatever differs, so how long the search takes
    /// says nothing of how much of the token matched.
    ///
    /// ```
    /// use oncekey::core::AdminToken;
    /// let token = AdminToken::new("s3cr+t=").unwrap();
    /// for text in ["Token s3cr+t=", "Bearer\ts3cr+t=", "Bearer x, Bearer s3cr+t=", "a=1&token=s3cr%2Bt%3D",
    ///              "xs3cr+t=y", "Basic dXNlcjpzM2NyK3Q9", "Basic=dXNlcjpzM2NyK3Q9;", "Bearer czNjcit0PQ",
    ///              "auth=Basic+dXNlcjpzM2NyK3Q9", "t=s3cr%252Bt%253D"] {
    ///     assert!(token.appears_in(text), "{text}");
    /// }
    /// assert!(!token.appears_in("Bearer s3cr+t") && !token.appears_in("s3cr t="));
    /// ```
    pub fn appears_in(&self, text: &str) -> bool {
        let token = self.0.as_bytes();
        let decoded: Vec<u8> = percent_encoding::percent_decode(text.as_bytes()).collect();
        // Encoded twice, as a query built from an encoded value can be.
        let twice: Vec<u8> = percent_encoding::percent_decode(&decoded).collect();
        // Each form once: a text with no escapes decodes to itself.
        let mut forms = vec![text.as_bytes(), &decoded, &twice];
        forms.dedup();
        // Each run of base64 digits from each of its first four places: a
        // word glued on before it (`Basic+…`, a form-encoded space) shifts
        // where the encoding starts.
        let in_base64 = forms
            .iter()
            .flat_map(|text| text.split(|b| sextet(*b).is_none()))
            .flat_map(|run| (0..4).filter_map(move |skip| run.get(skip..)))
            .filter(|run| run.len() >= 4)
            .fold(false, |found, run| found | holds(&lenient_base64(run), token));
        forms.iter().fold(in_base64, |found, form| found | holds(form, token))
    }
}

/// A base64 digit's value, standard (`+/`) or URL-safe (`-_`).
fn sextet(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// The bytes a run of base64 digits stands for, as lenient decoders read
/// it: padded or not, either alphabet, the last partial byte dropped.
fn lenient_base64(run: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(run.len() * 3 / 4);
    let (mut bits, mut held) = (0u32, 0u32);
    for value in run.iter().filter_map(|b| sextet(*b)) {
        bits = bits << 6 | u32::from(value);
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
            bits &= (1 << held) - 1;
        }
    }
    out
}

/// Whether `needle` (never empty) is somewhere in `haystack`: every place
/// compared, each byte for byte to its end.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .fold(false, |found, place| found | (place.iter().zip(needle).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0))
}

/// Whether two digests are equal, looking at every byte whatever differs.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// What an admitted admin request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminRequest {
    /// `GET …/records/{record}`: the record's state.
    Inspect(RecordName),
    /// `POST …/records/{record}/release`: release its in-flight attempt.
    Release {
        /// The record.
        name: RecordName,
        /// `?force=true`: release it even while it runs.
        force: bool,
        /// `?completed=true`: forget a completed answer, so the next
        /// request runs again (a receiver's bug fixed after it answered).
        completed: bool,
    },
}

/// Why a request to an admin path is refused: the request layer's own
/// refusal, answered by the output layer as its problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminRefusal {
    /// A wrong or missing token: 401 `unauthorized`.
    Unauthorized,
    /// The path names no record: 404 `record-not-found`, saying why.
    NoRecord(&'static str),
    /// The admin token on a path that is no admin path (a misspelled one):
    /// 404 `record-not-found`, and the request goes no further, so the
    /// token never reaches the origin (SPEC §12).
    NotAdminPath,
    /// Another method than the path takes: 405 `method-not-allowed`.
    MethodNotAllowed {
        /// The one method the path takes.
        allow: &'static str,
    },
}

impl AdminRequest {
    /// The admin request a request is, when the token is set and its
    /// canonical path is under [`ADMIN_PREFIX`]: `None` for every other
    /// request (it goes on as usual) — but one that carries the token, which
    /// is refused ([`AdminRefusal::NotAdminPath`]). On an admin path the
    /// token is checked first, so a caller without it learns nothing about
    /// the path: 401 `unauthorized`; then the path, 404 `record-not-found`
    /// for anything but a record name (64 hex digits) with an optional
    /// `/release`; then the method, 405.
    ///
    /// ```
    /// use oncekey::core::{AdminRefusal, AdminRequest, AdminToken, CanonicalPath};
    /// let token = AdminToken::new("s3cret").unwrap();
    /// let path = CanonicalPath::of(&format!("/.well-known/oncekey/records/{}", "ab".repeat(32)));
    /// let auth = Some("Bearer s3cret");
    /// assert!(matches!(AdminRequest::of(Some(&token), "GET", &path, None, auth), Some(Ok(AdminRequest::Inspect(_)))));
    /// assert_eq!(AdminRequest::of(Some(&token), "GET", &path, None, None), Some(Err(AdminRefusal::Unauthorized)));
    /// assert_eq!(AdminRequest::of(None, "GET", &path, None, auth), None, "no token: the origin's path");
    /// let elsewhere = CanonicalPath::of("/api/orders");
    /// assert_eq!(AdminRequest::of(Some(&token), "GET", &elsewhere, None, None), None);
    /// assert_eq!(AdminRequest::of(Some(&token), "GET", &elsewhere, None, auth), Some(Err(AdminRefusal::NotAdminPath)));
    /// ```
    pub fn of(
        token: Option<&AdminToken>,
        method: &str,
        path: &CanonicalPath,
        query: Option<&str>,
        authorization: Option<&str>,
    ) -> Option<Result<Self, AdminRefusal>> {
        let token = token?;
        let path = path.as_str();
        let Some(rest) = path.strip_prefix(ADMIN_PREFIX).filter(|rest| rest.is_empty() || rest.starts_with('/')) else {
            // The token is the operator's: on any other path, in any form
            // (`Authorization` or the query), it is refused here, never
            // forwarded (SPEC §12).
            let carried = [authorization, query].into_iter().flatten().any(|text| token.appears_in(text));
            return carried.then_some(Err(AdminRefusal::NotAdminPath));
        };
        if !token.admits(authorization) {
            return Some(Err(AdminRefusal::Unauthorized));
        }
        let rest = rest.strip_prefix('/').unwrap_or(rest);
        let (record, release) = match rest.strip_suffix("/release") {
            Some(record) => (record, true),
            None => (rest, false),
        };
        let Some(name) = parse_record_name(record) else {
            return Some(Err(AdminRefusal::NoRecord(
                "The path names no record: a record's name is 64 lower-case hex digits, as every decision's log line \
                 carries it (`GET …/records/{record}`, `POST …/records/{record}/release`).",
            )));
        };
        Some(match (release, method) {
            (false, "GET") => Ok(Self::Inspect(name)),
            (true, "POST") => {
                let asks = |flag: &str| query.is_some_and(|q| q.split('&').any(|pair| pair == flag));
                Ok(Self::Release { name, force: asks("force=true"), completed: asks("completed=true") })
            }
            (false, _) => Err(AdminRefusal::MethodNotAllowed { allow: "GET" }),
            (true, _) => Err(AdminRefusal::MethodNotAllowed { allow: "POST" }),
        })
    }

    /// The record it names.
    pub fn name(&self) -> RecordName {
        match self {
            Self::Inspect(name) | Self::Release { name, .. } => *name,
        }
    }
}

/// A record name from its hex: exactly 64 lower-case hex digits.
fn parse_record_name(hex: &str) -> Option<RecordName> {
    let digits = hex.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let value = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut name = [0u8; 32];
    for (byte, pair) in name.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = value(pair[0])? << 4 | value(pair[1])?;
    }
    Some(RecordName(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use crate::core::IdempotencyKey;

    fn token() -> AdminToken {
        AdminToken::new("s3cret-T0ken").unwrap()
    }

    #[test]
    fn the_token_is_bearer_and_exact() {
        let t = token();
        for ok in ["Bearer s3cret-T0ken", "bearer s3cret-T0ken", "BEARER   s3cret-T0ken", " Bearer s3cret-T0ken "] {
            assert!(t.admits(Some(ok)), "{ok:?}");
        }
        for bad in [
            "",
            "Bearer",
            "Bearer ",
            "s3cret-T0ken",
            "Bearer s3cret-t0ken",
            "Bearer s3cret-T0ke",
            "Bearer s3cret-T0ken2",
            "Bearer s3cret-T0ken x",
            "Basic s3cret-T0ken",
            "Bearers3cret-T0ken",
        ] {
            assert!(!t.admits(Some(bad)), "{bad:?}");
        }
        assert!(!t.admits(None));
    }

    #[test]
    fn token_values_must_be_sendable_in_a_header() {
        for bad in ["", " ", "a b", "tab\there", "caf\u{e9}", "line\n"] {
            assert!(AdminToken::new(bad).is_none(), "{bad:?}");
        }
        assert!(AdminToken::new("a+b/c=_-.~!").is_some());
    }

    #[test]
    fn routes_names_and_methods() {
        let t = token();
        let name = RecordName::new("shop.example", &[], |_| None, &IdempotencyKey::parse("k1").unwrap());
        let hex = name.to_hex();
        let auth = Some("Bearer s3cret-T0ken");
        let of = |method: &str, path: &str| AdminRequest::of(Some(&t), method, &CanonicalPath::of(path), None, auth);
        let inspect = format!("{ADMIN_PREFIX}/{hex}");
        let release = format!("{ADMIN_PREFIX}/{hex}/release");
        assert_eq!(of("GET", &inspect), Some(Ok(AdminRequest::Inspect(name))));
        assert_eq!(of("POST", &release), Some(Ok(AdminRequest::Release { name, force: false, completed: false })));
        // Any spelling of the path is the path (SPEC §13).
        for spelling in [
            format!("{ADMIN_PREFIX}/{}", hex.to_uppercase()),
            format!("{ADMIN_PREFIX}/{hex}/"),
            format!("/.WELL-KNOWN/oncekey//records/{hex}"),
        ] {
            assert_eq!(of("GET", &spelling), Some(Ok(AdminRequest::Inspect(name))), "{spelling}");
        }
        for (query, force) in
            [("force=true", true), ("a=1&force=true", true), ("force=1", false), ("force=true2", false)]
        {
            let asked = AdminRequest::of(Some(&t), "POST", &CanonicalPath::of(&release), Some(query), auth);
            assert_eq!(asked, Some(Ok(AdminRequest::Release { name, force, completed: false })), "{query}");
        }
        assert_eq!(of("POST", &inspect), Some(Err(AdminRefusal::MethodNotAllowed { allow: "GET" })));
        assert_eq!(of("GET", &release), Some(Err(AdminRefusal::MethodNotAllowed { allow: "POST" })));
        let not_found = |path: &str| matches!(of("GET", path), Some(Err(AdminRefusal::NoRecord(_))));
        for path in [
            ADMIN_PREFIX.to_owned(),
            format!("{ADMIN_PREFIX}/"),
            format!("{ADMIN_PREFIX}/{}", &hex[..63]),
            format!("{ADMIN_PREFIX}/{hex}0"),
            format!("{ADMIN_PREFIX}/{}g", &hex[..63]),
            format!("{ADMIN_PREFIX}/{hex}/delete"),
            format!("{ADMIN_PREFIX}/x/{hex}"),
        ] {
            assert!(not_found(&path), "{path}");
        }
        // Not admin paths: without the token they go on to the origin; with
        // it (a misspelled admin path) they are refused, never forwarded.
        for path in [
            "/",
            "/api/orders",
            "/.well-known/oncekey",
            "/.well-known/oncekey/recordsX",
            "/.well-known/oncekey/records-x",
            "/.well-known/oncekey/record",
        ] {
            assert_eq!(of("GET", path), Some(Err(AdminRefusal::NotAdminPath)), "{path}");
            for (authorization, query) in [
                (Some("Bearer\ts3cret-T0ken"), None),
                (Some("Token s3cret-T0ken"), None),
                (Some("Bearer user, Bearer s3cret-T0ken"), None),
                (Some("s3cret-T0ken"), None),
                (None, Some("token=s3cret-T0ken")),
            ] {
                let carried = AdminRequest::of(Some(&t), "GET", &CanonicalPath::of(path), query, authorization);
                assert_eq!(carried, Some(Err(AdminRefusal::NotAdminPath)), "{path} {authorization:?} {query:?}");
            }
            let without = AdminRequest::of(Some(&t), "GET", &CanonicalPath::of(path), None, Some("Bearer user-token"));
            assert_eq!(without, None, "{path}");
        }
        // The token is checked before anything about the path is said.
        for (method, path) in [("GET", inspect.as_str()), ("DELETE", "/.well-known/oncekey/records/nope")] {
            assert_eq!(
                AdminRequest::of(Some(&t), method, &CanonicalPath::of(path), None, Some("Bearer wrong")),
                Some(Err(AdminRefusal::Unauthorized))
            );
        }
        assert_eq!(AdminRequest::of(None, "GET", &CanonicalPath::of(&inspect), None, auth), None);
    }
}
