//! What a host reads off a request before the exchange starts.

use crate::core::Config;

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
    /// The `Origin` header, for CORS.
    pub origin: Option<String>,
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
    /// The headers the exchange reads: `content-type` and each scope
    /// source's header, for the fingerprint and the record name,
    /// `content-length`, for how the body is read, and `authorization` when
    /// the admin paths are on (SPEC §12), for their token. A host copies
    /// only these.
    ///
    /// ```
    /// use oncekey::core::{Config, RequestHead};
    /// let config = Config::from_vars(|name| (name == "IDEMPOTENCY_SCOPE").then(|| "cookie:session".to_owned())).unwrap();
    /// assert_eq!(RequestHead::headers_read(&config), ["content-type", "content-length", "cookie"]);
    /// ```
    pub fn headers_read(config: &Config) -> Vec<&str> {
        let mut names: Vec<&str> = ["content-type", "content-length"]
            .into_iter()
            .chain(config.scope.iter().map(|source| source.header()))
            .collect();
        if config.admin_token.is_some() && !names.contains(&"authorization") {
            names.push("authorization");
        }
        names
    }

    /// A header copied into [`RequestHead::headers`].
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Path and query, as the fingerprint reads them.
    pub(crate) fn path_and_query(&self) -> String {
        match &self.query {
            Some(query) => format!("{}?{query}", self.path),
            None => self.path.clone(),
        }
    }
}
