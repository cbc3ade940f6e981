//! AES-256-GCM compiled into wasm, for `make bench-cipher-choice`: `seal`
//! seals and opens `len` bytes of the buffer `rounds` times (with the
//! feature `seal`; without it, a loop over the bytes, so the two builds
//! differ by the cipher alone).
#![allow(static_mut_refs)]
#[cfg(feature = "seal")]
use aes_gcm::{Aes256Gcm, KeyInit, aead::{Aead, Payload}};
static mut BUF: [u8; 2_100_000] = [0; 2_100_000];
#[unsafe(no_mangle)]
pub extern "C" fn buf() -> *mut u8 { unsafe { core::ptr::addr_of_mut!(BUF) as *mut u8 } }
#[unsafe(no_mangle)]
pub extern "C" fn seal(len: usize, rounds: u32) -> usize {
    let data = unsafe { &mut BUF };
    #[cfg(feature = "seal")]
    {
        let key = [7u8; 32];
        let cipher = Aes256Gcm::new((&key).into());
        let nonce = [1u8; 12];
        let mut out = 0;
        for _ in 0..rounds {
            let ct = cipher.encrypt((&nonce).into(), Payload { msg: &data[..len], aad: b"name" }).unwrap();
            let pt = cipher.decrypt((&nonce).into(), Payload { msg: &ct, aad: b"name" }).unwrap();
            out += pt.len();
        }
        return out;
    }
    #[allow(unreachable_code)]
    { data[..len].iter().map(|b| *b as usize).sum::<usize>() + rounds as usize }
}
