//! The request's canonical path (SPEC §13, "One request, one identity"):
//! the one spelling every rule that reads where a request goes compares
//! with — routes, `IDEMPOTENCY_PATHS`, required keys, webhooks, a
//! delivery's record — so no other spelling of a path reaches a looser
//! rule than the path itself. The origin still gets the path as sent.

use std::fmt;

use crate::core::text::cut::cut;

/// A path as the rules read it: percent-encoded unreserved characters
/// decoded (and the other escapes' hex in one case), an encoded `/` or `\`
/// (`%2F`, `%5C`) read as the separator it decodes to, empty segments (`//`)
/// and `.` segments dropped, `..` resolved, each segment's `;params`
/// dropped, no trailing `/`, all in lower case. Servers and frameworks
/// route every one of those spellings to one handler (Express, for one,
/// routes `/Hooks/Stripe/` to `/hooks/stripe`), so a rule that compared the
/// spelling could be walked around. Servers part ways on `;`, `%3B`, `%2F`
/// and `%5C`: a path holding one has several readings
/// ([`CanonicalPath::readings`]), and the exchange holds each request to a
/// rule only when every reading some rule governs has that rule.
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
        Self::read(path, READINGS[0]).0
    }

    /// Every way a server may read `path` (SPEC §13), the canonical one
    /// first: servlet containers drop each segment's `;params` and may read
    /// `%2F` as `/` (Tomcat, Jetty), or keep it inside the segment (their
    /// default); nginx decodes `%2F`, `%5C` and `%3B` before a servlet drops
    /// parameters, or before a server that knows none (Python's WSGI
    /// servers, Go); Hono, Express and Rails keep `;` and `%2F` in the
    /// segment. Only a path holding one of those has more than one.
    /// [`DotSegment`] when a reading holds a `.` or `..` segment: a client
    /// that follows the URL standard never sends one (the runtime resolves
    /// the plain ones), so it is a spelling made to climb out of a rule
    /// (`/v1/charges%2F..%2F..%2Fx`, which Hono routes under `/v1/`).
    ///
    /// ```
    /// use oncekey::core::CanonicalPath;
    /// let readings = CanonicalPath::readings("/hooks/stripe;x").unwrap();
    /// assert_eq!(readings.iter().map(CanonicalPath::as_str).collect::<Vec<_>>(), ["/hooks/stripe", "/hooks/stripe;x"]);
    /// assert_eq!(CanonicalPath::readings("/v1/orders").unwrap().len(), 1);
    /// assert!(CanonicalPath::readings("/v1/charges%2F..%2Fx").is_err());
    /// ```
    #[inline(never)]
    pub fn readings(path: &str) -> Result<Vec<Self>, DotSegment> {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        // The dot segments every server resolves alike (`/./`, `/%2e%2e/`)
        // first, as the runtime's URL parser has already done.
        let resolved;
        let path = if path.split('/').any(is_dot_segment) {
            resolved = without_plain_dots(path);
            resolved.as_str()
        } else {
            path
        };
        // Byte windows, not `str::contains`: its general searcher costs the
        // wasm 2 KB (docs/performance.md, "Bundle size").
        let escape =
            |w: &[u8]| w[0] == b'%' && matches!([w[1], w[2] | 0x20], [b'2', b'f'] | [b'5', b'c'] | [b'3', b'b']);
        let read_apart = path.bytes().any(|b| b == b';') || path.as_bytes().windows(3).any(escape);
        let kinds = if read_apart { &READINGS[..] } else { &READINGS[..1] };
        let mut readings: Vec<Self> = Vec::with_capacity(kinds.len());
        for &kind in kinds {
            let (reading, dotted) = Self::read(path, kind);
            if dotted {
                return Err(DotSegment);
            }
            if !readings.contains(&reading) {
                readings.push(reading);
            }
        }
        Ok(readings)
    }

    /// `path` read as `kind` of server reads it; whether a `.` or `..`
    /// segment was in it.
    #[inline(never)]
    fn read(path: &str, kind: Reading) -> (Self, bool) {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let decoded;
        let path = if kind.decode_first {
            decoded = escapes_decoded(path, true);
            decoded.as_str()
        } else {
            path
        };
        // Built in place: each segment's start, for a `..` to cut back to.
        let mut out = String::with_capacity(path.len() + 1);
        let mut starts: Vec<usize> = Vec::new();
        let mut dotted = false;
        for raw in path.split('/') {
            // A segment's parameters (`;jsessionid=…`) name no other resource.
            let kept = if kind.params { raw.split(';').next().unwrap_or_default() } else { raw };
            let kept = if kind.separators { escapes_decoded(kept, false) } else { kept.to_owned() };
            for part in kept.split('/') {
                let segment = decode_unreserved(part);
                match segment.as_str() {
                    "" => {}
                    "." => dotted = true,
                    ".." => {
                        dotted = true;
                        out.truncate(starts.pop().unwrap_or(0));
                    }
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
        (Self(out), dotted)
    }

    /// The endpoint a webhook delivery's record is named by (SPEC §13): the
    /// path less a format suffix on its last segment (`.json`, `.xml`, a
    /// lone `.`), which Rails routes to the same action as the path without
    /// it, so one delivery resent as `/hooks/stripe.json` finds its record.
    ///
    /// ```
    /// use oncekey::core::CanonicalPath;
    /// for spelling in ["/hooks/stripe", "/hooks/stripe.json", "/hooks/Stripe.XML", "/hooks/stripe."] {
    ///     assert_eq!(CanonicalPath::of(spelling).endpoint(), "/hooks/stripe", "{spelling}");
    /// }
    /// assert_eq!(CanonicalPath::of("/hooks/.well").endpoint(), "/hooks/.well");
    /// ```
    pub fn endpoint(&self) -> &str {
        let bytes = self.0.as_bytes();
        let last = bytes.iter().rposition(|&b| b == b'/').map_or(0, |slash| slash + 1);
        match bytes.iter().skip(last).position(|&b| b == b'.') {
            // Cut next to an ASCII `.`: no panic path (src/core/text/cut.rs).
            Some(dot) if dot > 0 => cut(&self.0, ..last + dot),
            _ => &self.0,
        }
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

/// Whether a raw segment is `.` or `..`, its dots plain or `%2E`.
fn is_dot_segment(segment: &str) -> bool {
    matches!(decode_unreserved(segment).as_str(), "." | "..")
}

/// `path` with its plain dot segments resolved (split at `/` alone, as the
/// URL standard does), the rest as sent.
fn without_plain_dots(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    for (at, segment) in segments.iter().enumerate() {
        match decode_unreserved(segment).as_str() {
            "." => {}
            ".." => {
                kept.pop();
            }
            _ => kept.push(segment),
        }
        // A path ending in a dot segment ends in a directory: `/a/b/..` is `/a/`.
        if at + 1 == segments.len() && is_dot_segment(segment) {
            kept.push("");
        }
    }
    format!("/{}", kept.join("/"))
}

/// How a kind of server reads a path's parameters and encoded separators.
#[derive(Clone, Copy)]
struct Reading {
    /// `%2F`, `%5C` and `%3B` decoded before anything else (nginx).
    decode_first: bool,
    /// Each segment's `;params` dropped.
    params: bool,
    /// `%2F` and `%5C` read as `/`.
    separators: bool,
}

/// The readings [`CanonicalPath::readings`] tries, the canonical one first:
/// a servlet container reading `%2F` as `/`; nginx before one; Hono,
/// Express, Rails; a servlet container keeping `%2F`; nginx before a
/// server with no parameters.
const READINGS: [Reading; 5] = [
    Reading { decode_first: false, params: true, separators: true },
    Reading { decode_first: true, params: true, separators: true },
    Reading { decode_first: false, params: false, separators: false },
    Reading { decode_first: false, params: true, separators: false },
    Reading { decode_first: true, params: false, separators: true },
];

/// A path that holds a `.` or `..` segment in some server's reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DotSegment;

/// Why a request is read two ways (SPEC §13): refused, since the rules
/// cannot know which one the origin will follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ambiguity {
    /// A `.` or `..` segment once `;`, `%3B`, `%2F` or `%5C` are read.
    DotSegment,
    /// Servers read the path apart, and different rules govern the readings.
    Readings,
    /// A method override names a method another rule governs.
    Method,
}

impl fmt::Display for Ambiguity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::DotSegment => {
                "its path holds a `.` or `..` segment once `;`, `%3B`, `%2F` or `%5C` are read, which no client following the URL standard sends"
            }
            Self::Readings => {
                "servers read its path in ways (`;` parameters, `%3B`, `%2F`, `%5C`) that different idempotency rules govern"
            }
            Self::Method => {
                "a method override (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override or `_method`) names a method that other idempotency rules govern at this path"
            }
        })
    }
}

/// `path` with each encoded `/` or `\` (`%2F`, `%5C`, either case) turned
/// into `/`, and each `%3B` into `;` when `semicolons`, byte by byte.
fn escapes_decoded(path: &str, semicolons: bool) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        let pair = bytes.get(at + 1).zip(bytes.get(at + 2)).map(|(h, l)| [*h, l.to_ascii_lowercase()]);
        let decoded = match pair {
            _ if byte != b'%' => None,
            Some([b'2', b'f'] | [b'5', b'c']) => Some(b'/'),
            Some([b'3', b'b']) if semicolons => Some(b';'),
            _ => None,
        };
        match decoded {
            Some(decoded) => {
                out.push(decoded);
                at += 3;
            }
            None => {
                out.push(byte);
                at += 1;
            }
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
    fn a_dot_segment_in_any_reading_is_a_climb_and_plain_ones_resolve() {
        // Eighth red team: Hono, Express and Rails keep `%2F` in a segment,
        // so `..` after one climbs out of the rule the canonical path reads.
        for path in [
            "/v1/charges%2F..%2F..%2Fx",
            "/v1/orders/12%2F%2E%2E%2F%2E%2E/pay",
            "/a%5C..%5Cb",
            "/a;%2F..",
            "/a%3B%2F..",
            "/a/b%2F.%2Fc",
        ] {
            assert_eq!(CanonicalPath::readings(path), Err(super::DotSegment), "{path}");
        }
        // The ones every server resolves alike, as the runtime already has.
        for (path, canonical) in [("/a/../b", "/b"), ("/a/%2e%2E/b", "/b"), ("/a/./b/.", "/a/b"), ("/a;..", "/a")] {
            let readings = CanonicalPath::readings(path).unwrap();
            assert_eq!(readings[0].as_str(), canonical, "{path}");
        }
        assert_eq!(CanonicalPath::readings("/v1/Orders").unwrap(), [CanonicalPath::of("/v1/orders")]);
    }

    #[test]
    fn the_canonical_path_is_its_own() {
        for spelling in ["/Hooks//%73tripe/", "/a/../b;c/./D", "/x%2Fy/", "/"] {
            let once = CanonicalPath::of(spelling);
            assert_eq!(CanonicalPath::of(once.as_str()), once, "{spelling:?}");
        }
    }
}
