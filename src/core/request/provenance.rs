//! Where a request's key came from (SPEC §13, "Every key has a provenance,
//! and the rules follow it"): one rule per source, applied in one place by
//! the exchange, so a new key source cannot skip the rules of the others.

use std::fmt;

/// Where a request's key was found.
///
/// ```
/// use oncekey::core::Provenance;
/// assert!(Provenance::Header.admits(false), "a header key comes from code that chose to send it");
/// assert!(!Provenance::BodyField.admits(false), "another site's form plants no key");
/// assert!(Provenance::FormKeyField.admits(true));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// A request header: `Idempotency-Key`, or a route's `header:` source.
    /// A browser sends one cross-origin only after a CORS preflight the
    /// layer or the API allowed (SPEC §5), so no page can set it unasked.
    Header,
    /// A route's `json:` or `form:` source: a member or field of the body.
    BodyField,
    /// The `idempotency_key` field the edge gives HTML forms (SPEC §8).
    FormKeyField,
    /// A webhook delivery's id, read once its signature verifies.
    DeliveryId,
}

impl Provenance {
    /// Whether a key from here may key a request that comes from the page's
    /// own origin (`from_own_origin`, [`from_own_origin`]) or not. Any page
    /// can post a body to any site, with the victim's cookies, as a plain
    /// form or a `text/plain` fetch that needs no preflight: a key read
    /// from a body is used only from the page's own origin, or it would let
    /// another site plant a key and then read the victim's answer as its
    /// replay.
    pub fn admits(self, from_own_origin: bool) -> bool {
        match self {
            Self::BodyField | Self::FormKeyField => from_own_origin,
            Self::Header | Self::DeliveryId => true,
        }
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Header => "a header",
            Self::BodyField => "the route's body source",
            Self::FormKeyField => "the idempotency_key field",
            Self::DeliveryId => "the delivery id",
        })
    }
}

/// Whether a request comes from a page of its own origin, or from no
/// browser page at all (SPEC §8): its `Sec-Fetch-Site` is `same-origin`,
/// or, without one (an older browser), its `Origin` is `own_origin` or
/// absent (curl, a server-side client). `same-site` is another origin: a
/// user-content subdomain, whose posts carry the site's SameSite cookies.
///
/// ```
/// use oncekey::core::from_own_origin;
/// let own = "https://shop.example";
/// assert!(from_own_origin(Some("same-origin"), Some(own), own));
/// assert!(!from_own_origin(Some("same-site"), Some("https://u.shop.example"), own));
/// assert!(!from_own_origin(None, Some("https://evil.example"), own));
/// assert!(from_own_origin(None, None, own), "not a browser");
/// ```
pub fn from_own_origin(sec_fetch_site: Option<&str>, origin: Option<&str>, own_origin: &str) -> bool {
    match sec_fetch_site {
        Some(site) => site.trim().eq_ignore_ascii_case("same-origin"),
        None => origin.is_none_or(|origin| origin == own_origin),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn each_source_by_each_site_relation() {
        let own = "https://shop.example";
        // (Sec-Fetch-Site, Origin, from the page's own origin)
        let relations = [
            (Some("same-origin"), Some(own), true),
            (Some("same-origin"), None, true),
            (Some("Same-Origin "), Some(own), true),
            (Some("same-site"), Some("https://u.shop.example"), false),
            (Some("cross-site"), Some("https://evil.example"), false),
            (Some("none"), None, false),
            (None, Some(own), true),
            (None, Some("https://evil.example"), false),
            (None, Some("null"), false),
            (None, None, true),
        ];
        // (source, taken from another origin)
        let sources = [
            (Provenance::Header, true),
            (Provenance::DeliveryId, true),
            (Provenance::BodyField, false),
            (Provenance::FormKeyField, false),
        ];
        for (site, origin, own_origin) in relations {
            assert_eq!(from_own_origin(site, origin, own), own_origin, "{site:?} {origin:?}");
            for (source, cross_origin) in sources {
                assert_eq!(source.admits(own_origin), own_origin || cross_origin, "{source:?} {site:?} {origin:?}");
            }
        }
    }
}
