//! The sans-IO core: every decision, no I/O.
//!
//! Inputs are values (the clock reading, request parts, the record found,
//! random bytes); outputs are values ([`Decision`], [`Finished`], [`Next`],
//! a UUID). No clock, randomness, `await` on I/O or `wasm-bindgen` here; the
//! same code and tests run natively and compiled to wasm.
//!
//! Three protocol objects hold the rules, each in its folder; the rest is
//! the vocabulary they share:
//!
//! | folder | what it is |
//! |---|---|
//! | `exchange/` | one request's whole exchange ([`Exchange`]): the protocol a Worker host runs |
//! | `coordinator/` | one record's Durable Object ([`Coordinator`]): store calls, waiters, the alarm |
//! | `delivery/` | one queue message's delivery ([`DeliveryExchange`]) and the event rules |
//! | `record/` | the record, its codec, its transitions ([`begin`], [`finish`]), the operator's view |
//! | `request/` | the request's parts: key, key sources, fingerprint, scope, covered paths, form field, CORS, admin paths |
//! | `webhook/` | webhook deliveries: senders, their secrets, the signature check ([`verify_delivery`]) |
//! | `config/` | the variables ([`Config`]), routes ([`Route`]) and their policies, the bindings and the origin |
//! | `output/` | what the layer writes: problems, metrics, form keys, the hosts' own texts |
//! | `text/` | the small JSON reader and writer, JSON pointers |
//! | `client/` | the browser client's rules: answers, retries, UUIDv7 keys |
//!
//!
//! A request with a key, end to end, against the in-memory store:
//!
//! ```
//! # futures_lite_block_on(async {
//! use oncekey::core::*;
//! let store = MemoryStore::new(RecordPolicy::default());
//! let key = IdempotencyKey::parse("\"order-1\"").unwrap();
//! let name = RecordName::new("shop.example", &[], |_| None, &key);
//! let fp = Fingerprint::of("POST", "/api/orders", Some("application/json"), b"{}");
//!
//! assert_eq!(store.begin(&name, fp, 0).await.unwrap(), Decision::Execute { attempt: 1, reclaimed: false });
//! assert_eq!(store.begin(&name, fp, 10).await.unwrap(), Decision::InFlight { retry_after_secs: 1, outcome_unknown: false, attempt: 1 });
//! let answer = StoredResponse { status: 201, headers: vec![], body: Some(b"{}".to_vec()) };
//! store.finish(&name, 1, Outcome::Answered(answer.into()), 20).await.unwrap();
//! assert!(matches!(store.begin(&name, fp, 30).await.unwrap(), Decision::Replay(_)));
//! # });
//! # fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     let mut f = std::pin::pin!(f);
//! #     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
//! #     loop { if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
//! # }
//! ```

/// Whether the deliberately broken rule `$name` is on: only under the
/// test-only feature `model` (`make model MUTANT=<name>`), so a build that
/// ships holds no mutant at all.
#[cfg(feature = "model")]
macro_rules! mutant {
    ($name:ident) => {
        crate::core::world::mutant::active(crate::core::world::mutant::Mutant::$name)
    };
}
#[cfg(not(feature = "model"))]
macro_rules! mutant {
    ($name:ident) => {
        false
    };
}

mod client;
mod config;
mod coordinator;
mod delivery;
mod exchange;
mod output;
mod record;
mod request;
mod text;
mod webhook;
#[cfg(any(test, feature = "model"))]
pub mod world;

pub use client::{
    AnswerKind, AttemptResult, DEFAULT_RETRY_STATUS_CODES, IN_FLIGHT_STATUS, Next, RetryAfterError, RetryPolicy,
    RetryState, Uuid7Generator, is_replayed, parse_retry_after, reads_body,
};
pub use config::{
    BindingFound, BindingKind, COORDINATOR_BINDING, Config, ConfigBuilder, ConfigError, Consistency,
    DEFAULT_STORE_TIMEOUT_MS, KV_BINDING, KvReplayMode, LogSample, MAX_RESPONSE_BYTES_LIMIT, METRICS_BINDING,
    ORIGIN_BINDING, Origin, OriginUrl, SealKey, SealKeys, VARIABLES, default_origin_timeout_ms, finish_time_ms,
    origin_timeout_within, unknown_variable, unknown_variables,
};
pub use config::{POLICY_OPTIONS, Policy, ROUTES, Route, WEBHOOK_RELEASE_ON, Webhook};
pub use coordinator::{
    CallId, CallReply, Coordinator, Effects, Expiry, MAX_WAITERS, RECORD_KEY, StoreCall, decode_decision,
    decode_finished, decode_inspected, decode_released, encode_decision, encode_finished, encode_inspected,
    encode_released, on_alarm,
};
pub use delivery::{
    ConsumerConfig, ConsumerSetting, ConsumerStats, DEFAULT_MAX_RETRY_DELAY_SECS, Delivery, DeliveryAction,
    DeliveryExchange, EVENT_FINGERPRINT, Event, EventKeyStrategy, HandlerRun, MAX_CONCURRENCY, Message, MessageBody,
    Settle, batch_lanes, content_key, event_record_name, handler_outcome, settle,
};
pub use exchange::{
    AFTER_DISCONNECT_MS, Action, AnswerRead, BodyRead, CipherCall, CipherOp, DecisionLog, DeliveryLog, EdgeAnswer,
    Exchange, FINISH_RETRY_PAUSES_MS, FinishResult, FormRewrite, HeaderEdit, OriginResult, Reply, ReplyBody,
    RequestHead, Tier, Timing, Verdict,
};
pub use output::{
    DataPoint, HostText, LONGEST_TAG_BYTES, PROBLEM_CONTENT_TYPE, Placement, Problem, noscript_ends_as_text,
    page_form_keys,
};
pub use record::{
    Completed, DEFAULT_RELEASE_ON, Decision, DecodeError, Finished, IN_FLIGHT_RETRY_AFTER_SECS, InFlight,
    KV_MIN_TTL_SECS, KeyId, MemoryStore, Outcome, Record, RecordPolicy, RecordState, ReleaseAnswer, ReleaseAsked,
    Released, SEAL_OVERHEAD, SealedAnswer, SealedPart, Step, Store, StoredAnswer, StoredResponse, Write, abandon,
    begin, begin_holding, cookie_jar, copy_ttl_secs, finish, inspect, opened, plaintext_parts, reads_whole, release,
    replay_from_copy,
};
pub use request::{
    ADMIN_PREFIX, AdminRefusal, AdminRequest, AdminToken, Ambiguity, CanonicalPath, DEFAULT_ALLOW_HEADERS,
    DEFAULT_KEY_SOURCE, DotSegment, Fingerprint, IdempotencyKey, KEY_FIELD, KeyError, KeyLookup, KeyRefusal, KeyRule,
    KeySource, KeySourceError, MAX_KEY_LEN, PathPattern, PathPatternError, Provenance, RecordName, ScopeSource,
    ScopeSourceError, find_key, from_own_origin, is_serialized_origin, never_an_origin, preflight_allow_headers,
};
pub use text::{JsonObject, JsonPointer, JsonPointerError};
pub use webhook::{
    SecretError, Sender, UnknownSender, WebhookRefusal, WebhookSecret, claimed_delivery, verify_delivery,
};
