//! JSON pointers (RFC 6901): which member of a JSON body a route's key
//! comes from, or leaves out of the fingerprint (SPEC §13).

use std::fmt;
use std::str::FromStr;

/// A JSON pointer: `/request_id`, `/data/object/id`, `/items/0/at`. Each
/// token names a member, or an element by its index; `~1` in a token is
/// `/` and `~0` is `~`.
///
/// ```
/// use oncekey::core::JsonPointer;
/// let pointer: JsonPointer = "/a~1b/0".parse().unwrap();
/// assert_eq!(pointer.tokens(), ["a/b", "0"]);
/// assert_eq!(pointer.to_string(), "/a~1b/0");
/// assert!("request_id".parse::<JsonPointer>().is_err(), "must start with /");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JsonPointer(Vec<String>);

/// Why a JSON pointer is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JsonPointerError {
    /// It does not start with `/`. (The empty pointer names the whole
    /// document, which no route can take a key from or leave out.)
    #[error("a JSON pointer must start with `/`")]
    NoLeadingSlash,
    /// A `~` not followed by `0` or `1`.
    #[error("a `~` in a JSON pointer must be followed by `0` (for `~`) or `1` (for `/`)")]
    BadEscape,
}

impl FromStr for JsonPointer {
    type Err = JsonPointerError;

    /// Parses a pointer as written, not trimmed: a space may be part of a
    /// member's name.
    ///
    /// # Errors
    /// [`JsonPointerError`]: no leading `/`, or a `~` escape that is not
    /// `~0` or `~1`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let rest = text.strip_prefix('/').ok_or(JsonPointerError::NoLeadingSlash)?;
        rest.split('/').map(unescape).collect::<Result<_, _>>().map(Self)
    }
}

/// `a~1b~0` → `a/b~`.
fn unescape(token: &str) -> Result<String, JsonPointerError> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            '~' => match chars.next() {
                Some('0') => '~',
                Some('1') => '/',
                _ => return Err(JsonPointerError::BadEscape),
            },
            c => c,
        });
    }
    Ok(out)
}

impl JsonPointer {
    /// The tokens, unescaped, outermost first.
    pub fn tokens(&self) -> &[String] {
        &self.0
    }
}

impl fmt::Display for JsonPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for token in &self.0 {
            write!(f, "/{}", token.replace('~', "~0").replace('/', "~1"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn parses_and_writes_back() {
        // (written, tokens)
        let rows: [(&str, &[&str]); 7] = [
            ("/id", &["id"]),
            ("/data/object/id", &["data", "object", "id"]),
            ("/", &[""]),
            ("//", &["", ""]),
            ("/a~1b", &["a/b"]),
            ("/m~0n", &["m~n"]),
            ("/~01", &["~1"]),
        ];
        for (written, tokens) in rows {
            let pointer: JsonPointer = written.parse().unwrap();
            assert_eq!(pointer.tokens(), tokens, "{written}");
            assert_eq!(pointer.to_string(), written);
        }
    }

    #[test]
    fn refuses_what_names_no_member() {
        let rows = [
            ("", JsonPointerError::NoLeadingSlash),
            ("id", JsonPointerError::NoLeadingSlash),
            (" /id", JsonPointerError::NoLeadingSlash),
            ("$.id", JsonPointerError::NoLeadingSlash),
            ("/a~", JsonPointerError::BadEscape),
            ("/a~2", JsonPointerError::BadEscape),
        ];
        for (written, error) in rows {
            assert_eq!(written.parse::<JsonPointer>(), Err(error), "{written:?}");
        }
    }
}
