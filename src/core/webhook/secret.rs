//! A webhook route's signing secrets (SPEC §13): the value of the wrangler
//! secret the route names, several comma separated while one is rotated
//! out, each in the form its sender hands it over.

use std::fmt;

use crate::core::text::base64;

use crate::core::webhook::sender::Sender;

/// The prefix of Standard Webhooks' and Stripe's secrets.
const WHSEC: &str = "whsec_";

/// One signing secret, as the HMAC key its sender signs with. Its bytes are
/// never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(pub(super) Vec<u8>);

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// Why a secret's value is refused: which entry and what is wrong with it,
/// never the entry itself.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct SecretError {
    /// The entry's place in the comma-separated list, from 1.
    pub entry: usize,
    /// How many entries the list holds.
    pub entries: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl SecretError {
    fn describe(&self) -> String {
        match self.entries {
            1 => format!("the secret {}", self.reason),
            n => format!("entry {} of {n} {}", self.entry, self.reason),
        }
    }
}

impl WebhookSecret {
    /// The secrets in the value of a route's secret binding: comma
    /// separated (the new one and the one being retired, while a sender
    /// rotates), each trimmed, each in its sender's form:
    ///
    /// - `standard`: `whsec_` and base64 (the key is what it decodes to),
    ///   or the base64 alone, as Standard Webhooks' libraries accept;
    /// - `stripe`: `whsec_…`, used whole as the key, as Stripe's libraries
    ///   use it;
    /// - `github`, `shopify`: the secret's text, as the key.
    ///
    /// A secret that holds a comma, or starts or ends with white space,
    /// cannot be given here: choose another.
    ///
    /// ```
    /// use oncekey::core::{Sender, WebhookSecret};
    /// let secrets = WebhookSecret::parse_list(Sender::Standard, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, whsec_c2VjcmV0").unwrap();
    /// assert_eq!(secrets.len(), 2);
    /// let err = WebhookSecret::parse_list(Sender::Stripe, "whsec_a,sk_live_b").unwrap_err();
    /// assert_eq!(err.to_string(), "entry 2 of 2 is not a Stripe signing secret (`whsec_…`)");
    /// ```
    ///
    /// # Errors
    /// The first entry that is empty or not in its sender's form, by its
    /// place: a [`SecretError`], which never holds the value.
    pub fn parse_list(sender: Sender, value: &str) -> Result<Vec<Self>, SecretError> {
        let entries: Vec<&str> = value.split(',').map(str::trim).collect();
        let count = entries.len();
        entries
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                Self::parse(sender, entry).map_err(|reason| SecretError { entry: i + 1, entries: count, reason })
            })
            .collect()
    }

    /// One trimmed entry.
    fn parse(sender: Sender, entry: &str) -> Result<Self, &'static str> {
        if entry.is_empty() {
            return Err("is empty");
        }
        match sender {
            Sender::Standard => {
                let encoded = entry.strip_prefix(WHSEC).unwrap_or(entry);
                match base64::decode(encoded) {
                    Some(key) if !key.is_empty() => Ok(Self(key)),
                    _ => Err("is not a Standard Webhooks secret (`whsec_` and base64)"),
                }
            }
            Sender::Stripe => match entry.strip_prefix(WHSEC) {
                Some(rest) if !rest.is_empty() => Ok(Self(entry.as_bytes().to_vec())),
                _ => Err("is not a Stripe signing secret (`whsec_…`)"),
            },
            Sender::Github | Sender::Shopify => Ok(Self(entry.as_bytes().to_vec())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn each_sender_takes_its_own_form() {
        let key = |sender, value| WebhookSecret::parse_list(sender, value).map(|s| s[0].0.clone());
        assert_eq!(key(Sender::Standard, "whsec_c2VjcmV0"), Ok(b"secret".to_vec()));
        assert_eq!(key(Sender::Standard, "c2VjcmV0"), Ok(b"secret".to_vec()), "the base64 alone");
        assert_eq!(key(Sender::Stripe, "whsec_abc"), Ok(b"whsec_abc".to_vec()), "used whole");
        assert_eq!(key(Sender::Github, " It's a Secret to Everybody "), Ok(b"It's a Secret to Everybody".to_vec()));
        assert_eq!(key(Sender::Shopify, "shpss_123"), Ok(b"shpss_123".to_vec()));
    }

    #[test]
    fn a_bad_entry_is_named_by_its_place_never_shown() {
        // (sender, value, error)
        let rows = [
            (Sender::Standard, "", "the secret is empty"),
            (Sender::Standard, "whsec_", "the secret is not a Standard Webhooks secret (`whsec_` and base64)"),
            (
                Sender::Standard,
                "whsec_not base64!",
                "the secret is not a Standard Webhooks secret (`whsec_` and base64)",
            ),
            (Sender::Standard, "whsec_c2VjcmV0,", "entry 2 of 2 is empty"),
            (Sender::Stripe, "sk_live_hunter2", "the secret is not a Stripe signing secret (`whsec_…`)"),
            (Sender::Stripe, "whsec_", "the secret is not a Stripe signing secret (`whsec_…`)"),
            (Sender::Github, "a,,b", "entry 2 of 3 is empty"),
            (Sender::Shopify, " ", "the secret is empty"),
        ];
        for (sender, value, error) in rows {
            let err = WebhookSecret::parse_list(sender, value).unwrap_err();
            assert_eq!(err.to_string(), error, "{sender} {value:?}");
            for part in value.split(',').map(str::trim).filter(|p| p.len() > 6) {
                assert!(!err.to_string().contains(part), "{err} shows {part}");
            }
        }
        let secrets = WebhookSecret::parse_list(Sender::Github, "hunter2").unwrap();
        assert!(!format!("{secrets:?}").contains("hunter2"));
    }
}
