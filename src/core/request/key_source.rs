//! Where a route's key comes from (SPEC §13): key sources, tried in order,
//! each value held to §1's rules wherever it was found.

use std::fmt;
use std::str::FromStr;

use crate::core::request::form_field::{FieldKey, read_field};
use crate::core::request::key::{IdempotencyKey, KeyRefusal};
use crate::core::request::paths::KeyRule;
use crate::core::request::scope::is_token;
use crate::core::text::json_pointer::{JsonPointer, JsonPointerError};
use crate::core::text::json_read::Json;

/// One place a route's key may be: `header:<name>`, `json:<JSON pointer>`
/// (a member of a JSON body) or `form:<field>` (a field of a form body).
///
/// ```
/// use oncekey::core::KeySource;
/// let sources: Vec<KeySource> = ["header:Idempotency-Key", "json:/request_id", "form:request_id"]
///     .iter()
///     .map(|s| s.parse().unwrap())
///     .collect();
/// assert_eq!(sources[0].to_string(), "header:idempotency-key");
/// assert!(!sources[0].reads_body() && sources[1].reads_body());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// A request header (its name in lower case), read as
    /// `Idempotency-Key` is: a bare token or a structured-field string.
    Header(String),
    /// The member of a JSON body a pointer names: a string (its characters
    /// are the key) or a number (as written). Absent, or `null`, is no key
    /// here. A body that is not plain JSON has none: an unknown escape, a
    /// lone surrogate or a member given twice anywhere in it (SPEC §13).
    Json(JsonPointer),
    /// A field of an `application/x-www-form-urlencoded` or
    /// `multipart/form-data` body, read as the `idempotency_key` field is
    /// (SPEC §8) but left in the body: it is the origin's own field.
    Form(String),
}

/// The key source of a route with none given: the `Idempotency-Key` header.
pub const DEFAULT_KEY_SOURCE: &str = "header:idempotency-key";

impl KeySource {
    /// [`DEFAULT_KEY_SOURCE`]: the `Idempotency-Key` header.
    ///
    /// ```
    /// use oncekey::core::{DEFAULT_KEY_SOURCE, KeySource};
    /// assert_eq!(KeySource::default_source().to_string(), DEFAULT_KEY_SOURCE);
    /// assert_eq!(DEFAULT_KEY_SOURCE.parse::<KeySource>().unwrap(), KeySource::default_source());
    /// ```
    pub fn default_source() -> Self {
        Self::Header("idempotency-key".to_owned())
    }

    /// Whether this is [`DEFAULT_KEY_SOURCE`], the header every request
    /// without a route is keyed by.
    ///
    /// ```
    /// use oncekey::core::KeySource;
    /// assert!("header:Idempotency-Key".parse::<KeySource>().unwrap().is_default());
    /// assert!(!"header:x-request-id".parse::<KeySource>().unwrap().is_default());
    /// assert!(!"json:/idempotency-key".parse::<KeySource>().unwrap().is_default());
    /// ```
    pub fn is_default(&self) -> bool {
        matches!(self, Self::Header(name) if name == "idempotency-key")
    }
}

/// Why a key source is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeySourceError {
    /// Not `header:`, `json:` or `form:` and a name.
    #[error("is not `header:<name>`, `json:<JSON pointer>` or `form:<field>`")]
    Unknown,
    /// `header:` and a name no header can have.
    #[error("names no header: a header's name is a token (letters, digits, `-`…)")]
    BadHeaderName,
    /// `form:` and nothing.
    #[error("names no form field")]
    EmptyField,
    /// `json:` and a pointer that is not one.
    #[error("names no member: {0}")]
    Pointer(JsonPointerError),
}

impl FromStr for KeySource {
    type Err = KeySourceError;

    /// Parses one source as written (not trimmed).
    ///
    /// # Errors
    /// A [`KeySourceError`] naming what is wrong with it.
    fn from_str(source: &str) -> Result<Self, Self::Err> {
        let (kind, rest) = source.split_once(':').ok_or(KeySourceError::Unknown)?;
        match kind {
            "header" if is_token(rest) => Ok(Self::Header(rest.to_ascii_lowercase())),
            "header" => Err(KeySourceError::BadHeaderName),
            "json" => rest.parse().map(Self::Json).map_err(KeySourceError::Pointer),
            "form" if !rest.is_empty() => Ok(Self::Form(rest.to_owned())),
            "form" => Err(KeySourceError::EmptyField),
            _ => Err(KeySourceError::Unknown),
        }
    }
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Header(name) => write!(f, "header:{name}"),
            Self::Json(pointer) => write!(f, "json:{pointer}"),
            Self::Form(field) => write!(f, "form:{field}"),
        }
    }
}

impl KeySource {
    /// Whether this source is in the body, so the body must be read before
    /// it can be tried.
    pub fn reads_body(&self) -> bool {
        !matches!(self, Self::Header(_))
    }
}

/// What a route's key sources found in a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyLookup {
    /// A key, from the first source that holds one.
    Found(IdempotencyKey),
    /// No source holds one (and, if keys are required there, that is
    /// `missing-key`): the request passes through unprotected.
    Absent,
    /// No header source holds one and a body source is next: read the body
    /// (within `maxBodyBytes`), then look again with it.
    NeedsBody,
}

/// The key of a request on a route whose key sources are `sources`, tried
/// in order, the first that holds a value deciding (a malformed value is
/// an error, not a reason to try the next). `header` looks a request
/// header up by lower-case name (`content-type` included); `body` is the
/// whole body once read, `None` before.
///
/// ```
/// use oncekey::core::{IdempotencyKey, KeyLookup, KeyRefusal, KeyRule, KeySource, find_key};
/// let sources: Vec<KeySource> = vec!["header:idempotency-key".parse().unwrap(), "json:/request_id".parse().unwrap()];
/// let json = |name: &str| (name == "content-type").then_some("application/json");
/// assert_eq!(find_key(&sources, KeyRule::Required, json, None), Ok(KeyLookup::NeedsBody));
/// let found = find_key(&sources, KeyRule::Required, json, Some(br#"{"request_id": "r-1", "amount": 5}"#));
/// assert_eq!(found, Ok(KeyLookup::Found(IdempotencyKey::parse("r-1").unwrap())));
/// assert_eq!(find_key(&sources, KeyRule::Required, json, Some(b"{}")), Err(KeyRefusal::Missing));
/// assert_eq!(find_key(&sources, KeyRule::Optional, json, Some(b"{}")), Ok(KeyLookup::Absent));
/// ```
///
/// # Errors
/// [`KeyRefusal::Invalid`], naming the source, when the first value found
/// breaks §1's rules (or, from a JSON body, is neither a string nor a
/// number); [`KeyRefusal::Missing`] when `rule` requires a key and no
/// source holds one.
pub fn find_key<'a>(
    sources: &[KeySource],
    rule: KeyRule,
    header: impl Fn(&str) -> Option<&'a str>,
    body: Option<&[u8]>,
) -> Result<KeyLookup, KeyRefusal> {
    if rule == KeyRule::Uncovered {
        return Ok(KeyLookup::Absent);
    }
    let invalid = |source: &KeySource, why: String| KeyRefusal::Invalid(format!("{source}: {why}"));
    // A JSON body is read once, for however many pointers.
    let mut json: Option<Option<Json>> = None;
    for source in sources {
        let found = match (source, body) {
            (KeySource::Header(name), _) => {
                header(name).map(|value| IdempotencyKey::parse(value).map_err(|e| invalid(source, e.to_string())))
            }
            (_, None) => return Ok(KeyLookup::NeedsBody),
            (KeySource::Json(pointer), Some(body)) => {
                let json = json.get_or_insert_with(|| std::str::from_utf8(body).ok().and_then(Json::parse));
                match json.as_ref().and_then(|json| json.pointer(pointer)) {
                    None | Some(Json::Null) => None,
                    Some(Json::String(text) | Json::Number(text)) => {
                        Some(IdempotencyKey::from_chars(text).map_err(|e| invalid(source, e.to_string())))
                    }
                    Some(other) => Some(Err(invalid(source, format!("the member is {}, not a string", other.kind())))),
                }
            }
            (KeySource::Form(field), Some(body)) => match read_field(header("content-type"), body, field) {
                FieldKey::Absent => None,
                FieldKey::One(raw) => {
                    Some(IdempotencyKey::parse_bytes(&raw).map_err(|e| invalid(source, e.to_string())))
                }
                FieldKey::Repeated => Some(Err(invalid(source, "the field is sent more than once".into()))),
            },
        };
        if let Some(found) = found {
            return found.map(KeyLookup::Found);
        }
    }
    match rule {
        KeyRule::Required => Err(KeyRefusal::Missing),
        _ => Ok(KeyLookup::Absent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn sources(written: &[&str]) -> Vec<KeySource> {
        written.iter().map(|s| s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))).collect()
    }

    fn key(k: &str) -> Result<KeyLookup, KeyRefusal> {
        Ok(KeyLookup::Found(IdempotencyKey::from_chars(k).unwrap()))
    }

    #[test]
    fn sources_parse_and_write_back() {
        for written in [
            "header:idempotency-key",
            "header:x-request-id",
            "json:/request_id",
            "json:/a~1b/0",
            "form:request_id",
            "form:a b",
        ] {
            assert_eq!(written.parse::<KeySource>().unwrap().to_string(), written);
        }
        assert_eq!("header:X-Request-Id".parse(), Ok(KeySource::Header("x-request-id".into())));
        // (written, why refused)
        let rows = [
            ("idempotency-key", KeySourceError::Unknown),
            ("cookie:session", KeySourceError::Unknown),
            ("Header:x", KeySourceError::Unknown),
            ("header:", KeySourceError::BadHeaderName),
            ("header:x y", KeySourceError::BadHeaderName),
            ("header:x:y", KeySourceError::BadHeaderName),
            ("json:request_id", KeySourceError::Pointer(JsonPointerError::NoLeadingSlash)),
            ("json:", KeySourceError::Pointer(JsonPointerError::NoLeadingSlash)),
            ("json:/a~2", KeySourceError::Pointer(JsonPointerError::BadEscape)),
            ("form:", KeySourceError::EmptyField),
        ];
        for (written, error) in rows {
            assert_eq!(written.parse::<KeySource>(), Err(error), "{written}");
        }
    }

    #[test]
    fn the_first_source_holding_a_value_decides() {
        let all = sources(&["header:idempotency-key", "json:/request_id", "json:/meta/id", "form:request_id"]);
        type Row<'a> = (&'a [(&'a str, &'a str)], Option<&'a [u8]>, Result<KeyLookup, KeyRefusal>);
        let json = [("content-type", "application/json")];
        let form = [("content-type", "application/x-www-form-urlencoded")];
        let keyed = [("content-type", "application/json"), ("idempotency-key", "\"h-1\"")];
        let bad_header = [("idempotency-key", "a b")];
        let rows: Vec<Row> = vec![
            // The header first, with no body read.
            (&keyed, None, key("h-1")),
            (&keyed, Some(br#"{"request_id": "j-1"}"#), key("h-1")),
            (&json, None, Ok(KeyLookup::NeedsBody)),
            (&json, Some(br#"{"request_id": "j-1", "meta": {"id": "m-1"}}"#), key("j-1")),
            (&json, Some(br#"{"meta": {"id": "m-1"}}"#), key("m-1")),
            (&json, Some(br#"{"request_id": null, "meta": {"id": "m-1"}}"#), key("m-1")),
            (&json, Some(br#"{"request_id": 12345}"#), key("12345")),
            // Not JSON: the JSON sources hold nothing, the form's is tried.
            (&json, Some(br#"{"request_id": "r", "request_id": "last"}"#), Err(KeyRefusal::Missing)),
            (&form, Some(b"request_id=f-1&amount=5"), key("f-1")),
            (&json, Some(b"request_id=f-1"), Err(KeyRefusal::Missing)),
            (&json, Some(b"{}"), Err(KeyRefusal::Missing)),
            (&json, Some(b""), Err(KeyRefusal::Missing)),
            // A value found but malformed: refused, never the next source.
            (
                &bad_header,
                None,
                Err(KeyRefusal::Invalid(format!(
                    "header:idempotency-key: {}",
                    IdempotencyKey::parse("a b").unwrap_err()
                ))),
            ),
            (
                &json,
                Some(br#"{"request_id": ""}"#),
                Err(KeyRefusal::Invalid("json:/request_id: the key is empty".into())),
            ),
            (
                &json,
                Some(br#"{"request_id": {"id": 1}}"#),
                Err(KeyRefusal::Invalid("json:/request_id: the member is an object, not a string".into())),
            ),
            (
                &json,
                Some(br#"{"request_id": true}"#),
                Err(KeyRefusal::Invalid("json:/request_id: the member is a boolean, not a string".into())),
            ),
            (
                &form,
                Some(b"request_id=a&request_id=b"),
                Err(KeyRefusal::Invalid("form:request_id: the field is sent more than once".into())),
            ),
        ];
        for (headers, body, expected) in rows {
            let header = |name: &str| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
            let got = find_key(&all, KeyRule::Required, header, body);
            assert_eq!(got, expected, "{headers:?} {:?}", body.map(String::from_utf8_lossy));
        }
    }

    #[test]
    fn a_body_that_is_not_plain_json_holds_no_key() {
        let by_id = sources(&["json:/request_id"]);
        let lookup = |body: &[u8]| find_key(&by_id, KeyRule::Optional, |_| None, Some(body));
        // (body, what is wrong with it)
        let rows: [(&[u8], &str); 6] = [
            (br#"{"request_id":"a","request_id":"b"}"#, "the member given twice"),
            (br#"{"request_id":"a","meta":{"at":1,"at":2}}"#, "another member given twice"),
            (br#"{"request_id":"a\qb"}"#, "an unknown escape"),
            (br#"{"request_id":"a\uD800"}"#, "a lone surrogate"),
            (br#"{"request_id":"a","note":"\uDC00"}"#, "a lone surrogate elsewhere"),
            (br#"{"request_id":"a",}"#, "a trailing comma"),
        ];
        for (body, why) in rows {
            assert_eq!(lookup(body), Ok(KeyLookup::Absent), "{why}");
        }
        assert_eq!(lookup(br#"{"request_id":"a\u0062"}"#), key("ab"), "plain JSON, escapes and all");
        let required = find_key(&by_id, KeyRule::Required, |_| None, Some(br#"{"request_id":"a","request_id":"b"}"#));
        assert_eq!(required, Err(KeyRefusal::Missing));
    }

    #[test]
    fn the_rule_decides_what_no_key_means() {
        let header_only = sources(&[DEFAULT_KEY_SOURCE]);
        assert_eq!(find_key(&header_only, KeyRule::Uncovered, |_| Some("k"), None), Ok(KeyLookup::Absent));
        assert_eq!(find_key(&header_only, KeyRule::Optional, |_| None, None), Ok(KeyLookup::Absent));
        assert_eq!(find_key(&header_only, KeyRule::Required, |_| None, None), Err(KeyRefusal::Missing));
        assert_eq!(find_key(&header_only, KeyRule::Optional, |_| Some("k-1"), None), key("k-1"));
        let body_only = sources(&["json:/id"]);
        assert_eq!(find_key(&body_only, KeyRule::Optional, |_| None, None), Ok(KeyLookup::NeedsBody));
        assert_eq!(find_key(&body_only, KeyRule::Optional, |_| None, Some(b"[]")), Ok(KeyLookup::Absent));
    }
}
