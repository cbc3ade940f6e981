//! UUIDv7 (RFC 9562 §5.7), strictly increasing within one generator.
//!
//! Layout: 48-bit Unix-ms timestamp, version `0111`, 12 bits `rand_a`,
//! variant `10`, 62 bits `rand_b`. The 74 random bits are treated as one
//! number: when the clock has not moved forward (same millisecond, or a
//! step back), the next key keeps the last timestamp and adds a random
//! 1..=2^32 to that number (RFC 9562 §6.2, method 2), so keys stay ordered
//! and still unguessable. A few lines of bit layout, written here so the
//! browser package carries no UUID crate and no formatting machinery.

/// Makes strictly increasing UUIDv7 values from a clock reading and fresh
/// random bytes, both supplied by the caller.
///
/// ```
/// use oncekey::core::Uuid7Generator;
/// let mut keys = Uuid7Generator::default();
/// let a = keys.next(1_700_000_000_000, [7; 10]);
/// let b = keys.next(1_700_000_000_000, [0; 10]); // same ms, smaller random
/// assert!(b > a);
/// assert_eq!(Uuid7Generator::format(&a).len(), 36);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Uuid7Generator {
    started: bool,
    last_ms: u64,
    last_rand: u128,
}

const RAND_BITS: u32 = 74;
const RAND_MASK: u128 = (1 << RAND_BITS) - 1;
const TIMESTAMP_MASK: u64 = (1 << 48) - 1;

impl Uuid7Generator {
    /// The next UUID as 16 bytes, for a clock reading in ms since the Unix
    /// epoch and 10 fresh random bytes (74 of the 80 bits are used).
    pub fn next(&mut self, now_ms: u64, random: [u8; 10]) -> [u8; 16] {
        let fresh = u128::from_be_bytes(pad(random)) & RAND_MASK;
        let now_ms = now_ms & TIMESTAMP_MASK;
        if now_ms > self.last_ms || !self.started {
            self.started = true;
            self.last_ms = now_ms;
            self.last_rand = fresh;
        } else {
            // Clock did not advance: keep the timestamp, step the random part.
            let step = 1 + (fresh & 0xffff_ffff);
            let next = self.last_rand + step;
            if next > RAND_MASK {
                self.last_ms += 1;
                self.last_rand = fresh >> 1;
            } else {
                self.last_rand = next;
            }
        }
        layout(self.last_ms, self.last_rand)
    }

    /// The canonical lower-case `8-4-4-4-12` text form.
    pub fn format(bytes: &[u8; 16]) -> String {
        Self::text(bytes).iter().map(|&b| char::from(b)).collect()
    }

    /// The canonical text form as 36 ASCII bytes, for callers that write
    /// many keys into one buffer.
    ///
    /// ```
    /// use oncekey::core::Uuid7Generator;
    /// let id = Uuid7Generator::default().next(1, [0; 10]);
    /// assert_eq!(&Uuid7Generator::text(&id)[..], Uuid7Generator::format(&id).as_bytes());
    /// ```
    pub fn text(bytes: &[u8; 16]) -> [u8; 36] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'-'; 36];
        let mut at = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                at += 1;
            }
            out[at] = DIGITS[usize::from(b >> 4)];
            out[at + 1] = DIGITS[usize::from(b & 0xf)];
            at += 2;
        }
        out
    }
}

fn pad(random: [u8; 10]) -> [u8; 16] {
    let mut out = [0; 16];
    out[6..].copy_from_slice(&random);
    out
}

/// Places timestamp, version, variant and the 74 random bits.
fn layout(ms: u64, rand: u128) -> [u8; 16] {
    let rand_a = (rand >> 62) & 0xfff;
    let rand_b = rand & ((1 << 62) - 1);
    let value = (u128::from(ms) << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b;
    value.to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(not(target_arch = "wasm32"))]
    use proptest::prelude::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn fields(bytes: &[u8; 16]) -> (u64, u8, u8) {
        let v = u128::from_be_bytes(*bytes);
        ((v >> 80) as u64, ((v >> 76) & 0xf) as u8, ((v >> 62) & 0b11) as u8)
    }

    #[test]
    fn version_variant_and_timestamp() {
        let mut g = Uuid7Generator::default();
        let id = g.next(0x0123_4567_89ab, [0xff; 10]);
        assert_eq!(fields(&id), (0x0123_4567_89ab, 7, 0b10));
        let text = Uuid7Generator::format(&id);
        assert_eq!(&text[..13], "01234567-89ab");
        assert_eq!(&text[14..15], "7");
        assert!(matches!(&text[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(text, text.to_lowercase());
        assert_eq!(text.matches('-').count(), 4);
    }

    #[test]
    fn all_74_random_bits_come_from_the_input() {
        let ones = u128::from_be_bytes(Uuid7Generator::default().next(5, [0xff; 10]));
        let zeros = u128::from_be_bytes(Uuid7Generator::default().next(5, [0x00; 10]));
        // rand_a (12 bits) and rand_b (62 bits): every one set, or every one clear.
        assert_eq!((ones >> 64) & 0xfff, 0xfff);
        assert_eq!(ones & ((1 << 62) - 1), (1 << 62) - 1);
        assert_eq!((zeros >> 64) & 0xfff, 0);
        assert_eq!(zeros & ((1 << 62) - 1), 0);
    }

    #[test]
    fn random_bits_come_from_the_input() {
        let a = Uuid7Generator::default().next(5, [0x00; 10]);
        let b = Uuid7Generator::default().next(5, [0x55; 10]);
        assert_ne!(a, b);
        let c = Uuid7Generator::default().next(5, [0x55; 10]);
        assert_eq!(b, c);
    }

    #[test]
    fn strictly_increasing_over_a_million_keys_in_one_millisecond() {
        let mut g = Uuid7Generator::default();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut last = [0u8; 16];
        for i in 0..1_000_000u64 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut random = [0; 10];
            random[..8].copy_from_slice(&seed.to_le_bytes());
            let now = 1_700_000_000_000 + i / 4096; // many keys per ms
            let id = g.next(now, random);
            assert!(id > last, "key {i} not greater");
            assert_eq!(fields(&id).1, 7);
            assert_eq!(fields(&id).2, 0b10);
            last = id;
        }
    }

    #[test]
    fn clock_going_backwards_keeps_order() {
        let mut g = Uuid7Generator::default();
        let a = g.next(10_000, [0x80; 10]);
        let b = g.next(9_000, [0x01; 10]);
        let c = g.next(10_000, [0x00; 10]);
        assert!(a < b && b < c);
        assert_eq!(fields(&b).0, 10_000, "keeps the latest timestamp");
        let d = g.next(10_001, [0x00; 10]);
        assert!(c < d);
        assert_eq!(fields(&d).0, 10_001);
    }

    fn random_part(bytes: &[u8; 16]) -> u128 {
        let v = u128::from_be_bytes(*bytes);
        (((v >> 64) & 0xfff) << 62) | (v & ((1 << 62) - 1))
    }

    #[test]
    fn overflow_of_the_random_part_moves_time_forward() {
        let mut g = Uuid7Generator::default();
        let a = g.next(50, [0xff; 10]);
        let b = g.next(50, [0xff; 10]);
        assert!(b > a);
        assert_eq!(fields(&b).0, 51);
        // A fresh start leaves headroom for the keys after it.
        assert!(random_part(&b) < 1 << 73);
    }

    #[test]
    fn within_a_millisecond_the_random_part_steps_by_at_most_2_pow_32() {
        let mut g = Uuid7Generator::default();
        let a = g.next(7, [0; 10]);
        let b = g.next(7, [0; 10]);
        assert_eq!(random_part(&b) - random_part(&a), 1, "a zero random steps by one");
        let c = g.next(7, [0xff; 10]);
        assert_eq!(random_part(&c) - random_part(&b), 1 << 32, "the step is 1 + the low 32 random bits");
        let d = g.next(7, [0, 0, 0, 0, 0, 0, 0, 0, 0, 5]);
        assert_eq!(random_part(&d) - random_part(&c), 6);
    }

    #[test]
    fn the_largest_random_part_is_still_used_before_time_moves() {
        let mut g = Uuid7Generator::default();
        // 74 random bits, all ones but the last: one step from the top.
        let mut random = [0xff; 10];
        random[9] = 0xfe;
        let a = g.next(9, random);
        assert_eq!(random_part(&a), (1 << 74) - 2);
        let b = g.next(9, [0; 10]);
        assert_eq!((fields(&b).0, random_part(&b)), (9, (1 << 74) - 1));
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest! {
        #[test]
        fn prop_any_clock_sequence_stays_increasing(steps in proptest::collection::vec((0u64..5000, any::<[u8; 10]>()), 1..200)) {
            let mut g = Uuid7Generator::default();
            let mut last = [0u8; 16];
            for (now, random) in steps {
                let id = g.next(now, random);
                prop_assert!(id > last);
                last = id;
            }
        }
    }
}
