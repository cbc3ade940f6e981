//! What a host reads off a request before the exchange starts.

use crate::core::text::cut::cut;
use crate::core::{Config, from_own_origin};

/// The headers method-override middleware reads (Express's
/// `method-override`, Rails, Laravel, Google's APIs).
const METHOD_OVERRIDES: [&str; 3] = ["x-http-method-override", "x-http-method", "x-method-override"];

/// The parts of a request the exchange decides on. The host fills it from
/// the runtime's request; nothing else of the request crosses over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHead {
    /// The method, as sent (`POST`).
    pub method: String,
    /// The host the request was sent to, as the runtime serialises it
    /// (punycode, lower-case).
    pub host: String,
    /// The path, percent-encoded as received.
    pub path: String,
    /// The query without its `?`, if there is one.
    pub query: Option<String>,
    /// The raw `Idempotency-Key` header, if sent.
    pub key: Option<Vec<u8>>,
    /// The `Origin` header, for CORS and to tell a form post from another
    /// site (SPEC §8).
    pub origin: Option<String>,
    /// The request's own origin, `scheme://host[:port]` as the runtime
    /// serialises its URL ([`RequestHead::url_origin`]): a form post whose
    /// `Origin` is another is another site's.
    pub own_origin: String,
    /// `Access-Control-Request-Method`, on a CORS preflight.
    pub preflight_method: Option<String>,
    /// `Access-Control-Request-Headers`, on a CORS preflight.
    pub preflight_headers: Option<String>,
    /// Whether the client sent an `Idempotency-Attempt` header (always
    /// removed before the origin sees the request).
    pub has_attempt_header: bool,
    /// The headers [`RequestHead::headers_read`] names that are present,
    /// lower-case names.
    pub headers: Vec<(String, String)>,
    /// A random number the host drew for this request (not 0): it marks the
    /// reservation its `begin` makes, so the reservation can be abandoned
    /// when that call's reply is lost.
    pub reservation: u64,
    /// Whether an Analytics Engine dataset is bound as `IDEMPOTENCY_METRICS`
    /// (SPEC §12): each decision then ends with an
    /// [`Action::Metric`](super::Action::Metric).
    pub metrics: bool,
}

impl RequestHead {
    /// The reservation number of a request whose host drew `random`
    /// uniformly from `[0, 1)` (`Math.random()`): its 53 random bits, made
    /// odd so it is never 0 — plenty to tell one request's reservation from
    /// another's on the same key. The core draws nothing itself; both hosts
    /// hand their draw to this.
    ///
    /// ```
    /// use oncekey::core::RequestHead;
    /// assert_eq!(RequestHead::reservation_number(0.0), 1);
    /// assert_eq!(RequestHead::reservation_number(0.5), (1 << 52) | 1);
    /// ```
    pub fn reservation_number(random: f64) -> u64 {
        (random * 9_007_199_254_740_992.0) as u64 | 1
    }

    /// The headers the exchange reads: `content-type` and each scope
    /// source's header, for the fingerprint and the record name,
    /// `content-length`, for how the body is read, `cookie`, for whose
    /// browser an answer's cookies are kept, `authorization` when the admin
    /// paths are on (SPEC §12), for their token, `sec-fetch-site`, for
    /// whose page sent it, and what the routes read (SPEC §13: their header key
    /// sources, their senders' signature headers). A host copies only these.
    ///
    /// ```
    /// use oncekey::core::{Config, RequestHead};
    /// let config = Config::from_vars(|name| (name == "IDEMPOTENCY_SCOPE").then(|| "cookie:session".to_owned())).unwrap();
    /// let overrides = ["x-http-method-override", "x-http-method", "x-method-override"];
    /// assert_eq!(
    ///     RequestHead::headers_read(&config),
    ///     [&["content-type", "content-length", "cookie", "sec-fetch-site"][..], &overrides].concat()
    /// );
    /// assert_eq!(
    ///     RequestHead::headers_read(&Config::default()),
    ///     [&["content-type", "content-length", "authorization", "cookie", "sec-fetch-site"][..], &overrides].concat()
    /// );
    /// ```
    pub fn headers_read(config: &Config) -> Vec<&str> {
        let mut names: Vec<&str> = ["content-type", "content-length"]
            .into_iter()
            .chain(config.scope.iter().map(|source| source.header()))
            .collect();
        if !names.contains(&"cookie") {
            // Whose browser an answer's cookies are kept for (SPEC §3).
            names.push("cookie");
        }
        if config.admin_token.is_some() && !names.contains(&"authorization") {
            names.push("authorization");
        }
        // Whose page sent the request: a key read from a body (SPEC §8,
        // §13) and an answer's cookies (§3) are for the page's own origin.
        names.push("sec-fetch-site");
        // What method-override middleware runs it as (SPEC §13).
        names.extend(METHOD_OVERRIDES);
        // Each route's header key sources and its sender's signature headers
        // (SPEC §13); `Idempotency-Key` is the head's own `key`.
        for name in config.routes.iter().flat_map(|route| route.headers_read()) {
            if name != "idempotency-key" && !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// The origin of a request's URL as the runtime hands it over
    /// (`scheme://host[:port]`), without user info: what a browser on that
    /// page sends as `Origin`.
    ///
    /// ```
    /// use oncekey::core::RequestHead;
    /// assert_eq!(RequestHead::url_origin("https://api.example.com:8443/v1?x"), "https://api.example.com:8443");
    /// assert_eq!(RequestHead::url_origin("http://127.0.0.1:8787/"), "http://127.0.0.1:8787");
    /// ```
    pub fn url_origin(url: &str) -> String {
        let (scheme, host_port, _) = Self::url_cut(url);
        format!("{scheme}{host_port}")
    }

    /// A URL as the runtime serialises it, in three: `scheme://` (empty
    /// when there is none), the authority without user info
    /// (`host[:port]`), and the rest (path, query, fragment). Every cut is
    /// next to an ASCII byte, so between characters.
    fn url_cut(url: &str) -> (&str, &str, &str) {
        let scheme_end = url.find(':').filter(|&i| cut(url, i + 1..).starts_with("//")).map_or(0, |i| i + 3);
        let rest = cut(url, scheme_end..);
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = cut(rest, ..authority_end);
        let host_port = cut(authority, authority.rfind('@').map_or(0, |at| at + 1)..);
        (cut(url, ..scheme_end), host_port, cut(rest, authority_end..))
    }

    /// Whether the request comes from a page of its own origin, or from no
    /// browser page at all ([`from_own_origin`]).
    pub(crate) fn is_from_own_origin(&self) -> bool {
        from_own_origin(self.header("sec-fetch-site"), self.origin.as_deref(), &self.own_origin)
    }

    /// The host, path and query of a request's URL as the runtime hands it
    /// over (`scheme://host[:port]/path[?query]`, parsed and serialised by
    /// the runtime already): split, not parsed again. `?` with nothing after
    /// it is an empty query, not none; a fragment (no request carries one)
    /// is dropped.
    ///
    /// ```
    /// use oncekey::core::RequestHead;
    /// assert_eq!(
    ///     RequestHead::url_parts("https://api.example.com:8443/v1/charges?limit=3"),
    ///     ("api.example.com", "/v1/charges", Some("limit=3"))
    /// );
    /// assert_eq!(RequestHead::url_parts("http://[::1]:8787/"), ("[::1]", "/", None));
    /// ```
    pub fn url_parts(url: &str) -> (&str, &str, Option<&str>) {
        // Where the first of `stops` is in `s`, else its end. Every stop is
        // ASCII, so each cut falls between characters.
        let end = |s: &str, stops: &[u8]| s.bytes().position(|b| stops.contains(&b)).unwrap_or(s.len());
        let (_, host, target) = Self::url_cut(url);
        let target = cut(target, ..end(target, b"#"));
        let path_end = end(target, b"?");
        let (path, query) = (cut(target, ..path_end), target.get(path_end + 1..));
        let host_end = if host.starts_with('[') { end(host, b"]") + 1 } else { end(host, b":") };
        (cut(host, ..host_end.min(host.len())), if path.is_empty() { "/" } else { path }, query)
    }

    /// A header copied into [`RequestHead::headers`].
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The methods the request asks to be taken for (SPEC §13): what
    /// `X-HTTP-Method-Override`, `X-HTTP-Method` and `X-Method-Override`
    /// name, and a `_method` in the query — what Express's, Rails' and
    /// Laravel's method-override middleware run it as. Upper-case, each
    /// once, the request's own method left out.
    ///
    /// ```
    /// use oncekey::core::RequestHead;
    /// let head = RequestHead {
    ///     method: "POST".into(),
    ///     query: Some("a=1&_method=delete".into()),
    ///     headers: vec![("x-http-method-override".into(), "PUT, post".into())],
    ///     ..RequestHead::default()
    /// };
    /// assert_eq!(head.method_overrides(), ["PUT", "DELETE"]);
    /// ```
    #[inline(never)]
    pub fn method_overrides(&self) -> Vec<String> {
        let named = METHOD_OVERRIDES.iter().filter_map(|name| self.header(name)).flat_map(|value| value.split(','));
        let queried = self.query.iter().flat_map(|query| query.split('&')).filter_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            name.eq_ignore_ascii_case("_method").then_some(value)
        });
        let mut methods: Vec<String> = Vec::new();
        for method in named.chain(queried) {
            let Ok(method) = percent_encoding::percent_decode_str(method.trim()).decode_utf8() else { continue };
            let method = method.trim().to_ascii_uppercase();
            if !method.is_empty() && !method.eq_ignore_ascii_case(&self.method) && !methods.contains(&method) {
                methods.push(method);
            }
        }
        methods
    }

    /// Path and query, as the fingerprint reads them.
    pub(crate) fn path_and_query(&self) -> String {
        match &self.query {
            Some(query) => format!("{}?{query}", self.path),
            None => self.path.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RequestHead;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn url_parts_splits_what_the_runtime_serialises() {
        let rows = [
            ("https://api.example.com/v1/charges", ("api.example.com", "/v1/charges", None)),
            ("http://127.0.0.1:8787/api/orders?x=1&y=%2F", ("127.0.0.1", "/api/orders", Some("x=1&y=%2F"))),
            ("http://oncekey.test/a?", ("oncekey.test", "/a", Some(""))),
            ("http://oncekey.test/a/?b=c?d/e", ("oncekey.test", "/a/", Some("b=c?d/e"))),
            ("http://[2001:db8::1]:8080/p?q", ("[2001:db8::1]", "/p", Some("q"))),
            ("https://user:secret@host.example/p", ("host.example", "/p", None)),
            ("http://host.example/p#part", ("host.example", "/p", None)),
            ("http://host.example/p?q#part?not", ("host.example", "/p", Some("q"))),
            ("https://shop.example/orders#top?x=1", ("shop.example", "/orders", None)),
            ("http://host.example?q", ("host.example", "/", Some("q"))),
            ("http://xn--bcher-kva.example/%C3%A9", ("xn--bcher-kva.example", "/%C3%A9", None)),
        ];
        for (url, parts) in rows {
            assert_eq!(RequestHead::url_parts(url), parts, "{url}");
        }
    }

    #[test]
    fn a_reservation_number_is_the_draw_s_53_bits_and_never_0() {
        let rows: [(f64, u64); 6] = [
            (0.0, 1),
            (0.25, (1 << 51) | 1),
            (0.5, (1 << 52) | 1),
            (0.999_999_999_999_999_9, (1 << 53) - 1),
            // Not a draw Math.random() makes; still never 0.
            (-0.5, 1),
            (f64::NAN, 1),
        ];
        for (random, number) in rows {
            assert_eq!(RequestHead::reservation_number(random), number, "{random}");
        }
    }
}
