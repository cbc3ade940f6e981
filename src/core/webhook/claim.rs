//! What a delivery says of itself before its signature is checked: the id
//! it claims and its event type, for the decision's log line (SPEC §12), so
//! an on-call engineer can find any `evt_…` — refused ones included, marked
//! unverified. Nothing here decides anything.

use super::sender::{GITHUB_DELIVERY, GITHUB_EVENT, SHOPIFY_TOPIC, SHOPIFY_WEBHOOK_ID, SVIX_ID, Sender, WEBHOOK_ID};
use crate::core::text::json_read::Json;

/// The most of a claimed id or event type a log line carries, in bytes: a
/// sender's are far shorter; a forger's are cut here.
const LONGEST: usize = 200;

/// What a delivery claims: its id and its event type (Stripe's and
/// Standard Webhooks' body `type`, `X-GitHub-Event`, `X-Shopify-Topic`),
/// each as sent, cut to 200 bytes; `None` where it names none.
///
/// ```
/// use oncekey::core::{Sender, claimed_delivery};
/// let body = br#"{"id":"evt_1","type":"payment_intent.succeeded"}"#;
/// let (id, event) = claimed_delivery(Sender::Stripe, |_| None, body);
/// assert_eq!((id.as_deref(), event.as_deref()), (Some("evt_1"), Some("payment_intent.succeeded")));
/// let github = |name: &str| match name {
///     "x-github-delivery" => Some("72d3162e"),
///     "x-github-event" => Some("push"),
///     _ => None,
/// };
/// assert_eq!(claimed_delivery(Sender::Github, github, b"{}"), (Some("72d3162e".into()), Some("push".into())));
/// ```
pub fn claimed_delivery<'a>(
    sender: Sender,
    header: impl Fn(&str) -> Option<&'a str>,
    body: &[u8],
) -> (Option<String>, Option<String>) {
    let body_member = |name: &str| {
        let event = std::str::from_utf8(body).ok().and_then(Json::parse)?;
        match event.member(name) {
            Some(Json::String(value)) => Some(value.clone()),
            _ => None,
        }
    };
    let (id, event) = match sender {
        Sender::Standard => (header(WEBHOOK_ID).or_else(|| header(SVIX_ID)).map(str::to_owned), body_member("type")),
        Sender::Github => (header(GITHUB_DELIVERY).map(str::to_owned), header(GITHUB_EVENT).map(str::to_owned)),
        Sender::Stripe => (body_member("id"), body_member("type")),
        Sender::Shopify => (header(SHOPIFY_WEBHOOK_ID).map(str::to_owned), header(SHOPIFY_TOPIC).map(str::to_owned)),
    };
    (id.map(shortened), event.map(shortened))
}

/// `text` cut to [`LONGEST`] bytes, at a character's boundary.
fn shortened(mut text: String) -> String {
    if text.len() > LONGEST {
        let end = (0..=LONGEST).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn each_sender_s_id_and_event_type_as_claimed() {
        let headers = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
        };
        let standard = headers(&[("webhook-id", "msg_1")]);
        let body = br#"{"type":"invoice.paid","data":{}}"#;
        assert_eq!(
            claimed_delivery(Sender::Standard, standard, body),
            (Some("msg_1".into()), Some("invoice.paid".into()))
        );
        let svix = headers(&[("svix-id", "msg_2")]);
        assert_eq!(claimed_delivery(Sender::Standard, svix, b"not json").0.as_deref(), Some("msg_2"));
        let shopify = headers(&[("x-shopify-webhook-id", "b54557e4"), ("x-shopify-topic", "orders/create")]);
        assert_eq!(
            claimed_delivery(Sender::Shopify, shopify, b""),
            (Some("b54557e4".into()), Some("orders/create".into()))
        );
        assert_eq!(claimed_delivery(Sender::Stripe, headers(&[]), br#"{"id":7}"#), (None, None), "no string id");
        let long = format!(r#"{{"id":"{}é"}}"#, "x".repeat(199));
        let (id, _) = claimed_delivery(Sender::Stripe, headers(&[]), long.as_bytes());
        assert_eq!(id.map(|id| id.len()), Some(199), "cut at a character's boundary");
    }
}
