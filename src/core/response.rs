//! The origin's answer as it is stored and replayed (SPEC §3).

/// Headers that are never stored: hop-by-hop headers (RFC 9110 §7.6.1),
/// `set-cookie` (a replay must not hand one caller's session to a retry)
/// and the framing headers the runtime recomputes. Nor is any
/// `access-control-*` header ([`CORS_PREFIX`]): CORS is answered for the
/// caller at hand, and a replay to a second allowed origin must not carry
/// the first one's `Access-Control-Allow-Origin`.
const NOT_STORED: &[&str] = &[
    "connection",
    "content-length",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "set-cookie",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The prefix of the CORS response headers, never stored.
const CORS_PREFIX: &str = "access-control-";

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
    /// if it is at most `max_body_bytes` long.
    ///
    /// ```
    /// use oncekey::core::StoredResponse;
    /// let r = StoredResponse::capture(
    ///     201,
    ///     vec![("Content-Type".into(), "application/json".into()), ("Set-Cookie".into(), "s=1".into())],
    ///     b"{}".to_vec(),
    ///     1024,
    /// );
    /// assert_eq!(r.headers, vec![("content-type".to_string(), "application/json".to_string())]);
    /// assert_eq!(r.body.as_deref(), Some(&b"{}"[..]));
    /// ```
    pub fn capture(status: u16, headers: Vec<(String, String)>, body: Vec<u8>, max_body_bytes: usize) -> Self {
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
                    && !name.starts_with(CORS_PREFIX)
            })
            .collect();
        let body = (body.len() <= max_body_bytes).then_some(body);
        Self { status, headers, body }
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
                ("Set-Cookie", "a=1"),
                ("set-cookie", "b=2"),
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
        );
        assert_eq!(r.headers, h(&[("content-type", "text/plain"), ("location", "/orders/1")]));
    }

    #[test]
    fn body_limit_is_inclusive() {
        let kept = StoredResponse::capture(200, vec![], vec![0; 10], 10);
        assert_eq!(kept.body, Some(vec![0; 10]));
        assert!(!kept.body_omitted());
        let big = StoredResponse::capture(200, vec![], vec![0; 11], 10);
        assert!(big.body_omitted());
        assert_eq!(big.status, 200);
    }
}
