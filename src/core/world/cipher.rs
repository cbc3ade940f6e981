//! A stand-in for the hosts' Web Crypto AES-256-GCM, for the core's tests
//! and the model: an authenticated cipher with the same contract (a nonce
//! drawn per seal and put first, a 16-byte tag last, an open that fails for
//! another key, other associated data or changed bytes) built on SHA-256.
//! Not a cipher to use for anything else: the hosts run the real one, and
//! the workerd tests check that.

use sha2::{Digest, Sha256};

use crate::core::{
    CipherCall, CipherOp, RecordName, SealKeys, SealedPart, StoredAnswer, StoredResponse, opened as from_parts,
};

/// Performs `call` as a host would; `draw` makes the nonce (a host draws it
/// from its CSPRNG).
///
/// # Errors
/// An open whose tag does not verify, or bytes too short to hold one.
pub fn perform(call: &CipherCall, draw: u64) -> Result<Vec<u8>, String> {
    let key = call.key.bytes();
    match call.op {
        CipherOp::Seal => {
            let mut nonce = [0u8; 12];
            nonce[..8].copy_from_slice(&draw.to_be_bytes());
            let mut out = nonce.to_vec();
            out.extend(xor(key, &nonce, &call.data));
            let tag = tag(key, &nonce, &call.aad, &out[12..]);
            out.extend_from_slice(&tag);
            Ok(out)
        }
        CipherOp::Open => {
            let data = &call.data;
            if data.len() < 28 {
                return Err("too short to be sealed".into());
            }
            let (nonce, rest) = data.split_at(12);
            let (sealed, given) = rest.split_at(rest.len() - 16);
            if tag(key, nonce, &call.aad, sealed) != given {
                return Err("The operation failed for an operation-specific reason".into());
            }
            Ok(xor(key, nonce, sealed))
        }
    }
}

fn xor(key: &[u8; 32], nonce: &[u8], data: &[u8]) -> Vec<u8> {
    data.chunks(32)
        .enumerate()
        .flat_map(|(block, chunk)| {
            let pad = Sha256::new().chain_update(key).chain_update(nonce).chain_update((block as u64).to_be_bytes());
            let pad = pad.finalize();
            chunk.iter().zip(pad).map(|(b, p)| b ^ p).collect::<Vec<u8>>()
        })
        .collect()
}

fn tag(key: &[u8; 32], nonce: &[u8], aad: &[u8], sealed: &[u8]) -> [u8; 16] {
    let digest = Sha256::new()
        .chain_update(b"tag")
        .chain_update(key)
        .chain_update(nonce)
        .chain_update((aad.len() as u64).to_be_bytes())
        .chain_update(aad)
        .chain_update(sealed)
        .finalize();
    let mut out = [0; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

/// `answer` as a replay opens it: a plain one as it is; a sealed one opened
/// with `keys` for record `name`, its cookies part too. `None`: it does not
/// open.
pub fn opened(answer: &StoredAnswer, keys: &SealKeys, name: &RecordName) -> Option<StoredResponse> {
    let sealed = match answer {
        StoredAnswer::Plain(response) => return Some(response.clone()),
        StoredAnswer::Sealed(sealed) => sealed,
    };
    let key = keys.find(sealed.key_id)?.clone();
    let open = |part: SealedPart, data: &[u8]| {
        let call =
            CipherCall { op: CipherOp::Open, key: key.clone(), aad: part.associated_data(name), data: data.to_vec() };
        perform(&call, 0).ok()
    };
    let answer = open(SealedPart::Answer, &sealed.answer)?;
    let cookies = match &sealed.cookies {
        Some(cookies) => Some(open(SealedPart::Cookies, cookies)?),
        None => None,
    };
    from_parts(&answer, cookies.as_deref()).ok()
}
