//! Length-prefixed SHA-256, shared by record names and fingerprints.
//!
//! Each part is written as its length (u64, big-endian) followed by its
//! bytes, so no two different part lists hash the same input stream
//! (`("ab", "c")` and `("a", "bc")` differ).

use sha2::{Digest, Sha256};

/// Hashes parts one after another, each with a length prefix.
#[derive(Clone, Default)]
pub(crate) struct PartHasher(Sha256);

impl PartHasher {
    /// Starts a hash under a domain tag, so a fingerprint can never equal a
    /// record name built from the same strings.
    pub(crate) fn new(domain: &str) -> Self {
        let mut hasher = Self(Sha256::new());
        hasher.part(domain.as_bytes());
        hasher
    }

    /// Adds one part.
    pub(crate) fn part(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update((bytes.len() as u64).to_be_bytes());
        self.0.update(bytes);
        self
    }

    /// The 32-byte digest.
    pub(crate) fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

/// Lower-case hex of a digest, for names and logs.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}
