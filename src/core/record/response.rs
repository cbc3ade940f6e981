//! The origin's answer as it is stored and replayed (SPEC §3).

/// Headers that are never stored: hop-by-hop headers (RFC 9110 §7.6.1)
/// and the framing headers the runtime recomputes. The origin's
/// `access-control-*` headers are stored with the `Origin` they answered
/// ([`CORS_ORIGIN`]) and replayed to that `Origin` only; its `set-cookie`
/// headers with the cookie jar of the browser that got them
/// ([`COOKIE_JAR`]), and replayed to that browser only (SPEC §3).
const NOT_STORED: &[&str] = &[
    "connection",
    "content-length",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The prefix of the CORS response headers.
pub(crate) const CORS_PREFIX: &str = "access-control-";

/// The stored header that holds the `Origin` of the request whose answer
/// carried CORS headers (empty: it had none). A colon cannot begin a field
/// name, so no origin's header is ever mistaken for it; it is never sent.
pub(crate) const CORS_ORIGIN: &str = ":cors-origin";

/// The stored header that holds the cookie jar ([`cookie_jar`]) of the
/// browser whose request got the answer's `set-cookie` headers: they are
/// replayed to that jar only. Never sent; never in a KV copy.
pub(crate) const COOKIE_JAR: &str = ":cookie-jar";

const SET_COOKIE: &str = "set-cookie";

/// A browser's cookie jar as the layer tells one from another: a digest of
/// its request's `Cookie` header (none: the empty one), never the cookies.
///
/// ```
/// use oncekey::core::cookie_jar;
/// assert_eq!(cookie_jar(Some("sid=1")), cookie_jar(Some("sid=1")));
/// assert_ne!(cookie_jar(Some("sid=1")), cookie_jar(Some("sid=2")));
/// assert_eq!(cookie_jar(None).len(), 64);
/// ```
pub fn cookie_jar(cookie: Option<&str>) -> String {
    let mut hasher = crate::core::request::digest::PartHasher::new("oncekey/cookie-jar/1");
    hasher.part(cookie.unwrap_or_default().as_bytes());
    crate::core::request::digest::hex(&hasher.finish())
}

/// A response as kept in a `Completed` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredResponse {
    /// The origin's status code.
    pub status: u16,
    /// Headers in the origin's order, names lower-case, without the ones
    /// that are never stored.
    pub headers: Vec<(String, String)>,
    /// The body, or `None` when it was over the size limit (a replay then
    /// carries `Idempotent-Body-Omitted: true` and an empty body).
    pub body: Option<Vec<u8>>,
}

impl StoredResponse {
    /// Captures an origin answer for storage: drops the headers that are
    /// never stored (and any named in `Connection`), and keeps the body only
    /// if it is at most `max_body_bytes` long. Its CORS headers are kept
    /// with `origin`, the request's `Origin`, and its `set-cookie` headers
    /// with `jar`, the requesting browser's [`cookie_jar`] — or dropped when
    /// `jar` is `None` (a request from another site) —
    /// ([`StoredResponse::headers_for`]).
    ///
    /// ```
    /// use oncekey::core::StoredResponse;
    /// let r = StoredResponse::capture(
    ///     201,
    ///     vec![("Content-Type".into(), "application/json".into()), ("Set-Cookie".into(), "s=1".into())],
    ///     b"{}".to_vec(),
    ///     1024,
    ///     None,
    ///     None,
    /// );
    /// assert_eq!(r.headers, vec![("content-type".to_string(), "application/json".to_string())]);
    /// assert_eq!(r.body.as_deref(), Some(&b"{}"[..]));
    /// ```
    pub fn capture(
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        max_body_bytes: usize,
        origin: Option<&str>,
        jar: Option<&str>,
    ) -> Self {
        let named_in_connection: Vec<String> = headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
            .flat_map(|(_, value)| value.split(',').map(|n| n.trim().to_ascii_lowercase()))
            .collect();
        let headers = headers
            .into_iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), value))
            .filter(|(name, _)| {
                !NOT_STORED.contains(&name.as_str())
                    && !named_in_connection.contains(name)
                    && !name.starts_with(':')
                    && (jar.is_some() || name != SET_COOKIE)
            })
            .collect::<Vec<_>>();
        let mut headers = headers;
        if headers.iter().any(|(name, _)| name.starts_with(CORS_PREFIX)) {
            headers.push((CORS_ORIGIN.to_owned(), origin.unwrap_or_default().to_owned()));
        }
        if let Some(jar) = jar.filter(|_| headers.iter().any(|(name, _)| name == SET_COOKIE)) {
            headers.push((COOKIE_JAR.to_owned(), jar.to_owned()));
        }
        let body = (body.len() <= max_body_bytes).then_some(body);
        Self { status, headers, body }
    }

    /// The stored headers as a replay to a request from `origin` (its
    /// `Origin`, if any) and cookie jar `jar` carries them: the origin's
    /// CORS headers only when that is the `Origin` they answered, so a
    /// browser's retry reads its replay as it read the first answer and no
    /// other site gets the first caller's permission; its `set-cookie`
    /// headers only to the jar that got them, so a double-submitted sign-in
    /// signs the person in and nobody else ever receives their session. A
    /// record stored before these were kept has none, and replays as it
    /// always did.
    ///
    /// ```
    /// use oncekey::core::{StoredResponse, cookie_jar};
    /// let cors = vec![("access-control-allow-origin".into(), "https://a.example".into())];
    /// let r = StoredResponse::capture(201, cors, vec![], 1024, Some("https://a.example"), None);
    /// assert_eq!(r.headers_for(Some("https://a.example"), None).len(), 1);
    /// assert!(r.headers_for(Some("https://b.example"), None).is_empty());
    /// assert!(r.headers_for(None, None).is_empty());
    /// let jar = cookie_jar(Some("sid=1"));
    /// let session = vec![("set-cookie".into(), "sid=2".into())];
    /// let r = StoredResponse::capture(303, session, vec![], 1024, None, Some(&jar));
    /// assert_eq!(r.headers_for(None, Some(&jar)).len(), 1);
    /// assert!(r.headers_for(None, Some(&cookie_jar(None))).is_empty());
    /// ```
    pub fn headers_for(&self, origin: Option<&str>, jar: Option<&str>) -> Vec<(String, String)> {
        let marked = |marker: &str| self.headers.iter().find(|(name, _)| name == marker).map(|(_, v)| v.as_str());
        let same_origin = marked(CORS_ORIGIN) == Some(origin.unwrap_or_default());
        let same_jar = jar.is_some() && marked(COOKIE_JAR) == jar;
        self.headers
            .iter()
            .filter(|(name, _)| {
                !name.starts_with(':')
                    && (same_origin || !name.starts_with(CORS_PREFIX))
                    && (same_jar || name != SET_COOKIE)
            })
            .cloned()
            .collect()
    }

    /// Whether it keeps a browser's `set-cookie` headers (a record holding
    /// them is written in a layout earlier code cannot read, so a rollback
    /// fails closed instead of replaying them to anyone).
    pub fn keeps_cookies(&self) -> bool {
        self.headers.iter().any(|(name, _)| name == COOKIE_JAR)
    }

    /// This response without what only the object may keep: the
    /// `set-cookie` headers and their jar, for a KV copy (SPEC §3: a session
    /// never goes to KV).
    pub fn without_cookies(&self) -> Self {
        let headers =
            self.headers.iter().filter(|(name, _)| name != SET_COOKIE && name != COOKIE_JAR).cloned().collect();
        Self { headers, ..self.clone() }
    }

    /// Its kept `set-cookie` headers and their jar alone (status 0, no
    /// body): the part of it [`without_cookies`](Self::without_cookies)
    /// leaves out.
    pub fn cookies_only(&self) -> Self {
        let headers =
            self.headers.iter().filter(|(name, _)| name == SET_COOKIE || name == COOKIE_JAR).cloned().collect();
        Self { status: 0, headers, body: None }
    }

    /// Whether the body was too large to keep.
    pub fn body_omitted(&self) -> bool {
        self.body.is_none()
    }
}

/// Whether a host may read an origin's answer whole, in one call, rather
/// than chunk by chunk up to `keep_at_most` bytes: only when its declared
/// `Content-Length` fits and counts the bytes the host will hold. A
/// `Content-Encoding` other than `identity` means the runtime hands over
/// decoded bytes, which may be far more than declared (SPEC §3: the limit
/// counts the body as read), so the declaration is not trusted then.
///
/// ```
/// use oncekey::core::reads_whole;
/// assert!(reads_whole(Some("512"), None, 1024));
/// assert!(!reads_whole(Some("512"), Some("gzip"), 1024), "decoded, it may be far larger");
/// assert!(reads_whole(Some("512"), Some("identity"), 1024));
/// assert!(!reads_whole(Some("4096"), None, 1024) && !reads_whole(None, None, 1024));
/// ```
pub fn reads_whole(content_length: Option<&str>, content_encoding: Option<&str>, keep_at_most: usize) -> bool {
    let declared = content_length.and_then(|n| n.trim().parse::<usize>().ok());
    let encoded = content_encoding.is_some_and(|e| !e.trim().eq_ignore_ascii_case("identity"));
    !encoded && declared.is_some_and(|n| n <= keep_at_most)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn drops_headers_never_stored() {
        let r = StoredResponse::capture(
            200,
            h(&[
                ("Content-Type", "text/plain"),
                ("Connection", "keep-alive, X-Hop"),
                ("X-Hop", "1"),
                ("Keep-Alive", "timeout=5"),
                ("Transfer-Encoding", "chunked"),
                ("Content-Length", "2"),
                ("Upgrade", "h2c"),
                ("TE", "trailers"),
                ("Trailer", "x"),
                ("Proxy-Authenticate", "Basic"),
                ("Location", "/orders/1"),
                ("Access-Control-Allow-Origin", "https://a.example"),
                ("access-control-expose-headers", "Location"),
                ("Access-Control-Allow-Credentials", "true"),
            ]),
            b"ok".to_vec(),
            10,
            Some("https://a.example"),
            None,
        );
        let cors = [
            ("access-control-allow-origin", "https://a.example"),
            ("access-control-expose-headers", "Location"),
            ("access-control-allow-credentials", "true"),
        ];
        let mut kept = h(&[("content-type", "text/plain"), ("location", "/orders/1")]);
        kept.splice(2..2, h(&cors));
        kept.push((CORS_ORIGIN.into(), "https://a.example".into()));
        assert_eq!(r.headers, kept, "CORS kept, with the Origin it answered");
    }

    #[test]
    fn cors_headers_replay_to_the_origin_they_answered_only() {
        let cors = h(&[("Vary", "Origin"), ("Access-Control-Allow-Origin", "https://a.example")]);
        let from_a = StoredResponse::capture(201, cors.clone(), vec![], 10, Some("https://a.example"), None);
        let vary = h(&[("vary", "Origin")]);
        assert_eq!(
            from_a.headers_for(Some("https://a.example"), None),
            h(&[("vary", "Origin"), ("access-control-allow-origin", "https://a.example")])
        );
        assert_eq!(from_a.headers_for(Some("https://b.example"), None), vary);
        assert_eq!(from_a.headers_for(None, None), vary, "a caller with no Origin");
        // Answered to a request with no Origin (a wildcard, say): replayed to such requests only.
        let no_origin =
            StoredResponse::capture(201, h(&[("access-control-allow-origin", "*")]), vec![], 10, None, None);
        assert_eq!(no_origin.headers_for(None, None), h(&[("access-control-allow-origin", "*")]));
        assert!(no_origin.headers_for(Some("https://a.example"), None).is_empty());
        // A header named like a marker from the origin is not stored.
        let forged = h(&[(CORS_ORIGIN, "https://b.example"), (COOKIE_JAR, "00")]);
        assert!(StoredResponse::capture(201, forged, vec![], 10, None, Some("00")).headers.is_empty());
        // A record stored before CORS was kept: no marker, no CORS, replayed as before.
        let old = StoredResponse { status: 201, headers: h(&[("location", "/o/1")]), body: None };
        assert_eq!(old.headers_for(Some("https://a.example"), None), h(&[("location", "/o/1")]));
    }

    #[test]
    fn set_cookie_replays_to_the_browser_that_got_it_only() {
        let jar = cookie_jar(Some("csrf=x"));
        let answer = h(&[("Location", "/home"), ("Set-Cookie", "sid=s1; HttpOnly"), ("set-cookie", "theme=dark")]);
        let signed_in = StoredResponse::capture(303, answer.clone(), vec![], 10, None, Some(&jar));
        assert!(signed_in.keeps_cookies());
        let cookies = h(&[("location", "/home"), ("set-cookie", "sid=s1; HttpOnly"), ("set-cookie", "theme=dark")]);
        assert_eq!(signed_in.headers_for(None, Some(&jar)), cookies, "the same browser: signed in");
        let others = [None, Some(cookie_jar(None)), Some(cookie_jar(Some("csrf=y")))];
        for other in others {
            assert_eq!(signed_in.headers_for(None, other.as_deref()), h(&[("location", "/home")]), "{other:?}");
        }
        // From another site: never kept at all.
        let cross = StoredResponse::capture(303, answer, vec![], 10, None, None);
        assert_eq!(cross.headers, h(&[("location", "/home")]));
        assert!(!cross.keeps_cookies());
        // A KV copy never holds a session.
        assert_eq!(signed_in.without_cookies().headers, h(&[("location", "/home")]));
    }

    #[test]
    fn body_limit_is_inclusive() {
        let kept = StoredResponse::capture(200, vec![], vec![0; 10], 10, None, None);
        assert_eq!(kept.body, Some(vec![0; 10]));
        assert!(!kept.body_omitted());
        let big = StoredResponse::capture(200, vec![], vec![0; 11], 10, None, None);
        assert!(big.body_omitted());
        assert_eq!(big.status, 200);
    }
}
