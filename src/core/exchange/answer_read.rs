//! The origin's answer as a host reads it (SPEC §3): its head, and at most
//! `IDEMPOTENCY_MAX_RESPONSE_BYTES` of its body — past that the answer is
//! not stored but streamed to the caller, so memory stays bounded whatever
//! the origin sends.

use super::OriginResult;
use crate::core::reads_whole;

/// What is read of the origin's answer, handed to the host with
/// [`Action::CallOrigin`](super::Action::CallOrigin): the host gives it the
/// head ([`AnswerRead::head`]), then the body part by part
/// ([`AnswerRead::chunk`]) until it ends or streams, and reports
/// [`AnswerRead::ended`] to the exchange.
///
/// ```
/// use oncekey::core::{AnswerRead, OriginResult};
///
/// let mut answer = AnswerRead::new(4);
/// assert!(!answer.head(201, vec![]), "no declared length: read part by part");
/// assert!(answer.chunk(b"ok"));
/// assert!(!answer.chunk(b"!!!"), "past the limit");
/// assert_eq!(answer.streams(), b"ok", "the bytes to send first");
/// assert_eq!(answer.ended(), OriginResult::Streaming { status: 201, headers: vec![] });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnswerRead {
    keep_at_most: usize,
    /// The head, once in.
    head: Option<(u16, Vec<(String, String)>)>,
    /// The body read so far (given back to the host once it streams).
    held: Vec<u8>,
    streams: bool,
}

impl AnswerRead {
    /// An answer whose body is kept up to `keep_at_most` bytes.
    pub fn new(keep_at_most: usize) -> Self {
        Self { keep_at_most, head: None, held: Vec::new(), streams: false }
    }

    /// The head arrived: whether to read the body whole, in one call
    /// ([`reads_whole`]), rather than part by part. Either way each part
    /// goes to [`AnswerRead::chunk`].
    pub fn head(&mut self, status: u16, headers: Vec<(String, String)>) -> bool {
        let header = |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
        let whole = reads_whole(header("content-length"), header("content-encoding"), self.keep_at_most);
        self.head = Some((status, headers));
        whole
    }

    /// One part of the body: `true` when it is kept; `false` when it would
    /// pass the limit — then the answer streams: the host takes the bytes
    /// read so far ([`AnswerRead::streams`]) and sends them, this part and
    /// the rest of the body as the caller reads it.
    pub fn chunk(&mut self, chunk: &[u8]) -> bool {
        if self.streams || self.held.len().saturating_add(chunk.len()) > self.keep_at_most {
            return false;
        }
        self.held.extend_from_slice(chunk);
        true
    }

    /// The answer streams (after [`AnswerRead::chunk`] said `false`): the
    /// body bytes read so far, for the host to send first.
    pub fn streams(&mut self) -> Vec<u8> {
        self.streams = true;
        std::mem::take(&mut self.held)
    }

    /// The body was read to its end, or streams: the origin's result for
    /// [`Exchange::origin_answered`](super::Exchange::origin_answered). A
    /// body that broke off is [`OriginResult::NoAnswer`] instead.
    pub fn ended(self) -> OriginResult {
        match self.head {
            Some((status, headers)) if self.streams => OriginResult::Streaming { status, headers },
            Some((status, headers)) => OriginResult::Answered { status, headers, body: self.held },
            None => OriginResult::NoAnswer("the origin's answer ended before its head".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn head(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_declared_length_that_fits_is_read_whole() {
        let mut answer = AnswerRead::new(10);
        assert!(answer.head(200, head(&[("Content-Length", "10")])));
        assert!(answer.chunk(b"0123456789"));
        let OriginResult::Answered { status: 200, body, .. } = answer.ended() else { panic!() };
        assert_eq!(body, b"0123456789");
    }

    #[test]
    fn an_encoded_or_long_answer_is_read_part_by_part() {
        assert!(!AnswerRead::new(10).head(200, head(&[("content-length", "11")])));
        assert!(!AnswerRead::new(10).head(200, head(&[("content-length", "5"), ("content-encoding", "gzip")])));
    }

    #[test]
    fn parts_are_kept_up_to_the_limit_exactly() {
        let mut answer = AnswerRead::new(6);
        answer.head(200, vec![]);
        assert!(answer.chunk(b"abc") && answer.chunk(b"def"));
        assert!(!answer.chunk(b"g"), "one byte past");
        assert_eq!(answer.streams(), b"abcdef");
        assert!(!answer.chunk(b""), "a streaming answer keeps nothing more");
        assert_eq!(answer.ended(), OriginResult::Streaming { status: 200, headers: vec![] });
    }

    #[test]
    fn an_answer_without_a_head_is_no_answer() {
        assert!(matches!(AnswerRead::new(1).ended(), OriginResult::NoAnswer(_)));
    }
}
