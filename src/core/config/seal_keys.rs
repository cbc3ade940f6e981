//! `IDEMPOTENCY_SEAL_KEYS` (SPEC §4, §6): the keys stored answers are
//! sealed with at rest. A wrangler secret holding one or more keys, comma
//! separated, each the standard base64 of 32 random bytes (what
//! `openssl rand -base64 32` prints). The first seals; every one opens. A
//! key is rotated by putting a new one first, and retired by removing it
//! once the records it sealed have expired.
//!
//! A key is known by its [`KeyId`], a short digest of it: what records,
//! logs and the admin paths carry. Nothing here ever prints a key.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::core::config::variables::ConfigError;
use crate::core::record::sealed::KeyId;
use crate::core::request::fingerprint::Fingerprint;
use crate::core::text::base64;

/// The variable's name.
pub(crate) const SEAL_KEYS: &str = "IDEMPOTENCY_SEAL_KEYS";

/// One AES-256-GCM key, and the key its records' fingerprints are keyed
/// with (derived from it). Its `Debug` shows its id only.
#[derive(Clone, PartialEq, Eq)]
pub struct SealKey {
    id: KeyId,
    key: [u8; 32],
    /// HMAC-SHA256 of a domain tag under the key: a key of its own for the
    /// fingerprints, so no cipher key is used for two jobs.
    fingerprint_key: [u8; 32],
}

type HmacSha256 = Hmac<Sha256>;

/// HMAC-SHA256 of `message` under `key`.
fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    // HMAC takes a key of any length. Not `expect` (src/core/text/cut.rs).
    let Ok(mut mac) = <HmacSha256 as KeyInit>::new_from_slice(key) else { unreachable!("HMAC takes any key") };
    mac.update(message);
    mac.finalize().into_bytes().into()
}

impl SealKey {
    /// The key made of these 32 bytes.
    pub fn new(key: [u8; 32]) -> Self {
        Self { id: KeyId::of(&key), key, fingerprint_key: hmac(&key, b"oncekey/fingerprint-key/1") }
    }

    /// `plain` keyed under this key (SPEC §13, "Sealed means sealed"): what
    /// a sealed deployment's records keep of a request, so stored bytes
    /// reveal no request body, not even by trying every small one.
    pub fn keyed(&self, plain: Fingerprint) -> Fingerprint {
        Fingerprint(hmac(&self.fingerprint_key, &plain.0))
    }

    /// Its id.
    pub fn id(&self) -> KeyId {
        self.id
    }

    /// Its bytes, for the host's cipher (Web Crypto) only.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.key
    }
}

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SealKey({})", self.id.to_hex())
    }
}

/// The configured seal keys, in order: the first seals, every one opens.
/// Empty: sealing is off, and answers are stored as they were before it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SealKeys(Vec<SealKey>);

impl SealKeys {
    /// Reads the secret's value (unset or empty: no keys).
    ///
    /// # Errors
    /// A key that is not standard base64, not 32 bytes, or given twice:
    /// named by its place in the list, never shown.
    ///
    /// ```
    /// use oncekey::core::SealKeys;
    /// let (one, two) = ("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=");
    /// assert_eq!(SealKeys::parse(&format!("{one}, {two}")).unwrap().ids().len(), 2);
    /// let err = SealKeys::parse("c2hvcnQ=").unwrap_err();
    /// assert_eq!(err.variable, "IDEMPOTENCY_SEAL_KEYS");
    /// assert!(!err.reason.contains("c2hvcnQ"));
    /// ```
    pub fn parse(value: &str) -> Result<Self, ConfigError> {
        let bad = |reason: String| ConfigError { variable: SEAL_KEYS, reason };
        if value.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut keys: Vec<SealKey> = Vec::new();
        for (index, entry) in value.split(',').map(str::trim).enumerate() {
            let place = index + 1;
            const HOW: &str = "each key is 32 random bytes in standard base64, as `openssl rand -base64 32` prints";
            if entry.is_empty() {
                return Err(bad(format!("key {place} is empty; {HOW} (the keys are not shown)")));
            }
            let bytes = base64::decode(entry)
                .ok_or_else(|| bad(format!("key {place} is not standard base64; {HOW} (the keys are not shown)")))?;
            let key: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
                bad(format!("key {place} is {} bytes, not 32; {HOW} (the keys are not shown)", bytes.len()))
            })?;
            let key = SealKey::new(key);
            if let Some(earlier) = keys.iter().position(|k| k.id == key.id) {
                return Err(bad(format!("key {place} is key {} again (the keys are not shown)", earlier + 1)));
            }
            keys.push(key);
        }
        Ok(Self(keys))
    }

    /// The key that seals new answers: the first. `None`: sealing is off.
    pub fn sealing(&self) -> Option<&SealKey> {
        self.0.first()
    }

    /// The key with this id, if it is configured.
    pub fn find(&self, id: KeyId) -> Option<&SealKey> {
        self.0.iter().find(|key| key.id == id)
    }

    /// Every configured key's id, in order.
    pub fn ids(&self) -> Vec<KeyId> {
        self.0.iter().map(SealKey::id).collect()
    }

    /// The fingerprints a request whose plain fingerprint is `plain` may be
    /// stored under: keyed under each key, the sealing key's first (what a
    /// new record keeps), then the others' (what a record begun before the
    /// last rotation keeps, tried on a mismatch), then `plain` itself (what
    /// a record written before sealing was turned on keeps). Without keys,
    /// `plain` alone.
    ///
    /// ```
    /// use oncekey::core::{Fingerprint, SealKeys};
    /// let plain = Fingerprint([7; 32]);
    /// assert_eq!(SealKeys::default().fingerprints(plain), [plain]);
    /// let (a, b) = ("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=");
    /// let rotated = SealKeys::parse(&format!("{b},{a}")).unwrap().fingerprints(plain);
    /// let before = SealKeys::parse(a).unwrap().fingerprints(plain);
    /// assert_eq!(rotated.len(), 3);
    /// assert_eq!(rotated[1], before[0], "a record begun before the rotation is still found");
    /// assert_eq!(rotated[2], plain, "and one begun before sealing, last");
    /// assert!(!rotated[..2].contains(&plain));
    /// ```
    pub fn fingerprints(&self, plain: Fingerprint) -> Vec<Fingerprint> {
        self.0.iter().map(|key| key.keyed(plain)).chain([plain]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn b64(bytes: &[u8]) -> String {
        use base64ct::{Base64, Encoding};
        Base64::encode_string(bytes)
    }

    #[test]
    fn keys_in_order_first_seals_every_one_opens() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let keys = SealKeys::parse(&format!(" {} ,{}\n", b64(&a), b64(&b))).unwrap();
        assert_eq!(keys.sealing().unwrap().bytes(), &a);
        assert_eq!(keys.ids(), vec![KeyId::of(&a), KeyId::of(&b)]);
        assert_eq!(keys.find(KeyId::of(&b)).unwrap().bytes(), &b);
        assert_eq!(keys.find(KeyId::of(&[3; 32])), None);
        assert_eq!(SealKeys::parse("").unwrap(), SealKeys::default());
        assert_eq!(SealKeys::parse("  ").unwrap().sealing(), None);
    }

    #[test]
    fn bad_keys_are_named_by_place_never_shown() {
        let good = b64(&[9; 32]);
        let short = b64(&[9; 16]);
        let long = b64(&[9; 33]);
        let rows = [
            (format!("{good},{short}"), "key 2 is 16 bytes, not 32"),
            (long.clone(), "key 1 is 33 bytes, not 32"),
            ("not base64!".to_owned(), "key 1 is not standard base64"),
            // URL-safe base64 is another alphabet.
            (b64(&[0xfb; 32]).replace('+', "-").replace('/', "_"), "key 1 is not standard base64"),
            // Unpadded: openssl pads.
            (good.trim_end_matches('=').to_owned(), "key 1 is not standard base64"),
            (format!("{good},"), "key 2 is empty"),
            (format!("{good}, {good}"), "key 2 is key 1 again"),
        ];
        for (value, reason) in rows {
            let err = SealKeys::parse(&value).unwrap_err();
            assert_eq!(err.variable, "IDEMPOTENCY_SEAL_KEYS");
            assert!(err.reason.starts_with(reason), "{value}: {}", err.reason);
            for entry in value.split(',').map(str::trim).filter(|e| e.len() > 4) {
                assert!(!err.reason.contains(entry), "the key is shown: {}", err.reason);
            }
        }
    }

    #[test]
    fn debug_shows_the_id_never_the_key() {
        let key = SealKey::new([0xab; 32]);
        let shown = format!("{key:?} {:?}", SealKeys::parse(&b64(&[0xab; 32])).unwrap());
        assert!(shown.contains(&key.id().to_hex()), "{shown}");
        assert!(!shown.contains("171"), "{shown}");
        assert!(!shown.to_lowercase().contains("abab"), "{shown}");
    }
}
