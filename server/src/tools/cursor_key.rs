//! The key that signs every cursor panescan hands a client (search_panes'
//! `cursor`, capture_since's `cursor`): random per process, so a cursor a
//! client passes back is one this process made. An edited or forged cursor
//! is refused: HMAC-SHA256 truncated to 128 bits, checked in constant time.
//! A cursor from before a restart is refused the same way (the caller
//! starts over); `panescan search --since-file` signs again the cursor it
//! read from the user's own file, which a client cannot write.

use std::sync::OnceLock;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Bytes of tag a cursor carries.
pub(crate) const TAG_BYTES: usize = 16;

/// HMAC-SHA256 takes a key of its block size as it is.
fn key() -> &'static [u8; 64] {
    static KEY: OnceLock<[u8; 64]> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut k = [0u8; 64];
        if getrandom::fill(&mut k).is_err() {
            // Never expected: two of the connection's nonces, which fall
            // back to the clock themselves.
            let text = format!("{}{}", crate::sync::nonce(), crate::sync::nonce());
            for (i, b) in text.bytes().enumerate() {
                k[i % 64] = b;
            }
        }
        k
    })
}

fn mac() -> Hmac<Sha256> {
    <Hmac<Sha256> as KeyInit>::new(&(*key()).into())
}

/// The tag of `body` under this process's key.
pub(crate) fn tag(body: &[u8]) -> [u8; TAG_BYTES] {
    let mut m = mac();
    m.update(body);
    let full = m.finalize().into_bytes();
    let mut out = [0u8; TAG_BYTES];
    out.copy_from_slice(&full[..TAG_BYTES]);
    out
}

/// Whether `tag` is `body`'s tag under this process's key.
pub(crate) fn verify(body: &[u8], tag: &[u8]) -> bool {
    let mut m = mac();
    m.update(body);
    m.verify_truncated_left(tag).is_ok() && tag.len() == TAG_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_holds_for_its_body_only() {
        let t = tag(b"cursor body");
        assert!(verify(b"cursor body", &t));
        assert!(!verify(b"cursor bodY", &t));
        let mut flipped = t;
        flipped[TAG_BYTES - 1] ^= 1;
        assert!(!verify(b"cursor body", &flipped));
        assert!(!verify(b"cursor body", &t[..TAG_BYTES - 1]));
        assert!(!verify(b"cursor body", &[]));
    }
}
