//! The sans-IO core: every decision, no I/O.
//!
//! Inputs are values (the clock reading, request parts, the record found,
//! random bytes); outputs are values ([`Decision`], [`Finished`], [`Next`],
//! a UUID). No clock, randomness, `await` on I/O or `wasm-bindgen` here; the
//! same code and tests run natively and compiled to wasm.
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
//! store.finish(&name, 1, Outcome::Answered(answer), 20).await.unwrap();
//! assert!(matches!(store.begin(&name, fp, 30).await.unwrap(), Decision::Replay(_)));
//! # });
//! # fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     let mut f = std::pin::pin!(f);
//! #     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
//! #     loop { if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
//! # }
//! ```

mod admin;
mod answer;
mod config;
mod coordinator;
mod cors;
mod decision;
mod delivery;
mod digest;
mod event;
mod exchange;
mod expiry;
mod fingerprint;
mod form_field;
mod form_keys;
mod json_line;
mod json_read;
mod key;
mod metrics;
mod multipart;
mod origin;
mod origin_failure;
mod paths;
mod policy;
mod problem;
mod record;
mod record_state;
mod response;
mod retry;
mod retry_after;
mod scope;
mod store;
mod uuid7;
mod wire;

pub use admin::{ADMIN_PREFIX, AdminRequest, AdminToken};
pub use answer::{AnswerKind, IN_FLIGHT_STATUS, is_replayed, reads_body};
pub use config::{
    BindingFound, Config, ConfigError, Consistency, DEFAULT_STORE_TIMEOUT_MS, KvReplayMode, MAX_RESPONSE_BYTES_LIMIT,
    VARIABLES, default_origin_timeout_ms, finish_time_ms, origin_timeout_within, unknown_variable,
};
pub use coordinator::{CallId, CallReply, Coordinator, Effects, MAX_WAITERS};
pub use cors::{DEFAULT_ALLOW_HEADERS, is_serialized_origin, never_an_origin, preflight_allow_headers};
pub use decision::{
    Decision, Finished, IN_FLIGHT_RETRY_AFTER_SECS, KV_MIN_TTL_SECS, Outcome, Step, Write, abandon, begin,
    copy_ttl_secs, finish, replay_from_copy,
};
pub use delivery::{
    ConsumerConfig, DEFAULT_MAX_RETRY_DELAY_SECS, DeliveryAction, DeliveryExchange, Event, MAX_CONCURRENCY, Message,
    batch_lanes,
};
pub use event::{
    ConsumerStats, Delivery, EVENT_FINGERPRINT, EventKeyStrategy, HandlerRun, Settle, content_key, event_record_name,
    handler_outcome, settle,
};
pub use exchange::{
    AFTER_DISCONNECT_MS, Action, AnswerRead, BodyRead, DecisionLog, Exchange, FINISH_RETRY_PAUSES_MS, FinishResult,
    HeaderEdit, OriginResult, Reply, ReplyBody, RequestHead, Tier, Timing, Verdict,
};
pub use expiry::{Expiry, on_alarm};
pub use fingerprint::Fingerprint;
pub use form_field::KEY_FIELD;
pub use form_keys::{LONGEST_TAG_BYTES, key_input};
pub use json_line::JsonObject;
pub use key::{IdempotencyKey, KeyError, MAX_KEY_LEN};
pub use metrics::{DataPoint, METRICS_BINDING};
pub use origin::{ORIGIN_BINDING, Origin, OriginUrl};
pub use origin_failure::EdgeAnswer;
pub use paths::{KeyRule, PathPattern, PathPatternError};
pub use policy::{DEFAULT_RELEASE_ON, RecordPolicy};
pub use problem::{PROBLEM_CONTENT_TYPE, Problem};
pub use record::{Completed, DecodeError, InFlight, Record, Released};
pub use record_state::{RecordState, ReleaseAnswer, inspect, release};
pub use response::{StoredResponse, cookie_jar, reads_whole};
pub use retry::{AttemptResult, DEFAULT_RETRY_STATUS_CODES, Next, RetryPolicy, RetryState};
pub use retry_after::{RetryAfterError, parse_retry_after};
pub use scope::{RecordName, ScopeSource, ScopeSourceError};
pub use store::{MemoryStore, Store};
pub use uuid7::Uuid7Generator;
pub use wire::{
    StoreCall, decode_decision, decode_finished, decode_inspected, decode_released, encode_decision, encode_finished,
    encode_inspected, encode_released,
};
