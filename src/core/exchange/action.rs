//! What the exchange asks its host to do, and the results it takes back.

use super::reply::Reply;
use crate::core::{Completed, DataPoint, RecordName, SealKey, StoreCall};

/// The next thing the host must do. Each I/O action names the
/// [`Exchange`](super::Exchange) method that takes its result.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Read the request body: in one call when `whole`, else chunk by
    /// chunk. Hand each chunk to [`Exchange::body_chunk`](super::Exchange::body_chunk),
    /// which counts and keeps it and says whether to read on (when not,
    /// cancel the stream); then report the end with
    /// [`Exchange::body_ended`](super::Exchange::body_ended) (`broken`: the
    /// stream failed or the one-call read did). The rule (the limit, how far
    /// an oversized body is drained so a client still sending gets its 413
    /// rather than a reset) is the exchange's.
    ReadBody {
        /// The body's declared length fits the limit: the runtime frames
        /// the body to it, so it may be read in one call.
        whole: bool,
    },
    /// Forward the request unprotected: the client's request with these
    /// header edits and its body (`body`, when the exchange already read it,
    /// else the request's own), the whole answer within `timeout_ms`. Keep
    /// the origin's response; report its status and headers with
    /// [`Exchange::forwarded`](super::Exchange::forwarded).
    Forward {
        /// Header edits for the forwarded request.
        edits: Vec<HeaderEdit>,
        /// The body already read, or `None` for the request's own.
        body: Option<Vec<u8>>,
        /// The origin time limit, in ms.
        timeout_ms: u64,
    },
    /// Read the KV copy of `name` (a record, or nothing), within
    /// `timeout_ms`; report with [`Exchange::copy_read`](super::Exchange::copy_read).
    ReadCopy {
        /// The record's name (its hex is the KV key).
        name: RecordName,
        /// The read's time limit, in ms.
        timeout_ms: u64,
    },
    /// From here on the exchange must run to its end even if the caller
    /// goes away (`waitUntil`): a handler cancelled between `begin` and
    /// `finish` would leave the key in flight for a lease. Then call
    /// [`Exchange::detached`](super::Exchange::detached).
    Detach,
    /// Send `call` to the coordinator object of `name` — its bytes,
    /// [`StoreCall::encode`] — and read the reply's bytes, all within
    /// `timeout_ms` (the store's limit, plus the wait a duplicate's `begin`
    /// may spend inside the object, SPEC §3). Report the bytes, or why none
    /// came, with [`Exchange::store_answered`](super::Exchange::store_answered):
    /// the exchange decodes them. Each call is one atomic step in the object:
    /// `begin`, `finish`, `abandon` (giving back the reservation a `begin`
    /// whose reply was lost may have made), an operator's `inspect` and
    /// `release`.
    Store {
        /// The record's name: which object.
        name: RecordName,
        /// The call.
        call: StoreCall,
        /// The call's time limit, in ms.
        timeout_ms: u64,
    },
    /// Call the origin with the request, these header edits and `body`;
    /// read its whole answer within `timeout_ms` (past it the outcome is
    /// unknown) as `answer` takes it: when it streams, keep the response,
    /// its body going to the caller after the bytes read so far. Report
    /// with [`Exchange::origin_answered`](super::Exchange::origin_answered):
    /// [`AnswerRead::ended`](super::AnswerRead::ended), or why there is no
    /// answer.
    CallOrigin {
        /// The attempt this call is.
        attempt: u32,
        /// Header edits: the key unquoted, the attempt number.
        edits: Vec<HeaderEdit>,
        /// The request body, as read.
        body: Vec<u8>,
        /// The origin time limit, in ms, for the whole answer.
        timeout_ms: u64,
        /// What is read of the answer: its head and at most
        /// `IDEMPOTENCY_MAX_RESPONSE_BYTES` of its body.
        answer: super::AnswerRead,
    },
    /// Wait `ms`, then call [`Exchange::paused`](super::Exchange::paused).
    Pause {
        /// How long, in ms.
        ms: u64,
    },
    /// Answer the caller with `reply` (a [`ReplyBody::Origin`](super::ReplyBody::Origin)
    /// body is the origin response the host kept); then call
    /// [`Exchange::responded`](super::Exchange::responded).
    Respond(Reply),
    /// Write one log line (JSON); then call [`Exchange::logged`](super::Exchange::logged).
    Log(String),
    /// Write this data point to the Analytics Engine dataset bound as
    /// `IDEMPOTENCY_METRICS` (`writeDataPoint`; its failure changes
    /// nothing); then call [`Exchange::metric_written`](super::Exchange::metric_written).
    /// Comes after the log line, only when the host said the dataset is
    /// bound ([`RequestHead::metrics`](super::RequestHead::metrics)).
    Metric(DataPoint),
    /// Copy a completed answer to KV (its failure changes nothing); then
    /// call [`Exchange::copy_written`](super::Exchange::copy_written).
    WriteCopy {
        /// The record's name.
        name: RecordName,
        /// The answer, with its expiry.
        completed: Completed,
    },
    /// Seal or open one part of a stored answer with AES-256-GCM (SPEC §4),
    /// with the runtime's Web Crypto; report the bytes, or why none came,
    /// with [`Exchange::ciphered`](super::Exchange::ciphered).
    Cipher(CipherCall),
    /// Nothing more to do.
    Done,
}

/// One AES-256-GCM operation the host performs for the exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CipherCall {
    /// Seal or open.
    pub op: CipherOp,
    /// The key (its `Debug` shows its id only).
    pub key: SealKey,
    /// The associated data, bound to the ciphertext: the record's name and
    /// the part ([`SealedPart::associated_data`](crate::core::SealedPart::associated_data)).
    pub aad: Vec<u8>,
    /// To seal: the plaintext. To open: what a seal returned.
    pub data: Vec<u8>,
}

/// What a [`CipherCall`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CipherOp {
    /// Draw a fresh 12-byte nonce from the runtime's CSPRNG, encrypt `data`
    /// and return the nonce, the ciphertext and the 16-byte tag, in that
    /// order.
    Seal,
    /// `data` is a nonce, ciphertext and tag as [`CipherOp::Seal`] returns
    /// them: decrypt it and return the plaintext, or fail if the tag does
    /// not verify (another key, another record, damage).
    Open,
}

/// A change to a request's headers before it goes to the origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderEdit {
    /// Set the header to this value.
    Set(&'static str, String),
    /// Remove the header.
    Remove(&'static str),
}

/// How reading a keyed request's body ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BodyRead {
    /// The whole body, within the limit.
    Complete(Vec<u8>),
    /// More bytes than the limit were read.
    TooLarge,
    /// The body broke off before its end.
    Incomplete,
}

/// How an origin call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OriginResult {
    /// The origin answered in full within the time limit.
    Answered {
        /// Its status.
        status: u16,
        /// Its headers, in order.
        headers: Vec<(String, String)>,
        /// Its whole body.
        body: Vec<u8>,
    },
    /// The origin answered with a body over the limit: its head, while the
    /// host streams the body to the caller (memory stays bounded). The
    /// answer is stored without its body.
    Streaming {
        /// Its status.
        status: u16,
        /// Its headers, in order.
        headers: Vec<(String, String)>,
    },
    /// The request was never sent: the origin cannot have acted on it.
    NotSent(String),
    /// The request may have reached the origin but no whole answer came
    /// back (reset, time limit, a body that broke off).
    NoAnswer(String),
    /// The worker's own handler threw (anything but `NotSentError`): it may
    /// have acted before failing, so the outcome is unknown, as for
    /// [`OriginResult::NoAnswer`]; the caller is told the handler failed.
    HandlerThrew(String),
}
