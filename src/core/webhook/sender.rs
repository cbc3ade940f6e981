//! The webhook senders a route may name (SPEC §13), and the headers each
//! signs its deliveries with.

use std::fmt;
use std::str::FromStr;

/// Who sends a route's webhooks, and so how their signature is checked and
/// where their delivery id, the key, is found.
///
/// | sender | signature | signed | delivery id | timestamp |
/// |---|---|---|---|---|
/// | `standard` | `webhook-signature: v1,<base64>` (space separated) | `{id}.{timestamp}.{body}` | `webhook-id` | `webhook-timestamp`, 5 minutes |
/// | `github` | `X-Hub-Signature-256: sha256=<hex>` | the body | `X-GitHub-Delivery` | none |
/// | `stripe` | `Stripe-Signature: t=<unix>,v1=<hex>` | `{t}.{body}` | the event's `id` (in the body) | `t`, 5 minutes |
/// | `shopify` | `X-Shopify-Hmac-Sha256: <base64>` | the body | `X-Shopify-Webhook-Id` | none |
///
/// All four sign with HMAC-SHA256. Standard Webhooks' headers may also
/// come with Svix's brand, `svix-id`, `svix-timestamp` and
/// `svix-signature`, as Svix sends them unless told otherwise (and Clerk
/// and Resend, which send through Svix, do): each is read when its
/// `webhook-` name is absent, as Svix's own libraries read them.
///
/// ```
/// use oncekey::core::Sender;
/// assert_eq!("github".parse::<Sender>(), Ok(Sender::Github));
/// assert_eq!(Sender::Stripe.to_string(), "stripe");
/// assert!("svix".parse::<Sender>().is_err(), "Svix sends Standard Webhooks: `standard`");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sender {
    /// Standard Webhooks (standardwebhooks.com): Svix, Resend, Clerk and
    /// others. The secret is `whsec_` and base64.
    Standard,
    /// GitHub. The secret is the webhook's secret as typed in its settings.
    Github,
    /// Stripe. The secret is the endpoint's signing secret, `whsec_…`,
    /// used whole.
    Stripe,
    /// Shopify. The secret is the app's client secret.
    Shopify,
}

/// A sender name that is none of [`Sender`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a webhook sender: `standard`, `github`, `stripe` or `shopify`")]
pub struct UnknownSender;

impl FromStr for Sender {
    type Err = UnknownSender;

    /// `standard`, `github`, `stripe` or `shopify`, in lower case as written.
    ///
    /// # Errors
    /// [`UnknownSender`] for any other text.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|sender| sender.name() == name).ok_or(UnknownSender)
    }
}

impl fmt::Display for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Standard Webhooks' delivery id.
pub(super) const WEBHOOK_ID: &str = "webhook-id";
/// Standard Webhooks' timestamp, unix seconds.
pub(super) const WEBHOOK_TIMESTAMP: &str = "webhook-timestamp";
/// Standard Webhooks' signatures.
pub(super) const WEBHOOK_SIGNATURE: &str = "webhook-signature";
/// `webhook-id` as Svix brands it.
pub(super) const SVIX_ID: &str = "svix-id";
/// `webhook-timestamp` as Svix brands it.
pub(super) const SVIX_TIMESTAMP: &str = "svix-timestamp";
/// `webhook-signature` as Svix brands it.
pub(super) const SVIX_SIGNATURE: &str = "svix-signature";
/// GitHub's signature.
pub(super) const GITHUB_SIGNATURE: &str = "x-hub-signature-256";
/// GitHub's delivery id.
pub(super) const GITHUB_DELIVERY: &str = "x-github-delivery";
/// Stripe's timestamp and signatures.
pub(super) const STRIPE_SIGNATURE: &str = "stripe-signature";
/// Shopify's signature.
pub(super) const SHOPIFY_HMAC: &str = "x-shopify-hmac-sha256";
/// Shopify's delivery id.
pub(super) const SHOPIFY_WEBHOOK_ID: &str = "x-shopify-webhook-id";
/// Shopify's event type (`orders/create`), unsigned.
pub(super) const SHOPIFY_TOPIC: &str = "x-shopify-topic";
/// GitHub's event type (`push`), unsigned.
pub(super) const GITHUB_EVENT: &str = "x-github-event";

impl Sender {
    /// Every sender, in the order the docs list them.
    pub const ALL: [Self; 4] = [Self::Standard, Self::Github, Self::Stripe, Self::Shopify];

    /// The name a route writes (`"webhook": "stripe"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Github => "github",
            Self::Stripe => "stripe",
            Self::Shopify => "shopify",
        }
    }

    /// The request headers a delivery's check and its log line read,
    /// lower-case: a host copies these off a request to a webhook route.
    ///
    /// ```
    /// use oncekey::core::Sender;
    /// assert_eq!(Sender::Github.headers(), ["x-hub-signature-256", "x-github-delivery", "x-github-event"]);
    /// ```
    pub fn headers(self) -> &'static [&'static str] {
        match self {
            Self::Standard => {
                &[WEBHOOK_ID, WEBHOOK_TIMESTAMP, WEBHOOK_SIGNATURE, SVIX_ID, SVIX_TIMESTAMP, SVIX_SIGNATURE]
            }
            Self::Github => &[GITHUB_SIGNATURE, GITHUB_DELIVERY, GITHUB_EVENT],
            Self::Stripe => &[STRIPE_SIGNATURE],
            Self::Shopify => &[SHOPIFY_HMAC, SHOPIFY_WEBHOOK_ID, SHOPIFY_TOPIC],
        }
    }

    /// How far a signed timestamp may be from the clock, either way, in
    /// seconds: 5 minutes for the senders that sign one (Standard Webhooks'
    /// reference libraries and Stripe's both use 300 s), `None` for those
    /// that do not (GitHub, Shopify), whose deliveries a copy could replay
    /// at any time.
    pub fn tolerance_secs(self) -> Option<u64> {
        match self {
            Self::Standard | Self::Stripe => Some(300),
            Self::Github | Self::Shopify => None,
        }
    }

    /// Whether the signature covers the delivery id: Standard Webhooks
    /// signs `{id}.{timestamp}.{body}`, Stripe's id is in the signed body;
    /// GitHub and Shopify sign the body alone, so their id header could be
    /// anything (a delivery's record is then named by its body too,
    /// [`RecordName::of_delivery`](crate::core::RecordName::of_delivery)).
    pub fn signs_id(self) -> bool {
        matches!(self, Self::Standard | Self::Stripe)
    }

    /// How long a sender waits for a delivery's answer, in ms, from its own
    /// docs: Shopify 5 s, GitHub 10 s, Svix (Standard Webhooks' reference
    /// sender) 15 s. Stripe publishes none; it is taken as GitHub's.
    pub fn timeout_ms(self) -> u64 {
        match self {
            Self::Shopify => 5_000,
            Self::Github | Self::Stripe => 10_000,
            Self::Standard => 15_000,
        }
    }

    /// The longest a duplicate delivery waits on a webhook route for the
    /// first one's answer, unless the route says otherwise: its wait ends
    /// 1.5 s before the sender stops listening, so its `409` (or the
    /// answer) still reaches the sender (SPEC §13).
    ///
    /// ```
    /// use oncekey::core::Sender;
    /// assert_eq!(Sender::Github.in_flight_wait_ms(), 8_500);
    /// assert_eq!(Sender::Shopify.in_flight_wait_ms(), 3_500);
    /// ```
    pub fn in_flight_wait_ms(self) -> u64 {
        self.timeout_ms() - 1_500
    }

    /// Whether the delivery id is in the body (Stripe's event `id`), so the
    /// key is known only once the body is read; the other senders send it
    /// in a header. Every sender's check needs the whole body anyway.
    pub fn id_in_body(self) -> bool {
        self == Self::Stripe
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn names_read_back() {
        for sender in Sender::ALL {
            assert_eq!(sender.name().parse(), Ok(sender));
            assert!(sender.headers().iter().all(|h| *h == h.to_ascii_lowercase()), "{sender}: lower-case names");
        }
        for unknown in ["", "Stripe", "GITHUB", " github", "svix", "standard-webhooks"] {
            assert_eq!(unknown.parse::<Sender>(), Err(UnknownSender), "{unknown:?}");
        }
    }
}
