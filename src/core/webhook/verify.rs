//! A webhook delivery's signature checked as its sender signs it (SPEC
//! §13), in constant time, before anything is reserved or stored: a
//! delivery that fails is refused whole, so a forged one can never plant
//! an answer under a real delivery's id.

use crate::core::text::base64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::core::request::key::{IdempotencyKey, KeyError};
use crate::core::text::json_read::Json;
use crate::core::webhook::secret::WebhookSecret;
use crate::core::webhook::sender::{
    GITHUB_DELIVERY, GITHUB_SIGNATURE, SHOPIFY_HMAC, SHOPIFY_WEBHOOK_ID, STRIPE_SIGNATURE, SVIX_ID, SVIX_SIGNATURE,
    SVIX_TIMESTAMP, Sender, WEBHOOK_ID, WEBHOOK_SIGNATURE, WEBHOOK_TIMESTAMP,
};

/// Why a delivery is refused. Every one is answered `401` problem
/// `webhook-signature`, with nothing stored and the origin not called.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WebhookRefusal {
    /// A header the sender always sends is absent.
    #[error("the {0} header is missing")]
    MissingHeader(&'static str),
    /// A header is not in the sender's form: a timestamp that is not unix
    /// seconds, no `v1` signature, a signature that is not hex or base64.
    #[error("the {0} header is not in the sender's form")]
    Malformed(&'static str),
    /// No signature sent matches the delivery under any of the route's
    /// secrets: forged, altered on the way, or signed with a secret the
    /// route does not hold.
    #[error("no signature matches the delivery under the route's secrets")]
    BadSignature,
    /// Signed, but at a time more than the sender's tolerance away from the
    /// clock, either way: a replay of an old delivery, or a clock that is
    /// off.
    #[error("the signature's timestamp is more than {tolerance_secs} seconds from now")]
    Stale {
        /// The sender's tolerance ([`Sender::tolerance_secs`]).
        tolerance_secs: u64,
    },
    /// Signed, but the body has no delivery id where its sender puts one
    /// (a Stripe event without a string `id`).
    #[error("the delivery has no id: the body has no string member `id`")]
    NoDeliveryId,
    /// Signed, but the delivery id breaks a key's rules (SPEC §1).
    #[error("the delivery id is not a valid key: {0}")]
    BadDeliveryId(KeyError),
}

type HmacSha256 = Hmac<Sha256>;

/// Checks a delivery to a webhook route of `sender` against the route's
/// `secrets` (any one signing it is enough, for rotation), given its
/// headers (`header`: a lookup by lower-case name), its whole `body` as
/// received, and the clock (`now_ms`, unix ms): the delivery's key, the
/// sender's delivery id, when it verifies.
///
/// The signature is checked first, then the timestamp, then the id, so a
/// refusal for a stale timestamp or a missing id is of a delivery that was
/// signed.
///
/// ```
/// use oncekey::core::{Sender, WebhookRefusal, WebhookSecret, verify_delivery};
/// // GitHub's published example (docs.github.com, "Validating webhook deliveries").
/// let secrets = WebhookSecret::parse_list(Sender::Github, "It's a Secret to Everybody").unwrap();
/// let headers = |name: &str| match name {
///     "x-hub-signature-256" => Some("sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"),
///     "x-github-delivery" => Some("72d3162e-cc78-11e3-81ab-4c9367dc0958"),
///     _ => None,
/// };
/// let key = verify_delivery(Sender::Github, &secrets, headers, b"Hello, World!", 0).unwrap();
/// assert_eq!(key.as_str(), "72d3162e-cc78-11e3-81ab-4c9367dc0958");
/// assert_eq!(verify_delivery(Sender::Github, &secrets, headers, b"Hello, World?", 0), Err(WebhookRefusal::BadSignature));
/// ```
///
/// # Errors
/// A [`WebhookRefusal`] naming the first check the delivery fails.
pub fn verify_delivery<'a>(
    sender: Sender,
    secrets: &[WebhookSecret],
    header: impl Fn(&str) -> Option<&'a str>,
    body: &[u8],
    now_ms: u64,
) -> Result<IdempotencyKey, WebhookRefusal> {
    let required = |name: &'static str| header(name).map(str::trim).ok_or(WebhookRefusal::MissingHeader(name));
    match sender {
        Sender::Standard => {
            // Svix's brand of the same headers, read as its libraries read
            // them; a refusal names the header of the brand the delivery uses.
            let svix = [SVIX_ID, SVIX_TIMESTAMP, SVIX_SIGNATURE].iter().any(|name| header(name).is_some())
                && [WEBHOOK_ID, WEBHOOK_TIMESTAMP, WEBHOOK_SIGNATURE].iter().all(|name| header(name).is_none());
            let brand = |name: &'static str, svix_name: &'static str| if svix { svix_name } else { name };
            let branded = |name: &'static str, svix_name: &'static str| {
                required(name)
                    .or_else(|_| required(svix_name))
                    .map_err(|_| WebhookRefusal::MissingHeader(brand(name, svix_name)))
            };
            let id = branded(WEBHOOK_ID, SVIX_ID)?;
            let timestamp = branded(WEBHOOK_TIMESTAMP, SVIX_TIMESTAMP)?;
            let signatures = branded(WEBHOOK_SIGNATURE, SVIX_SIGNATURE)?;
            let timestamp =
                unix_seconds(timestamp).ok_or(WebhookRefusal::Malformed(brand(WEBHOOK_TIMESTAMP, SVIX_TIMESTAMP)))?;
            let sent: Vec<Vec<u8>> = signatures
                .split_ascii_whitespace()
                .filter_map(|entry| entry.strip_prefix("v1,"))
                .filter_map(from_base64)
                .collect();
            if sent.is_empty() {
                return Err(WebhookRefusal::Malformed(brand(WEBHOOK_SIGNATURE, SVIX_SIGNATURE)));
            }
            let prefix = format!("{id}.{timestamp}.");
            signed(secrets, &[prefix.as_bytes(), body], &sent)?;
            within_tolerance(sender, timestamp, now_ms)?;
            key(id)
        }
        Sender::Github => {
            let signature = required(GITHUB_SIGNATURE)?;
            let sent = signature.strip_prefix("sha256=").and_then(from_hex);
            let sent = sent.ok_or(WebhookRefusal::Malformed(GITHUB_SIGNATURE))?;
            signed(secrets, &[body], &[sent])?;
            key(required(GITHUB_DELIVERY)?)
        }
        Sender::Stripe => {
            let (timestamp, sent) = stripe_signature(required(STRIPE_SIGNATURE)?)?;
            let prefix = format!("{timestamp}.");
            signed(secrets, &[prefix.as_bytes(), body], &sent)?;
            within_tolerance(sender, timestamp, now_ms)?;
            let event = std::str::from_utf8(body).ok().and_then(Json::parse);
            match event.as_ref().and_then(|event| event.member("id")) {
                Some(Json::String(id)) => key(id),
                _ => Err(WebhookRefusal::NoDeliveryId),
            }
        }
        Sender::Shopify => {
            let sent = from_base64(required(SHOPIFY_HMAC)?).ok_or(WebhookRefusal::Malformed(SHOPIFY_HMAC))?;
            signed(secrets, &[body], &[sent])?;
            key(required(SHOPIFY_WEBHOOK_ID)?)
        }
    }
}

/// `Ok` when one of `sent` is the HMAC-SHA256 of `parts`, one after the
/// other, under one of `secrets`; each comparison in constant time.
fn signed(secrets: &[WebhookSecret], parts: &[&[u8]], sent: &[Vec<u8>]) -> Result<(), WebhookRefusal> {
    let matches = secrets.iter().any(|secret| {
        let Ok(mut mac) = HmacSha256::new_from_slice(&secret.0) else { return false };
        for part in parts {
            mac.update(part);
        }
        sent.iter().any(|signature| mac.clone().verify_slice(signature).is_ok())
    });
    if matches { Ok(()) } else { Err(WebhookRefusal::BadSignature) }
}

/// Whether a signed timestamp is within the sender's tolerance of the
/// clock, compared in whole seconds as the senders' libraries compare.
fn within_tolerance(sender: Sender, timestamp: u64, now_ms: u64) -> Result<(), WebhookRefusal> {
    let Some(tolerance_secs) = sender.tolerance_secs() else { return Ok(()) };
    let now = now_ms / 1000;
    if now.abs_diff(timestamp) <= tolerance_secs { Ok(()) } else { Err(WebhookRefusal::Stale { tolerance_secs }) }
}

/// The delivery id as the key.
fn key(id: &str) -> Result<IdempotencyKey, WebhookRefusal> {
    IdempotencyKey::from_chars(id).map_err(WebhookRefusal::BadDeliveryId)
}

/// Unix seconds as the senders write them: ASCII digits only (no sign, no
/// fraction), at most 19 of them.
fn unix_seconds(text: &str) -> Option<u64> {
    (!text.is_empty() && text.len() <= 19 && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok())?
}

/// `t=<unix>,v1=<hex>[,v1=<hex>…]`, other schemes (`v0`) skipped, as
/// Stripe's libraries read it: the first `t`, every `v1` that is hex.
fn stripe_signature(header: &str) -> Result<(u64, Vec<Vec<u8>>), WebhookRefusal> {
    let pairs = header.split(',').filter_map(|item| item.trim().split_once('='));
    let (mut timestamp, mut sent) = (None, Vec::new());
    for (scheme, value) in pairs {
        match scheme {
            "t" if timestamp.is_none() => timestamp = Some(unix_seconds(value)),
            "v1" => sent.extend(from_hex(value)),
            _ => {}
        }
    }
    match (timestamp.flatten(), sent.is_empty()) {
        (Some(timestamp), false) => Ok((timestamp, sent)),
        _ => Err(WebhookRefusal::Malformed(STRIPE_SIGNATURE)),
    }
}

/// Base64 (standard, padded) as bytes; `None` for anything else, or
/// nothing.
fn from_base64(text: &str) -> Option<Vec<u8>> {
    base64::decode(text).filter(|bytes| !bytes.is_empty())
}

/// Hex digits, either case, as bytes; `None` for anything else, or
/// nothing.
fn from_hex(text: &str) -> Option<Vec<u8>> {
    if text.is_empty() || !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |b: u8| char::from(b).to_digit(16);
    text.as_bytes().chunks(2).map(|pair| Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::request::digest::hex;
    use base64ct::{Base64, Encoding};
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// A delivery: its headers (lower-case names) and body.
    #[derive(Clone, Debug)]
    struct Delivery {
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    }

    impl Delivery {
        fn new(headers: &[(&'static str, &str)], body: &[u8]) -> Self {
            Self { headers: headers.iter().map(|(n, v)| (*n, v.to_string())).collect(), body: body.to_vec() }
        }

        fn set(mut self, name: &'static str, value: &str) -> Self {
            self.headers.retain(|(n, _)| *n != name);
            self.headers.push((name, value.to_owned()));
            self
        }

        fn without(mut self, name: &str) -> Self {
            self.headers.retain(|(n, _)| *n != name);
            self
        }

        fn body(mut self, body: &[u8]) -> Self {
            self.body = body.to_vec();
            self
        }

        fn verify(&self, sender: Sender, secrets: &str, now_ms: u64) -> Result<String, WebhookRefusal> {
            let secrets = WebhookSecret::parse_list(sender, secrets).unwrap();
            let header = |name: &str| self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str());
            verify_delivery(sender, &secrets, header, &self.body, now_ms).map(|key| key.as_str().to_owned())
        }
    }

    /// HMAC-SHA256 of `message` under `key`: what the tests sign with.
    fn mac(key: &[u8], message: &[u8]) -> Vec<u8> {
        let mut mac = HmacSha256::new_from_slice(key).unwrap();
        mac.update(message);
        mac.finalize().into_bytes().to_vec()
    }

    // Standard Webhooks' test vector, from its reference libraries
    // (standard-webhooks/standard-webhooks, libraries/javascript/src/
    // webhook.test.ts, "sign function works"; the same in the other
    // languages' tests).
    const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const STANDARD_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const STANDARD_TIMESTAMP: u64 = 1_614_265_330;
    const STANDARD_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const STANDARD_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    const STANDARD_NOW: u64 = STANDARD_TIMESTAMP * 1000;

    fn standard() -> Delivery {
        Delivery::new(
            &[
                ("webhook-id", STANDARD_ID),
                ("webhook-timestamp", &STANDARD_TIMESTAMP.to_string()),
                ("webhook-signature", STANDARD_SIGNATURE),
            ],
            STANDARD_BODY,
        )
    }

    /// A Standard Webhooks delivery signed now by the vector's secret.
    fn standard_at(id: &str, timestamp: u64, body: &[u8]) -> Delivery {
        let key = WebhookSecret::parse_list(Sender::Standard, STANDARD_SECRET).unwrap().remove(0).0;
        let signature = mac(&key, &[format!("{id}.{timestamp}.").as_bytes(), body].concat());
        let signature = format!("v1,{}", Base64::encode_string(&signature));
        Delivery::new(
            &[("webhook-id", id), ("webhook-timestamp", &timestamp.to_string()), ("webhook-signature", &signature)],
            body,
        )
    }

    #[test]
    fn standard_webhooks_published_vector() {
        assert_eq!(standard().verify(Sender::Standard, STANDARD_SECRET, STANDARD_NOW), Ok(STANDARD_ID.into()));
        // The reference libraries take the secret without its prefix too.
        let bare = STANDARD_SECRET.trim_start_matches("whsec_");
        assert_eq!(standard().verify(Sender::Standard, bare, STANDARD_NOW), Ok(STANDARD_ID.into()));
        // And the signing is the same one the tests below sign with.
        assert_eq!(standard_at(STANDARD_ID, STANDARD_TIMESTAMP, STANDARD_BODY).headers, standard().headers);
    }

    #[test]
    fn standard_webhooks_each_signed_part_counts() {
        let refused = Err(WebhookRefusal::BadSignature);
        let other_time = (STANDARD_TIMESTAMP + 1).to_string();
        // (what was changed, the delivery)
        let rows = [
            ("body", standard().body(br#"{"test": 2432232315}"#)),
            ("body, one space", standard().body(br#"{"test":2432232314}"#)),
            ("id", standard().set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJel")),
            ("timestamp", standard().set("webhook-timestamp", &other_time)),
            ("signature", standard().set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=")),
            ("scheme", standard().set("webhook-signature", "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,AAAA")),
            ("partial", standard().set("webhook-signature", "v1,g0hM9SsE")),
        ];
        for (changed, delivery) in rows {
            assert_eq!(delivery.verify(Sender::Standard, STANDARD_SECRET, STANDARD_NOW), refused, "{changed}");
        }
        let other_secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0";
        assert_eq!(standard().verify(Sender::Standard, other_secret, STANDARD_NOW), refused, "another secret");
    }

    #[test]
    fn standard_webhooks_any_listed_signature_and_any_secret_will_do() {
        let listed =
            format!("v1a,bm90IGNoZWNrZWQ= v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= {STANDARD_SIGNATURE} v1,x");
        let delivery = standard().set("webhook-signature", &listed);
        assert_eq!(delivery.verify(Sender::Standard, STANDARD_SECRET, STANDARD_NOW), Ok(STANDARD_ID.into()));
        // Rotation: the route holds the new secret and the old one.
        let rotated = format!("whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0, {STANDARD_SECRET}");
        assert_eq!(standard().verify(Sender::Standard, &rotated, STANDARD_NOW), Ok(STANDARD_ID.into()));
    }

    #[test]
    fn standard_webhooks_svix_brand_is_read_too() {
        let svix = Delivery::new(
            &[
                ("svix-id", STANDARD_ID),
                ("svix-timestamp", &STANDARD_TIMESTAMP.to_string()),
                ("svix-signature", STANDARD_SIGNATURE),
            ],
            STANDARD_BODY,
        );
        assert_eq!(svix.verify(Sender::Standard, STANDARD_SECRET, STANDARD_NOW), Ok(STANDARD_ID.into()));
        // A refusal names the header of the brand the delivery uses.
        let missing = Err(WebhookRefusal::MissingHeader("svix-signature"));
        let unsigned = Delivery { headers: svix.headers.clone(), body: svix.body.clone() }.without("svix-signature");
        assert_eq!(unsigned.verify(Sender::Standard, STANDARD_SECRET, STANDARD_NOW), missing);
        let missing = Err(WebhookRefusal::MissingHeader("webhook-signature"));
        assert_eq!(
            standard().without("webhook-signature").verify(Sender::Standard, STANDARD_SECRET, STANDARD_NOW),
            missing
        );
        let mut odd = svix.without("svix-timestamp");
        odd.headers.push(("svix-timestamp", "soon".into()));
        let malformed = Err(WebhookRefusal::Malformed("svix-timestamp"));
        assert_eq!(odd.verify(Sender::Standard, STANDARD_SECRET, STANDARD_NOW), malformed);
    }

    #[test]
    fn standard_webhooks_tolerance_is_five_minutes_either_way() {
        let stale = Err(WebhookRefusal::Stale { tolerance_secs: 300 });
        // (clock, verifies): the clock in ms against a timestamp in seconds.
        let rows = [
            (STANDARD_NOW + 300_000, true),
            (STANDARD_NOW + 300_999, true),
            (STANDARD_NOW + 301_000, false),
            (STANDARD_NOW - 300_000, true),
            (STANDARD_NOW - 300_001, false),
            (STANDARD_NOW - 301_000, false),
            (0, false),
            (u64::MAX, false),
        ];
        for (now, verifies) in rows {
            let got = standard().verify(Sender::Standard, STANDARD_SECRET, now);
            assert_eq!(got, if verifies { Ok(STANDARD_ID.into()) } else { stale.clone() }, "now {now}");
        }
    }

    #[test]
    fn standard_webhooks_missing_and_malformed_headers() {
        let refused =
            |delivery: Delivery| delivery.verify(Sender::Standard, STANDARD_SECRET, STANDARD_NOW).unwrap_err();
        for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
            assert_eq!(refused(standard().without(name)), WebhookRefusal::MissingHeader(name));
        }
        let malformed = [
            ("webhook-timestamp", "hello"),
            ("webhook-timestamp", "-1614265330"),
            ("webhook-timestamp", "1614265330.5"),
            ("webhook-timestamp", "+1614265330"),
            ("webhook-timestamp", "99999999999999999999"),
            ("webhook-timestamp", ""),
            ("webhook-signature", "v1,"),
            ("webhook-signature", "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="),
            ("webhook-signature", "v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="),
            ("webhook-signature", ""),
        ];
        for (name, value) in malformed {
            assert_eq!(refused(standard().set(name, value)), WebhookRefusal::Malformed(name), "{name}: {value:?}");
        }
        let long_id = "m".repeat(256);
        let delivery = standard_at(&long_id, STANDARD_TIMESTAMP, STANDARD_BODY);
        assert_eq!(refused(delivery), WebhookRefusal::BadDeliveryId(KeyError::TooLong(256)), "signed, not a key");
    }

    // GitHub's published example (docs.github.com/webhooks/using-webhooks/
    // validating-webhook-deliveries, "Testing the webhook payload
    // validation"): this secret, this payload, this signature.
    const GITHUB_SECRET: &str = "It's a Secret to Everybody";
    const GITHUB_DELIVERY_ID: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

    fn github() -> Delivery {
        Delivery::new(
            &[
                ("x-hub-signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"),
                ("x-github-delivery", GITHUB_DELIVERY_ID),
            ],
            b"Hello, World!",
        )
    }

    #[test]
    fn github_published_vector() {
        assert_eq!(github().verify(Sender::Github, GITHUB_SECRET, 0), Ok(GITHUB_DELIVERY_ID.into()));
        assert_eq!(
            github().verify(Sender::Github, GITHUB_SECRET, u64::MAX),
            Ok(GITHUB_DELIVERY_ID.into()),
            "no timestamp"
        );
        let upper = "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17";
        assert_eq!(
            github().set("x-hub-signature-256", upper).verify(Sender::Github, GITHUB_SECRET, 0),
            Ok(GITHUB_DELIVERY_ID.into())
        );
        let rotated = format!("a-new-secret,{GITHUB_SECRET}");
        assert_eq!(github().verify(Sender::Github, &rotated, 0), Ok(GITHUB_DELIVERY_ID.into()), "rotation");
    }

    #[test]
    fn github_refusals() {
        let refused = |delivery: Delivery| delivery.verify(Sender::Github, GITHUB_SECRET, 0).unwrap_err();
        assert_eq!(refused(github().body(b"Hello, World?")), WebhookRefusal::BadSignature);
        assert_eq!(github().verify(Sender::Github, "It's a secret to everybody", 0), Err(WebhookRefusal::BadSignature));
        let truncated = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e";
        assert_eq!(refused(github().set("x-hub-signature-256", truncated)), WebhookRefusal::BadSignature);
        for bad in ["757107ea", "sha1=757107ea", "sha256=75710", "sha256=zz", "sha256=", ""] {
            let got = refused(github().set("x-hub-signature-256", bad));
            assert_eq!(got, WebhookRefusal::Malformed("x-hub-signature-256"), "{bad:?}");
        }
        assert_eq!(
            refused(github().without("x-hub-signature-256")),
            WebhookRefusal::MissingHeader("x-hub-signature-256")
        );
        assert_eq!(refused(github().without("x-github-delivery")), WebhookRefusal::MissingHeader("x-github-delivery"));
        let forged = github().body(b"forged").without("x-github-delivery");
        assert_eq!(refused(forged), WebhookRefusal::BadSignature, "the signature is checked before the id");
    }

    // Stripe signs `{t}.{body}` with the endpoint's whole `whsec_…` secret
    // as the HMAC key (docs.stripe.com/webhooks, "Verify signatures
    // manually"; stripe-python's WebhookSignature._compute_signature keys
    // with `secret.encode("utf-8")`). Stripe publishes no fixed vector:
    // these signatures were computed with Python's hmac.
    const STRIPE_SECRET: &str = "whsec_test_5e8f1b2a9c";
    const STRIPE_OLD_SECRET: &str = "whsec_old_0d9a4c";
    const STRIPE_T: u64 = 1_700_000_000;
    const STRIPE_NOW: u64 = STRIPE_T * 1000;
    const STRIPE_BODY: &[u8] =
        b"{\n  \"id\": \"evt_1NG8Du2eZvKYlo2CUI79vXWy\",\n  \"object\": \"event\",\n  \"type\": \"payment_intent.succeeded\"\n}";
    const STRIPE_V1: &str = "0880394d9fe180423abf480e82823247b34bd53ed0d8844d39f93b39ef7d5c59";
    const STRIPE_V1_OLD: &str = "dbd32d6e0dd7be6f2bfd5f411ce57cd1369c18f3811136e4ae5b9a42345c515b";

    fn stripe(header: &str) -> Delivery {
        Delivery::new(&[("stripe-signature", header)], STRIPE_BODY)
    }

    fn stripe_signed(t: u64, body: &[u8]) -> Delivery {
        let v1 = hex(&mac(STRIPE_SECRET.as_bytes(), &[format!("{t}.").as_bytes(), body].concat()));
        Delivery::new(&[("stripe-signature", &format!("t={t},v1={v1}"))], body)
    }

    #[test]
    fn stripe_signed_as_its_docs_say() {
        let event = "evt_1NG8Du2eZvKYlo2CUI79vXWy";
        let header =
            format!("t={STRIPE_T},v1={STRIPE_V1},v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39");
        assert_eq!(stripe(&header).verify(Sender::Stripe, STRIPE_SECRET, STRIPE_NOW), Ok(event.into()));
        assert_eq!(
            stripe_signed(STRIPE_T, STRIPE_BODY).headers,
            stripe(&format!("t={STRIPE_T},v1={STRIPE_V1}")).headers
        );
        // While Stripe rolls a secret it signs with both, one `v1` each.
        let both = format!("t={STRIPE_T},v1={STRIPE_V1_OLD},v1={STRIPE_V1}");
        assert_eq!(stripe(&both).verify(Sender::Stripe, STRIPE_SECRET, STRIPE_NOW), Ok(event.into()));
        // And the route may hold both secrets.
        let old = format!("t={STRIPE_T},v1={STRIPE_V1_OLD}");
        let rotated = format!("{STRIPE_SECRET},{STRIPE_OLD_SECRET}");
        assert_eq!(stripe(&old).verify(Sender::Stripe, &rotated, STRIPE_NOW), Ok(event.into()));
        assert_eq!(stripe(&old).verify(Sender::Stripe, STRIPE_SECRET, STRIPE_NOW), Err(WebhookRefusal::BadSignature));
    }

    #[test]
    fn stripe_refusals() {
        let refused = |delivery: Delivery, now: u64| delivery.verify(Sender::Stripe, STRIPE_SECRET, now).unwrap_err();
        let good = format!("t={STRIPE_T},v1={STRIPE_V1}");
        assert_eq!(refused(stripe(&good).body(b"{\"id\": \"evt_2\"}"), STRIPE_NOW), WebhookRefusal::BadSignature);
        let other_t = format!("t={},v1={STRIPE_V1}", STRIPE_T + 1);
        assert_eq!(refused(stripe(&other_t), STRIPE_NOW), WebhookRefusal::BadSignature, "t is signed");
        // The secret is used whole: its base64 part alone is another key.
        assert_eq!(
            stripe(&good).verify(Sender::Stripe, "whsec_dGVzdA==", STRIPE_NOW),
            Err(WebhookRefusal::BadSignature)
        );
        for malformed in
            ["", "t=1700000000", "v1=abc", "t=x,v1=00", "t=1700000000,v0=00", "t=1700000000,v1=0g", "garbage"]
        {
            assert_eq!(
                refused(stripe(malformed), STRIPE_NOW),
                WebhookRefusal::Malformed("stripe-signature"),
                "{malformed:?}"
            );
        }
        assert_eq!(
            refused(Delivery::new(&[], STRIPE_BODY), STRIPE_NOW),
            WebhookRefusal::MissingHeader("stripe-signature")
        );
        let stale = WebhookRefusal::Stale { tolerance_secs: 300 };
        assert_eq!(refused(stripe(&good), STRIPE_NOW + 301_000), stale);
        assert_eq!(refused(stripe(&good), STRIPE_NOW - 301_000), stale, "from the future too");
        assert!(stripe(&good).verify(Sender::Stripe, STRIPE_SECRET, STRIPE_NOW + 300_000).is_ok());
        assert!(stripe(&good).verify(Sender::Stripe, STRIPE_SECRET, STRIPE_NOW - 300_000).is_ok());
        // Signed, but no event id to key it by.
        for body in [&b"{}"[..], b"{\"id\": 42}", b"[\"id\"]", b"not json", b"{\"data\": {\"id\": \"evt_1\"}}"] {
            assert_eq!(refused(stripe_signed(STRIPE_T, body), STRIPE_NOW), WebhookRefusal::NoDeliveryId, "{body:?}");
        }
        let spaced = refused(stripe_signed(STRIPE_T, b"{\"id\": \"evt 1\"}"), STRIPE_NOW);
        assert_eq!(spaced, WebhookRefusal::BadDeliveryId(KeyError::InvalidCharacter(3)));
    }

    // Shopify signs the body with the app's client secret, base64
    // (shopify.dev/docs/apps/build/webhooks/verify-deliveries). No fixed
    // vector is published: this one was computed with Python's hmac.
    const SHOPIFY_SECRET: &str = "shpss_client_secret_3f1c";
    const SHOPIFY_BODY: &[u8] = br#"{"id":820982911946154508,"email":"jon@example.com","total_price":"10.00"}"#;
    const SHOPIFY_DELIVERY_ID: &str = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043";

    fn shopify() -> Delivery {
        Delivery::new(
            &[
                ("x-shopify-hmac-sha256", "MaQUkdogyyea9Z2bP0tIsZs0g2I1yIMos5T26EIDJgY="),
                ("x-shopify-webhook-id", SHOPIFY_DELIVERY_ID),
            ],
            SHOPIFY_BODY,
        )
    }

    #[test]
    fn shopify_signed_as_its_docs_say() {
        assert_eq!(shopify().verify(Sender::Shopify, SHOPIFY_SECRET, 0), Ok(SHOPIFY_DELIVERY_ID.into()));
        let rotated = format!("shpss_new, {SHOPIFY_SECRET}");
        assert_eq!(shopify().verify(Sender::Shopify, &rotated, 0), Ok(SHOPIFY_DELIVERY_ID.into()));
        let refused = |delivery: Delivery| delivery.verify(Sender::Shopify, SHOPIFY_SECRET, 0).unwrap_err();
        assert_eq!(refused(shopify().body(&SHOPIFY_BODY[1..])), WebhookRefusal::BadSignature);
        assert_eq!(shopify().verify(Sender::Shopify, "shpss_other", 0), Err(WebhookRefusal::BadSignature));
        let hex_instead = hex(&mac(SHOPIFY_SECRET.as_bytes(), SHOPIFY_BODY));
        assert_eq!(refused(shopify().set("x-shopify-hmac-sha256", &hex_instead)), WebhookRefusal::BadSignature);
        for not_base64 in ["not base64!", "", "MaQUkdogyyea9Z2bP0tIsZs0g2I1yIMos5T26EIDJgY"] {
            let got = refused(shopify().set("x-shopify-hmac-sha256", not_base64));
            assert_eq!(got, WebhookRefusal::Malformed("x-shopify-hmac-sha256"), "{not_base64:?}");
        }
        for name in ["x-shopify-hmac-sha256", "x-shopify-webhook-id"] {
            assert_eq!(refused(shopify().without(name)), WebhookRefusal::MissingHeader(name));
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod props {
        use super::*;
        use proptest::prelude::*;

        fn sender() -> impl Strategy<Value = Sender> {
            prop::sample::select(Sender::ALL.to_vec())
        }

        proptest! {
            #[test]
            fn prop_any_headers_are_answered_never_a_panic(
                sender in sender(),
                values in proptest::collection::vec(proptest::option::of("\\PC{0,80}|[tv01=,a-f0-9 ]{0,80}|v1,[A-Za-z0-9+/=]{0,48}( v1,[A-Za-z0-9+/=]{0,48})?"), 8),
                body in proptest::collection::vec(any::<u8>(), 0..64),
                now in any::<u64>(),
            ) {
                let names = ["webhook-id", "webhook-timestamp", "webhook-signature", "x-hub-signature-256", "x-github-delivery", "stripe-signature", "x-shopify-hmac-sha256", "x-shopify-webhook-id"];
                let header = |name: &str| names.iter().position(|n| *n == name).and_then(|i| values[i].as_deref());
                let secrets = WebhookSecret::parse_list(sender, "whsec_c2VjcmV0").unwrap();
                let _ = verify_delivery(sender, &secrets, header, &body, now);
            }

            #[test]
            fn prop_a_signed_delivery_verifies_and_any_change_is_refused(
                id in "[!-~]{1,40}",
                timestamp in 0u64..4_000_000_000,
                skew in -300i64..=300,
                body in proptest::collection::vec(any::<u8>(), 0..64),
                flip in any::<prop::sample::Index>(),
                bit in 0u8..8,
            ) {
                let now = timestamp.saturating_add_signed(skew) * 1000;
                prop_assume!(now / 1000 == timestamp.saturating_add_signed(skew));
                let delivery = standard_at(&id, timestamp, &body);
                prop_assert_eq!(delivery.verify(Sender::Standard, STANDARD_SECRET, now), Ok(id.clone()));
                if !body.is_empty() {
                    let mut changed = body.clone();
                    changed[flip.index(body.len())] ^= 1 << bit;
                    let tampered = delivery.clone().body(&changed);
                    prop_assert_eq!(tampered.verify(Sender::Standard, STANDARD_SECRET, now), Err(WebhookRefusal::BadSignature));
                }
                let other_id = format!("{id}x");
                let moved = delivery.set("webhook-id", &other_id);
                prop_assert_eq!(moved.verify(Sender::Standard, STANDARD_SECRET, now), Err(WebhookRefusal::BadSignature));
            }
        }
    }
}
