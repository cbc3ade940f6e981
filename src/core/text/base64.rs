//! Standard base64 (RFC 4648 §4, padded), decoded strictly: what seal keys
//! (`openssl rand -base64 32`) and webhook secrets and signatures are
//! written in. A few lines rather than a crate: `base64ct` cost the proxy's
//! wasm 1.4 KB gzip for this one function (docs/performance.md). The tests
//! hold it to `base64ct`'s own decoder, byte for byte.

/// The bytes `text` encodes, or `None` unless it is canonical standard
/// base64: the `A–Z a–z 0–9 + /` alphabet, a length that is a multiple of
/// 4, `=` padding only at the end, and no stray bits under the padding.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (at, quad) in bytes.chunks(4).enumerate() {
        let last = at + 1 == bytes.len() / 4;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut bits = 0u32;
        for (i, &c) in quad[..4 - pad].iter().enumerate() {
            bits |= sextet(c)? << (18 - 6 * i);
        }
        let three = bits.to_be_bytes();
        // The bits under the padding must be zero: one encoding per value.
        if (pad == 1 && three[3] != 0) || (pad == 2 && (three[2] != 0 || three[3] != 0)) {
            return None;
        }
        out.extend_from_slice(&three[1..4 - pad]);
    }
    Some(out)
}

/// The value of one base64 character.
fn sextet(c: u8) -> Option<u32> {
    let value = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(not(target_arch = "wasm32"))]
    use base64ct::{Base64, Encoding};
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_rfc_4648_vectors() {
        for (text, bytes) in [
            ("", &b""[..]),
            ("Zg==", b"f"),
            ("Zm8=", b"fo"),
            ("Zm9v", b"foo"),
            ("Zm9vYg==", b"foob"),
            ("Zm9vYmE=", b"fooba"),
            ("Zm9vYmFy", b"foobar"),
        ] {
            assert_eq!(decode(text).as_deref(), Some(bytes), "{text}");
        }
        for bad in ["Zg", "Zg=", "Zh==", "Zm9=", "Z===", "Zg==Zg==", "Zm9v-_==", "Zm 9v", "====", "Zg=a"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        #[test]
        fn prop_decodes_what_base64ct_decodes_and_nothing_else(text in "[A-Za-z0-9+/=_ -]{0,16}") {
            prop_assert_eq!(decode(&text), Base64::decode_vec(&text).ok());
        }

        #[test]
        fn prop_every_encoding_decodes_back(bytes in proptest::collection::vec(any::<u8>(), 0..48)) {
            prop_assert_eq!(decode(&Base64::encode_string(&bytes)), Some(bytes));
        }
    }
}
