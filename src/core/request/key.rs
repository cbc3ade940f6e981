//! The `Idempotency-Key` header (SPEC §1).
//!
//! Two spellings name the same key: a Structured Field string (`"abc"`,
//! RFC 9651 §3.3.3) and a bare token as Stripe's clients send it (`abc`).
//!
//! The one structured field read here is a lone string (RFC 9651 §4.2.5),
//! read by the dozen lines of [`parse_sf_string`]: a general parser (the
//! `sfv` crate) holds every bare item type, 16 KB of the worker's wasm
//! (a tenth of it) for this one. The tests hold the reader to `sfv` on
//! any input.

use std::fmt;

/// The longest key accepted, in characters (all ASCII, so also bytes).
pub const MAX_KEY_LEN: usize = 255;

/// A validated idempotency key: 1 to 255 visible ASCII characters, unquoted.
///
/// ```
/// use oncekey::core::IdempotencyKey;
/// let bare = IdempotencyKey::parse("order-42").unwrap();
/// let quoted = IdempotencyKey::parse("\"order-42\"").unwrap();
/// assert_eq!(bare, quoted);
/// assert_eq!(bare.as_str(), "order-42");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

/// Why a covered request has no key to be protected under (SPEC §1, §13):
/// the request layer's own refusal, answered by the output layer as its
/// problem (`400 missing-key` or `400 invalid-key`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRefusal {
    /// A key is required and no source holds one.
    Missing,
    /// A key was found but breaks §1's rules: why, naming its source.
    Invalid(String),
}

/// Why a header value is not a key. Every variant is answered with
/// 400 `invalid-key`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The value is empty, or the quoted string holds nothing.
    #[error("the key is empty")]
    Empty,
    /// More than [`MAX_KEY_LEN`] characters after unquoting.
    #[error("the key is {0} characters long; at most 255 are allowed")]
    TooLong(usize),
    /// A byte outside visible ASCII (0x21–0x7E), such as a control
    /// character, a space or a non-ASCII byte, at the given index.
    #[error("the key holds a character outside visible ASCII at byte {0}")]
    InvalidCharacter(usize),
    /// The value starts with `"` but is not exactly one Structured Field
    /// string: a missing closing quote, a bad escape, parameters or
    /// anything else after it.
    #[error("the key starts with a quote but is not one well-formed structured-field string")]
    BrokenQuotes,
    /// The header was sent more than once: runtimes join repeats with `, `.
    /// (Two quoted keys joined that way are reported as [`KeyError::BrokenQuotes`].)
    #[error("the header holds more than one key")]
    Repeated,
}

impl IdempotencyKey {
    /// Parses one `Idempotency-Key` header value.
    ///
    /// # Errors
    /// A [`KeyError`] naming the first rule the value breaks.
    pub fn parse(value: &str) -> Result<Self, KeyError> {
        Self::parse_bytes(value.as_bytes())
    }

    /// Parses raw header bytes, which need not be UTF-8.
    ///
    /// # Errors
    /// A [`KeyError`] naming the first rule the value breaks.
    pub fn parse_bytes(value: &[u8]) -> Result<Self, KeyError> {
        let key = if value.first() == Some(&b'"') { parse_sf_string(value)? } else { parse_bare(value)? };
        validate(&key)?;
        Ok(Self(key))
    }

    /// A key given as its characters, not as a header value: a queue
    /// event's key from the user's function (SPEC §11). The same rules
    /// after unquoting: 1 to 255 visible ASCII characters.
    ///
    /// ```
    /// use oncekey::core::IdempotencyKey;
    /// assert_eq!(IdempotencyKey::from_chars("order:42").unwrap().as_str(), "order:42");
    /// assert!(IdempotencyKey::from_chars("").is_err());
    /// assert!(IdempotencyKey::from_chars("two words").is_err());
    /// ```
    ///
    /// # Errors
    /// A [`KeyError`] naming the first rule the characters break.
    pub fn from_chars(key: &str) -> Result<Self, KeyError> {
        validate(key)?;
        Ok(Self(key.to_owned()))
    }

    /// The key's characters, unquoted.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for IdempotencyKey {
    // Keys are bearer secrets in the anonymous scope: never print them whole.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey(<{} chars>)", self.0.len())
    }
}

fn parse_bare(value: &[u8]) -> Result<String, KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty);
    }
    if value.contains(&b',') {
        // "a, b" is how a runtime presents two headers.
        return Err(KeyError::Repeated);
    }
    if let Some(i) = value.iter().position(|&b| !is_visible(b) || b == b'"' || b == b'\\') {
        return Err(KeyError::InvalidCharacter(i));
    }
    // Only visible ASCII is left, so this cannot fail.
    Ok(String::from_utf8_lossy(value).into_owned())
}

/// One Structured Field string and nothing after it but spaces (what a
/// Structured Field item parser accepts for a lone string): `"` then
/// characters 0x20–0x7E, where `"` and `\` come escaped by `\`, then `"`.
fn parse_sf_string(value: &[u8]) -> Result<String, KeyError> {
    let mut key = String::new();
    let mut rest = value.iter().copied().skip(1);
    loop {
        match rest.next() {
            Some(b'"') => break,
            Some(b'\\') => match rest.next() {
                Some(escaped @ (b'"' | b'\\')) => key.push(char::from(escaped)),
                _ => return Err(KeyError::BrokenQuotes),
            },
            Some(c @ 0x20..=0x7e) => key.push(char::from(c)),
            _ => return Err(KeyError::BrokenQuotes),
        }
    }
    if rest.all(|b| b == b' ') { Ok(key) } else { Err(KeyError::BrokenQuotes) }
}

fn validate(key: &str) -> Result<(), KeyError> {
    if key.is_empty() {
        return Err(KeyError::Empty);
    }
    if let Some(i) = key.bytes().position(|b| !is_visible(b)) {
        return Err(KeyError::InvalidCharacter(i));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(KeyError::TooLong(key.len()));
    }
    Ok(())
}

fn is_visible(b: u8) -> bool {
    (0x21..=0x7e).contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn both_spellings_name_the_same_key() {
        let bare = IdempotencyKey::parse("8e03978e-40d5-43e8-bc93-6894a57f9324").unwrap();
        let quoted = IdempotencyKey::parse("\"8e03978e-40d5-43e8-bc93-6894a57f9324\"").unwrap();
        assert_eq!(bare, quoted);
    }

    #[test]
    fn accepts_escapes_and_punctuation() {
        assert_eq!(IdempotencyKey::parse(r#""a\"b\\c""#).unwrap().as_str(), r#"a"b\c"#);
        assert_eq!(IdempotencyKey::parse("a:b/c+d=e_f~!").unwrap().as_str(), "a:b/c+d=e_f~!");
        assert_eq!(IdempotencyKey::parse("x").unwrap().as_str(), "x");
    }

    #[test]
    fn firefox_s_automatic_key_is_a_quoted_number_and_accepted() {
        // Firefox (network.http.idempotencyKey.enabled) adds, to a POST or
        // PATCH that has none, `"<u64 in decimal>"`: an sf-string of digits.
        for sent in ["\"0\"", "\"9812762323548309112\"", "\"18446744073709551615\""] {
            let key = IdempotencyKey::parse(sent).unwrap();
            assert_eq!(format!("\"{}\"", key.as_str()), sent);
        }
    }

    #[test]
    fn length_limits() {
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        assert_eq!(IdempotencyKey::parse(&"k".repeat(256)), Err(KeyError::TooLong(256)));
        let quoted = format!("\"{}\"", "k".repeat(256));
        assert_eq!(IdempotencyKey::parse(&quoted), Err(KeyError::TooLong(256)));
        assert!(IdempotencyKey::parse(&format!("\"{}\"", "k".repeat(255))).is_ok());
    }

    #[test]
    fn rejects_bad_values() {
        let cases: &[(&[u8], KeyError)] = &[
            (b"", KeyError::Empty),
            (b"\"\"", KeyError::Empty),
            (b"a b", KeyError::InvalidCharacter(1)),
            (b"\" \"", KeyError::InvalidCharacter(0)),
            (b"a\x01", KeyError::InvalidCharacter(1)),
            (b"a\x7f", KeyError::InvalidCharacter(1)),
            ("cl\u{e9}".as_bytes(), KeyError::InvalidCharacter(2)),
            (b"ab\"c", KeyError::InvalidCharacter(2)),
            (b"ab\\c", KeyError::InvalidCharacter(2)),
            (b"a, b", KeyError::Repeated),
            (b"a,b", KeyError::Repeated),
            (b"\"a\", \"b\"", KeyError::BrokenQuotes),
            (b"\"abc", KeyError::BrokenQuotes),
            (b"\"a\"b\"", KeyError::BrokenQuotes),
            (b"\"a\\x\"", KeyError::BrokenQuotes),
            (b"\"a\";p=1", KeyError::BrokenQuotes),
            (b"\"\t\"", KeyError::BrokenQuotes),
        ];
        for (input, want) in cases {
            assert_eq!(
                IdempotencyKey::parse_bytes(input).as_ref().map(IdempotencyKey::as_str),
                Err(want),
                "input {:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn prop_any_bytes_give_a_key_or_a_typed_error(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            match IdempotencyKey::parse_bytes(&bytes) {
                Ok(key) => {
                    proptest::prop_assert!((1..=MAX_KEY_LEN).contains(&key.as_str().len()));
                    proptest::prop_assert!(key.as_str().bytes().all(is_visible));
                }
                Err(KeyError::Empty | KeyError::TooLong(_) | KeyError::InvalidCharacter(_)
                    | KeyError::BrokenQuotes | KeyError::Repeated) => {}
            }
        }

        #[test]
        fn prop_quoted_values_read_as_sfv_reads_a_lone_string(
            inner in proptest::collection::vec(proptest::sample::select(b" !\"#\\;=a1\t\x7f\xc3".to_vec()), 0..12),
            closed in proptest::bool::ANY,
            after in proptest::collection::vec(proptest::sample::select(b" ;=a\"".to_vec()), 0..4),
        ) {
            let mut value = vec![b'"'];
            value.extend(inner);
            if closed {
                value.push(b'"');
                value.extend(after);
            }
            proptest::prop_assert_eq!(parse_sf_string(&value).ok(), sfv_lone_string(&value));
        }

        #[test]
        fn prop_any_text_never_panics(text in "\\PC{0,300}") {
            let _ = IdempotencyKey::parse(&text);
        }

        #[test]
        fn prop_valid_keys_parse_in_both_spellings(key in "[!#-+\\--\\[\\]-~]{1,255}") {
            let bare = IdempotencyKey::parse(&key).unwrap();
            let quoted = IdempotencyKey::parse(&format!("\"{key}\"")).unwrap();
            proptest::prop_assert_eq!(bare.as_str(), key.as_str());
            proptest::prop_assert_eq!(bare, quoted);
        }
    }

    /// What the `sfv` crate reads from `value` as one item that is a
    /// string with no parameters.
    #[cfg(not(target_arch = "wasm32"))]
    fn sfv_lone_string(value: &[u8]) -> Option<String> {
        match sfv::Parser::new(value).parse_item().ok()? {
            sfv::Item { bare_item: sfv::BareItem::String(s), params } if params.is_empty() => {
                Some(s.as_str().to_owned())
            }
            _ => None,
        }
    }

    #[test]
    fn debug_never_prints_the_key() {
        let key = IdempotencyKey::parse("secret-key").unwrap();
        assert_eq!(format!("{key:?}"), "IdempotencyKey(<10 chars>)");
    }
}
