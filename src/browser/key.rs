//! Key generation: the core's UUIDv7 generator fed from a pool of
//! WebCrypto random bytes.

use wasm_bindgen::prelude::*;

use crate::core::{IdempotencyKey, KeyError, Uuid7Generator};

#[wasm_bindgen]
extern "C" {
    // `crypto.getRandomValues` fills at most 65 536 bytes per call.
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues)]
    fn get_random_values(buf: &mut [u8]);
}

/// Random bytes per key: the generator uses 74 of these 80 bits.
const BYTES_PER_KEY: usize = 10;
/// Keys made per call into WebCrypto: crossing into JavaScript for every
/// key costs more than building the key.
const KEYS_PER_FILL: usize = 512;
const POOL_BYTES: usize = BYTES_PER_KEY * KEYS_PER_FILL;
/// Most keys made per batch. Decoding one string of many keys and slicing
/// it costs far less than returning each key across the boundary.
const MAX_BATCH: u32 = 256;

/// A strictly increasing source of UUIDv7 keys for one page.
#[wasm_bindgen]
pub struct KeySource {
    keys: Uuid7Generator,
    pool: Box<[u8; POOL_BYTES]>,
    used: usize,
    batch: u32,
}

impl Default for KeySource {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl KeySource {
    /// An empty source; the first key fills the random pool.
    #[wasm_bindgen(constructor)]
    pub fn new() -> KeySource {
        KeySource { keys: Uuid7Generator::default(), pool: Box::new([0; POOL_BYTES]), used: POOL_BYTES, batch: 0 }
    }

    /// The next key, in canonical text form, for a clock reading in ms
    /// since the Unix epoch (`Date.now()`). Strictly greater than every
    /// key this source made before, whatever the clock does.
    pub fn next(&mut self, now_ms: f64) -> String {
        Uuid7Generator::format(&self.next_bytes(now_ms))
    }

    /// A batch of keys for one clock reading, as one string of 36-character
    /// keys back to back. `used` is how many keys of the previous batch
    /// were handed out: all of them (the page wants keys fast) doubles the
    /// batch, fewer (the clock moved on and the rest were dropped, so they
    /// never carry a stale time) shrinks it to that many. Dropped keys leave
    /// no gap in the order: later keys are still greater.
    pub fn batch(&mut self, now_ms: f64, used: u32) -> String {
        self.batch = match used >= self.batch {
            true => (self.batch * 2).clamp(1, MAX_BATCH),
            false => used.max(1),
        };
        let mut text = Vec::with_capacity(self.batch as usize * 36);
        for _ in 0..self.batch {
            text.extend_from_slice(&Uuid7Generator::text(&self.next_bytes(now_ms)));
        }
        String::from_utf8(text).unwrap_or_default()
    }
}

impl KeySource {
    /// The next key as 16 bytes.
    pub fn next_bytes(&mut self, now_ms: f64) -> [u8; 16] {
        if self.used + BYTES_PER_KEY > POOL_BYTES {
            get_random_values(&mut self.pool[..]);
            self.used = 0;
        }
        let mut random = [0; BYTES_PER_KEY];
        for (i, byte) in random.iter_mut().enumerate() {
            *byte = self.pool[(self.used + i) % POOL_BYTES];
        }
        self.used += BYTES_PER_KEY;
        // `as` saturates: a NaN or negative clock reads as 0, and the
        // generator still keeps keys increasing.
        self.keys.next(now_ms as u64, random)
    }
}

/// Why the edge would refuse `value` as an `Idempotency-Key` header (SPEC
/// §1: a comma, a space, more than 255 characters…), or `undefined` when
/// it would take it. The glue refuses such a key before sending.
#[wasm_bindgen(js_name = keyRefusal)]
pub fn key_refusal(value: &str) -> Option<String> {
    // Fixed words, not the error's `Display`: formatting its numbers would
    // cost the wasm ~2.5 KB gzip, a tenth of the package.
    let reason = match IdempotencyKey::parse(value).err()? {
        KeyError::Empty => "the key is empty",
        KeyError::TooLong(_) => "the key is longer than 255 characters",
        KeyError::InvalidCharacter(_) => "the key holds a character outside visible ASCII (a space…)",
        KeyError::BrokenQuotes => "the key starts with a quote but is not one well-formed structured-field string",
        KeyError::Repeated => "a comma: the edge reads it as two keys",
    };
    Some(reason.to_owned())
}
