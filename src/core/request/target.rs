//! The request's canonical path (SPEC §13, "One request, one identity"):
//! the one spelling every rule that reads where a request goes compares
//! with — routes, `IDEMPOTENCY_PATHS`, required keys, webhooks, a
//! delivery's record — so no other spelling of a path reaches a looser
//! rule than the path itself. The origin still gets the path as sent.

use std::fmt;

/// A path as the rules read it: percent-encoded unreserved characters
/// decoded (and the other escapes' hex in one case), an encoded `/` or `\`
/// (`%2F`, `%5C`) read as the separator it decodes to, empty segments (`//`)
/// and `.` segments dropped, `..` resolved, each segment's `;params`
/// dropped, no trailing `/`, all in lower case. Servers and frameworks
/// route every one of those spellings to one handler (Express, for one,
/// routes `/Hooks/Stripe/` to `/hooks/stripe`), so a rule that compared the
/// spelling could be walked around. An encoded `/` is a separator here
/// because the servers that decode a path before routing (Python's WSGI and
/// ASGI servers, some Go routers) route `/hooks%2Fgithub` to
/// `/hooks/github`; reading it as a separator can only bring a spelling
/// under a stricter rule, never out of one.
///
/// ```
/// use oncekey::core::CanonicalPath;
/// for spelling in ["/hooks/stripe", "/hooks/stripe/", "/hooks//stripe", "/Hooks/STRIPE",
///                  "/hooks/%73tripe", "/hooks/stripe;x", "/hooks/./stripe", "/x/../hooks/stripe"] {
///     assert_eq!(CanonicalPath::of(spelling).as_str(), "/hooks/stripe", "{spelling}");
/// }
/// assert_eq!(CanonicalPath::of("/hooks%2Fgithub").as_str(), "/hooks/github", "an encoded `/` separates");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CanonicalPath(String);

impl CanonicalPath {
    /// The canonical form of `path`, percent-encoded as received (the
    /// runtime's URL parser has already turned `\` into `/` and encoded what
    /// a path may not hold as is), as servlet containers read it: each
    /// segment's `;params` dropped first, up to the next `/` as sent.
    pub fn of(path: &str) -> Self {
        Self::read(path, true)
    }

    /// The other reading of `path`, when there is one: a segment's
    /// `;params` holding an encoded `/` or `\` mean one path to servlet
    /// containers, which drop them first (Tomcat, Jetty: `/x;%2F..%2Fhooks`
    /// is `/x`), and another to servers that decode first and know no
    /// parameters (nginx: `/hooks`). `None` when both read it alike.
    ///
    /// ```
    /// use oncekey::core::CanonicalPath;
    /// let other = CanonicalPath::other_reading("/x;%2F..%2Fhooks%2Fgithub").unwrap();
    /// assert_eq!((CanonicalPath::of("/x;%2F..%2Fhooks%2Fgithub").as_str(), other.as_str()), ("/x", "/hooks/github"));
    /// assert_eq!(CanonicalPath::other_reading("/hooks/github;jsessionid=1"), None);
    /// ```
    pub fn other_reading(path: &str) -> Option<Self> {
        // Without parameters the two readings are one: no second read on
        // the common path.
        if !path.contains(';') {
            return None;
        }
        let decoding_first = Self::read(path, false);
        (decoding_first != Self::of(path)).then_some(decoding_first)
    }

    /// `path` read with each segment's `;params` dropped before
    /// (`params_first`) or after encoded separators are read.
    fn read(path: &str, params_first: bool) -> Self {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let decoded;
        let path = if params_first {
            path
        } else {
            decoded = separators_decoded(path);
            decoded.as_str()
        };
        // Built in place: each segment's start, for a `..` to cut back to.
        let mut out = String::with_capacity(path.len() + 1);
        let mut starts: Vec<usize> = Vec::new();
        for raw in path.split('/') {
            // A segment's parameters (`;jsessionid=…`) name no other resource.
            let kept = separators_decoded(raw.split(';').next().unwrap_or_default());
            for part in kept.split('/') {
                let segment = decode_unreserved(part);
                match segment.as_str() {
                    "" | "." => {}
                    ".." => out.truncate(starts.pop().unwrap_or(0)),
                    _ => {
                        starts.push(out.len());
                        out.push('/');
                        out.push_str(&segment);
                    }
                }
            }
        }
        if out.is_empty() {
            out.push('/');
        }
        Self(out)
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

/// `path` with each encoded `/` or `\` (`%2F`, `%5C`, either case) turned
/// into `/`, byte by byte.
fn separators_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        let pair = bytes.get(at + 1).zip(bytes.get(at + 2)).map(|(h, l)| [h.to_ascii_lowercase(), *l]);
        if byte == b'%' && matches!(pair, Some([b'2', b'f' | b'F'] | [b'5', b'c' | b'C'])) {
            out.push(b'/');
            at += 3;
        } else {
            out.push(byte);
            at += 1;
        }
    }
    // Only ASCII bytes were replaced: still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// `segment` in lower case (ASCII: a path's other characters arrive
/// percent-encoded), its percent-escapes of unreserved characters (RFC
/// 3986: letters, digits, `-`, `.`, `_`, `~`) decoded, any other escape
/// kept (lower-case hex).
/// Byte by byte, with no `str` slicing or Unicode case tables: the core's
/// wasm stays small (src/core/text/cut.rs).
fn decode_unreserved(segment: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digit = |b: u8| char::from(b).to_digit(16).map(|d| d as u8);
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        let escaped = match (byte, bytes.get(at + 1), bytes.get(at + 2)) {
            (b'%', Some(&high), Some(&low)) => digit(high).zip(digit(low)).map(|(h, l)| h << 4 | l),
            _ => None,
        };
        match escaped {
            Some(b) if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => out.push(b.to_ascii_lowercase()),
            Some(b) => out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]),
            None => out.push(byte.to_ascii_lowercase()),
        }
        at += if escaped.is_some() { 3 } else { 1 };
    }
    // Only ASCII bytes were changed or added: still UTF-8.
    String::from_utf8(out).unwrap_or_default()
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
            ("/a%2Fb", "/a/b"),
            ("/hooks%2fgithub", "/hooks/github"),
            ("/hooks%5Cgithub", "/hooks/github"),
            ("/hooks/github/%2e%2e%2fgithub", "/hooks/github"),
            ("/hooks%2F%2Fgithub%2F", "/hooks/github"),
            ("/a%252Fb", "/a%252fb"),
            // Parameters go before an encoded `/` is read (a sixth red team:
            // Tomcat and Jetty route each of these to /hooks/github).
            ("/hooks/github;%2F..", "/hooks/github"),
            ("/hooks;%2F../github", "/hooks/github"),
            ("/hooks;%5C../github", "/hooks/github"),
            ("/hooks/github;x%2F..", "/hooks/github"),
            ("/hooks/github;%2f..%2f..%2fx", "/hooks/github"),
            ("/v1/orders;%2F..", "/v1/orders"),
            ("/caf%C3%A9", "/caf%c3%a9"),
            ("/caf%c3%a9", "/caf%c3%a9"),
            ("/100%", "/100%"),
            ("/%zz", "/%zz"),
            ("/%7E%7e~", "/~~~"),
            ("/café", "/café"),
            ("/CAFÉ", "/cafÉ"),
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
