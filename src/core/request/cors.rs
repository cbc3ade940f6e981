//! CORS (SPEC §5): which callers' origins can be echoed back, and which
//! request headers an allowed caller may send.

use crate::core::request::scope::is_token;

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

/// Whether `origin` is a serialized origin as a browser sends it in
/// `Origin`: `scheme://host[:port]` in ASCII, with nothing after the host
/// (RFC 6454 §6.2). `IDEMPOTENCY_CORS_ORIGINS=*` echoes only such a value:
/// `null` (a sandboxed or opaque caller), a list, a path or bytes that are
/// not ASCII are no origin to grant.
///
/// ```
/// use oncekey::core::is_serialized_origin;
/// assert!(is_serialized_origin("https://shop.example:8443"));
/// assert!(!is_serialized_origin("null"));
/// assert!(!is_serialized_origin("https://a.example, https://b.example"));
/// ```
pub fn is_serialized_origin(origin: &str) -> bool {
    let Some((scheme, host)) = origin.split_once(':') else { return false };
    let Some(host) = host.strip_prefix("//") else { return false };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host_ok = !host.is_empty()
        && !host.starts_with(':')
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '[' | ']' | ':'));
    scheme_ok && host_ok
}

/// Why an entry of `IDEMPOTENCY_CORS_ORIGINS` could never equal a
/// browser's `Origin` header, if it could not: `*` and origins written as a
/// browser serialises them pass (`None`).
///
/// ```
/// use oncekey::core::never_an_origin;
/// assert_eq!(never_an_origin("https://shop.example"), None);
/// assert_eq!(never_an_origin("*"), None);
/// assert!(never_an_origin("https://shop.example/").is_some());
/// assert!(never_an_origin("https://Shop.example").is_some());
/// assert!(never_an_origin("https://shop.example:443").is_some());
/// ```
pub fn never_an_origin(entry: &str) -> Option<&'static str> {
    if entry == "*" {
        None
    } else if !is_serialized_origin(entry) {
        Some("an origin is scheme://host[:port], with no path and no trailing slash")
    } else if entry.chars().any(|c| c.is_ascii_uppercase()) {
        Some("a browser sends the scheme and host in lower case")
    } else if entry.starts_with("https://") && entry.ends_with(":443")
        || entry.starts_with("http://") && entry.ends_with(":80")
    {
        Some("a browser leaves the scheme's default port out")
    } else {
        None
    }
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

    #[test]
    fn listed_origins_that_no_browser_sends_are_refused() {
        for entry in [
            "https://a.example/",
            "https://a.example/app",
            "a.example",
            "null",
            "https://A.example",
            "HTTPS://a.example",
            "https://a.example:443",
            "http://a.example:80",
        ] {
            assert!(never_an_origin(entry).is_some(), "{entry}");
        }
        for entry in [
            "*",
            "https://a.example",
            "http://127.0.0.1:8787",
            "https://a.example:8443",
            "http://a.example:443",
            "http://[::1]:3000",
        ] {
            assert_eq!(never_an_origin(entry), None, "{entry}");
        }
    }

    #[test]
    fn only_serialized_origins_count_as_origins() {
        let origins = ["https://shop.example", "http://127.0.0.1:8787", "http://[::1]:8080", "chrome-extension://abc"];
        for origin in origins {
            assert!(is_serialized_origin(origin), "{origin}");
        }
        let not_origins = [
            "",
            "null",
            "https://",
            "://a.example",
            "1http://a.example",
            "https://:443",
            "https://a.example/",
            "https://a.example/path",
            "https://user@a.example",
            "https://a.example, https://b.example",
            "https://a.example?q",
            "https://h\u{fffd}\u{fffd}.example",
            "https://caf\u{e9}.example",
            "https://a .example",
            "javascript:alert(1)",
        ];
        for origin in not_origins {
            assert!(!is_serialized_origin(origin), "{origin:?}");
        }
    }
}
