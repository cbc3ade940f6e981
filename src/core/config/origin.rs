//! Where the proxy sends a protected request (SPEC §6, §10): another Worker
//! bound as `ORIGIN`, a fixed URL, or the request's own URL. The host says
//! what is bound; the choice, and the error when nothing is, are made here.

use crate::core::RequestHead;
use crate::core::config::bindings::ORIGIN_BINDING;
use crate::core::config::variables::ConfigError;

/// The value of `ORIGIN_URL`, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OriginUrl {
    /// An `http://` or `https://` URL, without a trailing slash: the
    /// request's path and query are appended to it.
    Fixed(String),
    /// `request`: each request goes to its own URL, for a worker on a route
    /// in front of the zone's origin.
    Request,
}

/// The origin a proxy forwards to, in order of precedence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Another Worker, through the service binding `ORIGIN`.
    Service,
    /// A URL (`ORIGIN_URL`), the request's path and query appended.
    Url(String),
    /// The request's own URL (`ORIGIN_URL=request`).
    SameUrl,
}

impl Origin {
    /// Chooses the proxy's origin: a service binding `ORIGIN` wins over
    /// `ORIGIN_URL`.
    ///
    /// ```
    /// use oncekey::core::{Origin, OriginUrl};
    /// let url = OriginUrl::Fixed("https://api.example.com".into());
    /// assert_eq!(Origin::choose(true, Some(&url)).unwrap(), Origin::Service);
    /// assert_eq!(Origin::choose(false, Some(&url)).unwrap(), Origin::Url("https://api.example.com".into()));
    /// assert_eq!(Origin::choose(false, None).unwrap_err().variable, "ORIGIN_URL");
    /// ```
    ///
    /// # Errors
    /// A [`ConfigError`] naming `ORIGIN_URL` when neither is configured: a
    /// proxy with nowhere to send requests is misconfigured.
    pub fn choose(service_bound: bool, url: Option<&OriginUrl>) -> Result<Self, ConfigError> {
        match (service_bound, url) {
            (true, _) => Ok(Self::Service),
            (false, Some(OriginUrl::Fixed(url))) => Ok(Self::Url(url.clone())),
            (false, Some(OriginUrl::Request)) => Ok(Self::SameUrl),
            (false, None) => Err(ConfigError {
                variable: "ORIGIN_URL",
                reason: format!(
                    "no origin configured: set ORIGIN_URL to your API's URL (or `request` to forward each \
                     request to its own URL), or bind another Worker as the service `{ORIGIN_BINDING}`"
                ),
            }),
        }
    }

    /// Whether the origin's request carries the client's `cf` (country,
    /// colo, bot score, mTLS verdict): a Worker may decide on it, so it gets
    /// it as it would without oncekey; a URL never sees it (the edge reads a
    /// subrequest's `cf` as its own settings), and copying it costs the
    /// runtime a JSON round trip per copy.
    ///
    /// ```
    /// use oncekey::core::Origin;
    /// assert!(Origin::Service.reads_client_cf());
    /// assert!(!Origin::Url("https://api.example.com".into()).reads_client_cf());
    /// assert!(!Origin::SameUrl.reads_client_cf());
    /// ```
    pub fn reads_client_cf(&self) -> bool {
        matches!(self, Self::Service)
    }

    /// The URL a request sent to `request_url` (as the runtime serialises
    /// it) goes to, when the origin is a URL: the request's path and query
    /// after it; `None` for the other kinds, which keep the request's own URL.
    ///
    /// ```
    /// use oncekey::core::Origin;
    /// let origin = Origin::Url("https://api.example.com/base".into());
    /// let target = origin.target("https://proxy.example/v1/pay?a=1");
    /// assert_eq!(target.as_deref(), Some("https://api.example.com/base/v1/pay?a=1"));
    /// assert_eq!(Origin::SameUrl.target("https://proxy.example/v1/pay"), None);
    /// ```
    pub fn target(&self, request_url: &str) -> Option<String> {
        let Self::Url(base) = self else { return None };
        let (_, path, query) = RequestHead::url_parts(request_url);
        Some(match query {
            Some(query) => format!("{base}{path}?{query}"),
            None => format!("{base}{path}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn every_kind_and_its_precedence() {
        let fixed = OriginUrl::Fixed("http://127.0.0.1:3000".into());
        let cases = [
            (true, None, Some(Origin::Service)),
            (true, Some(&fixed), Some(Origin::Service)),
            (true, Some(&OriginUrl::Request), Some(Origin::Service)),
            (false, Some(&fixed), Some(Origin::Url("http://127.0.0.1:3000".into()))),
            (false, Some(&OriginUrl::Request), Some(Origin::SameUrl)),
            (false, None, None),
        ];
        for (bound, url, expected) in cases {
            let chosen = Origin::choose(bound, url);
            match expected {
                Some(origin) => assert_eq!(chosen.unwrap(), origin, "{bound} {url:?}"),
                None => {
                    let err = chosen.unwrap_err();
                    assert_eq!(err.variable, "ORIGIN_URL");
                    assert!(err.to_string().contains("ORIGIN"), "{err}");
                }
            }
        }
    }

    #[test]
    fn only_a_url_origin_rewrites_the_target() {
        let url = Origin::Url("https://api.example.com".into());
        assert_eq!(url.target("https://proxy.example/").as_deref(), Some("https://api.example.com/"));
        assert_eq!(url.target("https://proxy.example/x?").as_deref(), Some("https://api.example.com/x?"));
        assert_eq!(Origin::Service.target("https://proxy.example/x"), None);
        assert_eq!(Origin::SameUrl.target("https://proxy.example/x?q"), None);
    }
}
