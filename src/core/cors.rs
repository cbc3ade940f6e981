//! CORS preflights (SPEC §5): which request headers an allowed caller may
//! send.

use super::scope::is_token;

/// The headers a preflight is allowed when it names none (or none that can
/// be a header): the key, and what a JSON or authenticated call sends.
pub const DEFAULT_ALLOW_HEADERS: &str = "Idempotency-Key, Content-Type, Authorization";

/// The `Access-Control-Allow-Headers` value for a preflight whose
/// `Access-Control-Request-Headers` is `requested`: the names it lists, as
/// sent, but only those that are field names (RFC 9110 tokens). A name
/// with spaces, separators or non-ASCII characters (including the U+FFFD
/// a runtime puts for bytes that are not UTF-8) cannot be a header, so it
/// is left out rather than echoed back. With no valid name left,
/// [`DEFAULT_ALLOW_HEADERS`].
///
/// ```
/// use oncekey::core::{DEFAULT_ALLOW_HEADERS, preflight_allow_headers};
/// assert_eq!(preflight_allow_headers(Some("idempotency-key, x-clé,content-type")), "idempotency-key, content-type");
/// assert_eq!(preflight_allow_headers(Some("x-\u{fffd}")), DEFAULT_ALLOW_HEADERS);
/// assert_eq!(preflight_allow_headers(None), DEFAULT_ALLOW_HEADERS);
/// ```
pub fn preflight_allow_headers(requested: Option<&str>) -> String {
    let names: Vec<&str> = requested
        .unwrap_or_default()
        .split(',')
        .map(|name| name.trim_matches([' ', '\t']))
        .filter(|name| is_token(name))
        .collect();
    if names.is_empty() { DEFAULT_ALLOW_HEADERS.to_owned() } else { names.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn only_field_names_are_allowed() {
        let cases: &[(Option<&str>, &str)] = &[
            (None, DEFAULT_ALLOW_HEADERS),
            (Some(""), DEFAULT_ALLOW_HEADERS),
            (Some(" , ,"), DEFAULT_ALLOW_HEADERS),
            (Some("idempotency-key,content-type"), "idempotency-key, content-type"),
            (Some(" Idempotency-Key ,\tX-Trace "), "Idempotency-Key, X-Trace"),
            (Some("x-a!#$%&'*+.^_`|~1"), "x-a!#$%&'*+.^_`|~1"),
            (Some("idempotency-key, x-clé"), "idempotency-key"),
            (Some("x-\u{fffd}\u{fffd}, content-type"), "content-type"),
            (Some("x-😀"), DEFAULT_ALLOW_HEADERS),
            (Some("a b, c(d), e:f, g\"h, i/j, content-type"), "content-type"),
            (Some("x-\u{0}, x-\u{7f}"), DEFAULT_ALLOW_HEADERS),
        ];
        for (requested, allowed) in cases {
            assert_eq!(preflight_allow_headers(*requested), *allowed, "{requested:?}");
        }
    }
}
