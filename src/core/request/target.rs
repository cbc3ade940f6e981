//! The request's canonical path (SPEC §13, "One request, one identity"):
//! the one spelling every rule that reads where a request goes compares
//! with — routes, `IDEMPOTENCY_PATHS`, required keys, webhooks, a
//! delivery's record — so no other spelling of a path reaches a looser
//! rule than the path itself. The origin still gets the path as sent.

use std::fmt;

/// A path as the rules read it: percent-encoded unreserved characters
/// decoded (and the other escapes' hex in one case), empty segments (`//`)
/// and `.` segments dropped, `..` resolved, each segment's `;params`
/// dropped, no trailing `/`, all in lower case. Servers and frameworks
/// route every one of those spellings to one handler (Express, for one,
/// routes `/Hooks/Stripe/` to `/hooks/stripe`), so a rule that compared the
/// spelling could be walked around.
///
/// ```
/// use oncekey::core::CanonicalPath;
/// for spelling in ["/hooks/stripe", "/hooks/stripe/", "/hooks//stripe", "/Hooks/STRIPE",
///                  "/hooks/%73tripe", "/hooks/stripe;x", "/hooks/./stripe", "/x/../hooks/stripe"] {
///     assert_eq!(CanonicalPath::of(spelling).as_str(), "/hooks/stripe", "{spelling}");
/// }
/// assert_eq!(CanonicalPath::of("/a%2Fb").as_str(), "/a%2fb", "an encoded `/` is no separator");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CanonicalPath(String);

impl CanonicalPath {
    /// The canonical form of `path`, percent-encoded as received (the
    /// runtime's URL parser has already turned `\` into `/` and encoded what
    /// a path may not hold as is).
    pub fn of(path: &str) -> Self {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let mut segments: Vec<String> = Vec::new();
        for raw in path.split('/') {
            // A segment's parameters (`;jsessionid=…`) name no other resource.
            let raw = raw.split(';').next().unwrap_or_default();
            let segment = decode_unreserved(raw);
            match segment.as_str() {
                "" | "." => {}
                ".." => {
                    segments.pop();
                }
                _ => segments.push(segment),
            }
        }
        Self(format!("/{}", segments.join("/")))
    }

    /// The canonical path as text: it starts with `/`, and is `/` alone or
    /// ends without one.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CanonicalPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `segment` in lower case, its percent-escapes of unreserved characters
/// (RFC 3986: letters, digits, `-`, `.`, `_`, `~`) decoded, any other escape
/// kept (lower-case hex): `%2F` stays an encoded `/`, never a separator.
fn decode_unreserved(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = String::with_capacity(segment.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok());
        match escaped {
            Some(b) if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => {
                out.push(char::from(b.to_ascii_lowercase()));
                i += 3;
            }
            Some(b) => {
                out.push_str(&format!("%{b:02x}"));
                i += 3;
            }
            None => {
                // Every byte the loop steps on alone starts a character: an
                // escape is three ASCII bytes.
                let len = segment[i..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&segment[i..i + len].to_lowercase());
                i += len;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::CanonicalPath;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn every_spelling_of_a_path_is_one_path() {
        let rows = [
            ("/", "/"),
            ("", "/"),
            ("//", "/"),
            ("/.", "/"),
            ("/..", "/"),
            ("/../..", "/"),
            ("/hooks/stripe", "/hooks/stripe"),
            ("/hooks/stripe/", "/hooks/stripe"),
            ("/hooks//stripe", "/hooks/stripe"),
            ("//hooks/stripe//", "/hooks/stripe"),
            ("/Hooks/Stripe", "/hooks/stripe"),
            ("/hooks/%73tripe", "/hooks/stripe"),
            ("/hooks/%53TRIPE", "/hooks/stripe"),
            ("/hooks/stripe;x", "/hooks/stripe"),
            ("/hooks;v=1/stripe;jsessionid=2/", "/hooks/stripe"),
            ("/hooks/./stripe", "/hooks/stripe"),
            ("/hooks/%2e/stripe", "/hooks/stripe"),
            ("/hooks/x/%2E%2E/stripe", "/hooks/stripe"),
            ("/../hooks/stripe", "/hooks/stripe"),
            ("/hooks/stripe?x=1", "/hooks/stripe"),
            ("/a%2Fb", "/a%2fb"),
            ("/caf%C3%A9", "/caf%c3%a9"),
            ("/caf%c3%a9", "/caf%c3%a9"),
            ("/100%", "/100%"),
            ("/%zz", "/%zz"),
            ("/%7E%7e~", "/~~~"),
            ("/café", "/café"),
        ];
        for (spelling, canonical) in rows {
            assert_eq!(CanonicalPath::of(spelling).as_str(), canonical, "{spelling:?}");
        }
    }

    #[test]
    fn the_canonical_path_is_its_own() {
        for spelling in ["/Hooks//%73tripe/", "/a/../b;c/./D", "/x%2Fy/", "/"] {
            let once = CanonicalPath::of(spelling);
            assert_eq!(CanonicalPath::of(once.as_str()), once, "{spelling:?}");
        }
    }
}
