//! The answers the exchange gives a caller, as status, headers and body:
//! problems, replays, preflights and the origin's own answers, each with
//! the headers every answer that passed through the layer carries
//! (`Server-Timing`, CORS for an allowed caller).

use super::log::Timing;
use crate::core::{Config, PROBLEM_CONTENT_TYPE, Problem, StoredResponse, preflight_allow_headers};

/// Headers a cross-origin caller may read on the layer's answers.
/// Headers about the body's bytes, left out of a replay whose body was not
/// kept (SPEC §3).
const DESCRIBE_THE_BODY: [&str; 5] = ["content-encoding", "content-range", "content-digest", "repr-digest", "etag"];

const EXPOSED: &str = "Idempotent-Replayed, Idempotent-Body-Omitted, Retry-After, Server-Timing";

/// An answer for the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// Every header, in order (a name may repeat).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: ReplyBody,
    /// Give the body's forms their keys as it streams to the caller (SPEC
    /// §8, `IDEMPOTENCY_FORMS=inject`): the rewriter reports each form and
    /// places what [`page_form_keys`](crate::core::page_form_keys) returns.
    /// The headers are already those of the rewritten body.
    pub form_keys: Option<FormRewrite>,
}

/// How an answer's forms get their keys (SPEC §8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormRewrite {
    /// The page's own origin, `scheme://host[:port]`: a form that could
    /// send its key to any other gets none.
    pub page_origin: String,
    /// The longest tag the rewriter may be handed, in bytes, when the body
    /// could hold a longer one (its length unknown, or over it); 0 when it
    /// cannot, and the body goes to the rewriter as it is
    /// ([`LONGEST_TAG_BYTES`](crate::core::LONGEST_TAG_BYTES)).
    pub longest_tag: u32,
}

/// Where an answer's body comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplyBody {
    /// These bytes (none at all when empty: a 204 must not carry even an
    /// empty body).
    Bytes(Vec<u8>),
    /// The body of the origin response the host kept from
    /// [`Action::Forward`](super::Action::Forward), streamed as it comes.
    Origin,
}

impl Reply {
    /// An answer as it is, its forms untouched.
    pub fn new(status: u16, headers: Vec<(String, String)>, body: ReplyBody) -> Self {
        Self { status, headers, body, form_keys: None }
    }

    /// One of the layer's own errors: problem+json, `Cache-Control:
    /// no-store`, and `Retry-After` for the problems that have one.
    pub fn problem(problem: &Problem) -> Self {
        let mut headers = vec![
            ("content-type".to_owned(), PROBLEM_CONTENT_TYPE.to_owned()),
            ("cache-control".to_owned(), "no-store".to_owned()),
        ];
        if let Some(secs) = problem.retry_after_secs() {
            headers.push(("retry-after".to_owned(), secs.to_string()));
        }
        match problem {
            Problem::Unauthorized => headers.push(("www-authenticate".to_owned(), "Bearer".to_owned())),
            Problem::MethodNotAllowed { allow } => headers.push(("allow".to_owned(), (*allow).to_owned())),
            _ => {}
        }
        Self::new(problem.status(), headers, ReplyBody::Bytes(problem.to_json().into_bytes()))
    }

    /// One of the layer's own JSON answers (the admin paths'), not to be
    /// cached.
    pub fn json(status: u16, body: String) -> Self {
        let headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("cache-control".to_owned(), "no-store".to_owned()),
        ];
        Self::new(status, headers, ReplyBody::Bytes(body.into_bytes()))
    }

    /// A stored answer replayed to a request from `origin` (its `Origin`):
    /// its status, headers (the origin's CORS only to the `Origin` they
    /// answered, its `set-cookie` only to the cookie `jar` it answered) and body (or an empty body and `Idempotent-Body-Omitted:
    /// true`), marked as a replay.
    pub fn replay(response: &StoredResponse, origin: Option<&str>, jar: Option<&str>) -> Self {
        let mut headers = response.headers_for(origin, jar);
        set(&mut headers, "idempotent-replayed", "true");
        set(&mut headers, "cache-control", "no-store");
        if response.body_omitted() {
            // Headers that describe bytes no longer there would make a client
            // decode, verify or cache an empty body as if it were them.
            headers.retain(|(name, _)| !DESCRIBE_THE_BODY.iter().any(|d| name.eq_ignore_ascii_case(d)));
            set(&mut headers, "idempotent-body-omitted", "true");
        }
        Self::new(response.status, headers, ReplyBody::Bytes(response.body.clone().unwrap_or_default()))
    }

    /// The answer to an allowed CORS preflight for a covered request.
    pub fn preflight(config: &Config, origin: &str, requested_headers: Option<&str>) -> Self {
        let credentials = config.cors_credentials.then(|| ("access-control-allow-credentials", "true".to_owned()));
        let mut methods = config.methods.clone();
        // A route's methods are covered too, whatever IDEMPOTENCY_METHODS says.
        for method in config.routes.iter().flat_map(|route| &route.methods) {
            if !methods.contains(method) {
                methods.push(method.clone());
            }
        }
        methods.extend(["GET", "HEAD", "OPTIONS"].map(String::from));
        let headers = [
            ("access-control-allow-origin", origin.to_owned()),
            ("vary", "Origin".to_owned()),
            ("access-control-allow-methods", methods.join(", ")),
            ("access-control-allow-headers", preflight_allow_headers(requested_headers)),
            ("access-control-max-age", "600".to_owned()),
            ("cache-control", "no-store".to_owned()),
        ];
        let headers = headers.into_iter().chain(credentials).map(|(name, value)| (name.to_owned(), value)).collect();
        Self::new(204, headers, ReplyBody::Bytes(Vec::new()))
    }

    /// Adds what every answer that passed through the layer carries: the
    /// tiers' `Server-Timing`, and for an allowed cross-origin caller its
    /// `Access-Control-Allow-Origin` (unless the answer has one) and the
    /// layer's headers in `Access-Control-Expose-Headers`, merged with what
    /// the origin exposes (a 201's `Location` stays readable); with
    /// `credentials` (`IDEMPOTENCY_CORS_CREDENTIALS`),
    /// `Access-Control-Allow-Credentials: true`.
    pub(crate) fn decorated(mut self, timing: &Timing, cors: Option<&str>, credentials: bool) -> Self {
        if let Some(value) = timing.header_value() {
            self.headers.push(("server-timing".to_owned(), value));
        }
        if let Some(origin) = cors {
            if !has(&self.headers, "access-control-allow-origin") {
                self.headers.push(("access-control-allow-origin".to_owned(), origin.to_owned()));
                self.headers.push(("vary".to_owned(), "Origin".to_owned()));
            }
            if credentials {
                set(&mut self.headers, "access-control-allow-credentials", "true");
            }
            let exposed = merge_exposed(&self.headers);
            set(&mut self.headers, "access-control-expose-headers", &exposed);
        }
        self
    }
}

/// The origin's exposed header names (every `Access-Control-Expose-Headers`
/// value, in order) followed by the layer's that are not among them, names
/// compared without case. A `*` from the origin stays: it already exposes
/// everything to a caller without credentials, and is kept for one with.
fn merge_exposed(headers: &[(String, String)]) -> String {
    let mut names: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("access-control-expose-headers"))
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    for ours in EXPOSED.split(',').map(str::trim) {
        if !names.iter().any(|n| n.eq_ignore_ascii_case(ours)) {
            names.push(ours);
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    names.retain(|n| {
        let new = !seen.iter().any(|s| s.eq_ignore_ascii_case(n));
        seen.push(n);
        new
    });
    names.join(", ")
}

/// Whether `name` (lower-case) is among `headers`, in any case.
fn has(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// Sets `name` (lower-case) to `value`, replacing every earlier value.
fn set(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    headers.push((name.to_owned(), value.to_owned()));
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use crate::core::{Completed, Fingerprint, StoredResponse};

    #[test]
    fn a_replay_without_its_body_drops_the_headers_that_describe_the_missing_bytes() {
        let headers: Vec<(String, String)> = [
            ("content-type", "application/json"),
            ("Content-Encoding", "gzip"),
            ("content-range", "bytes 0-9/10"),
            ("content-digest", "sha-256=:x:"),
            ("repr-digest", "sha-256=:y:"),
            ("etag", "\"v1\""),
            ("location", "/orders/1"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .into();
        let stored = |body| Completed {
            fingerprint: Fingerprint([1; 32]),
            attempt: 1,
            response: StoredResponse { status: 201, headers: headers.clone(), body }.into(),
            expires_at: 9,
            copied: false,
        };
        let names = |reply: &Reply| reply.headers.iter().map(|(n, _)| n.to_ascii_lowercase()).collect::<Vec<_>>();
        let omitted = Reply::replay(stored(None).response.plain().unwrap(), None, None);
        assert_eq!(
            names(&omitted),
            ["content-type", "location", "idempotent-replayed", "cache-control", "idempotent-body-omitted"]
        );
        let whole = Reply::replay(stored(Some(b"0123456789".to_vec())).response.plain().unwrap(), None, None);
        assert!(
            ["content-encoding", "etag", "content-digest"].iter().all(|h| names(&whole).contains(&h.to_string())),
            "kept with the body"
        );
    }
}
